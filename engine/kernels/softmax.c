/*
** softmax.c - the softmax of one row and its backward, shared by every
** softmax of the graph: the softmax node and the losses (graph/ops_core.c,
** ops_lm.c) and the fused mask + softmax, whose row i is the softmax of its
** first i + 1 scores (graph/ops_fused.c). One definition keeps their numbers identical, so fused and
** eager graphs agree bit for bit.
**
** Build: part of the engine. tests/unit/test_softmax.c checks both against
** a binary64 reference written out in the test.
**
**   forward    subtract the row's maximum (no overflow in expf), sum the
**              exponentials in double (rows of 10,000 logits), scale by the
**              reciprocal
**   backward   dx += y * (dy - <dy, y>): the Jacobian diag(y) - y y^T applied
**              to dy without forming it; the dot product in double
**
** Only this scalar version exists: the rows are short (16 to a few thousand)
** and are split over the cores (kernels/parallel.h), whole rows to a piece.
*/
#include <math.h>

#include "parallel.h"
#include "softmax.h"

void slK_softmax_row(const float *x, float *y, int n) {
  float m = x[0];
  for (int j = 1; j < n; j++) m = x[j] > m ? x[j] : m;
  double sum = 0;
  for (int j = 0; j < n; j++) sum += y[j] = expf(x[j] - m);
  float inv = (float)(1.0 / sum);
  for (int j = 0; j < n; j++) y[j] *= inv;
}

void slK_softmax_grad_row(const float *y, const float *dy, float *dx, int n, int accumulate) {
  double dot = 0;
  for (int j = 0; j < n; j++) dot += dy[j] * y[j];
  if (accumulate)
    for (int j = 0; j < n; j++) dx[j] += y[j] * (dy[j] - (float)dot);
  else
    for (int j = 0; j < n; j++) dx[j] = 0.0f + y[j] * (dy[j] - (float)dot);
}

typedef struct {
  const float *x;
  float *y;
  int n;
} Rows;

static void rows_range(void *ctx, size_t r0, size_t r1) {
  const Rows *t = ctx;
  for (size_t r = r0; r < r1; r++) slK_softmax_row(t->x + r * t->n, t->y + r * t->n, t->n);
}

void slK_softmax_rows(const float *x, float *y, size_t rows, int n) {
  Rows t = {x, y, n};
  slK_parallel_for(rows, 16384 / (size_t)n + 1, rows_range, &t); /* some 16K items a piece */
}
