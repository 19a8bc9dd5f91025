/* test_reduce.c - the column sums of kernels/reduce.c against plain loops,
** a column at a time, that follow the order cuda/gpu.h defines (partials of
** SLG_SUM_ROWS rows from zero, added in chunk order): the same bits for
** every shape (widths that are and are not multiples of the 16-column
** block, one row, row counts on either side of a chunk's end, enough rows
** to split over the team), statistics stored alone and in pairs, with and
** without centring, with NaN, infinities, signed zeros and subnormals in
** the data. The GPU's kernels are held to the same bits (test_gpu_ops). */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "cuda/gpu.h"
#include "kernels/reduce.h"

static uint64_t seed = 88172645463325252ull;

static float draw(void) {
  seed ^= seed << 13, seed ^= seed >> 7, seed ^= seed << 17;
  switch (seed % 64) { /* a few special values among ordinary ones */
    case 0: return NAN;
    case 1: return INFINITY;
    case 2: return -0.0f;
    case 3: return 1e-40f; /* subnormal */
    default: return (float)((double)(seed >> 11) / 9007199254740992.0 * 8.0 - 4.0);
  }
}

static float *array(size_t n, int specials) {
  float *a = malloc(n * sizeof *a);
  for (size_t i = 0; i < n; i++) {
    a[i] = draw();
    if (!specials && !isfinite(a[i])) a[i] = 0.5f;
  }
  return a;
}

/* bit for bit, except that any NaN matches any NaN: which of two NaN operands an add passes on (x86 passes
** the first) depends on the operand order the compiler picks for a commutative add, which C leaves open */
static int same_bits(const float *a, const float *b, size_t n) {
  for (size_t i = 0; i < n; i++)
    if (isnan(a[i]) ? !isnan(b[i]) : memcmp(&a[i], &b[i], sizeof *a) != 0) return 0;
  return 1;
}

static void test_column_sums(void) {
  size_t shapes[][2] = {{1, 1},   {1, 16},   {3, 10},    {7, 17},    {63, 5},    {64, 16},
                        {65, 33}, {128, 64}, {2048, 64}, {2048, 10}, {513, 100}, {4096, 257}};
  for (size_t s = 0; s < sizeof shapes / sizeof *shapes; s++) {
    size_t rows = shapes[s][0], cols = shapes[s][1];
    float *a = array(rows * cols, 1), *y = array(cols, 0), *ref = malloc(cols * sizeof *ref);
    for (size_t j = 0; j < cols; j++) {
      float acc = y[j];
      for (size_t r0 = 0; r0 < rows; r0 += SLG_SUM_ROWS) {
        float part = 0;
        for (size_t r = r0; r < rows && r < r0 + SLG_SUM_ROWS; r++) part += a[r * cols + j];
        acc += part;
      }
      ref[j] = acc;
    }
    slK_column_sums(a, rows, cols, y);
    CHECK_MSG(same_bits(y, ref, cols), "column sums of %zu x %zu differ from the chunked loop", rows, cols);
    free(a), free(y), free(ref);
  }
}

/* the norms' gradient loops, a column at a time in the chunked order: layer
** norm (centred) and RMSNorm (mean NULL) */
static void reference(const float *x, const float *dy, const float *mean, const float *rstd, size_t stride, size_t rows,
                      int d, float *dgain, float *dshift) {
  for (int j = 0; j < d; j++)
    for (size_t r0 = 0; r0 < rows; r0 += SLG_SUM_ROWS) {
      float pg = 0, ps = 0;
      for (size_t r = r0; r < rows && r < r0 + SLG_SUM_ROWS; r++) {
        float m = mean ? mean[r * stride] : 0, rs = rstd[r * stride];
        const float a = x[r * d + j], gy = dy[r * d + j];
        pg += gy * (mean ? (a - m) * rs : a * rs);
        ps += gy;
      }
      if (dgain) dgain[j] += pg;
      if (dshift) dshift[j] += ps;
    }
}

static void test_norm_param_grads(void) {
  size_t shapes[][2] = {{1, 3}, {5, 16}, {9, 33}, {64, 20}, {65, 16}, {2048, 64}, {300, 100}, {4096, 8}};
  for (size_t s = 0; s < sizeof shapes / sizeof *shapes; s++)
    for (int variant = 0; variant < 4; variant++) {
      size_t rows = shapes[s][0], stride = variant == 1 ? 2 : 1;
      int d = (int)shapes[s][1], centred = variant != 2, keep_gain = variant != 3;
      float *x = array(rows * d, 1), *dy = array(rows * d, 1), *stats = array(2 * rows, 0);
      float *g = array(d, 0), *b = array(d, 0), *rg = malloc(d * sizeof *rg), *rb = malloc(d * sizeof *rb);
      memcpy(rg, g, d * sizeof *g), memcpy(rb, b, d * sizeof *b);
      const float *mean = centred ? stats : NULL, *rstd = stats + (stride == 2 ? 1 : rows);
      reference(x, dy, mean, rstd, stride, rows, d, keep_gain ? rg : NULL, centred ? rb : NULL);
      slK_norm_param_grads(x, dy, mean, rstd, stride, rows, d, keep_gain ? g : NULL, centred ? b : NULL);
      CHECK_MSG(same_bits(g, rg, d), "gain gradient, %zu x %d, variant %d", rows, d, variant);
      CHECK_MSG(same_bits(b, rb, d), "shift gradient, %zu x %d, variant %d", rows, d, variant);
      free(x), free(dy), free(stats), free(g), free(b), free(rg), free(rb);
    }
}

int main(void) {
  RUN(test_column_sums);
  RUN(test_norm_param_grads);
  return check_summary();
}
