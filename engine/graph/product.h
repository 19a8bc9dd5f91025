/*
** product.h - every matrix product of a graph (product.c), in the graph's
** precision, on operands of either storage (model.h).
*/
#ifndef SYSLAB_PRODUCT_H
#define SYSLAB_PRODUCT_H

#include "model.h"

/* an operand: float32 values (p), or the bits of the graph's 16-bit format (h), one of them set */
typedef struct slM_Mat {
  const float *p;
  const uint16_t *h;
} slM_Mat;
/* where a product's result goes: float32 (p) or 16-bit bits (h) */
typedef struct slM_Dst {
  float *p;
  uint16_t *h;
} slM_Dst;

/* t's values from element `at`, in its storage */
static inline slM_Mat slM_mat(const slM_Tensor *t, size_t at) {
  return (slM_Mat){t->half ? NULL : t->data + at, t->half ? t->half + at : NULL};
}
static inline slM_Dst slM_dst_of(slM_Tensor *t, size_t at) {
  return (slM_Dst){t->half ? NULL : t->data + at, t->half ? t->half + at : NULL};
}
static inline slM_Mat slM_f32(const float *p) { return (slM_Mat){p, NULL}; }

/* The one product of a graph: R = alpha op(A) op(B) + beta C (+ bias, N values added to every row;
** NULL: none), row-major with OpenBLAS's arguments (kernels.h). In float32, OpenBLAS on the thread
** team and a pass adding the bias. Under a 16-bit precision (g->precision) the operands are the
** format's values (16-bit storage read as it is, float32 rounded) and the sums float32; R is then
** rounded to the format when `round` or when C is 16-bit storage (C.h: beta must be 0), each step a
** float32 operation of its own, so the bits are those of the product, a pass adding the bias and a
** pass rounding. w, when op(B) is that weight's value, lets a training step read the weight's 16-bit
** working copy (written by the optimizer step, train.c) instead of rounding it again. */
void slM_product(const slM_Graph *g, int trans_a, int trans_b, int M, int N, int K, float alpha, slM_Mat A, int lda,
                 slM_Param *w, slM_Mat B, int ldb, float beta, const float *bias, int round, slM_Dst C, int ldc);
/* the same for one of attention's per-head products, which run on every thread at once: the emulated
** path's float32 operands and result in the calling thread's tiles, not in the shared scratch */
void slM_product_head(const slM_Graph *g, int trans_a, int trans_b, int M, int N, int K, float alpha, slM_Mat A,
                      int lda, slM_Mat B, int ldb, float beta, int round, slM_Dst C, int ldc);
/* the float32 form: C = alpha op(A) op(B) + beta C, w the weight operand's parameter (or NULL) */
void slM_gemm_w(const slM_Graph *g, int trans_a, int trans_b, int M, int N, int K, float alpha, const float *A, int lda,
                slM_Param *w, const float *B, int ldb, float beta, float *C, int ldc);
/* Attention's per-head products (ops_attention.c) make hundreds of small
** products from the same few tensors; under bf16 with native products a
** float32 tensor among them is rounded once per pass into one of
** SLM_OPERAND_SLOTS buffers kept between calls (counted as temporaries, as
** the emulated path's scratch), a 16-bit one is read as it is, and the
** products read the bits. The numbers are those of rounding while packing. */
enum { SLM_OPERAND_SLOTS = 3 }; /* a node's input 0, input 1, output gradient */
/* 1 when g's per-head products take that path */
int slM_product_operands(const slM_Graph *g);
/* x (n values) rounded to bfloat16 into slot's buffer, on the thread team; NULL without memory */
const uint16_t *slM_product_operand(int slot, const float *x, size_t n);
/* C = alpha op(A) op(B) + beta C from two such buffers (kernels' slK_gemm_bf16_rounded); with C.h
** (beta 0) the sums go through the calling thread's tile and are stored rounded, as bits */
void slM_gemm_rounded(int trans_a, int trans_b, int M, int N, int K, float alpha, const uint16_t *Ah, int lda,
                      const uint16_t *Bh, int ldb, float beta, slM_Dst C, int ldc);
/* 1 when the products of this precision run the kernels' packed 16-bit GEMM (the CPU has the
** instructions: kernels/gemm_half.c), which rounds as it packs; 0 when they round (or widen) both
** operands into scratch and call the float32 GEMM */
int slM_product_native(int precision);
/* A pass's weights: a working copy made at its first use in a training pass is kept for the
** backward and for the next step, where the optimizer has rewritten it from the float32 master
** (slM_product_weights_written); any other pass makes it afresh at first use. Between an optimizer
** step and the next forward pass only the optimizer changes the weights (the training loops), and a
** command that changes weights runs on a model whose copies training gave back
** (slM_release_activations), so no product reads a stale copy. Called when a forward pass starts. */
void slM_product_begin_pass(slM_Graph *g);
/* 1 when a training run of this precision keeps the working copies: where the products are native
** (the emulated path reads float32, so it rounds each weight into its scratch as it does any operand,
** and a copy would only add two bytes a parameter); slM_product_copies(1) makes the emulated path keep
** them too, so that the tests hold the copies' life to the float32 masters on any machine (returns the
** setting before) */
int slM_product_keeps_copies(int precision);
int slM_product_copies(int on);
/* after the optimizer step wrote the working copies of g's weights that have one */
void slM_product_weights_written(slM_Graph *g);
/* gives back the working copies of g's weights (training or evaluation done) */
void slM_product_free_weights(slM_Graph *g);
/* node n's 16-bit inputs widened into float32 buffers kept between calls (one per input, counted as
** temporaries): for an operator whose kernels read float32 only (exec.c); NULL without memory */
float *slM_product_widened(int k, const slM_Tensor *t);
/* the scratch that holds the rounded operands released */
void slM_product_release(void);

#endif
