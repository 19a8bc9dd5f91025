/*
** attention.c - multi-head scaled dot-product attention, float32, on the CPU.
**
** Build: part of the engine. tests/unit/test_kernels.c checks every version
** against v0 (odd shapes, L = 1, causal or not, fully masked rows) and the
** contract of the CS336 systems assignment's attention tests (numerics §7.6); bench/bench_kernels.c times them
** (`build/bench_kernels attention 1024`).
**
**   v0 naive   op by op, as PyTorch's eager code runs it: S = QK^T per
**              (batch, head) through OpenBLAS into a batch x heads x N x N
**              array, then one pass each to scale, to mask and to take the
**              softmax into a second N x N array P (vector exp), and O = PV
**              through OpenBLAS. The backward keeps P from the forward (the
**              training step) or recomputes it from L (slK_attention_backward),
**              then dV = P^T dO, dP = dO V^T, dS = P (dP - rowsum(dP P)),
**              dQ = t dS K, dK = t dS^T Q, each a separate pass or product.
**   v1 fused   FlashAttention-2 (numerics §7.2-7.4): query tiles outside,
**              key tiles inside, online softmax, O divided by l once, only
**              L = m + ln l saved; nothing N x N exists. The backward
**              recomputes P = exp(S - L) tile by tile, with D = rowsum(dO O).
**
** slK_Attn.format = SLK_BF16 rounds every product's operands to bfloat16
** (float32 sums): v0 through slK_gemm_half, v1 in attention_half.c with
** vdpbf16ps, or, on a CPU without it, here on rounded copies of Q, K, V, dO
** with P and dS rounded in their panels.
**
** How v1 is laid out. Scores are computed transposed, S^T = K Q^T, into
** "lane panels" of 48 queries (one AVX-512 vector lane per query, three
** vectors per key row), so that the softmax's running max and sum are
** vectors across queries, never horizontal reductions. Every product is the
** 8 x 48 micro-kernel of simd.c. K and V are read in place (micro_a: eight
** key rows of K, or eight features of each key row for V^T and K^T), only a
** head's last keys short of 8 packed with zeros; a head dimension that is
** not a multiple of 8 packs K and V instead (once per head in the forward).
** Q^T (scaled by log2(e)/sqrt(d)) is packed once per query tile; P^T, in its
** lane panels, is already the packed B operand of O^T += V^T P^T. The
** softmax runs in base 2 (2^x is cheaper than e^x; L is stored in natural
** log). The backward needs P and dS with keys as columns for dV^T = dO^T P
** and dK^T = t Q^T dS, which one transposition per tile provides.
** Jobs are (batch, head, query tile) in the forward and (batch, head) in the
** backward (each job owns its head's dK and dV, as PyTorch's CPU kernel
** does), spread over slK_threads() threads of the thread team (parallel.c).
** With fewer heads than threads a head's query tiles are split into groups,
** each with its own dK, dV accumulators, added in group order afterwards.
*/
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "attention_half.h"
#include "attention_tiles.h"
#include "gemm_half.h"
#include "kernels.h"
#include "round.h"
#include "simd.h"

const char *slK_attention_name(slK_AttnImpl impl) {
  static const char *const names[SLK_ATTN_NUM] = {"naive", "fused"};
  return impl < SLK_ATTN_NUM ? names[impl] : "?";
}

void slK_attention_contiguous(slK_Attn *a, int batch, int heads, int nq, int nk, int dim, int causal) {
  memset(a, 0, sizeof *a);
  a->batch = batch, a->heads = heads, a->nq = nq, a->nk = nk, a->dim = dim, a->causal = causal;
  a->q_row = a->k_row = dim;
  a->q_head = (long)nq * dim, a->k_head = (long)nk * dim;
  a->q_batch = a->q_head * heads, a->k_batch = a->k_head * heads;
}

static int kept(const slK_Attn *a, int b, int q, int k) {
  if (a->causal && k > q) return 0;
  return !a->key_mask || a->key_mask[(long)b * a->nk + k] != 0;
}

static int mask_any(const slK_Attn *a) { return a->causal || a->key_mask; }

