/*
** product.c - every product of a graph: OpenBLAS sgemm through the
** kernels layer, in the manner of autocast under a 16-bit precision.
**
** This CPU has no bfloat16 or float16 matrix instructions that OpenBLAS
** uses (Debian's OpenBLAS 0.3.21 exports no sbgemm), so a product rounds
** its inputs to the 16-bit format (kernels/round.c) and multiplies them with
** sgemm. The product of two 16-bit values is exact in float32, so this is
** exactly "16-bit inputs, float32 accumulation"; only the order of the sums
** may differ from a GPU's. The rounded copies live in two scratch buffers
** kept between calls and counted as temporaries, as autocast's casts are.
*/
#include <stdlib.h>

#include "kernels/blas.h"
#include "kernels/kernels.h"
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

size_t slM_product_scratch_bytes(void) { return (scratch_cap[0] + scratch_cap[1]) * sizeof(float); }

void slM_product_release(void) {
  for (int i = 0; i < 2; i++) {
    slM_mem_external(-(long long)(scratch_cap[i] * sizeof(float)));
    free(scratch[i]);
    scratch[i] = NULL;
    scratch_cap[i] = 0;
  }
}

void slM_gemm(const slM_Graph *g, int trans_a, int trans_b, int M, int N, int K, float alpha, const float *A, int lda,
              const float *B, int ldb, float beta, float *C, int ldc) {
  slK_blas_init();
  if (g && g->precision != SLM_FP32) {
    int ar = trans_a ? K : M, ac = trans_a ? M : K, br = trans_b ? N : K, bc = trans_b ? K : N;
    A = rounded(0, g->precision, A, ar, ac, lda);
    B = rounded(1, g->precision, B, br, bc, ldb);
    lda = ac, ldb = bc;
  }
  slK_sgemm(trans_a, trans_b, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc);
}
