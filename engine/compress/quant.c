/*
** quant.c - number formats and pruning, following the definitions in
** docs/formats.md (MASE's quantisers, the OCP Microscaling formats and the
** Lab 4 MXINT8 kernel).
**
** Every format is a quantise-dequantise function: values go in as float32
** and come out as the nearest value the format can hold, still float32, so
** a model can run with them unchanged. Rounding is to nearest with ties to
** even (rint), never round(). Exponents come from frexp, exactly, in
** binary64, so powers of two are not misjudged by a float log2.
**
** Those binary64 loops, one value at a time, are the reference
** (slQ_apply_reference). slQ_apply, which the graph and the commands call,
** runs optimised loops that give the same bits (the section "optimised
** versions" and the AVX2 and AVX-512 loops of quant_simd.c), split over the thread
** team by rows; tests/unit/test_quant_simd.c and test_quant_fast.c compare
** them with the reference value by value.
*/
#include "kernels/kernels.h"
#include "kernels/parallel.h"
#include "quant.h"
#include "quant_simd.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *const kind_names[SLQ_NUM_FORMATS] = {
  "integer", "minifloat_denorm", "minifloat_ieee", "log", "mxint8",
  "mxfp8_e4m3", "mxfp8_e5m2", "mxfp6_e3m2", "mxfp6_e2m3", "mxfp4_e2m1",
  "block_fp", "block_minifloat", "block_log", "binary", "binary_residual", "ternary",
};

static int is_mx(slQ_Kind k) { return k >= SLQ_MXINT8 && k <= SLQ_MXFP4_E2M1; }
int slQ_is_blocked(slQ_Kind k) { return is_mx(k) || (k >= SLQ_BLOCK_FP && k <= SLQ_BLOCK_LOG); }
int slQ_has_gradient(slQ_Kind k) { return k != SLQ_BLOCK_MINIFLOAT && k != SLQ_BINARY_RESIDUAL; }

const char *slQ_kind_name(slQ_Kind k) { return k < SLQ_NUM_FORMATS ? kind_names[k] : "?"; }

int slQ_kind_from_name(const char *name) {
  for (int k = 0; k < SLQ_NUM_FORMATS; k++)
    if (strcmp(kind_names[k], name) == 0) return k;
  return -1;
}

/* ---------------------------------------------------- exact exponents */

static int flog2(double v) {
  int p;
  frexp(v, &p);
  return p - 1;
}

static int clog2(double v) {
  int p;
  double f = frexp(v, &p);
  return f == 0.5 ? p - 1 : p;
}

static int nlog2(double v) {
  int p;
  double f = frexp(v, &p);
  return f >= M_SQRT1_2 ? p : p - 1;
}

static double clampd(double v, double lo, double hi) { return v < lo ? lo : v > hi ? hi : v; }
static int clampi(int v, int lo, int hi) { return v < lo ? lo : v > hi ? hi : v; }

static int default_bias(int e) { return (1 << (e - 1)) - 1; }

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