static double workspace32(slK_AttnImpl impl, const slK_Attn *a, int backward) {
  double bh = (double)a->batch * a->heads, f = sizeof(float);
  if (impl == SLK_ATTN_NAIVE) return 2.0 * bh * a->nq * a->nk * f; /* S and P, or P and dP */
  double nk = up(a->nk, LANES), d8 = up(a->dim, SLK_MR), per;
  if (!backward) per = (double)BQ * a->dim + (double)BQ * BK + (double)BQ * d8 + 3.0 * BQ + SLK_MR * a->dim + 64;
  else if (a->dim % SLK_MR == 0) per = 2 * nk * d8 + 4.0 * BQ * d8 + 4.0 * BQ * BK + 4.0 * BQ + 2.0 * SLK_MR * a->dim;
  else per = 5 * nk * d8 + 4.0 * BQ * d8 + 4.0 * BQ * BK + 4.0 * BQ;
  int threads = slK_threads(), heads = a->batch * a->heads, tiles = (a->nq + BQ - 1) / BQ;
  double split = 0; /* the backward's per-group dK, dV when there are fewer heads than threads */
  if (backward && heads > 0 && heads < threads) {
    int groups = (threads + heads - 1) / heads;
    split = 2.0 * (nk * d8 + 64) * heads * (groups < tiles ? groups : tiles);
  }
  /* the forward reads K and V in place, or (dim not a multiple of 8) packs
  ** them once per head, shared by the threads */
  double shared = backward || a->dim % SLK_MR == 0 ? 0 : (double)heads * (nk * a->dim + nk * d8 + 128);
  return (threads * per + split + shared) * f;
}

static size_t extent(const slK_Attn *a, int isq);

double slK_attention_workspace(slK_AttnImpl impl, const slK_Attn *a, int backward) {
  if (impl != SLK_ATTN_FUSED || a->format != SLK_BF16) return workspace32(impl, a, backward);
  if (slK_half_loops()) return slK_attention_half_workspace(a, backward);
  /* the float32 kernel on rounded copies of Q, K, V (and dO) */
  return workspace32(impl, a, backward) + sizeof(float) * ((backward ? 2.0 : 1.0) * extent(a, 1) + 2.0 * extent(a, 0));
}

/* ============================================================ v0: naive */

/* a pass over the rows of batch x heads x nq, in 64 jobs across the threads */
typedef struct Rows Rows;
struct Rows {
  const slK_Attn *a;
  float *s, *p, *lse;
  float scale;
  void (*row)(Rows *R, long r, float *s);
};

static void row_scale(Rows *R, long r, float *s) {
  for (int k = 0; k < R->a->nk; k++) s[k] *= R->scale;
}

static void row_mask(Rows *R, long r, float *s) {
  const slK_Attn *a = R->a;
  int q = (int)(r % a->nq), b = (int)(r / a->nq / a->heads);
  for (int k = 0; k < a->nk; k++)
    if (!kept(a, b, q, k)) s[k] = -INFINITY;
}

/* P = softmax(S) row by row, and L = max + ln(sum); a fully masked row gives P = 0, L = 0 */
static void row_softmax(Rows *R, long r, float *s) {
  int n = R->a->nk;
  float *p = R->p + r * n, m = -INFINITY;
  for (int k = 0; k < n; k++) m = s[k] > m ? s[k] : m;
  if (m == -INFINITY) {
    memset(p, 0, (size_t)n * sizeof *p);
    R->lse[r] = 0;
    return;
  }
  for (int k = 0; k < n; k++) p[k] = s[k] - m;
  slK_vexp(p, p, (size_t)n);
  double sum = 0;
  for (int k = 0; k < n; k++) sum += p[k];
  float inv = (float)(1.0 / sum);
  for (int k = 0; k < n; k++) p[k] *= inv;
  R->lse[r] = m + (float)log(sum);
}

/* backward recomputation: P = exp(S - L) */
static void row_exp_lse(Rows *R, long r, float *s) {
  for (int k = 0; k < R->a->nk; k++) s[k] -= R->lse[r];
  slK_vexp(s, s, (size_t)R->a->nk);
}

/* softmax backward: dS = P (dP - rowsum(dP P)), in place in dP (held in s) */
static void row_softmax_grad(Rows *R, long r, float *dp) {
  const float *p = R->p + r * R->a->nk;
  double dot = 0;
  for (int k = 0; k < R->a->nk; k++) dot += (double)dp[k] * p[k];
  for (int k = 0; k < R->a->nk; k++) dp[k] = p[k] * (dp[k] - (float)dot);
}

static void rows_job(void *ctx, int job, int worker) {
  Rows *R = ctx;
  long rows = (long)R->a->batch * R->a->heads * R->a->nq, per = (rows + 63) / 64;
  for (long r = job * per; r < rows && r < (job + 1) * per; r++) R->row(R, r, R->s + r * R->a->nk);
  (void)worker;
}

static void pass(void (*row)(Rows *, long, float *), Rows *R) {
  R->row = row;
  slK_parallel(64, slK_threads(), rows_job, R);
}

/* a product of the naive version: float32 (OpenBLAS), or with a->format = SLK_BF16 its operands rounded to
** bfloat16 and the sums in float32 (gemm_half.c: vdpbf16ps, or the emulated path) */
static void product(const slK_Attn *a, int ta, int tb, int M, int N, int K, float alpha, const float *A, int lda,
                    const float *B, int ldb, float beta, float *C, int ldc) {
  if (a->format == SLK_BF16) slK_gemm_half(SLK_BF16, ta, tb, M, N, K, alpha, A, lda, B, NULL, ldb, beta, C, ldc);
  else slK_sgemm(ta, tb, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc);
}

