/*
** gemm.c - float32 matrix products for the graph's linear layers and
** attention.
**
** Today every product goes to OpenBLAS (cblas_sgemm); the dispatch exists so
** that the graph names one entry point, and faster or GPU versions can be
** added beside it without touching the callers.
*/
#include "kernels.h"

#include <cblas.h>

void slK_sgemm(int trans_a, int trans_b, int M, int N, int K, float alpha, const float *A, int lda, const float *B,
               int ldb, float beta, float *C, int ldc) {
  cblas_sgemm(CblasRowMajor, trans_a ? CblasTrans : CblasNoTrans, trans_b ? CblasTrans : CblasNoTrans, M, N, K, alpha,
              A, lda, B, ldb, beta, C, ldc);
}
