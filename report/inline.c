/*
** inline.c - inline values: `{{ expression }}` in a Markdown cell is
** evaluated in the notebook's kernel after the notebook's cells have run,
** and the report shows the value instead of the braces.
**
**   inline  = "{{" expression [ "!timing" ] [ ":" spec ] "}}"
**   spec    = [ "+" | "-" ] [ "z" ] [ "," | "_" ] [ "." digits ] [ "f" | "e" | "g" | "%" | "d" ]
**
** The expression is the language's; it runs to the first '!' that is not
** part of '!=', the first ':' or the closing "}}" outside a string
** literal, on one line. The spec is Python's format-spec mini-language
** without fill, alignment, width, '#' and '0' (the report is prose, not a
** table); a precision needs a type. `!timing` marks a measurement: the
** value goes into <span class="syslab-timing">, as the engine marks its
** timing columns, so two runs can be compared outside the marks.
**
** The values are sent as the messaging protocol's user_expressions of a
** silent execute_request with empty code, one request per Markdown cell,
** after every code cell ran: the request every Jupyter kernel accepts for
** evaluating expressions without running a cell (ipykernel, IRkernel,
** xeus), which MyST-NB and jupyterlab-myst use for their inline
** expressions. The replies are kept where jupyterlab-myst keeps them, in
** the Markdown cell's metadata (user_expressions: [{expression, result}]),
** so an executed notebook from the cache is filled in the same way.
*/
#include "inline.h"

#include <ctype.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "notebook.h"
#include "syslab.h"

/* ----------------------------------------------------------- reading */

typedef struct {
  char sign;   /* '+' or '-' */
  int z;       /* negative zero printed as zero */
  char group;  /* ',' or '_' or 0 */
  int prec;    /* -1: the type's default */
  char type;   /* 'f', 'e', 'g', '%', 'd', or 0: as the language prints it */
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
      snprintf(err, errlen, "the format ':%s' has a '.' without a precision after it", s);
      return -1;
    }
    sp->prec = 0;
    while (isdigit((unsigned char)*p) && sp->prec < 100) sp->prec = sp->prec * 10 + (*p++ - '0');
    if (sp->prec > 50) {
      snprintf(err, errlen, "the format ':%s' asks for more than 50 digits", s);
      return -1;
    }
  }
  if (*p && strchr("feg%d", *p)) sp->type = *p++;
  if (*p) {
    snprintf(err, errlen, "the format ':%s' is not one syslab reads: [+|-][z][,|_][.precision][f|e|g|%%|d] "
             "(Python's format spec without fill, alignment and width)", s);
    return -1;
  }
  if (sp->prec >= 0 && !sp->type) {
    snprintf(err, errlen, "the format ':%s' gives a precision without a type: add f, e, g or %%", s);
    return -1;
  }
  if (sp->type == 'd' && sp->prec >= 0) {
    snprintf(err, errlen, "the format ':%s' gives a precision to whole numbers (d)", s);
    return -1;
  }
  return 0;
}

static char *trimmed(const char *s, size_t n) {
  while (n && isspace((unsigned char)*s)) s++, n--;
  while (n && isspace((unsigned char)s[n - 1])) n--;
  char *t = malloc(n + 1);
  memcpy(t, s, n);
  t[n] = '\0';
  return t;
}

/* the span's inside, between "{{" and "}}": expression, mark and spec */
static int split_span(const char *in, size_t n, slR_Inline *v, char *err, size_t errlen) {
  size_t bang = n, colon = n;
  char quote = 0;
  for (size_t i = 0; i < n && colon == n; i++) {
    char c = in[i];
    if (quote) {
      if (c == '\\' && i + 1 < n) i++;
      else if (c == quote) quote = 0;
    } else if (c == '"' || c == '\'') {
      quote = c;
    } else if (c == '!' && bang == n && !(i + 1 < n && in[i + 1] == '=')) {
      bang = i;
    } else if (c == ':') {
      colon = i;
    }
  }
  v->expr = trimmed(in, bang < colon ? bang : colon);
  v->spec = trimmed(in + (colon < n ? colon + 1 : n), colon < n ? n - colon - 1 : 0);
  if (bang < colon) {
    char *mark = trimmed(in + bang + 1, colon - bang - 1);
    int ok = strcmp(mark, "timing") == 0;
    free(mark);
    if (!ok) {
      snprintf(err, errlen, "{{ %.*s }}: after '!' comes the mark 'timing' (a measurement), then ':' and a format",
               (int)(n > 200 ? 200 : n), in);
      return -1;
    }
    v->timing = 1;
  }
  if (!v->expr[0]) {
    snprintf(err, errlen, "{{%.*s}} has no expression", (int)(n > 200 ? 200 : n), in);
    return -1;
  }
  Spec sp;
  return parse_spec(v->spec, &sp, err, errlen);
}