/* S = QK^T into s (batch x heads x nq x nk), one OpenBLAS product per head */
static void naive_scores(const slK_Attn *a, const float *q, const float *k, float *s) {
  for (int b = 0; b < a->batch; b++)
    for (int h = 0; h < a->heads; h++)
      product(a, SLK_N, SLK_T, a->nq, a->nk, a->dim, 1.0f, qh(a, q, b, h), (int)a->q_row, kh(a, k, b, h), (int)a->k_row,
              0.0f, s + ((long)b * a->heads + h) * a->nq * a->nk, a->nk);
}

/* the forward; P is returned (caller frees with slK_free) when keep_p */
static int naive_forward(const slK_Attn *a, const float *q, const float *k, const float *v, float *o, float *lse,
                         float **keep_p) {
  size_t nn = (size_t)a->batch * a->heads * a->nq * a->nk;
  float *s = slK_alloc(nn * sizeof *s), *p = slK_alloc(nn * sizeof *p);
  if (!s || !p) {
    slK_free(s);
    slK_free(p);
    return -1;
  }
  Rows R = {a, s, p, lse, scale_of(a), NULL};
  naive_scores(a, q, k, s);
  pass(row_scale, &R);
  if (mask_any(a)) pass(row_mask, &R);
  pass(row_softmax, &R);
  slK_free(s);
  for (int b = 0; b < a->batch; b++)
    for (int h = 0; h < a->heads; h++)
      product(a, SLK_N, SLK_N, a->nq, a->dim, a->nk, 1.0f, p + ((long)b * a->heads + h) * a->nq * a->nk, a->nk,
              kh(a, v, b, h), (int)a->k_row, 0.0f, (float *)qh(a, o, b, h), (int)a->q_row);
  if (keep_p) *keep_p = p;
  else slK_free(p);
  return 0;
}

static int naive_backward_p(const slK_Attn *a, const float *q, const float *k, const float *v, const float *dout,
                            float *p, float *dq, float *dk, float *dv) {
  size_t nn = (size_t)a->batch * a->heads * a->nq * a->nk;
  float *dp = slK_alloc(nn * sizeof *dp), t = scale_of(a);
  if (!dp) return -1;
  for (int b = 0; b < a->batch; b++)
    for (int h = 0; h < a->heads; h++) {
      const float *ph = p + ((long)b * a->heads + h) * a->nq * a->nk;
      float *dph = dp + ((long)b * a->heads + h) * a->nq * a->nk;
      product(a, SLK_T, SLK_N, a->nk, a->dim, a->nq, 1.0f, ph, a->nk, qh(a, dout, b, h), (int)a->q_row, 1.0f,
              (float *)kh(a, dv, b, h), (int)a->k_row);
      product(a, SLK_N, SLK_T, a->nq, a->nk, a->dim, 1.0f, qh(a, dout, b, h), (int)a->q_row, kh(a, v, b, h),
              (int)a->k_row, 0.0f, dph, a->nk);
    }
  Rows R = {a, dp, p, NULL, t, NULL};
  pass(row_softmax_grad, &R);
  for (int b = 0; b < a->batch; b++)
    for (int h = 0; h < a->heads; h++) {
      const float *dsh = dp + ((long)b * a->heads + h) * a->nq * a->nk;
      product(a, SLK_N, SLK_N, a->nq, a->dim, a->nk, t, dsh, a->nk, kh(a, k, b, h), (int)a->k_row, 1.0f,
              (float *)qh(a, dq, b, h), (int)a->q_row);
      product(a, SLK_T, SLK_N, a->nk, a->dim, a->nq, t, dsh, a->nk, qh(a, q, b, h), (int)a->q_row, 1.0f,
              (float *)kh(a, dk, b, h), (int)a->k_row);
    }
  slK_free(dp);
  return 0;
}

static int naive_backward(const slK_Attn *a, const float *q, const float *k, const float *v, const float *dout,
                          const float *lse, float *dq, float *dk, float *dv) {
  size_t nn = (size_t)a->batch * a->heads * a->nq * a->nk;
  float *p = slK_alloc(nn * sizeof *p);
  if (!p) return -1;
  Rows R = {a, p, NULL, (float *)lse, scale_of(a), NULL};
  naive_scores(a, q, k, p);
  pass(row_scale, &R);
  if (mask_any(a)) pass(row_mask, &R);
  pass(row_exp_lse, &R);
  int rc = naive_backward_p(a, q, k, v, dout, p, dq, dk, dv);
  slK_free(p);
  return rc;
}

/* the training step of eager code: the forward keeps P for the backward */
int slK_attention_naive_step(const slK_Attn *a, const float *q, const float *k, const float *v, float *o, float *lse,
                             const float *dout, float *dq, float *dk, float *dv) {
  float *p = NULL;
  if (naive_forward(a, q, k, v, o, lse, &p) != 0) return -1;
  int rc = naive_backward_p(a, q, k, v, dout, p, dq, dk, dv);
  slK_free(p);
  return rc;
}

