/* test_quant_fast.c - the call-free minifloat and log loops of quant.c
** equal the binary64 reference bit for bit, over every configuration the
** labs search and values from subnormal to infinite. */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "compress/quant.h"
#include "graph/mt19937.h"

static float *values(size_t *n) {
  size_t cap = 20000, k = 0;
  float *x = malloc(cap * sizeof *x);
  const float special[] = {0.0f,  -0.0f,   1e-9f,    -1e-9f,    1e-8f,      1.0000001e-8f, 1.0f,        -1.0f,
                           0.5f,  2.0f,    3.0f,     0.75f,     1.4142135f, 1.4142137f,    0.70710677f, 1e-30f,
                           1e30f, 3.4e38f, INFINITY, -INFINITY, NAN,        0x1p-126f,     0x1p-149f,   0.1f,
                           -0.1f, 1e-7f,   6e-8f,    448.0f,    57344.0f};
  for (size_t i = 0; i < sizeof special / sizeof special[0]; i++) x[k++] = special[i];
  slM_Mt m;
  slM_mt_seed(&m, 12);
  while (k < cap) { /* log-uniform magnitudes over 2^-40 .. 2^40, both signs, and exact powers of two and halves */
    double u = slM_mt_double(&m), e = floor(-40 + 80 * u);
    double v = ldexp(1.0 + slM_mt_double(&m), (int)e);
    int kind = (int)(slM_mt_double(&m) * 4);
    if (kind == 0) v = ldexp(1.0, (int)e);
    if (kind == 1) v = ldexp(1.5, (int)e);
    x[k++] = (float)(slM_mt_double(&m) < 0.5 ? -v : v);
  }
  *n = k;
  return x;
}

static void same(const slQ_Format *f, const float *x, size_t n) {
  float *a = malloc(n * sizeof *a), *b = malloc(n * sizeof *b);
  slQ_apply(f, x, a, n, n);
  slQ_apply_reference(f, x, b, n, n);
  size_t bad = 0, first = 0;
  for (size_t i = 0; i < n; i++)
    if (memcmp(&a[i], &b[i], sizeof a[i]) != 0 && !(isnan(a[i]) && isnan(b[i]))) {
      if (!bad) first = i;
      bad++;
    }
  char name[96];
  slQ_describe(f, name, sizeof name);
  CHECK_MSG(bad == 0, "%s: %zu values differ, first x=%.9g fast=%.9g reference=%.9g", name, bad, x[first], a[first],
            b[first]);
  free(a);
  free(b);
}

static void test_minifloat_and_log_fast_paths_equal_the_reference(void) {
  size_t n;
  float *x = values(&n);
  for (int kind = 0; kind < 3; kind++)
    for (int w = 2; w <= 16; w++)
      for (int e = 1; e <= 8 && e < w; e++)
        for (int bias = -1; bias <= 1; bias++) {
          slQ_Format f = {0};
          f.kind = kind == 0 ? SLQ_MINIFLOAT_DENORM : kind == 1 ? SLQ_MINIFLOAT_IEEE : SLQ_LOG;
          f.width = w;
          f.exponent_width = e;
          f.is_signed = 1;
          if (bias >= 0) f.has_bias = 1, f.exponent_bias = bias == 0 ? 3 : 15;
          if (kind == 2 && (e != 1 || w > 12)) continue; /* log: the width is everything */
          char err[128];
          if (slQ_check(&f, err, sizeof err) != 0) continue;
          same(&f, x, n);
        }
  free(x);
}

int main(void) {
  RUN(test_minifloat_and_log_fast_paths_equal_the_reference);
  return check_summary();
}
