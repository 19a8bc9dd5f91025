/*
** simd.c - the kernels' inner loops: a portable C version of each, and an
** AVX-512 version compiled with target attributes (the project builds for
** x86-64-v2) and chosen at run time with __builtin_cpu_supports.
**
**   micro           the 8 x 48 micro-kernel of every blocked product:
**                   24 accumulators (8 rows x 3 vectors of 16), one
**                   broadcast of A and three loads of B per step of k
**   micro_a         the same with A read in place through strides, so that
**                   attention multiplies by K and V (and V^T, K^T) where
**                   they lie instead of packing a copy of every head
**   vexp            exp by Cephes' expf: n = round(x log2 e), a degree-6
**                   polynomial on x - n ln 2 (split in two constants), then
**                   2^n; relative error under 2e-7 for x >= -87.3, exactly 0
**                   below (so exp(-inf) = 0, which masking relies on)
**   softmax_panel   FlashAttention's online softmax across a lane panel,
**                   in base 2 (scores arrive multiplied by log2 e, as in
**                   FlashAttention-2's kernels): 2^x as 2^round(x) times a
**                   degree-5 polynomial in x - round(x), relative error
**                   2.4e-7, ten vector operations where exp takes twenty
**   exp_sub_panel,  the backward's recomputed probabilities (base 2 too)
**   ds_panel        and dS = P (dP - D)
**   transpose48     a 48 x 48 block, as nine 16 x 16 register transposes
**   dequant_*       MXINT8 decode: m * 2^(E-133) through float conversion
**                   and scalef, exact, then the top half for bfloat16; the
**                   whole-array versions write large outputs with streaming
**                   stores (no read for ownership of lines about to be
**                   overwritten), as memcpy does
**
** The portable versions are the references: tests run both and compare
** (slK_force_portable); the portable MXINT8 decodes, and the AVX-512 ones'
** tails, decode one element at a time through mxint8_one.c. No -ffast-math
** anywhere: MXINT8 decodes bf16 subnormals and must not flush them.
*/
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "kernels.h"
#include "round.h"
#include "simd.h"

/* ================================================================ portable */

static void micro_portable(int kc, const float *a, const float *b, float *c, long ldc, int acc) {
  float t[SLK_MR][SLK_NR];
  memset(t, 0, sizeof t);
  for (int k = 0; k < kc; k++, a += SLK_MR, b += SLK_NR)
    for (int i = 0; i < SLK_MR; i++)
      for (int j = 0; j < SLK_NR; j++) t[i][j] += a[i] * b[j];
  for (int i = 0; i < SLK_MR; i++)
    for (int j = 0; j < SLK_NR; j++) c[i * ldc + j] = (acc ? c[i * ldc + j] : 0.0f) + t[i][j];
}

static void micro_narrow_portable(int kc, const float *a, const float *b, float *c, long ldc, int nv) {
  float t[SLK_MR][32];
  int w = 16 * (nv < 2 ? 1 : 2);
  memset(t, 0, sizeof t);
  for (int k = 0; k < kc; k++, a += SLK_MR, b += SLK_NR)
    for (int i = 0; i < SLK_MR; i++)
      for (int j = 0; j < w; j++) t[i][j] += a[i] * b[j];
  for (int i = 0; i < SLK_MR; i++)
    for (int j = 0; j < w; j++) c[i * ldc + j] = t[i][j];
}

static float exp_portable1(float x) {
  if (!(x >= -87.3f)) return x != x ? x : 0.0f; /* NaN stays NaN; -inf and underflow give 0 */
  if (x > 88.3f) x = 88.3f;
  float n = nearbyintf(x * 1.44269504088896341f);
  float r = x - n * 0.693359375f - n * -2.12194440e-4f;
  float p = 1.9875691500e-4f;
  p = p * r + 1.3981999507e-3f;
  p = p * r + 8.3334519073e-3f;
  p = p * r + 4.1665795894e-2f;
  p = p * r + 1.6666665459e-1f;
  p = p * r + 5.0000001201e-1f;
  p = p * r * r + r + 1.0f;
  return ldexpf(p, (int)n);
}

static void micro_a_portable(int kc, const float *a, long ars, long acs, const float *b, float *c, long ldc, int acc) {
  float t[SLK_MR][SLK_NR];
  memset(t, 0, sizeof t);
  for (int k = 0; k < kc; k++, b += SLK_NR)
    for (int i = 0; i < SLK_MR; i++)
      for (int j = 0; j < SLK_NR; j++) t[i][j] += a[i * ars + k * acs] * b[j];
  for (int i = 0; i < SLK_MR; i++)
    for (int j = 0; j < SLK_NR; j++) c[i * ldc + j] = (acc ? c[i * ldc + j] : 0) + t[i][j];
}

