/*
** fuzz_inline.c - libFuzzer target: the report's inline values. The input
** is a Markdown cell's source: {{ expression :spec }} and {eval}`expression`
** among code spans, fences, math and comments. It is scanned, each value
** is given a result (its own expression as the text the kernel shows, and
** as the exact number where it reads as one), formatted by its spec, and
** the cell filled in as the report writes it.
**
** What must hold: a refusal says why; the values lie in order inside the
** source, none across a line; a format either succeeds or says why, and
** a spec's number of any bits fits its bound; the filled cell has exactly
** the source's line breaks (a value never starts a line, so never a
** heading, list or table row), and a failed value appears as its error.
*/
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "report/inline.h"
#include "syslab.h"
#include "slutil.h"

static size_t count(const char *s, char c) {
  size_t n = 0;
  for (; *s; s++) n += *s == c;
  return n;
}

/* the result the kernel would send for an expression that is its own value */
static json_t *result_for(const char *expr) {
  json_t *data = json_object();
  json_object_set_new(data, "text/plain", json_string_nocheck(expr)); /* any bytes, as a fuzzer sends them */
  char *end;
  double x = strtod(expr, &end);
  if (end != expr && *end == '\0') {
    char exact[40];
    sl_format_exact(x, exact, sizeof exact);
    if (strtod(exact, NULL) != x && !isnan(x)) abort(); /* the exact text reads back as the same double */
    json_object_set_new(data, SL_MIME_NUMBER, json_string(exact));
  }
  return json_pack("{s:s, s:o, s:{}}", "status", "ok", "data", data, "metadata");
}

/* a spec applied to a double of any bits, taken from the expression */
static void format_bits(const slR_Inline *v) {
  double x = 0;
  memcpy(&x, v->expr, strlen(v->expr) < sizeof x ? strlen(v->expr) : sizeof x);
  char err[256] = "";
  char *text = sl_format_spec(x, v->spec, err, sizeof err);
  if (!text && !err[0]) abort();
  if (text && strlen(text) > 450) abort(); /* 309 whole digits, 50 decimals, separators, sign */
  free(text);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  char *md = malloc(size + 1);
  memcpy(md, data, size);
  md[size] = '\0'; /* a NUL ends the cell's text, as in a C string */
  size_t len = strlen(md);
  slR_Inline *v = NULL;
  size_t n = 0;
  char err[512] = "";
  if (slR_inline_parse(md, &v, &n, err, sizeof err) != 0) {
    if (!err[0] || v || n) abort();
    free(md);
    return 0;
  }
  json_t *list = json_array();
  size_t at = 0;
  for (size_t j = 0; j < n; j++) {
    if (v[j].start < at || v[j].end <= v[j].start || v[j].end > len) abort();
    if (memchr(md + v[j].start, '\n', v[j].end - v[j].start)) abort();
    if (!v[j].expr || !v[j].spec || (v[j].eval && v[j].spec[0])) abort();
    at = v[j].end;
    json_t *result = result_for(v[j].expr);
    char *text = NULL;
    err[0] = '\0';
    if (slR_inline_format(result, v[j].spec, &text, err, sizeof err) == 0) {
      if (!text) abort();
    } else if (!err[0] || text) {
      abort();
    }
    free(text);
    if (v[j].spec[0]) format_bits(&v[j]);
    json_t *entry = json_pack("{s:o, s:o}", "expression", json_string_nocheck(v[j].expr), "result", result);
    json_array_append_new(list, entry);
  }
  json_t *cell = json_pack("{s:s, s:o, s:{s:o}}", "cell_type", "markdown", "source", json_string_nocheck(md),
                           "metadata", "user_expressions", list);
  char *filled = slR_inline_fill(cell, md, 1);
  /* values stay within their lines: the filled cell breaks lines where the source does */
  if (count(filled, '\n') != count(md, '\n')) abort();
  size_t cr_outside = count(md, '\r');
  for (size_t j = 0; j < n; j++)
    for (size_t i = v[j].start; i < v[j].end; i++) cr_outside -= md[i] == '\r';
  if (count(filled, '\r') != cr_outside) abort();
  free(filled);
  json_decref(cell);
  slR_inline_free(v, n);
  free(md);
  return 0;
}