/* ============================================================ v1: fused */

/* The packers read each row of X once, contiguously, and write the panel
** with a short stride that stays in L1; padding is written apart, so the
** copy loops carry no bounds tests. */

/* X as A panels of 8 rows over the features: dst[(r/8)*8*d + f*8 + r%8] */
static void pack_rows8(const float *x, long row, int n, int d, int n8, float *dst) {
  for (int r = 0; r < n8; r++) {
    float *p = dst + (long)(r / SLK_MR) * SLK_MR * d + r % SLK_MR;
    if (r >= n) {
      for (int f = 0; f < d; f++) p[f * SLK_MR] = 0;
      continue;
    }
    const float *src = x + (long)r * row;
    for (int f = 0; f < d; f++) p[f * SLK_MR] = src[f];
  }
}

/* X^T as A panels of 8 features over n rows: dst[(f/8)*8*n8 + r*8 + f%8] */
static void pack_cols8(const float *x, long row, int n, int n8, int d, float *dst, float alpha) {
  int d8 = up(d, SLK_MR);
  for (int r = 0; r < n8; r++) {
    const float *src = x + (long)r * row;
    for (int fp = 0; fp < d8; fp += SLK_MR) {
      float *p = dst + (long)fp * n8 + r * SLK_MR;
      if (r < n && fp + SLK_MR <= d)
        for (int i = 0; i < SLK_MR; i++) p[i] = alpha * src[fp + i];
      else
        for (int i = 0; i < SLK_MR; i++) p[i] = r < n && fp + i < d ? alpha * src[fp + i] : 0;
    }
  }
}

/* X^T as B lane panels of 48 rows over the features: dst[(r/48)*48*d + f*48 + r%48] */
static void pack_lanes(const float *x, long row, int n, int np, int d, float *dst, float alpha) {
  for (int r = 0; r < np * LANES; r++) {
    float *p = dst + (long)(r / LANES) * LANES * d + r % LANES;
    if (r >= n) {
      for (int f = 0; f < d; f++) p[f * LANES] = 0;
      continue;
    }
    const float *src = x + (long)r * row;
    for (int f = 0; f < d; f++) p[f * LANES] = alpha * src[f];
  }
}

/* rows [key, key+8) of S^T = X B for a lane panel B: X (keys as rows, row
** stride `row`, n rows) read in place, or its last rows packed into tail
** with zeros past n */
static void rows_times(const slK_Simd *simd, const float *X, long row, int n, int key, int d, const float *bp,
                       float *out, float *tail) {
  if (key + SLK_MR <= n) {
    simd->micro_a(d, X + (long)key * row, row, 1, bp, out, LANES, 0);
    return;
  }
  pack_rows8(X + (long)key * row, row, n - key, d, SLK_MR, tail);
  simd->micro(d, tail, bp, out, LANES, 0);
}

typedef struct {
  float *qt, *s, *ot, *m, *l, *c;
  float *ktail; /* the last keys of a head, short of a panel of 8, packed */
} FwdWork;

typedef struct {
  const slK_Attn *a;
  const float *q, *k, *v;
  float *o, *lse;
  int tiles, nk8;
  int direct;     /* K and V read in place (dim a multiple of 8); else packed: */
  float *kp, *vt; /* every head's K rows by 8 and V^T features by 8, packed once */
  FwdWork *w;
  int round; /* bf16 products on a CPU without them: P rounded in its panel (Q, K, V come rounded) */
} Fwd;

static size_t kp_floats(const Fwd *F) { return (size_t)F->nk8 * F->a->dim + 64; }
static size_t vt_floats(const Fwd *F) { return (size_t)F->nk8 * up(F->a->dim, SLK_MR) + 64; }

/* the first pass: K and V of head `job`, packed for all the tiles that use them */
static void fwd_pack_job(void *ctx, int job, int worker) {
  Fwd *F = ctx;
  const slK_Attn *a = F->a;
  int b = job / a->heads, h = job % a->heads;
  pack_rows8(kh(a, F->k, b, h), a->k_row, a->nk, a->dim, F->nk8, F->kp + (size_t)job * kp_floats(F));
  pack_cols8(kh(a, F->v, b, h), a->k_row, a->nk, F->nk8, a->dim, F->vt + (size_t)job * vt_floats(F), 1.0f);
  (void)worker;
}

