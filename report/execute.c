/*
** execute.c - one notebook run through a kernel of its own: every code
** cell in order, then the Markdown's inline values.
**
** The kernel is this program started as `syslab kernel`, reached through
** the protocol client (client.c) as any Jupyter client would reach it. A
** cell's time limit is --timeout, or more where the cell asks for it; its
** progress line and every error name the cell by the number a reader
** gives it. Without --allow-errors the first cell that fails (and was not
** tagged raises-exception) stops the notebook; the errors a notebook
** records are counted from the notebook itself, so one taken from the
** cache counts the same.
*/
#include "execute.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "client.h"
#include "inline.h"
#include "notebook.h"

void slR_ensure_ids(json_t *nb) {
  size_t i;
  json_t *cell;
  json_array_foreach(json_object_get(nb, "cells"), i, cell) {
    if (json_is_string(json_object_get(cell, "id"))) continue;
    char id[32];
    snprintf(id, sizeof id, "cell-%zu", i + 1);
    json_object_set_new(cell, "id", json_string(id));
  }
  json_object_set_new(nb, "nbformat_minor", json_integer(5));
}

/* A cell's time limit: --timeout, or more where the cell asks for it with
** `#| timeout: SECONDS` (a search at the seeds' scale runs for many minutes;
** the option never shortens the limit the command line gives). What the
** option may hold is checked before anything runs (check_timeouts). */
static double cell_limit(const char *src, double timeout) {
  char v[32];
  long t;
  slR_cell_option(src, "timeout", v, sizeof v);
  return sl_parse_whole(v, 1, SLR_MAX_CELL_SECONDS, &t) && t > timeout ? (double)t : timeout;
}

/* Every `#| timeout:` is a whole number of seconds in range: `10s`, `1e9`
** or an empty value would otherwise leave the cell under --timeout without
** a word. Returns the number of problems, each printed. */
int slR_check_timeouts(const char *path, json_t *nb) {
  int problems = 0;
  size_t i;
  json_t *cell, *cells = json_object_get(nb, "cells");
  json_array_foreach(cells, i, cell) {
    if (strcmp(json_string_value(json_object_get(cell, "cell_type")), "code") != 0) continue;
    char *src = slR_cell_source(cell), v[64];
    long t;
    if (slR_cell_option(src, "timeout", v, sizeof v) && !sl_parse_whole(v, 1, SLR_MAX_CELL_SECONDS, &t)) {
      fprintf(stderr, "  error: %s, cell %zu: `#| timeout: %s` is not a whole number of seconds from 1 to %d\n", path,
              slR_cell_number(cells, i), v, SLR_MAX_CELL_SECONDS);
      problems++;
    }
    free(src);
  }
  return problems;
}

static const char *first_line(json_t *outputs) {
  size_t i;
  json_t *o;
  json_array_foreach(outputs, i, o) {
    if (strcmp(json_string_value(json_object_get(o, "output_type")), "error") != 0) continue;
    json_t *tb = json_object_get(o, "traceback");
    const char *line = json_string_value(json_array_get(tb, 0));
    return line && strncmp(line, "line ", 5) == 0 ? line : json_string_value(json_object_get(o, "evalue"));
  }
  return "";
}

/* "ename: evalue" of a cell's error output */
static void error_summary(json_t *outputs, char *out, size_t size) {
  size_t i;
  json_t *o;
  out[0] = '\0';
  json_array_foreach(outputs, i, o) if (strcmp(json_string_value(json_object_get(o, "output_type")), "error") == 0) {
    snprintf(out, size, "%s: %s", json_string_value(json_object_get(o, "ename")),
             json_string_value(json_object_get(o, "evalue")));
    return;
  }
}

/* The errors an executed notebook records: cells with an error output that
** were not expected to fail (raises-exception). Without --allow-errors the
** first such cell stops the notebook; with it they are counted here, from
** the notebook itself, so a notebook from the cache counts the same. */
size_t slR_recorded_errors(json_t *nb, const char *path, int print) {
  size_t n = 0, i;
  json_t *cell, *cells = json_object_get(nb, "cells");
  json_array_foreach(cells, i, cell) {
    char what[600];
    if (slR_cell_has_tag(cell, "raises-exception")) continue;
    error_summary(json_object_get(cell, "outputs"), what, sizeof what);
    if (!what[0]) continue;
    n++;
    if (print)
      fprintf(stderr, "syslab report: %s, cell %zu: error (kept going: --allow-errors): %s\n", path,
              slR_cell_number(cells, i), what);
  }
  return n + slR_inline_errors(nb, path, print);
}

