/*
** plot.c - the `plot` command: a table drawn by gnuplot, shown as PNG and
** SVG at once, with a text description for plain-text readers.
**
** The script is built here and handed to gnuplot.c. User text (titles,
** labels, series names, category names) only ever appears inside
** single-quoted gnuplot strings with enhanced-text processing off, where
** gnuplot interprets nothing; the data blocks hold numbers only, so no
** cell can end a block early or smuggle a command in.
*/
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gnuplot.h"
#include "table/table.h"

#define PLOT_TIMEOUT 15.0
#define MAX_SERIES 32
/* More points than a 4000-pixel figure can show apart, and gnuplot takes
** tens of seconds on a million: such a table is refused with a hint. */
#define MAX_POINTS 200000
/* gnuplot's axis arithmetic overflows near the ends of the double range */
#define MAX_MAGNITUDE 1e300
/* What one plotted value costs on its way to gnuplot and back: about 25
** bytes as text in the script's data block (%.17g), with room for the
** buffer's growth, its row index, and its share of the SVG drawing. */
#define PLOT_BYTES_PER_VALUE 64
/* categories are labelled one by one on the x axis */
#define MAX_CATEGORIES 1000

static void quote(slU_Text *b, const char *text) { slP_quote(&b->s, &b->n, &b->cap, text); }

/* Wong's colour-blind-safe palette, with dash patterns and point shapes as
** second cues so that series stay apart when printed in grey */
static const char *const colours[] = {"#0072B2", "#D55E00", "#009E73", "#CC79A7",
                                      "#E69F00", "#56B4E9", "#000000", "#F0E442"};

static const char *const kinds[] = {"linespoints", "line", "points", "bars", NULL};
static const char *const key_places[] = {"top left", "top right", "bottom left", "bottom right",
                                         "outside",  "none",      NULL};

typedef struct {
  sl_Value name; /* the series column's value (borrowed), nil when no series */
  int ycol;      /* the column drawn on the y axis */
  size_t *rows;
  size_t n;
} Series;

/* kept so the benchmark can time gnuplot alone on exactly this script */
static char *last_script;

const char *slP_last_script(void) { return last_script; }

static int numeric(sl_Call *call, slT_Table *t, int col, const char *arg, int positive) {
  for (size_t r = 0; r < t->nrows; r++) {
    sl_Value v = slT_get(t, r, (size_t)col);
    if (v.type == SL_NIL) continue;
    if (v.type != SL_NUMBER)
      return sl_arg_error(call, arg, "column '%s' must hold numbers, but row %zu holds \"%s\"", t->names[col], r + 1,
                          sl_str(v));
    if (!isfinite(v.u.n) || fabs(v.u.n) > MAX_MAGNITUDE) {
      char num[32];
      sl_format_number(v.u.n, num, sizeof num);
      if (strlen(num) > 20) snprintf(num, sizeof num, "%.3g", v.u.n);
      return sl_arg_error(call, arg,
                          "column '%s' holds %s in row %zu: a plot needs finite numbers of at most %g "
                          "(leave such rows out with where)",
                          t->names[col], num, r + 1, MAX_MAGNITUDE);
    }
    if (positive && !(v.u.n > 0))
      return sl_arg_error(call, arg, "a log scale needs positive values, but column '%s' holds %.9g in row %zu",
                          t->names[col], v.u.n, r + 1);
  }
  return 0;
}

/* every number of the column is at least 0 (nil cells aside) */
static int column_at_least_zero(const slT_Table *t, int col) {
  for (size_t r = 0; r < t->nrows; r++) {
    sl_Value v = slT_get(t, r, (size_t)col);
    if (v.type == SL_NUMBER && !(v.u.n >= 0)) return 0;
  }
  return 1;
}

/* Without gnuplot the table is shown instead (it is shown truncated, so a
** long table costs nothing); any other failure is just its short message. */
static int fail(sl_Call *call, slP_Status st, sl_Value table, const char *err) {
  if (st == SLP_INTERRUPTED) return sl_interrupted_error(call);
  if (st == SLP_MISSING) {
    sl_Bundle b;
    sl_show(table, &b);
    sl_display(call, &b);
    sl_bundle_free(&b);
  }
  return sl_error(call, "%s", err);
}

