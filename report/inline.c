/*
** inline.c - inline values: `{{ expression }}` or MyST's {eval}`expression`
** in a Markdown cell (or a figure's `#| fig-cap:`) is evaluated in the
** notebook's kernel after the notebook's cells have run, and the report
** shows the value instead.
**
**   inline  = "{{" expression [ "!timing" ] [ ":" spec ] "}}"
**           | "{eval" [ " .timing" ] "}" backticks expression backticks
**   spec    = [ "+" | "-" ] [ "z" ] [ "," | "_" ] [ "." digits ] [ "f" | "e" | "g" | "%" | "d" ]
**
** In braces the expression is the language's; it runs to the first '!'
** that is not part of '!=', the first ':' or the closing "}}" outside a
** string literal, on one line. The spec is Python's format-spec
** mini-language without fill, alignment, width, '#' and '0'
** (lang/format.c, which the language's `format` shares). `!timing` marks
** a measurement: the value goes into <span class="syslab-timing">, as the
** engine marks its timing columns, so two runs can be compared outside
** the marks.
**
** {eval} is the role JupyterLab's jupyterlab-myst evaluates live and Jupyter
** Book renders from the stored values: the expression is the code span's
** text as written (formatting inside it: format(x, ".3f")), the class
** .timing is the measurement mark. Math ($...$, $$...$$), code and HTML
** comments are text: neither form is read there.
**
** The values are sent as the messaging protocol's user_expressions of a
** silent execute_request with empty code, one request per cell, after
** every code cell ran: the request every Jupyter kernel accepts for
** evaluating expressions without running a cell (ipykernel, IRkernel,
** xeus), and the one jupyterlab-myst sends. The replies are kept where
** jupyterlab-myst keeps them, in the cell's metadata (user_expressions:
** [{expression, result}], the expression as the role's text), so an
** executed notebook opened in JupyterLab shows the values without a run,
** and one from the cache is filled in the same way. A number is formatted
** from its exact value, which syslab's kernel sends beside the text/plain
** it shows (SL_MIME_NUMBER), not from those nine digits.
*/
#include "inline.h"

#include <ctype.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "escape.h"
#include "notebook.h"
#include "syslab.h"
#include "slutil.h"

/* ----------------------------------------------------------- reading */

/* an inline value's text at most: prose quotes a number, a name or a short
** list, and a value that is a whole file must not flood the report */
#define INLINE_MAX 4096

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
  char why[320];
  if (sl_format_spec_check(v->spec, why, sizeof why) == 0) return 0;
  snprintf(err, errlen, "{{ %.200s :%.80s }}: %s", v->expr, v->spec, why);
  return -1;
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

/* "{eval}" or "{eval .timing}" (MyST's role header, classes allowed) at p,
** directly followed by a backtick: the end of the header, or NULL */
static const char *eval_header(const char *p, int *timing) {
  const char *q = p + 1;
  while (*q == ' ' || *q == '\t') q++;
  if (strncmp(q, "eval", 4) != 0) return NULL;
  q += 4;
  *timing = 0;
  while (*q != '}') {
    if (*q != ' ' && *q != '\t') return NULL;
    while (*q == ' ' || *q == '\t') q++;
    if (*q == '}') break;
    size_t n = strcspn(q, " \t}\n");
    if (q[0] != '.' || n < 2) return NULL; /* only classes: .timing marks a measurement */
    if (n == 7 && strncmp(q, ".timing", 7) == 0) *timing = 1;
    q += n;
  }
  return q[1] == '`' ? q + 1 : NULL;
}

