/*
** quant_simd.c - the vector loops of the number formats: the AVX2 loops,
** and the choice between them, the AVX-512 ones (quant_avx512.c) and none.
**
** The project builds for x86-64-v2, so these are compiled with target
** attributes and chosen at run time (__builtin_cpu_supports), as
** kernels/simd.c does. The reference stays the binary64 code of
** quant_float.c and quant_block.c; every loop here gives the same bits, by
** construction:
**
**   block_fp, MX   float32 arithmetic. The reference scales a float by a
**                  power of two in binary64 (exact), rounds to an integer,
**                  clamps and scales back, then rounds once to float. In
**                  float32 the scaled value is exact while it is normal;
**                  when it overflows it clamps to the same top value, and
**                  when it falls below 2^-126 both round it to 0. The final
**                  product k * 2^s is one correctly rounded float multiply,
**                  the same single rounding as the reference's cast.
**                  quant_block.c calls these only where both powers of
**                  two are floats.
**   minifloat      float32 where every step is exact (quant_float.c's
**                  minifloat_float_fits: the formats the labs use): the
**                  one binary64 step of the reference, the exponent of
**                  |x| + 1e-9, is a comparison of 2^(E+1) - |x| (exact)
**                  with the float below 1e-9 (minifloat_f8). Elsewhere
**                  binary64, four lanes: quant_float.c's call-free loop op
**                  for op, exponents read from and written to bits.
**   log,           float32 where -B and emax are normal float exponents:
**   block_log      the exponent steps up at thresholds that scale with
**                  the bias, one table for all (log_table). Elsewhere
**                  binary64, four lanes: the reference's own additions
**                  (x + tau), with frexp replaced by reading the exponent
**                  and mantissa bits of a normal double, and 2^e built from
**                  bits (e clamped to [-150, 128] first, which rounds to
**                  float the same way: 0 below, infinity above).
**   block_fp,      a whole row at a time: each block's shared exponent
**   block_log, MX  comes from the bit pattern of its largest magnitude
**                  (for block_fp and block_log quant.c finds those first,
**                  for the zero-block fix), so no frexp or ldexp is called
**                  per block; a block's short tail goes through masked
**                  loads and stores.
**   binary,        the row sums of |x| in binary64, in the reference's
**   ternary        order: rounding is not associative, so the lanes are
**                  rows, eight at a time (a 4x4 transpose per four columns,
**                  two chains of four rows), each row adding its own values
**                  first to last. But most rows need no rounding at all:
**                  when the row's exponents span at most 29 - ceil(log2
**                  len) binades every partial sum is exact in binary64, so
**                  any order gives the same bits, and such a row is summed
**                  across its columns (abs_sum_exact8).
**   integer        float32 as quant_float.c's integer_fast.
**   AVX-512        where the CPU has AVX-512F, DQ and VL: the same loops
**                  with sixteen float lanes (eight binary64 lanes for the
**                  binary64 ones), selections through mask registers, in
**                  quant_avx512.c.
**
** tests/unit/test_quant_simd.c compares each with the reference over
** random and special values (NaN, infinities, zeros, subnormals, ties) and
** block sizes that do not divide the row, at every loop width the CPU has
** (slQ_simd_cap lowers it: AVX-512, AVX2, scalar).
*/
#include "quant_avx512.h"
#include "quant_bits.h"
#include "quant_simd.h"

#include <math.h>
#include <pthread.h>
#include <stdint.h>

#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>

#define AVX2 __attribute__((target("avx2,fma")))

/* 0: scalar only, 2: AVX2, 3: AVX-512 too; a test may lower it (slQ_simd_cap) */
static int level = -1, cap = 3;

static int simd_level(void) {
  if (level < 0) {
    int l = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma") ? 2 : 0;
    if (l && __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512dq") &&
        __builtin_cpu_supports("avx512vl"))
      l = 3;
    level = l;
  }
  return level < cap ? level : cap;
}

int slQ_simd_available(void) { return simd_level() >= 2; }
int slQ_simd_cap(int max) {
  cap = max;
  return simd_level();
}

AVX2 static __m256 pow2_ps(__m256i e) {
  return _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_add_epi32(e, _mm256_set1_epi32(127)), 23));
}

/* 2^e for 64-bit lanes of e, as a double (e within the normal range) */
AVX2 static __m256d pow2_pd(__m256i e) {
  return _mm256_castsi256_pd(_mm256_slli_epi64(_mm256_add_epi64(e, _mm256_set1_epi64x(1023)), 52));
}

AVX2 static __m256i clamp_epi64(__m256i e, __m256i lo, __m256i hi) {
  e = _mm256_blendv_epi8(e, lo, _mm256_cmpgt_epi64(lo, e));
  return _mm256_blendv_epi8(e, hi, _mm256_cmpgt_epi64(e, hi));
}

