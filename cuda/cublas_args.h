/*
** cublas_args.h - the engine's row-major products as cuBLAS's column-major
** calls: one mapping and one check of cuBLAS's rules, in C that CUDA C++
** and the CPU tests both compile.
**
** The engine asks for row-major products, C = alpha op(A) op(B) + beta C
** (C is M x N, K deep; op(X) = X^T when trans_x), over `batch` products at
** fixed strides. cuBLAS reads column-major, and a row-major X read
** column-major is X^T, so the request is the column-major
** C^T = alpha op(B)^T op(A)^T: the transposes carry over unchanged, A and
** B swap places, and M and N swap. Every call site of cuda/ builds its
** arguments here (cublas.cu's slG_gemm_batched, the table's gemm_batched,
** which the graph's operators call; ops.cu's linear layer; the naive
** attention's six products), so tests/unit/test_gpu_args.c, which cannot run cuBLAS, runs
** the same requests through the same mapping on the CPU (an emulation of
** cublasSgemmStridedBatched) against the CPU's operators, and checks each
** call against cuBLAS's rules for its leading dimensions.
*/
#ifndef SYSLAB_CUBLAS_ARGS_H
#define SYSLAB_CUBLAS_ARGS_H

#include <stddef.h>
#include <stdio.h>

/* a row-major request: leading dimensions are the row strides of A, B and
** C as stored (A is M x K, or K x M when transposed), strides the elements
** from one product to the next (0 repeats the operand) */
typedef struct slG_Gemm {
  int trans_a, trans_b, M, N, K;
  int lda, ldb, ldc;
  long long stride_a, stride_b, stride_c;
  int batch;
} slG_Gemm;

/* cublas<t>gemmStridedBatched's arguments (transa and transb are
** cublasOperation_t: 0 N, 1 T); its first operand is the request's B, its
** second the request's A */
typedef struct slG_Cublas {
  int transa, transb, m, n, k;
  int lda, ldb, ldc;
  long long stride_a, stride_b, stride_c;
  int batch;
} slG_Cublas;

static inline slG_Cublas slG_cublas_of(const slG_Gemm *g) {
  slG_Cublas c = {g->trans_b, g->trans_a, g->N,        g->M,        g->K,        g->ldb,
                  g->lda,     g->ldc,     g->stride_b, g->stride_a, g->stride_c, g->batch};
  return c;
}

static inline int slG_at_least_1(int x) { return x > 1 ? x : 1; }

/* an operand's leading dimension against the rows it has as stored: 0, or -1 with the rule in err */
static inline int slG_ld_check(const char *name, int ld, int rows, int trans, char *err, size_t errlen) {
  if (ld >= slG_at_least_1(rows)) return 0;
  snprintf(err, errlen, "cuBLAS: %s %d < max(1, %d), the rows of op %s's operand as stored", name, ld, rows,
           trans ? "T" : "N");
  return -1;
}

/* 0 when cuBLAS accepts the call (its documented rules: sizes not
** negative, lda >= max(1, rows of the first operand as stored), the same
** for ldb and ldc) and the batch's products cannot overwrite one another's
** C (which cuBLAS does not check: they would race); else -1 with the rule
** broken in err */
static inline int slG_cublas_check(const slG_Cublas *c, char *err, size_t errlen) {
  int a_rows = c->transa ? c->k : c->m, b_rows = c->transb ? c->n : c->k;
  long long span = (long long)(c->n > 0 ? c->n - 1 : 0) * c->ldc + c->m;
  if (c->m < 0 || c->n < 0 || c->k < 0 || c->batch < 0)
    return snprintf(err, errlen, "cuBLAS: negative size m %d n %d k %d batch %d", c->m, c->n, c->k, c->batch), -1;
  if (slG_ld_check("lda", c->lda, a_rows, c->transa, err, errlen) != 0 ||
      slG_ld_check("ldb", c->ldb, b_rows, c->transb, err, errlen) != 0)
    return -1;
  if (c->ldc < slG_at_least_1(c->m)) return snprintf(err, errlen, "cuBLAS: ldc %d < max(1, m = %d)", c->ldc, c->m), -1;
  if (c->batch > 1 && c->m > 0 && c->n > 0 && (c->stride_c < 0 ? -c->stride_c : c->stride_c) < span)
    return snprintf(err, errlen, "cuBLAS: stride_c %lld < %lld, one product's C: the batch's products overlap",
                    c->stride_c, span),
           -1;
  return 0;
}

/* The linear layer's three products (ops.cu), over rows of in_f features,
** W out_f x in_f as the CPU's linear holds it: y = x W^T, dx += dy W,
** dW += dy^T x. */
enum { SLG_LINEAR_Y, SLG_LINEAR_DX, SLG_LINEAR_DW };
static inline slG_Gemm slG_linear_gemm(int which, int rows, int in_f, int out_f) {
  slG_Gemm y = {0, 1, rows, out_f, in_f, in_f, in_f, out_f, 0, 0, 0, 1};
  slG_Gemm dx = {0, 0, rows, in_f, out_f, out_f, in_f, in_f, 0, 0, 0, 1};
  slG_Gemm dw = {1, 0, out_f, in_f, rows, out_f, in_f, in_f, 0, 0, 0, 1};
  return which == SLG_LINEAR_Y ? y : which == SLG_LINEAR_DX ? dx : dw;
}

/* The naive attention's products (kernels.cu) over bh contiguous heads of
** n x dim: S = Q K^T and O = P V forward; dV = P^T dO, dP = dO V^T,
** dQ = dS K, dK = dS^T Q backward (A and B in the order written). */
enum { SLG_ATTN_GEMM_S, SLG_ATTN_GEMM_O, SLG_ATTN_GEMM_DV, SLG_ATTN_GEMM_DP, SLG_ATTN_GEMM_DQ, SLG_ATTN_GEMM_DK };
static inline slG_Gemm slG_attention_gemm(int which, int bh, int n, int dim) {
  long long sx = (long long)n * dim, ss = (long long)n * n;
  /* a head's n x n product of rows, and its n x dim product of an n x n array with rows */
  slG_Gemm square = {0, 1, n, n, dim, dim, dim, n, sx, sx, ss, bh};
  slG_Gemm rows = {0, 0, n, dim, n, n, dim, dim, ss, sx, sx, bh};
  if (which == SLG_ATTN_GEMM_S || which == SLG_ATTN_GEMM_DP) return square;
  if (which == SLG_ATTN_GEMM_DV || which == SLG_ATTN_GEMM_DK) rows.trans_a = 1;
  return rows;
}

#endif
