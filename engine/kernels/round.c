/*
** round.c - float32 values rounded to the 16-bit formats, bfloat16 and
** IEEE binary16, kept in float32 storage: how the products of a mixed
** precision graph see their inputs, and how the dtype experiments round.
**
**   cmake --build build && build/test_systems     (rounding of ties, NaN, Inf, subnormals)
**
** The product of two 16-bit values is exact in float32 (at most 11 + 11
** significant bits), so rounding the inputs and multiplying in float32 is
** exactly "16-bit inputs, float32 accumulation".
*/
#include <stdint.h>
#include <string.h>

#include "round.h"

/* bfloat16: the top 16 bits of the float, rounded to nearest, ties to even
** (numerics §8) */
float slK_round_bf16(float x) {
  uint32_t u;
  memcpy(&u, &x, sizeof u);
  if ((u & 0x7F800000u) == 0x7F800000u) { /* Inf stays, NaN stays NaN */
    if (u & 0x007FFFFFu) u |= 0x00400000u;
  } else {
    u += 0x7FFFu + ((u >> 16) & 1u); /* round to nearest, ties to even */
  }
  u &= 0xFFFF0000u;
  memcpy(&x, &u, sizeof x);
  return x;
}

/* IEEE binary16 by hand rather than _Float16, which not every compiler this
** code is built with supports on x86 (clang 14 does not): round to nearest,
** ties to even, overflow to infinity, subnormals kept. */
uint16_t slK_fp16_bits(float x) {
  uint32_t u;
  memcpy(&u, &x, sizeof u);
  uint32_t sign = (u >> 16) & 0x8000u, a = u & 0x7FFFFFFFu;
  if (a >= 0x47800000u) return (uint16_t)(sign | (a > 0x7F800000u ? 0x7E00u : 0x7C00u)); /* >= 65536, Inf, NaN */
  if (a < 0x38800000u) { /* below 2^-14: subnormal; adding 0.5 lines the half's ulp up with the float's */
    float f;
    memcpy(&f, &a, sizeof f);
    f += 0.5f;
    memcpy(&a, &f, sizeof a);
    return (uint16_t)(sign | (a - 0x3F000000u));
  }
  a += 0xC8000FFFu + ((a >> 13) & 1u); /* rebias the exponent by -112, round to nearest even */
  return (uint16_t)(sign | (a >> 13));
}

float slK_fp16_value(uint16_t h) {
  uint32_t sign = (uint32_t)(h & 0x8000u) << 16, e = (h >> 10) & 0x1Fu, m = h & 0x3FFu, u;
  if (e == 0) {
    float f = (float)m * 0x1p-24f;
    memcpy(&u, &f, sizeof u);
    u |= sign;
  } else if (e == 31) {
    u = sign | 0x7F800000u | (m << 13);
  } else {
    u = sign | ((e + 112) << 23) | (m << 13);
  }
  float f;
  memcpy(&f, &u, sizeof f);
  return f;
}

float slK_round_fp16(float x) { return slK_fp16_value(slK_fp16_bits(x)); }

void slK_round_array(int format, const float *in, float *out, size_t n) {
  if (format == SLK_BF16)
    for (size_t i = 0; i < n; i++) out[i] = slK_round_bf16(in[i]);
  else if (format == SLK_FP16)
    for (size_t i = 0; i < n; i++) out[i] = slK_round_fp16(in[i]);
  else if (in != out) memcpy(out, in, n * sizeof *out);
}

/* ------------------------------------------------------------ 16-bit storage */

static uint16_t bf16_bits(float x) {
  float r = slK_round_bf16(x);
  uint32_t u;
  memcpy(&u, &r, sizeof u);
  return (uint16_t)(u >> 16);
}

static float bf16_value(uint16_t h) {
  uint32_t u = (uint32_t)h << 16;
  float f;
  memcpy(&f, &u, sizeof f);
  return f;
}

void slK_half_to_f32_reference(int format, const uint16_t *h, float *out, size_t n) {
  for (size_t i = 0; i < n; i++) out[i] = format == SLK_BF16 ? bf16_value(h[i]) : slK_fp16_value(h[i]);
}

void slK_f32_to_half_reference(int format, const float *x, uint16_t *out, size_t n) {
  for (size_t i = 0; i < n; i++) out[i] = format == SLK_BF16 ? bf16_bits(x[i]) : slK_fp16_bits(x[i]);
}

static int vector_on = 1;
int slK_round_vector(int on) {
  int was = vector_on;
  vector_on = on;
  return was;
}

#if defined(__x86_64__) && defined(__GNUC__)
#include <cpuid.h>
#include <immintrin.h>
#define AVX2 __attribute__((target("avx2,f16c")))

/* F16C from cpuid itself: clang's __builtin_cpu_supports does not know "f16c" */
static int have_f16c(void) {
  unsigned a, b, c, d;
  return __get_cpuid(1, &a, &b, &c, &d) && (c & bit_F16C);
}

static int have_avx2(void) {
  static int have = -1;
  if (have < 0) {
    __builtin_cpu_init();
    have = __builtin_cpu_supports("avx2") && have_f16c();
  }
  return have && vector_on;
}

