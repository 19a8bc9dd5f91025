/*
** commands.c - the table domain's commands for tables, sweeps and CSV.
**
** A sweep runs its block once for every combination of the values it is
** given (the first name varies slowest) and collects the rows that `row`
** adds into a table. The swept names are columns of every row, first, in
** the order given. If the block adds no row, the run still records one row
** of the swept values. The swept names are variables only inside the
** block: afterwards they have their earlier values again, so `x=width` in a
** later `plot` names the column, not the last width.
*/
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "table.h"

#define MAX_SWEEP_RUNS 1000000

static slT_Table *arg_table(sl_Call *call, const char *name) { return sl_arg_object(call, name, &slT_class); }

static int storable(sl_Value v) {
  return v.type == SL_NUMBER || v.type == SL_STRING || v.type == SL_BOOL || v.type == SL_NIL;
}

/* bools are stored as 0/1 so they can be plotted and averaged */
static sl_Value cell_of(sl_Value v) {
  if (v.type == SL_BOOL) return sl_number(v.u.b);
  sl_retain(v);
  return v;
}

/* ------------------------------------------------------------ table, row */

static int cmd_table(sl_Call *call, sl_Value *result) {
  size_t n = sl_call_extra_count(call);
  slT_Table *t = slT_new();
  size_t rows = 0;
  for (size_t i = 0; i < n; i++) {
    sl_Value col = sl_call_extra_value(call, i);
    const char *name = sl_call_extra_name(call, i);
    if (col.type != SL_LIST) {
      slT_free(t);
      return sl_error(call, "column %s must be a list of values, got a %s", name, sl_typename(col));
    }
    if (i == 0) rows = sl_list_len(col);
    if (sl_list_len(col) != rows) {
      slT_free(t);
      return sl_error(call, "column %s has %zu values but %s has %zu: columns must have the same length", name,
                      sl_list_len(col), sl_call_extra_name(call, 0), rows);
    }
    slT_add_column(t, name);
  }
  for (size_t r = 0; r < rows; r++) {
    slT_add_row(t);
    for (size_t c = 0; c < n; c++) {
      sl_Value v = sl_list_get(sl_call_extra_value(call, c), r);
      if (!storable(v)) {
        slT_free(t);
        return sl_error(call, "column %s, item %zu is a %s: cells hold numbers, strings or booleans",
                        sl_call_extra_name(call, c), r + 1, sl_typename(v));
      }
      slT_set(t, r, c, cell_of(v));
    }
  }
  *result = slT_value(t);
  return 0;
}

/* the names the innermost running sweep sweeps over: a row must not
** overwrite their columns */
static sl_Value swept_names;

static int cmd_row(sl_Call *call, sl_Value *result) {
  slT_Table *t = arg_table(call, "into");
  if (!t) {
    t = slT_from(sl_get_collector(call));
    for (size_t i = 0; t && i < sl_call_extra_count(call); i++)
      for (size_t k = 0; k < sl_list_len(swept_names); k++)
        if (strcmp(sl_str(sl_list_get(swept_names, k)), sl_call_extra_name(call, i)) == 0)
          return sl_error(call, "%s is swept: its column holds the swept value. Name this column differently",
                          sl_call_extra_name(call, i));
  }
  if (!t) return sl_error(call, "row adds to a sweep's table: use it inside sweep { ... }, or give into=TABLE");
  if (sl_call_extra_count(call) == 0) return sl_error(call, "a row needs at least one name=value");
  for (size_t i = 0; i < sl_call_extra_count(call); i++)
    if (!storable(sl_call_extra_value(call, i)))
      return sl_error(call, "%s is a %s: cells hold numbers, strings or booleans", sl_call_extra_name(call, i),
                      sl_typename(sl_call_extra_value(call, i)));
  size_t r = slT_add_row(t);
  for (size_t i = 0; i < sl_call_extra_count(call); i++) {
    int c = slT_add_column(t, sl_call_extra_name(call, i));
    slT_set(t, r, (size_t)c, cell_of(sl_call_extra_value(call, i)));
  }
  return 0;
}

/* ------------------------------------------------------------------ sweep */

/* a sweep's table, rows x columns x bytes per value, against the memory budget */
static int sweep_fits(sl_Call *call, double rows, size_t cols) {
  char what[160];
  snprintf(what, sizeof what, "this sweep's table (%.0f rows x %zu columns x %zu bytes per value)", rows, cols,
           sizeof(sl_Value));
  return sl_memory_check(call, NULL, rows * (double)cols * (double)sizeof(sl_Value), what);
}