static void vexp_portable(const float *x, float *y, size_t n) {
  for (size_t i = 0; i < n; i++) y[i] = exp_portable1(x[i]);
}

/* 2^x in the attention panels: 0 below -126 (and for -inf), so masked scores vanish */
static float exp2_panel1(float x) { return x >= -126.0f ? exp2f(x) : 0.0f; }

static void softmax_panel_portable(float *s, int rows, float *m, float *l, float *c) {
  for (int j = 0; j < SLK_NR; j++) {
    float mx = m[j];
    for (int r = 0; r < rows; r++) mx = s[r * SLK_NR + j] > mx ? s[r * SLK_NR + j] : mx;
    float safe = mx == -INFINITY ? 0.0f : mx, sum = 0;
    c[j] = exp2_panel1(m[j] - safe);
    for (int r = 0; r < rows; r++) sum += s[r * SLK_NR + j] = exp2_panel1(s[r * SLK_NR + j] - safe);
    l[j] = c[j] * l[j] + sum;
    m[j] = mx;
  }
}

static void scale_panel_portable(float *x, int rows, const float *c) {
  for (int r = 0; r < rows; r++)
    for (int j = 0; j < SLK_NR; j++) x[r * SLK_NR + j] *= c[j];
}

static void exp_sub_panel_portable(float *s, int rows, const float *lse) {
  for (int r = 0; r < rows; r++)
    for (int j = 0; j < SLK_NR; j++) s[r * SLK_NR + j] = exp2_panel1(s[r * SLK_NR + j] - lse[j]);
}

static void ds_panel_portable(const float *p, float *dp, int rows, const float *d) {
  for (int r = 0; r < rows; r++)
    for (int j = 0; j < SLK_NR; j++) dp[r * SLK_NR + j] = p[r * SLK_NR + j] * (dp[r * SLK_NR + j] - d[j]);
}

static void transpose48_portable(const float *src, float *dst) {
  for (int i = 0; i < SLK_NR; i++)
    for (int j = 0; j < SLK_NR; j++) dst[j * SLK_NR + i] = src[i * SLK_NR + j];
}

static void dequant_f32_portable(const int8_t *m, uint8_t e, size_t n, float *out) {
  for (size_t i = 0; i < n; i++) out[i] = slK_mxint8_f32_one(m[i], e);
}

static void dequant_bf16_portable(const int8_t *m, uint8_t e, size_t n, uint16_t *out) {
  for (size_t i = 0; i < n; i++) out[i] = slK_mxint8_bf16_one(m[i], e);
}

static void dequant_f32_n_portable(const int8_t *m, const uint8_t *scales, size_t n, int g, float *out) {
  for (size_t i = 0; i < n; i++) out[i] = slK_mxint8_f32_one(m[i], scales[i / (size_t)g]);
}

static void dequant_bf16_n_portable(const int8_t *m, const uint8_t *scales, size_t n, int g, uint16_t *out) {
  for (size_t i = 0; i < n; i++) out[i] = slK_mxint8_bf16_one(m[i], scales[i / (size_t)g]);
}

/* the packing of the blocked product (gemm.c), element by element */
static float half_or(float x, int fp16) { return fp16 ? slK_round_fp16(x) : x; }

static void pack_a_portable(const float *a, long rs, long cs, int mc, int kc, float alpha, int fp16, float *dst) {
  for (int p = 0; p < mc; p += SLK_MR, dst += SLK_MR * kc)
    for (int i = 0; i < SLK_MR; i++)
      for (int k = 0; k < kc; k++)
        dst[k * SLK_MR + i] = p + i < mc ? alpha * half_or(a[(long)(p + i) * rs + (long)k * cs], fp16) : 0.0f;
}

static void pack_b_portable(const float *b, const uint16_t *h, long rs, long cs, int kc, int nc, int fp16, float *dst) {
  for (int q = 0; q < nc; q += SLK_NR, dst += SLK_NR * kc)
    for (int k = 0; k < kc; k++)
      for (int j = 0; j < SLK_NR; j++) {
        long at = (long)k * rs + (long)(q + j) * cs;
        dst[k * SLK_NR + j] = q + j >= nc ? 0.0f : h ? slK_fp16_value(h[at]) : half_or(b[at], fp16);
      }
}

static void pack_mx_portable(const int8_t *m, const uint8_t *s, int g, long mrs, int k0, int kc, int nc, float *dst) {
  for (int q = 0; q < nc; q += SLK_NR, dst += SLK_NR * kc)
    for (int k = 0; k < kc; k++)
      for (int j = 0; j < SLK_NR; j++) {
        long r = q + j, kk = k0 + k;
        dst[k * SLK_NR + j] = r < nc ? slK_mxint8_f32_one(m[r * mrs + kk], s[r * (mrs / g) + kk / g]) : 0.0f;
      }
}