static void fwd_job(void *ctx, int job, int worker) {
  Fwd *F = ctx;
  const slK_Attn *a = F->a;
  const slK_Simd *simd = slK_simd();
  FwdWork *w = &F->w[worker];
  int bh = job / F->tiles, b = bh / a->heads, h = bh % a->heads, d = a->dim, d8 = up(d, SLK_MR), nk8 = F->nk8;
  int q0 = job % F->tiles * BQ, qn = a->nq - q0 < BQ ? a->nq - q0 : BQ, np = (qn + LANES - 1) / LANES;
  const float *K = kh(a, F->k, b, h), *V = kh(a, F->v, b, h), *kp = NULL, *vt = NULL;
  if (!F->direct) kp = F->kp + (size_t)bh * kp_floats(F), vt = F->vt + (size_t)bh * vt_floats(F);
  pack_lanes(qh(a, F->q, b, h) + (long)q0 * a->q_row, a->q_row, qn, np, d, w->qt, scale_of(a) * (float)M_LOG2E);
  for (int i = 0; i < np * LANES; i++) w->m[i] = -INFINITY, w->l[i] = 0;
  int kend = a->nk;
  if (a->causal && q0 + qn < kend) kend = q0 + qn; /* key tiles past the last query are skipped */
  for (int k0 = 0; k0 < kend; k0 += BK) {
    int kb = up(kend - k0 < BK ? kend - k0 : BK, SLK_MR), kc = kend - k0 < kb ? kend - k0 : kb;
    for (int lp = 0; lp < np; lp++) {
      float *s = w->s + (size_t)lp * BK * LANES, *ot = w->ot + (size_t)lp * d8 * LANES;
      const float *qt = w->qt + (size_t)lp * d * LANES;
      for (int r = 0; r < kb; r += SLK_MR)
        if (F->direct) rows_times(simd, K, a->k_row, a->nk, k0 + r, d, qt, s + r * LANES, w->ktail);
        else simd->micro(d, kp + (long)(k0 + r) * d, qt, s + r * LANES, LANES, 0);
      mask_panel(a, b, s, kb, k0, q0 + lp * LANES);
      simd->softmax_panel(s, kb, w->m + lp * LANES, w->l + lp * LANES, w->c);
      if (F->round) slK_round_array(SLK_BF16, s, s, (size_t)kb * LANES);
      if (k0 > 0) simd->scale_panel(ot, d8, w->c); /* the first tile's O is still 0 */
      /* O^T += V^T P^T over the keys that exist (past them P is 0) */
      for (int fp = 0; fp < d8; fp += SLK_MR)
        if (F->direct) simd->micro_a(kc, V + k0 * a->k_row + fp, 1, a->k_row, s, ot + fp * LANES, LANES, k0 > 0);
        else simd->micro(kc, vt + (long)fp * nk8 + (long)k0 * SLK_MR, s, ot + fp * LANES, LANES, k0 > 0);
    }
  }
  store_rows(a, bh, q0, qn, w->l, w->m, w->ot, F->o, F->lse);
}

/* K and V can be read in place when every panel of 8 features is whole */
static int direct_ok(const slK_Attn *a) { return a->dim % SLK_MR == 0; }

static void free_all(float **ptrs, int n) {
  for (int i = 0; i < n; i++) slK_free(ptrs[i]);
}

static int fused_forward(const slK_Attn *a, const float *q, const float *k, const float *v, float *o, float *lse,
                         int round) {
  int tiles = (a->nq + BQ - 1) / BQ, jobs = a->batch * a->heads * tiles;
  if (jobs == 0) return 0;
  int threads = pick_threads(a, jobs), nk8 = up(a->nk, LANES), d8 = up(a->dim, SLK_MR), rc = 0;
  FwdWork w[64];
  for (int t = 0; t < threads; t++) {
    float *p[7] = {w[t].qt = slK_alloc(sizeof(float) * (size_t)BQ * a->dim + 64),
                   w[t].s = slK_alloc(sizeof(float) * (size_t)BQ * BK),
                   w[t].ot = slK_alloc(sizeof(float) * (size_t)BQ * d8),
                   w[t].m = slK_alloc(sizeof(float) * BQ),
                   w[t].l = slK_alloc(sizeof(float) * BQ),
                   w[t].c = slK_alloc(sizeof(float) * LANES),
                   w[t].ktail = slK_alloc(sizeof(float) * (size_t)SLK_MR * a->dim + 64)};
    for (int i = 0; i < 7; i++) rc |= !p[i];
  }
  int heads = a->batch * a->heads;
  Fwd F = {a, q, k, v, o, lse, tiles, nk8, direct_ok(a), NULL, NULL, w, round};
  if (!F.direct) {
    /* K and V packed once per head, not once per thread that meets the head */
    F.kp = slK_alloc(sizeof(float) * kp_floats(&F) * heads);
    F.vt = slK_alloc(sizeof(float) * vt_floats(&F) * heads);
    rc |= !F.kp || !F.vt;
    if (rc == 0) slK_parallel(heads, threads, fwd_pack_job, &F);
  }
  if (rc == 0) slK_parallel(jobs, threads, fwd_job, &F);
  for (int t = 0; t < threads; t++) {
    float *p[7] = {w[t].qt, w[t].s, w[t].ot, w[t].m, w[t].l, w[t].c, w[t].ktail};
    free_all(p, 7);
  }
  slK_free(F.kp), slK_free(F.vt);
  return rc ? -1 : 0;
}

