/*
** gemm_half.c - matrix products with 16-bit inputs and float32 sums:
** C = alpha op(A) op(B) + beta C, the operands rounded to bfloat16 or IEEE
** half, as a mixed-precision graph multiplies.
**
** Build: part of the engine; tests/unit/test_gemm_half.c checks each
** version against the exact reference bit for bit and against the
** emulated path within the bound derived there; bench/bench_kernels.c
** times them beside OpenBLAS's float32 (`build/bench_kernels gemm 2048`).
**
**   v0 reference   one element at a time, emulating what the packed
**                  kernels compute bit for bit (gemm_half.h): the test's
**                  oracle, never timed
**   v1 emulated    both operands rounded into float32 copies, then
**                  slK_sgemm (OpenBLAS on the thread team): the graph's
**                  path before this file, kept as the portable fallback
**   v2 bf16        the GotoBLAS/BLIS loop nest of gemm.c's blocked
**                  kernel, on the same thread split, with vdpbf16ps:
**                  operands rounded to bfloat16 while they are packed (no
**                  pass of their own), B packed as pairs of k interleaved
**                  per column (the 32-bit word vdpbf16ps multiplies lane by
**                  lane), A's pairs broadcast as 32-bit words; an 8 x 48
**                  micro-kernel of 24 zmm accumulators, 24 vdpbf16ps per
**                  pair of k, each two multiply-adds per lane. alpha and
**                  beta are applied to the float32 accumulator. Every
**                  transposition: only the strides the packing reads with
**                  change (rows of 32 k are rounded and transposed 16 x 16
**                  in registers when k runs along memory, pairs of rows
**                  interleaved otherwise). Chosen when the CPU has
**                  avx512_bf16 and the portable loops are not forced.
**                  Two additions for the small products of a training
**                  step, both leaving the bits unchanged: a linear layer's
**                  bias and the rounding of its output happen in the
**                  micro-kernel's last store (slK_gemm_half_bias), not in
**                  two more passes over C; and a product with several K
**                  blocks and a small C (a weight's gradient, K = tokens)
**                  splits its K blocks between the threads instead of C's
**                  rows, each thread packing only its own blocks, the
**                  blocks' sums then added in order (the K split below).
**   v3 fp16        gemm.c's blocked float32 kernel with op(A) and op(B)
**                  rounded to half while they are packed: the CPU has no
**                  half dot product into float32 (AVX512-FP16 multiplies
**                  half into half), and a product of two halves is exact in
**                  float32, so the bits are those of rounding both operands
**                  and calling the blocked kernel.
**
** What vdpbf16ps does (Intel SDM, and measured on Zen 4): for each lane,
** acc = acc + a[2i+1] b[2i+1] rounded to float32, then acc = acc + a[2i]
** b[2i] rounded (the products are exact), bfloat16 subnormal inputs read
** as zero and subnormal sums flushed to signed zero, whatever MXCSR says.
** v0 emulates exactly that with fmaf.
*/
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "gemm_half.h"
#include "kernels.h"
#include "simd.h"

/* Block sizes, measured on Zen 4 (one core, n = 1024..4096; docs/kernels.md):
** KC = 1024 (gemm_half.h) keeps most products to one or few K blocks, so C
** is read and written rarely; B's micro-panel (512 pairs x 48 words,
** 96 KiB) then streams from L2 at 8 bytes a cycle, which L2 serves easily,
** and A's block (MC x KC bf16, 192 KiB) stays in L2 beside it; B's block
** (NC x KC, 3 MiB) sits in L3. Smaller KC (384, 512) or NC (384, 768)
** measured 3-10% slower. */
#ifndef HALF_MC
#define HALF_MC 96
#endif
#ifndef HALF_NC
#define HALF_NC 1536
#endif
#define KC SLK_HALF_KC

static int pairs(int kc) { return (kc + 1) / 2; }

/* ------------------------------------------------------------ v0: reference */

static float flush(float x) { return fabsf(x) < 0x1p-126f ? copysignf(0.0f, x) : x; }

static float op_at(const float *p, const uint16_t *h, int format, long at) {
  if (h) return format == SLK_BF16 ? slK_bf16_to_f32(h[at]) : slK_fp16_value(h[at]);
  return format == SLK_BF16 ? slK_round_bf16(p[at]) : slK_round_fp16(p[at]);
}

/* one element of C: the bf16 chain of vdpbf16ps, block by block */
static float ref_bf16(const float *A, long acs, const float *B, const uint16_t *Bh, long brs, int K, float alpha,
                      float beta, float c) {
  for (int pc = 0; pc < K; pc += KC) {
    int kc = K - pc < KC ? K - pc : KC;
    float acc = 0;
    for (int p = 0; p < kc; p += 2) {
      float a[2] = {0, 0}, b[2] = {0, 0};
      for (int e = 0; e < 2 && p + e < kc; e++) {
        long k = pc + p + e;
        a[e] = flush(op_at(A, NULL, SLK_BF16, k * acs));
        b[e] = flush(op_at(B, Bh, SLK_BF16, k * brs));
      }
      acc = flush(fmaf(a[1], b[1], acc));
      acc = flush(fmaf(a[0], b[0], acc));
    }
    if (pc == 0) c = beta == 0 ? alpha * acc : fmaf(alpha, acc, beta * c);
    else c = fmaf(alpha, acc, c);
  }
  return c;
}

/* one element of C: the float32 blocked kernel (AVX-512 micro-kernel) on half-rounded operands */
static float ref_fp16(const float *A, long acs, const float *B, const uint16_t *Bh, long brs, int K, float alpha,
                      float beta, float c) {
  if (beta == 0) c = 0;
  else if (beta != 1) c *= beta;
  for (int pc = 0; pc < K; pc += SLK_KC) {
    int kc = K - pc < SLK_KC ? K - pc : SLK_KC;
    float t = 0;
    for (int k = pc; k < pc + kc; k++)
      t = fmaf(alpha * op_at(A, NULL, SLK_FP16, k * acs), op_at(B, Bh, SLK_FP16, k * brs), t);
    c = pc == 0 && beta == 0 ? t : c + t;
  }
  return c;
}

