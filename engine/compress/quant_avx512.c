/*
** quant_avx512.c - the AVX-512 loops of the number formats: quant_simd.c's
** AVX2 loops with sixteen float lanes (eight binary64 lanes for the
** binary64 ones), the clamps as 64-bit minimum and maximum where AVX2 has
** none, the selections and the short tails through mask registers.
**
** The same bits as the reference, for the reasons quant_simd.c gives loop
** by loop. Compiled with target attributes (the project builds for
** x86-64-v2) and called only from quant_simd.c, which chooses them where
** the CPU has AVX-512F, DQ and VL (tests/unit/test_quant_simd.c runs every
** loop width the CPU has). Kept apart from the AVX2 loops so that each
** file stays short enough to read; it sits below quant_simd.c, sharing its
** scalar helpers through quant_bits.h and taking the log thresholds table
** as an argument.
*/
#include "quant_avx512.h"
#include "quant_bits.h"

#include <math.h>
#include <stdint.h>

#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>

#define AVX512 __attribute__((target("avx2,fma,avx512f,avx512dq,avx512vl")))

/* ------------------------------------------------ binary64, eight lanes */

/* 2^e for 64-bit lanes of e, as a double (e within the normal range) */
AVX512 static __m512d pow2_pd512(__m512i e) {
  return _mm512_castsi512_pd(_mm512_slli_epi64(_mm512_add_epi64(e, _mm512_set1_epi64(1023)), 52));
}

