/*
** quant_float.c - the elementwise number formats: integer (fixed point),
** minifloat_denorm, minifloat_ieee and log (docs/formats.md), each value
** quantised on its own.
**
** The reference is the binary64 arithmetic one value at a time, exponents
** from frexp (slQ_float_reference). The optimised loops below it give the
** same bits (slQ_float_fast): integer in float32 where that is exact, the
** minifloat and log formats without libm calls, and the vector loops of
** quant_simd.c first where the CPU has them. quant.c splits the work over
** the thread team; block_minifloat and block_log (quant_block.c) quantise
** their elements through this file's minifloat_ieee and log.
*/
#include <math.h>
#include <stdint.h>
#include <stdlib.h>

#include "quant_bits.h"
#include "quant_float.h"
#include "quant_simd.h"

/* ------------------------------------------------------------ elements */

static float q_integer(const slQ_Format *f, float x) {
  if (isnan(x)) return x;
  double scale = ldexp(1.0, f->frac_width);
  double qmin = f->is_signed ? -ldexp(1.0, f->width - 1) : 0;
  double qmax = f->is_signed ? ldexp(1.0, f->width - 1) - 1 : ldexp(1.0, f->width) - 1;
  return (float)(clampd(rint((double)x * scale), qmin, qmax) / scale);
}

static float q_minifloat_denorm(const slQ_Format *f, float x) {
  if (isnan(x) || fabsf(x) <= 1e-8f) return x;
  int E = f->exponent_width, M = f->width - E - 1;
  int B = f->has_bias ? f->exponent_bias : default_bias(E);
  int emin = -B, emax = (1 << E) - 1 - B;
  double a = fabs((double)x);
  int e = isinf(a) ? emax : clampi(clog2(a + 1e-9), emin, emax);
  double k = isinf(a) ? ldexp(1.0, M) - 1 : clampd(rint(a * ldexp(1.0, M - e)), 0, ldexp(1.0, M) - 1);
  double q = k * ldexp(1.0, e - M);
  return (float)(x < 0 ? -q : q);
}

/* also each element of block_minifloat, with its block's bias in f */
float slQ_minifloat_ieee_one(const slQ_Format *f, float x) {
  if (isnan(x) || fabsf(x) <= 1e-8f) return x;
  int E = f->exponent_width, M = f->width - E - 1;
  int B = f->has_bias ? f->exponent_bias : default_bias(E);
  int emax = (1 << E) - 1 - B;
  double a = fabs((double)x), q;
  if (isinf(a)) {
    q = (2 - ldexp(1.0, -M)) * ldexp(1.0, emax);
  } else {
    int e = clampi(flog2(a + 1e-9), -B, emax);
    double r = a * ldexp(1.0, -e), top = ldexp(1.0, M) - 1;
    if (e > -B) q = (1 + clampd(rint(r * ldexp(1.0, M) - ldexp(1.0, M)), 0, top) / ldexp(1.0, M)) * ldexp(1.0, e);
    else q = clampd(rint(r * ldexp(1.0, M - 1)), 0, top) * ldexp(1.0, 1 - B - M);
  }
  return (float)(x < 0 ? -q : q);
}

/* also each element of block_log, with its block's bias in f */
float slQ_log_one(const slQ_Format *f, float x) {
  if (isnan(x)) return x;
  int Eb = f->width - 1;
  int B = f->has_bias ? f->exponent_bias : default_bias(Eb);
  int emin = -B, emax = (1 << Eb) - 1 - B;
  double tau = 0.1 * ldexp(1.0, emin), s = (double)x + tau;
  if (s == 0) return 0.0f;
  double a = fabs((double)x) + tau;
  int e = isinf(a) ? emax : clampi(nlog2(a), emin, emax);
  double q = ldexp(1.0, e);
  return (float)(s < 0 ? -q : q);
}