static int cmd_sweep(sl_Call *call, sl_Value *result) {
  size_t n = sl_call_extra_count(call);
  if (n == 0) return sl_error(call, "give at least one name=[values] to sweep over");
  double total = 1;
  for (size_t i = 0; i < n; i++) {
    sl_Value v = sl_call_extra_value(call, i);
    if (v.type != SL_LIST)
      return sl_error(call, "%s must be a list or a range of values, got a %s", sl_call_extra_name(call, i),
                      sl_typename(v));
    if (sl_list_len(v) == 0)
      return sl_error(call, "%s is an empty list: a sweep needs at least one value for each name",
                      sl_call_extra_name(call, i));
    total *= (double)sl_list_len(v);
  }
  if (total > MAX_SWEEP_RUNS) return sl_error(call, "%.0f combinations; at most %d are allowed", total, MAX_SWEEP_RUNS);
  /* the table it fills: one row per combination, a column per name at the
  ** least (what `row` adds is known after the first run, checked again there) */
  if (sweep_fits(call, total, n) != 0) return -1;

  slT_Table *t = slT_new();
  sl_Value table = slT_value(t);
  for (size_t i = 0; i < n; i++) slT_add_column(t, sl_call_extra_name(call, i));
  sl_set_collector(call, table);
  sl_Value outer_names = swept_names;
  swept_names = sl_list_new();
  for (size_t i = 0; i < n; i++) sl_list_push(swept_names, sl_string(sl_call_extra_name(call, i)));
  sl_Value *saved = calloc(n, sizeof *saved);
  int *had = calloc(n, sizeof *had);
  for (size_t i = 0; i < n; i++) {
    sl_Value old = sl_getvar(call, sl_call_extra_name(call, i));
    had[i] = old.type != SL_NIL;
    saved[i] = old;
    sl_retain(old);
  }
  size_t *index = calloc(n, sizeof *index);
  sl_Progress *p = sl_progress_begin(call, "sweep", total);
  int rc = 0;
  for (size_t run = 0; run < (size_t)total; run++) {
    if (sl_interrupted()) {
      rc = sl_interrupted_error(call);
      break;
    }
    char detail[256] = "";
    size_t used = 0;
    for (size_t i = 0; i < n; i++) {
      sl_Value v = sl_list_get(sl_call_extra_value(call, i), index[i]);
      sl_retain(v);
      sl_setvar(call, sl_call_extra_name(call, i), v);
      char *s = sl_tostring(v);
      used += (size_t)snprintf(detail + used, used < sizeof detail ? sizeof detail - used : 0, "%s%s=%s", i ? " " : "",
                               sl_call_extra_name(call, i), s);
      free(s);
    }
    size_t before = t->nrows;
    if ((rc = sl_run_block(call, "body")) != 0) break;
    if (t->nrows == before) slT_add_row(t);
    for (size_t r = before; r < t->nrows; r++)
      for (size_t i = 0; i < n; i++)
        if (slT_get(t, r, i).type == SL_NIL)
          slT_set(t, r, i, cell_of(sl_list_get(sl_call_extra_value(call, i), index[i])));
    if (run == 0 && (t->ncols > n || t->nrows > 1) && (rc = sweep_fits(call, total * (double)t->nrows, t->ncols)) != 0)
      break;
    sl_progress_update(p, (double)run + 1, detail);
    for (size_t i = n; i-- > 0;) { /* the last name varies fastest */
      if (++index[i] < sl_list_len(sl_call_extra_value(call, i))) break;
      index[i] = 0;
    }
  }
  sl_progress_end(p);
  sl_release(swept_names);
  swept_names = outer_names;
  for (size_t i = 0; i < n; i++) {
    if (had[i]) sl_setvar(call, sl_call_extra_name(call, i), saved[i]);
    else sl_unsetvar(call, sl_call_extra_name(call, i));
  }
  free(saved);
  free(had);
  free(index);
  if (rc != 0) {
    /* the rows already done are not lost: shown, and kept in a variable */
    if (t->nrows > 0) {
      sl_Bundle b;
      sl_show(table, &b);
      sl_display(call, &b);
      sl_bundle_free(&b);
      sl_eprintf(call, "sweep stopped after %zu row%s; they are kept in the variable sweep_partial\n", t->nrows,
                 t->nrows == 1 ? "" : "s");
      sl_setvar(call, "sweep_partial", table);
    } else {
      sl_release(table);
    }
    return -1;
  }
  *result = table;
  return 0;
}

