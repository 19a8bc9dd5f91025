/*
** devgemm.h - the products the GPU's operators ask of cuBLAS, as row-major
** requests (devgemm.c): attention's per-head products and the mean over
** tokens, which ops_cuda.c hands to the CUDA table's gemm_batched (the linear
** layer's are cuda/cublas_args.h's). Built apart from the slots so that
** tests/unit/test_gpu_args.c runs the very same requests, on the CPU,
** against the CPU's operators.
*/
#ifndef SYSLAB_DEVGEMM_H
#define SYSLAB_DEVGEMM_H

#include <stddef.h>

/* C = alpha op(A) op(B) + beta C, row-major (C is M x N, K deep; op(X) = X^T when trans_x), over `batch` products
** at fixed strides; the leading dimensions are row strides as stored, a0, b0 and c0 where the first product's
** operands start in their arrays (elements) */
typedef struct slM_DevGemm {
  int trans_a, trans_b, M, N, K;
  float alpha, beta;
  int lda, ldb, ldc;
  long long stride_a, stride_b, stride_c;
  int batch;
  size_t a0, b0, c0;
} slM_DevGemm;

/* Attention op by op, over token rows B x T x D in H heads of dh = D / H
** (head j in columns j dh ..) and the heads' T x T arrays (B x H x T x T):
** head j's product, one strided batch over the samples. scale = 1/sqrt(dh).
**   SCORES      S = scale Q K^T                    (A Q, B K, C S)
**   CONTEXT     Y = P V                            (A P, B V, C Y)
**   SCORES_DQ   dQ += scale dS K                   (A dS, B K, C dQ)
**   SCORES_DK   dK += scale dS^T Q                 (A dS, B Q, C dK)
**   CONTEXT_DP  dP += dY V^T                       (A dY, B V, C dP)
**   CONTEXT_DV  dV += P^T dY                       (A P, B dY, C dV) */
enum {
  SLM_GEMM_SCORES,
  SLM_GEMM_CONTEXT,
  SLM_GEMM_SCORES_DQ,
  SLM_GEMM_SCORES_DK,
  SLM_GEMM_CONTEXT_DP,
  SLM_GEMM_CONTEXT_DV
};
slM_DevGemm slM_gemm_heads(int which, int B, int T, int D, int H, int j);

/* the mean over tokens of B x T x D as a product with a row of T ones (A, repeated: stride 0): forward
** y[b] = (1/T) ones^T x[b] (B x, C y); backward dx[b] += (1/T) ones dy[b] (A the ones as T x 1, B dy, C dx) */
slM_DevGemm slM_gemm_mean_tokens(int backward, int B, int T, int D);

#endif