/* progress lines: to stderr as they come, or kept in log to be printed together */
static void say(slU_Text *log, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void say(slU_Text *log, const char *fmt, ...) {
  char line[1024];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(line, sizeof line, fmt, ap);
  va_end(ap);
  if (log) slU_add(log, "%s", line);
  else fputs(line, stderr);
}

int slR_execute_notebook(const char *path, json_t *nb, const slR_Options *o, int *ncells, slU_Text *log, char *err,
                         size_t errlen) {
  char exe[4096];
  ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
  if (n <= 0) {
    snprintf(err, errlen, "cannot find the syslab program to start the kernel");
    return -1;
  }
  exe[n] = '\0';
  /* a syslab rebuilt while a long report runs leaves this process's file
  ** unlinked: its name can no longer start a kernel, and the new one is
  ** another program than the one the earlier notebooks ran with */
  const char *gone = " (deleted)";
  if ((size_t)n > strlen(gone) && strcmp(exe + n - strlen(gone), gone) == 0) {
    exe[n - strlen(gone)] = '\0';
    snprintf(
        err, errlen,
        "%s was replaced or removed while the report ran (rebuilt?), so it cannot start this notebook's kernel; run the report again",
        exe);
    return -1;
  }
  const char *argv[] = {exe, "kernel", "-f", "{connection_file}", NULL};
  slR_Kernel *k = slR_kernel_start(argv, 30, err, errlen);
  if (!k) return -1;
  json_t *meta = json_object_get(nb, "metadata");
  if (!json_is_object(meta)) json_object_set_new(nb, "metadata", meta = json_object());
  json_object_set_new(meta, "kernelspec",
                      json_pack("{s:s, s:s, s:s}", "display_name", "syslab", "language", "syslab", "name", "syslab"));
  json_object_set(meta, "language_info", json_object_get(slR_kernel_info(k), "language_info"));
  json_t *cells = json_object_get(nb, "cells");
  size_t total = 0, i;
  json_t *cell;
  json_array_foreach(cells, i, cell) total +=
      strcmp(json_string_value(json_object_get(cell, "cell_type")), "code") == 0;
  int rc = 0, done = 0;
  json_array_foreach(cells, i, cell) {
    if (strcmp(json_string_value(json_object_get(cell, "cell_type")), "code") != 0) continue;
    done++;
    /* progress and errors name a cell by the same number, the reader's */
    char which[64];
    if (slR_cell_injected(cell)) snprintf(which, sizeof which, "parameters (injected)");
    else snprintf(which, sizeof which, "cell %zu", slR_cell_number(cells, i));
    json_object_set_new(cell, "outputs", json_array());
    json_object_set_new(cell, "execution_count", json_null());
    if (slR_cell_has_tag(cell, "skip-execution")) {
      say(log, "  [%d/%zu] %s: skipped (skip-execution)\n", done, total, which);
      continue;
    }
    char *src = slR_cell_source(cell);
    double limit = cell_limit(src, o->timeout), t0 = slU_now();
    json_t *outputs;
    int count;
    slR_CellStatus st = slR_execute(k, src, limit, &outputs, &count);
    free(src);
    json_object_set_new(cell, "outputs", outputs);
    json_object_set_new(cell, "execution_count", count > 0 ? json_integer(count) : json_null());
    (*ncells)++;
    char what[600] = "";
    if (st == SLR_CELL_ERROR) error_summary(outputs, what, sizeof what);
    say(log, "  [%d/%zu] %s: %.2f s%s%s\n", done, total, which, slU_now() - t0,
        st == SLR_CELL_OK        ? ""
        : st == SLR_CELL_ERROR   ? "  error: "
        : st == SLR_CELL_TIMEOUT ? "  timed out"
        : st == SLR_CELL_STOPPED ? "  stopped by a signal"
                                 : "  kernel died",
        what);
    /* a notebook a signal cut short is written, so its outputs can be read,
    ** but it is not a run: no cache key may be saved for it */
    if (st == SLR_CELL_STOPPED) {
      snprintf(err, errlen, "%s, %s: stopped by a signal while it ran", path, which);
      rc = -1;
      break;
    }
    if (st == SLR_CELL_DIED) {
      snprintf(err, errlen, "%s, %s: the kernel died while running it", path, which);
      rc = -1;
      break;
    }
    if (st == SLR_CELL_TIMEOUT) {
      snprintf(err, errlen, "%s, %s: still running after %g seconds (%s); it was interrupted", path, which, limit,
               limit > o->timeout ? "its `#| timeout:` option" : "--timeout");
      rc = -1;
      break;
    }
    if (st == SLR_CELL_ERROR && !o->allow_errors && !slR_cell_has_tag(cell, "raises-exception")) {
      const char *where = first_line(outputs);
      size_t wl = strlen(where);
      if (wl && where[wl - 1] == ':') wl--; /* "line 2, column 9:" */
      snprintf(err, errlen, "%s, %s, %.*s: %s", path, which, (int)wl, where, what);
      rc = -1;
      break;
    }
  }
  if (rc == 0 && !slR_stop_requested()) { /* the Markdown's inline values, once every cell has run */
    size_t values, failed;
    double t0 = slU_now();
    rc = slR_inline_run(k, path, nb, o->allow_errors, o->timeout, &values, &failed, err, errlen);
    if (values) say(log, "  inline values: %zu in %.2f s%s\n", values, slU_now() - t0, failed ? "  (some failed)" : "");
  }
  slR_kernel_stop(k);
  return rc;
}