/* {eval}`expression` at p: the value, and the end of the role; NULL (and
** *v untouched) when the backticks have no closing run, as MyST reads it */
static const char *eval_role(const char *src, const char *p, slR_Inline *v, char *err, size_t errlen, int *bad) {
  int timing;
  const char *tick = eval_header(p, &timing);
  if (!tick) return NULL;
  size_t n = 0;
  while (tick[n] == '`') n++;
  const char *end = code_span_end(tick + n, n);
  if (!end) return NULL;
  const char *body = tick + n, *body_end = end - n;
  *v = (slR_Inline){(size_t)(p - src), (size_t)(end - src), NULL, strdup(""), timing, 1};
  v->expr = malloc((size_t)(body_end - body) + 1);
  memcpy(v->expr, body, (size_t)(body_end - body));
  v->expr[body_end - body] = '\0';
  if (memchr(body, '\n', (size_t)(body_end - body))) {
    snprintf(err, errlen, "{eval}`%.60s...`: the expression must be on one line", v->expr);
    *bad = 1;
  } else if (strspn(v->expr, " \t") == strlen(v->expr)) {
    snprintf(err, errlen, "{eval}`%s` has no expression", v->expr);
    *bad = 1;
  }
  return end;
}

/* the end of the math that starts at p ($...$ on one line, $$...$$ over
** lines, as the report's HTML reads it), or NULL when it is a plain '$' */
static const char *math_end(const char *p) {
  if (p[1] == '$') {
    const char *close = strstr(p + 2, "$$");
    return close ? close + 2 : NULL;
  }
  const char *close = strchr(p + 1, '$');
  size_t line = strcspn(p + 1, "\n");
  return close && (size_t)(close - p - 1) < line ? close + 1 : NULL;
}

