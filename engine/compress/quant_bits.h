/*
** quant_bits.h - the exact exponent arithmetic every loop of the folder
** shares: exponents and powers of two from frexp and ldexp in binary64, as
** the reference computes them, and the same read from and written to the
** bits of floats, as the optimised and vector loops compute them.
**
** Small static inline functions, so that each loop keeps them inlined; the
** header has no source file and includes none of the folder's, so every
** file may use it (quant.c, quant_float.c, quant_block.c, quant_simd.c,
** quant_avx512.c).
*/
#ifndef SYSLAB_QUANT_BITS_H
#define SYSLAB_QUANT_BITS_H

#include <math.h>
#include <stdint.h>
#include <string.h>

/* ---------------------------------------------------- exact exponents */

static inline int flog2(double v) {
  int p;
  frexp(v, &p);
  return p - 1;
}

static inline int clog2(double v) {
  int p;
  double f = frexp(v, &p);
  return f == 0.5 ? p - 1 : p;
}

static inline int nlog2(double v) {
  int p;
  double f = frexp(v, &p);
  return f >= M_SQRT1_2 ? p : p - 1;
}

static inline double clampd(double v, double lo, double hi) { return v < lo ? lo : v > hi ? hi : v; }
static inline int clampi(int v, int lo, int hi) { return v < lo ? lo : v > hi ? hi : v; }

static inline int default_bias(int e) { return (1 << (e - 1)) - 1; }

/* ------------------------------------------------------- from the bits */

/* 2^k for a normal float exponent, without a libm call */
static inline float pow2f(int k) {
  uint32_t bits = (uint32_t)(k + 127) << 23;
  float f;
  memcpy(&f, &bits, sizeof f);
  return f;
}

/* 2^k for a normal double exponent k */
static inline double pow2d(int k) {
  uint64_t bits = (uint64_t)(k + 1023) << 52;
  double d;
  memcpy(&d, &bits, sizeof d);
  return d;
}

/* floor(log2 v) and whether v is a power of two, for a normal v > 0 */
static inline int exponent_bits(double v, uint64_t *mantissa) {
  uint64_t bits;
  memcpy(&bits, &v, sizeof bits);
  *mantissa = bits & 0xFFFFFFFFFFFFFull;
  return (int)((bits >> 52) & 0x7FF) - 1023;
}

/* clog2 of the positive finite float whose bit pattern is b, exactly (subnormals too) */
static inline int clog2_bits(uint32_t b) {
  uint32_t mant = b & 0x7FFFFFu;
  int e = (int)(b >> 23);
  if (e == 0) return 31 - __builtin_clz(mant) - 149 + ((mant & (mant - 1)) != 0);
  return e - 127 + (mant != 0);
}

/* an exponent clamped to [-150, 128]: 2^e then rounds to float as 2^e would (0 below, infinity above) */
static inline int clamp150(int e) { return e < -150 ? -150 : e > 128 ? 128 : e; }

/* ------------------------------------------- block parameters from bits */

/* block_fp's shared exponent for a block whose largest magnitude has the bit pattern mb */
static inline int block_fp_exponent(uint32_t mb, int M, int B, int emax) {
  int es = mb > 0x7F800000u ? M : mb == 0x7F800000u ? emax : clog2_bits(mb);
  return es < -B ? -B : es > emax ? emax : es;
}

/* block_log's shared bias for a block whose largest magnitude has the bit pattern mb (not a NaN) */
static inline int block_log_bias(uint32_t mb, int Eb, int bias_width) {
  if (mb == 0x7F800000u) return 0;
  int B = (1 << Eb) - 1 - clog2_bits(mb), top = (1 << bias_width) - 1;
  return B < 0 ? 0 : B > top ? top : B;
}

/* the largest float not above 0.1 2^-B: that of 0.1, scaled (exact while
** 0.1 2^-B is a normal float, B <= 122) */
static inline float tau_float(int B) {
  static const float tenth_below = 0x1.999998p-4f; /* 0.1 in binary64 is 0x1.999999999999ap-4 */
  uint32_t bits = (uint32_t)(127 - B) << 23;
  float scale;
  memcpy(&scale, &bits, sizeof scale);
  return tenth_below * scale;
}

/* What an MX block becomes, from the bit pattern of its largest magnitude:
** all NaN (a NaN or an infinity in it), zeros (MXINT8 decodes a zero scale
** to +0; MXFP keeps the signs of its zeros), the reference's code (a
** subnormal maximum, or scales that are not normal floats), or scaled: the
** elements divided by 2^sc, quantised and multiplied by 2^sc (MXINT8:
** sc = shared - 6, its int8 mantissa counting 64ths; MXFP: sc = shared). */
enum { MX_NAN, MX_ZERO, MX_REFERENCE, MX_SCALED };

static inline int mx_plan(uint32_t top, int is_int, int emax, int *sc) {
  *sc = 0;
  if (top >= 0x7F800000u) return MX_NAN;
  if (top == 0 || (is_int && top < 0x00800000u)) return MX_ZERO;
  if (top < 0x00800000u) return MX_REFERENCE;
  int shared = (int)(top >> 23) - 127 - (is_int ? 0 : emax); /* a normal maximum's exponent field is flog2 */
  shared = shared < -127 ? -127 : shared > 127 ? 127 : shared;
  *sc = is_int ? shared - 6 : shared;
  return *sc < -126 || *sc > 126 ? MX_REFERENCE : MX_SCALED;
}

#endif