/* ------------------------------------------------------------ save, load */

/* One pair for every file: a name ending in .csv is a table as CSV (for
** spreadsheets and other tools); any other name is a syslab file (lang/codec.c),
** which holds any value that can leave the process: a model checkpoint, a
** table, a data set's definition, numbers, strings, lists, records. */
static int is_csv(const char *path) {
  size_t len = strlen(path);
  return len >= 4 && strcmp(path + len - 4, ".csv") == 0;
}

static int cmd_save(sl_Call *call, sl_Value *result) {
  char err[1024];
  const char *path = sl_arg_string(call, "path");
  sl_Value v = sl_arg(call, "value");
  if (is_csv(path)) {
    slT_Table *t = slT_from(v);
    if (!t)
      return sl_arg_error(call, "path",
                          "a .csv file holds a table, and this is a %s: give it another name (e.g. model.slm)",
                          sl_typename(v));
    if (slT_write_csv(t, path, err, sizeof err) != 0)
      return sl_interrupted() ? sl_interrupted_error(call) : sl_arg_error(call, "path", "%s", err);
    return 0;
  }
  if (sl_save_file(v, path, err, sizeof err) != 0) return sl_error(call, "%s", err);
  return 0;
}

static int cmd_load(sl_Call *call, sl_Value *result) {
  char err[1024];
  const char *path = sl_arg_string(call, "path");
  if (is_csv(path)) {
    slT_Table *t = slT_read_csv(path, err, sizeof err);
    if (!t) return sl_interrupted() ? sl_interrupted_error(call) : sl_arg_error(call, "path", "%s", err);
    *result = slT_value(t);
    return 0;
  }
  if (sl_load_file(path, result, err, sizeof err) != 0) return sl_arg_error(call, "path", "%s", err);
  return 0;
}

/* -------------------------------------------------------------- querying */

int slT_arg_column(sl_Call *call, slT_Table *t, const char *arg) {
  const char *name = sl_arg_string(call, arg);
  int c = slT_column(t, name);
  if (c < 0) {
    char *cols = slT_column_list(t);
    sl_arg_error(call, arg, "the table has no column '%s' (columns: %s)", name, cols);
    free(cols);
  }
  return c;
}

static slT_Table *copy_rows(const slT_Table *t, const size_t *rows, size_t n, const int *cols, size_t ncols) {
  slT_Table *out = slT_new();
  for (size_t c = 0; c < ncols; c++) {
    slT_add_column(out, t->names[cols[c]]);
    out->timing[c] = t->timing[cols[c]];
  }
  for (size_t i = 0; i < n; i++) {
    size_t r = slT_add_row(out);
    for (size_t c = 0; c < ncols; c++) {
      sl_Value v = slT_get(t, rows[i], (size_t)cols[c]);
      sl_retain(v);
      slT_set(out, r, c, v);
    }
  }
  return out;
}

static int *all_columns(const slT_Table *t) {
  int *cols = malloc((t->ncols ? t->ncols : 1) * sizeof *cols);
  for (size_t c = 0; c < t->ncols; c++) cols[c] = (int)c;
  return cols;
}

static int cmd_select(sl_Call *call, sl_Value *result) {
  slT_Table *t = arg_table(call, "table");
  sl_Value names = sl_arg(call, "columns");
  size_t n = sl_list_len(names);
  if (n == 0) return sl_arg_error(call, "columns", "name at least one column");
  int *cols = malloc(n * sizeof *cols);
  for (size_t i = 0; i < n; i++) {
    const char *name = sl_str(sl_list_get(names, i));
    cols[i] = name ? slT_column(t, name) : -1;
    if (cols[i] < 0) {
      char *list = slT_column_list(t);
      sl_arg_error(call, "columns", "the table has no column '%s' (columns: %s)", name ? name : "?", list);
      free(list);
      free(cols);
      return -1;
    }
  }
  size_t *rows = malloc((t->nrows ? t->nrows : 1) * sizeof *rows);
  for (size_t r = 0; r < t->nrows; r++) rows[r] = r;
  *result = slT_value(copy_rows(t, rows, t->nrows, cols, n));
  free(rows);
  free(cols);
  return 0;
}