/* one line of text (not code): its inline values; returns the end of the
** line (of a later line when a code span, math or a comment ends there:
** its rest is text too), or NULL with err */
static const char *scan_text(const char *src, const char *p, List *l, char *err, size_t errlen) {
  while (*p && *p != '\n') {
    const char *end;
    slR_Inline v;
    int bad = 0;
    if (*p == '\\' && p[1] && ispunct((unsigned char)p[1])) {
      p += 2;
    } else if (*p == '{' && (end = eval_role(src, p, &v, err, errlen, &bad))) {
      push(l, v);
      if (bad) return NULL;
      p = end;
    } else if (*p == '`') {
      size_t n = 0;
      while (p[n] == '`') n++;
      end = code_span_end(p + n, n);
      p = end ? end : p + n;
    } else if (*p == '$') {
      end = math_end(p);
      p = end ? end : p + 1 + (p[1] == '$');
    } else if (strncmp(p, "<!--", 4) == 0) {
      end = strstr(p + 4, "-->");
      p = end ? end + 3 : p + strlen(p);
    } else if (p[0] == '{' && p[1] == '{') {
      end = span_end(p);
      if (!end) {
        snprintf(err, errlen, "'{{' without its '}}' on the same line: %.40s", p);
        return NULL;
      }
      v = (slR_Inline){(size_t)(p - src), (size_t)(end - src), NULL, NULL, 0, 0};
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
    if (fence_len) { /* inside a fence: only its closer counts */
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
    if (indent_of(p) >= 4 && (!para || indented)) { /* an indented code block cannot interrupt a paragraph */
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
    p = *q ? q + 1 : q; /* the end of this line, or of a later one where a code span or comment ended */
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

char *slR_inline_text(json_t *cell) {
  const char *t = json_string_value(json_object_get(cell, "cell_type"));
  if (!t || strcmp(t, "raw") == 0) return NULL;
  char *src = slR_cell_source(cell);
  if (strcmp(t, "markdown") == 0) return src;
  char caption[512]; /* a figure's caption, as export.c reads it */
  slR_cell_option(src, "fig-cap", caption, sizeof caption);
  free(src);
  return caption[0] ? strdup(caption) : NULL;
}

int slR_inline_check(const char *path, json_t *nb) {
  int problems = 0, first = 1;
  size_t i;
  json_t *cell, *cells = json_object_get(nb, "cells");
  json_array_foreach(cells, i, cell) {
    char *src = slR_inline_text(cell), err[512];
    if (!src) continue;
    slR_Inline *v;
    size_t n;
    if (slR_inline_parse(src, &v, &n, err, sizeof err) != 0) {
      fprintf(stderr, "  error: %s, cell %zu: inline value: %s\n", path, slR_cell_number(cells, i), err);
      problems++;
    } else if (first && is_markdown(cell) && src[0] == '#' && n > 0 && v[0].start < strcspn(src, "\n")) {
      fprintf(stderr,
              "  error: %s, cell %zu: the notebook's title (its first heading, which names it in the "
              "report's contents) cannot hold an inline value\n",
              path, slR_cell_number(cells, i));
      problems++;
    }
    if (is_markdown(cell)) first = 0;
    slR_inline_free(v, n);
    free(src);
  }
  return problems;
}

/* ------------------------------------------------------------ values */

static void too_long(char *err, size_t errlen, size_t len) {
  snprintf(err, errlen,
           "the value's text is %zu bytes; an inline value holds at most %d (a number, a name or a "
           "short list: show a longer text in a code cell)",
           len, INLINE_MAX);
}

/* a user_expressions result as text, as the language prints it: a string
** without its quotes (as jupyterlab-myst shows it); NULL with err for an
** error, a rich object or a text over the cap */
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
  json_object_foreach(data, mime, value) if (strcmp(mime, "text/plain") != 0 && strcmp(mime, SL_MIME_NUMBER) != 0) {
    snprintf(err, errlen,
             "the value is an object shown as %s (a table, a model, a figure...); an inline value is "
             "a number, a string, a boolean or a list",
             mime);
    return NULL;
  }
  char *text = slR_multiline(json_object_get(data, "text/plain"));
  if (!text) {
    snprintf(err, errlen, "the kernel sent no text/plain form of the value");
    return NULL;
  }
  size_t len = strlen(text);
  if (len > INLINE_MAX + 2) { /* a string's quotes are not shown */
    too_long(err, errlen, len);
    free(text);
    return NULL;
  }
  if (strchr(text, '\n')) {
    snprintf(err, errlen,
             "the value takes more than one line; an inline value is a number, a string, a boolean or "
             "a list");
    free(text);
    return NULL;
  }
  if (len >= 2 && text[0] == '"' && text[len - 1] == '"') { /* a string, quoted as the kernel shows it */
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

/* the number a result holds: its exact value where the kernel sends one
** (syslab's does), else its text; 0, or -1 when it is not a number */
static int result_number(json_t *result, const char *text, double *x) {
  char *exact = slR_multiline(json_object_get(json_object_get(result, "data"), SL_MIME_NUMBER));
  const char *s = exact ? exact : text;
  int ok = sl_parse_number(s, x);
  if (!ok && (strcmp(s, "nan") == 0 || strcmp(s, "-nan") == 0)) *x = NAN, ok = 1;
  if (!ok && (strcmp(s, "inf") == 0 || strcmp(s, "-inf") == 0)) *x = s[0] == '-' ? -INFINITY : INFINITY, ok = 1;
  if (!ok && exact) { /* sl_format_exact's "1e+300": read as the C library writes it */
    char *end;
    *x = strtod(s, &end);
    ok = end != s && *end == '\0';
  }
  free(exact);
  return ok ? 0 : -1;
}

int slR_inline_format(json_t *result, const char *spec, char **text, char *err, size_t errlen) {
  *text = NULL;
  if (sl_format_spec_check(spec, err, errlen) != 0) return -1;
  char *value = result_text(result, err, errlen);
  if (!value) return -1;
  if (!spec[0]) {
    *text = value;
    return 0;
  }
  double x;
  if (result_number(result, value, &x) != 0) {
    snprintf(err, errlen, "the format ':%s' is for numbers; the value is %.200s", spec, value);
    free(value);
    return -1;
  }
  free(value);
  *text = sl_format_spec(x, spec, err, errlen);
  return *text ? 0 : -1;
}

/* -------------------------------------------------------- evaluation */

/* what the cell's metadata records: [{expression, result}], in the order
** of the values in the source */
static json_t *recorded(json_t *cell) { return json_object_get(json_object_get(cell, "metadata"), "user_expressions"); }

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
  if (v->eval)
    snprintf(out, size, "%s, cell %zu, inline value {eval%s}`%s`: %s", path, number, v->timing ? " .timing" : "",
             v->expr, err);
  else
    snprintf(out, size, "%s, cell %zu, inline value {{ %s%s%s%s }}: %s", path, number, v->expr,
             v->timing ? " !timing" : "", v->spec[0] ? " :" : "", v->spec, err);
}

/* the kernel's result for one value as the notebook keeps it: a text over
** the cap is kept as the error it is, so the notebook does not carry it */
static json_t *kept_result(json_t *results, const char *name) {
  json_t *result = json_object_get(results, name);
  if (!result)
    return json_pack("{s:s, s:s, s:s, s:[]}", "status", "error", "ename", "KernelError", "evalue",
                     "the kernel did not evaluate it", "traceback");
  char *plain = slR_multiline(json_object_get(json_object_get(result, "data"), "text/plain"));
  size_t len = plain ? strlen(plain) : 0;
  free(plain);
  if (len <= INLINE_MAX + 2) return json_incref(result);
  char why[256];
  too_long(why, sizeof why, len);
  return json_pack("{s:s, s:s, s:s, s:[]}", "status", "error", "ename", "ValueError", "evalue", why, "traceback");
}

/* one cell's values in one request; 0, or -1 with err */
static int run_cell(slR_Kernel *k, const char *path, json_t *cells, size_t i, int allow_errors, double timeout,
                    size_t *count, size_t *failed, char *err, size_t errlen) {
  json_t *cell = json_array_get(cells, i);
  char *src = slR_inline_text(cell), why[512];
  slR_Inline *v;
  size_t n;
  size_t number = slR_cell_number(cells, i);
  int rc = 0;
  if (!src) {
    record(cell, NULL);
    return 0;
  }
  if (slR_inline_parse(src, &v, &n, why, sizeof why) != 0) { /* checked before the run: only if edited since */
    snprintf(err, errlen, "%s, cell %zu: inline value: %s", path, number, why);
    free(src);
    return -1;
  }
  free(src);
  if (n == 0) {
    record(cell, NULL);
    slR_inline_free(v, n);
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
             st == SLR_CELL_DIED      ? "the kernel died"
             : st == SLR_CELL_TIMEOUT ? "the time limit (--timeout) passed"
                                      : "the report was stopped");
    json_decref(results);
    slR_inline_free(v, n);
    return -1;
  }
  json_t *list = json_array();
  for (size_t j = 0; j < n && rc == 0; j++) {
    char name[32], *text;
    snprintf(name, sizeof name, "%zu", j);
    json_t *result = kept_result(results, name);
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
    if (run_cell(k, path, cells, i, allow_errors, timeout, count, failed, err, errlen) != 0) return -1;
  }
  return 0;
}

size_t slR_inline_errors(json_t *nb, const char *path, int print) {
  size_t errors = 0, i;
  json_t *cell, *cells = json_object_get(nb, "cells");
  json_array_foreach(cells, i, cell) {
    if (!recorded(cell)) continue;
    char *src = slR_inline_text(cell), why[512], line[1200];
    slR_Inline *v;
    size_t n;
    if (src && slR_inline_parse(src, &v, &n, why, sizeof why) == 0) {
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
    }
    free(src);
  }
  return errors;
}

/* ------------------------------------------------------------ export */

char *slR_inline_fill(json_t *cell, const char *src, int block) {
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
      int span = v[j].timing && text[0]; /* an empty measurement (a sentence left out) leaves no empty span */
      if (span) slU_add(&t, "<span class=\"syslab-timing\">");
      slR_md_escape(&t, text, src + at, block);
      if (span) slU_add(&t, "</span>");
      free(text);
    } else {
      slU_add(&t, "**[inline value ");
      slR_md_escape(&t, v[j].expr, "", 0);
      slU_add(&t, " failed: ");
      slR_md_escape(&t, err, "", 0);
      slU_add(&t, "]**");
    }
  }
  slU_add(&t, "%s", src + at);
  slR_inline_free(v, n);
  return t.s;
}