/* gnuplot's warnings, each once, as "plot: warning: ..." lines without the
** script excerpts it echoes around them */
static void print_warnings(sl_Call *call, const char *text) {
  slU_Text seen = {0};
  slU_add_len(&seen, "\n", 1);
  for (const char *w = strstr(text, "warning:"); w; w = strstr(w + 1, "warning:")) {
    const char *msg = w + 8;
    while (*msg == ' ') msg++;
    int n = (int)strcspn(msg, "\n");
    if (n > 200) n = 200;
    char key[256];
    snprintf(key, sizeof key, "\n%.*s\n", n, msg);
    if (strstr(seen.s, key)) continue;
    slU_add(&seen, "%.*s\n", n, msg);
    sl_eprintf(call, "plot: warning: %.*s\n", n, msg);
  }
  free(seen.s);
}

/* y=accuracy names one column; y=["train", "test"] draws several, one series each */
static int y_columns(sl_Call *call, slT_Table *t, int *cols, size_t *n) {
  sl_Value y = sl_arg(call, "y");
  if (y.type == SL_STRING) {
    *n = 1;
    return (cols[0] = slT_arg_column(call, t, "y")) < 0 ? -1 : 0;
  }
  if (y.type != SL_LIST || sl_list_len(y) == 0 || sl_list_len(y) > MAX_SERIES)
    return sl_arg_error(call, "y", "must be a column name, or a list of 1 to %d column names", MAX_SERIES);
  *n = sl_list_len(y);
  for (size_t i = 0; i < *n; i++) {
    const char *name = sl_str(sl_list_get(y, i));
    if (!name) return sl_arg_error(call, "y", "item %zu of the list is not a column name (a string)", i + 1);
    if ((cols[i] = slT_column(t, name)) < 0) {
      char *list = slT_column_list(t);
      sl_arg_error(call, "y", "the table has no column '%s' (columns: %s)", name, list);
      free(list);
      return -1;
    }
  }
  return 0;
}

/* One plot as cmd_plot builds it, step by step (each a helper below): the
** arguments read and checked, then the series and categories found in the
** table. plot_free releases what it holds, whichever step it ends in. */
typedef struct {
  slT_Table *t;
  int xc, ycols[MAX_SERIES], sc, ec; /* columns: x, y, series (or -1), yerr (or -1) */
  size_t nys;
  int logx, logy, bars, categorical;
  const char *kind;
  double width, height;
  Series series[MAX_SERIES]; /* in order of first appearance, or one per y column */
  size_t nseries;
  sl_Value *cats; /* categories of x in order of first appearance */
  size_t ncats;
  sl_Value lines;     /* names of series drawn as plain lines (a roof, a reference), or nil */
  int measured;       /* a plotted column holds timings: the figure differs from run to run */
  int xfloor, yfloor; /* every x (y) is at least 0: the axis does not start below 0 */
} Plot;

static void plot_free(Plot *p) {
  for (size_t s = 0; s < p->nseries; s++) free(p->series[s].rows);
  free(p->cats);
}

/* gnuplot's "no valid points", said before it runs: a point needs an x and
** a y; a table that says why its cells are missing (a study's) says so */
static int nothing_to_draw(sl_Call *call, const slT_Table *t, const Plot *p) {
  for (size_t r = 0; r < t->nrows; r++)
    for (size_t i = 0; i < p->nys; i++)
      if (slT_get(t, r, (size_t)p->xc).type != SL_NIL && slT_get(t, r, (size_t)p->ycols[i]).type != SL_NIL) return 0;
  char ys[200] = "";
  for (size_t i = 0, n = 0; i < p->nys; i++)
    n += (size_t)snprintf(ys + n, n < sizeof ys ? sizeof ys - n : 0, "%s'%s'", i ? ", " : "", t->names[p->ycols[i]]);
  return sl_arg_error(call, "table",
                      "none of its %zu rows holds both an x ('%s') and a y (%s): there is nothing to "
                      "draw%s%s",
                      t->nrows, t->names[p->xc], ys, t->note ? "; " : "", t->note ? t->note : "");
}

