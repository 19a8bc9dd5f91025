/*
** format.c - numbers by a format spec, as Python's format() writes them,
** and the exact text of a number.
**
**   spec = [ "+" | "-" ] [ "z" ] [ "," | "_" ] [ "." digits ] [ "f" | "e" | "g" | "%" | "d" ]
**
** The subset of Python's format-spec mini-language that prose needs:
** without fill, alignment, width, '#' and '0' (a sentence is not a table
** column). A precision needs a type; 'd' takes none. Without a type the
** number is written as the language prints it, with the sign and grouping
** asked for. The language's `format` and the report's inline values
** ({{ x :.3f }}) both come here, so JupyterLab and the report write the
** same text for the same spec.
**
** The number formatted is the double itself, never its printed form: the
** C library's printf rounds a double's exact binary value correctly, as
** Python's float formatting does, so :.12f of 1/3 gives twelve correct
** digits and :,d of 2 ** 53 every digit of 9,007,199,254,740,992.
*/
#include <ctype.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "syslab.h"
#include "slutil.h"

typedef struct {
  char sign;  /* '+' or '-' */
  int z;      /* negative zero printed as zero */
  char group; /* ',' or '_' or 0 */
  int prec;   /* -1: the type's default */
  char type;  /* 'f', 'e', 'g', '%', 'd', or 0: as the language prints it */
} Spec;

static int parse_spec(const char *s, Spec *sp, char *err, size_t errlen) {
  const char *p = s;
  *sp = (Spec){'-', 0, 0, -1, 0};
  if (*p == '+' || *p == '-') sp->sign = *p++;
  if (*p == 'z') sp->z = 1, p++;
  if (*p == ',' || *p == '_') sp->group = *p++;
  if (*p == '.') {
    p++;
    if (!isdigit((unsigned char)*p)) {
      snprintf(err, errlen, "the format '%.80s' has a '.' without a precision after it", s);
      return -1;
    }
    sp->prec = 0;
    while (isdigit((unsigned char)*p) && sp->prec < 100) sp->prec = sp->prec * 10 + (*p++ - '0');
    if (sp->prec > 50) {
      snprintf(err, errlen, "the format '%.80s' asks for more than 50 digits", s);
      return -1;
    }
  }
  if (*p && strchr("feg%d", *p)) sp->type = *p++;
  if (*p) {
    snprintf(err, errlen,
             "the format '%.80s' is not one syslab reads: [+|-][z][,|_][.precision][f|e|g|%%|d] "
             "(Python's format spec without fill, alignment and width)",
             s);
    return -1;
  }
  if (sp->prec >= 0 && !sp->type) {
    snprintf(err, errlen, "the format '%.80s' gives a precision without a type: add f, e, g or %%", s);
    return -1;
  }
  if (sp->type == 'd' && sp->prec >= 0) {
    snprintf(err, errlen, "the format '%.80s' gives a precision to whole numbers (d)", s);
    return -1;
  }
  return 0;
}

int sl_format_spec_check(const char *spec, char *err, size_t errlen) {
  Spec sp;
  return parse_spec(spec, &sp, err, errlen);
}

void sl_format_exact(double x, char *out, size_t size) {
  if (isnan(x)) {
    snprintf(out, size, "nan");
    return;
  }
  if (isinf(x)) {
    snprintf(out, size, x > 0 ? "inf" : "-inf");
    return;
  }
  /* the fewest significant digits that read back as the same double */
  for (int prec = 1; prec <= 17; prec++) {
    snprintf(out, size, "%.*g", prec, x);
    if (strtod(out, NULL) == x) return;
  }
}

/* digits of the whole part grouped by threes */
static void group_digits(slU_Text *t, const char *s, char sep) {
  const char *d = s + (*s == '-' || *s == '+');
  size_t whole = strspn(d, "0123456789");
  slU_add_len(t, s, (size_t)(d - s));
  for (size_t i = 0; i < whole; i++) {
    if (sep && i > 0 && (whole - i) % 3 == 0) slU_add_len(t, &sep, 1);
    slU_add_len(t, d + i, 1);
  }
  slU_add(t, "%s", d + whole);
}

/* "-0.00", "-0e+00", "-0%": a negative zero after rounding */
static int negative_zero(const char *s) {
  if (s[0] != '-') return 0;
  size_t digits = strcspn(s + 1, "e%");
  return digits > 0 && strspn(s + 1, "0.") == digits;
}

char *sl_format_spec(double x, const char *spec, char *err, size_t errlen) {
  Spec sp;
  if (parse_spec(spec, &sp, err, errlen) != 0) return NULL;
  /* a whole double has at most 309 digits; 50 more after the point */
  char buf[420];
  int prec = sp.prec >= 0 ? sp.prec : 6;
  if (isnan(x) || isinf(x)) {
    if (sp.type == 'd') {
      snprintf(err, errlen, "the format 'd' needs a whole number; the value is %s", SL_NUM(x));
      return NULL;
    }
    snprintf(buf, sizeof buf, "%s%s", isnan(x) ? "nan" : x < 0 ? "-inf" : "inf", sp.type == '%' ? "%" : "");
  } else {
    switch (sp.type) {
      case 'f': snprintf(buf, sizeof buf, "%.*f", prec, x); break;
      case 'e': snprintf(buf, sizeof buf, "%.*e", prec, x); break;
      case 'g': snprintf(buf, sizeof buf, "%.*g", prec ? prec : 1, x); break;
      case '%': snprintf(buf, sizeof buf, "%.*f%%", prec, x * 100); break;
      case 'd':
        if (x != floor(x)) {
          char exact[40];
          sl_format_exact(x, exact, sizeof exact);
          snprintf(err, errlen, "the format 'd' needs a whole number; the value is %s", exact);
          return NULL;
        }
        snprintf(buf, sizeof buf, "%.0f", x);
        break;
      default: sl_format_number(x, buf, sizeof buf);
    }
  }
  const char *s = buf;
  if (sp.z && negative_zero(s)) s++;
  slU_Text t = {0};
  slU_add_len(&t, "", 0);
  if (sp.sign == '+' && s[0] != '-') slU_add(&t, "+");
  group_digits(&t, s, sp.group);
  return t.s;
}

void sl_show_exact(sl_Value v, sl_Bundle *out) {
  if (v.type != SL_NUMBER) return;
  char exact[40];
  sl_format_exact(v.u.n, exact, sizeof exact);
  sl_bundle_add(out, SL_MIME_NUMBER, exact, strlen(exact));
}
