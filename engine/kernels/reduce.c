/*
** reduce.c - column sums: the gradients of parameters shared by every row
** (biases, the gain and shift of layer norm and RMSNorm).
**
**   cmake --build build && build/test_reduce     (checks both against the reference)
**
** The order of the sums is one for both devices (cuda/gpu.h, SLG_SUM_ROWS;
** the chunks' bounds from cuda/sums_layout.h, as the GPU's kernels take them):
** a column's rows are added in chunks of 64, each chunk's partial from zero
** in row order, and the partials in chunk order onto the output's value.
** Whoever runs it, the result does not depend on the thread count, and the
** GPU, which sums a column's chunks in parallel (cuda/ops.cu), gives the
** same bits. The work here is split by blocks of 16 columns (one cache line
** of each row), and a block keeps its 16 running sums and 16 partials in
** locals across the rows. The first version summed into the output array
** itself, row after row: the compiler cannot keep those sums in registers
** (the output might alias the inputs), so every row paid a load and a
** store per column, and with the norm's test of which gradients to keep
** inside the loop the gain and shift gradients took 13% of the image
** transformer's training step.
*/
#include <string.h>

#include "cuda/sums_layout.h"
#include "parallel.h"
#include "reduce.h"

#define W 16 /* columns per block */

/* ------------------------------------------------------------ column sums */

typedef struct {
  const float *a;
  size_t rows, cols;
  float *y;
} Sums;

static void sums_block(const Sums *t, size_t j0, size_t w) {
  float acc[W];
  memcpy(acc, t->y + j0, w * sizeof *acc);
  const float *a = t->a + j0;
  for (size_t c = 0; c < slG_sum_chunks(t->rows); c++) {
    size_t r0 = slG_sum_first(c), r1 = slG_sum_end(c, t->rows);
    float part[W] = {0};
    if (w == W) {
      for (size_t r = r0; r < r1; r++, a += t->cols)
        for (int j = 0; j < W; j++) part[j] += a[j];
    } else {
      for (size_t r = r0; r < r1; r++, a += t->cols)
        for (size_t j = 0; j < w; j++) part[j] += a[j];
    }
    for (size_t j = 0; j < w; j++) acc[j] += part[j];
  }
  memcpy(t->y + j0, acc, w * sizeof *acc);
}

static void sums_range(void *ctx, size_t b0, size_t b1) {
  const Sums *t = ctx;
  for (size_t b = b0; b < b1; b++) {
    size_t j0 = b * W, w = t->cols - j0 < W ? t->cols - j0 : W;
    sums_block(t, j0, w);
  }
}

/* blocks per piece: a piece should hold some 16K elements, or the team's
** hand-over costs more than it saves */
static size_t min_blocks(size_t rows) {
  size_t per_block = rows * W;
  return per_block >= 16384 ? 1 : 16384 / (per_block ? per_block : 1);
}

void slK_column_sums(const float *a, size_t rows, size_t cols, float *y) {
  Sums t = {a, rows, cols, y};
  slK_parallel_for((cols + W - 1) / W, min_blocks(rows), sums_range, &t);
}

/* ------------------------------------------------------- norm parameters */

typedef struct {
  const float *x, *dy, *mean, *rstd;
  size_t stride, mstride, rows;
  int d;
  float *dgain, *dshift;
} Norm;

static const float zero = 0.0f;

