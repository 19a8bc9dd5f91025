/*
** commands.c - the language's core commands: printing, help, rich displays, input,
** sleeping and introspection of the session.
*/
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include "eval.h"
#include "registry.h"
#include "suggest.h"

/* print and eprint join their values with spaces and write once, so a
** line arrives as one stream message. */
static int write_values(sl_Call *call, sl_Stream stream) {
  sl_Value items = sl_arg(call, "values");
  size_t cap = 64, n = 0;
  char *line = malloc(cap);
  for (size_t i = 0; i < sl_list_len(items); i++) {
    char *s = sl_tostring(sl_list_get(items, i));
    size_t l = strlen(s);
    if (n + l + 2 > cap) line = realloc(line, cap = (n + l + 2) * 2);
    if (i) line[n++] = ' ';
    memcpy(line + n, s, l);
    n += l;
    free(s);
  }
  line[n++] = '\n';
  slV_host_write(slV_state(call), stream, line, n);
  free(line);
  return 0;
}

static int cmd_print(sl_Call *call, sl_Value *result) { return write_values(call, SL_STDOUT); }
static int cmd_eprint(sl_Call *call, sl_Value *result) { return write_values(call, SL_STDERR); }

static int cmd_help(sl_Call *call, sl_Value *result) {
  const char *topic = sl_arg_string(call, "topic");
  sl_Bundle b;
  sl_bundle_init(&b);
  char *text, *md;
  if (!topic) {
    text = slH_index_text(0);
    md = slH_index_text(1);
  } else {
    const sl_Command *cmd = sl_command_find(topic);
    if (!cmd) {
      const char *best = sl_suggest(slV_state(call), topic, 1, 0);
      if (best) return sl_arg_error(call, "topic", "no command named '%s'; did you mean '%s'?", topic, best);
      return sl_arg_error(call, "topic", "no command named '%s'; type help for the list", topic);
    }
    text = slH_help_text(cmd, 0);
    md = slH_help_text(cmd, 1);
  }
  sl_bundle_add(&b, "text/plain", text, strlen(text));
  sl_bundle_add(&b, "text/markdown", md, strlen(md));
  sl_display(call, &b);
  sl_bundle_free(&b);
  free(text);
  free(md);
  return 0;
}

/* waits `seconds` in short slices, which keep an interrupt prompt; 0, or
** -1 when interrupted */
static int pause_for(double seconds) {
  double start = slU_now();
  for (;;) {
    if (sl_interrupted()) return -1;
    double left = seconds - (slU_now() - start);
    if (left <= 0) return 0;
    double slice = left < 0.02 ? left : 0.02;
    struct timespec ts = {(time_t)slice, (long)((slice - floor(slice)) * 1e9)};
    nanosleep(&ts, NULL);
  }
}

static int cmd_sleep(sl_Call *call, sl_Value *result) {
  double seconds = sl_arg_number(call, "seconds");
  if (!(seconds >= 0 && seconds <= 86400)) {
    char got[32];
    sl_format_number(seconds, got, sizeof got);
    return sl_arg_error(call, "seconds", "must be between 0 and 86400, got %.24s", got);
  }
  return pause_for(seconds) == 0 ? 0 : sl_interrupted_error(call);
}

static int cmd_input(sl_Call *call, sl_Value *result) {
  const sl_Host *h = sl_call_host(call);
  char *answer = NULL;
  const char *prompt = sl_arg_string(call, "prompt");
  if (!h || !h->input || h->input(h->ud, prompt ? prompt : "", sl_truthy(sl_arg(call, "password")), &answer) != 0)
    return sl_error(call, "input is not available here (the client did not allow stdin, or this is a batch run)");
  if (sl_interrupted()) {
    free(answer);
    return sl_interrupted_error(call);
  }
  *result = sl_string(answer ? answer : "");
  free(answer);
  return 0;
}

static int display_text(sl_Call *call, const char *mime) {
  const char *text = sl_arg_string(call, "text");
  sl_Bundle b;
  sl_bundle_init(&b);
  sl_bundle_add(&b, "text/plain", text, strlen(text));
  sl_bundle_add(&b, mime, text, strlen(text));
  sl_display(call, &b);
  sl_bundle_free(&b);
  return 0;
}

static int cmd_html(sl_Call *call, sl_Value *result) { return display_text(call, "text/html"); }
static int cmd_markdown(sl_Call *call, sl_Value *result) { return display_text(call, "text/markdown"); }
static int cmd_latex(sl_Call *call, sl_Value *result) { return display_text(call, "text/latex"); }