static float q_minifloat_ieee(const slQ_Format *f, float x) {
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

static float q_log(const slQ_Format *f, float x) {
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

/* -------------------------------------------------------------- MX blocks */

typedef struct {
  int ebits, mbits, bias, emax;
  double max_normal;
} MxElem;

static MxElem mx_elem(slQ_Kind k) {
  switch (k) {
    case SLQ_MXFP8_E4M3: return (MxElem){4, 3, 7, 8, 448};
    case SLQ_MXFP8_E5M2: return (MxElem){5, 2, 15, 15, 57344};
    case SLQ_MXFP6_E3M2: return (MxElem){3, 2, 3, 4, 28};
    case SLQ_MXFP6_E2M3: return (MxElem){2, 3, 1, 2, 7.5};
    case SLQ_MXFP4_E2M1: return (MxElem){2, 1, 1, 2, 6};
    default: return (MxElem){0, 0, 0, 0, 127.0 / 64};  /* MXINT8 */
  }
}

/* one element of a finite MX block with shared exponent `shared` */
static float mx_elem_q(MxElem el, int is_int, int shared, float x) {
  double p = ldexp((double)x, -shared), q;
  if (is_int) {
    q = clampd(rint(p * 64), -127, 127) / 64;
    return q == 0 ? 0.0f : (float)ldexp(q, shared);  /* an int8 mantissa 0 decodes to +0 */
  }
  double a = fabs(p);
  int e = a > 0 ? flog2(a) : 1 - el.bias;
  if (e < 1 - el.bias) e = 1 - el.bias;
  q = rint(a * ldexp(1.0, el.mbits - e)) * ldexp(1.0, e - el.mbits);
  if (q > el.max_normal) q = el.max_normal;
  return (float)ldexp(p < 0 || (p == 0 && signbit(p)) ? -q : q, shared);
}

static void q_mx_block(const slQ_Format *f, const float *in, float *out, size_t n) {
  MxElem el = mx_elem(f->kind);
  double amax = 0;
  int nonfinite = 0;
  for (size_t i = 0; i < n; i++) {
    if (!isfinite(in[i])) nonfinite = 1;
    else if (fabs((double)in[i]) > amax) amax = fabs((double)in[i]);
  }
  if (nonfinite) {
    for (size_t i = 0; i < n; i++) out[i] = NAN;
    return;
  }
  int is_int = f->kind == SLQ_MXINT8;
  if (amax == 0 || (is_int && amax < ldexp(1.0, -126))) {
    for (size_t i = 0; i < n; i++) out[i] = is_int ? 0.0f : copysignf(0.0f, in[i]);
    return;
  }
  int shared = clampi(flog2(amax) - el.emax, -127, 127);
  for (size_t i = 0; i < n; i++) out[i] = mx_elem_q(el, is_int, shared, in[i]);
}

/* ------------------------------------------------ shared-exponent blocks */

/* block maxima with the zero-block fix: all-zero tensors use 1, other zero
** blocks take the smallest non-zero block maximum of the tensor */
static double *block_maxima(const float *in, size_t n, size_t row, size_t k, size_t *nblocks) {
  size_t per_row = (row + k - 1) / k, rows = (n + row - 1) / row;
  *nblocks = per_row * rows;
  double *m = calloc(*nblocks ? *nblocks : 1, sizeof *m), smallest = INFINITY;
  for (size_t i = 0; i < n; i++) {
    size_t b = (i / row) * per_row + (i % row) / k;
    double a = fabs((double)in[i]);
    if (a > m[b] || isnan(a)) m[b] = isnan(m[b]) ? m[b] : a;
  }
  for (size_t b = 0; b < *nblocks; b++)
    if (m[b] > 0 && m[b] < smallest) smallest = m[b];
  for (size_t b = 0; b < *nblocks; b++)
    if (m[b] == 0) m[b] = isinf(smallest) ? 1 : smallest;
  return m;
}

/* one element of a block whose largest magnitude is mb */
static float block_elem(const slQ_Format *f, double mb, float x) {
  /* numerics §1: a NaN makes every non-passthrough element of its block
  ** NaN. block_fp and block_minifloat pass |x| <= 1e-8 through; block_log
  ** has no passthrough, so a zero in a NaN block is NaN too. */
  int passthrough = f->kind != SLQ_BLOCK_LOG && fabsf(x) <= 1e-8f;
  if (isnan(mb) && !passthrough) return NAN;
  if (f->kind == SLQ_BLOCK_FP) {
    if (isnan(x) || fabsf(x) <= 1e-8f) return x;
    int M = f->width - 1, E = f->exponent_width;
    int B = f->has_bias ? f->exponent_bias : default_bias(E);
    int es = isinf(mb) ? (1 << E) - 1 - B : clampi(clog2(mb), -B, (1 << E) - 1 - B);
    float a = fabsf(x) + 1e-9f;  /* in binary32, as the reference does */
    double q = clampd(rint((double)a * ldexp(1.0, M - es)), 0, ldexp(1.0, M) - 1) * ldexp(1.0, es - M);
    return (float)(x < 0 ? -q : q);
  } else if (f->kind == SLQ_BLOCK_MINIFLOAT) {
    slQ_Format e = *f;
    e.kind = SLQ_MINIFLOAT_IEEE;
    e.has_bias = 1;
    e.exponent_bias = isinf(mb) ? (1 << f->bias_width) - 1 : clampi(flog2(mb), 0, (1 << f->bias_width) - 1);
    return q_minifloat_ieee(&e, x);
  } else {  /* block_log */
    slQ_Format e = *f;
    int Eb = f->width - 1;
    e.kind = SLQ_LOG;
    e.has_bias = 1;
    e.exponent_bias = isinf(mb) ? 0 : clampi((1 << Eb) - 1 - clog2(mb), 0, (1 << f->bias_width) - 1);
    return q_log(&e, x);
  }
}

static void block_formats(const slQ_Format *f, const float *in, float *out, size_t n, size_t row) {
  size_t k = (size_t)f->block, nb;
  if (row == 0) row = n;
  double *m = block_maxima(in, n, row, k, &nb);
  size_t per_row = (row + k - 1) / k;
  for (size_t i = 0; i < n; i++) out[i] = block_elem(f, m[(i / row) * per_row + (i % row) / k], in[i]);
  free(m);
}

/* --------------------------------------------------- binary and ternary */

/* sign(clamp(v, -1, 1)) with sign(0) = 0 */
static float binarize(float v) { return v > 0 ? 1.0f : v < 0 ? -1.0f : 0.0f; }

static void binary_rows(const slQ_Format *f, const float *in, float *out, size_t n, size_t row) {
  if (row == 0) row = n;
  for (size_t r = 0; r < n; r += row) {
    size_t len = r + row <= n ? row : n - r;
    const float *x = in + r;
    float *y = out + r;
    if (f->kind == SLQ_BINARY) {
      double alpha = 0;
      for (size_t i = 0; i < len; i++) alpha += fabs((double)x[i]);
      alpha /= (double)len;
      for (size_t i = 0; i < len; i++) y[i] = f->bipolar ? (x[i] >= 0 ? 1.0f : -1.0f) : x[i] > 0 ? (float)alpha : 0.0f;
    } else if (f->kind == SLQ_TERNARY) {
      double mean = 0, kept = 0;
      size_t nk = 0;
      for (size_t i = 0; i < len; i++) mean += fabs((double)x[i]);
      double delta = 0.75 * mean / (double)len;
      for (size_t i = 0; i < len; i++)
        if (fabs((double)x[i]) > delta) kept += fabs((double)x[i]), nk++;
      float alpha = f->scaled ? (nk ? (float)(kept / (double)nk) : 0.0f) : 1.0f;
      for (size_t i = 0; i < len; i++) y[i] = x[i] > delta ? alpha : x[i] < -delta ? -alpha : 0.0f;
    } else {  /* binary residual sign, with its initial mu = (L, ..., 1) / (L(L+1)/2) */
      int L = f->levels;
      for (size_t i = 0; i < len; i++) {
        float resid = x[i], sum = 0;
        for (int l = 0; l < L; l++) {
          float mu = (float)(L - l) / (float)(L * (L + 1) / 2);
          float c = resid < -1 ? -1 : resid > 1 ? 1 : resid;
          float o = binarize(c) * mu;
          sum += o;
          resid -= o;
        }
        y[i] = sum;
      }
    }
  }
}

/* ------------------------------------------------- optimised versions */

/* The loops above are the reference: one value at a time, in binary64.
** integer and MXINT8 do the same arithmetic in float32 where it is exact
** (integer products below 2^24, scaling by powers of two);
** tests/unit/test_quant.c and test_quant_simd.c check them bit for bit
** against the reference. */
static void integer_fast(const slQ_Format *f, const float *in, float *out, size_t n) {
  float scale = ldexpf(1.0f, f->frac_width), inv = ldexpf(1.0f, -f->frac_width);
  float qmin = f->is_signed ? -ldexpf(1.0f, f->width - 1) : 0.0f;
  float qmax = f->is_signed ? ldexpf(1.0f, f->width - 1) - 1 : ldexpf(1.0f, f->width) - 1;
  for (size_t i = slQ_simd_integer(in, out, n, scale, inv, qmin, qmax); i < n; i++) {
    float v = rintf(in[i] * scale);
    v = v < qmin ? qmin : v > qmax ? qmax : v;  /* NaN passes both tests unchanged */
    out[i] = v * inv;
  }
}

/* 2^k for a normal float exponent, without a libm call */
static float pow2f(int k) {
  uint32_t bits = (uint32_t)(k + 127) << 23;
  float f;
  memcpy(&f, &bits, sizeof f);
  return f;
}

void slQ_apply_reference(const slQ_Format *f, const float *in, float *out, size_t n, size_t row);

/* the largest magnitude as an integer maximum over the bit patterns with
** the sign cleared: it vectorises, and NaN or infinity shows as >= 0x7F800000 */
static uint32_t abs_bits_max(const float *x, size_t n) {
  uint32_t top;
  for (size_t i = slQ_simd_abs_bits_max(x, n, &top); i < n; i++) {
    uint32_t u;
    memcpy(&u, &x[i], sizeof u);
    u &= 0x7FFFFFFFu;
    top = u > top ? u : top;
  }
  return top;
}

static void mxint8_block_fast(const float *in, float *out, size_t n) {
  uint32_t top = abs_bits_max(in, n);
  if (top >= 0x7F800000u) {
    for (size_t i = 0; i < n; i++) out[i] = NAN;
    return;
  }
  float amax;
  memcpy(&amax, &top, sizeof amax);
  if (amax < 0x1p-126f) {
    for (size_t i = 0; i < n; i++) out[i] = 0.0f;
    return;
  }
  uint32_t bits;
  memcpy(&bits, &amax, sizeof bits);
  int shared = (int)((bits >> 23) & 0xFF) - 127;  /* amax is normal: its exponent field is flog2 */
  if (6 - shared > 127 || shared - 6 < -126) {     /* 2^(6 - shared) would not be a normal float */
    slQ_Format f = {SLQ_MXINT8, 0, 0, 0, 0, 0, 1, (int)n};
    slQ_apply_reference(&f, in, out, n, n);
    return;
  }
  float up = pow2f(6 - shared), down = pow2f(shared - 6);
  /* |x * up| < 2^7 * 2 here, so the integer conversion cannot overflow */
  for (size_t i = slQ_simd_mxint8(in, out, n, up, down); i < n; i++) {
    int v = (int)lrintf(in[i] * up);
    v = v < -127 ? -127 : v > 127 ? 127 : v;
    out[i] = (float)v * down;
  }
}

/* Minifloat and log formats without libm calls: the same binary64
** arithmetic as the reference, with frexp and ldexp replaced by reading and
** writing exponent bits (exact for normal doubles), so the loop has no
** calls and runs several times faster. Used when every power of two the
** format needs is a normal double; tests/unit/test_quant_fast.c checks it
** bit for bit against the reference. */
static double pow2d(int k) {
  uint64_t bits = (uint64_t)(k + 1023) << 52;
  double d;
  memcpy(&d, &bits, sizeof d);
  return d;
}

/* floor(log2 v) and whether v is a power of two, for a normal v > 0 */
static int exponent_bits(double v, uint64_t *mantissa) {
  uint64_t bits;
  memcpy(&bits, &v, sizeof bits);
  *mantissa = bits & 0xFFFFFFFFFFFFFull;
  return (int)((bits >> 52) & 0x7FF) - 1023;
}

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
      e += mant != 0;  /* clog2 */
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
      e = exponent_bits(a, &mant);  /* nlog2: up when the mantissa 1.m is at least sqrt 2 */
      double m = a * pow2d(-e);
      e += m >= 2 * M_SQRT1_2;
      e = e < emin ? emin : e > emax ? emax : e;
    }
    double q = pow2d(e);
    out[i] = (float)(s < 0 ? -q : q);
  }
}

