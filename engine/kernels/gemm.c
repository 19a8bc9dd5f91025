/*
** gemm.c - float32 matrix products: C = alpha op(A) op(B) + beta C.
**
** Build: part of the engine; bench/bench_kernels.c times the versions side
** by side (`build/bench_kernels gemm 1024`), tests/unit/test_kernels.c
** checks each against the naive one on odd shapes and every transposition.
**
**   v0 naive      the triple loop, the reference every version is checked
**                 against
**   v1 blocked    GotoBLAS/BLIS loop nest: B in blocks of KC x NC packed
**                 into NR-wide panels, A in blocks of MC x KC packed into
**                 MR-high panels, the 8 x 48 micro-kernel of simd.c on each
**                 pair (AVX-512 when the CPU has it), edges through a small
**                 tile; two threads split the columns (or the rows when
**                 there are few columns). Transpositions cost nothing extra:
**                 they only change the strides the packing reads with. The
**                 packing is vectorised (simd.c: rows along memory
**                 transposed 16 x 16 in registers), the panels kept in the
**                 thread's scratch between calls, C's tile prefetched by
**                 the micro-kernel: 1.01-1.04 of OpenBLAS's rate at
**                 n = 1024..4096 (docs/kernels.md). An operand can be
**                 rounded to IEEE half as it is packed (gemm_half.c's fp16).
**   v2 OpenBLAS   cblas_sgemm on OpenBLAS's own threads
**   v3 team       what slK_sgemm (the graph's dispatch) calls: cblas_sgemm
**                 on one thread per piece, the pieces on the engine's
**                 thread team (below)
**
** The blocked driver also serves the MXINT8 linear layer: its B operand
** can be packed MXINT8 weights, decoded into the panel as they are packed.
*/
#include <stdlib.h>
#include <string.h>

#include "blas.h"
#include "kernels.h"
#include "round.h"
#include "simd.h"
#include "syslab.h"

/* the micro-panel of B (KC x NR) stays in L1 (36 KiB); A's block in L2 */
#define KC SLK_KC
#ifndef MC
#define MC 96
#endif
#ifndef NC
#define NC 1536
#endif

/* ------------------------------------------------- v3: OpenBLAS on the team
**
** The graph's products run on the engine's thread team, OpenBLAS computing
** each piece on one thread. Products and the passes between them then
** share one set of threads. With OpenBLAS's own threads beside the team,
** three or more threads took turns on two cores: after each product
** OpenBLAS's threads wait for the next one by calling sched_yield in a
** loop, which took 16% of the image transformer's training step from the
** team's passes, and on a machine with any other runnable process each
** yield handed a core away for a whole time slice.
**
** A product is cut along the longer of M and N into one piece per thread,
** on multiples of 16 (OpenBLAS's micro-tile): cutting M makes every piece
** pack all of op(B), cutting N all of op(A), so the cut goes where the
** duplicated operand is the smaller one. No piece splits K: each element
** of C is one dot product over the whole of K, computed by OpenBLAS in a
** piece fixed by the shape and the thread count, never by timing, so the
** same inputs give the same numbers. Products below OpenBLAS's own
** threading threshold (M N K <= 4 x 65536) run whole, on the calling
** thread. */

#define SPLIT_MIN (4.0 * 65536)

typedef struct {
  int ta, tb, M, N, K, lda, ldb, ldc, rows, chunk;
  float alpha, beta;
  const float *A, *B;
  float *C;
} Pieces;

static void split_piece(void *ctx, int piece, int worker) {
  const Pieces *s = ctx;
  int at = piece * s->chunk, len = (s->rows ? s->M : s->N) - at;
  if (len > s->chunk) len = s->chunk;
  if (len <= 0) return;
  if (s->rows) /* rows at..at+len of op(A) and C */
    slK_blas_sgemm(s->ta, s->tb, len, s->N, s->K, s->alpha, s->A + (s->ta ? at : (long)at * s->lda), s->lda, s->B,
                   s->ldb, s->beta, s->C + (long)at * s->ldc, s->ldc);
  else /* columns at..at+len of op(B) and C */
    slK_blas_sgemm(s->ta, s->tb, s->M, len, s->K, s->alpha, s->A, s->lda, s->B + (s->tb ? (long)at * s->ldb : at),
                   s->ldb, s->beta, s->C + at, s->ldc);
  (void)worker;
}

