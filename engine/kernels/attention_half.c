/*
** attention_half.c - the fused attention (FlashAttention-2, attention.c's
** v1) with bf16 products: every product's operands (Q, K, V, the
** probabilities P, dO, dS) rounded to bfloat16 as they are packed, the sums
** in float32 by vdpbf16ps (gemm_half.c's micro-kernel and packing), the
** online softmax, its statistics and the accumulators of O, dQ, dK, dV in
** float32.
**
** Build: part of the engine; tests/unit/test_kernels.c checks it against
** the float32 naive version within a bf16 tolerance and against the naive
** version with bf16 products; bench/bench_kernels.c times it beside the
** float32 fused version (`build/bench_kernels attention 1024`).
**
** Chosen by slK_attention_forward and _backward for a->format = SLK_BF16
** when the CPU has avx512_bf16 (slK_half_loops); elsewhere attention.c
** runs its float32 kernel on rounded copies and rounds P and dS in their
** panels, the same operands multiplied in float32.
**
** The layout follows attention.c's: scores transposed, S^T = K Q^T, in
** lane panels of 48 queries, so the softmax runs across vector lanes. The
** operands as gemm_half.h's panels, pairs of the summed index in 32-bit
** words: K and V by 8 keys over pairs of features, V^T and K^T by 8
** features over pairs of keys (packed once per head); Q^T and dO^T as lane
** panels over pairs of features, Q^T and dO^T by 8 features over pairs of
** queries (once per query tile); P^T and dS^T packed from their float32
** panels as lane panels over pairs of keys (for O^T += V^T P^T and
** dQ^T += K^T dS^T), and with keys as columns over pairs of queries (for
** dV^T += dO^T P and dK^T += t Q^T dS): the packing's transposition
** replaces attention.c's. The scale (and log2 e) multiplies the float32
** scores, not Q before rounding, as autocast's graph computes.
*/
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "attention_half.h"
#include "attention_tiles.h"
#include "gemm_half.h"
#include "kernels.h"
#include "simd.h"

static int pairs(int n) { return (n + 1) / 2; }

/* n rows of x (row stride `row`, d features) as A panels of 8 rows over
** pairs of features; rows from n to nr zero */
static void pack_rows(const slK_HalfLoops *L, const float *x, long row, int n, int d, int nr, uint32_t *dst) {
  slK_HalfSrc s = {x, NULL, row, 1};
  L->pack_pairs_a(&s, 0, n, 0, d, dst);
  int done = up(n, SLK_MR);
  if (nr > done) memset(dst + (size_t)done * pairs(d), 0, sizeof(uint32_t) * (size_t)(nr - done) * pairs(d));
}

/* x^T (d features by n rows) as A panels of 8 features over pairs of rows:
** the panel of features fp.. at dst + fp * pairs(n) */
static void pack_cols(const slK_HalfLoops *L, const float *x, long row, int n, int d, uint32_t *dst) {
  slK_HalfSrc s = {x, NULL, 1, row};
  L->pack_pairs_a(&s, 0, d, 0, n, dst);
}

/* x^T (d features by n rows) as B lane panels of 48 rows over pairs of features */
static void pack_lanes(const slK_HalfLoops *L, const float *x, long row, int n, int d, uint32_t *dst) {
  slK_HalfSrc s = {x, NULL, 1, row};
  L->pack_pairs_b(&s, 0, d, 0, n, dst);
}

/* one buffer cut into parts of the given sizes (in 4-byte units), each 64-byte aligned */
static void *carve(size_t n, const size_t *sizes, void **parts) {
  size_t total = 0;
  for (size_t i = 0; i < n; i++) total += (sizes[i] + 15) / 16 * 16;
  char *base = slK_alloc(total * 4 + 64);
  if (!base) return NULL;
  size_t at = 0;
  for (size_t i = 0; i < n; i++) parts[i] = base + at * 4, at += (sizes[i] + 15) / 16 * 16;
  return base;
}

static size_t carved(size_t n, const size_t *sizes) {
  size_t total = 0;
  for (size_t i = 0; i < n; i++) total += (sizes[i] + 15) / 16 * 16;
  return total * 4 + 64;
}

/* ================================================================ forward */

typedef struct {
  uint32_t *qt, *pt;
  float *s, *ot, *m, *l, *c;
  void *base;
} FwdWork;

typedef struct {
  const slK_Attn *a;
  const slK_HalfLoops *L;
  const float *q, *k, *v;
  float *o, *lse;
  int tiles, nk8, d2, d8, nkp;
  uint32_t *kp, *vt; /* every head's K by 8 keys, V^T by 8 features */
  FwdWork *w;
} Fwd;