void slK_gemm_half_reference(int format, int trans_a, int trans_b, int M, int N, int K, float alpha, const float *A,
                             int lda, const float *B, const uint16_t *Bh, int ldb, float beta, float *C, int ldc) {
  long ars = trans_a ? 1 : lda, acs = trans_a ? lda : 1, brs = trans_b ? 1 : ldb, bcs = trans_b ? ldb : 1;
  for (int i = 0; i < M; i++)
    for (int j = 0; j < N; j++) {
      const float *a = A + i * ars, *b = Bh ? NULL : B + j * bcs;
      const uint16_t *bh = Bh ? Bh + j * bcs : NULL;
      float *c = C + (long)i * ldc + j;
      if (K <= 0) *c = beta == 0 ? 0.0f : beta * *c;
      else if (format == SLK_BF16) *c = ref_bf16(a, acs, b, bh, brs, K, alpha, beta, *c);
      else *c = ref_fp16(a, acs, b, bh, brs, K, alpha, beta, *c);
    }
}

/* ------------------------------------------------------------- v1: emulated */

/* rows x cols of X (row stride ld) rounded into a contiguous copy */
static float *rounded_copy(int format, const float *x, const uint16_t *h, int rows, int cols, int ld) {
  float *out = slK_alloc(sizeof(float) * ((size_t)rows * cols + 1));
  if (!out) return NULL;
  for (int r = 0; r < rows; r++) {
    float *o = out + (size_t)r * cols;
    if (!h) slK_round_array(format, x + (size_t)r * ld, o, (size_t)cols);
    else
      for (int c = 0; c < cols; c++)
        o[c] = format == SLK_BF16 ? slK_bf16_to_f32(h[(size_t)r * ld + c]) : slK_fp16_value(h[(size_t)r * ld + c]);
  }
  return out;
}

void slK_gemm_half_emulated(int format, int trans_a, int trans_b, int M, int N, int K, float alpha, const float *A,
                            int lda, const float *B, const uint16_t *Bh, int ldb, float beta, float *C, int ldc) {
  int ar = trans_a ? K : M, ac = trans_a ? M : K, br = trans_b ? N : K, bc = trans_b ? K : N;
  float *a = rounded_copy(format, A, NULL, ar, ac, lda), *b = rounded_copy(format, B, Bh, br, bc, ldb);
  if (a && b) slK_sgemm(trans_a, trans_b, M, N, K, alpha, a, ac > 0 ? ac : 1, b, bc > 0 ? bc : 1, beta, C, ldc);
  slK_free(a);
  slK_free(b);
}

/* ------------------------------------------------------------------ v2: bf16 */

/* one thread's product: C (M x N) from op(A) (M x K) and op(B) (K x N);
** end, when not NULL, is applied in the last K block's stores (its bias at
** C's first column) */
static void bf16_one(const slK_HalfLoops *L, int M, int N, int K, float alpha, const slK_HalfSrc *A,
                     const slK_HalfSrc *B, float beta, float *C, long ldc, const slK_HalfEnd *end, uint32_t *abuf,
                     uint32_t *bbuf) {
  for (int jc = 0; jc < N; jc += HALF_NC) {
    int nc = N - jc < HALF_NC ? N - jc : HALF_NC;
    for (int pc = 0; pc < K; pc += KC) {
      int kc = K - pc < KC ? K - pc : KC, kp = pairs(kc), last = pc + kc >= K;
      float b = pc == 0 ? beta : 1.0f;
      L->pack_pairs_b(B, pc, kc, jc, nc, bbuf);
      for (int ic = 0; ic < M; ic += HALF_MC) {
        int mc = M - ic < HALF_MC ? M - ic : HALF_MC;
        L->pack_pairs_a(A, ic, mc, pc, kc, abuf);
        for (int jr = 0; jr < nc; jr += SLK_NR) {
          const uint32_t *bp = bbuf + (size_t)jr * kp;
          int n = nc - jr < SLK_NR ? nc - jr : SLK_NR;
          slK_HalfEnd e, *ep = NULL;
          if (end && last) e = *end, e.bias = end->bias ? end->bias + jc + jr : NULL, ep = &e;
          for (int ir = 0; ir < mc; ir += SLK_MR) {
            int m = mc - ir < SLK_MR ? mc - ir : SLK_MR;
            L->micro(kp, abuf + (size_t)ir * kp, bp, C + (long)(ic + ir) * ldc + jc + jr, ldc, m, n, alpha, b, ep);
          }
        }
      }
    }
  }
}

typedef struct {
  const slK_HalfLoops *L;
  int M, N, K, parts, by_rows;
  float alpha, beta;
  slK_HalfSrc A, B;
  float *C;
  long ldc;
  const slK_HalfEnd *end;
} Split;

/* part `part` of the rows or columns, on whole micro-tiles, as gemm.c's blocked kernel splits */
static void bf16_part(void *ctx, int part, int worker) {
  Split *s = ctx;
  int total = s->by_rows ? s->M : s->N, unit = s->by_rows ? SLK_MR : SLK_NR;
  int units = (total + unit - 1) / unit, lo = units * part / s->parts * unit, hi = units * (part + 1) / s->parts * unit;
  if (hi > total) hi = total;
  if (lo >= hi) return;
  slK_HalfSrc a = s->A, b = s->B;
  float *c = s->C;
  int M = s->M, N = s->N;
  slK_HalfEnd end = s->end ? *s->end : (slK_HalfEnd){NULL, 0};
  if (s->by_rows) {
    if (a.h) a.h += lo * a.rs;
    else a.p += lo * a.rs;
    c += lo * s->ldc;
    M = hi - lo;
  } else {
    if (b.h) b.h += lo * b.cs;
    else b.p += lo * b.cs;
    c += lo;
    N = hi - lo;
    if (end.bias) end.bias += lo;
  }
  size_t kp = (size_t)pairs(s->K < KC ? s->K : KC), mc = (size_t)(M < HALF_MC ? M : HALF_MC);
  size_t nc = (size_t)(N < HALF_NC ? N : HALF_NC), na = (mc + SLK_MR) * (kp + 1), nb = (nc + SLK_NR) * (kp + 1);
  na = (na + 15) / 16 * 16;
  uint32_t *abuf = slK_scratch(sizeof(uint32_t) * (na + nb));
  if (!abuf) return;
  bf16_one(s->L, M, N, s->K, s->alpha, &a, &b, s->beta, c, s->ldc, s->end ? &end : NULL, abuf, abuf + na);
  slK_scratch_release(abuf);
  (void)worker;
}