static const slK_Simd portable = {
    "portable",
    micro_portable,
    vexp_portable,
    softmax_panel_portable,
    scale_panel_portable,
    exp_sub_panel_portable,
    ds_panel_portable,
    transpose48_portable,
    dequant_f32_portable,
    dequant_bf16_portable,
    dequant_f32_n_portable,
    dequant_bf16_n_portable,
    micro_a_portable,
    pack_a_portable,
    pack_b_portable,
    pack_mx_portable,
    micro_narrow_portable,
};

/* ================================================================= AVX-512 */

#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>

#include "transpose16.h"

#define AVX512 __attribute__((target("avx512f,avx512bw,avx512dq,avx512vl,fma,f16c")))

/* One step of k of the 8 x 48 micro-kernel: three vectors of B, and row i
** of the tile gets A_I (element i of A's column) times them. A macro, so
** that each kernel below names where its A elements lie. */
#define MICRO_STEP(A_I) \
  do { \
    __m512 b0 = _mm512_loadu_ps(b), b1 = _mm512_loadu_ps(b + 16), b2 = _mm512_loadu_ps(b + 32); \
    _Pragma("GCC unroll 8") for (int i = 0; i < SLK_MR; i++) { \
      __m512 ai = _mm512_set1_ps(A_I); \
      c0[i] = _mm512_fmadd_ps(ai, b0, c0[i]); \
      c1[i] = _mm512_fmadd_ps(ai, b1, c1[i]); \
      c2[i] = _mm512_fmadd_ps(ai, b2, c2[i]); \
    } \
  } while (0)

/* the tile out to C: C = tile, or C += tile */
AVX512 static inline __attribute__((always_inline)) void tile_out(__m512 *c0, __m512 *c1, __m512 *c2, float *c,
                                                                  long ldc, int acc) {
#pragma GCC unroll 8
  for (int i = 0; i < SLK_MR; i++) {
    float *ci = c + i * ldc;
    if (acc) {
      c0[i] = _mm512_add_ps(c0[i], _mm512_loadu_ps(ci));
      c1[i] = _mm512_add_ps(c1[i], _mm512_loadu_ps(ci + 16));
      c2[i] = _mm512_add_ps(c2[i], _mm512_loadu_ps(ci + 32));
    }
    _mm512_storeu_ps(ci, c0[i]);
    _mm512_storeu_ps(ci + 16, c1[i]);
    _mm512_storeu_ps(ci + 32, c2[i]);
  }
}

AVX512 static void micro_avx512(int kc, const float *a, const float *b, float *c, long ldc, int acc) {
  __m512 c0[SLK_MR], c1[SLK_MR], c2[SLK_MR];
#pragma GCC unroll 8
  for (int i = 0; i < SLK_MR; i++) {
    /* C's lines arrive while the products run: a matrix's tile has rows ldc apart, past the
    ** prefetchers (attention's panels, rows of 48 in L1 or L2, need none) */
    if (ldc > SLK_NR) {
      _mm_prefetch((const char *)(c + i * ldc), _MM_HINT_T0);
      _mm_prefetch((const char *)(c + i * ldc + 16), _MM_HINT_T0);
      _mm_prefetch((const char *)(c + i * ldc + 32), _MM_HINT_T0);
      _mm_prefetch((const char *)(c + i * ldc + 47), _MM_HINT_T0);
    }
    c0[i] = c1[i] = c2[i] = _mm512_setzero_ps();
  }
  for (int k = 0; k < kc; k++, a += SLK_MR, b += SLK_NR) MICRO_STEP(a[i]);
  tile_out(c0, c1, c2, c, ldc, acc);
}

AVX512 static void micro_a_avx512(int kc, const float *a, long ars, long acs, const float *b, float *c, long ldc,
                                  int acc) {
  __m512 c0[SLK_MR], c1[SLK_MR], c2[SLK_MR];
#pragma GCC unroll 8
  for (int i = 0; i < SLK_MR; i++) c0[i] = c1[i] = c2[i] = _mm512_setzero_ps();
  if (acs == 1) {
    /* rows of A in place (K with keys as rows): eight row pointers */
    const float *ap[SLK_MR];
#pragma GCC unroll 8
    for (int i = 0; i < SLK_MR; i++) ap[i] = a + i * ars;
    for (int k = 0; k < kc; k++, b += SLK_NR) MICRO_STEP(ap[i][k]);
  } else {
    /* eight elements a step, ars apart (V^T, K^T: eight features of one key row) */
    for (int k = 0; k < kc; k++, a += acs, b += SLK_NR) MICRO_STEP(a[i * ars]);
  }
  tile_out(c0, c1, c2, c, ldc, acc);
}