/* The arguments, each checked against the table before anything is built:
** the columns exist and hold finite numbers (positive on a log scale), the
** size is sane, and the script's data fits the memory budget. */
static int read_args(sl_Call *call, Plot *p) {
  slT_Table *t = p->t = sl_arg_object(call, "table", &slT_class);
  if (t->nrows == 0) return sl_arg_error(call, "table", "the table is empty: there is nothing to plot");
  if (t->nrows > MAX_POINTS)
    return sl_arg_error(call, "table",
                        "the table has %zu rows; a plot draws at most %d points. Plot a part of it "
                        "(where), or a summary (group)",
                        t->nrows, MAX_POINTS);
  p->xc = slT_arg_column(call, t, "x");
  if (p->xc < 0 || y_columns(call, t, p->ycols, &p->nys) != 0) return -1;
  p->sc = p->ec = -1;
  if (sl_arg_given(call, "series") && (p->sc = slT_arg_column(call, t, "series")) < 0) return -1;
  if (p->sc >= 0 && p->nys > 1)
    return sl_arg_error(call, "series", "give either series= or a list of y columns, not both");
  if (sl_arg_given(call, "yerr") && (p->ec = slT_arg_column(call, t, "yerr")) < 0) return -1;
  p->logx = sl_truthy(sl_arg(call, "logx")), p->logy = sl_truthy(sl_arg(call, "logy"));
  p->kind = sl_arg_string(call, "kind");
  p->bars = strcmp(p->kind, "bars") == 0;
  /* a numeric x is plotted at its value; any string makes x categorical */
  for (size_t r = 0; r < t->nrows; r++) p->categorical |= slT_get(t, r, (size_t)p->xc).type == SL_STRING;
  if (p->categorical && p->logx)
    return sl_arg_error(call, "logx", "column '%s' holds names, which have no log scale", t->names[p->xc]);
  if (!p->categorical && numeric(call, t, p->xc, "x", p->logx) != 0) return -1;
  for (size_t i = 0; i < p->nys; i++)
    if (numeric(call, t, p->ycols[i], "y", p->logy) != 0) return -1;
  if (p->ec >= 0 && numeric(call, t, p->ec, "yerr", 0) != 0) return -1;
  if (nothing_to_draw(call, t, p) != 0) return -1;
  p->lines = sl_arg(call, "lines");
  for (size_t i = 0; p->lines.type == SL_LIST && i < sl_list_len(p->lines); i++)
    if (!sl_str(sl_list_get(p->lines, i)))
      return sl_arg_error(call, "lines", "item %zu of the list is not a series name (a string)", i + 1);
  p->measured = t->timing[p->xc] || (p->ec >= 0 && t->timing[p->ec]);
  for (size_t i = 0; i < p->nys; i++) p->measured |= t->timing[p->ycols[i]];
  p->xfloor = !p->categorical && !p->logx && column_at_least_zero(t, p->xc);
  p->yfloor = !p->logy;
  for (size_t i = 0; i < p->nys; i++) p->yfloor &= column_at_least_zero(t, p->ycols[i]);
  p->width = sl_arg_number(call, "width"), p->height = sl_arg_number(call, "height");
  if (p->width < 100 || p->width > 4000) return sl_arg_error(call, "width", "must be between 100 and 4000 pixels");
  if (p->height < 100 || p->height > 4000) return sl_arg_error(call, "height", "must be between 100 and 4000 pixels");
  /* every row of every y column goes into the script as x, y, error */
  char what[160];
  snprintf(what, sizeof what, "this plot's data (%zu rows x %zu columns x %d bytes per value)", t->nrows, 3 * p->nys,
           PLOT_BYTES_PER_VALUE);
  return sl_memory_check(call, "table", (double)t->nrows * 3.0 * (double)p->nys * PLOT_BYTES_PER_VALUE, what);
}