/* The K split. A product with a long K and a small C (a weight's gradient:
** K the batch's tokens, C the weight) splits badly by rows or columns:
** every part packs the whole of the other operand, so both threads round
** and interleave the same activations. It splits instead by K blocks of
** KC, the blocks the sums are made of anyway: each part sums one block
** from a zero accumulator into its own M x N slice (alpha 1, beta 0: the
** raw sums), and sum_blocks then applies alpha and beta block after block
** exactly as the micro-kernel's stores would have, so the bits do not
** change. */
typedef struct {
  const slK_HalfLoops *L;
  int M, N, K;
  slK_HalfSrc A, B;
  float *sums; /* blocks x M x N */
} KSplit;

static void ksplit_part(void *ctx, int part, int worker) {
  KSplit *s = ctx;
  int k0 = part * KC, kc = s->K - k0 < KC ? s->K - k0 : KC;
  slK_HalfSrc a = s->A, b = s->B;
  if (a.h) a.h += (long)k0 * a.cs;
  else a.p += (long)k0 * a.cs;
  if (b.h) b.h += (long)k0 * b.rs;
  else b.p += (long)k0 * b.rs;
  size_t kp = (size_t)pairs(kc), mc = (size_t)(s->M < HALF_MC ? s->M : HALF_MC);
  size_t nc = (size_t)(s->N < HALF_NC ? s->N : HALF_NC), na = (mc + SLK_MR) * (kp + 1), nb = (nc + SLK_NR) * (kp + 1);
  na = (na + 15) / 16 * 16;
  uint32_t *abuf = slK_scratch(sizeof(uint32_t) * (na + nb));
  if (!abuf) return;
  bf16_one(s->L, s->M, s->N, kc, 1.0f, &a, &b, 0.0f, s->sums + (size_t)part * s->M * s->N, s->N, NULL, abuf, abuf + na);
  slK_scratch_release(abuf);
  (void)worker;
}

static void sum_blocks(int blocks, int M, int N, float alpha, const float *sums, float beta, float *C, int ldc);

/* a thread's buffer of block sums, kept between calls (a fresh one of this size comes from mmap) */
static _Thread_local struct {
  float *p;
  size_t cap;
} ksums;

static int gemm_bf16_ksplit(int threads, int M, int N, int K, float alpha, const slK_HalfSrc *A, const slK_HalfSrc *B,
                            float beta, float *C, int ldc) {
  int blocks = (K + KC - 1) / KC;
  size_t need = (size_t)blocks * M * N;
  if (need > ksums.cap) {
    slK_free(ksums.p);
    ksums.p = slK_alloc(need * sizeof(float));
    ksums.cap = ksums.p ? need : 0;
    if (!ksums.p) return -1;
  }
  KSplit s = {slK_half_loops(), M, N, K, *A, *B, ksums.p};
  slK_parallel(blocks, threads, ksplit_part, &s);
  sum_blocks(blocks, M, N, alpha, ksums.p, beta, C, ldc);
  return 0;
}

/* the operands' sources: float32, or already rounded (16-bit bits, the same layout) */
static slK_HalfSrc source(const float *p, const uint16_t *h, int trans, int ld) {
  return (slK_HalfSrc){h ? NULL : p, h, trans ? 1 : ld, trans ? ld : 1};
}

static void gemm_bf16(int M, int N, int K, float alpha, slK_HalfSrc a, slK_HalfSrc b, float beta, float *C, int ldc,
                      const slK_HalfEnd *end) {
  int threads = slK_threads();
  double work = (double)M * N * K;
  if (threads > 1 && work < 4e6 * threads) threads = work < 8e6 ? 1 : 2;
  /* two or more K blocks and a C of at most 256 Ki values (a megabyte per block of sums) */
  if (threads > 1 && !end && K > KC && (long)M * N <= (1L << 18) &&
      gemm_bf16_ksplit(threads, M, N, K, alpha, &a, &b, beta, C, ldc) == 0)
    return;
  Split s = {slK_half_loops(), M, N, K, threads, 0, alpha, beta, a, b, C, ldc, end};
  /* split the rows when there are too few column panels to share, or when op(A) is the larger operand:
  ** every part packs the whole of the operand that is not split, and A's packing rounds and interleaves */
  s.by_rows = (N < SLK_NR * threads * 2 || (long)M * 2 >= (long)N * 3) && M >= SLK_MR * threads * 2;
  slK_parallel(threads, threads, bf16_part, &s);
}

/* ------------------------------------------------------------------ v3: fp16 */

static void gemm_fp16(int trans_a, int trans_b, int M, int N, int K, float alpha, const float *A, int lda,
                      const float *B, const uint16_t *Bh, int ldb, float beta, float *C, int ldc) {
  slK_Operand a = {A, trans_a ? 1 : lda, trans_a ? lda : 1, NULL, NULL, 0, 0, SLK_FP16, NULL};
  slK_Operand b = {Bh ? NULL : B, trans_b ? 1 : ldb, trans_b ? ldb : 1, NULL, NULL, 0, 0, SLK_FP16, Bh};
  slK_gemm_blocked(M, N, K, alpha, &a, &b, beta, C, ldc, slK_threads());
}

/* ================================================================= AVX-512 */

#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>

#include "transpose16.h"

#define AVX512 __attribute__((target("avx512f,avx512bw,avx512dq,avx512vl,fma,f16c")))
#define BF16 __attribute__((target("avx512f,avx512bw,avx512dq,avx512vl,fma,f16c,avx512bf16")))
#define INLINE static inline __attribute__((always_inline))

