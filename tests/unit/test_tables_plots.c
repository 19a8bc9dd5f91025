/* test_tables_plots.c - tables, CSV, sweeps and gnuplot plots. */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "check.h"
#include "plotting/gnuplot.h"
#include "syslab.h"
#include "table/table.h"

/* the result as a notebook shows it in plain text */
static const char *run(sl_State *S, const char *code) { return check_show(S, code, "text/plain"); }

static void test_csv_round_trip(void) {
  slT_Table *t = slT_new();
  slT_add_column(t, "name");
  slT_add_column(t, "value");
  const char *names[] = {"plain", "with, comma", "with \"quotes\"", "two\nlines", ""};
  double values[] = {0.1, -3, 1e-300, 123456789.125, 0.30000000000000004};
  for (int i = 0; i < 5; i++) {
    size_t r = slT_add_row(t);
    slT_set(t, r, 0, i == 4 ? sl_nil() : sl_string(names[i]));
    slT_set(t, r, 1, sl_number(values[i]));
  }
  char path[] = "/tmp/syslab-csv-XXXXXX";
  close(mkstemp(path));
  char err[256];
  CHECK(slT_write_csv(t, path, err, sizeof err) == 0);
  slT_Table *back = slT_read_csv(path, err, sizeof err);
  CHECK(back != NULL);
  if (back) {
    CHECK_EQ_INT(back->nrows, 5);
    for (int i = 0; i < 5; i++) {
      if (i < 4) CHECK_STREQ(sl_str(slT_get(back, (size_t)i, 0)), names[i]);
      else CHECK(slT_get(back, 4, 0).type == SL_NIL);
      CHECK(slT_get(back, (size_t)i, 1).u.n == values[i]); /* every bit survives */
    }
    slT_free(back);
  }
  FILE *f = fopen(path, "w");
  fputs("a,b\n1,2\n3\n", f);
  fclose(f);
  CHECK(slT_read_csv(path, err, sizeof err) == NULL);
  CHECK_CONTAINS(err, "line 3 has 1 fields; the header has 2");
  f = fopen(path, "w");
  fputs("a,b\n\"open,2\n", f);
  fclose(f);
  CHECK(slT_read_csv(path, err, sizeof err) == NULL);
  CHECK_CONTAINS(err, "unterminated quote");
  unlink(path);
  slT_free(t);
}

static void test_renderings(void) {
  sl_State *S = sl_new();
  run(S, "t = table kernel=[\"naive\", \"fused|flash\"] ms=[12.5, 3]");
  sl_Value t = sl_state_get(S, "t");
  sl_Bundle b;
  sl_show(t, &b);
  CHECK_CONTAINS(sl_bundle_get(&b, "text/markdown")->data,
                 "| kernel | ms |\n|---|---:|\n| naive | 12.5 |\n| fused\\|flash | 3 |\n");
  CHECK_CONTAINS(sl_bundle_get(&b, "text/html")->data, "<th style=\"text-align:right\">ms</th>");
  CHECK_CONTAINS(sl_bundle_get(&b, "text/plain")->data, "kernel         ms\nnaive        12.5\n");
  sl_bundle_free(&b);
  CHECK_STREQ(run(S, "t.ms"), "[12.5, 3]");
  CHECK_STREQ(run(S, "t.nrows"), "2");
  CHECK_CONTAINS(run(S, "table a=[1, 2] b=[1]"), "column b has 1 values but a has 2");
  sl_free(S);
}

static void test_sweep_order_rows_and_scope(void) {
  sl_State *S = sl_new();
  run(S, "width = \"kept\"");
  const char *r = run(S, "s = sweep width=[4, 8] mode=[\"a\", \"b\", \"c\"] { row bits=width * 2 }\ns");
  CHECK_CONTAINS(r, "width  mode  bits\n    4  a        8\n    4  b        8\n    4  c        8\n    8  a       16\n");
  CHECK_CONTAINS(r, "(6 rows)");
  CHECK_STREQ(run(S, "width"), "\"kept\"");    /* restored */
  CHECK_CONTAINS(run(S, "mode"), "NameError"); /* removed again */
  CHECK_CONTAINS(run(S, "sweep x=1..3 { print x }"), "x\n1\n2\n3\n(3 rows)");
  CHECK_CONTAINS(run(S, "sweep x=[] { print x }"), "x is an empty list");
  CHECK_CONTAINS(run(S, "sweep { print 1 }"), "give at least one name=[values]");
  CHECK_CONTAINS(run(S, "row a=1"), "use it inside sweep");
  sl_free(S);
}

static void *interrupt_later(void *arg) {
  struct timespec ts = {0, 350 * 1000 * 1000};
  nanosleep(&ts, NULL);
  sl_interrupt();
  return NULL;
}

static void test_sweep_interrupt_keeps_partial_rows(void) {
  sl_State *S = sl_new();
  pthread_t th;
  pthread_create(&th, NULL, interrupt_later, NULL);
  const char *r = run(S, "s = sweep i=1..100 { sleep 0.1\nrow done=1 }");
  pthread_join(th, NULL);
  CHECK_CONTAINS(r, "Interrupt");
  CHECK_CONTAINS(check_cap.err.s, "kept in the variable sweep_partial");
  int rows = atoi(run(S, "sweep_partial.nrows"));
  CHECK_MSG(rows >= 2 && rows <= 5, "partial rows: %d", rows);
  CHECK_CONTAINS(run(S, "s"), "NameError"); /* the assignment did not happen */
  sl_free(S);
}