AVX512 size_t slQ_avx512_minifloat(const float *in, float *out, size_t n, int M, int B, int emax, int ieee,
                                   double inf_q_) {
  const __m512i mantmask = _mm512_set1_epi64(0xFFFFFFFFFFFFFll), zero = _mm512_setzero_si512(),
                one = _mm512_set1_epi64(1);
  const __m512i vlo = _mm512_set1_epi64(-B), vhi = _mm512_set1_epi64(emax), vm = _mm512_set1_epi64(M);
  const __m512d eps = _mm512_set1_pd(1e-9), two_m = _mm512_set1_pd(ldexp(1.0, M)),
                inv_m = _mm512_set1_pd(ldexp(1.0, -M));
  const __m512d top = _mm512_set1_pd(ldexp(1.0, M) - 1), half_m = _mm512_set1_pd(ldexp(1.0, M - 1));
  const __m512d sub = _mm512_set1_pd(ldexp(1.0, 1 - B - M)), done = _mm512_set1_pd(1.0), dzero = _mm512_setzero_pd();
  const __m512d inf_q = _mm512_set1_pd(inf_q_), inf = _mm512_set1_pd(__builtin_inf());
  const __m512i signbit = _mm512_set1_epi64((long long)0x8000000000000000ull);
  const __m256 fabsmask = _mm256_castsi256_ps(_mm256_set1_epi32(0x7FFFFFFF)), tiny = _mm256_set1_ps(1e-8f);
  size_t i = 0;
  for (; i + 8 <= n; i += 8) {
    __m256 xf = _mm256_loadu_ps(in + i);
    __mmask8 pass =
        _mm256_cmp_ps_mask(xf, xf, _CMP_UNORD_Q) | _mm256_cmp_ps_mask(_mm256_and_ps(xf, fabsmask), tiny, _CMP_LE_OQ);
    __m512d x = _mm512_cvtps_pd(xf), a = _mm512_abs_pd(x), q;
    __m512i bits = _mm512_castpd_si512(_mm512_add_pd(a, eps));
    __m512i e = _mm512_sub_epi64(_mm512_srli_epi64(bits, 52), _mm512_set1_epi64(1023));
    if (ieee) {
      e = _mm512_max_epi64(_mm512_min_epi64(e, vhi), vlo);
      __m512d r = _mm512_mul_pd(a, pow2_pd512(_mm512_sub_epi64(zero, e)));
      __m512d k = _mm512_roundscale_pd(_mm512_sub_pd(_mm512_mul_pd(r, two_m), two_m),
                                       _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
      __m512d normal = _mm512_mul_pd(
          _mm512_add_pd(done, _mm512_mul_pd(_mm512_min_pd(_mm512_max_pd(k, dzero), top), inv_m)), pow2_pd512(e));
      __m512d ks = _mm512_roundscale_pd(_mm512_mul_pd(r, half_m), _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
      __m512d subnormal = _mm512_mul_pd(_mm512_min_pd(_mm512_max_pd(ks, dzero), top), sub);
      q = _mm512_mask_blend_pd(_mm512_cmpgt_epi64_mask(e, vlo), subnormal, normal);
    } else {
      e = _mm512_mask_add_epi64(e, _mm512_test_epi64_mask(bits, mantmask), e,
                                one); /* clog2: one up unless a power of two */
      e = _mm512_max_epi64(_mm512_min_epi64(e, vhi), vlo);
      __m512d k = _mm512_roundscale_pd(_mm512_mul_pd(a, pow2_pd512(_mm512_sub_epi64(vm, e))),
                                       _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
      q = _mm512_mul_pd(_mm512_min_pd(_mm512_max_pd(k, dzero), top), pow2_pd512(_mm512_sub_epi64(e, vm)));
    }
    q = _mm512_mask_blend_pd(_mm512_cmp_pd_mask(a, inf, _CMP_EQ_OQ), q, inf_q);
    q = _mm512_castsi512_pd(_mm512_or_si512(_mm512_castpd_si512(q), _mm512_and_si512(_mm512_castpd_si512(x), signbit)));
    _mm256_storeu_ps(out + i, _mm256_mask_blend_ps(pass, _mm512_cvtpd_ps(q), xf));
  }
  return i;
}

/* log_vec on eight values; lo and hi the exponent range clamped to [-150, 128] */
AVX512 static inline __m256 log_vec8(__m256 xf, __m512d tau, __m512i vlo, __m512i vhi) {
  const __m512i mantmask = _mm512_set1_epi64(0xFFFFFFFFFFFFFll), bias = _mm512_set1_epi64(1023);
  const __m512i signbit = _mm512_set1_epi64((long long)0x8000000000000000ull);
  double sqrt2 = 2 * 0.70710678118654752440; /* nlog2 rounds up from a mantissa of 2 sqrt(1/2), as log_vec */
  int64_t sqrt2_bits;
  __builtin_memcpy(&sqrt2_bits, &sqrt2, sizeof sqrt2_bits);
  const __m512i sqrt2_m = _mm512_set1_epi64(sqrt2_bits & 0xFFFFFFFFFFFFFll);
  __m512d x = _mm512_cvtps_pd(xf);
  __m512d s = _mm512_add_pd(x, tau), a = _mm512_add_pd(_mm512_abs_pd(x), tau);
  __m512i bits = _mm512_castpd_si512(a);
  __m512i e = _mm512_sub_epi64(_mm512_srli_epi64(bits, 52), bias);
  e = _mm512_mask_add_epi64(e, _mm512_cmpge_epi64_mask(_mm512_and_si512(bits, mantmask), sqrt2_m), e,
                            _mm512_set1_epi64(1));
  e = _mm512_max_epi64(_mm512_min_epi64(e, vhi), vlo);
  __m512i q = _mm512_slli_epi64(_mm512_add_epi64(e, bias), 52);
  q = _mm512_or_si512(q, _mm512_and_si512(_mm512_castpd_si512(s), signbit));
  q = _mm512_maskz_mov_epi64(_mm512_cmp_pd_mask(s, _mm512_setzero_pd(), _CMP_NEQ_UQ), q); /* 0 where x + tau is 0 */
  return _mm256_mask_blend_ps(_mm256_cmp_ps_mask(xf, xf, _CMP_UNORD_Q), _mm512_cvtpd_ps(_mm512_castsi512_pd(q)), xf);
}

AVX512 size_t slQ_avx512_log(const float *in, float *out, size_t n, double tau, int emin, int emax) {
  const __m512d vtau = _mm512_set1_pd(tau);
  const __m512i vlo = _mm512_set1_epi64(clamp150(emin)), vhi = _mm512_set1_epi64(clamp150(emax));
  size_t i = 0;
  for (; i + 8 <= n; i += 8) _mm256_storeu_ps(out + i, log_vec8(_mm256_loadu_ps(in + i), vtau, vlo, vhi));
  return i;
}

/* -------------------------------------------------- float32, sixteen lanes */

/* 2^e for 32-bit lanes of e, as a float (e within the normal range) */
AVX512 static __m512 pow2_ps512(__m512i e) {
  return _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_add_epi32(e, _mm512_set1_epi32(127)), 23));
}

/* quant_simd.c's minifloat_f8 with sixteen lanes */
AVX512 size_t slQ_avx512_minifloat_f32(const float *in, float *out, size_t n, int M, int B, int emax, int ieee,
                                       float inf_q_) {
  float c_ = (float)1e-9;
  if ((double)c_ > 1e-9) c_ = __builtin_nextafterf(c_, 0.0f);
  const __m512 tiny = _mm512_set1_ps(1e-8f), c = _mm512_set1_ps(c_), zero = _mm512_setzero_ps(),
               one = _mm512_set1_ps(1.0f);
  const __m512 two_m = _mm512_set1_ps((float)(1 << M)), inv_m = pow2_ps512(_mm512_set1_epi32(-M));
  const __m512 top = _mm512_set1_ps((float)((1 << M) - 1)), inf = _mm512_set1_ps(__builtin_inff()),
               inf_q = _mm512_set1_ps(inf_q_);
  const __m512 sub_up = pow2_ps512(_mm512_set1_epi32(B + M - 1)), sub_down = pow2_ps512(_mm512_set1_epi32(1 - B - M));
  const __m512i vlo = _mm512_set1_epi32(-B), vhi = _mm512_set1_epi32(emax), vm = _mm512_set1_epi32(M);
  const __m512i i127 = _mm512_set1_epi32(127), i1 = _mm512_set1_epi32(1), i23 = _mm512_set1_epi32(23);
  const __m512i mantmask = _mm512_set1_epi32(0x7FFFFF), signbit = _mm512_set1_epi32((int)0x80000000u);
  size_t i = 0;
  for (; i + 16 <= n; i += 16) {
    __m512 x = _mm512_loadu_ps(in + i), a = _mm512_abs_ps(x), q;
    __mmask16 pass = _mm512_cmp_ps_mask(x, x, _CMP_UNORD_Q) | _mm512_cmp_ps_mask(a, tiny, _CMP_LE_OQ);
    __m512i bits = _mm512_castps_si512(a), E = _mm512_sub_epi32(_mm512_srli_epi32(bits, 23), i127);
    __m512 d = _mm512_sub_ps(pow2_ps512(_mm512_add_epi32(E, i1)), a);
    __mmask16 cross = _mm512_cmp_ps_mask(d, c, _CMP_LE_OQ);
    __m512i e = _mm512_mask_add_epi32(E, cross, E, i1);
    if (!ieee) {
      __mmask16 absorbed = _mm512_testn_epi32_mask(bits, mantmask) & _mm512_cmpgt_epi32_mask(E, i23);
      e = _mm512_mask_sub_epi32(_mm512_add_epi32(e, i1), absorbed, _mm512_add_epi32(e, i1), i1);
    }
    e = _mm512_max_epi32(_mm512_min_epi32(e, vhi), vlo);
    if (ieee) {
      __m512 k = _mm512_roundscale_ps(_mm512_sub_ps(_mm512_mul_ps(a, pow2_ps512(_mm512_sub_epi32(vm, e))), two_m),
                                      _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
      __m512 normal = _mm512_mul_ps(
          _mm512_add_ps(one, _mm512_mul_ps(_mm512_min_ps(_mm512_max_ps(k, zero), top), inv_m)), pow2_ps512(e));
      __m512 ks = _mm512_roundscale_ps(_mm512_mul_ps(a, sub_up), _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
      __m512 subnormal = _mm512_mul_ps(_mm512_min_ps(_mm512_max_ps(ks, zero), top), sub_down);
      q = _mm512_mask_blend_ps(_mm512_cmpgt_epi32_mask(e, vlo), subnormal, normal);
    } else {
      __m512 k = _mm512_roundscale_ps(_mm512_mul_ps(a, pow2_ps512(_mm512_sub_epi32(vm, e))),
                                      _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
      q = _mm512_mul_ps(_mm512_min_ps(_mm512_max_ps(k, zero), top), pow2_ps512(_mm512_sub_epi32(e, vm)));
    }
    q = _mm512_mask_blend_ps(_mm512_cmp_ps_mask(a, inf, _CMP_EQ_OQ), q, inf_q);
    q = _mm512_castsi512_ps(_mm512_or_si512(_mm512_castps_si512(q), _mm512_and_si512(_mm512_castps_si512(x), signbit)));
    _mm512_storeu_ps(out + i, _mm512_mask_blend_ps(pass, q, x));
  }
  return i;
}

/* quant_simd.c's block_fp_vec with sixteen lanes */
AVX512 static inline __m512 block_fp_vec16(__m512 x, __m512 up, __m512 down, __m512 top, int nan_block) {
  const __m512 tiny = _mm512_set1_ps(1e-8f), eps = _mm512_set1_ps(1e-9f), nan = _mm512_set1_ps(__builtin_nanf(""));
  const __m512i signbit = _mm512_set1_epi32((int)0x80000000u);
  __m512 ax = _mm512_abs_ps(x);
  __mmask16 pass = _mm512_cmp_ps_mask(ax, tiny, _CMP_LE_OQ);
  if (nan_block) return _mm512_mask_blend_ps(pass, nan, x);
  __m512 k =
      _mm512_roundscale_ps(_mm512_mul_ps(_mm512_add_ps(ax, eps), up), _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
  __m512 q = _mm512_mul_ps(_mm512_min_ps(k, top), down);
  q = _mm512_castsi512_ps(_mm512_or_si512(_mm512_castps_si512(q), _mm512_and_si512(_mm512_castps_si512(x), signbit)));
  return _mm512_mask_blend_ps(pass | _mm512_cmp_ps_mask(x, x, _CMP_UNORD_Q), q, x);
}

AVX512 size_t slQ_avx512_block_fp_row(const float *in, float *out, size_t len, size_t k, const uint32_t *m,
                                      uint32_t zero_as, int M, int B, int emax) {
  const __m512 top = _mm512_set1_ps((float)((1 << M) - 1));
  size_t i = 0;
  for (size_t b = 0; i < len; b++) {
    size_t bl = len - i < k ? len - i : k, j = 0;
    uint32_t mb = m[b] ? m[b] : zero_as;
    int nan_block = mb > 0x7F800000u, es = block_fp_exponent(mb, M, B, emax);
    if (M - es > 126 || M - es < -126) return i; /* the scales are not normal floats: the caller's scalar code */
    __m512 up = pow2_ps512(_mm512_set1_epi32(M - es)), down = pow2_ps512(_mm512_set1_epi32(es - M));
    const float *x = in + i;
    float *y = out + i;
    for (; j + 16 <= bl; j += 16)
      _mm512_storeu_ps(y + j, block_fp_vec16(_mm512_loadu_ps(x + j), up, down, top, nan_block));
    if (j < bl) {
      __mmask16 mask = (__mmask16)((1u << (bl - j)) - 1);
      _mm512_mask_storeu_ps(y + j, mask, block_fp_vec16(_mm512_maskz_loadu_ps(mask, x + j), up, down, top, nan_block));
    }
    i += bl;
  }
  return i;
}

/* quant_simd.c's log_f32_vec with sixteen lanes; the table's 32 entries in two registers */
AVX512 static inline __m512 log_f32_vec16(__m512 x, __m512i vb, __m512i vlo, __m512i vhi, __m512 minus_tau,
                                          __m512i t_lo, __m512i t_hi) {
  const __m512i i127 = _mm512_set1_epi32(127), mantmask = _mm512_set1_epi32(0x7FFFFF), izero = _mm512_setzero_si512();
  const __m512i i31 = _mm512_set1_epi32(31), signbit = _mm512_set1_epi32((int)0x80000000u);
  __m512i bits = _mm512_castps_si512(_mm512_abs_ps(x)), E = _mm512_sub_epi32(_mm512_srli_epi32(bits, 23), i127);
  __m512i r = _mm512_min_epi32(_mm512_max_epi32(_mm512_add_epi32(E, vb), izero), i31);
  __m512i t = _mm512_permutex2var_epi32(t_lo, r, t_hi);
  __mmask16 up = _mm512_cmpge_epi32_mask(_mm512_and_si512(bits, mantmask), t);
  __m512i e = _mm512_max_epi32(_mm512_min_epi32(_mm512_mask_add_epi32(E, up, E, _mm512_set1_epi32(1)), vhi), vlo);
  __m512i q = _mm512_slli_epi32(_mm512_add_epi32(e, i127), 23);
  q = _mm512_mask_or_epi32(q, _mm512_cmp_ps_mask(x, minus_tau, _CMP_LT_OQ), q, signbit);
  return _mm512_mask_blend_ps(_mm512_cmp_ps_mask(x, x, _CMP_UNORD_Q), _mm512_castsi512_ps(q), x);
}

AVX512 size_t slQ_avx512_log_f32(const float *in, float *out, size_t n, int B, int emax, const uint32_t *table) {
  const __m512i t_lo = _mm512_loadu_si512(table), t_hi = _mm512_loadu_si512(table + 16);
  const __m512i vb = _mm512_set1_epi32(B), vlo = _mm512_set1_epi32(-B), vhi = _mm512_set1_epi32(emax);
  const __m512 mt = _mm512_set1_ps(-tau_float(B));
  size_t i = 0;
  for (; i + 16 <= n; i += 16)
    _mm512_storeu_ps(out + i, log_f32_vec16(_mm512_loadu_ps(in + i), vb, vlo, vhi, mt, t_lo, t_hi));
  return i;
}

AVX512 size_t slQ_avx512_block_log_f32_row(const float *in, float *out, size_t len, size_t k, const uint32_t *m,
                                           uint32_t zero_as, int Eb, int bias_width, const uint32_t *table) {
  const __m512i t_lo = _mm512_loadu_si512(table), t_hi = _mm512_loadu_si512(table + 16);
  size_t i = 0;
  for (size_t b = 0; i < len; b++) {
    size_t bl = len - i < k ? len - i : k, j = 0;
    uint32_t mb = m[b] ? m[b] : zero_as;
    const float *x = in + i;
    float *y = out + i;
    if (mb > 0x7F800000u) { /* a NaN block: block_log passes nothing through */
      for (; j < bl; j++) y[j] = __builtin_nanf("");
      i += bl;
      continue;
    }
    int B = block_log_bias(mb, Eb, bias_width);
    const __m512i vb = _mm512_set1_epi32(B), vlo = _mm512_set1_epi32(-B), vhi = _mm512_set1_epi32((1 << Eb) - 1 - B);
    const __m512 mt = _mm512_set1_ps(-tau_float(B));
    for (; j + 16 <= bl; j += 16)
      _mm512_storeu_ps(y + j, log_f32_vec16(_mm512_loadu_ps(x + j), vb, vlo, vhi, mt, t_lo, t_hi));
    if (j < bl) {
      __mmask16 mask = (__mmask16)((1u << (bl - j)) - 1);
      _mm512_mask_storeu_ps(y + j, mask,
                            log_f32_vec16(_mm512_maskz_loadu_ps(mask, x + j), vb, vlo, vhi, mt, t_lo, t_hi));
    }
    i += bl;
  }
  return i;
}

/* quant_simd.c's mx_row8 with sixteen lanes */
AVX512 static inline __m512 mxfp_vec16(__m512 x, __m512 unscale, __m512 scale, __m512 maxn, __m512i emin, __m512i mb) {
  const __m512i signbit = _mm512_set1_epi32((int)0x80000000u);
  __m512 p = _mm512_mul_ps(_mm512_abs_ps(x), unscale);
  __m512i e =
      _mm512_max_epi32(_mm512_sub_epi32(_mm512_srli_epi32(_mm512_castps_si512(p), 23), _mm512_set1_epi32(127)), emin);
  __m512 k = _mm512_roundscale_ps(_mm512_mul_ps(p, pow2_ps512(_mm512_sub_epi32(mb, e))),
                                  _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
  __m512 q = _mm512_mul_ps(_mm512_min_ps(_mm512_mul_ps(k, pow2_ps512(_mm512_sub_epi32(e, mb))), maxn), scale);
  return _mm512_castsi512_ps(
      _mm512_or_si512(_mm512_castps_si512(q), _mm512_and_si512(_mm512_castps_si512(x), signbit)));
}

AVX512 static inline __m512 mxint8_vec16(__m512 x, __m512 up, __m512 down) {
  const __m512 hi = _mm512_set1_ps(127.0f), lo = _mm512_set1_ps(-127.0f), zero = _mm512_setzero_ps();
  __m512 k = _mm512_roundscale_ps(_mm512_mul_ps(x, up), _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
  k = _mm512_add_ps(_mm512_max_ps(_mm512_min_ps(k, hi), lo), zero); /* -0 + 0 = +0: a zero mantissa is +0 */
  return _mm512_mul_ps(k, down);
}

#define MX_BLOCK16(expr) \
  do { \
    size_t j_ = 0; \
    for (; j_ + 16 <= bl; j_ += 16) { \
      __m512 x = _mm512_loadu_ps(in + i + j_); \
      (void)x; \
      _mm512_storeu_ps(out + i + j_, expr); \
    } \
    if (j_ < bl) { \
      __mmask16 mask_ = (__mmask16)((1u << (bl - j_)) - 1); \
      __m512 x = _mm512_maskz_loadu_ps(mask_, in + i + j_); \
      (void)x; \
      _mm512_mask_storeu_ps(out + i + j_, mask_, expr); \
    } \
  } while (0)

AVX512 size_t slQ_avx512_mx_row(const float *in, float *out, size_t len, size_t k, int is_int, int emax, int mbits,
                                int bias, float max_normal) {
  const __m512 nan = _mm512_set1_ps(__builtin_nanf("")), zero = _mm512_setzero_ps(), maxn = _mm512_set1_ps(max_normal);
  const __m512i emin = _mm512_set1_epi32(1 - bias), mb = _mm512_set1_epi32(mbits),
                absmask = _mm512_set1_epi32(0x7FFFFFFF);
  size_t i = 0;
  for (; i < len; i += k) {
    size_t bl = len - i < k ? len - i : k, j = 0;
    __m512i v = _mm512_setzero_si512();
    for (; j + 16 <= bl; j += 16) v = _mm512_max_epu32(v, _mm512_and_si512(_mm512_loadu_si512(in + i + j), absmask));
    if (j < bl)
      v = _mm512_max_epu32(
          v, _mm512_and_si512(_mm512_maskz_loadu_epi32((__mmask16)((1u << (bl - j)) - 1), in + i + j), absmask));
    uint32_t top = (uint32_t)_mm512_reduce_max_epu32(v);
    int sc, plan = mx_plan(top, is_int, emax, &sc);
    if (plan == MX_REFERENCE) return i;
    __m512 up = pow2_ps512(_mm512_set1_epi32(-sc)), down = pow2_ps512(_mm512_set1_epi32(sc));
    if (plan == MX_NAN) MX_BLOCK16(nan);
    else if (plan == MX_ZERO)
      MX_BLOCK16(is_int ? zero : _mm512_castsi512_ps(_mm512_andnot_si512(absmask, _mm512_castps_si512(x))));
    else if (is_int) MX_BLOCK16(mxint8_vec16(x, up, down));
    else MX_BLOCK16(mxfp_vec16(x, up, down, maxn, emin, mb));
  }
  return i;
}

#endif