/* the bfloat16 bits of x in the top half of each lane, the low half zero:
** slK_round_bf16 lane by lane (nearest, ties to even; Inf kept, NaN quieted) */
AVX512 INLINE __m512i bf16_hi(__m512 x) {
  __m512i u = _mm512_castps_si512(x), expo = _mm512_set1_epi32(0x7F800000);
  __mmask16 special = _mm512_cmpeq_epi32_mask(_mm512_and_si512(u, expo), expo);
  __mmask16 nan = _mm512_cmp_ps_mask(x, x, _CMP_UNORD_Q);
  __m512i odd = _mm512_and_si512(_mm512_srli_epi32(u, 16), _mm512_set1_epi32(1));
  __m512i r = _mm512_add_epi32(u, _mm512_add_epi32(odd, _mm512_set1_epi32(0x7FFF)));
  r = _mm512_mask_mov_epi32(r, special, u);
  r = _mm512_mask_or_epi32(r, nan, u, _mm512_set1_epi32(0x00400000));
  return _mm512_and_si512(r, _mm512_set1_epi32((int)0xFFFF0000u));
}

static __mmask16 lanes(int n) { return n >= 16 ? 0xFFFF : n <= 0 ? 0 : (__mmask16)((1u << n) - 1); }
static __mmask32 lanes32(int n) { return n >= 32 ? 0xFFFFFFFFu : n <= 0 ? 0 : (__mmask32)((1u << n) - 1); }

/* 32 floats (x0..x15, x16..x31) as 32 bfloat16 values in order, exactly as
** slK_round_bf16 rounds: vcvtne2ps2bf16 does (nearest even, NaN quieted
** with its payload's top bits) for every input but a float32 subnormal,
** which it reads as zero; a group holding one takes the integer rounding */
BF16 INLINE __m512i round32(__m512 lo, __m512 hi) {
  if (_mm512_fpclass_ps_mask(lo, 0x20) | _mm512_fpclass_ps_mask(hi, 0x20)) {
    const __m512i odd = _mm512_set_epi16(63, 61, 59, 57, 55, 53, 51, 49, 47, 45, 43, 41, 39, 37, 35, 33, 31, 29, 27, 25,
                                         23, 21, 19, 17, 15, 13, 11, 9, 7, 5, 3, 1);
    return _mm512_permutex2var_epi16(bf16_hi(lo), odd, bf16_hi(hi));
  }
  return (__m512i)_mm512_cvtne2ps_pbh(hi, lo);
}

/* up to 32 values of a source from `at` with unit stride (n of them, the rest zero), as bfloat16 */
BF16 INLINE __m512i load32(const slK_HalfSrc *s, long at, int n) {
  if (s->h) return _mm512_maskz_loadu_epi16(lanes32(n), s->h + at);
  return round32(_mm512_maskz_loadu_ps(lanes(n), s->p + at), _mm512_maskz_loadu_ps(lanes(n - 16), s->p + at + 16));
}

/* pair words of two runs of bfloat16 x and y (16-bit lanes): x[i] | y[i] << 16 for lanes 0..15 (lo) or 16..31 (hi) */
BF16 INLINE __m512i zip_lo(__m512i x, __m512i y) {
  const __m512i idx = _mm512_set_epi16(47, 15, 46, 14, 45, 13, 44, 12, 43, 11, 42, 10, 41, 9, 40, 8, 39, 7, 38, 6, 37,
                                       5, 36, 4, 35, 3, 34, 2, 33, 1, 32, 0);
  return _mm512_permutex2var_epi16(x, idx, y);
}
BF16 INLINE __m512i zip_hi(__m512i x, __m512i y) {
  const __m512i idx = _mm512_set_epi16(63, 31, 62, 30, 61, 29, 60, 28, 59, 27, 58, 26, 57, 25, 56, 24, 55, 23, 54, 22,
                                       53, 21, 52, 20, 51, 19, 50, 18, 49, 17, 48, 16);
  return _mm512_permutex2var_epi16(x, idx, y);
}

/* x[0..15] as the rows of a 16 x 16 matrix of 32-bit words, transposed in place */
AVX512 INLINE void transpose16_pairs(__m512i *x) {
  __m512 r[16];
#pragma GCC unroll 16
  for (int i = 0; i < 16; i++) r[i] = _mm512_castsi512_ps(x[i]);
  slK_transpose16(r);
#pragma GCC unroll 16
  for (int i = 0; i < 16; i++) x[i] = _mm512_castps_si512(r[i]);
}

/* 16 lines of 32 values of k each (line l at base + l*ls, k with unit
** stride, kc of them; lines at and past `nl` zero) as pair words,
** transposed: w[t] holds pair t of the 16 lines */
BF16 INLINE void lines16(const slK_HalfSrc *s, long base, long ls, int nl, int kc, __m512i *w) {
#pragma GCC unroll 16
  for (int l = 0; l < 16; l++) {
    if (l < nl && kc > 64) { /* the lines' next values, two groups ahead: 16 streams outrun the prefetchers */
      const char *next = s->h ? (const char *)(s->h + base + l * ls + 64) : (const char *)(s->p + base + l * ls + 64);
      _mm_prefetch(next, _MM_HINT_T0);
      if (!s->h) _mm_prefetch(next + 64, _MM_HINT_T0);
    }
    w[l] = l < nl ? load32(s, base + l * ls, kc) : _mm512_setzero_si512();
  }
  transpose16_pairs(w);
}

/* The same for a few lines (nl of them, 1 to 3: the 17th token of an
** attention head), without the 16 x 16 transpose: each line's pairs are
** rounded together and written one word at a time, word t of line l at
** dst[t * stride + l]; the other lanes of those words are set to zero. */
BF16 INLINE void few_lines(const slK_HalfSrc *s, long base, long ls, int nl, int kc, int n, uint32_t *dst, long stride,
                           int width) {
  uint32_t w[16];
  for (int t = 0; t < n; t++) memset(dst + t * stride, 0, (size_t)width * sizeof *dst);
  for (int l = 0; l < nl; l++) {
    _mm512_storeu_si512(w, load32(s, base + l * ls, kc));
    for (int t = 0; t < n; t++) dst[t * stride + l] = w[t];
  }
}