void slK_sgemm(int trans_a, int trans_b, int M, int N, int K, float alpha, const float *A, int lda, const float *B,
               int ldb, float beta, float *C, int ldc) {
  slK_blas_init(); /* OpenBLAS's kernels for this CPU, on one thread, once (blas.c) */
  int t = slK_team_size(), rows = M >= N, len = rows ? M : N;
  if (t < 2 || (double)M * N * K <= SPLIT_MIN || len < 32) {
    slK_blas_sgemm(trans_a, trans_b, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc);
    return;
  }
  int chunk = (len + t - 1) / t;
  chunk = (chunk + 15) / 16 * 16;
  Pieces s = {trans_a, trans_b, M, N, K, lda, ldb, ldc, rows, chunk, alpha, beta, A, B, C};
  slK_parallel((len + chunk - 1) / chunk, t, split_piece, &s);
}

const char *slK_gemm_name(slK_GemmImpl impl) {
  static const char *const names[SLK_GEMM_NUM] = {"naive", "blocked", "openblas"};
  return impl < SLK_GEMM_NUM ? names[impl] : "?";
}

/* ------------------------------------------------------------ v0: naive */

static void gemm_naive(int M, int N, int K, float alpha, const slK_Operand *A, const slK_Operand *B, float beta,
                       float *C, long ldc) {
  /* a row of n = 4096 takes tens of milliseconds: an interrupt stops it between rows (the caller
  ** then discards C, sl_interrupted() still set) */
  for (int i = 0; i < M && !sl_interrupted(); i++)
    for (int j = 0; j < N; j++) {
      float sum = 0;
      for (int k = 0; k < K; k++) sum += A->p[i * A->rs + k * A->cs] * B->p[k * B->rs + j * B->cs];
      C[i * ldc + j] = alpha * sum + (beta == 0 ? 0 : beta * C[i * ldc + j]);
    }
}

/* ---------------------------------------------------------- v1: blocked */

/* mc x kc of alpha op(A) from (i0, k0) into MR-high panels, zero-padded (simd.c) */
static void pack_a(const slK_Operand *A, int i0, int mc, int k0, int kc, float alpha, float *dst) {
  slK_simd()->pack_a(A->p + (long)i0 * A->rs + (long)k0 * A->cs, A->rs, A->cs, mc, kc, alpha, A->round == SLK_FP16,
                     dst);
}

/* kc x nc of op(B) from (k0, j0) into NR-wide panels, zero-padded (simd.c); MXINT8 weights decoded */
static void pack_b(const slK_Operand *B, int k0, int kc, int j0, int nc, float *dst) {
  const slK_Simd *simd = slK_simd();
  long at = (long)k0 * B->rs + (long)j0 * B->cs;
  if (B->m) simd->pack_mx(B->m + j0 * B->mrs, B->s + j0 * (B->mrs / B->g), B->g, B->mrs, k0, kc, nc, dst);
  else if (B->h) simd->pack_b(NULL, B->h + at, B->rs, B->cs, kc, nc, 1, dst);
  else simd->pack_b(B->p + at, NULL, B->rs, B->cs, kc, nc, B->round == SLK_FP16, dst);
}

/* one thread's product: C (M x N) from A (M x K) and B (K x N) */
static void blocked_one(int M, int N, int K, float alpha, const slK_Operand *A, const slK_Operand *B, float beta,
                        float *C, long ldc, float *abuf, float *bbuf) {
  const slK_Simd *simd = slK_simd();
  if (beta != 0 && beta != 1)
    for (int i = 0; i < M; i++)
      for (int j = 0; j < N; j++) C[i * ldc + j] *= beta;
  if (K == 0 && beta == 0)
    for (int i = 0; i < M; i++) memset(C + i * ldc, 0, (size_t)N * sizeof *C);
  float tile[SLK_MR * SLK_NR];
  for (int jc = 0; jc < N; jc += NC) {
    int nc = N - jc < NC ? N - jc : NC;
    for (int pc = 0; pc < K; pc += KC) {
      int kc = K - pc < KC ? K - pc : KC, acc = pc > 0 || beta != 0;
      pack_b(B, pc, kc, jc, nc, bbuf);
      for (int ic = 0; ic < M; ic += MC) {
        int mc = M - ic < MC ? M - ic : MC;
        pack_a(A, ic, mc, pc, kc, alpha, abuf);
        for (int jr = 0; jr < nc; jr += SLK_NR) {
          const float *bp = bbuf + (size_t)jr * kc;
          int n = nc - jr < SLK_NR ? nc - jr : SLK_NR;
          for (int ir = 0; ir < mc; ir += SLK_MR) {
            const float *ap = abuf + (size_t)ir * kc;
            int m = mc - ir < SLK_MR ? mc - ir : SLK_MR;
            float *c = C + (long)(ic + ir) * ldc + jc + jr;
            if (m == SLK_MR && n == SLK_NR) {
              simd->micro(kc, ap, bp, c, ldc, acc);
              continue;
            }
            if (n <= 32) simd->micro_narrow(kc, ap, bp, tile, SLK_NR, (n + 15) / 16); /* 16 or 32 columns */
            else simd->micro(kc, ap, bp, tile, SLK_NR, 0);
            for (int i = 0; i < m; i++)
              for (int j = 0; j < n; j++) c[i * ldc + j] = (acc ? c[i * ldc + j] : 0) + tile[i * SLK_NR + j];
          }
        }
      }
    }
  }
}