/* the end of "{{ ... }}" starting at p (just past its "}}"), or NULL */
static const char *span_end(const char *p) {
  char quote = 0;
  for (const char *q = p + 2; *q && *q != '\n'; q++) {
    if (quote) {
      if (*q == '\\' && q[1] && q[1] != '\n') q++;
      else if (*q == quote) quote = 0;
    } else if (*q == '"' || *q == '\'') {
      quote = *q;
    } else if (q[0] == '}' && q[1] == '}') {
      return q + 2;
    }
  }
  return NULL;
}

/* columns of indentation of a line (a tab to the next multiple of 4) */
static int indent_of(const char *line) {
  int col = 0;
  for (; *line == ' ' || *line == '\t'; line++) col = *line == '\t' ? (col / 4 + 1) * 4 : col + 1;
  return col;
}

static int blank_line(const char *line) {
  while (*line == ' ' || *line == '\t') line++;
  return *line == '\n' || *line == '\0';
}

/* a fence opener or closer: up to 3 spaces, then 3 or more ` or ~ */
static size_t fence_run(const char *line, char *ch) {
  if (indent_of(line) > 3) return 0;
  while (*line == ' ') line++;
  if (*line != '`' && *line != '~') return 0;
  size_t n = 0;
  while (line[n] == *line) n++;
  if (n < 3) return 0;
  *ch = *line;
  return n;
}

/* the end of the code span whose opening run of n backticks ends at p: just
** past the closing run of exactly n, within the paragraph; NULL when none */
static const char *code_span_end(const char *p, size_t n) {
  for (const char *q = p; *q; q++) {
    if (*q == '\n' && blank_line(q + 1)) return NULL;
    if (*q != '`') continue;
    size_t m = 0;
    while (q[m] == '`') m++;
    if (m == n) return q + m;
    q += m - 1;
  }
  return NULL;
}

typedef struct {
  slR_Inline *v;
  size_t n, cap;
} List;

static void push(List *l, slR_Inline v) {
  if (l->n == l->cap) l->v = realloc(l->v, (l->cap = l->cap ? 2 * l->cap : 8) * sizeof *l->v);
  l->v[l->n++] = v;
}

/* one line of text (not code): its inline values; returns the end of the
** line (of a later line when a code span or comment ends there: its rest
** is text too), or NULL with err */
static const char *scan_text(const char *src, const char *p, List *l, char *err, size_t errlen) {
  while (*p && *p != '\n') {
    if (*p == '\\' && p[1] && ispunct((unsigned char)p[1])) {
      p += 2;
    } else if (*p == '`') {
      size_t n = 0;
      while (p[n] == '`') n++;
      const char *end = code_span_end(p + n, n);
      p = end ? end : p + n;
    } else if (strncmp(p, "<!--", 4) == 0) {
      const char *end = strstr(p + 4, "-->");
      p = end ? end + 3 : p + strlen(p);
    } else if (p[0] == '{' && p[1] == '{') {
      const char *end = span_end(p);
      if (!end) {
        snprintf(err, errlen, "'{{' without its '}}' on the same line: %.40s", p);
        return NULL;
      }
      slR_Inline v = {(size_t)(p - src), (size_t)(end - src), NULL, NULL, 0};
      int rc = split_span(p + 2, (size_t)(end - p - 4), &v, err, errlen);
      push(l, v);
      if (rc != 0) return NULL;
      p = end;
    } else {
      p++;
    }
  }
  return p;
}

int slR_inline_parse(const char *md, slR_Inline **out, size_t *n, char *err, size_t errlen) {
  List l = {0};
  char fence = 0;
  size_t fence_len = 0;
  int para = 0, indented = 0;
  const char *p = md;
  while (*p) {
    const char *eol = strchr(p, '\n');
    const char *next = eol ? eol + 1 : p + strlen(p);
    char ch = 0;
    size_t run = fence_run(p, &ch);
    if (fence_len) {  /* inside a fence: only its closer counts */
      const char *after = p + indent_of(p) + run;
      if (run >= fence_len && ch == fence && blank_line(after)) fence_len = 0;
      p = next;
      continue;
    }
    if (run) {
      fence = ch, fence_len = run, para = 0;
      p = next;
      continue;
    }
    if (blank_line(p)) {
      para = 0;
      p = next;
      continue;
    }
    if (indent_of(p) >= 4 && (!para || indented)) {  /* an indented code block cannot interrupt a paragraph */
      indented = 1;
      p = next;
      continue;
    }
    indented = 0, para = 1;
    const char *q = scan_text(md, p, &l, err, errlen);
    if (!q) {
      slR_inline_free(l.v, l.n);
      *out = NULL, *n = 0;
      return -1;
    }
    p = *q ? q + 1 : q;  /* the end of this line, or of a later one where a code span or comment ended */
  }
  *out = l.v, *n = l.n;
  return 0;
}