/* ---------------------------------------------------------------- api */

int slQ_check(const slQ_Format *f, char *err, size_t errlen) {
  if (f->kind >= SLQ_BINARY) {
    if (f->kind == SLQ_BINARY_RESIDUAL && (f->levels < 1 || f->levels > 3)) {
      snprintf(err, errlen, "levels must be 1, 2 or 3, got %d", f->levels);
      return -1;
    }
    return 0;
  }
  if (slQ_is_blocked(f->kind) && !is_mx(f->kind)) {
    if (f->block < 1 || f->block > 4096) {
      snprintf(err, errlen, "block must be between 1 and 4096 (the default is 16), got %d", f->block);
      return -1;
    }
    if (f->kind != SLQ_BLOCK_FP && (f->bias_width < 1 || f->bias_width > 8)) {
      snprintf(err, errlen, "exponent_bias_width must be between 1 and 8, got %d", f->bias_width);
      return -1;
    }
    if (f->kind == SLQ_BLOCK_FP && (f->width < 2 || f->width > 24 || f->exponent_width < 1 || f->exponent_width > 10)) {
      snprintf(err, errlen, "block_fp needs width 2..24 (sign and mantissa) and exponent_width 1..10");
      return -1;
    }
    if (f->kind == SLQ_BLOCK_LOG && (f->width < 2 || f->width > 12)) {
      snprintf(err, errlen, "block_log needs a width of 2 to 12 bits, got %d", f->width);
      return -1;
    }
    if (f->kind == SLQ_BLOCK_MINIFLOAT && (f->exponent_width < 1 || f->width - f->exponent_width - 1 < 1)) {
      snprintf(err, errlen, "block_minifloat needs exponent_width >= 1 and at least one mantissa bit");
      return -1;
    }
    return 0;
  }
  if (is_mx(f->kind)) {
    if (f->block < 1 || f->block > 4096) {
      snprintf(err, errlen, "block must be between 1 and 4096 (the OCP default is 32), got %d", f->block);
      return -1;
    }
    return 0;
  }
  if (f->width < 1 || f->width > 32) {
    snprintf(err, errlen, "width must be between 1 and 32 bits, got %d", f->width);
    return -1;
  }
  switch (f->kind) {
    case SLQ_INTEGER:
      if (f->frac_width < -64 || f->frac_width > 64) {
        snprintf(err, errlen, "frac must be between -64 and 64, got %d", f->frac_width);
        return -1;
      }
      if (f->frac_width > f->width) {
        snprintf(err, errlen, "frac=%d is larger than width=%d: a fixed-point number has at most width fractional bits",
                 f->frac_width, f->width);
        return -1;
      }
      return 0;
    case SLQ_MINIFLOAT_DENORM:
    case SLQ_MINIFLOAT_IEEE:
      if (f->exponent_width < 1 || f->exponent_width > 11 || f->width - f->exponent_width - 1 < (f->kind == SLQ_MINIFLOAT_IEEE)) {
        snprintf(err, errlen, "exponent_width must be between 1 and 11 and leave room for the sign%s: width=%d, exponent_width=%d",
                 f->kind == SLQ_MINIFLOAT_IEEE ? " and at least one mantissa bit" : "", f->width, f->exponent_width);
        return -1;
      }
      break;
    case SLQ_LOG:
      if (f->width < 2 || f->width > 12) {
        snprintf(err, errlen, "a log format needs a width of 2 to 12 bits (sign and exponent), got %d", f->width);
        return -1;
      }
      break;
    default:
      break;
  }
  if (f->has_bias && (f->exponent_bias < -1024 || f->exponent_bias > 1024)) {
    snprintf(err, errlen, "exponent_bias must be between -1024 and 1024, got %d", f->exponent_bias);
    return -1;
  }
  return 0;
}