AVX2 static size_t minifloat4(const float *in, float *out, size_t n, int M, int B, int emax, int ieee, double inf_q_) {
  const __m256d absmask = _mm256_castsi256_pd(_mm256_set1_epi64x(0x7FFFFFFFFFFFFFFFll)),
                signmask = _mm256_set1_pd(-0.0);
  const __m256i mantmask = _mm256_set1_epi64x(0xFFFFFFFFFFFFFll), zero = _mm256_setzero_si256();
  const __m256i vlo = _mm256_set1_epi64x(-B), vhi = _mm256_set1_epi64x(emax), vm = _mm256_set1_epi64x(M);
  const __m256d eps = _mm256_set1_pd(1e-9), two_m = _mm256_set1_pd(ldexp(1.0, M)),
                inv_m = _mm256_set1_pd(ldexp(1.0, -M));
  const __m256d top = _mm256_set1_pd(ldexp(1.0, M) - 1), half_m = _mm256_set1_pd(ldexp(1.0, M - 1));
  const __m256d sub = _mm256_set1_pd(ldexp(1.0, 1 - B - M)), one = _mm256_set1_pd(1.0), dzero = _mm256_setzero_pd();
  const __m256d inf_q = _mm256_set1_pd(inf_q_), inf = _mm256_set1_pd(__builtin_inf());
  const __m128 fabsmask = _mm_castsi128_ps(_mm_set1_epi32(0x7FFFFFFF)), tiny = _mm_set1_ps(1e-8f);
  size_t i = 0;
  for (; i + 4 <= n; i += 4) {
    __m128 xf = _mm_loadu_ps(in + i);
    __m128 pass = _mm_or_ps(_mm_cmpunord_ps(xf, xf), _mm_cmple_ps(_mm_and_ps(xf, fabsmask), tiny));
    __m256d x = _mm256_cvtps_pd(xf), a = _mm256_and_pd(x, absmask), q;
    __m256i bits = _mm256_castpd_si256(_mm256_add_pd(a, eps));
    __m256i e = _mm256_sub_epi64(_mm256_srli_epi64(bits, 52), _mm256_set1_epi64x(1023));
    if (ieee) {
      e = clamp_epi64(e, vlo, vhi);
      __m256d r = _mm256_mul_pd(a, pow2_pd(_mm256_sub_epi64(zero, e)));
      __m256d k =
          _mm256_round_pd(_mm256_sub_pd(_mm256_mul_pd(r, two_m), two_m), _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
      __m256d normal = _mm256_mul_pd(
          _mm256_add_pd(one, _mm256_mul_pd(_mm256_min_pd(_mm256_max_pd(k, dzero), top), inv_m)), pow2_pd(e));
      __m256d ks = _mm256_round_pd(_mm256_mul_pd(r, half_m), _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
      __m256d subnormal = _mm256_mul_pd(_mm256_min_pd(_mm256_max_pd(ks, dzero), top), sub);
      q = _mm256_blendv_pd(subnormal, normal, _mm256_castsi256_pd(_mm256_cmpgt_epi64(e, vlo)));
    } else {
      /* clog2: one up unless a power of two */
      e = _mm256_sub_epi64(
          e, _mm256_andnot_si256(_mm256_cmpeq_epi64(_mm256_and_si256(bits, mantmask), zero), _mm256_set1_epi64x(-1)));
      e = clamp_epi64(e, vlo, vhi);
      __m256d k = _mm256_round_pd(_mm256_mul_pd(a, pow2_pd(_mm256_sub_epi64(vm, e))),
                                  _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
      q = _mm256_mul_pd(_mm256_min_pd(_mm256_max_pd(k, dzero), top), pow2_pd(_mm256_sub_epi64(e, vm)));
    }
    q = _mm256_blendv_pd(q, inf_q, _mm256_cmp_pd(a, inf, _CMP_EQ_OQ));
    q = _mm256_or_pd(q, _mm256_and_pd(x, signmask));
    _mm_storeu_ps(out + i, _mm_blendv_ps(_mm256_cvtpd_ps(q), xf, pass));
  }
  return i;
}

/* minifloat_ieee and minifloat_denorm in float32, eight lanes, where
** quant_float.c's minifloat_float_fits says every step is exact (see there). The
** one binary64 step of the reference is the exponent of a + 1e-9 (a = |x|):
** with E the float exponent of a and d = 2^(E+1) - a (exact), a + 1e-9
** rounds into the next binade exactly when d <= c, c the largest float
** below 1e-9 (no float lies within 2^-59 of 1e-9, so the half-ulp terms
** of binary64 rounding never matter); minifloat_denorm's ceiling also
** loses the 1e-9 on an exact power of two from 2^24 up. */
AVX2 static size_t minifloat_f8(const float *in, float *out, size_t n, int M, int B, int emax, int ieee, float inf_q_) {
  const __m256 absmask = _mm256_castsi256_ps(_mm256_set1_epi32(0x7FFFFFFF)), sign = _mm256_set1_ps(-0.0f);
  float c_ = (float)1e-9;
  if ((double)c_ > 1e-9) c_ = __builtin_nextafterf(c_, 0.0f);
  const __m256 tiny = _mm256_set1_ps(1e-8f), c = _mm256_set1_ps(c_), zero = _mm256_setzero_ps(),
               one = _mm256_set1_ps(1.0f);
  const __m256 two_m = _mm256_set1_ps((float)(1 << M)), inv_m = pow2_ps(_mm256_set1_epi32(-M));
  const __m256 top = _mm256_set1_ps((float)((1 << M) - 1)), inf = _mm256_set1_ps(__builtin_inff()),
               inf_q = _mm256_set1_ps(inf_q_);
  const __m256 sub_up = pow2_ps(_mm256_set1_epi32(B + M - 1)), sub_down = pow2_ps(_mm256_set1_epi32(1 - B - M));
  const __m256i vlo = _mm256_set1_epi32(-B), vhi = _mm256_set1_epi32(emax), vm = _mm256_set1_epi32(M);
  const __m256i i127 = _mm256_set1_epi32(127), i1 = _mm256_set1_epi32(1), i23 = _mm256_set1_epi32(23);
  const __m256i mantmask = _mm256_set1_epi32(0x7FFFFF), izero = _mm256_setzero_si256();
  size_t i = 0;
  for (; i + 8 <= n; i += 8) {
    __m256 x = _mm256_loadu_ps(in + i), a = _mm256_and_ps(x, absmask), q;
    __m256 pass = _mm256_or_ps(_mm256_cmp_ps(x, x, _CMP_UNORD_Q), _mm256_cmp_ps(a, tiny, _CMP_LE_OQ));
    __m256i bits = _mm256_castps_si256(a), E = _mm256_sub_epi32(_mm256_srli_epi32(bits, 23), i127);
    __m256 d = _mm256_sub_ps(pow2_ps(_mm256_add_epi32(E, i1)), a);
    __m256i cross = _mm256_castps_si256(_mm256_cmp_ps(d, c, _CMP_LE_OQ)), e; /* -1 where a + 1e-9 reaches 2^(E+1) */
    if (ieee) {
      e = _mm256_sub_epi32(E, cross);
    } else {
      __m256i absorbed =
          _mm256_and_si256(_mm256_cmpeq_epi32(_mm256_and_si256(bits, mantmask), izero), _mm256_cmpgt_epi32(E, i23));
      e = _mm256_add_epi32(_mm256_sub_epi32(_mm256_add_epi32(E, i1), cross), absorbed);
    }
    e = _mm256_max_epi32(_mm256_min_epi32(e, vhi), vlo);
    if (ieee) {
      __m256 k = _mm256_round_ps(_mm256_sub_ps(_mm256_mul_ps(a, pow2_ps(_mm256_sub_epi32(vm, e))), two_m),
                                 _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
      __m256 normal = _mm256_mul_ps(
          _mm256_add_ps(one, _mm256_mul_ps(_mm256_min_ps(_mm256_max_ps(k, zero), top), inv_m)), pow2_ps(e));
      __m256 ks = _mm256_round_ps(_mm256_mul_ps(a, sub_up), _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
      __m256 subnormal = _mm256_mul_ps(_mm256_min_ps(_mm256_max_ps(ks, zero), top), sub_down);
      q = _mm256_blendv_ps(subnormal, normal, _mm256_castsi256_ps(_mm256_cmpgt_epi32(e, vlo)));
    } else {
      __m256 k = _mm256_round_ps(_mm256_mul_ps(a, pow2_ps(_mm256_sub_epi32(vm, e))),
                                 _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
      q = _mm256_mul_ps(_mm256_min_ps(_mm256_max_ps(k, zero), top), pow2_ps(_mm256_sub_epi32(e, vm)));
    }
    q = _mm256_blendv_ps(q, inf_q, _mm256_cmp_ps(a, inf, _CMP_EQ_OQ));
    q = _mm256_or_ps(q, _mm256_and_ps(x, sign));
    _mm256_storeu_ps(out + i, _mm256_blendv_ps(q, x, pass));
  }
  return i;
}

/* MX floating-point elements of one vector (see slQ_simd_mxfp) */
AVX2 static inline __m256 mxfp_vec(__m256 x, __m256 unscale, __m256 scale, __m256 maxn, __m256i emin, __m256i mb) {
  const __m256 absmask = _mm256_castsi256_ps(_mm256_set1_epi32(0x7FFFFFFF)), sign = _mm256_set1_ps(-0.0f);
  __m256 p = _mm256_mul_ps(_mm256_and_ps(x, absmask), unscale);
  __m256i e = _mm256_sub_epi32(_mm256_srli_epi32(_mm256_castps_si256(p), 23), _mm256_set1_epi32(127));
  e = _mm256_max_epi32(e, emin);
  __m256 k = _mm256_round_ps(_mm256_mul_ps(p, pow2_ps(_mm256_sub_epi32(mb, e))),
                             _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
  __m256 q = _mm256_min_ps(_mm256_mul_ps(k, pow2_ps(_mm256_sub_epi32(e, mb))), maxn);
  return _mm256_or_ps(_mm256_mul_ps(q, scale), _mm256_and_ps(x, sign));
}

/* MXINT8 elements of one vector (see slQ_simd_mxint8) */
AVX2 static inline __m256 mxint8_vec(__m256 x, __m256 up, __m256 down) {
  const __m256 hi = _mm256_set1_ps(127.0f), lo = _mm256_set1_ps(-127.0f), zero = _mm256_setzero_ps();
  __m256 k = _mm256_round_ps(_mm256_mul_ps(x, up), _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
  k = _mm256_add_ps(_mm256_max_ps(_mm256_min_ps(k, hi), lo), zero); /* -0 + 0 = +0: a zero mantissa is +0 */
  return _mm256_mul_ps(k, down);
}

AVX2 static size_t mxfp8(const float *in, float *out, size_t n, float unscale, float scale, int mbits, int bias,
                         float max_normal) {
  const __m256 vu = _mm256_set1_ps(unscale), vs = _mm256_set1_ps(scale), maxn = _mm256_set1_ps(max_normal);
  const __m256i emin = _mm256_set1_epi32(1 - bias), mb = _mm256_set1_epi32(mbits);
  size_t i = 0;
  for (; i + 8 <= n; i += 8) _mm256_storeu_ps(out + i, mxfp_vec(_mm256_loadu_ps(in + i), vu, vs, maxn, emin, mb));
  return i;
}

AVX2 static size_t mxint8_8(const float *in, float *out, size_t n, float up, float down) {
  const __m256 vu = _mm256_set1_ps(up), vd = _mm256_set1_ps(down);
  size_t i = 0;
  for (; i + 8 <= n; i += 8) _mm256_storeu_ps(out + i, mxint8_vec(_mm256_loadu_ps(in + i), vu, vd));
  return i;
}

/* |x| of four rows at column i as binary64 lanes (row k in lane k): a 4x4
** transpose of the floats, so each lane's sum still adds its own row in order */
#define ABS_COLUMNS(p, i, c0, c1, c2, c3) \
  do { \
    __m128 t0 = _mm_loadu_ps((p)[0] + (i)), t1 = _mm_loadu_ps((p)[1] + (i)), t2 = _mm_loadu_ps((p)[2] + (i)), \
           t3 = _mm_loadu_ps((p)[3] + (i)); \
    _MM_TRANSPOSE4_PS(t0, t1, t2, t3); \
    c0 = _mm256_and_pd(_mm256_cvtps_pd(t0), absmask), c1 = _mm256_and_pd(_mm256_cvtps_pd(t1), absmask); \
    c2 = _mm256_and_pd(_mm256_cvtps_pd(t2), absmask), c3 = _mm256_and_pd(_mm256_cvtps_pd(t3), absmask); \
  } while (0)

/* kept values only: |x| > delta adds |x| and counts one, others add +0.0 (which changes no sum) */
#define KEEP(c, d, cnt) \
  do { \
    __m256d m_ = _mm256_cmp_pd(c, d, _CMP_GT_OQ); \
    cnt = _mm256_sub_epi64(cnt, _mm256_castpd_si256(m_)); \
    c = _mm256_and_pd(c, m_); \
  } while (0)

/* eight rows at once, two chains of four lanes, so the adds' latency overlaps */
AVX2 static void abs_sums8(const float *x, size_t stride, size_t len, const double *delta, double *sums,
                           size_t *counts) {
  const __m256d absmask = _mm256_castsi256_pd(_mm256_set1_epi64x(0x7FFFFFFFFFFFFFFFll));
  const float *lo[4] = {x, x + stride, x + 2 * stride, x + 3 * stride};
  const float *hi[4] = {x + 4 * stride, x + 5 * stride, x + 6 * stride, x + 7 * stride};
  __m256d s0 = _mm256_setzero_pd(), s1 = _mm256_setzero_pd();
  __m256i n0 = _mm256_setzero_si256(), n1 = _mm256_setzero_si256();
  size_t i = 0;
  if (!delta) {
    for (; i + 4 <= len; i += 4) {
      __m256d a0, a1, a2, a3, b0, b1, b2, b3;
      ABS_COLUMNS(lo, i, a0, a1, a2, a3);
      ABS_COLUMNS(hi, i, b0, b1, b2, b3);
      s0 = _mm256_add_pd(s0, a0), s1 = _mm256_add_pd(s1, b0);
      s0 = _mm256_add_pd(s0, a1), s1 = _mm256_add_pd(s1, b1);
      s0 = _mm256_add_pd(s0, a2), s1 = _mm256_add_pd(s1, b2);
      s0 = _mm256_add_pd(s0, a3), s1 = _mm256_add_pd(s1, b3);
    }
  } else {
    const __m256d d0 = _mm256_loadu_pd(delta), d1 = _mm256_loadu_pd(delta + 4);
    for (; i + 4 <= len; i += 4) {
      __m256d a0, a1, a2, a3, b0, b1, b2, b3;
      ABS_COLUMNS(lo, i, a0, a1, a2, a3);
      ABS_COLUMNS(hi, i, b0, b1, b2, b3);
      KEEP(a0, d0, n0);
      KEEP(a1, d0, n0);
      KEEP(a2, d0, n0);
      KEEP(a3, d0, n0);
      KEEP(b0, d1, n1);
      KEEP(b1, d1, n1);
      KEEP(b2, d1, n1);
      KEEP(b3, d1, n1);
      s0 = _mm256_add_pd(s0, a0), s1 = _mm256_add_pd(s1, b0);
      s0 = _mm256_add_pd(s0, a1), s1 = _mm256_add_pd(s1, b1);
      s0 = _mm256_add_pd(s0, a2), s1 = _mm256_add_pd(s1, b2);
      s0 = _mm256_add_pd(s0, a3), s1 = _mm256_add_pd(s1, b3);
    }
  }
  int64_t c[8];
  _mm256_storeu_pd(sums, s0), _mm256_storeu_pd(sums + 4, s1);
  _mm256_storeu_si256((__m256i *)c, n0), _mm256_storeu_si256((__m256i *)(c + 4), n1);
  for (int r = 0; r < 8; r++) { /* the rest of each row, still in order */
    const float *p = x + (size_t)r * stride;
    for (size_t j = i; j < len; j++) {
      double a = fabs((double)p[j]);
      if (!delta) sums[r] += a;
      else if (a > delta[r]) sums[r] += a, c[r]++;
    }
    if (counts) counts[r] = (size_t)c[r];
  }
}

AVX2 static size_t ternary8(const float *x, float *y, size_t n, float t_, float alpha_) {
  const __m256 t = _mm256_set1_ps(t_), mt = _mm256_set1_ps(-t_), alpha = _mm256_set1_ps(alpha_),
               one = _mm256_set1_ps(1.0f);
  size_t i = 0;
  for (; i + 8 <= n; i += 8) {
    __m256 v = _mm256_loadu_ps(x + i);
    __m256 s = _mm256_sub_ps(_mm256_and_ps(_mm256_cmp_ps(v, t, _CMP_GT_OQ), one),
                             _mm256_and_ps(_mm256_cmp_ps(v, mt, _CMP_LT_OQ), one));
    _mm256_storeu_ps(y + i, _mm256_mul_ps(alpha, s));
  }
  return i;
}

AVX2 static size_t binary8(const float *x, float *y, size_t n, float a_, int bipolar) {
  const __m256 a = _mm256_set1_ps(a_), zero = _mm256_setzero_ps(), one = _mm256_set1_ps(1.0f),
               minus = _mm256_set1_ps(-1.0f);
  size_t i = 0;
  for (; i + 8 <= n; i += 8) {
    __m256 v = _mm256_loadu_ps(x + i);
    __m256 r = bipolar ? _mm256_blendv_ps(minus, one, _mm256_cmp_ps(v, zero, _CMP_GE_OQ))
                       : _mm256_and_ps(_mm256_cmp_ps(v, zero, _CMP_GT_OQ), a);
    _mm256_storeu_ps(y + i, r);
  }
  return i;
}

/* integer_fast's float32 arithmetic: rint(x * scale) clamped to [qmin, qmax] (a NaN passes both
** tests unchanged, as the scalar comparisons let it), times inv */
AVX2 static size_t integer8(const float *in, float *out, size_t n, float scale_, float inv_, float qmin_, float qmax_) {
  const __m256 scale = _mm256_set1_ps(scale_), inv = _mm256_set1_ps(inv_), qmin = _mm256_set1_ps(qmin_),
               qmax = _mm256_set1_ps(qmax_);
  size_t i = 0;
  for (; i + 8 <= n; i += 8) {
    __m256 v =
        _mm256_round_ps(_mm256_mul_ps(_mm256_loadu_ps(in + i), scale), _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
    v = _mm256_blendv_ps(v, qmin, _mm256_cmp_ps(v, qmin, _CMP_LT_OQ));
    v = _mm256_blendv_ps(v, qmax, _mm256_cmp_ps(v, qmax, _CMP_GT_OQ));
    _mm256_storeu_ps(out + i, _mm256_mul_ps(v, inv));
  }
  return i;
}

size_t slQ_simd_integer(const float *in, float *out, size_t n, float scale, float inv, float qmin, float qmax) {
  return slQ_simd_available() ? integer8(in, out, n, scale, inv, qmin, qmax) : 0;
}

/* the first rem lanes of eight (four) */
AVX2 static __m256i lanes8(size_t rem) {
  return _mm256_cmpgt_epi32(_mm256_set1_epi32((int)rem), _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
}
AVX2 static __m128i lanes4(size_t rem) { return _mm_cmpgt_epi32(_mm_set1_epi32((int)rem), _mm_setr_epi32(0, 1, 2, 3)); }

/* block_fp elements of one vector: q = min(rint((|x| + 1e-9f) * up), top) * down with x's sign;
** |x| <= 1e-8f passes through; nan_block: every other value is NaN */
AVX2 static inline __m256 block_fp_vec(__m256 x, __m256 up, __m256 down, __m256 top, int nan_block) {
  const __m256 absmask = _mm256_castsi256_ps(_mm256_set1_epi32(0x7FFFFFFF)), sign = _mm256_set1_ps(-0.0f);
  const __m256 tiny = _mm256_set1_ps(1e-8f), eps = _mm256_set1_ps(1e-9f), nan = _mm256_set1_ps(__builtin_nanf(""));
  __m256 ax = _mm256_and_ps(x, absmask), pass = _mm256_cmp_ps(ax, tiny, _CMP_LE_OQ);
  if (nan_block) return _mm256_blendv_ps(nan, x, pass);
  __m256 k = _mm256_round_ps(_mm256_mul_ps(_mm256_add_ps(ax, eps), up), _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
  __m256 q = _mm256_or_ps(_mm256_mul_ps(_mm256_min_ps(k, top), down), _mm256_and_ps(x, sign));
  return _mm256_blendv_ps(q, x, _mm256_or_ps(pass, _mm256_cmp_ps(x, x, _CMP_UNORD_Q)));
}

AVX2 static size_t block_fp_row8(const float *in, float *out, size_t len, size_t k, const uint32_t *m, uint32_t zero_as,
                                 int M, int B, int emax) {
  const __m256 top = _mm256_set1_ps((float)((1 << M) - 1));
  size_t i = 0;
  for (size_t b = 0; i < len; b++) {
    size_t bl = len - i < k ? len - i : k, j = 0;
    uint32_t mb = m[b] ? m[b] : zero_as;
    int nan_block = mb > 0x7F800000u, es = block_fp_exponent(mb, M, B, emax);
    if (M - es > 126 || M - es < -126) return i; /* the scales are not normal floats: the caller's scalar code */
    __m256 up = pow2_ps(_mm256_set1_epi32(M - es)), down = pow2_ps(_mm256_set1_epi32(es - M));
    const float *x = in + i;
    float *y = out + i;
    for (; j + 8 <= bl; j += 8) _mm256_storeu_ps(y + j, block_fp_vec(_mm256_loadu_ps(x + j), up, down, top, nan_block));
    if (j < bl) {
      __m256i mask = lanes8(bl - j);
      _mm256_maskstore_ps(y + j, mask, block_fp_vec(_mm256_maskload_ps(x + j, mask), up, down, top, nan_block));
    }
    i += bl;
  }
  return i;
}

/* log elements of four values: 2^clamp(nlog2(|x| + tau), lo, hi) with the sign of x + tau, 0 where x + tau
** is 0, in binary64 as the reference; lo and hi the exponent range clamped to [-150, 128] */
AVX2 static inline __m128 log_vec(__m128 xf, __m256d tau, __m256i vlo, __m256i vhi) {
  const __m256d absmask = _mm256_castsi256_pd(_mm256_set1_epi64x(0x7FFFFFFFFFFFFFFFll));
  const __m256d signmask = _mm256_set1_pd(-0.0), zero = _mm256_setzero_pd();
  const __m256i mantmask = _mm256_set1_epi64x(0xFFFFFFFFFFFFFll), bias = _mm256_set1_epi64x(1023);
  double sqrt2 = 2 * 0.70710678118654752440; /* nlog2 rounds up from a mantissa of 2 sqrt(1/2), as frexp's test */
  int64_t sqrt2_bits;
  __builtin_memcpy(&sqrt2_bits, &sqrt2, sizeof sqrt2_bits);
  const __m256i sqrt2_m1 = _mm256_set1_epi64x((sqrt2_bits & 0xFFFFFFFFFFFFFll) - 1);
  __m256d x = _mm256_cvtps_pd(xf);
  __m256d s = _mm256_add_pd(x, tau), a = _mm256_add_pd(_mm256_and_pd(x, absmask), tau);
  __m256i bits = _mm256_castpd_si256(a);
  __m256i e = _mm256_sub_epi64(_mm256_srli_epi64(bits, 52), bias);
  e = _mm256_sub_epi64(e, _mm256_cmpgt_epi64(_mm256_and_si256(bits, mantmask), sqrt2_m1));
  e = _mm256_blendv_epi8(e, vlo, _mm256_cmpgt_epi64(vlo, e));
  e = _mm256_blendv_epi8(e, vhi, _mm256_cmpgt_epi64(e, vhi));
  __m256d q = _mm256_castsi256_pd(_mm256_slli_epi64(_mm256_add_epi64(e, bias), 52));
  q = _mm256_or_pd(q, _mm256_and_pd(s, signmask));
  q = _mm256_andnot_pd(_mm256_cmp_pd(s, zero, _CMP_EQ_OQ), q);
  return _mm_blendv_ps(_mm256_cvtpd_ps(q), xf, _mm_cmpunord_ps(xf, xf));
}

AVX2 static size_t log4(const float *in, float *out, size_t n, double tau, int emin, int emax) {
  const __m256d vtau = _mm256_set1_pd(tau);
  const __m256i vlo = _mm256_set1_epi64x(clamp150(emin)), vhi = _mm256_set1_epi64x(clamp150(emax));
  size_t i = 0;
  for (; i + 4 <= n; i += 4) _mm_storeu_ps(out + i, log_vec(_mm_loadu_ps(in + i), vtau, vlo, vhi));
  return i;
}

AVX2 static size_t block_log_row4(const float *in, float *out, size_t len, size_t k, const uint32_t *m,
                                  uint32_t zero_as, int Eb, int bias_width) {
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
    __m256d tau = _mm256_set1_pd(0.1 * pow2d(-B));
    __m256i vlo = _mm256_set1_epi64x(clamp150(-B)), vhi = _mm256_set1_epi64x(clamp150((1 << Eb) - 1 - B));
    for (; j + 4 <= bl; j += 4) _mm_storeu_ps(y + j, log_vec(_mm_loadu_ps(x + j), tau, vlo, vhi));
    if (j < bl) {
      __m128i mask = lanes4(bl - j);
      _mm_maskstore_ps(y + j, mask, log_vec(_mm_maskload_ps(x + j, mask), tau, vlo, vhi));
    }
    i += bl;
  }
  return i;
}

size_t slQ_simd_minifloat_f32(const float *in, float *out, size_t n, int M, int B, int emax, int ieee, float inf_q) {
  int l = simd_level();
  size_t i = l >= 3 ? slQ_avx512_minifloat_f32(in, out, n, M, B, emax, ieee, inf_q) : 0;
  return l >= 2 ? i + minifloat_f8(in + i, out + i, n - i, M, B, emax, ieee, inf_q) : 0;
}

/* The log formats in float32. e = nlog2(|x| + tau) steps up by one at the
** smallest float whose sum with tau, in binary64, reaches 2 sqrt(1/2) 2^j.
** With tau = 0.1 2^-B, binary64 rounding commutes with the scaling by 2^-B,
** so those thresholds are the ones for tau = 0.1 scaled: one table, for j
** + B = r from 0 up, each threshold lying in binade r (so only its mantissa
** bits are kept), the same mantissa from r = 31 on (0.1 is then far below
** the float spacing). Then with E the exponent of |x|:
** e = E + (mantissa of |x| >= table[E + B]), clamped to [-B, emax]; below
** binade -B the clamp decides. The sign is that of x + tau: negative
** exactly where x < -tau, that is -x above the largest float below tau.
** It is used where -B and emax are within the normal floats (every
** threshold, tau's float and 2^e are then exact). */
static uint32_t log_mantissa[32];
static pthread_once_t log_once = PTHREAD_ONCE_INIT;

static void log_table(void) {
  for (int r = 0; r < 32; r++) {
    double c = 2 * 0.70710678118654752440 * ldexp(1.0, r);
    float f = (float)(c - 0.1);
    while ((double)f + 0.1 >= c) f = nextafterf(f, 0.0f);
    while (!((double)f + 0.1 >= c)) f = nextafterf(f, INFINITY);
    uint32_t bits;
    __builtin_memcpy(&bits, &f, sizeof bits);
    log_mantissa[r] = bits & 0x7FFFFFu;
  }
}

/* the table, made once; the AVX-512 loops take it as an argument */
static const uint32_t *log_thresholds(void) {
  pthread_once(&log_once, log_table);
  return log_mantissa;
}

AVX2 static inline __m256 log_f32_vec(__m256 x, __m256i vb, __m256i vlo, __m256i vhi, __m256 minus_tau) {
  const __m256 absmask = _mm256_castsi256_ps(_mm256_set1_epi32(0x7FFFFFFF)), sign = _mm256_set1_ps(-0.0f);
  const __m256i i127 = _mm256_set1_epi32(127), mantmask = _mm256_set1_epi32(0x7FFFFF), izero = _mm256_setzero_si256();
  const __m256i i31 = _mm256_set1_epi32(31);
  __m256i bits = _mm256_castps_si256(_mm256_and_ps(x, absmask)),
          E = _mm256_sub_epi32(_mm256_srli_epi32(bits, 23), i127);
  __m256i r = _mm256_min_epi32(_mm256_max_epi32(_mm256_add_epi32(E, vb), izero), i31);
  __m256i t = _mm256_i32gather_epi32((const int *)log_mantissa, r, 4);
  __m256i up = _mm256_cmpgt_epi32(_mm256_and_si256(bits, mantmask), _mm256_sub_epi32(t, _mm256_set1_epi32(1)));
  __m256i e = _mm256_max_epi32(_mm256_min_epi32(_mm256_sub_epi32(E, up), vhi), vlo);
  __m256 q = _mm256_or_ps(pow2_ps(e), _mm256_and_ps(_mm256_cmp_ps(x, minus_tau, _CMP_LT_OQ), sign));
  return _mm256_blendv_ps(q, x, _mm256_cmp_ps(x, x, _CMP_UNORD_Q));
}

AVX2 static size_t log_f8(const float *in, float *out, size_t n, int B, int emax) {
  pthread_once(&log_once, log_table);
  const __m256i vb = _mm256_set1_epi32(B), vlo = _mm256_set1_epi32(-B), vhi = _mm256_set1_epi32(emax);
  const __m256 mt = _mm256_set1_ps(-tau_float(B));
  size_t i = 0;
  for (; i + 8 <= n; i += 8) _mm256_storeu_ps(out + i, log_f32_vec(_mm256_loadu_ps(in + i), vb, vlo, vhi, mt));
  return i;
}

AVX2 static size_t block_log_f32_row8(const float *in, float *out, size_t len, size_t k, const uint32_t *m,
                                      uint32_t zero_as, int Eb, int bias_width) {
  pthread_once(&log_once, log_table);
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
    const __m256i vb = _mm256_set1_epi32(B), vlo = _mm256_set1_epi32(-B), vhi = _mm256_set1_epi32((1 << Eb) - 1 - B);
    const __m256 mt = _mm256_set1_ps(-tau_float(B));
    for (; j + 8 <= bl; j += 8) _mm256_storeu_ps(y + j, log_f32_vec(_mm256_loadu_ps(x + j), vb, vlo, vhi, mt));
    if (j < bl) {
      __m256i mask = lanes8(bl - j);
      _mm256_maskstore_ps(y + j, mask, log_f32_vec(_mm256_maskload_ps(x + j, mask), vb, vlo, vhi, mt));
    }
    i += bl;
  }
  return i;
}

size_t slQ_simd_log_f32(const float *in, float *out, size_t n, int B, int emax) {
  int l = simd_level();
  size_t i = l >= 3 ? slQ_avx512_log_f32(in, out, n, B, emax, log_thresholds()) : 0;
  return l >= 2 ? i + log_f8(in + i, out + i, n - i, B, emax) : 0;
}

size_t slQ_simd_block_fp_row(const float *in, float *out, size_t len, size_t k, const uint32_t *m, uint32_t zero_as,
                             int M, int B, int emax) {
  int l = simd_level();
  return l >= 3   ? slQ_avx512_block_fp_row(in, out, len, k, m, zero_as, M, B, emax)
         : l >= 2 ? block_fp_row8(in, out, len, k, m, zero_as, M, B, emax)
                  : 0;
}
size_t slQ_simd_block_log_row(const float *in, float *out, size_t len, size_t k, const uint32_t *m, uint32_t zero_as,
                              int Eb, int bias_width) {
  int l = simd_level();
  if (l >= 2 && (1 << bias_width) - 1 <= 120 && (1 << Eb) - 1 <= 127) /* every block's -B and emax normal floats */
    return l >= 3 ? slQ_avx512_block_log_f32_row(in, out, len, k, m, zero_as, Eb, bias_width, log_thresholds())
                  : block_log_f32_row8(in, out, len, k, m, zero_as, Eb, bias_width);
  return l >= 2 ? block_log_row4(in, out, len, k, m, zero_as, Eb, bias_width) : 0;
}

AVX2 static size_t abs_bits_max8(const float *x, size_t n, uint32_t *top) {
  const __m256i absmask = _mm256_set1_epi32(0x7FFFFFFF);
  __m256i m = _mm256_setzero_si256();
  size_t i = 0;
  for (; i + 8 <= n; i += 8)
    m = _mm256_max_epu32(m, _mm256_and_si256(_mm256_loadu_si256((const __m256i *)(x + i)), absmask));
  __m128i h = _mm_max_epu32(_mm256_castsi256_si128(m), _mm256_extracti128_si256(m, 1));
  h = _mm_max_epu32(h, _mm_shuffle_epi32(h, 0x4E));
  h = _mm_max_epu32(h, _mm_shuffle_epi32(h, 0xB1));
  *top = (uint32_t)_mm_cvtsi128_si32(h);
  return i;
}

/* the zero-block fix's candidate: pattern - 1 for a finite non-zero maximum, UINT32_MAX for the others */
static uint32_t nonzero_finite_less_one(uint32_t v) { return v - 1u < 0x7F7FFFFFu ? v - 1u : UINT32_MAX; }

/* the largest bit pattern of |x| over one block of bl values (a short one through a masked load) */
AVX2 static inline uint32_t block_abs_max(const float *x, size_t bl) {
  const __m256i absmask = _mm256_set1_epi32(0x7FFFFFFF);
  __m256i v = _mm256_setzero_si256();
  size_t j = 0;
  for (; j + 8 <= bl; j += 8)
    v = _mm256_max_epu32(v, _mm256_and_si256(_mm256_loadu_si256((const __m256i *)(x + j)), absmask));
  if (j < bl)
    v = _mm256_max_epu32(v, _mm256_and_si256(_mm256_castps_si256(_mm256_maskload_ps(x + j, lanes8(bl - j))), absmask));
  __m128i h = _mm_max_epu32(_mm256_castsi256_si128(v), _mm256_extracti128_si256(v, 1));
  h = _mm_max_epu32(h, _mm_shuffle_epi32(h, 0x4E));
  h = _mm_max_epu32(h, _mm_shuffle_epi32(h, 0xB1));
  return (uint32_t)_mm_cvtsi128_si32(h);
}

/* one MX block of bl values, whole vectors and a masked tail */
#define MX_BLOCK(expr) \
  do { \
    size_t j_ = 0; \
    for (; j_ + 8 <= bl; j_ += 8) { \
      __m256 x = _mm256_loadu_ps(in + i + j_); \
      (void)x; \
      _mm256_storeu_ps(out + i + j_, expr); \
    } \
    if (j_ < bl) { \
      __m256i mask_ = lanes8(bl - j_); \
      __m256 x = _mm256_maskload_ps(in + i + j_, mask_); \
      (void)x; \
      _mm256_maskstore_ps(out + i + j_, mask_, expr); \
    } \
  } while (0)

AVX2 static size_t mx_row8(const float *in, float *out, size_t len, size_t k, int is_int, int emax, int mbits, int bias,
                           float max_normal) {
  const __m256 nan = _mm256_set1_ps(__builtin_nanf("")), zero = _mm256_setzero_ps(), sign = _mm256_set1_ps(-0.0f);
  const __m256 maxn = _mm256_set1_ps(max_normal);
  const __m256i emin = _mm256_set1_epi32(1 - bias), mb = _mm256_set1_epi32(mbits);
  size_t i = 0;
  for (; i < len; i += k) {
    size_t bl = len - i < k ? len - i : k;
    uint32_t top = block_abs_max(in + i, bl);
    int sc, plan = mx_plan(top, is_int, emax, &sc);
    if (plan == MX_REFERENCE) return i;
    __m256 up = pow2_ps(_mm256_set1_epi32(-sc)), down = pow2_ps(_mm256_set1_epi32(sc));
    if (plan == MX_NAN) MX_BLOCK(nan);
    else if (plan == MX_ZERO) MX_BLOCK(is_int ? zero : _mm256_and_ps(x, sign));
    else if (is_int) MX_BLOCK(mxint8_vec(x, up, down));
    else MX_BLOCK(mxfp_vec(x, up, down, maxn, emin, mb));
  }
  return i;
}

size_t slQ_simd_mx_row(const float *in, float *out, size_t len, size_t k, int is_int, int emax, int mbits, int bias,
                       float max_normal) {
  int l = simd_level();
  return l >= 3   ? slQ_avx512_mx_row(in, out, len, k, is_int, emax, mbits, bias, max_normal)
         : l >= 2 ? mx_row8(in, out, len, k, is_int, emax, mbits, bias, max_normal)
                  : 0;
}

AVX2 static uint32_t block_maxima_row8(const float *x, size_t len, size_t k, uint32_t *m) {
  uint32_t smallest = UINT32_MAX;
  for (size_t i = 0, b = 0; i < len; i += k, b++) {
    m[b] = block_abs_max(x + i, len - i < k ? len - i : k);
    uint32_t c = nonzero_finite_less_one(m[b]);
    smallest = c < smallest ? c : smallest;
  }
  return smallest;
}

int slQ_simd_block_maxima(const float *x, size_t len, size_t k, uint32_t *m, uint32_t *smallest) {
  if (!slQ_simd_available()) return 0;
  *smallest = block_maxima_row8(x, len, k, m);
  return 1;
}

size_t slQ_simd_abs_bits_max(const float *x, size_t n, uint32_t *top) {
  *top = 0;
  return slQ_simd_available() ? abs_bits_max8(x, n, top) : 0;
}
/* ceil(log2 n) for n >= 1 */
static int ceil_log2(size_t n) {
  int k = 0;
  while (k < 63 && ((size_t)1 << k) < n) k++;
  return k;
}

/* The sum of |x| over a row in any order, kept only where it is exact and
** so equals the reference's ordered sum: every |x| is a multiple of the ulp
** u of the smallest non-zero one, every partial sum is a multiple of u below
** len * 2^(fmax - 126), and a double holds every such multiple exactly while
** len * 2^(fmax - fmin + 24) <= 2^53 (f: exponent fields, a subnormal's
** counted as 1, whose ulp it shares). */
/* one vector of 8 |x| (bits b, sign cleared) into the exponent range and two sums */
#define EXACT_STEP(b, sa, sb) \
  do { \
    __m256i f_ = _mm256_srli_epi32(b, 23); \
    fmax = _mm256_max_epu32(fmax, f_); \
    fmin = _mm256_min_epu32(fmin, _mm256_blendv_epi8(_mm256_max_epu32(f_, one), none, _mm256_cmpeq_epi32(b, izero))); \
    __m256 a_ = _mm256_castsi256_ps(b); \
    sa = _mm256_add_pd(sa, _mm256_cvtps_pd(_mm256_castps256_ps128(a_))); \
    sb = _mm256_add_pd(sb, _mm256_cvtps_pd(_mm256_extractf128_ps(a_, 1))); \
  } while (0)

AVX2 static int abs_sum_exact8(const float *x, size_t len, double *sum) {
  const __m256i absmask = _mm256_set1_epi32(0x7FFFFFFF), one = _mm256_set1_epi32(1), none = _mm256_set1_epi32(255);
  const __m256i izero = _mm256_setzero_si256();
  __m256d s0 = _mm256_setzero_pd(), s1 = _mm256_setzero_pd(), s2 = _mm256_setzero_pd(), s3 = _mm256_setzero_pd();
  __m256i fmax = izero, fmin = none;
  size_t i = 0;
  for (; i + 16 <= len; i += 16) { /* four accumulators, so the adds' latency overlaps */
    __m256i b0 = _mm256_and_si256(_mm256_loadu_si256((const __m256i *)(x + i)), absmask);
    __m256i b1 = _mm256_and_si256(_mm256_loadu_si256((const __m256i *)(x + i + 8)), absmask);
    EXACT_STEP(b0, s0, s1);
    EXACT_STEP(b1, s2, s3);
  }
  for (; i < len; i += 8) {
    __m256i b = i + 8 <= len ? _mm256_loadu_si256((const __m256i *)(x + i))
                             : _mm256_castps_si256(_mm256_maskload_ps(x + i, lanes8(len - i))); /* zeros past the end */
    b = _mm256_and_si256(b, absmask);
    EXACT_STEP(b, s0, s1);
  }
  uint32_t hi[8], lo[8], top = 0, bottom = 255;
  _mm256_storeu_si256((__m256i *)hi, fmax), _mm256_storeu_si256((__m256i *)lo, fmin);
  for (int k = 0; k < 8; k++) top = hi[k] > top ? hi[k] : top, bottom = lo[k] < bottom ? lo[k] : bottom;
  if (top >= 255) return 0; /* an infinity or a NaN: the ordered sum decides its NaN */
  if (bottom < 255 && (int)(top - bottom) > 29 - ceil_log2(len)) return 0;
  double t[4];
  _mm256_storeu_pd(t, _mm256_add_pd(_mm256_add_pd(s0, s2), _mm256_add_pd(s1, s3)));
  *sum = (t[0] + t[1]) + (t[2] + t[3]);
  return 1;
}

/* one vector of 8 |x| into the kept sums and counts */
#define KEPT_STEP(v, sa, sb, na, nb) \
  do { \
    __m256d a0_ = _mm256_cvtps_pd(_mm256_castps256_ps128(v)), a1_ = _mm256_cvtps_pd(_mm256_extractf128_ps(v, 1)); \
    KEEP(a0_, d, na); \
    KEEP(a1_, d, nb); \
    sa = _mm256_add_pd(sa, a0_), sb = _mm256_add_pd(sb, a1_); \
  } while (0)

/* the kept values of a row whose sum abs_sum_exact8 found exact (so is any subset's) */
AVX2 static void kept_sum8(const float *x, size_t len, double delta, double *kept, size_t *count) {
  const __m256 absmask = _mm256_castsi256_ps(_mm256_set1_epi32(0x7FFFFFFF));
  const __m256d d = _mm256_set1_pd(delta);
  __m256d s0 = _mm256_setzero_pd(), s1 = _mm256_setzero_pd(), s2 = _mm256_setzero_pd(), s3 = _mm256_setzero_pd();
  __m256i n0 = _mm256_setzero_si256(), n1 = _mm256_setzero_si256();
  size_t i = 0;
  for (; i + 16 <= len; i += 16) {
    __m256 v0 = _mm256_and_ps(_mm256_loadu_ps(x + i), absmask), v1 = _mm256_and_ps(_mm256_loadu_ps(x + i + 8), absmask);
    KEPT_STEP(v0, s0, s1, n0, n1);
    KEPT_STEP(v1, s2, s3, n0, n1);
  }
  for (; i < len; i += 8) {
    __m256 v =
        i + 8 <= len ? _mm256_loadu_ps(x + i) : _mm256_maskload_ps(x + i, lanes8(len - i)); /* 0 > delta is false */
    v = _mm256_and_ps(v, absmask);
    KEPT_STEP(v, s0, s1, n0, n1);
  }
  double t[4];
  int64_t c[4];
  _mm256_storeu_pd(t, _mm256_add_pd(_mm256_add_pd(s0, s2), _mm256_add_pd(s1, s3)));
  _mm256_storeu_si256((__m256i *)c, _mm256_add_epi64(n0, n1));
  *kept = (t[0] + t[1]) + (t[2] + t[3]);
  *count = (size_t)(c[0] + c[1] + c[2] + c[3]);
}

int slQ_simd_abs_sum_exact(const float *x, size_t len, double *sum) {
  return slQ_simd_available() ? abs_sum_exact8(x, len, sum) : 0;
}
void slQ_simd_kept_sum(const float *x, size_t len, double delta, double *kept, size_t *count) {
  kept_sum8(x, len, delta, kept, count);
}

int slQ_simd_abs_sums8(const float *x, size_t stride, size_t len, const double *delta, double *sums, size_t *counts) {
  if (!slQ_simd_available()) return 0;
  abs_sums8(x, stride, len, delta, sums, counts);
  return 1;
}
size_t slQ_simd_ternary(const float *x, float *y, size_t n, float t, float alpha) {
  return slQ_simd_available() ? ternary8(x, y, n, t, alpha) : 0;
}
size_t slQ_simd_binary(const float *x, float *y, size_t n, float a, int bipolar) {
  return slQ_simd_available() ? binary8(x, y, n, a, bipolar) : 0;
}
size_t slQ_simd_log(const float *in, float *out, size_t n, double tau, int emin, int emax) {
  int l = simd_level();
  return l >= 3 ? slQ_avx512_log(in, out, n, tau, emin, emax) : l >= 2 ? log4(in, out, n, tau, emin, emax) : 0;
}
size_t slQ_simd_minifloat(const float *in, float *out, size_t n, int M, int B, int emax, int ieee, double inf_q) {
  int l = simd_level();
  return l >= 3   ? slQ_avx512_minifloat(in, out, n, M, B, emax, ieee, inf_q)
         : l >= 2 ? minifloat4(in, out, n, M, B, emax, ieee, inf_q)
                  : 0;
}
size_t slQ_simd_mxfp(const float *in, float *out, size_t n, float unscale, float scale, int mbits, int bias,
                     float max_normal) {
  return slQ_simd_available() ? mxfp8(in, out, n, unscale, scale, mbits, bias, max_normal) : 0;
}
size_t slQ_simd_mxint8(const float *in, float *out, size_t n, float up, float down) {
  return slQ_simd_available() ? mxint8_8(in, out, n, up, down) : 0;
}

#else

int slQ_simd_available(void) { return 0; }
int slQ_simd_cap(int max) { return 0; }
size_t slQ_simd_log(const float *in, float *out, size_t n, double tau, int emin, int emax) { return 0; }
size_t slQ_simd_mxfp(const float *in, float *out, size_t n, float unscale, float scale, int mbits, int bias,
                     float max_normal) {
  return 0;
}
size_t slQ_simd_mxint8(const float *in, float *out, size_t n, float up, float down) { return 0; }
size_t slQ_simd_minifloat(const float *in, float *out, size_t n, int M, int B, int emax, int ieee, double inf_q) {
  return 0;
}
int slQ_simd_abs_sums8(const float *x, size_t stride, size_t len, const double *delta, double *sums, size_t *counts) {
  return 0;
}
size_t slQ_simd_abs_bits_max(const float *x, size_t n, uint32_t *top) {
  *top = 0;
  return 0;
}
size_t slQ_simd_log_f32(const float *in, float *out, size_t n, int B, int emax) { return 0; }
size_t slQ_simd_minifloat_f32(const float *in, float *out, size_t n, int M, int B, int emax, int ieee, float inf_q) {
  return 0;
}
int slQ_simd_abs_sum_exact(const float *x, size_t len, double *sum) { return 0; }
void slQ_simd_kept_sum(const float *x, size_t len, double delta, double *kept, size_t *count) {}
size_t slQ_simd_mx_row(const float *in, float *out, size_t len, size_t k, int is_int, int emax, int mbits, int bias,
                       float max_normal) {
  return 0;
}
int slQ_simd_block_maxima(const float *x, size_t len, size_t k, uint32_t *m, uint32_t *smallest) { return 0; }
size_t slQ_simd_integer(const float *in, float *out, size_t n, float scale, float inv, float qmin, float qmax) {
  return 0;
}
size_t slQ_simd_block_fp_row(const float *in, float *out, size_t len, size_t k, const uint32_t *m, uint32_t zero_as,
                             int M, int B, int emax) {
  return 0;
}
size_t slQ_simd_block_log_row(const float *in, float *out, size_t len, size_t k, const uint32_t *m, uint32_t zero_as,
                              int Eb, int bias_width) {
  return 0;
}
size_t slQ_simd_ternary(const float *x, float *y, size_t n, float t, float alpha) { return 0; }
size_t slQ_simd_binary(const float *x, float *y, size_t n, float a, int bipolar) { return 0; }

#endif
