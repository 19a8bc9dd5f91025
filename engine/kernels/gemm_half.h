/*
** gemm_half.h - matrix products with 16-bit inputs and float32 sums
** (gemm_half.c): bfloat16 through vdpbf16ps where the CPU has avx512_bf16,
** IEEE half through the float32 micro-kernel, the emulated path elsewhere.
*/
#ifndef SYSLAB_GEMM_HALF_H
#define SYSLAB_GEMM_HALF_H

#include <stddef.h>
#include <stdint.h>

#include "round.h"

/* C = alpha op(A) op(B) + beta C, row-major (OpenBLAS's argument order), the operands rounded to
** `format` (SLK_BF16 or SLK_FP16 from round.h) and the sums in float32, on the thread team.
** Bh, when not NULL, is op(B)'s storage already rounded, as 16-bit values (bfloat16 or IEEE half
** bits) with the same layout and ldb as B would have (B is then ignored): a weight rounded once
** and used by several products. */
void slK_gemm_half(int format, int trans_a, int trans_b, int M, int N, int K, float alpha, const float *A, int lda,
                   const float *B, const uint16_t *Bh, int ldb, float beta, float *C, int ldc);
/* slK_gemm_half in bf16 with both operands already rounded (Ah, Bh: bfloat16 bits from slK_to_half,
** the layouts and lda, ldb the float32 operands would have): a node that makes many small products
** from the same tensors (attention's per-head products) rounds them once, not in every product's
** packing. The bits are slK_gemm_half's on the operands' values, on either dispatch path. */
void slK_gemm_bf16_rounded(int trans_a, int trans_b, int M, int N, int K, float alpha, const uint16_t *Ah, int lda,
                           const uint16_t *Bh, int ldb, float beta, float *C, int ldc);
/* C = op(A) op(B) + bias (bias: N values added to every row; NULL adds nothing), then, when
** round_out, rounded to the format's values: a 16-bit linear layer's forward, its bias and the
** rounding of its output done in the GEMM's store rather than in two more passes over C. The bits
** are those of slK_gemm_half (alpha 1, beta 0), then C[i][j] + bias[j] in float32, then
** slK_round_values. */
void slK_gemm_half_bias(int format, int trans_a, int trans_b, int M, int N, int K, const float *A, int lda,
                        const float *B, const uint16_t *Bh, int ldb, const float *bias, int round_out, float *C,
                        int ldc);
/* The general form, for operands held in 16-bit storage (graph/model.h): op(A) from A or, when Ah is
** not NULL, from its 16-bit bits (the format's, the same layout); op(B) likewise; then bias (N values
** added to every row; NULL: none) and, when round_out, the sums rounded to the format, as
** slK_gemm_half_bias. The bits are slK_gemm_half's on the operands' values, then the bias and the
** rounding: the bits of the float32 operands that held those values. */
void slK_gemm_half_ex(int format, int trans_a, int trans_b, int M, int N, int K, float alpha, const float *A,
                      const uint16_t *Ah, int lda, const float *B, const uint16_t *Bh, int ldb, float beta,
                      const float *bias, int round_out, float *C, int ldc);
/* 1 when this machine runs the format's products with slK_gemm_half's packed kernel (bf16: the CPU
** has avx512_bf16 and the portable loops are not forced); 0: the caller keeps the emulated path */
int slK_half_native(int format);
/* the 16-bit bits of n values, rounded as the packing rounds them (vectorised) */
void slK_to_half(int format, const float *x, uint16_t *out, size_t n);
/* out[i] = x[i] rounded to the format, as slK_round_array (round.h) but with AVX-512 where the CPU has
** it: the rounding of a 16-bit node's output under a precision mode (graph/precision.c) */
void slK_round_values(int format, const float *x, float *out, size_t n);

/* The exact scalar reference of the packed kernels, one element at a time:
** bf16 as vdpbf16ps computes (each K block of SLK_HALF_KC from a zero
** accumulator, pairs of k in order, the odd element of a pair first, one
** float32 rounding per product added, bf16 subnormal inputs and subnormal
** sums flushed to signed zero; then C = alpha acc + beta C for the first
** block and C = alpha acc + C for the others, each as one fused
** multiply-add); fp16 as the float32 blocked kernel computes on rounded
** operands (alpha folded into op(A) after rounding, blocks of SLK_KC). The
** tests hold the packed kernels to it bit for bit. */
void slK_gemm_half_reference(int format, int trans_a, int trans_b, int M, int N, int K, float alpha, const float *A,
                             int lda, const float *B, const uint16_t *Bh, int ldb, float beta, float *C, int ldc);
/* the emulated path, whatever the machine: both operands rounded into
** temporary float32 copies, then slK_sgemm (OpenBLAS on the team) */
void slK_gemm_half_emulated(int format, int trans_a, int trans_b, int M, int N, int K, float alpha, const float *A,
                            int lda, const float *B, const uint16_t *Bh, int ldb, float beta, float *C, int ldc);

/* K per block of the bf16 kernel (even, so that no pair of k straddles two blocks) */
#ifndef SLK_HALF_KC
#define SLK_HALF_KC 1024
#endif

/* ---------------------------------------------- for attention.c: the bf16 panels
**
** An operand in float32 (p, element (r, c) at p[r*rs + c*cs]) or already
** rounded (h, bfloat16 bits, same strides); one of rs, cs is 1. Packed
** panels hold pairs of k as 32-bit words, the even k in the low half:
** A in panels of SLK_MR rows (word (i, pair) at a[pair*MR + i]), B in
** panels of SLK_NR columns (word (pair, j) at b[pair*NR + j]); a panel of
** kc values of k has (kc + 1) / 2 pairs, the last one padded with zero. */
typedef struct slK_HalfSrc {
  const float *p;
  const uint16_t *h;
  long rs, cs;
} slK_HalfSrc;

/* what a micro-kernel does to a tile in its last store besides alpha and beta (slK_gemm_half_bias):
** bias, the tile's first column's bias (NULL: none); round, 1 to round to bfloat16 */
typedef struct slK_HalfEnd {
  const float *bias;
  int round;
} slK_HalfEnd;

typedef struct slK_HalfLoops {
  /* mc x kc of op(A) from (i0, k0), rounded, into MR-row panels (zero-padded) */
  void (*pack_pairs_a)(const slK_HalfSrc *A, int i0, int mc, int k0, int kc, uint32_t *dst);
  /* kc x nc of op(B) from (k0, j0), rounded, into NR-column panels (zero-padded) */
  void (*pack_pairs_b)(const slK_HalfSrc *B, int k0, int kc, int j0, int nc, uint32_t *dst);
  /* the m x n corner (m <= MR, n <= NR) of C = alpha A_panel B_panel + beta C
  ** over kp pairs (beta = 0: C is not read), then the epilogue end (NULL: none) */
  void (*micro)(int kp, const uint32_t *a, const uint32_t *b, float *c, long ldc, int m, int n, float alpha, float beta,
                const slK_HalfEnd *end);
} slK_HalfLoops;

/* the bf16 loops of this machine: NULL unless slK_half_native(SLK_BF16) */
const slK_HalfLoops *slK_half_loops(void);

#endif