/* A panels (8 rows, pairs of k): two panels at a time, 16 rows */
BF16 static void pack_a_avx512(const slK_HalfSrc *A, int i0, int mc, int k0, int kc, uint32_t *dst) {
  int kp = pairs(kc);
  for (int p = 0; p < mc; p += 2 * SLK_MR) {
    uint32_t *d0 = dst + (size_t)p * kp, *d1 = d0 + (size_t)SLK_MR * kp;
    int rows = mc - p, two = rows > SLK_MR;
    if (A->cs == 1 && rows < 4) { /* a few rows left over */
      for (int q = 0; q < kp; q += 16)
        few_lines(A, (long)(i0 + p) * A->rs + k0 + 2 * q, A->rs, rows, kc - 2 * q, kp - q < 16 ? kp - q : 16,
                  d0 + (size_t)q * SLK_MR, SLK_MR, SLK_MR);
    } else if (A->cs == 1) { /* rows of op(A) run along memory: 32 k of 16 rows, transposed */
      for (int q = 0; q < kp; q += 16) {
        __m512i w[16];
        lines16(A, (long)(i0 + p) * A->rs + k0 + 2 * q, A->rs, rows, kc - 2 * q, w);
        int n = kp - q < 16 ? kp - q : 16;
        for (int t = 0; t < n; t++) {
          _mm256_storeu_si256((__m256i *)(d0 + (size_t)(q + t) * SLK_MR), _mm512_castsi512_si256(w[t]));
          if (two) _mm256_storeu_si256((__m256i *)(d1 + (size_t)(q + t) * SLK_MR), _mm512_extracti64x4_epi64(w[t], 1));
        }
      }
    } else { /* columns of op(A) run along memory: 16 rows of k and k + 1, interleaved */
      int n = rows < 16 ? rows : 16;
      for (int q = 0; q < kp; q++) {
        long at = (long)(k0 + 2 * q) * A->cs + i0 + p;
        __m512i r0 = load32(A, at, n), r1 = 2 * q + 1 < kc ? load32(A, at + A->cs, n) : _mm512_setzero_si512();
        __m512i w = zip_lo(r0, r1);
        _mm256_storeu_si256((__m256i *)(d0 + (size_t)q * SLK_MR), _mm512_castsi512_si256(w));
        if (two) _mm256_storeu_si256((__m256i *)(d1 + (size_t)q * SLK_MR), _mm512_extracti64x4_epi64(w, 1));
      }
    }
  }
}

/* B panels (48 columns, pairs of k) */
BF16 static void pack_b_avx512(const slK_HalfSrc *B, int k0, int kc, int j0, int nc, uint32_t *dst) {
  int kp = pairs(kc);
  for (int q = 0; q < nc; q += SLK_NR, dst += (size_t)SLK_NR * kp) {
    int cols = nc - q;
    if (B->cs == 1) { /* rows of op(B) run along memory: rows k and k + 1 interleaved */
      for (int p = 0; p < kp; p++) {
        long at = (long)(k0 + 2 * p) * B->rs + j0 + q;
        if (2 * p + 5 < kc && !B->h) { /* two pairs of rows ahead */
          _mm_prefetch((const char *)(B->p + at + 4 * B->rs), _MM_HINT_T0);
          _mm_prefetch((const char *)(B->p + at + 4 * B->rs + 16), _MM_HINT_T0);
          _mm_prefetch((const char *)(B->p + at + 4 * B->rs + 32), _MM_HINT_T0);
          _mm_prefetch((const char *)(B->p + at + 5 * B->rs), _MM_HINT_T0);
          _mm_prefetch((const char *)(B->p + at + 5 * B->rs + 16), _MM_HINT_T0);
          _mm_prefetch((const char *)(B->p + at + 5 * B->rs + 32), _MM_HINT_T0);
        }
        __m512i x0 = load32(B, at, cols), x1 = load32(B, at + 32, cols - 32 < 16 ? cols - 32 : 16);
        __m512i y0 = _mm512_setzero_si512(), y1 = y0;
        if (2 * p + 1 < kc)
          y0 = load32(B, at + B->rs, cols), y1 = load32(B, at + B->rs + 32, cols - 32 < 16 ? cols - 32 : 16);
        uint32_t *d = dst + (size_t)p * SLK_NR;
        _mm512_storeu_si512(d, zip_lo(x0, y0));
        _mm512_storeu_si512(d + 16, zip_hi(x0, y0));
        _mm512_storeu_si512(d + 32, zip_lo(x1, y1));
      }
    } else { /* columns of op(B) run along memory: 32 k of 16 columns, transposed */
      for (int v = 0; v < 3; v++) {
        if (cols <= 16 * v) { /* a narrow edge panel (attention's 17 keys): zeros, nothing to transpose */
          for (int p = 0; p < kp; p++) _mm512_storeu_si512(dst + (size_t)p * SLK_NR + 16 * v, _mm512_setzero_si512());
          continue;
        }
        if (cols - 16 * v < 4) {
          for (int p = 0; p < kp; p += 16)
            few_lines(B, (long)(j0 + q + 16 * v) * B->cs + k0 + 2 * p, B->cs, cols - 16 * v, kc - 2 * p,
                      kp - p < 16 ? kp - p : 16, dst + (size_t)p * SLK_NR + 16 * v, SLK_NR, 16);
          continue;
        }
        for (int p = 0; p < kp; p += 16) {
          __m512i w[16];
          lines16(B, (long)(j0 + q + 16 * v) * B->cs + k0 + 2 * p, B->cs, cols - 16 * v, kc - 2 * p, w);
          int n = kp - p < 16 ? kp - p : 16;
          for (int t = 0; t < n; t++) _mm512_storeu_si512(dst + (size_t)(p + t) * SLK_NR + 16 * v, w[t]);
        }
      }
    }
  }
}