/* MX floating-point block: AVX2 where the block's largest magnitude is a
** normal float (its exponent bits are flog2), the reference otherwise */
static void mxfp_block_fast(const slQ_Format *f, const float *in, float *out, size_t n) {
  uint32_t top = abs_bits_max(in, n);
  if (top >= 0x7F800000u || top < 0x00800000u) {  /* NaN or infinity, zero or subnormal: rare */
    q_mx_block(f, in, out, n);
    return;
  }
  MxElem el = mx_elem(f->kind);
  int shared = clampi((int)(top >> 23) - 127 - el.emax, -127, 127);
  float unscale = shared > -127 ? pow2f(-shared) : ldexpf(1.0f, -shared), scale = shared > -127 ? pow2f(shared) : ldexpf(1.0f, shared);
  size_t i = slQ_simd_mxfp(in, out, n, unscale, scale, el.mbits, el.bias, (float)el.max_normal);
  for (; i < n; i++) out[i] = mx_elem_q(el, 0, shared, in[i]);
}

/* the largest magnitude of each block, as block_maxima, from the bit
** patterns (an integer maximum; above 0x7F800000 is a NaN) */
static void block_maxima_rows(const float *in, size_t n, size_t row, size_t k, uint32_t *m, uint32_t *smallest, size_t r0,
                              size_t r1) {
  size_t per_row = (row + k - 1) / k;
  for (size_t r = r0; r < r1; r++) {
    size_t len = r * row + row <= n ? row : n - r * row;
    if (slQ_simd_block_maxima(in + r * row, len, k, m + r * per_row, &smallest[r])) continue;
    smallest[r] = UINT32_MAX;
    for (size_t b = 0; b < per_row; b++) {
      size_t start = r * row + b * k, bl = k;
      if (b * k + bl > row) bl = row - b * k;
      if (start >= n) bl = 0;
      else if (start + bl > n) bl = n - start;
      uint32_t top = abs_bits_max(in + start, bl), c = top - 1u < 0x7F7FFFFFu ? top - 1u : UINT32_MAX;
      m[r * per_row + b] = top;
      smallest[r] = c < smallest[r] ? c : smallest[r];
    }
  }
}