static void test_query_commands(void) {
  sl_State *S = sl_new();
  run(S, "t = table k=[\"a\", \"b\", \"a\", \"b\", \"a\"] v=[1, 10, 3, 30, 2]");
  CHECK_CONTAINS(run(S, "where t v \">\" 2"), "(3 rows)");
  CHECK_CONTAINS(run(S, "where t k \"==\" \"b\""), "b  10\nb  30\n");
  CHECK_CONTAINS(run(S, "sort t by=v desc=true"), "b  30\nb  10\na   3\n");
  const char *g = run(S, "group t by=k of=v");
  CHECK_CONTAINS(g, "k  n  min  median  mean         std  max\n");
  CHECK_CONTAINS(g, "a  3    1       2     2           1    3\n");
  CHECK_CONTAINS(g, "b  2   10      20    20  14.1421356   30\n");
  CHECK_STREQ(run(S, "(summary t v).median"), "3");
  CHECK_CONTAINS(run(S, "select t columns=[\"v\"]"), " v\n 1\n10\n");
  CHECK_CONTAINS(run(S, "sort t by=nope"), "the table has no column 'nope' (columns: k, v)");
  CHECK_CONTAINS(run(S, "summary t k"), "column 'k' must hold numbers");
  /* measured marks columns as measurements (the report's timing span), in a copy */
  const char *md = check_show(S, "measured t columns=[\"v\"]", "text/markdown");
  CHECK_CONTAINS(md, "| a | <span class=\"syslab-timing\">1</span> |");
  CHECK_CONTAINS(check_show(S, "t", "text/markdown"), "| a | 1 |");
  CHECK_CONTAINS(run(S, "measured t columns=[\"w\"]"), "the table has no column 'w' (columns: k, v)");
  sl_free(S);
}

static void test_plot_png_and_svg(void) {
  sl_State *S = sl_new();
  run(S, "t = sweep s=[\"x\", \"y\", \"z\"] n=1..100 { row value=n * n }");
  CHECK_STREQ(run(S, "plot t x=n y=value series=s width=500 height=300 title=\"three series\""), "nil");
  CHECK_EQ_INT(check_cap.displays, 1);
  const sl_MimePart *png = sl_bundle_get(&check_cap.last, "image/png");
  const sl_MimePart *svg = sl_bundle_get(&check_cap.last, "image/svg+xml");
  const sl_MimePart *text = sl_bundle_get(&check_cap.last, "text/plain");
  CHECK(png && svg && text);
  unsigned w = 0, h = 0;
  CHECK(png && slP_png_size(png->data, png->len, &w, &h));
  CHECK_EQ_INT(w, 500);
  CHECK_EQ_INT(h, 300);
  if (svg) {
    CHECK(strncmp(svg->data, "<?xml", 5) == 0);
    CHECK_CONTAINS(svg->data, "<svg");
    CHECK_CONTAINS(svg->data, "</svg>");
    CHECK_CONTAINS(svg->data, "three series");
  }
  if (text) CHECK_CONTAINS(text->data, "3 series, 300 points");
  CHECK_CONTAINS(run(S, "plot t x=n y=nope"), "no column 'nope' (columns: s, n, value)");
  CHECK_CONTAINS(run(S, "plot t x=s y=value logx=true"), "no log scale");
  CHECK_CONTAINS(run(S, "plot (table a=[]) x=a y=a"), "the table is empty");
  run(S, "m = table a=[1, 2] b=[1, \"two\"]");
  CHECK_CONTAINS(run(S, "plot m x=a y=b"), "column 'b' must hold numbers, but row 2 holds \"two\"");
  sl_free(S);
}

static void test_plot_text_cannot_run_commands(void) {
  sl_State *S = sl_new();
  unlink("/tmp/syslab-pwned-1");
  unlink("/tmp/syslab-pwned-2");
  unlink("/tmp/syslab-pwned-3");
  run(S, "t = table k=[\"`touch /tmp/syslab-pwned-1`\", \"b\"] v=[1, 2]");
  const char *r = run(S, "plot t x=k y=v series=k title=\"x' . system('touch /tmp/syslab-pwned-2') . '\" "
                         "xlabel=\"`touch /tmp/syslab-pwned-3`\" ylabel=\"a\\nEOD\\n! touch /tmp/syslab-pwned-3\"");
  CHECK_STREQ(r, "nil");
  struct stat st;
  CHECK(stat("/tmp/syslab-pwned-1", &st) != 0);
  CHECK(stat("/tmp/syslab-pwned-2", &st) != 0);
  CHECK(stat("/tmp/syslab-pwned-3", &st) != 0);
  const sl_MimePart *svg = sl_bundle_get(&check_cap.last, "image/svg+xml");
  CHECK(svg && strstr(svg->data, "system(")); /* the title was drawn as text */
  sl_free(S);
}

static void test_missing_gnuplot_is_a_clear_error(void) {
  sl_State *S = sl_new();
  char *path = strdup(getenv("PATH") ? getenv("PATH") : "");
  setenv("PATH", "/nonexistent", 1);
  run(S, "t = table a=[1, 2] b=[3, 4]");
  const char *r = run(S, "plot t x=a y=b");
  setenv("PATH", path, 1);
  free(path);
  CHECK_CONTAINS(r, "gnuplot is not installed: install the Debian package gnuplot-nox");
  CHECK(sl_bundle_get(&check_cap.last, "text/markdown") != NULL); /* the table was still shown */
  sl_free(S);
}

int main(void) {
  RUN(test_csv_round_trip);
  RUN(test_renderings);
  RUN(test_sweep_order_rows_and_scope);
  RUN(test_sweep_interrupt_keeps_partial_rows);
  RUN(test_query_commands);
  RUN(test_plot_png_and_svg);
  RUN(test_plot_text_cannot_run_commands);
  RUN(test_missing_gnuplot_is_a_clear_error);
  return check_summary();
}