typedef struct {
  int M, N, K, parts, by_rows;
  float alpha, beta;
  const slK_Operand *A, *B;
  float *C;
  long ldc;
} Split;

static void blocked_part(void *ctx, int part, int worker) {
  Split *s = ctx;
  int total = s->by_rows ? s->M : s->N, unit = s->by_rows ? SLK_MR : SLK_NR;
  int units = (total + unit - 1) / unit, lo = units * part / s->parts * unit, hi = units * (part + 1) / s->parts * unit;
  if (hi > total) hi = total;
  if (lo >= hi) return;
  slK_Operand a = *s->A, b = *s->B;
  float *c = s->C;
  int M = s->M, N = s->N;
  if (s->by_rows) {
    a.p += lo * a.rs;
    c += lo * s->ldc;
    M = hi - lo;
  } else {
    if (b.m) b.m += lo * b.mrs, b.s += lo * (b.mrs / b.g);
    else if (b.h) b.h += lo * b.cs;
    else b.p += lo * b.cs;
    c += lo;
    N = hi - lo;
  }
  /* panels as large as this part needs: a short product (the MXINT8 layer's 128 rows) keeps a small scratch */
  size_t kc = (size_t)(s->K < KC ? s->K : KC), mc = (size_t)(M < MC ? M : MC), nc = (size_t)(N < NC ? N : NC);
  size_t na = (mc + SLK_MR) * (kc + 1), nb = (nc + SLK_NR) * (kc + 1);
  na = (na + 15) / 16 * 16, nb = (nb + 15) / 16 * 16;
  float *abuf = slK_scratch(sizeof(float) * (na + nb));
  if (!abuf) return;
  blocked_one(M, N, s->K, s->alpha, &a, &b, s->beta, c, s->ldc, abuf, abuf + na);
  slK_scratch_release(abuf);
  (void)worker;
}

void slK_gemm_blocked(int M, int N, int K, float alpha, const slK_Operand *A, const slK_Operand *B, float beta,
                      float *C, long ldc, int threads) {
  if (M <= 0 || N <= 0) return;
  /* a second worker pays for its wake-up and its own packing only with a few million multiply-adds each */
  double work = (double)M * N * K;
  if (threads > 1 && work < 2e6 * threads) threads = work < 4e6 ? 1 : 2;
  Split s = {M, N, K, threads, 0, alpha, beta, A, B, C, ldc};
  s.by_rows = N < SLK_NR * threads * 2 && M >= SLK_MR * threads * 2;
  slK_parallel(threads, threads, blocked_part, &s);
}

/* ------------------------------------------------------------- dispatch */

void slK_sgemm_with(slK_GemmImpl impl, int trans_a, int trans_b, int M, int N, int K, float alpha, const float *A,
                    int lda, const float *B, int ldb, float beta, float *C, int ldc) {
  if (impl == SLK_GEMM_OPENBLAS) { /* on OpenBLAS's own threads, for comparison */
    slK_blas_threads(slK_threads());
    slK_blas_sgemm(trans_a, trans_b, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc);
    slK_blas_threads(1);
    return;
  }
  slK_Operand a = {A, trans_a ? 1 : lda, trans_a ? lda : 1, NULL, NULL, 0, 0};
  slK_Operand b = {B, trans_b ? 1 : ldb, trans_b ? ldb : 1, NULL, NULL, 0, 0};
  if (impl == SLK_GEMM_NAIVE) gemm_naive(M, N, K, alpha, &a, &b, beta, C, ldc);
  else slK_gemm_blocked(M, N, K, alpha, &a, &b, beta, C, ldc, slK_threads());
}