void slR_inline_free(slR_Inline *v, size_t n) {
  for (size_t i = 0; i < n; i++) free(v[i].expr), free(v[i].spec);
  free(v);
}

static int is_markdown(json_t *cell) {
  const char *t = json_string_value(json_object_get(cell, "cell_type"));
  return t && strcmp(t, "markdown") == 0;
}

int slR_inline_check(const char *path, json_t *nb) {
  int problems = 0, first = 1;
  size_t i;
  json_t *cell, *cells = json_object_get(nb, "cells");
  json_array_foreach(cells, i, cell) {
    if (!is_markdown(cell)) continue;
    char *src = slR_cell_source(cell), err[512];
    slR_Inline *v;
    size_t n;
    if (slR_inline_parse(src, &v, &n, err, sizeof err) != 0) {
      fprintf(stderr, "  error: %s, cell %zu: inline value: %s\n", path, slR_cell_number(cells, i), err);
      problems++;
    } else if (first && src[0] == '#' && n > 0 && v[0].start < strcspn(src, "\n")) {
      fprintf(stderr, "  error: %s, cell %zu: the notebook's title (its first heading, which names it in the "
              "report's contents) cannot hold an inline value\n", path, slR_cell_number(cells, i));
      problems++;
    }
    first = 0;
    slR_inline_free(v, n);
    free(src);
  }
  return problems;
}

/* ------------------------------------------------------------ values */