static size_t kp_words(const Fwd *F) { return (size_t)F->nk8 * F->d2 + 64; }
static size_t vt_words(const Fwd *F) { return (size_t)F->d8 * F->nkp + 64; }

/* a worker's buffers: Q^T, P^T (packed), scores, O^T, m, l, c */
static void fwd_sizes(const slK_Attn *a, size_t *sz) {
  size_t d2 = (size_t)pairs(a->dim), d8 = (size_t)up(a->dim, SLK_MR);
  size_t s[7] = {BQ * d2 + 64, (size_t)pairs(BK) * LANES + 64, (size_t)BQ * BK, BQ * d8, BQ, BQ, LANES};
  memcpy(sz, s, sizeof s);
}

static void fwd_pack_job(void *ctx, int job, int worker) {
  Fwd *F = ctx;
  const slK_Attn *a = F->a;
  int b = job / a->heads, h = job % a->heads;
  pack_rows(F->L, kh(a, F->k, b, h), a->k_row, a->nk, a->dim, F->nk8, F->kp + (size_t)job * kp_words(F));
  pack_cols(F->L, kh(a, F->v, b, h), a->k_row, a->nk, a->dim, F->vt + (size_t)job * vt_words(F));
  (void)worker;
}

static void fwd_job(void *ctx, int job, int worker) {
  Fwd *F = ctx;
  const slK_Attn *a = F->a;
  const slK_HalfLoops *L = F->L;
  const slK_Simd *simd = slK_simd();
  FwdWork *w = &F->w[worker];
  int bh = job / F->tiles, b = bh / a->heads, h = bh % a->heads, d2 = F->d2, d8 = F->d8;
  int q0 = job % F->tiles * BQ, qn = a->nq - q0 < BQ ? a->nq - q0 : BQ, np = (qn + LANES - 1) / LANES;
  const uint32_t *kp = F->kp + (size_t)bh * kp_words(F), *vt = F->vt + (size_t)bh * vt_words(F);
  float alpha = scale_of(a) * (float)M_LOG2E; /* scores in base 2 */
  pack_lanes(L, qh(a, F->q, b, h) + (long)q0 * a->q_row, a->q_row, qn, a->dim, w->qt);
  for (int i = 0; i < np * LANES; i++) w->m[i] = -INFINITY, w->l[i] = 0;
  int kend = a->nk;
  if (a->causal && q0 + qn < kend) kend = q0 + qn; /* key tiles past the last query are skipped */
  for (int k0 = 0; k0 < kend; k0 += BK) {
    int kb = up(kend - k0 < BK ? kend - k0 : BK, SLK_MR), kc = kend - k0 < kb ? kend - k0 : kb;
    for (int lp = 0; lp < np; lp++) {
      float *s = w->s + (size_t)lp * BK * LANES, *ot = w->ot + (size_t)lp * d8 * LANES;
      const uint32_t *qt = w->qt + (size_t)lp * LANES * d2;
      for (int r = 0; r < kb; r += SLK_MR)
        L->micro(d2, kp + (size_t)(k0 + r) * d2, qt, s + r * LANES, LANES, SLK_MR, LANES, alpha, 0.0f, NULL);
      mask_panel(a, b, s, kb, k0, q0 + lp * LANES);
      simd->softmax_panel(s, kb, w->m + lp * LANES, w->l + lp * LANES, w->c);
      if (k0 > 0) simd->scale_panel(ot, d8, w->c); /* the first tile's O is still 0 */
      /* O^T += V^T P^T over the keys that exist, P^T rounded as it is packed */
      slK_HalfSrc ps = {s, NULL, LANES, 1};
      L->pack_pairs_b(&ps, 0, kc, 0, LANES, w->pt);
      for (int fp = 0; fp < d8; fp += SLK_MR)
        L->micro(pairs(kc), vt + (size_t)fp * F->nkp + (size_t)(k0 / 2) * SLK_MR, w->pt, ot + fp * LANES, LANES, SLK_MR,
                 LANES, 1.0f, k0 > 0 ? 1.0f : 0.0f, NULL);
    }
  }
  store_rows(a, bh, q0, qn, w->l, w->m, w->ot, F->o, F->lse);
}