/* n values, one at a time in binary64: the reference */
void slQ_float_reference(const slQ_Format *f, const float *in, float *out, size_t n) {
  for (size_t i = 0; i < n; i++) {
    float x = in[i];
    switch (f->kind) {
      case SLQ_INTEGER: out[i] = q_integer(f, x); break;
      case SLQ_MINIFLOAT_DENORM: out[i] = q_minifloat_denorm(f, x); break;
      case SLQ_MINIFLOAT_IEEE: out[i] = slQ_minifloat_ieee_one(f, x); break;
      case SLQ_LOG: out[i] = slQ_log_one(f, x); break;
      default: out[i] = x; break;
    }
  }
}

/* ------------------------------------------------- optimised versions */

/* The loops above are the reference: one value at a time, in binary64.
** integer does the same arithmetic in float32 where it is exact (integer
** products below 2^24, scaling by powers of two); tests/unit/test_quant.c
** and test_quant_simd.c check it bit for bit against the reference. */
static void integer_fast(const slQ_Format *f, const float *in, float *out, size_t n) {
  float scale = ldexpf(1.0f, f->frac_width), inv = ldexpf(1.0f, -f->frac_width);
  float qmin = f->is_signed ? -ldexpf(1.0f, f->width - 1) : 0.0f;
  float qmax = f->is_signed ? ldexpf(1.0f, f->width - 1) - 1 : ldexpf(1.0f, f->width) - 1;
  for (size_t i = slQ_simd_integer(in, out, n, scale, inv, qmin, qmax); i < n; i++) {
    float v = rintf(in[i] * scale);
    v = v < qmin ? qmin : v > qmax ? qmax : v; /* NaN passes both tests unchanged */
    out[i] = v * inv;
  }
}

/* Minifloat and log formats without libm calls: the same binary64
** arithmetic as the reference, with frexp and ldexp replaced by reading and
** writing exponent bits (quant_bits.h's exponent_bits and pow2d, exact for
** normal doubles), so the loop has no calls and runs several times faster.
** Used when every power of two the format needs is a normal double;
** tests/unit/test_quant_fast.c checks it bit for bit against the reference. */
static int fast_exponents_fit(const slQ_Format *f) {
  int B, emax, M = f->width - f->exponent_width - 1;
  if (f->kind == SLQ_LOG) {
    B = f->has_bias ? f->exponent_bias : default_bias(f->width - 1);
    emax = (1 << (f->width - 1)) - 1 - B;
    M = 0;
  } else {
    if (f->exponent_width > 10) return 0;
    B = f->has_bias ? f->exponent_bias : default_bias(f->exponent_width);
    emax = (1 << f->exponent_width) - 1 - B;
  }
  return abs(B) + abs(emax) + M + 2 <= 1000 && M >= 0 && M <= 52;
}

/* Where the reference's binary64 arithmetic is exact in float32 too: every
** power of two a step scales by (2^e, 2^(M - e), 2^(e - M), 2^(1 - B - M),
** 2^(B + M - 1)) a normal float, M <= 23 (so 1 + k 2^-M and k 2^(e - M)
** hold in 24 bits), and a * 2^(B + M - 1) normal for a >= 1e-8. Scalings
** by powers of two are then exact, the subtraction r 2^M - 2^M is exact
** (Sterbenz) or, where it rounds, already far above the largest mantissa,
** and the one product that may fall below 2^-126 rounds once, as the
** reference's cast to float does. Every format the labs train with fits. */
static int minifloat_float_fits(int M, int B, int emax) {
  return M >= 0 && M <= 23 && B + M <= 126 && B + M >= -90 && B <= 125 && emax <= 127 && emax - M <= 126;
}