/* series in order of first appearance, or one per y column */
static int find_series(sl_Call *call, Plot *p) {
  slT_Table *t = p->t;
  for (size_t i = 0; p->nys > 1 && i < p->nys; i++) {
    p->series[p->nseries++] = (Series){sl_nil(), p->ycols[i], calloc(t->nrows, sizeof(size_t)), t->nrows};
    for (size_t r = 0; r < t->nrows; r++) p->series[i].rows[r] = r;
  }
  for (size_t r = 0; p->nys == 1 && r < t->nrows; r++) {
    sl_Value key = p->sc >= 0 ? slT_get(t, r, (size_t)p->sc) : sl_nil();
    size_t s = 0;
    while (s < p->nseries && !sl_equal(p->series[s].name, key)) s++;
    if (s == p->nseries) {
      if (p->nseries == MAX_SERIES)
        return sl_arg_error(call, "series", "column '%s' has more than %d distinct values", t->names[p->sc],
                            MAX_SERIES);
      p->series[p->nseries++] = (Series){key, p->ycols[0], calloc(t->nrows, sizeof(size_t)), 0};
    }
    p->series[s].rows[p->series[s].n++] = r;
  }
  return 0;
}

/* categories in order of first appearance */
static int find_categories(sl_Call *call, Plot *p) {
  slT_Table *t = p->t;
  p->cats = calloc(t->nrows, sizeof *p->cats);
  if (!p->categorical) return 0;
  for (size_t r = 0; r < t->nrows; r++) {
    sl_Value v = slT_get(t, r, (size_t)p->xc);
    size_t k = 0;
    while (k < p->ncats && !sl_equal(p->cats[k], v)) k++;
    if (k == p->ncats) p->cats[p->ncats++] = v;
    if (p->ncats > MAX_CATEGORIES)
      return sl_arg_error(call, "x", "column '%s' has more than %d distinct names: too many categories to label",
                          t->names[p->xc], MAX_CATEGORIES);
  }
  return 0;
}

/* bars of one series at the same x would be drawn over each other */
static int check_bars(sl_Call *call, const Plot *p) {
  slT_Table *t = p->t;
  size_t xc = (size_t)p->xc;
  for (size_t s = 0; p->bars && s < p->nseries; s++)
    for (size_t i = 0; i < p->series[s].n; i++)
      for (size_t j = i + 1; j < p->series[s].n && j < i + 1 + 4096; j++) {
        size_t a = p->series[s].rows[i], b = p->series[s].rows[j];
        if (!sl_equal(slT_get(t, a, xc), slT_get(t, b, xc))) continue;
        char *x = sl_tostring(slT_get(t, a, xc));
        sl_arg_error(call, "x",
                     "rows %zu and %zu have the same %s (%s)%s: their bars would be drawn over each "
                     "other. Summarise them first (group)",
                     a + 1, b + 1, t->names[xc], x, p->sc >= 0 ? " in the same series" : "");
        free(x);
        return -1;
      }
  return 0;
}

/* numbers only: one block per series, columns x, y [, yerr] */
static void write_data(slU_Text *S, const Plot *p) {
  slT_Table *t = p->t;
  for (size_t s = 0; s < p->nseries; s++) {
    slU_add(S, "$S%zu << EOD\n", s);
    for (size_t i = 0; i < p->series[s].n && !((i & 4095) == 4095 && sl_interrupted()); i++) {
      size_t r = p->series[s].rows[i];
      sl_Value xv = slT_get(t, r, (size_t)p->xc), yv = slT_get(t, r, (size_t)p->series[s].ycol);
      if (yv.type != SL_NUMBER || xv.type == SL_NIL) continue;
      double x;
      if (p->categorical) {
        size_t k = 0;
        while (!sl_equal(p->cats[k], xv)) k++;
        x = (double)k;
        if (p->bars && p->nseries > 1) x += ((double)s - (double)(p->nseries - 1) / 2) * 0.8 / (double)p->nseries;
      } else {
        x = xv.u.n;
      }
      sl_Value ev = p->ec >= 0 ? slT_get(t, r, (size_t)p->ec) : sl_nil();
      double e = ev.type == SL_NUMBER ? ev.u.n : 0;
      slU_add(S, "%.17g %.17g %.17g\n", x, yv.u.n, e);
    }
    slU_add(S, "EOD\n");
  }
}