/* eight fp16 bit patterns (zero-extended to 32-bit lanes) as slK_fp16_value: vcvtph2ps, except that
** a signalling NaN keeps its quiet bit clear, as the scalar conversion leaves it */
AVX2 static __m256 fp16_to_ps8(__m128i h) {
  __m256 f = _mm256_cvtph_ps(h);
  __m256i w = _mm256_cvtepu16_epi32(h), inf = _mm256_set1_epi32(0x7C00);
  __m256i nan = _mm256_cmpgt_epi32(_mm256_and_si256(w, _mm256_set1_epi32(0x7FFF)), inf);
  __m256i bits = _mm256_or_si256(_mm256_slli_epi32(_mm256_and_si256(w, _mm256_set1_epi32(0x8000)), 16),
                                 _mm256_or_si256(_mm256_set1_epi32(0x7F800000),
                                                 _mm256_slli_epi32(_mm256_and_si256(w, _mm256_set1_epi32(0x3FF)), 13)));
  return _mm256_blendv_ps(f, _mm256_castsi256_ps(bits), _mm256_castsi256_ps(nan));
}

AVX2 static size_t to_f32_avx2(int format, const uint16_t *h, float *out, size_t n) {
  size_t i = 0;
  for (; i + 8 <= n; i += 8) {
    __m128i v = _mm_loadu_si128((const __m128i *)(h + i));
    __m256 f =
        format == SLK_BF16 ? _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_cvtepu16_epi32(v), 16)) : fp16_to_ps8(v);
    _mm256_storeu_ps(out + i, f);
  }
  return i;
}

/* eight float32 values as bf16 bits in the top halves of 32-bit lanes: slK_round_bf16 lane by lane */
AVX2 static __m256i bf16_hi8(__m256 x) {
  __m256i u = _mm256_castps_si256(x), expo = _mm256_set1_epi32(0x7F800000);
  __m256i special = _mm256_cmpeq_epi32(_mm256_and_si256(u, expo), expo);
  __m256i nan = _mm256_castps_si256(_mm256_cmp_ps(x, x, _CMP_UNORD_Q));
  __m256i odd = _mm256_and_si256(_mm256_srli_epi32(u, 16), _mm256_set1_epi32(1));
  __m256i r = _mm256_add_epi32(u, _mm256_add_epi32(odd, _mm256_set1_epi32(0x7FFF)));
  r = _mm256_blendv_epi8(r, u, special);
  r = _mm256_blendv_epi8(r, _mm256_or_si256(u, _mm256_set1_epi32(0x00400000)), nan);
  return r;
}

/* the top halves of eight 32-bit lanes as eight 16-bit values, in order */
AVX2 static __m128i top_halves(__m256i r) {
  __m256i s = _mm256_srli_epi32(r, 16);
  return _mm_packus_epi32(_mm256_castsi256_si128(s), _mm256_extracti128_si256(s, 1));
}

/* fp16 bits as slK_fp16_bits: vcvtps2ph (nearest even, subnormals kept), a NaN made the quiet 0x7E00 */
AVX2 static __m128i fp16_bits8(__m256 x) {
  __m128i h = _mm256_cvtps_ph(x, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
  __m256i nan32 = _mm256_castps_si256(_mm256_cmp_ps(x, x, _CMP_UNORD_Q));
  __m128i nan = _mm_packs_epi32(_mm256_castsi256_si128(nan32), _mm256_extracti128_si256(nan32, 1));
  __m128i q = _mm_or_si128(_mm_and_si128(h, _mm_set1_epi16((short)0x8000)), _mm_set1_epi16(0x7E00));
  return _mm_blendv_epi8(h, q, nan);
}

/* x rounded and kept float32: the bits narrowed, then widened (exact) */
AVX2 static size_t round_avx2(int format, const float *x, float *out, size_t n) {
  size_t i = 0;
  for (; i + 8 <= n; i += 8) {
    __m256 v = _mm256_loadu_ps(x + i);
    __m256 r = format == SLK_BF16
                   ? _mm256_castsi256_ps(_mm256_and_si256(bf16_hi8(v), _mm256_set1_epi32((int)0xFFFF0000u)))
                   : fp16_to_ps8(fp16_bits8(v));
    _mm256_storeu_ps(out + i, r);
  }
  return i;
}

AVX2 static size_t to_half_avx2(int format, const float *x, uint16_t *out, size_t n) {
  size_t i = 0;
  for (; i + 8 <= n; i += 8) {
    __m256 v = _mm256_loadu_ps(x + i);
    __m128i h = format == SLK_BF16 ? top_halves(bf16_hi8(v)) : fp16_bits8(v);
    _mm_storeu_si128((__m128i *)(out + i), h);
  }
  return i;
}
#else
static int have_avx2(void) { return 0; }
static size_t round_avx2(int format, const float *x, float *out, size_t n) {
  return (void)format, (void)x, (void)out, (void)n, 0;
}
static size_t to_f32_avx2(int format, const uint16_t *h, float *out, size_t n) {
  return (void)format, (void)h, (void)out, (void)n, 0;
}
static size_t to_half_avx2(int format, const float *x, uint16_t *out, size_t n) {
  return (void)format, (void)x, (void)out, (void)n, 0;
}
#endif

void slK_half_to_f32(int format, const uint16_t *h, float *out, size_t n) {
  size_t i = have_avx2() ? to_f32_avx2(format, h, out, n) : 0;
  slK_half_to_f32_reference(format, h + i, out + i, n - i);
}

void slK_f32_to_half(int format, const float *x, uint16_t *out, size_t n) {
  size_t i = have_avx2() ? to_half_avx2(format, x, out, n) : 0;
  slK_f32_to_half_reference(format, x + i, out + i, n - i);
}

void slK_round_f32(int format, const float *x, float *out, size_t n) {
  size_t i = have_avx2() && format != SLK_FP32 ? round_avx2(format, x, out, n) : 0;
  slK_round_array(format, x + i, out + i, n - i);
}