/* a user_expressions result as text, as the language prints it: a string
** without its quotes; NULL with err for an error or a rich object */
static char *result_text(json_t *result, char *err, size_t errlen) {
  const char *status = json_string_value(json_object_get(result, "status"));
  if (!status || strcmp(status, "ok") != 0) {
    const char *ename = json_string_value(json_object_get(result, "ename"));
    const char *evalue = json_string_value(json_object_get(result, "evalue"));
    snprintf(err, errlen, "%s: %s", ename ? ename : "Error", evalue ? evalue : "the kernel gave no value");
    return NULL;
  }
  json_t *data = json_object_get(result, "data");
  const char *mime;
  json_t *value;
  json_object_foreach(data, mime, value) if (strcmp(mime, "text/plain") != 0) {
    snprintf(err, errlen, "the value is an object shown as %s (a table, a model, a figure...); an inline value is "
             "a number, a string, a boolean or a list", mime);
    return NULL;
  }
  char *text = slR_multiline(json_object_get(data, "text/plain"));
  if (!text) {
    snprintf(err, errlen, "the kernel sent no text/plain form of the value");
    return NULL;
  }
  if (strchr(text, '\n')) {
    snprintf(err, errlen, "the value takes more than one line; an inline value is a number, a string, a boolean or "
             "a list");
    free(text);
    return NULL;
  }
  size_t len = strlen(text);
  if (len >= 2 && text[0] == '"' && text[len - 1] == '"') {  /* a string, quoted as the kernel shows it */
    char *w = text;
    for (const char *r = text + 1; r < text + len - 1; r++) {
      if (*r == '\\' && r + 1 < text + len - 1) {
        r++;
        *w++ = *r == 'n' ? '\n' : *r;
      } else {
        *w++ = *r;
      }
    }
    *w = '\0';
  }
  return text;
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

static int format_number(double x, const char *printed, const Spec *sp, slU_Text *t, char *err, size_t errlen) {
  char buf[512];
  int prec = sp->prec >= 0 ? sp->prec : 6;
  if (isnan(x) || isinf(x)) {
    snprintf(buf, sizeof buf, "%s%s", isnan(x) ? "nan" : x < 0 ? "-inf" : "inf", sp->type == '%' ? "%" : "");
  } else {
    switch (sp->type) {
      case 'f': snprintf(buf, sizeof buf, "%.*f", prec, x); break;
      case 'e': snprintf(buf, sizeof buf, "%.*e", prec, x); break;
      case 'g': snprintf(buf, sizeof buf, "%.*g", prec ? prec : 1, x); break;
      case '%': snprintf(buf, sizeof buf, "%.*f%%", prec, x * 100); break;
      case 'd':
        if (x != floor(x) || fabs(x) > 9007199254740992.0) {
          snprintf(err, errlen, "the format 'd' needs a whole number; the value is %s", printed);
          return -1;
        }
        snprintf(buf, sizeof buf, "%.0f", x);
        break;
      default: snprintf(buf, sizeof buf, "%s", printed);
    }
  }
  const char *s = buf;
  if (sp->z && s[0] == '-' && strspn(s + 1, "0.") == strcspn(s + 1, "e%") && strcspn(s + 1, "e%") > 0) s++;
  if (sp->sign == '+' && s[0] != '-') slU_add(t, "+");
  group_digits(t, s, sp->group);
  return 0;
}

int slR_inline_format(json_t *result, const char *spec, char **text, char *err, size_t errlen) {
  Spec sp;
  *text = NULL;
  if (parse_spec(spec, &sp, err, errlen) != 0) return -1;
  char *value = result_text(result, err, errlen);
  if (!value) return -1;
  if (!spec[0]) {
    *text = value;
    return 0;
  }
  double x;
  int number = sl_parse_number(value, &x);
  if (!number && (strcmp(value, "nan") == 0 || strcmp(value, "-nan") == 0)) x = NAN, number = 1;
  if (!number && (strcmp(value, "inf") == 0 || strcmp(value, "-inf") == 0)) x = value[0] == '-' ? -INFINITY : INFINITY, number = 1;
  if (!number) {
    snprintf(err, errlen, "the format ':%s' is for numbers; the value is %.200s", spec, value);
    free(value);
    return -1;
  }
  slU_Text t = {0};
  slU_add_len(&t, "", 0);
  int rc = format_number(x, value, &sp, &t, err, errlen);
  free(value);
  if (rc != 0) {
    free(t.s);
    return -1;
  }
  *text = t.s;
  return 0;
}

/* -------------------------------------------------------- evaluation */

/* what the cell's metadata records: [{expression, result}], in the order
** of the values in the source */
static json_t *recorded(json_t *cell) {
  return json_object_get(json_object_get(cell, "metadata"), "user_expressions");
}

static void record(json_t *cell, json_t *list) {
  json_t *meta = json_object_get(cell, "metadata");
  if (!json_is_object(meta)) json_object_set_new(cell, "metadata", meta = json_object());
  if (list) json_object_set_new(meta, "user_expressions", list);
  else json_object_del(meta, "user_expressions");
}

/* the result recorded for value k of the cell, or NULL when there is none
** for that expression (the source changed since) */
static json_t *result_of(json_t *cell, size_t k, const slR_Inline *v) {
  json_t *entry = json_array_get(recorded(cell), k);
  const char *expr = json_string_value(json_object_get(entry, "expression"));
  return expr && strcmp(expr, v->expr) == 0 ? json_object_get(entry, "result") : NULL;
}

static void describe(char *out, size_t size, const char *path, size_t number, const slR_Inline *v, const char *err) {
  snprintf(out, size, "%s, cell %zu, inline value {{ %s%s%s%s }}: %s", path, number, v->expr,
           v->timing ? " !timing" : "", v->spec[0] ? " :" : "", v->spec, err);
}

/* one Markdown cell's values in one request; 0, or -1 with err */
static int run_cell(slR_Kernel *k, const char *path, json_t *cells, size_t i, int allow_errors, double timeout,
                    size_t *count, size_t *failed, char *err, size_t errlen) {
  json_t *cell = json_array_get(cells, i);
  char *src = slR_cell_source(cell), why[512];
  slR_Inline *v;
  size_t n;
  size_t number = slR_cell_number(cells, i);
  int rc = 0;
  if (slR_inline_parse(src, &v, &n, why, sizeof why) != 0) {  /* checked before the run: only if edited since */
    snprintf(err, errlen, "%s, cell %zu: inline value: %s", path, number, why);
    free(src);
    return -1;
  }
  free(src);
  if (n == 0) {
    record(cell, NULL);
    return 0;
  }
  json_t *exprs = json_object();
  for (size_t j = 0; j < n; j++) {
    char name[32];
    snprintf(name, sizeof name, "%zu", j);
    json_object_set_new(exprs, name, json_string(v[j].expr));
  }
  json_t *results;
  slR_CellStatus st = slR_evaluate(k, exprs, timeout, &results);
  json_decref(exprs);
  if (st != SLR_CELL_OK && st != SLR_CELL_ERROR) {
    snprintf(err, errlen, "%s, cell %zu: %s while its inline values were evaluated", path, number,
             st == SLR_CELL_DIED ? "the kernel died" : st == SLR_CELL_TIMEOUT ? "the time limit (--timeout) passed"
                                                     : "the report was stopped");
    json_decref(results);
    slR_inline_free(v, n);
    return -1;
  }
  json_t *list = json_array();
  for (size_t j = 0; j < n && rc == 0; j++) {
    char name[32], *text;
    snprintf(name, sizeof name, "%zu", j);
    json_t *result = json_object_get(results, name);
    if (!result) result = json_pack("{s:s, s:s, s:s, s:[]}", "status", "error", "ename", "KernelError", "evalue",
                                    "the kernel did not evaluate it", "traceback");
    else json_incref(result);
    json_array_append_new(list, json_pack("{s:s, s:o}", "expression", v[j].expr, "result", result));
    (*count)++;
    if (slR_inline_format(result, v[j].spec, &text, why, sizeof why) == 0) {
      free(text);
      continue;
    }
    (*failed)++;
    if (!allow_errors) {
      describe(err, errlen, path, number, &v[j], why);
      rc = -1;
    }
  }
  record(cell, list);
  json_decref(results);
  slR_inline_free(v, n);
  return rc;
}

int slR_inline_run(slR_Kernel *k, const char *path, json_t *nb, int allow_errors, double timeout, size_t *count,
                   size_t *failed, char *err, size_t errlen) {
  json_t *cells = json_object_get(nb, "cells");
  size_t i;
  json_t *cell;
  *count = *failed = 0;
  json_array_foreach(cells, i, cell) {
    if (!is_markdown(cell)) continue;
    if (run_cell(k, path, cells, i, allow_errors, timeout, count, failed, err, errlen) != 0) return -1;
  }
  return 0;
}

size_t slR_inline_errors(json_t *nb, const char *path, int print) {
  size_t errors = 0, i;
  json_t *cell, *cells = json_object_get(nb, "cells");
  json_array_foreach(cells, i, cell) {
    if (!is_markdown(cell) || !recorded(cell)) continue;
    char *src = slR_cell_source(cell), why[512], line[1200];
    slR_Inline *v;
    size_t n;
    if (slR_inline_parse(src, &v, &n, why, sizeof why) == 0)
      for (size_t j = 0; j < n; j++) {
        json_t *result = result_of(cell, j, &v[j]);
        char *text = NULL;
        if (result && slR_inline_format(result, v[j].spec, &text, why, sizeof why) == 0) {
          free(text);
          continue;
        }
        if (!result) snprintf(why, sizeof why, "not evaluated");
        errors++;
        describe(line, sizeof line, path, slR_cell_number(cells, i), &v[j], why);
        if (print) fprintf(stderr, "syslab report: %s (kept going: --allow-errors)\n", line);
      }
    slR_inline_free(v, n);
    free(src);
  }
  return errors;
}

/* ------------------------------------------------------------ export */

/* a value as Markdown text: what would be markup is escaped, '$' (math to
** the report) and HTML's specials as character references */
static void add_escaped(slU_Text *t, const char *s) {
  for (; *s; s++) {
    if (strchr("\\`*_[]|~#", *s)) slU_add(t, "\\%c", *s);
    else if (*s == '$') slU_add(t, "&#36;");
    else if (*s == '<') slU_add(t, "&lt;");
    else if (*s == '>') slU_add(t, "&gt;");
    else if (*s == '&') slU_add(t, "&amp;");
    else if (*s == '\n') slU_add(t, " ");
    else slU_add_len(t, s, 1);
  }
}

char *slR_inline_fill(json_t *cell, const char *src) {
  slR_Inline *v;
  size_t n;
  char err[512];
  if (slR_inline_parse(src, &v, &n, err, sizeof err) != 0 || n == 0) {
    slR_inline_free(v, n);
    return strdup(src);
  }
  slU_Text t = {0};
  slU_add_len(&t, "", 0);
  size_t at = 0;
  for (size_t j = 0; j < n; j++) {
    slU_add_len(&t, src + at, v[j].start - at);
    at = v[j].end;
    json_t *result = result_of(cell, j, &v[j]);
    char *text = NULL;
    if (!result) snprintf(err, sizeof err, "not evaluated");
    if (result && slR_inline_format(result, v[j].spec, &text, err, sizeof err) == 0) {
      if (v[j].timing) slU_add(&t, "<span class=\"syslab-timing\">");
      add_escaped(&t, text);
      if (v[j].timing) slU_add(&t, "</span>");
      free(text);
    } else {
      slU_add(&t, "**[inline value ");
      add_escaped(&t, v[j].expr);
      slU_add(&t, " failed: ");
      add_escaped(&t, err);
      slU_add(&t, "]**");
    }
  }
  slU_add(&t, "%s", src + at);
  slR_inline_free(v, n);
  return t.s;
}