/* The micro-kernel on an edge panel of B with only nv (1 or 2) of its three
** vectors of columns in use: C[8 x 16 nv] = A_panel B_panel, each element the
** same chain of fused multiply-adds as in micro_avx512, without the products
** of the padding columns (a panel of 16 columns would otherwise cost as much
** as one of 48). */
AVX512 static inline __attribute__((always_inline)) void narrow(int kc, const float *a, const float *b, float *c,
                                                                long ldc, const int nv) {
  __m512 cv[2][SLK_MR];
#pragma GCC unroll 8
  for (int i = 0; i < SLK_MR; i++) cv[0][i] = cv[1][i] = _mm512_setzero_ps();
  for (int k = 0; k < kc; k++, a += SLK_MR, b += SLK_NR) {
    __m512 b0 = _mm512_loadu_ps(b), b1 = nv > 1 ? _mm512_loadu_ps(b + 16) : b0;
#pragma GCC unroll 8
    for (int i = 0; i < SLK_MR; i++) {
      __m512 ai = _mm512_set1_ps(a[i]);
      cv[0][i] = _mm512_fmadd_ps(ai, b0, cv[0][i]);
      if (nv > 1) cv[1][i] = _mm512_fmadd_ps(ai, b1, cv[1][i]);
    }
  }
#pragma GCC unroll 8
  for (int i = 0; i < SLK_MR; i++) {
    _mm512_storeu_ps(c + i * ldc, cv[0][i]);
    if (nv > 1) _mm512_storeu_ps(c + i * ldc + 16, cv[1][i]);
  }
}

AVX512 static void micro_narrow_avx512(int kc, const float *a, const float *b, float *c, long ldc, int nv) {
  if (nv <= 1) narrow(kc, a, b, c, ldc, 1);
  else narrow(kc, a, b, c, ldc, 2);
}

AVX512 static inline __m512 exp512(__m512 x) {
  __mmask16 under = _mm512_cmp_ps_mask(x, _mm512_set1_ps(-87.3f), _CMP_NGE_UQ); /* < -87.3 or NaN */
  __mmask16 nan = _mm512_cmp_ps_mask(x, x, _CMP_UNORD_Q);
  __m512 xc = _mm512_min_ps(_mm512_max_ps(x, _mm512_set1_ps(-87.3f)), _mm512_set1_ps(88.3f));
  __m512 n = _mm512_roundscale_ps(_mm512_mul_ps(xc, _mm512_set1_ps(1.44269504088896341f)),
                                  _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
  __m512 r = _mm512_fnmadd_ps(n, _mm512_set1_ps(0.693359375f), xc);
  r = _mm512_fnmadd_ps(n, _mm512_set1_ps(-2.12194440e-4f), r);
  __m512 p = _mm512_set1_ps(1.9875691500e-4f);
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.3981999507e-3f));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(8.3334519073e-3f));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(4.1665795894e-2f));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.6666665459e-1f));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(5.0000001201e-1f));
  p = _mm512_fmadd_ps(_mm512_mul_ps(p, r), r, _mm512_add_ps(r, _mm512_set1_ps(1.0f)));
  p = _mm512_scalef_ps(p, n);
  p = _mm512_mask_mov_ps(p, under, _mm512_setzero_ps());
  return _mm512_mask_mov_ps(p, nan, x);
}

AVX512 static void vexp_avx512(const float *x, float *y, size_t n) {
  size_t i = 0;
  for (; i + 16 <= n; i += 16) _mm512_storeu_ps(y + i, exp512(_mm512_loadu_ps(x + i)));
  if (i < n) {
    __mmask16 k = (__mmask16)((1u << (n - i)) - 1);
    _mm512_mask_storeu_ps(y + i, k, exp512(_mm512_maskz_loadu_ps(k, x + i)));
  }
}

/* 2^x for the panels, x <= 0 in practice (scores minus their running max
** or their logsumexp): 0 below -126, for -inf and for NaN; the polynomial
** is a minimax fit of 2^r on [-1/2, 1/2] */
AVX512 static inline __m512 exp2_panel(__m512 x) {
  __mmask16 keep = _mm512_cmp_ps_mask(x, _mm512_set1_ps(-126.0f), _CMP_GE_OQ);
  __m512 n = _mm512_roundscale_ps(x, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
  __m512 r = _mm512_sub_ps(x, n);
  __m512 p = _mm512_set1_ps(1.32764713e-3f);
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(9.67554189e-3f));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(5.55071309e-2f));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(2.40221202e-1f));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(6.93146944e-1f));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.00000012f));
  return _mm512_maskz_scalef_ps(keep, p, n);
}