/* a block maximum's bit pattern as block_maxima's double */
static double block_max_value(uint32_t bits) {
  float mf;
  memcpy(&mf, &bits, sizeof mf);
  return bits > 0x7F800000u ? NAN : (double)mf;
}

/* binary and ternary rows without data-dependent branches: the sums run in
** the reference's order (the same rounding), adding 0.0 for a value left
** out changes nothing, and x > delta for a float x is x > t with t the
** largest float not above delta */
static float float_below(double d) {
  float t = (float)d;
  return (double)t > d ? nextafterf(t, -INFINITY) : t;
}

static void binary_out(const slQ_Format *f, const float *x, float *y, size_t len, double sum) {
  float a = (float)(sum / (double)len);
  size_t i = slQ_simd_binary(x, y, len, a, f->bipolar);
  if (f->bipolar)
    for (; i < len; i++) y[i] = x[i] >= 0 ? 1.0f : -1.0f;
  else
    for (; i < len; i++) y[i] = x[i] > 0 ? a : 0.0f;
}

static double ternary_delta(double sum, size_t len) { return 0.75 * sum / (double)len; }

static void ternary_out(const slQ_Format *f, const float *x, float *y, size_t len, double delta, double kept, size_t nk) {
  float alpha = f->scaled ? (nk ? (float)(kept / (double)nk) : 0.0f) : 1.0f, t = float_below(delta);
  size_t i = slQ_simd_ternary(x, y, len, t, alpha);
  for (; i < len; i++) y[i] = alpha * (float)((x[i] > t) - (x[i] < -t));
}

static void binary_row_fast(const slQ_Format *f, const float *x, float *y, size_t len) {
  double sum = 0, kept = 0;
  size_t nk = 0;
  if (f->kind == SLQ_BINARY && f->bipolar) {  /* the scale is not used */
    binary_out(f, x, y, len, 0);
    return;
  }
  for (size_t i = 0; i < len; i++) sum += fabs((double)x[i]);
  if (f->kind == SLQ_BINARY) {
    binary_out(f, x, y, len, sum);
    return;
  }
  double delta = ternary_delta(sum, len);
  for (size_t i = 0; i < len; i++) {
    double a = fabs((double)x[i]);
    int in = a > delta;
    kept += in ? a : 0.0;
    nk += (size_t)in;
  }
  ternary_out(f, x, y, len, delta, kept, nk);
}

/* rows r0 to r1 of binary or ternary. A row whose sums are exact in any
** order (slQ_simd_abs_sum_exact: most rows of weights and activations) is
** summed across its columns; otherwise eight whole rows at a time through
** slQ_simd_abs_sums8, each row's sums in its own order, or one row alone. */
static void binary_ternary_rows(const slQ_Format *f, const float *in, float *out, size_t n, size_t row, size_t r0, size_t r1) {
  int bipolar = f->kind == SLQ_BINARY && f->bipolar;
  for (size_t r = r0; r < r1;) {
    size_t start = r * row, len = start + row <= n ? row : n - start;
    const float *x = in + start;
    float *y = out + start;
    double sum, kept, sums[8], delta[8], kepts[8];
    size_t nk, nks[8];
    if (bipolar) {  /* the scale is not used */
      binary_out(f, x, y, len, 0);
      r++;
    } else if (slQ_simd_abs_sum_exact(x, len, &sum)) {
      if (f->kind == SLQ_BINARY) {
        binary_out(f, x, y, len, sum);
      } else {
        double d = ternary_delta(sum, len);
        slQ_simd_kept_sum(x, len, d, &kept, &nk);
        ternary_out(f, x, y, len, d, kept, nk);
      }
      r++;
    } else if (r + 8 <= r1 && (r + 8) * row <= n && slQ_simd_abs_sums8(x, row, row, NULL, sums, NULL)) {
      for (int k = 0; k < 8; k++) delta[k] = ternary_delta(sums[k], row);
      if (f->kind == SLQ_TERNARY) slQ_simd_abs_sums8(x, row, row, delta, kepts, nks);
      for (int k = 0; k < 8; k++) {
        if (f->kind == SLQ_BINARY) binary_out(f, x + (size_t)k * row, y + (size_t)k * row, row, sums[k]);
        else ternary_out(f, x + (size_t)k * row, y + (size_t)k * row, row, delta[k], kepts[k], nks[k]);
      }
      r += 8;
    } else {
      binary_row_fast(f, x, y, len);
      r++;
    }
  }
}

typedef struct {
  const slQ_Format *f;
  const float *in;
  float *out;
  size_t n, row;
  uint32_t *m;       /* bit patterns of the block maxima, per_row to a row */
  size_t nb;         /* blocks; after them in m, each row's smallest (block_maxima_rows) */
  uint32_t zero_as;  /* what an all-zero block's maximum becomes (the zero-block fix) */
  int pass;   /* blocked formats: 0 finds the maxima, 1 applies */
} Apply;

static void apply_elements(const slQ_Format *f, const float *in, float *out, size_t n) {
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
    slQ_apply_reference(f, in, out, n, n);
  }
}