int slK_attention_half_forward(const slK_Attn *a, const float *q, const float *k, const float *v, float *o,
                               float *lse) {
  int tiles = (a->nq + BQ - 1) / BQ, jobs = a->batch * a->heads * tiles, heads = a->batch * a->heads;
  if (jobs == 0) return 0;
  int threads = pick_threads(a, jobs), rc = 0;
  FwdWork w[64];
  size_t sz[7];
  fwd_sizes(a, sz);
  for (int t = 0; t < threads; t++) {
    void *p[7];
    w[t].base = carve(7, sz, p);
    rc |= !w[t].base;
    w[t].qt = p[0], w[t].pt = p[1], w[t].s = p[2], w[t].ot = p[3], w[t].m = p[4], w[t].l = p[5], w[t].c = p[6];
  }
  Fwd F = {a,
           slK_half_loops(),
           q,
           k,
           v,
           o,
           lse,
           tiles,
           up(a->nk, SLK_MR),
           pairs(a->dim),
           up(a->dim, SLK_MR),
           pairs(a->nk),
           NULL,
           NULL,
           w};
  F.kp = slK_alloc(sizeof(uint32_t) * kp_words(&F) * heads);
  F.vt = slK_alloc(sizeof(uint32_t) * vt_words(&F) * heads);
  rc |= !F.kp || !F.vt || !F.L;
  if (rc == 0) slK_parallel(heads, threads, fwd_pack_job, &F);
  if (rc == 0) slK_parallel(jobs, threads, fwd_job, &F);
  for (int t = 0; t < threads; t++) slK_free(w[t].base);
  slK_free(F.kp), slK_free(F.vt);
  return rc ? -1 : 0;
}

/* =============================================================== backward */

typedef struct {
  uint32_t *kp, *vp, *kt;        /* K, V by 8 keys over pairs of features; K^T by 8 features over pairs of keys */
  float *dkt, *dvt;              /* dK^T, dV^T: [key/48][feature][48] */
  uint32_t *qt, *dot, *qa, *doa; /* Q^T, dO^T lane panels; Q^T, dO^T by 8 features over pairs of queries */
  float *s, *dp;                 /* P^T, dS^T in lane panels */
  uint32_t *dsl, *pb, *dsb;      /* dS^T packed over pairs of keys; P, dS with keys as columns over pairs of queries */
  float *dqt, *lse, *dd;
  void *base;
} BwdWork;

enum { NBWD = 16 };

typedef struct {
  const slK_Attn *a;
  const slK_HalfLoops *L;
  const float *q, *k, *v, *o, *dout, *lse;
  float *dq, *dk, *dv;
  int groups, nk48;
  size_t kd; /* floats in one dK^T or dV^T accumulator */
  BwdWork *w;
  float *part; /* groups > 1: each job's own dK^T, dV^T, added in job order afterwards */
} Bwd;

static void bwd_sizes(const slK_Attn *a, size_t *sz) {
  size_t d2 = (size_t)pairs(a->dim), d8 = (size_t)up(a->dim, SLK_MR), nk48 = (size_t)up(a->nk, LANES);
  size_t kd = nk48 * d8 + 64, lanes = BQ * d2 + 64, cols = d8 * pairs(BQ) + 64, sk = (size_t)BQ * BK;
  size_t s[NBWD] = {nk48 * d2 + 64,
                    nk48 * d2 + 64,
                    d8 * pairs(a->nk) + 64,
                    kd,
                    kd,
                    lanes,
                    lanes,
                    cols,
                    cols,
                    sk,
                    sk,
                    (size_t)pairs(BK) * LANES + 64,
                    (size_t)pairs(BQ) * BK + 64,
                    (size_t)pairs(BQ) * BK + 64,
                    BQ * d8 + 64,
                    2 * BQ};
  memcpy(sz, s, sizeof s);
}

