/*
** softmax.h - the softmax of one row and its backward (softmax.c), the one
** place the graph's softmax nodes (plain, masked, the loss) compute it.
*/
#ifndef SYSLAB_SOFTMAX_H
#define SYSLAB_SOFTMAX_H

/* y[0..n) = softmax(x[0..n)); y may be x */
void slK_softmax_row(const float *x, float *y, int n);
/* dx[0..n) += y * (dy - <dy, y>), the input gradient of y = softmax(x)
** given dy, the gradient of y; without accumulate dx = 0 + that (a fresh
** gradient slot: the bits of adding to a cleared one) */
void slK_softmax_grad_row(const float *y, const float *dy, float *dx, int n, int accumulate);
/* the softmax of `rows` rows of n, the rows spread over the thread team */
void slK_softmax_rows(const float *x, float *y, size_t rows, int n);

#endif