/* The category names would run into each other side by side: the widest,
** at about 7 pixels a character of 11-point DejaVu Sans, against the room
** one category has (the width less about 110 pixels of margins). */
static int labels_crowded(const Plot *p) {
  size_t widest = 0;
  for (size_t k = 0; k < p->ncats; k++) {
    char *label = sl_tostring(p->cats[k]);
    size_t n = strlen(label);
    free(label);
    if (n > widest) widest = n;
  }
  double room = (p->width - 110) / (double)(p->ncats ? p->ncats : 1);
  return (double)widest * 7.0 + 8.0 > room;
}

/* a series drawn as a plain line (lines=[...]) */
static int plain_line(const Plot *p, size_t s) {
  if (p->lines.type != SL_LIST) return 0;
  char *name = p->sc >= 0 ? sl_tostring(p->series[s].name) : strdup(p->t->names[p->series[s].ycol]);
  int found = 0;
  for (size_t i = 0; i < sl_list_len(p->lines) && !found; i++)
    found = strcmp(sl_str(sl_list_get(p->lines, i)), name) == 0;
  free(name);
  return found;
}

/* frame, grid, line styles, legend, labels, scales, category tics, bars */
static void write_style(slU_Text *S, const Plot *p, const char *title, const char *xlabel, const char *ylabel,
                        const char *key) {
  slU_add(S, "set border 3 lw 1\nset tics nomirror out\n");
  slU_add(S, "set style line 100 lc rgb '#dddddd' lw 1 dt 3\nset grid xtics ytics ls 100\n");
  /* points alone are drawn open, so one that falls on another stays visible */
  int open = strcmp(p->kind, "points") == 0;
  for (size_t s = 0; s < p->nseries; s++)
    slU_add(
        S, "set style line %zu lc rgb '%s' lw 2 dt %zu pt %zu ps %s\n", s + 1, colours[s % 8], p->bars ? 1 : s % 5 + 1,
        open ? (size_t[]){6, 4, 8, 10, 12, 14}[s % 6] : (size_t[]){7, 5, 9, 11, 13, 15}[s % 6], open ? "1.6" : "1.2");
  if (strcmp(key, "none") == 0 || p->nseries == 1) slU_add(S, "unset key\n");
  else if (strcmp(key, "outside") == 0) slU_add(S, "set key outside right top box opaque\n");
  else slU_add(S, "set key %s box opaque\n", key);
  if (title) slU_add(S, "set title "), quote(S, title), slU_add(S, "\n");
  slU_add(S, "set xlabel "), quote(S, xlabel), slU_add(S, "\nset ylabel "), quote(S, ylabel), slU_add(S, "\n");
  if (p->logx) slU_add(S, "set logscale x 2\nset mxtics\n");
  if (p->logy) slU_add(S, "set logscale y 10\nset mytics\n");
  if (p->categorical && labels_crowded(p)) slU_add(S, "set xtics rotate by 45 right\n");
  if (p->categorical) {
    slU_add(S, "set xtics (");
    for (size_t k = 0; k < p->ncats; k++) {
      char *label = sl_tostring(p->cats[k]);
      slU_add(S, "%s", k ? ", " : "");
      quote(S, label);
      slU_add(S, " %zu", k);
      free(label);
    }
    slU_add(S, ")\nset xrange [-0.6:%zu.6]\n", p->ncats - 1);
  }
  if (p->bars) {
    double bw = p->categorical ? 0.8 / (double)p->nseries : 0;
    if (bw > 0) slU_add(S, "set boxwidth %.6f absolute\n", bw);
    else slU_add(S, "set boxwidth 0.8 relative\n");
    slU_add(S, "set style fill solid 0.85 border -1\n");
    if (!p->logy) slU_add(S, "set yrange [0:*]\n");
  } else {
    slU_add(S, "set offsets graph 0.02, graph 0.02, graph 0.05, graph 0.05\n"); /* no point on the frame */
    /* but an axis of quantities that cannot be negative does not start below 0 */
    if (p->xfloor) slU_add(S, "set xrange [0<*:*]\n");
    if (p->yfloor) slU_add(S, "set yrange [0<*:*]\n");
  }
}

