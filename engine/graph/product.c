/*
** product.c - every product of a graph: float32 through the kernels layer
** (OpenBLAS on the thread team), and under a 16-bit precision in the manner
** of autocast: the inputs rounded to bfloat16 or float16, the sums float32.
**
** Two ways to run a 16-bit product. Where the CPU has the instructions
** (kernels/gemm_half.c: vdpbf16ps for bfloat16), the packed GEMM rounds
** each operand while it packs it, and a weight's rounded copy is made once
** per step, at its first use in the forward pass, read again by the
** backward and given back when the step's passes end (counted as a
** temporary). Elsewhere (or with SYSLAB_PORTABLE=1) the emulated path
** rounds both operands into two scratch buffers, kept between calls and
** counted as temporaries as autocast's casts are, and calls the float32
** GEMM; the product of two 16-bit values is exact in float32, so that too
** is exactly "16-bit inputs, float32 accumulation", the order of the sums
** apart.
*/
#include <stdlib.h>

#include "kernels/blas.h"
#include "kernels/gemm_half.h"
#include "kernels/kernels.h"
#include "kernels/parallel.h"
#include "kernels/round.h"
#include "memory.h"
#include "product.h"

/* scratch for the rounded inputs of one product, kept between calls */
static float *scratch[2];
static size_t scratch_cap[2];

static const float *rounded(int which, int precision, const float *a, int rows, int cols, int ld) {
  size_t need = (size_t)rows * (size_t)cols;
  if (need > scratch_cap[which]) {
    slM_mem_external((long long)((need - scratch_cap[which]) * sizeof(float)));
    free(scratch[which]);
    scratch[which] = malloc(need * sizeof(float));
    scratch_cap[which] = need;
  }
  for (int r = 0; r < rows; r++)
    slK_round_array(precision, a + (size_t)r * ld, scratch[which] + (size_t)r * cols, (size_t)cols);
  return scratch[which];
}

/* the bfloat16 copies of a node's operands (slM_product_operand), one buffer a slot, kept between calls */
static uint16_t *operand[SLM_OPERAND_SLOTS];
static size_t operand_cap[SLM_OPERAND_SLOTS];

size_t slM_product_scratch_bytes(void) {
  size_t h = 0;
  for (int i = 0; i < SLM_OPERAND_SLOTS; i++) h += operand_cap[i] * sizeof(uint16_t);
  return (scratch_cap[0] + scratch_cap[1]) * sizeof(float) + h;
}

void slM_product_release(void) {
  for (int i = 0; i < 2; i++) {
    slM_mem_external(-(long long)(scratch_cap[i] * sizeof(float)));
    free(scratch[i]);
    scratch[i] = NULL;
    scratch_cap[i] = 0;
  }
  for (int i = 0; i < SLM_OPERAND_SLOTS; i++) {
    slM_mem_external(-(long long)(operand_cap[i] * sizeof(uint16_t)));
    free(operand[i]);
    operand[i] = NULL;
    operand_cap[i] = 0;
  }
}

int slM_product_native(int precision) { return precision != SLM_FP32 && slK_half_native(precision); }

/* the weight's rounded copy for this step: made at its first use, in pieces on the thread team */
typedef struct {
  int format;
  const float *x;
  uint16_t *out;
} ToHalf;

static void to_half_range(void *ctx, size_t from, size_t to) {
  const ToHalf *t = ctx;
  slK_to_half(t->format, t->x + from, t->out + from, to - from);
}

static const uint16_t *weight_half(slM_Param *w, int format) {
  if (!w->half) {
    size_t n = w->value->size;
    w->half = malloc(n * sizeof *w->half);
    if (!w->half) return NULL;   /* the product then rounds B as it packs it */
    slM_mem_external((long long)(n * sizeof *w->half));
    ToHalf t = {format, w->value->data, w->half};
    slK_parallel_for(n, 1 << 16, to_half_range, &t);
  }
  return w->half;
}

void slM_product_end_pass(slM_Graph *g) {
  for (int i = 0; i < g->n; i++)
    for (int k = 0; k < g->nodes[i].nparams; k++) {
      slM_Param *p = g->nodes[i].params[k];
      if (!p->half) continue;
      slM_mem_external(-(long long)(p->value->size * sizeof *p->half));
      free(p->half);
      p->half = NULL;
    }
}

int slM_product_operands(const slM_Graph *g) { return g->precision == SLM_BF16 && slK_half_native(SLK_BF16); }

const uint16_t *slM_product_operand(int slot, const float *x, size_t n) {
  if (n > operand_cap[slot]) {
    uint16_t *p = malloc(n * sizeof *p);
    if (!p) return NULL;
    slM_mem_external((long long)((n - operand_cap[slot]) * sizeof *p));
    free(operand[slot]);
    operand[slot] = p;
    operand_cap[slot] = n;
  }
  ToHalf t = {SLK_BF16, x, operand[slot]};
  slK_parallel_for(n, 1 << 14, to_half_range, &t);
  return operand[slot];
}

void slM_gemm_rounded(int trans_a, int trans_b, int M, int N, int K, float alpha, const uint16_t *Ah, int lda,
                      const uint16_t *Bh, int ldb, float beta, float *C, int ldc) {
  slK_gemm_bf16_rounded(trans_a, trans_b, M, N, K, alpha, Ah, lda, Bh, ldb, beta, C, ldc);
}

void slM_gemm_w(const slM_Graph *g, int trans_a, int trans_b, int M, int N, int K, float alpha, const float *A, int lda,
                slM_Param *w, const float *B, int ldb, float beta, float *C, int ldc) {
  slK_blas_init();
  if (!g || g->precision == SLM_FP32) {
    slK_sgemm(trans_a, trans_b, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc);
  } else if (slK_half_native(g->precision)) {
    /* a training step keeps the weight's rounded copy for its backward; an inference pass reads each
    ** weight once, so rounding it while packing costs no more than a copy would */
    const uint16_t *Bh = w && g->training && B == w->value->data ? weight_half(w, g->precision) : NULL;
    slK_gemm_half(g->precision, trans_a, trans_b, M, N, K, alpha, A, lda, B, Bh, ldb, beta, C, ldc);
  } else {
    int ar = trans_a ? K : M, ac = trans_a ? M : K, br = trans_b ? N : K, bc = trans_b ? K : N;
    A = rounded(0, g->precision, A, ar, ac, lda);
    B = rounded(1, g->precision, B, br, bc, ldb);
    slK_sgemm(trans_a, trans_b, M, N, K, alpha, A, ac, B, bc, beta, C, ldc);
  }
}

void slM_linear_half(const slM_Graph *g, int rows, int out_f, int in_f, const float *x, slM_Param *w, const float *W,
                     const float *bias, float *y) {
  slK_blas_init();
  const uint16_t *Wh = g->training && W == w->value->data ? weight_half(w, g->precision) : NULL;
  slK_gemm_half_bias(g->precision, SLK_N, SLK_T, rows, out_f, in_f, x, in_f, W, Wh, in_f, bias, 1, y, out_f);
}

void slM_gemm(const slM_Graph *g, int trans_a, int trans_b, int M, int N, int K, float alpha, const float *A, int lda,
              const float *B, int ldb, float beta, float *C, int ldc) {
  slM_gemm_w(g, trans_a, trans_b, M, N, K, alpha, A, lda, NULL, B, ldb, beta, C, ldc);
}
