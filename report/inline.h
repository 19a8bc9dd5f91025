/*
** inline.h - inline values in Markdown cells and figure captions:
** `{{ expression }}`, with an optional measurement mark and format
** (`{{ t.median_ms[0] !timing :.2f }}`), or MyST's {eval}`expression`
** (`{eval .timing}`format(t.median_ms[0], ".2f")``), evaluated in the
** notebook's kernel after its cells have run and written into the report
** in their place (docs/report.md, "Inline values").
*/
#ifndef SYSLAB_INLINE_H
#define SYSLAB_INLINE_H

#include <jansson.h>
#include <stddef.h>

#include "client.h"

typedef struct slR_Inline {
  size_t start, end; /* byte offsets of "{{" or "{eval}" and just past "}}" or the closing backticks */
  char *expr;        /* the expression: trimmed in braces, as written in {eval} */
  char *spec;        /* the format spec after ':', trimmed ("" when none, always for {eval}) */
  int timing;        /* marked !timing or .timing: the value is a measurement */
  int eval;          /* written as MyST's {eval} role */
} slR_Inline;

/* The inline values of a Markdown source, in order; 0, or -1 with err
** naming the first one that cannot be read (and *n = 0). Braces and
** roles inside code spans, fenced and indented code blocks, math ($...$,
** $$...$$) and HTML comments, and after a backslash (\{{, \{eval}), are
** text. Free with slR_inline_free. */
int slR_inline_parse(const char *markdown, slR_Inline **out, size_t *n, char *err, size_t errlen);
void slR_inline_free(slR_Inline *v, size_t n);

/* The text of a cell that may hold inline values: a Markdown cell's
** source, a code cell's `#| fig-cap:`; NULL for none. Caller frees. */
char *slR_inline_text(json_t *cell);

/* Every cell's inline values read before anything runs; returns the
** number of problems, each printed with the notebook and cell. */
int slR_inline_check(const char *path, json_t *nb);

/* Evaluates the notebook's inline values in its kernel, one request per
** cell that has any, and records each result in the cell's metadata as
** jupyterlab-myst does (user_expressions: [{expression, result}]). A
** value that fails, or that its format does not fit, is an error naming
** the notebook and cell: returned as -1 with err, or with allow_errors
** recorded and counted in *failed. *count is the number evaluated. */
int slR_inline_run(slR_Kernel *k, const char *path, json_t *nb, int allow_errors, double timeout, size_t *count,
                   size_t *failed, char *err, size_t errlen);

/* The failed inline values an executed notebook records, each printed
** (when print) as a kept-going error, as report.c does for cells. */
size_t slR_inline_errors(json_t *nb, const char *path, int print);

/* A cell's text (slR_inline_text) with its inline values in place: each
** value formatted, escaped for Markdown so that it stays within its line
** (no line break; at the start of a block, where block is set, no heading,
** list, rule or table row can begin), inside <span class="syslab-timing">
** when marked; a failed one as its error. Caller frees. */
char *slR_inline_fill(json_t *cell, const char *text, int block);

/* Formats a user_expressions result by a format spec ("" for none): 0
** and *text (caller frees), or -1 with err, also for a text longer than
** the cap for inline values (docs/report.md). */
int slR_inline_format(json_t *result, const char *spec, char **text, char *err, size_t errlen);

#endif