static int cmd_svg(sl_Call *call, sl_Value *result) {
  const char *text = sl_arg_string(call, "text");
  if (!strstr(text, "<svg")) return sl_arg_error(call, "text", "is not SVG: it has no <svg> element");
  sl_Bundle b;
  sl_bundle_init(&b);
  sl_bundle_add(&b, "image/svg+xml", text, strlen(text));
  sl_bundle_addf(&b, "text/plain", "<SVG image, %zu bytes>", strlen(text));
  sl_display(call, &b);
  sl_bundle_free(&b);
  return 0;
}

static int contains(const char *data, size_t n, const char *needle) {
  size_t k = strlen(needle);
  for (size_t i = 0; i + k <= n; i++)
    if (memcmp(data + i, needle, k) == 0) return 1;
  return 0;
}

static int cmd_image(sl_Call *call, sl_Value *result) {
  const char *path = sl_arg_string(call, "path");
  char err[512];
  size_t n;
  char *data = slF_read_file(path, "a PNG or SVG image", 0, &n, err, sizeof err);
  if (!data) return sl_arg_error(call, "path", "%s", err);
  if (n > (64u << 20)) {
    free(data);
    return sl_arg_error(call, "path", "'%s' is larger than 64 MiB", path);
  }
  static const unsigned char png_magic[8] = {0x89, 'P', 'N', 'G', '\r', '\n', 0x1A, '\n'};
  sl_Bundle b;
  sl_bundle_init(&b);
  /* a PNG is its signature, an IHDR chunk first and an IEND chunk last */
  static const unsigned char iend[12] = {0, 0, 0, 0, 'I', 'E', 'N', 'D', 0xAE, 0x42, 0x60, 0x82};
  int png = n >= 45 && memcmp(data, png_magic, 8) == 0;
  if (png && (memcmp(data + 12, "IHDR", 4) != 0 || memcmp(data + n - 12, iend, 12) != 0)) {
    free(data);
    return sl_arg_error(call, "path", "'%s' starts like a PNG image but is not a whole one (truncated or corrupt)",
                        path);
  }
  if (png) {
    unsigned char *p = (unsigned char *)data;
    unsigned w = (unsigned)p[16] << 24 | p[17] << 16 | p[18] << 8 | p[19];
    unsigned h = (unsigned)p[20] << 24 | p[21] << 16 | p[22] << 8 | p[23];
    sl_bundle_add(&b, "image/png", data, n);
    sl_bundle_addf(&b, "text/plain", "<PNG image %ux%u: %s>", w, h, path);
  } else if (contains(data, n < 4096 ? n : 4096, "<svg")) {
    sl_bundle_add(&b, "image/svg+xml", data, n);
    sl_bundle_addf(&b, "text/plain", "<SVG image: %s>", path);
  } else {
    free(data);
    return sl_arg_error(call, "path", "'%s' is neither a PNG nor an SVG image", path);
  }
  free(data);
  sl_display(call, &b);
  sl_bundle_free(&b);
  return 0;
}

static int cmd_show(sl_Call *call, sl_Value *result) {
  sl_Bundle b;
  sl_show(sl_arg(call, "value"), &b);
  sl_display(call, &b);
  sl_bundle_free(&b);
  return 0;
}

static int cmd_clear(sl_Call *call, sl_Value *result) {
  const sl_Host *h = sl_call_host(call);
  if (h && h->clear) h->clear(h->ud, sl_truthy(sl_arg(call, "wait")));
  return 0;
}

static int cmd_countdown(sl_Call *call, sl_Value *result) {
  double steps = sl_arg_number(call, "steps");
  double delay = sl_arg_number(call, "delay");
  if (steps < 1 || steps > 100000) return sl_arg_error(call, "steps", "must be between 1 and 100000");
  if (!(delay >= 0 && delay <= 10)) return sl_arg_error(call, "delay", "must be between 0 and 10 seconds");
  sl_Progress *p = sl_progress_begin(call, "countdown", steps);
  for (int i = 1; i <= (int)steps; i++) {
    if (pause_for(delay) != 0) { /* a step may be 10 s long: it is waited in slices */
      sl_progress_end(p);
      return sl_interrupted_error(call);
    }
    char detail[32];
    snprintf(detail, sizeof detail, "%d left", (int)steps - i);
    sl_progress_update(p, i, detail);
  }
  sl_progress_end(p);
  return 0;
}

