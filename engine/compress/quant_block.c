/*
** quant_block.c - the number formats that share something across a block
** or a row (docs/formats.md): the OCP Microscaling formats (MXINT8 and the
** MXFP element types, a shared E8M0 scale per block), the shared-exponent
** formats (block_fp, block_minifloat, block_log, with the zero-block fix),
** and binary, binary_residual and ternary (a scale per row).
**
** The reference is the binary64 arithmetic one value at a time, exponents
** from frexp (slQ_mx_reference, slQ_block_reference, slQ_binary_reference).
** The optimised loops below them give the same bits, a row at a time:
** block maxima as bit patterns, the vector row loops of quant_simd.c where
** the CPU has them, and scalar code for what they leave. quant.c splits the
** rows over the thread team and finds every block maximum first where the
** zero-block fix needs them.
*/
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "quant_bits.h"
#include "quant_block.h"
#include "quant_float.h"
#include "quant_simd.h"

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
    default: return (MxElem){0, 0, 0, 0, 127.0 / 64}; /* MXINT8 */
  }
}

/* one element of a finite MX block with shared exponent `shared` */
static float mx_elem_q(MxElem el, int is_int, int shared, float x) {
  double p = ldexp((double)x, -shared), q;
  if (is_int) {
    q = clampd(rint(p * 64), -127, 127) / 64;
    return q == 0 ? 0.0f : (float)ldexp(q, shared); /* an int8 mantissa 0 decodes to +0 */
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

/* the MX formats, one block at a time: blocks run along each row; a partial
** block at a row's end is padded with zeros, which do not change its maximum */
void slQ_mx_reference(const slQ_Format *f, const float *in, float *out, size_t n, size_t row) {
  if (row == 0) row = n;
  for (size_t r = 0; r < n; r += row)
    for (size_t b = 0; b < row && r + b < n; b += (size_t)f->block) {
      size_t len = (size_t)f->block;
      if (b + len > row) len = row - b;
      if (r + b + len > n) len = n - r - b;
      q_mx_block(f, in + r + b, out + r + b, len);
    }
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
    float a = fabsf(x) + 1e-9f; /* in binary32, as the reference does */
    double q = clampd(rint((double)a * ldexp(1.0, M - es)), 0, ldexp(1.0, M) - 1) * ldexp(1.0, es - M);
    return (float)(x < 0 ? -q : q);
  } else if (f->kind == SLQ_BLOCK_MINIFLOAT) {
    slQ_Format e = *f;
    e.kind = SLQ_MINIFLOAT_IEEE;
    e.has_bias = 1;
    e.exponent_bias = isinf(mb) ? (1 << f->bias_width) - 1 : clampi(flog2(mb), 0, (1 << f->bias_width) - 1);
    return slQ_minifloat_ieee_one(&e, x);
  } else { /* block_log */
    slQ_Format e = *f;
    int Eb = f->width - 1;
    e.kind = SLQ_LOG;
    e.has_bias = 1;
    e.exponent_bias = isinf(mb) ? 0 : clampi((1 << Eb) - 1 - clog2(mb), 0, (1 << f->bias_width) - 1);
    return slQ_log_one(&e, x);
  }
}

void slQ_block_reference(const slQ_Format *f, const float *in, float *out, size_t n, size_t row) {
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

void slQ_binary_reference(const slQ_Format *f, const float *in, float *out, size_t n, size_t row) {
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
    } else { /* binary residual sign, with its initial mu = (L, ..., 1) / (L(L+1)/2) */
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
** MXINT8 does the same arithmetic in float32 where it is exact (scaling by
** powers of two); the other formats run a row at a time through
** quant_simd.c where the CPU has the vector loops, the scalar code below
** finishing what they leave. tests/unit/test_quant.c and test_quant_simd.c
** check them bit for bit against the reference. */

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
  int shared = (int)((bits >> 23) & 0xFF) - 127; /* amax is normal: its exponent field is flog2 */
  if (6 - shared > 127 || shared - 6 < -126) {   /* 2^(6 - shared) would not be a normal float */
    slQ_Format f = {SLQ_MXINT8, 0, 0, 0, 0, 0, 1, (int)n};
    q_mx_block(&f, in, out, n);
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

/* MX floating-point block: AVX2 where the block's largest magnitude is a
** normal float (its exponent bits are flog2), the reference otherwise */
static void mxfp_block_fast(const slQ_Format *f, const float *in, float *out, size_t n) {
  uint32_t top = abs_bits_max(in, n);
  if (top >= 0x7F800000u || top < 0x00800000u) { /* NaN or infinity, zero or subnormal: rare */
    q_mx_block(f, in, out, n);
    return;
  }
  MxElem el = mx_elem(f->kind);
  int shared = clampi((int)(top >> 23) - 127 - el.emax, -127, 127);
  float unscale = shared > -127 ? pow2f(-shared) : ldexpf(1.0f, -shared),
        scale = shared > -127 ? pow2f(shared) : ldexpf(1.0f, shared);
  size_t i = slQ_simd_mxfp(in, out, n, unscale, scale, el.mbits, el.bias, (float)el.max_normal);
  for (; i < n; i++) out[i] = mx_elem_q(el, 0, shared, in[i]);
}

/* the largest magnitude of each block, as block_maxima, from the bit
** patterns (an integer maximum; above 0x7F800000 is a NaN) */
void slQ_block_maxima_rows(const float *in, size_t n, size_t row, size_t k, uint32_t *m, uint32_t *smallest, size_t r0,
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

static void ternary_out(const slQ_Format *f, const float *x, float *y, size_t len, double delta, double kept,
                        size_t nk) {
  float alpha = f->scaled ? (nk ? (float)(kept / (double)nk) : 0.0f) : 1.0f, t = float_below(delta);
  size_t i = slQ_simd_ternary(x, y, len, t, alpha);
  for (; i < len; i++) y[i] = alpha * (float)((x[i] > t) - (x[i] < -t));
}

static void binary_row_fast(const slQ_Format *f, const float *x, float *y, size_t len) {
  double sum = 0, kept = 0;
  size_t nk = 0;
  if (f->kind == SLQ_BINARY && f->bipolar) { /* the scale is not used */
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
void slQ_binary_ternary_rows(const slQ_Format *f, const float *in, float *out, size_t n, size_t row, size_t r0,
                             size_t r1) {
  int bipolar = f->kind == SLQ_BINARY && f->bipolar;
  for (size_t r = r0; r < r1;) {
    size_t start = r * row, len = start + row <= n ? row : n - start;
    const float *x = in + start;
    float *y = out + start;
    double sum, kept, sums[8], delta[8], kepts[8];
    size_t nk, nks[8];
    if (bipolar) { /* the scale is not used */
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

/* one row of len values of an MX or shared-exponent format (m: the row's
** block maxima as bit patterns, for block_fp, block_minifloat and
** block_log): the vector row loops, then the blocks they stopped before
** one value at a time */
void slQ_block_row(const slQ_Format *f, const float *x, float *y, size_t len, const uint32_t *m, uint32_t zero_as) {
  size_t k = (size_t)f->block, done = 0;
  if (f->kind == SLQ_BLOCK_FP) {
    int M = f->width - 1, E = f->exponent_width, B = f->has_bias ? f->exponent_bias : default_bias(E);
    done = slQ_simd_block_fp_row(x, y, len, k, m, zero_as, M, B, (1 << E) - 1 - B);
  } else if (f->kind == SLQ_BLOCK_LOG) {
    done = slQ_simd_block_log_row(x, y, len, k, m, zero_as, f->width - 1, f->bias_width);
  } else if (slQ_is_mx(f->kind)) {
    MxElem el = mx_elem(f->kind);
    done = slQ_simd_mx_row(x, y, len, k, f->kind == SLQ_MXINT8, el.emax, el.mbits, el.bias, (float)el.max_normal);
  }
  /* MX blocks; block_minifloat, and a block the vector row stopped before, one value at a time */
  for (size_t b = done / k; done < len && b * k < len; b++) {
    size_t bl = b * k + k <= len ? k : len - b * k;
    if (f->kind == SLQ_MXINT8) {
      mxint8_block_fast(x + b * k, y + b * k, bl);
    } else if (slQ_is_mx(f->kind)) {
      mxfp_block_fast(f, x + b * k, y + b * k, bl);
    } else {
      double mb = block_max_value(m[b] ? m[b] : zero_as);
      for (size_t i = b * k; i < b * k + bl; i++) y[i] = block_elem(f, mb, x[i]);
    }
  }
}
