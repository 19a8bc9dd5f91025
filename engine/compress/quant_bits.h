/*
** quant_bits.h - the exact exponent arithmetic every loop of the folder
** shares: exponents and powers of two from frexp and ldexp in binary64, as
** the reference computes them, and the same read from and written to the
** bits of floats, as the optimised loops compute them.
**
** Small static inline functions, so that each loop keeps them inlined; the
** header has no source file and includes none of the folder's, so every
** file may use it (quant.c, quant_float.c, quant_block.c).
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

#endif