static void apply_range(void *ctx, size_t r0, size_t r1) {
  const Apply *a = ctx;
  const slQ_Format *f = a->f;
  if (!slQ_is_blocked(f->kind) && f->kind < SLQ_BINARY) {  /* elementwise: a range of values */
    apply_elements(f, a->in + r0, a->out + r0, r1 - r0);
    return;
  }
  size_t row = a->row, k = (size_t)f->block, per_row = (row + k - 1) / k;
  if (a->pass == 0) {
    block_maxima_rows(a->in, a->n, row, k, a->m, a->m + a->nb, r0, r1);
    return;
  }
  if (f->kind == SLQ_BINARY || f->kind == SLQ_TERNARY) {
    binary_ternary_rows(f, a->in, a->out, a->n, row, r0, r1);
    return;
  }
  for (size_t r = r0; r < r1; r++) {
    size_t start = r * row, len = start + row <= a->n ? row : a->n - start;
    const float *x = a->in + start;
    float *y = a->out + start;
    if (f->kind >= SLQ_BINARY) {
      binary_rows(f, x, y, len, len);
    } else {
      const uint32_t *m = a->m ? a->m + r * per_row : NULL;
      size_t done = 0;
      if (f->kind == SLQ_BLOCK_FP) {
        int M = f->width - 1, E = f->exponent_width, B = f->has_bias ? f->exponent_bias : default_bias(E);
        done = slQ_simd_block_fp_row(x, y, len, k, m, a->zero_as, M, B, (1 << E) - 1 - B);
      } else if (f->kind == SLQ_BLOCK_LOG) {
        done = slQ_simd_block_log_row(x, y, len, k, m, a->zero_as, f->width - 1, f->bias_width);
      } else if (is_mx(f->kind)) {
        MxElem el = mx_elem(f->kind);
        done = slQ_simd_mx_row(x, y, len, k, f->kind == SLQ_MXINT8, el.emax, el.mbits, el.bias, (float)el.max_normal);
      }
      /* MX blocks; block_minifloat, and a block the AVX2 row stopped before, one value at a time */
      for (size_t b = done / k; done < len && b < per_row && b * k < len; b++) {
        size_t bl = b * k + k <= len ? k : len - b * k;
        if (f->kind == SLQ_MXINT8) {
          mxint8_block_fast(x + b * k, y + b * k, bl);
        } else if (is_mx(f->kind)) {
          mxfp_block_fast(f, x + b * k, y + b * k, bl);
        } else {
          double mb = block_max_value(m[b] ? m[b] : a->zero_as);
          for (size_t i = b * k; i < b * k + bl; i++) y[i] = block_elem(f, mb, x[i]);
        }
      }
    }
  }
}

/* The fast path: the loops above, split over the thread team by rows (by
** values for the elementwise formats), which are independent, so the
** numbers do not depend on the split. */
void slQ_apply(const slQ_Format *f, const float *in, float *out, size_t n, size_t row) {
  if (n == 0) return;
  if (row == 0 || row > n) row = n;
  Apply a = {f, in, out, n, row, NULL, 0, 0, 1};
  enum { CHUNK = 16384 };
  if (!slQ_is_blocked(f->kind) && f->kind < SLQ_BINARY) {
    slK_parallel_for(n, CHUNK, apply_range, &a);
    return;
  }
  size_t rows = (n + row - 1) / row, min_rows = CHUNK / row + 1;
  if (slQ_is_blocked(f->kind) && !is_mx(f->kind)) {
    /* the zero-block fix needs every block's maximum first (block_maxima) */
    size_t per_row = (row + (size_t)f->block - 1) / (size_t)f->block, nb = per_row * rows;
    a.m = malloc((nb + rows) * sizeof *a.m);
    a.nb = nb;
    a.pass = 0;
    slK_parallel_for(rows, min_rows, apply_range, &a);
    /* all-zero blocks take the smallest finite non-zero maximum, or 1: as
    ** bit patterns, the smallest in [1, 0x7F7FFFFF], found (each row's in
    ** the pass above) as the smallest of pattern - 1 with the others (0,
    ** infinity, NaN) moved out of reach */
    uint32_t smallest = UINT32_MAX;
    for (size_t r = 0; r < rows; r++) smallest = a.m[nb + r] < smallest ? a.m[nb + r] : smallest;
    a.zero_as = smallest == UINT32_MAX ? 0x3F800000u /* 1.0f */ : smallest + 1u;
    a.pass = 1;
  }
  slK_parallel_for(rows, min_rows, apply_range, &a);
  free(a.m);
}

void slQ_apply_reference(const slQ_Format *f, const float *in, float *out, size_t n, size_t row) {
  if (f->kind >= SLQ_BINARY) {
    binary_rows(f, in, out, n, row);
    return;
  }
  if (f->kind >= SLQ_BLOCK_FP) {
    block_formats(f, in, out, n, row);
    return;
  }
  if (is_mx(f->kind)) {
    /* blocks run along each row; a partial block at a row's end is padded
    ** with zeros, which do not change its maximum */
    if (row == 0) row = n;
    for (size_t r = 0; r < n; r += row)
      for (size_t b = 0; b < row && r + b < n; b += (size_t)f->block) {
        size_t len = (size_t)f->block;
        if (b + len > row) len = row - b;
        if (r + b + len > n) len = n - r - b;
        q_mx_block(f, in + r + b, out + r + b, len);
      }
    return;
  }
  for (size_t i = 0; i < n; i++) {
    float x = in[i];
    switch (f->kind) {
      case SLQ_INTEGER: out[i] = q_integer(f, x); break;
      case SLQ_MINIFLOAT_DENORM: out[i] = q_minifloat_denorm(f, x); break;
      case SLQ_MINIFLOAT_IEEE: out[i] = q_minifloat_ieee(f, x); break;
      case SLQ_LOG: out[i] = q_log(f, x); break;
      default: out[i] = x; break;
    }
  }
}