static int cmd_vars(sl_Call *call, sl_Value *result) {
  sl_State *S = slV_state(call);
  if (sl_record_len(S->vars) == 0) {
    sl_printf(call, "no variables yet\n");
    return 0;
  }
  for (size_t i = 0; i < sl_record_len(S->vars); i++) {
    char *s = sl_repr(sl_record_value(S->vars, i));
    if (strlen(s) > 60) strcpy(s + 56, " ...");
    sl_printf(call, "%-16s %-10s %s\n", sl_record_key(S->vars, i), sl_typename(sl_record_value(S->vars, i)), s);
    free(s);
  }
  return 0;
}

static int cmd_type(sl_Call *call, sl_Value *result) {
  *result = sl_string(sl_typename(sl_arg(call, "value")));
  return 0;
}

static int cmd_len(sl_Call *call, sl_Value *result) {
  sl_Value v = sl_arg(call, "value");
  if (v.type == SL_LIST) *result = sl_number((double)sl_list_len(v));
  else if (v.type == SL_STRING) {
    size_t chars = 0; /* characters, not bytes: continuation bytes of UTF-8 do not count */
    for (const char *p = sl_str(v); *p; p++) chars += ((unsigned char)*p & 0xC0) != 0x80;
    *result = sl_number((double)chars);
  } else if (v.type == SL_RECORD) *result = sl_number((double)sl_record_len(v));
  else if (v.type == SL_OBJECT && sl_object_class(v)->field && /* a table: its rows */
           sl_object_class(v)->field(sl_object_data(v), "nrows", result) == 0)
    return 0;
  else return sl_arg_error(call, "value", "has no length: a %s (lists, strings and records have one)", sl_typename(v));
  return 0;
}

static int cmd_round(sl_Call *call, sl_Value *result) {
  double x = sl_arg_number(call, "value"), d = sl_arg_number(call, "digits");
  if (d < 0 || d > 15) return sl_arg_error(call, "digits", "must be between 0 and 15");
  double scale = pow(10, d);
  *result = sl_number(round(x * scale) / scale);
  return 0;
}

/* format(x, ".3f"): the text an inline value {{ x :.3f }} of the report
** shows, so a notebook's {eval} values read the same in JupyterLab */
static int cmd_format(sl_Call *call, sl_Value *result) {
  sl_Value v = sl_arg(call, "value");
  const char *spec = sl_arg_string(call, "spec");
  char err[256];
  if (sl_format_spec_check(spec, err, sizeof err) != 0) return sl_arg_error(call, "spec", "%s", err);
  char *text;
  if (v.type == SL_NUMBER) {
    if (!(text = sl_format_spec(v.u.n, spec, err, sizeof err))) return sl_arg_error(call, "value", "%s", err);
  } else if (!spec[0]) {
    text = sl_tostring(v);
  } else {
    return sl_arg_error(call, "value", "is a %s; the format '%s' is for numbers", sl_typename(v), spec);
  }
  *result = sl_string(text);
  free(text);
  return 0;
}

/* sum, min, max, mean: of their arguments, max(4, w - 2), or of one list,
** max [3, 1, 2] or mean t.loss */
static int numbers(sl_Call *call, const double **x, size_t *n, double **buf) {
  sl_Value args = sl_arg(call, "values");
  sl_Value items = sl_list_len(args) == 1 && sl_list_get(args, 0).type == SL_LIST ? sl_list_get(args, 0) : args;
  *n = sl_list_len(items);
  *buf = malloc((*n ? *n : 1) * sizeof **buf);
  for (size_t i = 0; i < *n; i++) {
    sl_Value v = sl_list_get(items, i);
    if (v.type != SL_NUMBER) {
      free(*buf);
      return sl_arg_error(call, "values", "item %zu is a %s, not a number", i + 1, sl_typename(v));
    }
    (*buf)[i] = v.u.n;
  }
  *x = *buf;
  return 0;
}

static int aggregate(sl_Call *call, sl_Value *result, int which) {
  const double *x = NULL;
  double *buf = NULL;
  size_t n = 0;
  if (numbers(call, &x, &n, &buf) != 0) return -1;
  if (n == 0 && which != 0) {
    free(buf);
    return sl_arg_error(call, "values", "needs at least one number (an empty list has no %s)",
                        which == 1   ? "minimum"
                        : which == 2 ? "maximum"
                                     : "mean");
  }
  double r = which == 1 ? INFINITY : which == 2 ? -INFINITY : 0;
  for (size_t i = 0; i < n; i++) {
    if (which == 1) r = x[i] < r || isnan(x[i]) ? x[i] : r;
    else if (which == 2) r = x[i] > r || isnan(x[i]) ? x[i] : r;
    else r += x[i];
    if (isnan(r)) break;
  }
  if (which == 3) r /= (double)n;
  free(buf);
  *result = sl_number(r);
  return 0;
}