/* --------------------------------------------------------- fused backward */

typedef struct {
  float *kp, *vp, *kt;  /* dim not a multiple of 8: K and V rows by 8 over features; K^T features by 8 over keys */
  float *ktail, *vtail; /* else K and V are read in place, but for their last keys short of 8 */
  float *dkt, *dvt;     /* dK^T, dV^T: [key/48][feature][48] */
  float *qt, *dot, *qa, *doa; /* Q^T, dO^T lane panels (B); Q^T, dO^T features by 8 over queries (A) */
  float *s, *dp, *pb, *dsb;   /* P^T, dS^T in lane panels; P, dS with keys as columns */
  float *dqt, *lse, *dd;
} BwdWork;

typedef struct {
  const slK_Attn *a;
  const float *q, *k, *v, *o, *dout, *lse;
  float *dq, *dk, *dv;
  int groups, nk48, direct;
  size_t kd; /* floats in one dK^T or dV^T accumulator */
  BwdWork *w;
  float *part;        /* groups > 1: each job's own dK^T, dV^T, added in job order afterwards */
  const float *dprod; /* dO as the products take it (rounded when round), dout for D */
  int round;          /* bf16 products on a CPU without them: P and dS rounded in their panels */
} Bwd;

/* lane panels [np][rows][48] -> key columns [rows/48][np*48][48], 48 x 48 blocks at a time */
static void transpose_panels(const slK_Simd *simd, const float *src, int np, int rows, float *dst) {
  int nq = np * LANES;
  for (int lp = 0; lp < np; lp++)
    for (int r = 0; r < rows; r += LANES)
      simd->transpose48(src + ((size_t)lp * BK + r) * LANES,
                        dst + (size_t)(r / LANES) * nq * LANES + (size_t)lp * LANES * LANES);
}

static void bwd_job(void *ctx, int job, int worker) {
  Bwd *B = ctx;
  const slK_Attn *a = B->a;
  const slK_Simd *simd = slK_simd();
  BwdWork *w = &B->w[worker];
  int bh = job / B->groups, g = job % B->groups, b = bh / a->heads, h = bh % a->heads;
  int d = a->dim, d8 = up(d, SLK_MR), nk48 = B->nk48, tiles = (a->nq + BQ - 1) / BQ;
  float t = scale_of(a);
  const float *K = kh(a, B->k, b, h), *V = kh(a, B->v, b, h);
  const float *Q = qh(a, B->q, b, h), *O = qh(a, B->o, b, h), *dO = qh(a, B->dout, b, h);
  const float *dOp = qh(a, B->dprod, b, h), *L = B->lse + (long)bh * a->nq;
  if (!B->direct) {
    pack_rows8(K, a->k_row, a->nk, d, nk48, w->kp);
    pack_rows8(V, a->k_row, a->nk, d, nk48, w->vp);
    pack_cols8(K, a->k_row, a->nk, nk48, d, w->kt, 1.0f);
  }
  float *dkt = B->part ? B->part + (size_t)job * 2 * B->kd : w->dkt, *dvt = B->part ? dkt + B->kd : w->dvt;
  memset(dkt, 0, sizeof(float) * (size_t)nk48 * d8);
  memset(dvt, 0, sizeof(float) * (size_t)nk48 * d8);
  for (int tile = g; tile < tiles; tile += B->groups) {
    int q0 = tile * BQ, qn = a->nq - q0 < BQ ? a->nq - q0 : BQ, np = (qn + LANES - 1) / LANES, nqp = np * LANES;
    pack_lanes(Q + (long)q0 * a->q_row, a->q_row, qn, np, d, w->qt, t * (float)M_LOG2E); /* scores in base 2 */
    pack_lanes(dOp + (long)q0 * a->q_row, a->q_row, qn, np, d, w->dot, 1.0f);
    pack_cols8(Q + (long)q0 * a->q_row, a->q_row, qn, nqp, d, w->qa, t);
    pack_cols8(dOp + (long)q0 * a->q_row, a->q_row, qn, nqp, d, w->doa, 1.0f);
    backward_rows(a, O, dO, L, q0, qn, nqp, w->dd, w->lse);
    memset(w->dqt, 0, sizeof(float) * (size_t)np * d8 * LANES);
    int kend = a->nk;
    if (a->causal && q0 + qn < kend) kend = q0 + qn;
    for (int k0 = 0; k0 < kend; k0 += BK) {
      int kb = up(kend - k0 < BK ? kend - k0 : BK, LANES), kc = kend - k0 < kb ? kend - k0 : kb;
      for (int lp = 0; lp < np; lp++) {
        float *s = w->s + (size_t)lp * BK * LANES, *dp = w->dp + (size_t)lp * BK * LANES;
        const float *qt = w->qt + (size_t)lp * d * LANES, *dot = w->dot + (size_t)lp * d * LANES;
        for (int r = 0; r < kb; r += SLK_MR)
          if (B->direct) {
            rows_times(simd, K, a->k_row, a->nk, k0 + r, d, qt, s + r * LANES, w->ktail);
            rows_times(simd, V, a->k_row, a->nk, k0 + r, d, dot, dp + r * LANES, w->vtail);
          } else {
            simd->micro(d, w->kp + (long)(k0 + r) * d, qt, s + r * LANES, LANES, 0);
            simd->micro(d, w->vp + (long)(k0 + r) * d, dot, dp + r * LANES, LANES, 0);
          }
        mask_panel(a, b, s, kb, k0, q0 + lp * LANES);
        simd->exp_sub_panel(s, kb, w->lse + lp * LANES);
        simd->ds_panel(s, dp, kb, w->dd + lp * LANES);
        if (B->round)
          slK_round_array(SLK_BF16, s, s, (size_t)kb * LANES), slK_round_array(SLK_BF16, dp, dp, (size_t)kb * LANES);
        float *dqt = w->dqt + (size_t)lp * d8 * LANES;
        /* dQ^T += K^T dS^T over the keys that exist (past them dS is 0) */
        for (int fp = 0; fp < d8; fp += SLK_MR)
          if (B->direct) simd->micro_a(kc, K + (long)k0 * a->k_row + fp, 1, a->k_row, dp, dqt + fp * LANES, LANES, 1);
          else simd->micro(kc, w->kt + (long)fp * nk48 + (long)k0 * SLK_MR, dp, dqt + fp * LANES, LANES, 1);
      }
      transpose_panels(simd, w->s, np, kb, w->pb);
      transpose_panels(simd, w->dp, np, kb, w->dsb);
      for (int kq = 0; kq < kb; kq += LANES) {
        size_t col = (size_t)(kq / LANES) * nqp * LANES, acc = (size_t)(k0 + kq) / LANES * d8 * LANES;
        for (int fp = 0; fp < d8; fp += SLK_MR) {
          simd->micro(nqp, w->doa + (long)fp * nqp, w->pb + col, dvt + acc + fp * LANES, LANES, 1);
          simd->micro(nqp, w->qa + (long)fp * nqp, w->dsb + col, dkt + acc + fp * LANES, LANES, 1);
        }
      }
    }
    float *dQ = (float *)qh(a, B->dq, b, h);
    for (int j = 0; j < qn; j++) {
      const float *src = w->dqt + (size_t)(j / LANES) * d8 * LANES + j % LANES;
      float *row = dQ + (long)(q0 + j) * a->q_row;
      for (int f = 0; f < d; f++) row[f] += t * src[f * LANES];
    }
  }
  if (!B->part) add_key_sums(a, bh, B->dk, B->dv, dkt, dvt);
}