double slQ_bits(const slQ_Format *f) {
  switch (f->kind) {
    case SLQ_BLOCK_FP: return f->width + (double)f->exponent_width / f->block;
    case SLQ_BLOCK_MINIFLOAT: case SLQ_BLOCK_LOG: return f->width + (double)f->bias_width / f->block;
    case SLQ_BINARY: case SLQ_BINARY_RESIDUAL: return 1;
    case SLQ_TERNARY: return 2;
    case SLQ_MXINT8: case SLQ_MXFP8_E4M3: case SLQ_MXFP8_E5M2: return 8 + 8.0 / f->block;
    case SLQ_MXFP6_E3M2: case SLQ_MXFP6_E2M3: return 6 + 8.0 / f->block;
    case SLQ_MXFP4_E2M1: return 4 + 8.0 / f->block;
    default: return f->width;
  }
}

void slQ_describe(const slQ_Format *f, char *out, size_t size) {
  switch (f->kind) {
    case SLQ_INTEGER: snprintf(out, size, "integer(width=%d, frac=%d)", f->width, f->frac_width); break;
    case SLQ_MINIFLOAT_DENORM: case SLQ_MINIFLOAT_IEEE:
      snprintf(out, size, "%s(width=%d, exponent=%d, bias=%d)", slQ_kind_name(f->kind), f->width, f->exponent_width,
               f->has_bias ? f->exponent_bias : default_bias(f->exponent_width));
      break;
    case SLQ_LOG:
      snprintf(out, size, "log(width=%d, bias=%d)", f->width, f->has_bias ? f->exponent_bias : default_bias(f->width - 1));
      break;
    case SLQ_BLOCK_FP: snprintf(out, size, "block_fp(width=%d, exponent=%d, block=%d)", f->width, f->exponent_width, f->block); break;
    case SLQ_BLOCK_MINIFLOAT: case SLQ_BLOCK_LOG:
      snprintf(out, size, "%s(width=%d, bias_width=%d, block=%d)", slQ_kind_name(f->kind), f->width, f->bias_width, f->block);
      break;
    case SLQ_BINARY: snprintf(out, size, "binary(%s)", f->bipolar ? "bipolar" : "scaled"); break;
    case SLQ_BINARY_RESIDUAL: snprintf(out, size, "binary_residual(levels=%d)", f->levels); break;
    case SLQ_TERNARY: snprintf(out, size, "ternary(%s)", f->scaled ? "scaled" : "unscaled"); break;
    default: snprintf(out, size, "%s(block=%d)", slQ_kind_name(f->kind), f->block); break;
  }
}

/* ------------------------------------------------- as a graph transform */

typedef struct {
  slQ_Format format;
  size_t row;
} Quantiser;

static void transform_apply(const slM_Transform *t, const float *in, float *out, size_t n) {
  const Quantiser *q = t->state;
  slQ_apply(&q->format, in, out, n, q->row);
}

double slQ_transform_bytes(const slM_Transform *t, size_t n) {
  if (!t || t->apply != transform_apply) return ceil((t ? t->bits : 32) * (double)n / 8);
  const Quantiser *q = t->state;
  const slQ_Format *f = &q->format;
  if (!slQ_is_blocked(f->kind)) return ceil(slQ_bits(f) * (double)n / 8);
  /* each row's blocks share one scale or bias; a row's last block may be short */
  double shared = (slQ_bits(f) - floor(slQ_bits(f))) * f->block, element = floor(slQ_bits(f));
  size_t row = q->row ? q->row : n, rows = (n + row - 1) / row, blocks = (row + (size_t)f->block - 1) / (size_t)f->block;
  return ceil((element * (double)n + shared * (double)(rows * blocks)) / 8);
}

static void transform_free(slM_Transform *t) {
  free(t->state);
  free(t);
}

static slM_Transform *transform_clone(const slM_Transform *t) {
  const Quantiser *q = t->state;
  return slQ_transform(&q->format, q->row);
}

/* checkpoints: 'Q', every field of the format, the row length */
static void transform_encode(const slM_Transform *t, slU_Text *out) {
  const Quantiser *q = t->state;
  const slQ_Format *f = &q->format;
  const int fields[] = {(int)f->kind, f->width, f->frac_width, f->exponent_width, f->exponent_bias, f->has_bias,
                        f->is_signed, f->block, f->bias_width, f->levels, f->bipolar, f->scaled};
  slU_put_u8(out, 'Q');
  slU_put_u32(out, (uint32_t)(sizeof fields / sizeof *fields));
  for (size_t i = 0; i < sizeof fields / sizeof *fields; i++) slU_put_u32(out, (uint32_t)fields[i]);
  slU_put_u64(out, q->row);
}