static int cmd_sum(sl_Call *call, sl_Value *result) { return aggregate(call, result, 0); }
static int cmd_min(sl_Call *call, sl_Value *result) { return aggregate(call, result, 1); }
static int cmd_max(sl_Call *call, sl_Value *result) { return aggregate(call, result, 2); }
static int cmd_mean(sl_Call *call, sl_Value *result) { return aggregate(call, result, 3); }

/* clang-format off */
#define NUMBERS_ARG {"values", SL_ARG_LIST, SL_POSITIONAL | SL_VARIADIC, "[]", "numbers, or one list of numbers"}

#define NOARGS {{NULL}}

static const sl_Command slB_commands[] = {
  {"print", "core", "Print values to standard output, separated by spaces.",
   "Strings print without quotes; numbers print exactly (float32 values round-trip).",
   "print \"accuracy:\" 0.875\nprint [1, 2, 3]", cmd_print, 0,
   {{"values", SL_ARG_LIST, SL_POSITIONAL | SL_VARIADIC, "[]", "the values to print (any number of them)"}, {NULL}}},
  {"eprint", "core", "Print values to standard error, separated by spaces.",
   "Use it for warnings; a notebook shows them in red.", "eprint \"warning: small data set\"", cmd_eprint, 0,
   {{"values", SL_ARG_LIST, SL_POSITIONAL | SL_VARIADIC, "[]", "the values to print"}, {NULL}}},
  {"help", "core", "Show the list of commands, or the help of one command.",
   "`NAME?` shows the same help in the pager. Inside a call, press Shift+Tab in JupyterLab for the help of the "
   "command under the cursor.",
   "help\nhelp train", cmd_help, 0,
   {{"topic", SL_ARG_STRING, SL_POSITIONAL | SL_BAREWORD, NULL, "a command name"}, {NULL}}},
  {"sleep", "core", "Wait for a number of seconds (an interrupt stops it at once).", "",
   "sleep 0.5", cmd_sleep, SL_CMD_LONG,
   {{"seconds", SL_ARG_NUMBER, SL_POSITIONAL | SL_REQUIRED, NULL, "how long to wait, 0 to 86400"}, {NULL}}},
  {"input", "core", "Ask the user a question and return the answer as a string.",
   "Needs a client that allows input (JupyterLab, jupyter console); batch runs fail with a clear error.",
   "name = input \"Your name: \"", cmd_input, 0,
   {{"prompt", SL_ARG_STRING, SL_POSITIONAL, "\"\"", "the question"},
    {"password", SL_ARG_BOOL, 0, "false", "hide what the user types"},
    {NULL}}},
  {"html", "display", "Display HTML.", "", "html \"<b>bold</b> text\"", cmd_html, 0,
   {{"text", SL_ARG_STRING, SL_POSITIONAL | SL_REQUIRED, NULL, "the HTML"}, {NULL}}},
  {"markdown", "display", "Display Markdown.", "", "markdown \"# Results\"", cmd_markdown, 0,
   {{"text", SL_ARG_STRING, SL_POSITIONAL | SL_REQUIRED, NULL, "the Markdown"}, {NULL}}},
  {"latex", "display", "Display LaTeX math.", "", "latex \"$E = mc^2$\"", cmd_latex, 0,
   {{"text", SL_ARG_STRING, SL_POSITIONAL | SL_REQUIRED, NULL, "the LaTeX, with $ delimiters"}, {NULL}}},
  {"svg", "display", "Display an SVG image given as text.", "",
   "svg \"<svg xmlns='http://www.w3.org/2000/svg' width='20' height='20'><circle cx='10' cy='10' r='8'/></svg>\"",
   cmd_svg, 0, {{"text", SL_ARG_STRING, SL_POSITIONAL | SL_REQUIRED, NULL, "the SVG document"}, {NULL}}},
  {"image", "display", "Display a PNG or SVG image file.", "", "image \"figure.png\"", cmd_image, 0,
   {{"path", SL_ARG_STRING, SL_POSITIONAL | SL_REQUIRED, NULL, "path of a .png or .svg file"}, {NULL}}},
  {"show", "display", "Display a value with its richest representation (tables, models, graphs).", "",
   "show [1, 2, 3]", cmd_show, 0,
   {{"value", SL_ARG_ANY, SL_POSITIONAL | SL_REQUIRED, NULL, "the value to show"}, {NULL}}},
  {"clear", "display", "Clear the output of the current cell.",
   "With wait=true the output is cleared when the next output arrives, which avoids flicker.", "clear wait=true",
   cmd_clear, 0, {{"wait", SL_ARG_BOOL, 0, "false", "clear only when new output arrives"}, {NULL}}},
  {"countdown", "display", "Count down with a progress bar that updates in place.",
   "A demonstration of progress display; training and sweeps show the same bar.", "countdown 10 delay=0.1",
   cmd_countdown, SL_CMD_LONG,
   {{"steps", SL_ARG_INT, SL_POSITIONAL, "10", "number of steps"},
    {"delay", SL_ARG_NUMBER, 0, "0.1", "seconds per step"},
    {NULL}}},
  {"vars", "core", "List the session's variables with their types.", "", "vars", cmd_vars, 0, NOARGS},
  {"type", "core", "The type of a value, as a string.", "", "type 3", cmd_type, 0,
   {{"value", SL_ARG_ANY, SL_POSITIONAL | SL_REQUIRED, NULL, "any value"}, {NULL}}},
  {"len", "core", "The number of items of a list or record, characters of a string, or rows of a table.", "", "len [1, 2, 3]",
   cmd_len, 0, {{"value", SL_ARG_ANY, SL_POSITIONAL | SL_REQUIRED, NULL, "a list, string, record or table (its rows)"}, {NULL}}},
  {"round", "core", "Round a number to a number of decimal digits.", "", "round 3.14159 2", cmd_round, 0,
   {{"value", SL_ARG_NUMBER, SL_POSITIONAL | SL_REQUIRED, NULL, "the number"},
    {"digits", SL_ARG_INT, SL_POSITIONAL, "0", "decimal digits to keep, 0 to 15"},
    {NULL}}},
  {"format", "core", "A number as text by a format spec, as Python's format() writes it.",
   "The spec is Python's without fill, alignment and width: [+|-][z][,|_][.precision][f|e|g|%|d] (f fixed, e "
   "exponent, g general, % percent, d whole number; , or _ group thousands; + always a sign; z no negative "
   "zero). Without a spec, or for a value that is not a number, the text is the value as print writes it. The "
   "report's inline values take the same specs, so {eval}`format(x, \".3f\")` in a notebook's Markdown reads the "
   "same in JupyterLab as {{ x :.3f }} in the report.",
   "format(2 / 3, \".3f\")\nformat(60000, \",d\")\nformat(0.8056, \".1%\")", cmd_format, 0,
   {{"value", SL_ARG_ANY, SL_POSITIONAL | SL_REQUIRED, NULL, "a number (or any value, without a spec)"},
    {"spec", SL_ARG_STRING, SL_POSITIONAL, "\"\"", "the format spec, e.g. \".3f\", \",d\", \".1%\""},
    {NULL}}},
  {"sum", "core", "The sum of numbers: of the arguments, or of one list.", "A NaN among them makes the result NaN.",
   "sum [1, 2, 3]\nsum(1, 2, 3)", cmd_sum, 0, {NUMBERS_ARG, {NULL}}},
  {"min", "core", "The smallest of numbers: of the arguments, or of one list.", "A NaN among them makes the result NaN.",
   "min [3, 1, 2]\nlo = min(4, 10 - 2)", cmd_min, 0, {NUMBERS_ARG, {NULL}}},
  {"max", "core", "The largest of numbers: of the arguments, or of one list.", "A NaN among them makes the result NaN.",
   "max [3, 1, 2]\nw = 6\nfrac = max(4, w - 2)", cmd_max, 0, {NUMBERS_ARG, {NULL}}},
  {"mean", "core", "The mean of numbers: of the arguments, or of one list.", "",
   "mean [1, 2, 3, 4]", cmd_mean, 0, {NUMBERS_ARG, {NULL}}},
  {NULL},
};
/* clang-format on */

const sl_Domain slB_domain = {
    "Language",
    "The language itself: printing and showing values, help, variables, types, rich displays (Markdown, HTML, images, LaTeX), progress, input and timing. These commands work on any value and know nothing of the domains above them.",
    slB_commands,
};