/* A tile's last store with the epilogue of a linear layer (slK_HalfEnd):
** alpha acc + beta C, then the bias added and the sum rounded to bfloat16,
** each a separate float32 operation, so the bits are those of the product,
** a pass adding the bias and a pass rounding (precision.c) one after the
** other. */
BF16 INLINE void store_end(__m512 cv[3][SLK_MR], float *c, long ldc, int m, int n, __m512 va, __m512 vb, float beta,
                           const slK_HalfEnd *end, const int nv) {
  for (int i = 0; i < m; i++)
#pragma GCC unroll 3
    for (int v = 0; v < nv; v++) {
      __mmask16 k = lanes(n - 16 * v);
      float *ci = c + i * ldc + 16 * v;
      __m512 x = beta == 0 ? _mm512_mul_ps(va, cv[v][i])
                           : _mm512_fmadd_ps(va, cv[v][i], _mm512_mul_ps(vb, _mm512_maskz_loadu_ps(k, ci)));
      if (end->bias) x = _mm512_add_ps(x, _mm512_maskz_loadu_ps(k, end->bias + 16 * v));
      if (end->round) x = _mm512_castsi512_ps(bf16_hi(x));
      _mm512_mask_storeu_ps(ci, k, x);
    }
}

/* The 8 x 48 micro-kernel: per pair of k, three vectors of B (16 columns x
** 2 k each) and eight broadcast words of A, 24 vdpbf16ps. An edge panel
** with 16 or 32 columns in use runs with one or two vectors (nv), its
** sums the same. */
BF16 static inline __attribute__((always_inline)) void micro_nv(int kp, const uint32_t *a, const uint32_t *b, float *c,
                                                                long ldc, int m, int n, float alpha, float beta,
                                                                const slK_HalfEnd *end, const int nv, const int R) {
  __m512 cv[3][SLK_MR];
#pragma GCC unroll 8
  for (int i = 0; i < R; i++) {
    /* C's lines arrive while the products run: a matrix's tile has rows ldc apart, past the
    ** prefetchers (attention's panels, rows of 48 in L1 or L2, need none) */
    if (ldc > SLK_NR && nv == 3) {
      _mm_prefetch((const char *)(c + i * ldc), _MM_HINT_T0);
      _mm_prefetch((const char *)(c + i * ldc + 16), _MM_HINT_T0);
      _mm_prefetch((const char *)(c + i * ldc + 32), _MM_HINT_T0);
      _mm_prefetch((const char *)(c + i * ldc + 47), _MM_HINT_T0);
    }
    cv[0][i] = cv[1][i] = cv[2][i] = _mm512_setzero_ps();
  }
  for (int p = 0; p < kp; p++, a += SLK_MR, b += SLK_NR) {
    __m512bh bv[3];
#pragma GCC unroll 3
    for (int v = 0; v < nv; v++) bv[v] = (__m512bh)_mm512_loadu_si512(b + 16 * v);
#pragma GCC unroll 8
    for (int i = 0; i < R; i++) {
      __m512bh ai = (__m512bh)_mm512_set1_epi32((int)a[i]);
#pragma GCC unroll 3
      for (int v = 0; v < nv; v++) cv[v][i] = _mm512_dpbf16_ps(cv[v][i], bv[v], ai);
    }
  }
  __m512 va = _mm512_set1_ps(alpha), vb = _mm512_set1_ps(beta);
  if (end) {
    store_end(cv, c, ldc, m, n, va, vb, beta, end, nv);
    return;
  }
  if (nv == 3 && R == SLK_MR && m == SLK_MR && n == SLK_NR) {
#pragma GCC unroll 8
    for (int i = 0; i < SLK_MR; i++)
#pragma GCC unroll 3
      for (int v = 0; v < 3; v++) {
        float *ci = c + i * ldc + 16 * v;
        if (beta == 0) _mm512_storeu_ps(ci, _mm512_mul_ps(va, cv[v][i]));
        else _mm512_storeu_ps(ci, _mm512_fmadd_ps(va, cv[v][i], _mm512_mul_ps(vb, _mm512_loadu_ps(ci))));
      }
    return;
  }
  /* an edge tile: the sums through a buffer, so that the accumulators stay in registers above */
  float t[SLK_MR * SLK_NR];
#pragma GCC unroll 8
  for (int i = 0; i < R; i++)
#pragma GCC unroll 3
    for (int v = 0; v < nv; v++) _mm512_storeu_ps(t + i * SLK_NR + 16 * v, cv[v][i]);
  for (int i = 0; i < m; i++)
    for (int v = 0; v < nv; v++) {
      __mmask16 k = lanes(n - 16 * v);
      float *ci = c + i * ldc + 16 * v;
      __m512 acc = _mm512_loadu_ps(t + i * SLK_NR + 16 * v);
      __m512 x = beta == 0 ? _mm512_mul_ps(va, acc)
                           : _mm512_fmadd_ps(va, acc, _mm512_mul_ps(vb, _mm512_maskz_loadu_ps(k, ci)));
      _mm512_mask_storeu_ps(ci, k, x);
    }
}

/* one instance per number of vectors of B in use (nv) and rows computed (R: an edge tile of m
** rows runs R = 1, 2 or 4 when m is that small, so the 17th row of a 17-token attention head costs
** one row's multiply-adds rather than eight) */
#define MICRO_R(R) \
  do { \
    if (n > 32) micro_nv(kp, a, b, c, ldc, m, n, alpha, beta, end, 3, R); \
    else if (n > 16) micro_nv(kp, a, b, c, ldc, m, n, alpha, beta, end, 2, R); \
    else micro_nv(kp, a, b, c, ldc, m, n, alpha, beta, end, 1, R); \
  } while (0)

BF16 static void micro_edge(int kp, const uint32_t *a, const uint32_t *b, float *c, long ldc, int m, int n, float alpha,
                            float beta, const slK_HalfEnd *end) {
  if (m == 1) MICRO_R(1);
  else if (m == 2) MICRO_R(2);
  else if (m <= 4) MICRO_R(4);
  else MICRO_R(SLK_MR);
}