slM_Transform *slQ_transform_decode(slU_Reader *r, char *err, size_t errlen) {
  int fields[12] = {0};
  uint32_t n = slU_get_u32(r);
  if (n != 12) return snprintf(err, errlen, "a quantiser written with %u settings (this syslab has 12)", n), NULL;
  for (int i = 0; i < 12; i++) fields[i] = (int)slU_get_u32(r);
  size_t row = (size_t)slU_get_u64(r);
  slQ_Format f = {(slQ_Kind)fields[0], fields[1], fields[2], fields[3], fields[4], fields[5],
                  fields[6], fields[7], fields[8], fields[9], fields[10], fields[11]};
  if (r->bad || f.kind >= SLQ_NUM_FORMATS || slQ_check(&f, err, errlen) != 0) {
    if (r->bad || f.kind >= SLQ_NUM_FORMATS) snprintf(err, errlen, "a quantiser's settings are damaged");
    return NULL;
  }
  return slQ_transform(&f, row);
}

slM_Transform *slQ_transform(const slQ_Format *f, size_t row) {
  slM_Transform *t = calloc(1, sizeof *t);
  Quantiser *q = malloc(sizeof *q);
  q->format = *f;
  q->row = row;
  t->apply = transform_apply;
  t->free = transform_free;
  t->clone = transform_clone;
  t->encode = transform_encode;
  t->state = q;
  t->bits = slQ_bits(f);
  t->has_gradient = slQ_has_gradient(f->kind);  /* the others train with the straight-through estimator */
  slQ_describe(f, t->name, sizeof t->name);
  return t;
}

/* ---------------------------------------------------------------- MXINT8 */

int slQ_mxint8_pack(const float *x, size_t n, int g, int8_t *m, uint8_t *scales, char *err, size_t errlen) {
  if (g != 16 && g != 32) {
    snprintf(err, errlen, "the MXINT8 group size must be 16 or 32, got %d", g);
    return -1;
  }
  if (n % (size_t)g != 0) {
    snprintf(err, errlen, "%zu values do not divide into groups of %d", n, g);
    return -1;
  }
  for (size_t b = 0; b < n / (size_t)g; b++) {
    const float *v = x + b * (size_t)g;
    double amax = 0;
    int nonfinite = 0;
    for (int i = 0; i < g; i++) {
      if (!isfinite(v[i])) nonfinite = 1;
      else if (fabs((double)v[i]) > amax) amax = fabs((double)v[i]);
    }
    uint8_t e = nonfinite ? 0xFF : amax < ldexp(1.0, -126) ? 0 : (uint8_t)(flog2(amax) + 127);
    scales[b] = e;
    for (int i = 0; i < g; i++)
      m[b * (size_t)g + (size_t)i] = e == 0 || e == 0xFF ? 0 : (int8_t)clampd(rint(ldexp((double)v[i], 133 - e)), -127, 127);
  }
  return 0;
}

void slQ_mxint8_unpack(const int8_t *m, const uint8_t *scales, size_t n, int g, float *out) {
  for (size_t i = 0; i < n; i++) {
    uint8_t e = scales[i / (size_t)g];
    out[i] = e == 0 ? 0.0f : e == 0xFF ? NAN : ldexpf((float)m[i], e - 133);
  }
}

/* the decode itself lives with the kernels that vectorise it (kernels/mxint8.c) */
float slQ_bf16_to_float(uint16_t b) { return slK_bf16_to_f32(b); }

uint16_t slQ_mxint8_to_bf16(int8_t m, uint8_t e) { return slK_mxint8_bf16_one(m, e); }

/* ---------------------------------------------------------------- pruning */

static const float *sort_values;

static int by_magnitude(const void *a, const void *b) {
  size_t i = *(const size_t *)a, j = *(const size_t *)b;
  float x = fabsf(sort_values[i]), y = fabsf(sort_values[j]);
  int nx = isnan(x), ny = isnan(y);
  if (nx != ny) return nx - ny;  /* NaN magnitudes sort last */
  if (!nx && x != y) return x < y ? -1 : 1;
  return (i > j) - (i < j);
}

static size_t prune_count(size_t n, double sparsity) { return (size_t)rint(sparsity * (double)n); }

void slQ_prune_l1(const float *x, size_t n, double sparsity, unsigned char *mask) {
  size_t *order = malloc((n ? n : 1) * sizeof *order);
  for (size_t i = 0; i < n; i++) order[i] = i, mask[i] = 1;
  sort_values = x;
  qsort(order, n, sizeof *order, by_magnitude);
  size_t k = prune_count(n, sparsity);
  for (size_t i = 0; i < k && i < n; i++) mask[order[i]] = 0;
  free(order);
}

/* numpy RandomState(seed).permutation(n)[:k] (numerics §4 decision 6) */
void slQ_prune_random_stream(slM_Mt *rng, size_t n, double sparsity, unsigned char *mask) {
  size_t *perm = malloc((n ? n : 1) * sizeof *perm);
  for (size_t i = 0; i < n; i++) perm[i] = i, mask[i] = 1;
  slM_mt_shuffle(rng, perm, n);
  size_t k = prune_count(n, sparsity);
  for (size_t i = 0; i < k && i < n; i++) mask[perm[i]] = 0;
  free(perm);
}

void slQ_prune_random(size_t n, double sparsity, uint64_t seed, unsigned char *mask) {
  slM_Mt rng;
  slM_mt_seed(&rng, (uint32_t)seed);
  slQ_prune_random_stream(&rng, n, sparsity, mask);
}