/* Row by row over all three vectors of a 48-lane row (the panel is read
** in address order), with the running maxima in six independent chains:
** one chain would wait on each vmaxps's latency. */
AVX512 static void softmax_panel_avx512(float *s, int rows, float *m, float *l, float *c) {
  __m512 mo[3], mx[6], safe[3], sum[3];
#pragma GCC unroll 3
  for (int v = 0; v < 3; v++) mo[v] = mx[v] = mx[v + 3] = _mm512_loadu_ps(m + 16 * v);
  int r = 0;
  for (; r + 2 <= rows; r += 2) {
#pragma GCC unroll 3
    for (int v = 0; v < 3; v++) {
      mx[v] = _mm512_max_ps(mx[v], _mm512_loadu_ps(s + r * SLK_NR + 16 * v));
      mx[v + 3] = _mm512_max_ps(mx[v + 3], _mm512_loadu_ps(s + (r + 1) * SLK_NR + 16 * v));
    }
  }
  for (; r < rows; r++) {
#pragma GCC unroll 3
    for (int v = 0; v < 3; v++) mx[v] = _mm512_max_ps(mx[v], _mm512_loadu_ps(s + r * SLK_NR + 16 * v));
  }
#pragma GCC unroll 3
  for (int v = 0; v < 3; v++) {
    mx[v] = _mm512_max_ps(mx[v], mx[v + 3]);
    safe[v] = _mm512_mask_mov_ps(mx[v], _mm512_cmp_ps_mask(mx[v], _mm512_set1_ps(-INFINITY), _CMP_EQ_OQ),
                                 _mm512_setzero_ps());
    sum[v] = _mm512_setzero_ps();
  }
  for (r = 0; r < rows; r++) {
#pragma GCC unroll 3
    for (int v = 0; v < 3; v++) {
      __m512 p = exp2_panel(_mm512_sub_ps(_mm512_loadu_ps(s + r * SLK_NR + 16 * v), safe[v]));
      _mm512_storeu_ps(s + r * SLK_NR + 16 * v, p);
      sum[v] = _mm512_add_ps(sum[v], p);
    }
  }
#pragma GCC unroll 3
  for (int v = 0; v < 3; v++) {
    __m512 cc = exp2_panel(_mm512_sub_ps(mo[v], safe[v]));
    _mm512_storeu_ps(l + 16 * v, _mm512_fmadd_ps(cc, _mm512_loadu_ps(l + 16 * v), sum[v]));
    _mm512_storeu_ps(m + 16 * v, mx[v]);
    _mm512_storeu_ps(c + 16 * v, cc);
  }
}

AVX512 static void scale_panel_avx512(float *x, int rows, const float *c) {
  __m512 c0 = _mm512_loadu_ps(c), c1 = _mm512_loadu_ps(c + 16), c2 = _mm512_loadu_ps(c + 32);
  for (int r = 0; r < rows; r++, x += SLK_NR) {
    _mm512_storeu_ps(x, _mm512_mul_ps(_mm512_loadu_ps(x), c0));
    _mm512_storeu_ps(x + 16, _mm512_mul_ps(_mm512_loadu_ps(x + 16), c1));
    _mm512_storeu_ps(x + 32, _mm512_mul_ps(_mm512_loadu_ps(x + 32), c2));
  }
}

AVX512 static void exp_sub_panel_avx512(float *s, int rows, const float *lse) {
  __m512 l0 = _mm512_loadu_ps(lse), l1 = _mm512_loadu_ps(lse + 16), l2 = _mm512_loadu_ps(lse + 32);
  for (int r = 0; r < rows; r++, s += SLK_NR) {
    _mm512_storeu_ps(s, exp2_panel(_mm512_sub_ps(_mm512_loadu_ps(s), l0)));
    _mm512_storeu_ps(s + 16, exp2_panel(_mm512_sub_ps(_mm512_loadu_ps(s + 16), l1)));
    _mm512_storeu_ps(s + 32, exp2_panel(_mm512_sub_ps(_mm512_loadu_ps(s + 32), l2)));
  }
}

AVX512 static void ds_panel_avx512(const float *p, float *dp, int rows, const float *d) {
  __m512 d0 = _mm512_loadu_ps(d), d1 = _mm512_loadu_ps(d + 16), d2 = _mm512_loadu_ps(d + 32);
  for (int r = 0; r < rows; r++, p += SLK_NR, dp += SLK_NR) {
    _mm512_storeu_ps(dp, _mm512_mul_ps(_mm512_loadu_ps(p), _mm512_sub_ps(_mm512_loadu_ps(dp), d0)));
    _mm512_storeu_ps(dp + 16, _mm512_mul_ps(_mm512_loadu_ps(p + 16), _mm512_sub_ps(_mm512_loadu_ps(dp + 16), d1)));
    _mm512_storeu_ps(dp + 32, _mm512_mul_ps(_mm512_loadu_ps(p + 32), _mm512_sub_ps(_mm512_loadu_ps(dp + 32), d2)));
  }
}