/* the plot command: each series in its style, with its error bars */
static void write_plot(slU_Text *S, const Plot *p) {
  slU_add(S, "plot ");
  for (size_t s = 0; s < p->nseries; s++) {
    const char *style = p->bars                                            ? "boxes"
                        : strcmp(p->kind, "line") == 0 || plain_line(p, s) ? "lines"
                        : strcmp(p->kind, "points") == 0                   ? "points"
                                                                           : "linespoints";
    if (s) slU_add(S, ", ");
    slU_add(S, "$S%zu using 1:2 with %s ls %zu title ", s, style, s + 1);
    char *name = p->sc >= 0 ? sl_tostring(p->series[s].name) : strdup(p->t->names[p->series[s].ycol]);
    quote(S, name);
    free(name);
    if (p->ec >= 0)
      slU_add(S, ", $S%zu using 1:2:3 with yerrorbars ls %zu dt 1 %snotitle", s, s + 1,
              p->bars ? "lc rgb 'black' pt 0 " : "");
  }
  slU_add(S, "\n");
}

/* The whole script: the plot is drawn twice from the same commands, PNG
** then SVG. Caller frees. */
static char *plot_script(const Plot *p, const char *title, const char *xlabel, const char *ylabel, const char *key) {
  slU_Text S = {0};
  slU_add(&S, "set encoding utf8\nset termoption noenhanced\n");
  write_data(&S, p);
  write_style(&S, p, title, xlabel, ylabel, key);
  write_plot(&S, p);
  slU_Text full = {0};
  slU_add(&full,
          "set terminal pngcairo size %d,%d font 'DejaVu Sans,11' linewidth 1.2 background rgb 'white'\n"
          "set output\n",
          (int)p->width, (int)p->height);
  slU_add(&full, "%s", S.s);
  slU_add(&full,
          "unset output\nset terminal svg size %d,%d dynamic font 'DejaVu Sans,11' background rgb 'white'\n"
          "set output\nreplot\nunset output\n",
          (int)p->width, (int)p->height);
  free(S.s);
  return full.s;
}

static int cmd_plot(sl_Call *call, sl_Value *result) {
  Plot p;
  memset(&p, 0, sizeof p);
  if (read_args(call, &p) != 0 || find_series(call, &p) != 0 || find_categories(call, &p) != 0 ||
      check_bars(call, &p) != 0) {
    plot_free(&p);
    return -1;
  }
  slT_Table *t = p.t;
  slU_Text ynames = {0};
  for (size_t i = 0; i < p.nys; i++) slU_add(&ynames, "%s%s", i ? ", " : "", t->names[p.ycols[i]]);
  const char *title = sl_arg_string(call, "title");
  const char *xlabel = sl_arg_given(call, "xlabel") ? sl_arg_string(call, "xlabel") : t->names[p.xc];
  const char *ylabel = sl_arg_given(call, "ylabel") ? sl_arg_string(call, "ylabel") : ynames.s;
  char *script = plot_script(&p, title, xlabel, ylabel, sl_arg_string(call, "key"));
  int measured = p.measured;
  plot_free(&p);
  if (sl_interrupted()) { /* while the script was being written */
    free(script), free(ynames.s);
    return sl_interrupted_error(call);
  }
  slP_Image img;
  char err[2048];
  slP_Status st = slP_render(script, PLOT_TIMEOUT, &img, err, sizeof err);
  free(last_script);
  last_script = script;
  if (st != SLP_OK) {
    free(ynames.s);
    return fail(call, st, sl_arg(call, "table"), err);
  }
  sl_Bundle b;
  sl_bundle_init(&b);
  sl_bundle_add(&b, "image/png", img.png, img.png_len);
  sl_bundle_add(&b, "image/svg+xml", img.svg, img.svg_len);
  /* a figure drawn from timings says so, for the report to mark it (docs/report.md) */
  if (measured) sl_bundle_addf(&b, SLP_FIGURE_MIME, "{\"measured\": true}");
  sl_bundle_addf(&b, "text/plain", "<%s plot of %s against %s%s%s: %zu series, %zu points%s%s>",
                 p.bars ? "bar" : p.kind, ynames.s, t->names[p.xc], p.sc >= 0 ? " by " : "",
                 p.sc >= 0 ? t->names[p.sc] : "", p.nseries, t->nrows, title ? ": " : "", title ? title : "");
  sl_display(call, &b);
  sl_bundle_free(&b);
  if (img.warnings) print_warnings(call, img.warnings);
  free(ynames.s);
  slP_image_free(&img);
  return 0;
}