/* one block of w columns from j0; xhat as the norms compute it */
static void norm_block(const Norm *t, size_t j0, size_t w) {
  float g[W] = {0}, s[W] = {0};
  if (t->dgain) memcpy(g, t->dgain + j0, w * sizeof *g);
  if (t->dshift) memcpy(s, t->dshift + j0, w * sizeof *s);
  const float *x = t->x + j0, *dy = t->dy + j0;
  for (size_t c = 0; c < slG_sum_chunks(t->rows); c++) {
    size_t r0 = slG_sum_first(c), r1 = slG_sum_end(c, t->rows);
    float pg[W] = {0}, ps[W] = {0};
    for (size_t r = r0; r < r1; r++, x += t->d, dy += t->d) {
      float m = t->mean[r * t->mstride], rs = t->rstd[r * t->stride];
      if (w == W) {
        for (int j = 0; j < W; j++) pg[j] += dy[j] * ((x[j] - m) * rs);
        for (int j = 0; j < W; j++) ps[j] += dy[j];
      } else {
        for (size_t j = 0; j < w; j++) pg[j] += dy[j] * ((x[j] - m) * rs);
        for (size_t j = 0; j < w; j++) ps[j] += dy[j];
      }
    }
    for (size_t j = 0; j < w; j++) g[j] += pg[j], s[j] += ps[j];
  }
  if (t->dgain) memcpy(t->dgain + j0, g, w * sizeof *g);
  if (t->dshift) memcpy(t->dshift + j0, s, w * sizeof *s);
}

static void norm_range(void *ctx, size_t b0, size_t b1) {
  const Norm *t = ctx;
  for (size_t b = b0; b < b1; b++) {
    size_t j0 = b * W, w = (size_t)t->d - j0 < W ? (size_t)t->d - j0 : W;
    norm_block(t, j0, w);
  }
}

void slK_norm_param_grads(const float *x, const float *dy, const float *mean, const float *rstd, size_t stride,
                          size_t rows, int d, float *dgain, float *dshift) {
  if (!dgain && !dshift) return;
  /* without centring, x - 0 is x exactly: one loop serves both norms */
  Norm t = {x, dy, mean ? mean : &zero, rstd, stride, mean ? stride : 0, rows, d, dgain, dshift};
  slK_parallel_for(((size_t)d + W - 1) / W, min_blocks(rows), norm_range, &t);
}

/* ------------------------------------------------------------ norm rows */

/* The row sums of layer norm (the plain node and the fused add + layer
** norm share them, so the two give the same numbers) are in double, in
** four interleaved partial sums: one running sum is a chain of dependent
** adds, four times slower, and it was most of layer norm's time. */
void slK_norm_moments(const float *x, int d, double *mean, double *var) {
  double s[4] = {0, 0, 0, 0}, v[4] = {0, 0, 0, 0};
  int j = 0;
  for (; j + 4 <= d; j += 4)
    for (int k = 0; k < 4; k++) s[k] += x[j + k];
  for (; j < d; j++) s[0] += x[j];
  double m = ((s[0] + s[1]) + (s[2] + s[3])) / d;
  for (j = 0; j + 4 <= d; j += 4)
    for (int k = 0; k < 4; k++) v[k] += (x[j + k] - m) * (x[j + k] - m);
  for (; j < d; j++) v[0] += (x[j] - m) * (x[j] - m);
  *mean = m;
  *var = ((v[0] + v[1]) + (v[2] + v[3])) / d;
}

void slK_norm_grad_means(const float *x, float m, float rs, const float *gamma, const float *gy, int d, float *mg,
                         float *mgx) {
  double s[4] = {0, 0, 0, 0}, sx[4] = {0, 0, 0, 0};
  int j = 0;
  for (; j + 4 <= d; j += 4)
    for (int k = 0; k < 4; k++) {
      float xhat = (x[j + k] - m) * rs, gxhat = gy[j + k] * gamma[j + k];
      s[k] += gxhat;
      sx[k] += gxhat * xhat;
    }
  for (; j < d; j++) {
    float xhat = (x[j] - m) * rs, gxhat = gy[j] * gamma[j];
    s[0] += gxhat;
    sx[0] += gxhat * xhat;
  }
  *mg = (float)(((s[0] + s[1]) + (s[2] + s[3])) / d);
  *mgx = (float)(((sx[0] + sx[1]) + (sx[2] + sx[3])) / d);
}
