/*
** devgemm.c - the GPU operators' products as row-major requests (devgemm.h).
**
** Attention's per-head products read the token rows in place: head j of
** sample 0 starts at column j dh, a row is D floats, a sample T D further;
** the heads' T x T arrays start at j T T, a row is T floats, a sample
** H T T further. Each product's output decides its shape: the scores and
** their gradient are T x T (rows times rows, K = dh), the rest T x dh (an
** array times rows, K = T).
*/
#include <math.h>

#include "devgemm.h"

typedef struct {
  size_t start;   /* head j of sample 0 */
  int lead;       /* a row */
  long long step; /* one sample to the next */
} Part;

slM_DevGemm slM_gemm_heads(int which, int B, int T, int D, int H, int j) {
  static const struct {
    int trans_a, trans_b, square, scaled, adds;
  } kind[] = {
      [SLM_GEMM_SCORES] = {0, 1, 1, 1, 0},     [SLM_GEMM_CONTEXT] = {0, 0, 0, 0, 0},
      [SLM_GEMM_SCORES_DQ] = {0, 0, 0, 1, 1},  [SLM_GEMM_SCORES_DK] = {1, 0, 0, 1, 1},
      [SLM_GEMM_CONTEXT_DP] = {0, 1, 1, 0, 1}, [SLM_GEMM_CONTEXT_DV] = {1, 0, 0, 0, 1},
  };
  int dh = D / H, sq = kind[which].square;
  Part rows = {(size_t)j * dh, D, (long long)T * D}, mats = {(size_t)j * T * T, T, (long long)H * T * T};
  Part a = sq ? rows : mats, b = rows, c = sq ? mats : rows;
  slM_DevGemm g = {kind[which].trans_a,
                   kind[which].trans_b,
                   T,
                   sq ? T : dh,
                   sq ? dh : T,
                   kind[which].scaled ? 1.0f / sqrtf((float)dh) : 1.0f,
                   (float)kind[which].adds,
                   a.lead,
                   b.lead,
                   c.lead,
                   a.step,
                   b.step,
                   c.step,
                   B,
                   a.start,
                   b.start,
                   c.start};
  return g;
}

slM_DevGemm slM_gemm_mean_tokens(int backward, int B, int T, int D) {
  slM_DevGemm fwd = {0, 0, 1, D, T, 1.0f / (float)T, 0.0f, T, D, D, 0, (long long)T * D, D, B, 0, 0, 0};
  slM_DevGemm bwd = {0, 0, T, D, 1, 1.0f / (float)T, 1.0f, 1, D, D, 0, D, (long long)T * D, B, 0, 0, 0};
  return backward ? bwd : fwd;
}
