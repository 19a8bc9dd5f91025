/*
** bench_plot.c - time from `plot` to its display, beside gnuplot alone.
**
**   cmake --build build --target bench_plot && build/bench_plot [runs]
**
** A 3-series, 100-point line plot is rendered through the interpreter (parse,
** bind, build the script, gnuplot, split PNG and SVG, display) and, in the
** same run, the very same script is rendered by gnuplot through the same
** spawn path. The difference is syslab's overhead.
*/
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "plotting/gnuplot.h"
#include "syslab.h"

static int displays;
static void on_display(void *ud, const sl_Bundle *b, const char *id, int update) {
  if (!id) displays++;
}

static double now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

static int cmp(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

static double median(double *x, int n) {
  qsort(x, (size_t)n, sizeof *x, cmp);
  return n % 2 ? x[n / 2] : (x[n / 2 - 1] + x[n / 2]) / 2;
}

int main(int argc, char **argv) {
  sl_init();
  int runs = argc > 1 ? atoi(argv[1]) : 30;
  sl_Host host = {NULL, NULL, on_display, NULL, NULL, NULL};
  sl_State *S = sl_new();
  sl_Value v;
  sl_Error e;
  if (sl_execute(S, "t = sweep s=[\"a\", \"b\", \"c\"] i=1..100 { row y=i * i }", &host, &v, &e) != 0) {
    fprintf(stderr, "%s\n", e.evalue);
    return 1;
  }
  const char *cell = "plot t x=i y=y series=s title=\"three series\"";
  double *full = malloc((size_t)runs * sizeof *full), *bare = malloc((size_t)runs * sizeof *bare);
  for (int i = -2; i < runs; i++) { /* two warm-up runs */
    double t0 = now();
    if (sl_execute(S, cell, &host, &v, &e) != 0) {
      fprintf(stderr, "%s\n", e.evalue);
      return 1;
    }
    if (i >= 0) full[i] = now() - t0;
    char *script = strdup(slP_last_script());
    slP_Image img;
    char err[512];
    t0 = now();
    if (slP_render(script, 15, &img, err, sizeof err) != SLP_OK) {
      fprintf(stderr, "%s\n", err);
      return 1;
    }
    if (i >= 0) bare[i] = now() - t0;
    slP_image_free(&img);
    free(script);
  }
  double mf = median(full, runs), mb = median(bare, runs);
  printf("plot -> display (3 series x 100 points), median of %d: %.1f ms\n", runs, mf * 1000);
  printf("gnuplot alone on the same script, median of %d:       %.1f ms\n", runs, mb * 1000);
  printf("ratio plot/gnuplot: %.3f (overhead %.2f ms); displays: %d\n", mf / mb, (mf - mb) * 1000, displays);
  free(full);
  free(bare);
  sl_free(S);
  return 0;
}