#define COLUMN(name, flags, help) \
  { name, SL_ARG_STRING, (flags) | SL_BAREWORD, NULL, help }

/* clang-format off */
static const sl_Command slP_commands[] = {
  {"plot", "plot", "Plot columns of a table with gnuplot: lines, points or bars, one series per value of a column.",
   "The figure arrives as PNG and SVG together, with a text description. Column names need no quotes. "
   "A string x column makes categories (in order of first appearance); kind=bars then groups the series "
   "side by side. Colours are colour-blind safe and series also differ by dash and point shape, so they "
   "survive printing in grey.",
   "results = table width=[4, 8, 4, 8] mode=[\"ptq\", \"ptq\", \"qat\", \"qat\"] accuracy=[0.61, 0.83, 0.7, 0.85]\ntimings = table kernel=[\"naive\", \"blas\"] ms=[1000, 110] std=[20, 4]\nplot results x=width y=accuracy series=mode title=\"PTQ vs QAT\"\nplot timings x=kernel y=ms kind=bars yerr=std",
   cmd_plot, SL_CMD_LONG,
   {{"table", SL_ARG_OBJECT, SL_POSITIONAL | SL_REQUIRED, NULL, "the table to plot", NULL, "table"},
    COLUMN("x", SL_REQUIRED, "column for the horizontal axis"),
    {"y", SL_ARG_ANY, SL_REQUIRED | SL_BAREWORD, NULL,
     "column for the vertical axis, or a list of column names to draw one series each"},
    COLUMN("series", 0, "column whose values split the rows into series"),
    {"kind", SL_ARG_ENUM, 0, "linespoints", "how to draw each series", kinds},
    {"title", SL_ARG_STRING, 0, NULL, "title above the plot"},
    {"xlabel", SL_ARG_STRING, 0, NULL, "label of the x axis (default: the column name)"},
    {"ylabel", SL_ARG_STRING, 0, NULL, "label of the y axis (default: the column name)"},
    {"logx", SL_ARG_BOOL, 0, "false", "logarithmic x axis (base 2)"},
    {"logy", SL_ARG_BOOL, 0, "false", "logarithmic y axis (base 10)"},
    COLUMN("yerr", 0, "column of error-bar half-heights"),
    {"lines", SL_ARG_LIST, 0, NULL, "series drawn as plain lines without markers (a roof, a reference level)"},
    {"key", SL_ARG_ENUM, 0, "\"top left\"", "where the legend goes", key_places},
    {"width", SL_ARG_INT, 0, "720", "image width in pixels"},
    {"height", SL_ARG_INT, 0, "450", "image height in pixels"},
    {NULL}}},
  {NULL},
};
/* clang-format on */

const sl_Domain slP_domain = {
    "Plots",
    "Figures drawn from tables by gnuplot: lines, points and bars, shown in the notebook as PNG and SVG and saved into the report.",
    slP_commands,
};
