/*
** test_budget_grids.c - the memory budget (SYSLAB_MEMORY_BUDGET) also holds
** for sweep tables, a grid search's full grid and plot data: work predicted
** over it is refused before it runs, naming the predicted size and the
** budget, and the session goes on. And the budget counts memory the
** process has freed.
*/
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "kernels/kernels.h"
#include "syslab.h"

/* a sweep's table is rows x columns x bytes per value, checked before the
** first run and again once the first run shows the columns `row` adds */
static void test_sweep_over_budget_is_refused_before_it_runs(void) {
  sl_State *S = sl_new();
  setenv("SYSLAB_MEMORY_BUDGET", "1M", 1);
  check_eval(S, "runs = 0");
  CHECK_STREQ(check_eval(S, "t = sweep a=1..1000 b=1..100 { runs = runs + 1 }"),
              "RuntimeError: sweep: this sweep's table (100000 rows x 2 columns x 16 bytes per value) would need "
              "3.05 MiB, more than the memory budget of 1.00 MiB (SYSLAB_MEMORY_BUDGET): choose smaller sizes");
  CHECK_STREQ(check_eval(S, "runs"), "0"); /* the block never ran */
  CHECK_STREQ(check_eval(S, "t = sweep a=1..100 b=1..100 { runs = runs + 1 }\nlen(t)"), "10000"); /* 312 KiB fits */
  setenv("SYSLAB_MEMORY_BUDGET", "200K", 1);
  /* 3000 rows x 2 columns fit; the four columns the block adds do not */
  const char *r = check_eval(S, "u = sweep a=1..3000 { row w=1 x=2 y=3 z=4 }");
  CHECK_CONTAINS(r, "this sweep's table (3000 rows x 5 columns x 16 bytes per value) would need 234 KiB, more than "
                    "the memory budget of 200 KiB");
  CHECK_STREQ(check_eval(S, "len(sweep_partial)"), "1"); /* stopped after its first run */
  CHECK_STREQ(check_eval(S, "sweep_partial[0].a"), "1");
  unsetenv("SYSLAB_MEMORY_BUDGET");
  CHECK_STREQ(check_eval(S, "u = sweep a=1..3000 { row w=1 x=2 y=3 z=4 }\nlen(u)"), "3000");
  sl_free(S);
}

/* the grid sampler keeps an index per point of the full grid */
static void test_grid_search_over_budget_is_refused(void) {
  sl_State *S = sl_new();
  setenv("SYSLAB_MEMORY_BUDGET", "2M", 1);
  const char *block =
      " {\n  a = suggest \"a\" int 1 1000\n  b = suggest \"b\" int 1 1000\n  print \"ran\"\n  objective a + b\n}";
  char code[512];
  snprintf(code, sizeof code, "s = search trials=2 sampler=grid a=1..1000 b=1..1000%s", block);
  CHECK_STREQ(check_eval(S, code),
              "RuntimeError: search: the grid's 1000000 points (x 16 bytes per point) would need 15.3 MiB, more than "
              "the memory budget of 2.00 MiB (SYSLAB_MEMORY_BUDGET): choose smaller sizes");
  CHECK_STREQ(check_cap.out.s, ""); /* no trial ran */
  snprintf(code, sizeof code, "s = search trials=2 sampler=grid a=1..100 b=1..100%s\ns.n", block);
  CHECK_STREQ(check_eval(S, code), "2");
  unsetenv("SYSLAB_MEMORY_BUDGET");
  /* a grid of 1e15 points is refused against what the machine has */
  snprintf(code, sizeof code, "s = search trials=2 sampler=grid a=1..100000 b=1..100000 c=1..100000%s", block);
  CHECK_CONTAINS(check_eval(S, code), "the grid's 1000000000000000 points (x 16 bytes per point) would need 14.2 PiB");
  sl_free(S);
}

/* a plot's data goes to gnuplot as text, three values per point */
static void test_plot_over_budget_is_refused(void) {
  sl_State *S = sl_new();
  check_eval(S, "t = sweep i=1..20000 { }");
  setenv("SYSLAB_MEMORY_BUDGET", "2M", 1);
  CHECK_STREQ(check_eval(S, "plot t x=i y=i"),
              "ArgumentError: plot: table: this plot's data (20000 rows x 3 columns x 64 bytes per value) would need "
              "3.66 MiB, more than the memory budget of 2.00 MiB (SYSLAB_MEMORY_BUDGET): choose smaller sizes");
  CHECK_EQ_INT(check_cap.displays, 0);
  check_eval(S, "t2 = table i=[1, 2, 3] j=[4, 5, 6] k=[7, 8, 9]");
  CHECK_STREQ(check_eval(S, "plot t2 x=i y=[\"j\", \"k\"]"), "nil"); /* small plots still draw */
  CHECK_EQ_INT(check_cap.displays, 1);
  unsetenv("SYSLAB_MEMORY_BUDGET");
  CHECK_STREQ(check_eval(S, "len(t)"), "20000"); /* the session goes on */
  sl_free(S);
}

/* glibc keeps freed heap memory: once a 24 MiB block that it mapped is freed
** its mmap threshold rises past 16 MiB, so 16 blocks of 16 MiB come from its
** heap, and, below a small block that stays, remain resident once freed.
** Reading the budget hands them back (engine/lang/budget.c). */
static void test_budget_counts_freed_heap_memory(void) {
#if defined(__SANITIZE_ADDRESS__) || !defined(__GLIBC__)
  printf("  skipped: glibc's own allocator is not in use (a sanitizer's, or another C library)\n");
#else
  sl_State *S = sl_new();
  enum { N = 16, BLOCK = 16 << 20 };
  char *volatile big = malloc(24 << 20);
  CHECK(big != NULL);
  big[0] = 1;
  free(big);
  char *blocks[N];
  for (int i = 0; i < N; i++) {
    blocks[i] = malloc(BLOCK);
    CHECK(blocks[i] != NULL);
    memset(blocks[i], 1, BLOCK);
  }
  char *volatile pin = malloc(64);
  for (int i = 0; i < N; i++) free(blocks[i]);
  double before = (double)slK_rss_now();
  CHECK_CONTAINS(check_eval(S, "(memory_predict presets=[\"tiny\"] contexts=[16] batch=1 run=forward).budget_gb"), "[");
  double released = before - (double)slK_rss_now();
  printf("  reading the budget released %.0f MiB of the %d MiB freed\n", released / (1 << 20), N * 16);
  CHECK(released > 0.75 * N * BLOCK);
  free(pin);
  sl_free(S);
#endif
}

int main(void) {
  RUN(test_budget_counts_freed_heap_memory);
  RUN(test_sweep_over_budget_is_refused_before_it_runs);
  RUN(test_grid_search_over_budget_is_refused);
  RUN(test_plot_over_budget_is_refused);
  check_reset();
  return check_summary();
}