/* the products of one key tile [k0, k0+kb) against the query tile's lane panels */
static void bwd_keys(const Bwd *B, BwdWork *w, float *dkt, float *dvt, int b, int q0, int qn, int k0, int kend) {
  const slK_Attn *a = B->a;
  const slK_HalfLoops *L = B->L;
  const slK_Simd *simd = slK_simd();
  int d2 = pairs(a->dim), d8 = up(a->dim, SLK_MR), np = (qn + LANES - 1) / LANES, nkp = pairs(a->nk), qp = pairs(qn);
  int kb = up(kend - k0 < BK ? kend - k0 : BK, LANES), kc = kend - k0 < kb ? kend - k0 : kb;
  float t = scale_of(a);
  for (int lp = 0; lp < np; lp++) {
    float *s = w->s + (size_t)lp * BK * LANES, *dp = w->dp + (size_t)lp * BK * LANES;
    const uint32_t *qt = w->qt + (size_t)lp * LANES * d2, *dot = w->dot + (size_t)lp * LANES * d2;
    for (int r = 0; r < kb; r += SLK_MR) {
      L->micro(d2, w->kp + (size_t)(k0 + r) * d2, qt, s + r * LANES, LANES, SLK_MR, LANES, t * (float)M_LOG2E, 0.0f,
               NULL);
      L->micro(d2, w->vp + (size_t)(k0 + r) * d2, dot, dp + r * LANES, LANES, SLK_MR, LANES, 1.0f, 0.0f, NULL);
    }
    mask_panel(a, b, s, kb, k0, q0 + lp * LANES);
    simd->exp_sub_panel(s, kb, w->lse + lp * LANES);
    simd->ds_panel(s, dp, kb, w->dd + lp * LANES);
    /* dQ^T += K^T dS^T over the keys that exist */
    slK_HalfSrc ds = {dp, NULL, LANES, 1};
    L->pack_pairs_b(&ds, 0, kc, 0, LANES, w->dsl);
    float *dqt = w->dqt + (size_t)lp * d8 * LANES;
    for (int fp = 0; fp < d8; fp += SLK_MR)
      L->micro(pairs(kc), w->kt + (size_t)fp * nkp + (size_t)(k0 / 2) * SLK_MR, w->dsl, dqt + fp * LANES, LANES, SLK_MR,
               LANES, 1.0f, 1.0f, NULL);
    /* P and dS with keys as columns and the tile's queries (this panel's pairs of them) as the summed
    ** index: per 48 keys, the pairs of every lane panel one after another, as Q^T's and dO^T's panels */
    int ql = qn - lp * LANES < LANES ? qn - lp * LANES : LANES;
    slK_HalfSrc ps = {s, NULL, 1, LANES}, dss = {dp, NULL, 1, LANES};
    for (int kq = 0; kq < kb; kq += LANES) {
      size_t at = (size_t)(kq / LANES) * LANES * qp + (size_t)lp * (LANES / 2) * LANES;
      L->pack_pairs_b(&ps, 0, ql, kq, LANES, w->pb + at);
      L->pack_pairs_b(&dss, 0, ql, kq, LANES, w->dsb + at);
    }
  }
  /* dV^T += dO^T P and dK^T += t Q^T dS, 48 keys at a time, over the tile's pairs of queries */
  for (int kq = 0; kq < kb; kq += LANES) {
    size_t acc = (size_t)(k0 + kq) / LANES * d8 * LANES, col = (size_t)(kq / LANES) * LANES * qp;
    for (int fp = 0; fp < d8; fp += SLK_MR) {
      L->micro(qp, w->doa + (size_t)fp * qp, w->pb + col, dvt + acc + fp * LANES, LANES, SLK_MR, LANES, 1.0f, 1.0f,
               NULL);
      L->micro(qp, w->qa + (size_t)fp * qp, w->dsb + col, dkt + acc + fp * LANES, LANES, SLK_MR, LANES, t, 1.0f, NULL);
    }
  }
}

static void bwd_job(void *ctx, int job, int worker) {
  Bwd *B = ctx;
  const slK_Attn *a = B->a;
  const slK_HalfLoops *L = B->L;
  BwdWork *w = &B->w[worker];
  int bh = job / B->groups, g = job % B->groups, b = bh / a->heads, h = bh % a->heads;
  int d = a->dim, d8 = up(d, SLK_MR), tiles = (a->nq + BQ - 1) / BQ;
  float t = scale_of(a);
  const float *K = kh(a, B->k, b, h), *V = kh(a, B->v, b, h);
  const float *Q = qh(a, B->q, b, h), *O = qh(a, B->o, b, h), *dO = qh(a, B->dout, b, h);
  const float *Lse = B->lse + (long)bh * a->nq;
  pack_rows(L, K, a->k_row, a->nk, d, B->nk48, w->kp);
  pack_rows(L, V, a->k_row, a->nk, d, B->nk48, w->vp);
  pack_cols(L, K, a->k_row, a->nk, d, w->kt);
  float *dkt = B->part ? B->part + (size_t)job * 2 * B->kd : w->dkt, *dvt = B->part ? dkt + B->kd : w->dvt;
  memset(dkt, 0, sizeof(float) * (size_t)B->nk48 * d8);
  memset(dvt, 0, sizeof(float) * (size_t)B->nk48 * d8);
  for (int tile = g; tile < tiles; tile += B->groups) {
    int q0 = tile * BQ, qn = a->nq - q0 < BQ ? a->nq - q0 : BQ, np = (qn + LANES - 1) / LANES, nqp = np * LANES;
    const float *Qt = Q + (long)q0 * a->q_row, *dOt = dO + (long)q0 * a->q_row;
    pack_lanes(L, Qt, a->q_row, qn, d, w->qt);
    pack_lanes(L, dOt, a->q_row, qn, d, w->dot);
    pack_cols(L, Qt, a->q_row, qn, d, w->qa);
    pack_cols(L, dOt, a->q_row, qn, d, w->doa);
    backward_rows(a, O, dO, Lse, q0, qn, nqp, w->dd, w->lse);
    memset(w->dqt, 0, sizeof(float) * (size_t)np * d8 * LANES);
    int kend = a->nk;
    if (a->causal && q0 + qn < kend) kend = q0 + qn;
    for (int k0 = 0; k0 < kend; k0 += BK) bwd_keys(B, w, dkt, dvt, b, q0, qn, k0, kend);
    float *dQ = (float *)qh(a, B->dq, b, h);
    for (int j = 0; j < qn; j++) {
      const float *src = w->dqt + (size_t)(j / LANES) * d8 * LANES + j % LANES;
      float *row = dQ + (long)(q0 + j) * a->q_row;
      for (int f = 0; f < d; f++) row[f] += t * src[f * LANES];
    }
  }
  if (!B->part) add_key_sums(a, bh, B->dk, B->dv, dkt, dvt);
}