BF16 static void micro_bf16(int kp, const uint32_t *a, const uint32_t *b, float *c, long ldc, int m, int n, float alpha,
                            float beta, const slK_HalfEnd *end) {
  /* the common case without an epilogue keeps its own copies of the loops (the check inside them cost
  ** 5% of the image transformer's products) */
  if (m < SLK_MR || end) micro_edge(kp, a, b, c, ldc, m, n, alpha, beta, end);
  else if (n > 32) micro_nv(kp, a, b, c, ldc, m, n, alpha, beta, NULL, 3, SLK_MR);
  else if (n > 16) micro_nv(kp, a, b, c, ldc, m, n, alpha, beta, NULL, 2, SLK_MR);
  else micro_nv(kp, a, b, c, ldc, m, n, alpha, beta, NULL, 1, SLK_MR);
}
#undef MICRO_R

/* fp16 bits lane by lane as slK_fp16_bits: vcvtps2ph rounds to nearest
** even and keeps subnormals, but carries a NaN's payload, which the scalar
** rounding replaces by the quiet NaN 0x7E00 (with the sign) */
AVX512 INLINE __m256i fp16_bits16(__m512 x) {
  __m256i h = _mm512_cvtps_ph(x, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
  __mmask16 nan = _mm512_cmp_ps_mask(x, x, _CMP_UNORD_Q);
  __m256i qnan = _mm256_or_si256(_mm256_and_si256(h, _mm256_set1_epi16((short)0x8000)), _mm256_set1_epi16(0x7E00));
  return _mm256_mask_mov_epi16(h, nan, qnan);
}

AVX512 static void to_half_avx512(int format, const float *x, uint16_t *out, size_t n) {
  for (size_t i = 0; i < n; i += 16) {
    __mmask16 m = lanes(n - i < 16 ? (int)(n - i) : 16);
    __m512 v = _mm512_maskz_loadu_ps(m, x + i);
    __m256i h = format == SLK_FP16 ? fp16_bits16(v) : _mm512_cvtepi32_epi16(_mm512_srli_epi32(bf16_hi(v), 16));
    _mm256_mask_storeu_epi16(out + i, m, h);
  }
}

/* bf16 bits with vcvtne2ps2bf16 (round32), 32 values at a time */
BF16 static void to_bf16_hw(const float *x, uint16_t *out, size_t n) {
  slK_HalfSrc s = {x, NULL, 1, 1};
  for (size_t i = 0; i < n; i += 32) {
    int m = n - i < 32 ? (int)(n - i) : 32;
    _mm512_mask_storeu_epi16(out + i, lanes32(m), load32(&s, (long)i, m));
  }
}

/* float32 values rounded to the format, bit for bit as round.c's scalar functions */
AVX512 static void round_avx512(int format, const float *x, float *out, size_t n) {
  for (size_t i = 0; i < n; i += 16) {
    __mmask16 m = lanes(n - i < 16 ? (int)(n - i) : 16);
    __m512 v = _mm512_maskz_loadu_ps(m, x + i);
    __m512 r = format == SLK_FP16 ? _mm512_cvtph_ps(fp16_bits16(v)) : _mm512_castsi512_ps(bf16_hi(v));
    _mm512_mask_storeu_ps(out + i, m, r);
  }
}

/* C from the K split's block sums, each block's store as micro_nv makes it: the first block
** alpha s (beta 0) or alpha s + beta C, every later one alpha s + C, each one fused multiply-add */
AVX512 static void sum_blocks_avx512(int blocks, int M, int N, float alpha, const float *sums, float beta, float *C,
                                     int ldc) {
  __m512 va = _mm512_set1_ps(alpha), vb = _mm512_set1_ps(beta);
  size_t mn = (size_t)M * N;
  for (int i = 0; i < M; i++)
    for (int j = 0; j < N; j += 16) {
      __mmask16 k = lanes(N - j);
      float *ci = C + (long)i * ldc + j;
      const float *s = sums + (size_t)i * N + j;
      __m512 acc = _mm512_maskz_loadu_ps(k, s);
      __m512 x = beta == 0 ? _mm512_mul_ps(va, acc)
                           : _mm512_fmadd_ps(va, acc, _mm512_mul_ps(vb, _mm512_maskz_loadu_ps(k, ci)));
      for (int blk = 1; blk < blocks; blk++) x = _mm512_fmadd_ps(va, _mm512_maskz_loadu_ps(k, s + blk * mn), x);
      _mm512_mask_storeu_ps(ci, k, x);
    }
}

static void sum_blocks(int blocks, int M, int N, float alpha, const float *sums, float beta, float *C, int ldc) {
  sum_blocks_avx512(blocks, M, N, alpha, sums, beta, C, ldc);
}

static const slK_HalfLoops avx512_bf16 = {pack_a_avx512, pack_b_avx512, micro_bf16};

static const slK_HalfLoops *loops_avx512(void) {
  static int have = -1;
  if (have < 0) {
    __builtin_cpu_init();
    have = __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
           __builtin_cpu_supports("avx512dq") && __builtin_cpu_supports("avx512vl") &&
           __builtin_cpu_supports("avx512bf16");
  }
  return have ? &avx512_bf16 : NULL;
}
#else
/* never reached: the K split runs only where the bf16 loops exist */
static void sum_blocks(int blocks, int M, int N, float alpha, const float *sums, float beta, float *C, int ldc) {
  (void)blocks, (void)M, (void)N, (void)alpha, (void)sums, (void)beta, (void)C, (void)ldc;
}
static const slK_HalfLoops *loops_avx512(void) { return NULL; }
static void to_half_avx512(int format, const float *x, uint16_t *out, size_t n) { slK_f32_to_half(format, x, out, n); }
static void to_bf16_hw(const float *x, uint16_t *out, size_t n) { slK_f32_to_half(SLK_BF16, x, out, n); }
static void round_avx512(int format, const float *x, float *out, size_t n) { slK_round_array(format, x, out, n); }
#endif

const slK_HalfLoops *slK_half_loops(void) {
  if (!slK_isa_avx512()) return NULL; /* the portable loops are forced, or there is no AVX-512 */
  return loops_avx512();
}

/* ------------------------------------------------------------------ dispatch */

int slK_half_native(int format) {
  if (format == SLK_BF16) return slK_half_loops() != NULL;
  if (format == SLK_FP16) return slK_isa_avx512();
  return 0;
}

void slK_gemm_half(int format, int trans_a, int trans_b, int M, int N, int K, float alpha, const float *A, int lda,
                   const float *B, const uint16_t *Bh, int ldb, float beta, float *C, int ldc) {
  if (M <= 0 || N <= 0) return;
  if (K <= 0) { /* C = beta C */
    for (int i = 0; i < M; i++)
      for (int j = 0; j < N; j++) C[(long)i * ldc + j] = beta == 0 ? 0.0f : beta * C[(long)i * ldc + j];
    return;
  }
  if (!slK_half_native(format))
    slK_gemm_half_emulated(format, trans_a, trans_b, M, N, K, alpha, A, lda, B, Bh, ldb, beta, C, ldc);
  else if (format == SLK_BF16)
    gemm_bf16(M, N, K, alpha, source(A, NULL, trans_a, lda), source(B, Bh, trans_b, ldb), beta, C, ldc, NULL);
  else gemm_fp16(trans_a, trans_b, M, N, K, alpha, A, lda, B, Bh, ldb, beta, C, ldc);
}

/* where the bf16 kernel runs, the bias and the rounding happen in its last store; elsewhere in two passes */
void slK_gemm_half_bias(int format, int trans_a, int trans_b, int M, int N, int K, const float *A, int lda,
                        const float *B, const uint16_t *Bh, int ldb, const float *bias, int round_out, float *C,
                        int ldc) {
  if (M <= 0 || N <= 0) return;
  slK_HalfEnd end = {bias, round_out};
  if (format == SLK_BF16 && K > 0 && slK_half_native(format)) {
    gemm_bf16(M, N, K, 1.0f, source(A, NULL, trans_a, lda), source(B, Bh, trans_b, ldb), 0.0f, C, ldc, &end);
    return;
  }
  slK_gemm_half(format, trans_a, trans_b, M, N, K, 1.0f, A, lda, B, Bh, ldb, 0.0f, C, ldc);
  for (int i = 0; i < M; i++) {
    float *c = C + (long)i * ldc;
    if (bias)
      for (int j = 0; j < N; j++) c[j] += bias[j];
    if (round_out) slK_round_values(format, c, c, (size_t)N);
  }
}

void slK_gemm_bf16_rounded(int trans_a, int trans_b, int M, int N, int K, float alpha, const uint16_t *Ah, int lda,
                           const uint16_t *Bh, int ldb, float beta, float *C, int ldc) {
  if (M <= 0 || N <= 0) return;
  if (K > 0 && slK_half_native(SLK_BF16)) {
    gemm_bf16(M, N, K, alpha, source(NULL, Ah, trans_a, lda), source(NULL, Bh, trans_b, ldb), beta, C, ldc, NULL);
    return;
  }
  /* elsewhere the operands' exact float32 values through slK_gemm_half */
  int ar = trans_a ? K : M, br = trans_b ? N : K;
  size_t na = ar > 0 ? (size_t)(ar - 1) * lda + (trans_a ? M : K) : 0,
         nb = br > 0 ? (size_t)(br - 1) * ldb + (trans_b ? K : N) : 0;
  float *a = malloc((na + 1) * sizeof *a), *b = malloc((nb + 1) * sizeof *b);
  if (a && b) {
    for (size_t i = 0; i < na; i++) a[i] = slK_bf16_to_f32(Ah[i]);
    for (size_t i = 0; i < nb; i++) b[i] = slK_bf16_to_f32(Bh[i]);
    slK_gemm_half(SLK_BF16, trans_a, trans_b, M, N, K, alpha, a, lda, b, NULL, ldb, beta, C, ldc);
  }
  free(a), free(b);
}

/* A's bits widened into a float32 copy (exact) where a kernel reads float32 A only: fp16's blocked
** packing, and the emulated path (whose rounding of the copy then changes nothing) */
static float *widened(int format, const uint16_t *h, int rows, int cols, int ld) {
  float *out = slK_alloc(sizeof(float) * ((size_t)rows * cols + 1));
  for (int r = 0; out && r < rows; r++)
    slK_half_to_f32(format, h + (size_t)r * ld, out + (size_t)r * cols, (size_t)cols);
  return out;
}

void slK_gemm_half_ex(int format, int trans_a, int trans_b, int M, int N, int K, float alpha, const float *A,
                      const uint16_t *Ah, int lda, const float *B, const uint16_t *Bh, int ldb, float beta,
                      const float *bias, int round_out, float *C, int ldc) {
  if (M <= 0 || N <= 0) return;
  if (format == SLK_BF16 && K > 0 && slK_half_native(format)) {
    slK_HalfEnd end = {bias, round_out};
    gemm_bf16(M, N, K, alpha, source(A, Ah, trans_a, lda), source(B, Bh, trans_b, ldb), beta, C, ldc,
              bias || round_out ? &end : NULL);
    return;
  }
  float *wide = NULL;
  if (Ah) {
    int ar = trans_a ? K : M, ac = trans_a ? M : K;
    wide = widened(format, Ah, ar, ac, lda);
    if (!wide) return;
    A = wide, lda = ac > 0 ? ac : 1;
  }
  slK_gemm_half(format, trans_a, trans_b, M, N, K, alpha, A, lda, B, Bh, ldb, beta, C, ldc);
  slK_free(wide);
  for (int i = 0; (bias || round_out) && i < M; i++) {
    float *c = C + (long)i * ldc;
    if (bias)
      for (int j = 0; j < N; j++) c[j] += bias[j];
    if (round_out) slK_round_values(format, c, c, (size_t)N);
  }
}

void slK_round_values(int format, const float *x, float *out, size_t n) {
  if (format != SLK_FP32 && slK_isa_avx512()) round_avx512(format, x, out, n);
  else slK_round_f32(format, x, out, n);
}

void slK_to_half(int format, const float *x, uint16_t *out, size_t n) {
  if (format == SLK_BF16 && slK_half_loops()) to_bf16_hw(x, out, n);
  else if (slK_isa_avx512()) to_half_avx512(format, x, out, n);
  else slK_f32_to_half(format, x, out, n);
}
