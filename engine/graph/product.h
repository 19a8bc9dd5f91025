/*
** product.h - every matrix product of a graph (product.c), in the graph's
** precision.
*/
#ifndef SYSLAB_PRODUCT_H
#define SYSLAB_PRODUCT_H

#include "model.h"

/* C = alpha op(A) op(B) + beta C, row-major, with OpenBLAS's arguments (kernels.h); under a 16-bit
** precision (g->precision) the operands are rounded to it first and the sums stay float32 */
void slM_gemm(const slM_Graph *g, int trans_a, int trans_b, int M, int N, int K, float alpha, const float *A, int lda,
              const float *B, int ldb, float beta, float *C, int ldc);
/* the bytes of the scratch that holds the rounded operands, and its release */
size_t slM_product_scratch_bytes(void);
void slM_product_release(void);

#endif
