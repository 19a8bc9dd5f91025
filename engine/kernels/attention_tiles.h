/*
** attention_tiles.h - the pieces of the fused attention that its float32
** (attention.c) and bf16 (attention_half.c) versions share: addressing of
** heads, the mask of a score panel, the threads, the keys' gradients out
** of their accumulators. Static inline, so that neither file reaches the
** other for them.
*/
#ifndef SYSLAB_ATTENTION_TILES_H
#define SYSLAB_ATTENTION_TILES_H

#include <math.h>

#include "kernels.h"
#include "simd.h"

#ifndef BQ
#define BQ 96 /* queries per tile: two lane panels */
#endif
#ifndef BK
#define BK 384 /* keys per tile: a multiple of 48 and of 8 */
#endif
#define LANES SLK_NR

static inline int up(int x, int m) { return (x + m - 1) / m * m; }

static inline float scale_of(const slK_Attn *a) { return a->scale > 0 ? a->scale : 1.0f / sqrtf((float)a->dim); }

static inline const float *qh(const slK_Attn *a, const float *x, int b, int h) {
  return x + a->q_batch * b + a->q_head * h;
}
static inline const float *kh(const slK_Attn *a, const float *x, int b, int h) {
  return x + a->k_batch * b + a->k_head * h;
}

/* -inf where a key is masked or past nk, in the score panel of keys [k0, k0+rows)
** for the queries [q0, q0+48); only the rows that can hold a masked score are visited */
static inline void mask_panel(const slK_Attn *a, int b, float *s, int rows, int k0, int q0) {
  int from = a->nk - k0; /* rows at and after this one are past the keys */
  if (a->key_mask) from = 0;
  else if (a->causal && q0 + 1 - k0 < from) from = q0 + 1 - k0; /* key > q0: masked for some query */
  for (int r = from < 0 ? 0 : from; r < rows; r++) {
    int key = k0 + r;
    float *row = s + r * LANES;
    if (key >= a->nk || (a->key_mask && a->key_mask[(long)b * a->nk + key] == 0)) {
      for (int j = 0; j < LANES; j++) row[j] = -INFINITY;
      continue;
    }
    if (a->causal)
      for (int j = 0; j < LANES && q0 + j < key; j++) row[j] = -INFINITY;
  }
}

static inline int pick_threads(const slK_Attn *a, int jobs) {
  double work = 4.0 * a->batch * a->heads * a->nq * a->nk * a->dim;
  int t = work < 4e6 ? 1 : slK_threads();
  return t < jobs ? t : jobs;
}

/* dK, dV of head bh += the accumulators dK^T, dV^T ([key/48][feature][48]) */
static inline void add_key_sums(const slK_Attn *a, int bh, float *dk, float *dv, const float *dkt, const float *dvt) {
  int b = bh / a->heads, h = bh % a->heads, d = a->dim, d8 = up(d, SLK_MR);
  float *dK = (float *)kh(a, dk, b, h), *dV = (float *)kh(a, dv, b, h);
  for (int key = 0; key < a->nk; key++) {
    size_t base = (size_t)(key / LANES) * d8 * LANES + key % LANES;
    float *kr = dK + (long)key * a->k_row, *vr = dV + (long)key * a->k_row;
    for (int f = 0; f < d; f++) {
      kr[f] += dkt[base + (size_t)f * LANES];
      vr[f] += dvt[base + (size_t)f * LANES];
    }
  }
}

/* the forward's end for the queries [q0, q0+qn) of head bh: O = O^T / l (0 for
** a fully masked row), L = m + log l, from base 2 to natural log */
static inline void store_rows(const slK_Attn *a, int bh, int q0, int qn, const float *l, const float *m,
                              const float *ot, float *o, float *lse) {
  int b = bh / a->heads, h = bh % a->heads, d8 = up(a->dim, SLK_MR);
  float *O = (float *)qh(a, o, b, h), *L = lse + (long)bh * a->nq;
  for (int j = 0; j < qn; j++) {
    int lp = j / LANES, lane = j % LANES;
    float inv = l[j] > 0 ? 1.0f / l[j] : 0.0f;
    const float *col = ot + (size_t)lp * d8 * LANES + lane;
    float *orow = O + (long)(q0 + j) * a->q_row;
    for (int f = 0; f < a->dim; f++) orow[f] = col[f * LANES] * inv;
    L[q0 + j] = l[j] > 0 ? (m[j] + log2f(l[j])) * (float)M_LN2 : 0.0f; /* m and l are in base 2 */
  }
}

/* the backward's per-query numbers for a tile of qn queries (nqp padded):
** D = rowsum(dO O) from the float32 values, in double, and the row's
** logsumexp in base 2; padded queries get an infinite one, so P = 0 */
static inline void backward_rows(const slK_Attn *a, const float *O, const float *dO, const float *L, int q0, int qn,
                                 int nqp, float *dd, float *lse) {
  for (int j = 0; j < nqp; j++) {
    const float *orow = O + (long)(q0 + j) * a->q_row, *grow = dO + (long)(q0 + j) * a->q_row;
    double D = 0;
    if (j < qn)
      for (int f = 0; f < a->dim; f++) D += (double)orow[f] * grow[f];
    dd[j] = (float)D;
    lse[j] = j < qn ? L[q0 + j] * (float)M_LOG2E : INFINITY;
  }
}
#endif
