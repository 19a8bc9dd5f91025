/*
** product.h - every matrix product of a graph (product.c), in the graph's
** precision.
*/
#ifndef SYSLAB_PRODUCT_H
#define SYSLAB_PRODUCT_H

#include "model.h"

/* C = alpha op(A) op(B) + beta C, row-major, with OpenBLAS's arguments (kernels.h); under a 16-bit
** precision (g->precision) the operands are rounded to it and the sums stay float32 */
void slM_gemm(const slM_Graph *g, int trans_a, int trans_b, int M, int N, int K, float alpha, const float *A, int lda,
              const float *B, int ldb, float beta, float *C, int ldc);
/* the same where op(B) is a weight: w, when B is its value, lets a 16-bit product read the weight's
** rounded copy, made once per step (NULL: B is rounded as it is packed, like any operand) */
void slM_gemm_w(const slM_Graph *g, int trans_a, int trans_b, int M, int N, int K, float alpha, const float *A, int lda,
                slM_Param *w, const float *B, int ldb, float beta, float *C, int ldc);
/* 1 when the products of this precision run the kernels' packed 16-bit GEMM (the CPU has the
** instructions: kernels/gemm_half.c), which rounds as it packs and keeps one rounded copy of each
** weight per step; 0 when they round both operands into scratch and call the float32 GEMM */
int slM_product_native(int precision);
/* gives back the rounded copies of g's weights (the end of a step's passes; exec.c) */
void slM_product_end_pass(slM_Graph *g);
/* the bytes of the scratch that holds the rounded operands, and its release */
size_t slM_product_scratch_bytes(void);
void slM_product_release(void);

#endif
