/* test_gelu.c - GELU and its slope (graph/exec.c): the loops over many
** items (eight at a time where the CPU has AVX2) give the scalar function's
** numbers bit for bit, and both agree with erf and exp in binary64. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "graph/model.h"

enum { N = 200003 };   /* not a multiple of 8: the scalar tail runs too */

static float value(size_t i) { return (float)((double)i / N * 24.0 - 12.0) + (i % 3 ? 1e-3f : 0.0f); }

static void test_items_match_scalar_bit_for_bit(void) {
  float *x = malloc(N * sizeof *x), *y = malloc(N * sizeof *y), *dy = malloc(N * sizeof *dy);
  float *acc = malloc(N * sizeof *acc), *set = malloc(N * sizeof *set);
  for (size_t i = 0; i < N; i++) x[i] = value(i), dy[i] = (float)sin((double)i), acc[i] = 0.5f;
  slM_gelu_items(x, y, 0, N);
  slM_gelu_grad_items(x, dy, acc, 0, N, 1);
  slM_gelu_grad_items(x, dy, set, 3, N, 0);   /* an unaligned start */
  int bad = 0;
  for (size_t i = 0; i < N && bad < 5; i++) {
    float g = dy[i] * slM_gelu_grad(x[i]);
    if (memcmp(&y[i], &(float){slM_gelu(x[i])}, 4) != 0 || memcmp(&acc[i], &(float){0.5f + g}, 4) != 0 ||
        (i >= 3 && memcmp(&set[i], &g, 4) != 0)) {
      check_fail(__FILE__, __LINE__, "item %zu (x = %.9g): %.9g %.9g against the scalar %.9g %.9g", i, x[i], y[i],
                 acc[i], slM_gelu(x[i]), 0.5f + g);
      bad++;
    }
  }
  float nan = NAN;
  slM_gelu_items(&nan, y, 0, 1);
  CHECK(isnan(y[0]));
  free(x), free(y), free(dy), free(acc), free(set);
}

static void test_against_binary64(void) {
  double worst = 0, worst_grad = 0;
  for (size_t i = 0; i < N; i++) {
    double v = value(i);
    double ref = 0.5 * v * (1 + erf(v / sqrt(2.0)));
    double ref_grad = 0.5 * (1 + erf(v / sqrt(2.0))) + v * exp(-0.5 * v * v) / sqrt(2 * M_PI);
    double e = fabs(slM_gelu((float)v) - ref), eg = fabs(slM_gelu_grad((float)v) - ref_grad);
    worst = e > worst ? e : worst;
    worst_grad = eg > worst_grad ? eg : worst_grad;
  }
  CHECK_MSG(worst < 5e-6, "gelu is %.3g from erf's", worst);
  CHECK_MSG(worst_grad < 5e-6, "gelu' is %.3g from erf's and exp's", worst_grad);
}

int main(void) {
  RUN(test_items_match_scalar_bit_for_bit);
  RUN(test_against_binary64);
  return check_summary();
}