AVX512 static void transpose16(const float *src, float *dst) {
  __m512 r[16];
#pragma GCC unroll 16
  for (int i = 0; i < 16; i++) r[i] = _mm512_loadu_ps(src + i * SLK_NR);
  slK_transpose16(r);
#pragma GCC unroll 16
  for (int i = 0; i < 16; i++) _mm512_storeu_ps(dst + i * SLK_NR, r[i]);
}

AVX512 static void transpose48_avx512(const float *src, float *dst) {
  for (int i = 0; i < SLK_NR; i += 16)
    for (int j = 0; j < SLK_NR; j += 16) transpose16(src + i * SLK_NR + j, dst + j * SLK_NR + i);
}

/* 16 mantissas decoded exactly: float(m) * 2^(e-133); the caller handles e = 0 and 0xFF */
AVX512 static inline __m512 decode16(__m128i m8, __m512 scale_exp) {
  return _mm512_scalef_ps(_mm512_cvtepi32_ps(_mm512_cvtepi8_epi32(m8)), scale_exp);
}

AVX512 static void dequant_f32_avx512(const int8_t *m, uint8_t e, size_t n, float *out) {
  size_t i = 0;
  if (e == 0 || e == 0xFF) {
    float v = e == 0 ? 0.0f : NAN;
    for (; i < n; i++) out[i] = v;
    return;
  }
  __m512 se = _mm512_set1_ps((float)(e - 133));
  for (; i + 16 <= n; i += 16) _mm512_storeu_ps(out + i, decode16(_mm_loadu_si128((const __m128i *)(m + i)), se));
  for (; i < n; i++) out[i] = slK_mxint8_f32_one(m[i], e);
}

AVX512 static void dequant_bf16_avx512(const int8_t *m, uint8_t e, size_t n, uint16_t *out) {
  size_t i = 0;
  if (e == 0 || e == 0xFF) {
    uint16_t v = e == 0 ? 0x0000 : 0x7FC0;
    for (; i < n; i++) out[i] = v;
    return;
  }
  __m512 se = _mm512_set1_ps((float)(e - 133));
  for (; i + 16 <= n; i += 16) {
    __m128i m8 = _mm_loadu_si128((const __m128i *)(m + i));
    /* the ADLS Lab 4 MXINT8 kernel's decode turns m = -128 into +0.0 (numerics §5.4); reproduce it */
    __mmask16 low = _mm_cmpeq_epi8_mask(m8, _mm_set1_epi8(-128));
    __m512i bits = _mm512_srli_epi32(_mm512_castps_si512(decode16(m8, se)), 16);
    bits = _mm512_mask_mov_epi32(bits, low, _mm512_setzero_si512());
    _mm256_storeu_si256((__m256i *)(out + i), _mm512_cvtepi32_epi16(bits));
  }
  for (; i < n; i++) out[i] = slK_mxint8_bf16_one(m[i], e);
}

/* streaming stores pay off once the output is well past the caches */
#define STREAM_BYTES (8u << 20)

/* 16 values of one group: exact floats, NaN for E = 0xFF, 0 for E = 0 */
AVX512 static inline __m512 decode16_e(const int8_t *m, uint8_t e) {
  if (e == 0) return _mm512_setzero_ps();
  if (e == 0xFF) return _mm512_set1_ps(NAN);
  return decode16(_mm_loadu_si128((const __m128i *)m), _mm512_set1_ps((float)(e - 133)));
}

AVX512 static void dequant_f32_n_avx512(const int8_t *m, const uint8_t *scales, size_t n, int g, float *out) {
  if (g % 16 != 0) {
    dequant_f32_n_portable(m, scales, n, g, out);
    return;
  }
  int stream = n * 4 >= STREAM_BYTES && ((uintptr_t)out & 63) == 0;
  size_t i = 0;
  for (; i + 16 <= n; i += 16) {
    __m512 v = decode16_e(m + i, scales[i / (size_t)g]);
    if (stream) _mm512_stream_ps(out + i, v);
    else _mm512_storeu_ps(out + i, v);
  }
  if (stream) _mm_sfence();
  for (; i < n; i++) out[i] = slK_mxint8_f32_one(m[i], scales[i / (size_t)g]);
}

AVX512 static inline __m256i bf16_16(const int8_t *m, uint8_t e) {
  if (e == 0) return _mm256_setzero_si256();
  if (e == 0xFF) return _mm256_set1_epi16(0x7FC0);
  __m128i m8 = _mm_loadu_si128((const __m128i *)m);
  __mmask16 low = _mm_cmpeq_epi8_mask(m8, _mm_set1_epi8(-128)); /* the Lab 4 kernel's +0.0 (numerics §5.4) */
  __m512i bits = _mm512_srli_epi32(_mm512_castps_si512(decode16(m8, _mm512_set1_ps((float)(e - 133)))), 16);
  return _mm512_cvtepi32_epi16(_mm512_mask_mov_epi32(bits, low, _mm512_setzero_si512()));
}

