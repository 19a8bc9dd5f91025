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
/* a linear layer's forward under a 16-bit precision whose products are native (slM_product_native):
** y = x W^T + bias (rows x out_f; bias NULL adds nothing), rounded to the precision, the bias and
** the rounding in the GEMM's store; w and W as slM_gemm_w's. The bits are those of slM_gemm_w, a
** pass adding the bias and precision.c's rounding. */
void slM_linear_half(const slM_Graph *g, int rows, int out_f, int in_f, const float *x, slM_Param *w, const float *W,
                     const float *bias, float *y);
/* Attention's per-head products (ops_attention.c) make hundreds of small
** products from the same few tensors; under bf16 with native products each
** tensor is rounded once per pass into one of SLM_OPERAND_SLOTS buffers
** kept between calls (counted as temporaries, as the emulated path's
** scratch), and the products read the rounded bits. The numbers are those
** of rounding while packing. */
enum { SLM_OPERAND_SLOTS = 3 };   /* a node's input 0, input 1, output gradient */
/* 1 when g's per-head products take that path */
int slM_product_operands(const slM_Graph *g);
/* x (n values) rounded to bfloat16 into slot's buffer, on the thread team; NULL without memory */
const uint16_t *slM_product_operand(int slot, const float *x, size_t n);
/* C = alpha op(A) op(B) + beta C from two such buffers (kernels' slK_gemm_bf16_rounded) */
void slM_gemm_rounded(int trans_a, int trans_b, int M, int N, int K, float alpha, const uint16_t *Ah, int lda,
                      const uint16_t *Bh, int ldb, float beta, float *C, int ldc);
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
