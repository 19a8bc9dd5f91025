/*
** reduce.h - sums down the columns of a row-major matrix (reduce.c): the
** gradients of the parameters every row shares (a linear layer's bias, a
** norm's gain and shift), the one place the graph computes them; and the
** sums along a row that layer norm takes.
*/
#ifndef SYSLAB_REDUCE_H
#define SYSLAB_REDUCE_H

#include <stddef.h>

/* y[j] += a[0][j] + a[1][j] + ... + a[rows-1][j] for the cols columns of a
** (row stride cols), in the order of cuda/gpu.h's SLG_SUM_ROWS: partials of
** 64 rows each, from zero in row order, added to y[j] in chunk order */
void slK_column_sums(const float *a, size_t rows, size_t cols, float *y);

/* The gain and shift gradients of a norm over rows of d features:
**   dgain[j]  += sum over r of dy[r][j] * ((x[r][j] - mean[r]) * rstd[r])
**   dshift[j] += sum over r of dy[r][j]
** added in the order of slK_column_sums. Row r's mean is mean[r * stride] and its 1/std
** rstd[r * stride] (stride 2 reads statistics stored in pairs); mean NULL
** for a norm without centring (RMSNorm); dgain or dshift NULL to skip it. */
void slK_norm_param_grads(const float *x, const float *dy, const float *mean, const float *rstd, size_t stride,
                          size_t rows, int d, float *dgain, float *dshift);

/* layer norm's row sums: the mean and variance of x[0..d); and, for its
** backward, the means over the row of g = gy * gamma and of g * xhat, where
** xhat = (x - m) * rs */
void slK_norm_moments(const float *x, int d, double *mean, double *var);
void slK_norm_grad_means(const float *x, float m, float rs, const float *gamma, const float *gy, int d, float *mg,
                         float *mgx);

#endif