/* A copy of a table with some columns marked as measurements: what a notebook
** computes from timings (a ratio, a spread) and collects with `row into=`
** is a measurement too, and the report compares two runs without it. */
static int cmd_measured(sl_Call *call, sl_Value *result) {
  slT_Table *t = arg_table(call, "table");
  sl_Value names = sl_arg(call, "columns");
  size_t n = sl_list_len(names);
  if (n == 0) return sl_arg_error(call, "columns", "name at least one column");
  for (size_t i = 0; i < n; i++) {
    const char *name = sl_str(sl_list_get(names, i));
    if (!name || slT_column(t, name) < 0) {
      char *list = slT_column_list(t);
      sl_arg_error(call, "columns", "the table has no column '%s' (columns: %s)", name ? name : "?", list);
      free(list);
      return -1;
    }
  }
  int *cols = all_columns(t);
  size_t *rows = malloc((t->nrows ? t->nrows : 1) * sizeof *rows);
  for (size_t r = 0; r < t->nrows; r++) rows[r] = r;
  slT_Table *out = copy_rows(t, rows, t->nrows, cols, t->ncols);
  free(rows);
  free(cols);
  for (size_t i = 0; i < n; i++) slT_mark_timing(out, slT_column(out, sl_str(sl_list_get(names, i))));
  *result = slT_value(out);
  return 0;
}

static const char *const comparisons[] = {"==", "!=", "<", "<=", ">", ">=", NULL};

static int compare_cells(sl_Value a, sl_Value b) {
  if (a.type == SL_NUMBER && b.type == SL_NUMBER) return (a.u.n > b.u.n) - (a.u.n < b.u.n);
  if (a.type == SL_STRING && b.type == SL_STRING) return strcmp(sl_str(a), sl_str(b));
  if (a.type == SL_NIL || b.type == SL_NIL) return (a.type != SL_NIL) - (b.type != SL_NIL);
  return a.type == SL_NUMBER ? -1 : 1; /* numbers sort before strings */
}

static int cmd_where(sl_Call *call, sl_Value *result) {
  slT_Table *t = arg_table(call, "table");
  int c = slT_arg_column(call, t, "column");
  if (c < 0) return -1;
  const char *op = sl_arg_string(call, "op");
  sl_Value value = sl_arg(call, "value");
  if (value.type == SL_BOOL) value = sl_number(value.u.b);
  size_t *rows = malloc((t->nrows ? t->nrows : 1) * sizeof *rows), n = 0;
  for (size_t r = 0; r < t->nrows; r++) {
    sl_Value v = slT_get(t, r, (size_t)c);
    int same_kind = v.type == value.type;
    int cmp = compare_cells(v, value);
    int keep = strcmp(op, "==") == 0   ? same_kind && cmp == 0
               : strcmp(op, "!=") == 0 ? !same_kind || cmp != 0
               : !same_kind            ? 0
               : strcmp(op, "<") == 0  ? cmp < 0
               : strcmp(op, "<=") == 0 ? cmp <= 0
               : strcmp(op, ">") == 0  ? cmp > 0
                                       : cmp >= 0;
    if (keep) rows[n++] = r;
  }
  int *cols = all_columns(t);
  *result = slT_value(copy_rows(t, rows, n, cols, t->ncols));
  free(cols);
  free(rows);
  return 0;
}

/* qsort has no context argument: the column and direction go through these */
static const slT_Table *sort_table;
static int sort_col, sort_desc;

static int by_column(const void *a, const void *b) {
  size_t ra = *(const size_t *)a, rb = *(const size_t *)b;
  int c = compare_cells(slT_get(sort_table, ra, (size_t)sort_col), slT_get(sort_table, rb, (size_t)sort_col));
  if (sort_desc) c = -c;
  return c != 0 ? c : (ra > rb) - (ra < rb); /* stable: equal rows keep their order */
}