AVX512 static void dequant_bf16_n_avx512(const int8_t *m, const uint8_t *scales, size_t n, int g, uint16_t *out) {
  if (g % 16 != 0) {
    dequant_bf16_n_portable(m, scales, n, g, out);
    return;
  }
  int stream = n * 2 >= STREAM_BYTES && ((uintptr_t)out & 63) == 0;
  size_t i = 0;
  for (; i + 32 <= n; i += 32) {
    __m256i lo = bf16_16(m + i, scales[i / (size_t)g]), hi = bf16_16(m + i + 16, scales[(i + 16) / (size_t)g]);
    __m512i v = _mm512_inserti64x4(_mm512_castsi256_si512(lo), hi, 1);
    if (stream) _mm512_stream_si512((__m512i *)(out + i), v);
    else _mm512_storeu_si512(out + i, v);
  }
  if (stream) _mm_sfence();
  for (; i < n; i++) out[i] = slK_mxint8_bf16_one(m[i], scales[i / (size_t)g]);
}

/* ------------------------------------------------ packing (gemm.c's blocked product) */

static __mmask16 lanes16(int n) { return n >= 16 ? 0xFFFF : n <= 0 ? 0 : (__mmask16)((1u << n) - 1); }

/* x rounded to IEEE half and back, as slK_round_fp16: vcvtps2ph rounds to
** nearest even and keeps subnormals; a NaN becomes the quiet NaN with its
** sign, as the scalar rounding makes it, not its payload */
AVX512 static inline __m512 round_fp16(__m512 x) {
  __m512 r = _mm512_cvtph_ps(_mm512_cvtps_ph(x, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC));
  __mmask16 nan = _mm512_cmp_ps_mask(x, x, _CMP_UNORD_Q);
  __m512i q = _mm512_or_si512(_mm512_and_si512(_mm512_castps_si512(x), _mm512_set1_epi32((int)0x80000000u)),
                              _mm512_set1_epi32(0x7FC00000));
  return _mm512_mask_mov_ps(r, nan, _mm512_castsi512_ps(q));
}

/* 16 values from unit stride (lanes past n zero): float32, half bits, or rounded to half */
AVX512 static inline __m512 load16(const float *p, const uint16_t *h, long at, int n, int fp16) {
  __mmask16 m = lanes16(n);
  if (h) return _mm512_cvtph_ps(_mm256_maskz_loadu_epi16(m, h + at));
  __m512 x = _mm512_maskz_loadu_ps(m, p + at);
  return fp16 ? round_fp16(x) : x;
}

/* A panels: 16 rows (two panels) at a time; rows along memory are read 16 k
** at a time and transposed in registers, columns along memory copied */
AVX512 static void pack_a_avx512(const float *a, long rs, long cs, int mc, int kc, float alpha, int fp16, float *dst) {
  __m512 va = _mm512_set1_ps(alpha);
  for (int p = 0; p < mc; p += 2 * SLK_MR) {
    float *d0 = dst + (size_t)p * kc, *d1 = d0 + (size_t)SLK_MR * kc;
    int rows = mc - p, two = rows > SLK_MR;
    if (cs == 1) {
      for (int k = 0; k < kc; k += 16) {
        __m512 x[16];
#pragma GCC unroll 16
        for (int l = 0; l < 16; l++) {
          if (l < rows && k + 48 < kc) _mm_prefetch((const char *)(a + (long)(p + l) * rs + k + 48), _MM_HINT_T0);
          x[l] =
              l < rows ? _mm512_mul_ps(va, load16(a, NULL, (long)(p + l) * rs + k, kc - k, fp16)) : _mm512_setzero_ps();
        }
        slK_transpose16(x);
        int n = kc - k < 16 ? kc - k : 16;
        for (int t = 0; t < n; t++) {
          _mm256_storeu_ps(d0 + (size_t)(k + t) * SLK_MR, _mm512_castps512_ps256(x[t]));
          if (two) _mm256_storeu_ps(d1 + (size_t)(k + t) * SLK_MR, _mm512_extractf32x8_ps(x[t], 1));
        }
      }
    } else {
      for (int k = 0; k < kc; k++) {
        __m512 x = _mm512_mul_ps(va, load16(a, NULL, (long)k * cs + p, rows, fp16));
        _mm256_storeu_ps(d0 + (size_t)k * SLK_MR, _mm512_castps512_ps256(x));
        if (two) _mm256_storeu_ps(d1 + (size_t)k * SLK_MR, _mm512_extractf32x8_ps(x, 1));
      }
    }
  }
}