static int backward_groups(const slK_Attn *a, int *threads) {
  int heads = a->batch * a->heads, tiles = (a->nq + BQ - 1) / BQ;
  *threads = pick_threads(a, heads * tiles);
  int groups = heads >= *threads ? 1 : (*threads + heads - 1) / heads;
  return groups > tiles ? tiles : groups;
}

int slK_attention_half_backward(const slK_Attn *a, const float *q, const float *k, const float *v, const float *o,
                                const float *dout, const float *lse, float *dq, float *dk, float *dv) {
  int heads = a->batch * a->heads, tiles = (a->nq + BQ - 1) / BQ, threads, rc = 0;
  if (heads == 0 || tiles == 0 || a->nk == 0) return 0;
  int groups = backward_groups(a, &threads);
  size_t sz[NBWD];
  bwd_sizes(a, sz);
  BwdWork w[64];
  for (int t = 0; t < threads; t++) {
    void *p[NBWD];
    w[t].base = carve(NBWD, sz, p);
    rc |= !w[t].base;
    w[t].kp = p[0], w[t].vp = p[1], w[t].kt = p[2], w[t].dkt = p[3], w[t].dvt = p[4], w[t].qt = p[5], w[t].dot = p[6];
    w[t].qa = p[7], w[t].doa = p[8], w[t].s = p[9], w[t].dp = p[10], w[t].dsl = p[11], w[t].pb = p[12];
    w[t].dsb = p[13], w[t].dqt = p[14], w[t].lse = p[15], w[t].dd = w[t].lse ? w[t].lse + BQ : NULL;
  }
  int nk48 = up(a->nk, LANES);
  size_t kd = (size_t)nk48 * up(a->dim, SLK_MR) + 64;
  /* split heads add their groups' dK, dV afterwards in group order, so the sums never depend on timing */
  float *part = groups > 1 ? slK_alloc(sizeof(float) * kd * 2 * (size_t)heads * groups) : NULL;
  rc |= (groups > 1 && !part) || !slK_half_loops();
  Bwd B = {a, slK_half_loops(), q, k, v, o, dout, lse, dq, dk, dv, groups, nk48, kd, w, part};
  if (rc == 0) slK_parallel(heads * groups, threads, bwd_job, &B);
  if (rc == 0 && part)
    for (int job = 0; job < heads * groups; job++)
      add_key_sums(a, job / groups, dk, dv, part + (size_t)job * 2 * kd, part + (size_t)job * 2 * kd + kd);
  slK_free(part);
  for (int t = 0; t < threads; t++) slK_free(w[t].base);
  return rc ? -1 : 0;
}

double slK_attention_half_workspace(const slK_Attn *a, int backward) {
  int heads = a->batch * a->heads, threads;
  if (!backward) {
    size_t sz[7];
    fwd_sizes(a, sz);
    double shared = (double)heads *
                    ((double)up(a->nk, SLK_MR) * pairs(a->dim) + 64 + (double)up(a->dim, SLK_MR) * pairs(a->nk) + 64) *
                    4;
    int tiles = (a->nq + BQ - 1) / BQ;
    threads = pick_threads(a, heads * tiles);
    return threads * (double)carved(7, sz) + shared;
  }
  int groups = backward_groups(a, &threads);
  size_t sz[NBWD];
  bwd_sizes(a, sz);
  double kd = (double)up(a->nk, LANES) * up(a->dim, SLK_MR) + 64;
  return threads * (double)carved(NBWD, sz) + (groups > 1 ? 4.0 * kd * 2 * heads * groups : 0);
}