static int cmd_sort(sl_Call *call, sl_Value *result) {
  slT_Table *t = arg_table(call, "table");
  int c = slT_arg_column(call, t, "by");
  if (c < 0) return -1;
  size_t *rows = malloc((t->nrows ? t->nrows : 1) * sizeof *rows);
  for (size_t r = 0; r < t->nrows; r++) rows[r] = r;
  sort_table = t;
  sort_col = c;
  sort_desc = sl_truthy(sl_arg(call, "desc"));
  qsort(rows, t->nrows, sizeof *rows, by_column);
  int *cols = all_columns(t);
  *result = slT_value(copy_rows(t, rows, t->nrows, cols, t->ncols));
  free(cols);
  free(rows);
  return 0;
}

/* ------------------------------------------------------------- summaries */

static int cmp_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

typedef struct {
  double n, min, median, mean, std, max;
} Summary;

/* sample standard deviation (n - 1), as benchmark tables report it */
static Summary summarise(double *x, size_t n) {
  Summary s = {(double)n, NAN, NAN, NAN, NAN, NAN};
  if (n == 0) return s;
  qsort(x, n, sizeof *x, cmp_double);
  double sum = 0;
  for (size_t i = 0; i < n; i++) sum += x[i];
  s.mean = sum / (double)n;
  double ss = 0;
  for (size_t i = 0; i < n; i++) ss += (x[i] - s.mean) * (x[i] - s.mean);
  s.std = n > 1 ? sqrt(ss / (double)(n - 1)) : 0;
  s.min = x[0];
  s.max = x[n - 1];
  s.median = n % 2 ? x[n / 2] : (x[n / 2 - 1] + x[n / 2]) / 2;
  return s;
}

static int numbers_of(sl_Call *call, slT_Table *t, int c, const char *arg, const size_t *rows, size_t n, double *out) {
  for (size_t i = 0; i < n; i++) {
    sl_Value v = slT_get(t, rows[i], (size_t)c);
    if (v.type != SL_NUMBER)
      return sl_arg_error(call, arg, "column '%s' must hold numbers, but row %zu holds %s%s%s", t->names[c],
                          rows[i] + 1, v.type == SL_STRING ? "\"" : "", v.type == SL_STRING ? sl_str(v) : "nothing",
                          v.type == SL_STRING ? "\"" : "");
    out[i] = v.u.n;
  }
  return 0;
}

static void add_summary(slT_Table *out, size_t r, size_t first, Summary s) {
  double v[6] = {s.n, s.min, s.median, s.mean, s.std, s.max};
  for (size_t k = 0; k < 6; k++) slT_set(out, r, first + k, sl_number(v[k]));
}

static const char *const summary_names[] = {"n", "min", "median", "mean", "std", "max"};

static int cmd_group(sl_Call *call, sl_Value *result) {
  slT_Table *t = arg_table(call, "table");
  int by = slT_arg_column(call, t, "by");
  if (by < 0) return -1;
  int of = slT_arg_column(call, t, "of");
  if (of < 0) return -1;
  slT_Table *out = slT_new();
  slT_add_column(out, t->names[by]);
  for (size_t k = 0; k < 6; k++) {
    int c = slT_add_column(out, summary_names[k]);
    if (k > 0 && t->timing[of]) slT_mark_timing(out, c); /* summaries of timings are timings */
  }
  size_t *rows = malloc((t->nrows ? t->nrows : 1) * sizeof *rows);
  double *x = malloc((t->nrows ? t->nrows : 1) * sizeof *x);
  char *done = calloc(t->nrows ? t->nrows : 1, 1);
  for (size_t r = 0; r < t->nrows; r++) { /* groups in order of first appearance */
    if (done[r]) continue;
    size_t n = 0;
    for (size_t q = r; q < t->nrows; q++)
      if (!done[q] && sl_equal(slT_get(t, q, (size_t)by), slT_get(t, r, (size_t)by))) rows[n++] = q, done[q] = 1;
    if (numbers_of(call, t, of, "of", rows, n, x) != 0) {
      free(rows), free(x), free(done);
      slT_free(out);
      return -1;
    }
    size_t o = slT_add_row(out);
    sl_Value key = slT_get(t, r, (size_t)by);
    sl_retain(key);
    slT_set(out, o, 0, key);
    add_summary(out, o, 1, summarise(x, n));
  }
  free(rows), free(x), free(done);
  *result = slT_value(out);
  return 0;
}