/* B panels: rows along memory copied three vectors a row, columns along
** memory read 16 k at a time and transposed in registers */
AVX512 static void pack_b_avx512(const float *b, const uint16_t *h, long rs, long cs, int kc, int nc, int fp16,
                                 float *dst) {
  for (int q = 0; q < nc; q += SLK_NR, dst += (size_t)SLK_NR * kc) {
    int cols = nc - q;
    if (cs == 1) {
      for (int k = 0; k < kc; k++) {
        long at = (long)k * rs + q;
        if (k + 4 < kc && !h) {
          _mm_prefetch((const char *)(b + at + 4 * rs), _MM_HINT_T0);
          _mm_prefetch((const char *)(b + at + 4 * rs + 16), _MM_HINT_T0);
          _mm_prefetch((const char *)(b + at + 4 * rs + 32), _MM_HINT_T0);
        }
#pragma GCC unroll 3
        for (int v = 0; v < 3; v++)
          _mm512_storeu_ps(dst + (size_t)k * SLK_NR + 16 * v, load16(b, h, at + 16 * v, cols - 16 * v, fp16));
      }
    } else {
      for (int v = 0; v < 3; v++)
        for (int k = 0; k < kc; k += 16) {
          __m512 x[16];
#pragma GCC unroll 16
          for (int l = 0; l < 16; l++)
            x[l] =
                l < cols - 16 * v ? load16(b, h, (long)(q + 16 * v + l) * cs + k, kc - k, fp16) : _mm512_setzero_ps();
          slK_transpose16(x);
          int n = kc - k < 16 ? kc - k : 16;
          for (int t = 0; t < n; t++) _mm512_storeu_ps(dst + (size_t)(k + t) * SLK_NR + 16 * v, x[t]);
        }
    }
  }
}

/* MXINT8 weights as B: 16 rows of W (columns of op(B)) by 16 k decoded
** exactly (decode16_e), transposed in registers; groups of 16 or 32 and
** blocks starting on 16 (else the portable loop) */
AVX512 static void pack_mx_avx512(const int8_t *m, const uint8_t *s, int g, long mrs, int k0, int kc, int nc,
                                  float *dst) {
  if (g % 16 != 0 || k0 % 16 != 0 || kc % 16 != 0) {
    pack_mx_portable(m, s, g, mrs, k0, kc, nc, dst);
    return;
  }
  long srs = mrs / g;
  for (int q = 0; q < nc; q += SLK_NR, dst += (size_t)SLK_NR * kc)
    for (int v = 0; v < 3; v++)
      for (int k = 0; k < kc; k += 16) {
        __m512 x[16];
        int kk = k0 + k;
#pragma GCC unroll 16
        for (int l = 0; l < 16; l++) {
          long r = q + 16 * v + l;
          x[l] = r < nc ? decode16_e(m + r * mrs + kk, s[r * srs + kk / g]) : _mm512_setzero_ps();
        }
        slK_transpose16(x);
#pragma GCC unroll 16
        for (int t = 0; t < 16; t++) _mm512_storeu_ps(dst + (size_t)(k + t) * SLK_NR + 16 * v, x[t]);
      }
}

static const slK_Simd avx512 = {
    "avx512",
    micro_avx512,
    vexp_avx512,
    softmax_panel_avx512,
    scale_panel_avx512,
    exp_sub_panel_avx512,
    ds_panel_avx512,
    transpose48_avx512,
    dequant_f32_avx512,
    dequant_bf16_avx512,
    dequant_f32_n_avx512,
    dequant_bf16_n_avx512,
    micro_a_avx512,
    pack_a_avx512,
    pack_b_avx512,
    pack_mx_avx512,
    micro_narrow_avx512,
};

static int have_avx512(void) {
  __builtin_cpu_init();
  return __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
         __builtin_cpu_supports("avx512dq") && __builtin_cpu_supports("avx512vl");
}
#else
static int have_avx512(void) { return 0; }
static const slK_Simd avx512;
#endif

/* ================================================================ dispatch */

static int forced_portable = -1; /* -1: not decided yet (SYSLAB_PORTABLE=1 forces) */

int slK_force_portable(int on) {
  int old = forced_portable > 0;
  forced_portable = on ? 1 : 0;
  return old;
}

const slK_Simd *slK_simd(void) {
  if (forced_portable < 0) {
    const char *env = getenv("SYSLAB_PORTABLE");
    forced_portable = env && *env && strcmp(env, "0") != 0;
  }
  static int avx = -1;
  if (avx < 0) avx = have_avx512();
  return avx && !forced_portable ? &avx512 : &portable;
}

const char *slK_isa(void) { return slK_simd()->isa; }
int slK_isa_avx512(void) { return slK_simd() != &portable; }

void slK_vexp(const float *x, float *y, size_t n) { slK_simd()->vexp(x, y, n); }