static int fused_backward(const slK_Attn *a, const float *q, const float *k, const float *v, const float *o,
                          const float *dout, const float *dprod, const float *lse, float *dq, float *dk, float *dv,
                          int round) {
  int heads = a->batch * a->heads, tiles = (a->nq + BQ - 1) / BQ;
  if (heads == 0 || tiles == 0 || a->nk == 0) return 0;
  int threads = pick_threads(a, heads * tiles);
  /* one job per head when there are enough heads; else each head's query tiles in groups */
  int groups = heads >= threads ? 1 : (threads + heads - 1) / heads;
  if (groups > tiles) groups = tiles;
  int nk48 = up(a->nk, LANES), d8 = up(a->dim, SLK_MR), rc = 0;
  size_t F = sizeof(float), kd = (size_t)nk48 * d8 + 64, qd = (size_t)BQ * d8 + 64, sk = (size_t)BQ * BK;
  BwdWork w[64];
  enum { NBUF = 18 };
  int direct = direct_ok(a), packed = !direct;
  size_t tail = (size_t)SLK_MR * a->dim + 64;
  for (int t = 0; t < threads; t++) {
    w[t].kp = w[t].vp = w[t].kt = w[t].ktail = w[t].vtail = NULL;
    if (packed) w[t].kp = slK_alloc(F * kd), w[t].vp = slK_alloc(F * kd), w[t].kt = slK_alloc(F * kd);
    else w[t].ktail = slK_alloc(F * tail), w[t].vtail = slK_alloc(F * tail);
    rc |= packed ? !w[t].kp || !w[t].vp || !w[t].kt : !w[t].ktail || !w[t].vtail;
    float *p[NBUF - 5] = {w[t].dkt = slK_alloc(F * kd), w[t].dvt = slK_alloc(F * kd), w[t].qt = slK_alloc(F * qd),
                          w[t].dot = slK_alloc(F * qd), w[t].qa = slK_alloc(F * qd),  w[t].doa = slK_alloc(F * qd),
                          w[t].s = slK_alloc(F * sk),   w[t].dp = slK_alloc(F * sk),  w[t].pb = slK_alloc(F * sk),
                          w[t].dsb = slK_alloc(F * sk), w[t].dqt = slK_alloc(F * qd), w[t].lse = slK_alloc(F * BQ),
                          w[t].dd = slK_alloc(F * BQ)};
    for (int i = 0; i < NBUF - 5; i++) rc |= !p[i];
  }
  /* split heads add their groups' dK, dV afterwards in group order, so the sums never depend on timing */
  float *part = groups > 1 ? slK_alloc(F * kd * 2 * (size_t)heads * groups) : NULL;
  rc |= groups > 1 && !part;
  Bwd B = {a, q, k, v, o, dout, lse, dq, dk, dv, groups, nk48, direct, kd, w, part, dprod, round};
  if (rc == 0) slK_parallel(heads * groups, threads, bwd_job, &B);
  if (rc == 0 && part)
    for (int job = 0; job < heads * groups; job++)
      add_key_sums(a, job / groups, dk, dv, part + (size_t)job * 2 * kd, part + (size_t)job * 2 * kd + kd);
  slK_free(part);
  for (int t = 0; t < threads; t++) {
    float *p[NBUF] = {w[t].kp, w[t].vp,  w[t].kt, w[t].ktail, w[t].vtail, w[t].dkt, w[t].dvt, w[t].qt,  w[t].dot,
                      w[t].qa, w[t].doa, w[t].s,  w[t].dp,    w[t].pb,    w[t].dsb, w[t].dqt, w[t].lse, w[t].dd};
    free_all(p, NBUF);
  }
  return rc ? -1 : 0;
}

