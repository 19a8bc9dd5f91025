/* test_softmax.c - the shared softmax row and its backward (kernels/softmax.c)
** against a binary64 reference, the backward also against finite
** differences of the forward, and rows of one element and of large logits. */
#include <math.h>
#include <stdlib.h>

#include "check.h"
#include "kernels/softmax.h"

static void reference(const float *x, double *y, int n) {
  double m = x[0], sum = 0;
  for (int j = 1; j < n; j++) m = x[j] > m ? x[j] : m;
  for (int j = 0; j < n; j++) sum += y[j] = exp((double)x[j] - m);
  for (int j = 0; j < n; j++) y[j] /= sum;
}

static void test_forward_against_binary64(void) {
  int lengths[] = {1, 2, 16, 17, 100, 10000};
  for (int l = 0; l < 6; l++) {
    int n = lengths[l];
    float *x = malloc((size_t)n * sizeof *x), *y = malloc((size_t)n * sizeof *y);
    double *r = malloc((size_t)n * sizeof *r), sum = 0;
    for (int j = 0; j < n; j++)
      x[j] = (float)sin(0.37 * j) * 8 + (j % 3 == 0 ? 60.0f : 0.0f); /* large logits: no overflow */
    slK_softmax_row(x, y, n);
    reference(x, r, n);
    for (int j = 0; j < n; j++) {
      CHECK_NEAR(y[j], r[j], 1e-6 * r[j] + 1e-12);
      sum += y[j];
    }
    CHECK_NEAR(sum, 1.0, 1e-5);
    free(x), free(y), free(r);
  }
}

static void test_in_place(void) {
  float x[5] = {1, -2, 3, 0.5f, 3}, y[5];
  slK_softmax_row(x, y, 5);
  slK_softmax_row(x, x, 5);
  for (int j = 0; j < 5; j++) CHECK(x[j] == y[j]);
  CHECK(y[2] == y[4]);
}

/* dx = J^T dy, against central differences of L(x) = <dy, softmax(x)> in binary64 */
static void test_backward_against_finite_differences(void) {
  enum { N = 9 };
  float x[N], y[N], dy[N], dx[N];
  for (int j = 0; j < N; j++) x[j] = (float)cos(1.3 * j) * 2, dy[j] = (float)sin(0.7 * j + 0.2), dx[j] = 0.25f;
  slK_softmax_row(x, y, N);
  slK_softmax_grad_row(y, dy, dx, N, 1);
  for (int k = 0; k < N; k++) {
    float xp[N], xm[N];
    double yp[N], ym[N], lp = 0, lm = 0, h = 1e-3;
    for (int j = 0; j < N; j++) xp[j] = xm[j] = x[j];
    xp[k] += (float)h, xm[k] -= (float)h;
    reference(xp, yp, N), reference(xm, ym, N);
    for (int j = 0; j < N; j++) lp += dy[j] * yp[j], lm += dy[j] * ym[j];
    double fd = (lp - lm) / ((double)xp[k] - (double)xm[k]);
    CHECK_NEAR(dx[k] - 0.25f, fd, 1e-4); /* accumulated onto what dx held */
  }
  /* the gradient of a softmax sums to zero: adding a constant to x changes nothing */
  float one[1] = {0}, gy[1] = {3}, g1[1] = {0};
  slK_softmax_row(one, one, 1);
  CHECK(one[0] == 1.0f);
  slK_softmax_grad_row(one, gy, g1, 1, 1);
  CHECK(g1[0] == 0.0f);
}

int main(void) {
  RUN(test_forward_against_binary64);
  RUN(test_in_place);
  RUN(test_backward_against_finite_differences);
  return check_summary();
}