static int cmd_summary(sl_Call *call, sl_Value *result) {
  slT_Table *t = arg_table(call, "table");
  int c = slT_arg_column(call, t, "column");
  if (c < 0) return -1;
  if (t->nrows == 0) return sl_arg_error(call, "table", "the table has no rows to summarise");
  size_t *rows = malloc(t->nrows * sizeof *rows);
  double *x = malloc(t->nrows * sizeof *x);
  for (size_t r = 0; r < t->nrows; r++) rows[r] = r;
  int rc = numbers_of(call, t, c, "column", rows, t->nrows, x);
  if (rc == 0) {
    Summary s = summarise(x, t->nrows);
    double v[6] = {s.n, s.min, s.median, s.mean, s.std, s.max};
    *result = sl_record_new();
    for (size_t k = 0; k < 6; k++) sl_record_set(*result, summary_names[k], sl_number(v[k]));
  }
  free(rows);
  free(x);
  return rc;
}

/* --------------------------------------------------------------- registry */

/* clang-format off */
#define TABLE_ARG {"table", SL_ARG_OBJECT, SL_POSITIONAL | SL_REQUIRED, NULL, "the table", NULL, "table"}

static const sl_Command slT_commands[] = {
  {"table", "table", "Build a table from columns given as lists of equal length.",
   "A table t answers t.nrows, t.ncols, t.columns (the names), t.NAME or t[\"NAME\"] (a column as a list) and "
   "t[i] (row i as a record, t[-1] the last); len t is its number of rows. Long tables are shown as their "
   "first and last 20 rows; save writes them whole.",
   "t = table width=[4, 8, 16] accuracy=[0.61, 0.83, 0.85]", cmd_table, SL_CMD_EXTRA_KEYWORDS, {{NULL}}},
  {"measured", "table", "A copy of a table with columns marked as measurements (times and what follows from them).",
   "The report shows a marked column's cells in a timing span and compares two runs without them, as it does for "
   "bench's and lm_bench's timing columns; a table collected with `row into=` from timings needs the mark.",
   "t = table preset=[\"tiny\"] ratio=[1.5]\nmeasured t columns=[\"ratio\"]", cmd_measured, 0,
   {TABLE_ARG, {"columns", SL_ARG_LIST, SL_POSITIONAL | SL_REQUIRED, NULL, "the columns to mark"}, {NULL}}},
  {"sweep", "table", "Run a block for every combination of values and collect the rows into a table.",
   "Each name=[values] is set as a variable inside the block (the first name varies slowest); `row` adds a "
   "row whose columns start with the swept values. If the block adds no row, each run records its swept "
   "values. After the sweep the names have their earlier values again. On an error or an interrupt the rows "
   "already done are shown and kept in the variable sweep_partial.",
   "results = sweep width=[4, 8] mode=[\"ptq\", \"qat\"] {\n  row bits=width * 2\n}", cmd_sweep,
   SL_CMD_EXTRA_KEYWORDS | SL_CMD_LONG,
   {{"body", SL_ARG_BLOCK, SL_REQUIRED, NULL, "the statements to run for each combination"}, {NULL}}},
  {"row", "table", "Add a row of name=value cells to the sweep's table (or to into=TABLE).", "",
   "sweep x=1..3 {\n  row square=x * x\n}", cmd_row, SL_CMD_EXTRA_KEYWORDS,
   {{"into", SL_ARG_OBJECT, 0, NULL, "a table to add to, outside a sweep", NULL, "table"}, {NULL}}},
  {"save", "table", "Save a value to a file: a table as CSV (name ending in .csv), or a model checkpoint, table, list...",
   "A name ending in .csv writes a table as CSV. Any other name writes a syslab file holding the value whole: a "
   "model with its graph, every weight with its optimiser state, pruning masks and the dropout random state, so "
   "that the loaded model computes bit for bit the same, quantisers and activation pruners included; a data "
   "set as its definition, loaded again from its files; tables, numbers, strings, lists and records as they are. "
   "Either way the file is written under a temporary name and renamed into place.",
   "results = table width=[4, 8] accuracy=[0.61, 0.83]\nsave results \"results.csv\"\nm = model mlp hidden=[64]\n"
   "save m \"mlp.slm\"", cmd_save, SL_CMD_LONG,
   {{"value", SL_ARG_ANY, SL_POSITIONAL | SL_REQUIRED, NULL, "a table, model, data set, number, string, list or record"},
    {"path", SL_ARG_STRING, SL_POSITIONAL | SL_REQUIRED, NULL, "the file: .csv for a table as CSV, else a syslab file"},
    {NULL}}},
  {"load", "table", "Load a file written by `save`: a CSV table, or a syslab file (a model checkpoint...).",
   "CSV: fields that read as numbers become numbers; empty fields are missing values. A syslab file that is "
   "truncated, altered or not a syslab file at all is refused with a message saying which.",
   "save (table width=[4, 8] accuracy=[0.61, 0.83]) \"results.csv\"\nt = load \"results.csv\"\n"
   "save (model mlp hidden=[64]) \"mlp.slm\"\nm = load \"mlp.slm\"",
   cmd_load, SL_CMD_LONG, {{"path", SL_ARG_STRING, SL_POSITIONAL | SL_REQUIRED, NULL, "a .csv file or a syslab file"}, {NULL}}},
  {"select", "table", "Keep some columns of a table, in the order given.", "",
   "results = table width=[4, 8, 4, 8] mode=[\"ptq\", \"ptq\", \"qat\", \"qat\"] accuracy=[0.61, 0.83, 0.7, 0.85]\nselect results columns=[\"width\", \"accuracy\"]", cmd_select, 0,
   {TABLE_ARG, {"columns", SL_ARG_LIST, SL_POSITIONAL | SL_REQUIRED, NULL, "column names"}, {NULL}}},
  {"where", "table", "Keep the rows whose column compares true with a value.",
   "Numbers compare with numbers and strings with strings; a row holding the other kind is left out "
   "(except by !=).",
   "results = table width=[4, 8, 4, 8] mode=[\"ptq\", \"ptq\", \"qat\", \"qat\"] accuracy=[0.61, 0.83, 0.7, 0.85]\nwhere results mode \"==\" \"qat\"\nwhere results accuracy \">\" 0.8", cmd_where, 0,
   {TABLE_ARG,
    {"column", SL_ARG_STRING, SL_POSITIONAL | SL_REQUIRED | SL_BAREWORD, NULL, "the column to test"},
    {"op", SL_ARG_ENUM, SL_POSITIONAL | SL_REQUIRED, NULL, "the comparison", comparisons},
    {"value", SL_ARG_ANY, SL_POSITIONAL | SL_REQUIRED, NULL, "the value to compare with"},
    {NULL}}},
  {"sort", "table", "Sort the rows of a table by a column (stable).", "", "results = table width=[4, 8, 4, 8] mode=[\"ptq\", \"ptq\", \"qat\", \"qat\"] accuracy=[0.61, 0.83, 0.7, 0.85]\nsort results by=accuracy desc=true",
   cmd_sort, 0,
   {TABLE_ARG, {"by", SL_ARG_STRING, SL_REQUIRED | SL_BAREWORD, NULL, "the column to sort by"},
    {"desc", SL_ARG_BOOL, 0, "false", "largest first"}, {NULL}}},
  {"group", "table", "Summarise a numeric column per value of another: n, min, median, mean, std, max.",
   "std is the sample standard deviation (n - 1 in the denominator).", "timings = table kernel=[\"naive\", \"blas\", \"naive\", \"blas\"] seconds=[0.9, 0.1, 1.1, 0.12]\ngroup timings by=kernel of=seconds",
   cmd_group, 0,
   {TABLE_ARG, {"by", SL_ARG_STRING, SL_REQUIRED | SL_BAREWORD, NULL, "the column whose values form the groups"},
    {"of", SL_ARG_STRING, SL_REQUIRED | SL_BAREWORD, NULL, "the numeric column to summarise"}, {NULL}}},
  {"summary", "table", "Summarise a numeric column: a record of n, min, median, mean, std, max.", "",
   "timings = table kernel=[\"naive\", \"blas\", \"naive\", \"blas\"] seconds=[0.9, 0.1, 1.1, 0.12]\n(summary timings seconds).median", cmd_summary, 0,
   {TABLE_ARG, {"column", SL_ARG_STRING, SL_POSITIONAL | SL_REQUIRED | SL_BAREWORD, NULL, "the numeric column"},
    {NULL}}},
  {NULL},
};
/* clang-format on */

const sl_Domain slT_domain = {
    "Tables and sweeps",
    "Tables are the results every experiment ends in: columns of numbers and text built row by row, loaded from and saved to CSV, queried, and filled by sweeps that run a block once for every combination of parameters. Timing columns are marked as measurements so that reruns can be compared.",
    slT_commands,
    (const sl_Class *const[]){&slT_class, NULL},
};