/* ------------------------------------------------------------- dispatch */

/* floats from a Q-shaped (or K-shaped) array's first element to its last */
static size_t extent(const slK_Attn *a, int isq) {
  long n = isq ? a->nq : a->nk, row = isq ? a->q_row : a->k_row;
  long head = isq ? a->q_head : a->k_head, batch = isq ? a->q_batch : a->k_batch;
  return (size_t)(batch * (a->batch - 1) + head * (a->heads - 1) + row * (n - 1) + a->dim);
}

/* bf16 products on a CPU without avx512_bf16: the operands rounded into copies with the same strides */
static float *rounded_copy(const slK_Attn *a, const float *x, int isq) {
  size_t n = extent(a, isq);
  float *c = slK_alloc(n * sizeof *c);
  if (c) slK_round_array(SLK_BF16, x, c, n);
  return c;
}

int slK_attention_forward(slK_AttnImpl impl, const slK_Attn *a, const float *q, const float *k, const float *v,
                          float *o, float *lse) {
  if (a->nk == 0) { /* every row fully masked */
    for (int b = 0; b < a->batch; b++)
      for (int h = 0; h < a->heads; h++)
        for (int i = 0; i < a->nq; i++)
          memset((float *)qh(a, o, b, h) + i * a->q_row, 0, sizeof(float) * (size_t)a->dim);
    memset(lse, 0, sizeof(float) * (size_t)a->batch * a->heads * a->nq);
    return 0;
  }
  if (impl == SLK_ATTN_NAIVE) return naive_forward(a, q, k, v, o, lse, NULL);
  if (a->format != SLK_BF16) return fused_forward(a, q, k, v, o, lse, 0);
  if (slK_half_loops()) return slK_attention_half_forward(a, q, k, v, o, lse);
  float *rq = rounded_copy(a, q, 1), *rk = rounded_copy(a, k, 0), *rv = rounded_copy(a, v, 0);
  int rc = rq && rk && rv ? fused_forward(a, rq, rk, rv, o, lse, 1) : -1;
  slK_free(rq), slK_free(rk), slK_free(rv);
  return rc;
}

int slK_attention_backward(slK_AttnImpl impl, const slK_Attn *a, const float *q, const float *k, const float *v,
                           const float *o, const float *dout, const float *lse, float *dq, float *dk, float *dv) {
  if (a->nk == 0 || a->nq == 0) return 0;
  if (impl == SLK_ATTN_NAIVE) return naive_backward(a, q, k, v, dout, lse, dq, dk, dv);
  if (a->format != SLK_BF16) return fused_backward(a, q, k, v, o, dout, dout, lse, dq, dk, dv, 0);
  if (slK_half_loops()) return slK_attention_half_backward(a, q, k, v, o, dout, lse, dq, dk, dv);
  float *rq = rounded_copy(a, q, 1), *rk = rounded_copy(a, k, 0), *rv = rounded_copy(a, v, 0),
        *rd = rounded_copy(a, dout, 1);
  int rc = rq && rk && rv && rd ? fused_backward(a, rq, rk, rv, o, dout, rd, lse, dq, dk, dv, 1) : -1;
  slK_free(rq), slK_free(rk), slK_free(rv), slK_free(rd);
  return rc;
}
