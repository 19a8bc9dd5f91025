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
  if ((u & 0x7F800000u) == 0x7F800000u) {  /* Inf stays, NaN stays NaN */
    if (u & 0x007FFFFFu) u |= 0x00400000u;
  } else {
    u += 0x7FFFu + ((u >> 16) & 1u);       /* round to nearest, ties to even */
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
  if (a < 0x38800000u) {  /* below 2^-14: subnormal; adding 0.5 lines the half's ulp up with the float's */
    float f;
    memcpy(&f, &a, sizeof f);
    f += 0.5f;
    memcpy(&a, &f, sizeof a);
    return (uint16_t)(sign | (a - 0x3F000000u));
  }
  a += 0xC8000FFFu + ((a >> 13) & 1u);  /* rebias the exponent by -112, round to nearest even */
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
  else if (in != out)
    memcpy(out, in, n * sizeof *out);
}