static void minifloat_fast(const slQ_Format *f, const float *in, float *out, size_t n) {
  int E = f->exponent_width, M = f->width - E - 1, ieee = f->kind == SLQ_MINIFLOAT_IEEE;
  int B = f->has_bias ? f->exponent_bias : default_bias(E);
  int emin = -B, emax = (1 << E) - 1 - B;
  double two_m = pow2d(M), top = two_m - 1, half_m = pow2d(M - 1), sub = pow2d(1 - B - M);
  double inf_q = ieee ? (2 - pow2d(-M)) * pow2d(emax) : top * pow2d(emax - M);
  size_t i = 0;
  if (minifloat_float_fits(M, B, emax)) i = slQ_simd_minifloat_f32(in, out, n, M, B, emax, ieee, (float)inf_q);
  if (i == 0) i = slQ_simd_minifloat(in, out, n, M, B, emax, ieee, inf_q);
  for (; i < n; i++) {
    float x = in[i];
    if (isnan(x) || fabsf(x) <= 1e-8f) {
      out[i] = x;
      continue;
    }
    double a = fabs((double)x), q;
    uint64_t mant;
    if (isinf(a)) {
      q = inf_q;
    } else if (ieee) {
      int e = exponent_bits(a + 1e-9, &mant);
      e = e < emin ? emin : e > emax ? emax : e;
      double r = a * pow2d(-e);
      if (e > -B) q = (1 + clampd(rint(r * two_m - two_m), 0, top) / two_m) * pow2d(e);
      else q = clampd(rint(r * half_m), 0, top) * sub;
    } else {
      int e = exponent_bits(a + 1e-9, &mant);
      e += mant != 0; /* clog2 */
      e = e < emin ? emin : e > emax ? emax : e;
      q = clampd(rint(a * pow2d(M - e)), 0, top) * pow2d(e - M);
    }
    out[i] = (float)(x < 0 ? -q : q);
  }
}

static void log_fast(const slQ_Format *f, const float *in, float *out, size_t n) {
  int Eb = f->width - 1;
  int B = f->has_bias ? f->exponent_bias : default_bias(Eb);
  int emin = -B, emax = (1 << Eb) - 1 - B;
  double tau = 0.1 * pow2d(emin);
  for (size_t i = 0; i < n; i++) {
    float x = in[i];
    if (isnan(x)) {
      out[i] = x;
      continue;
    }
    double s = (double)x + tau;
    if (s == 0) {
      out[i] = 0.0f;
      continue;
    }
    double a = fabs((double)x) + tau;
    int e;
    if (isinf(a)) {
      e = emax;
    } else {
      uint64_t mant;
      e = exponent_bits(a, &mant); /* nlog2: up when the mantissa 1.m is at least sqrt 2 */
      double m = a * pow2d(-e);
      e += m >= 2 * M_SQRT1_2;
      e = e < emin ? emin : e > emax ? emax : e;
    }
    double q = pow2d(e);
    out[i] = (float)(s < 0 ? -q : q);
  }
}

/* the same bits as slQ_float_reference by the loops above */
void slQ_float_fast(const slQ_Format *f, const float *in, float *out, size_t n) {
  if (f->kind == SLQ_INTEGER && f->width <= 24 && f->frac_width >= -100 && f->frac_width <= 100) {
    integer_fast(f, in, out, n);
  } else if ((f->kind == SLQ_MINIFLOAT_DENORM || f->kind == SLQ_MINIFLOAT_IEEE) && fast_exponents_fit(f)) {
    minifloat_fast(f, in, out, n);
  } else if (f->kind == SLQ_LOG && fast_exponents_fit(f)) {
    int B = f->has_bias ? f->exponent_bias : default_bias(f->width - 1);
    int emax = (1 << (f->width - 1)) - 1 - B;
    size_t i = B <= 120 && emax <= 127 ? slQ_simd_log_f32(in, out, n, B, emax) : 0;
    if (i == 0) i = slQ_simd_log(in, out, n, 0.1 * pow2d(-B), -B, emax);
    log_fast(f, in + i, out + i, n - i);
  } else {
    slQ_float_reference(f, in, out, n);
  }
}
