/*
** quant.c - number formats and pruning, following the definitions in
** docs/formats.md (MASE's quantisers, the OCP Microscaling formats and the
** ADLS Lab 4 MXINT8 kernel; numerics §1-§5).
**
** Every format is a quantise-dequantise function: values go in as float32
** and come out as the nearest value the format can hold, still float32, so
** a model can run with them unchanged. Rounding is to nearest with ties to
** even (rint), never round(). Exponents come from frexp, exactly, in
** binary64, so powers of two are not misjudged by a float log2.
**
** This file is the folder's door: formats by name, their checks, sizes and
** descriptions, the graph transform, MXINT8 packing and pruning. The
** formats themselves are in two families: the elementwise ones
** (quant_float.c) and those that share something across a block or a row
** (quant_block.c). Each has its binary64 loops, one value at a time, as the
** reference (slQ_apply_reference) and optimised loops that give the same
** bits, with the AVX2 and AVX-512 loops of quant_simd.c and quant_avx512.c
** under them. slQ_apply, which the graph and the commands call, runs the
** optimised loops, split over the thread team by rows;
** tests/unit/test_quant_simd.c and test_quant_fast.c compare them with the
** reference value by value.
*/
#include "syslab.h"
#include "kernels/kernels.h"
#include "kernels/parallel.h"
#include "quant.h"
#include "quant_bits.h"
#include "quant_block.h"
#include "quant_float.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *const kind_names[SLQ_NUM_FORMATS] = {
    "integer",    "minifloat_denorm", "minifloat_ieee",  "log",        "mxint8",   "mxfp8_e4m3",
    "mxfp8_e5m2", "mxfp6_e3m2",       "mxfp6_e2m3",      "mxfp4_e2m1", "block_fp", "block_minifloat",
    "block_log",  "binary",           "binary_residual", "ternary",
};

/* 1 for formats that share something across a block of `block` values */
static int is_blocked(slQ_Kind k) { return slQ_is_mx(k) || (k >= SLQ_BLOCK_FP && k <= SLQ_BLOCK_LOG); }
int slQ_has_gradient(slQ_Kind k) { return k != SLQ_BLOCK_MINIFLOAT && k != SLQ_BINARY_RESIDUAL; }

const char *slQ_kind_name(slQ_Kind k) { return k < SLQ_NUM_FORMATS ? kind_names[k] : "?"; }

int slQ_kind_from_name(const char *name) {
  for (int k = 0; k < SLQ_NUM_FORMATS; k++)
    if (strcmp(kind_names[k], name) == 0) return k;
  return -1;
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
  if (is_blocked(f->kind) && !slQ_is_mx(f->kind)) {
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
    if (f->kind == SLQ_BLOCK_MINIFLOAT && (f->width < 3 || f->width > 32 || f->exponent_width < 1 ||
                                           f->exponent_width > 11 || f->width - f->exponent_width - 1 < 1)) {
      snprintf(err, errlen, "block_minifloat needs width 3..32, exponent_width 1..11 and at least one mantissa bit");
      return -1;
    }
    if (f->has_bias && (f->exponent_bias < -1024 || f->exponent_bias > 1024)) {
      snprintf(err, errlen, "exponent_bias must be between -1024 and 1024, got %d", f->exponent_bias);
      return -1;
    }
    return 0;
  }
  if (slQ_is_mx(f->kind)) {
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
      if (f->exponent_width < 1 || f->exponent_width > 11 ||
          f->width - f->exponent_width - 1 < (f->kind == SLQ_MINIFLOAT_IEEE)) {
        snprintf(err, errlen,
                 "exponent_width must be between 1 and 11 and leave room for the sign%s: width=%d, exponent_width=%d",
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
    default: break;
  }
  if (f->has_bias && (f->exponent_bias < -1024 || f->exponent_bias > 1024)) {
    snprintf(err, errlen, "exponent_bias must be between -1024 and 1024, got %d", f->exponent_bias);
    return -1;
  }
  return 0;
}

/* ------------------------------------------------------------ applying */

typedef struct {
  const slQ_Format *f;
  const float *in;
  float *out;
  size_t n, row;
  uint32_t *m;      /* bit patterns of the block maxima, per_row to a row */
  size_t nb;        /* blocks; after them in m, each row's smallest (slQ_block_maxima_rows) */
  uint32_t zero_as; /* what an all-zero block's maximum becomes (the zero-block fix) */
  int pass;         /* blocked formats: 0 finds the maxima, 1 applies */
} Apply;

static void apply_range(void *ctx, size_t r0, size_t r1) {
  const Apply *a = ctx;
  const slQ_Format *f = a->f;
  if (!is_blocked(f->kind) && f->kind < SLQ_BINARY) { /* elementwise: a range of values */
    slQ_float_fast(f, a->in + r0, a->out + r0, r1 - r0);
    return;
  }
  size_t row = a->row, k = (size_t)f->block, per_row = (row + k - 1) / k;
  if (a->pass == 0) {
    slQ_block_maxima_rows(a->in, a->n, row, k, a->m, a->m + a->nb, r0, r1);
    return;
  }
  if (f->kind == SLQ_BINARY || f->kind == SLQ_TERNARY) {
    slQ_binary_ternary_rows(f, a->in, a->out, a->n, row, r0, r1);
    return;
  }
  for (size_t r = r0; r < r1; r++) {
    size_t start = r * row, len = start + row <= a->n ? row : a->n - start;
    const float *x = a->in + start;
    float *y = a->out + start;
    if (f->kind >= SLQ_BINARY) slQ_binary_reference(f, x, y, len, len);
    else slQ_block_row(f, x, y, len, a->m ? a->m + r * per_row : NULL, a->zero_as);
  }
}

/* The fast path: the optimised loops, split over the thread team by rows (by
** values for the elementwise formats), which are independent, so the
** numbers do not depend on the split. */
void slQ_apply(const slQ_Format *f, const float *in, float *out, size_t n, size_t row) {
  if (n == 0) return;
  if (row == 0 || row > n) row = n;
  Apply a = {f, in, out, n, row, NULL, 0, 0, 1};
  enum { CHUNK = 16384 };
  if (!is_blocked(f->kind) && f->kind < SLQ_BINARY) {
    slK_parallel_for(n, CHUNK, apply_range, &a);
    return;
  }
  size_t rows = (n + row - 1) / row, min_rows = CHUNK / row + 1;
  if (is_blocked(f->kind) && !slQ_is_mx(f->kind)) {
    /* the zero-block fix needs every block's maximum first (quant_block.c's block_maxima) */
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

/* the reference: each family's binary64 loops, one value at a time */
void slQ_apply_reference(const slQ_Format *f, const float *in, float *out, size_t n, size_t row) {
  if (f->kind >= SLQ_BINARY) slQ_binary_reference(f, in, out, n, row);
  else if (f->kind >= SLQ_BLOCK_FP) slQ_block_reference(f, in, out, n, row);
  else if (slQ_is_mx(f->kind)) slQ_mx_reference(f, in, out, n, row);
  else slQ_float_reference(f, in, out, n);
}

/* storage bits per value, e.g. 8.25 for MXINT8 with blocks of 32 */
static double format_bits(const slQ_Format *f) {
  switch (f->kind) {
    case SLQ_BLOCK_FP: return f->width + (double)f->exponent_width / f->block;
    case SLQ_BLOCK_MINIFLOAT:
    case SLQ_BLOCK_LOG: return f->width + (double)f->bias_width / f->block;
    case SLQ_BINARY:
    case SLQ_BINARY_RESIDUAL: return 1;
    case SLQ_TERNARY: return 2;
    case SLQ_MXINT8:
    case SLQ_MXFP8_E4M3:
    case SLQ_MXFP8_E5M2: return 8 + 8.0 / f->block;
    case SLQ_MXFP6_E3M2:
    case SLQ_MXFP6_E2M3: return 6 + 8.0 / f->block;
    case SLQ_MXFP4_E2M1: return 4 + 8.0 / f->block;
    default: return f->width;
  }
}

void slQ_describe(const slQ_Format *f, char *out, size_t size) {
  switch (f->kind) {
    case SLQ_INTEGER: snprintf(out, size, "integer(width=%d, frac=%d)", f->width, f->frac_width); break;
    case SLQ_MINIFLOAT_DENORM:
    case SLQ_MINIFLOAT_IEEE:
      snprintf(out, size, "%s(width=%d, exponent=%d, bias=%d)", slQ_kind_name(f->kind), f->width, f->exponent_width,
               f->has_bias ? f->exponent_bias : default_bias(f->exponent_width));
      break;
    case SLQ_LOG:
      snprintf(out, size, "log(width=%d, bias=%d)", f->width,
               f->has_bias ? f->exponent_bias : default_bias(f->width - 1));
      break;
    case SLQ_BLOCK_FP:
      snprintf(out, size, "block_fp(width=%d, exponent=%d, block=%d)", f->width, f->exponent_width, f->block);
      break;
    case SLQ_BLOCK_MINIFLOAT:
    case SLQ_BLOCK_LOG:
      snprintf(out, size, "%s(width=%d, bias_width=%d, block=%d)", slQ_kind_name(f->kind), f->width, f->bias_width,
               f->block);
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
  if (!is_blocked(f->kind)) return ceil(format_bits(f) * (double)n / 8);
  /* each row's blocks share one scale or bias; a row's last block may be short */
  double shared = (format_bits(f) - floor(format_bits(f))) * f->block, element = floor(format_bits(f));
  size_t row = q->row ? q->row : n, rows = (n + row - 1) / row,
         blocks = (row + (size_t)f->block - 1) / (size_t)f->block;
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
                        f->is_signed, f->block, f->bias_width, f->levels,         f->bipolar,       f->scaled};
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
  slQ_Format f = {(slQ_Kind)fields[0], fields[1], fields[2], fields[3], fields[4],  fields[5],
                  fields[6],           fields[7], fields[8], fields[9], fields[10], fields[11]};
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
  t->bits = format_bits(f);
  t->has_gradient = slQ_has_gradient(f->kind); /* the others train with the straight-through estimator */
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
      m[b * (size_t)g + (size_t)i] =
          e == 0 || e == 0xFF ? 0 : (int8_t)clampd(rint(ldexp((double)v[i], 133 - e)), -127, 127);
  }
  return 0;
}

void slQ_mxint8_unpack(const int8_t *m, const uint8_t *scales, size_t n, int g, float *out) {
  for (size_t i = 0; i < n; i++) {
    uint8_t e = scales[i / (size_t)g];
    out[i] = e == 0 ? 0.0f : e == 0xFF ? NAN : ldexpf((float)m[i], e - 133);
  }
}

/* the decode itself lives with the kernels that vectorise it (kernels/mxint8_one.c) */

uint16_t slQ_mxint8_to_bf16(int8_t m, uint8_t e) { return slK_mxint8_bf16_one(m, e); }

/* ---------------------------------------------------------------- pruning */

static const float *sort_values;

static int by_magnitude(const void *a, const void *b) {
  size_t i = *(const size_t *)a, j = *(const size_t *)b;
  float x = fabsf(sort_values[i]), y = fabsf(sort_values[j]);
  int nx = isnan(x), ny = isnan(y);
  if (nx != ny) return nx - ny; /* NaN magnitudes sort last */
  if (!nx && x != y) return x < y ? -1 : 1;
  return (i > j) - (i < j);
}

static size_t prune_count(size_t n, double sparsity) { return (size_t)rint(sparsity * (double)n); }

/* order[] by by_magnitude, as qsort would have it (the order is total: ties
** go by index), but by a bottom-up merge sort that asks for an interrupt
** every 65,536 values it places, so that sorting millions of weights
** (seconds) stops at once. 0, or -1 when interrupted (order is then some
** permutation). */
static int sort_by_magnitude(size_t *order, size_t n) {
  size_t *tmp = malloc((n ? n : 1) * sizeof *tmp), *src = order, *dst = tmp;
  for (size_t width = 1; width < n; width *= 2) {
    for (size_t lo = 0; lo < n; lo += 2 * width) {
      size_t mid = lo + width < n ? lo + width : n, hi = lo + 2 * width < n ? lo + 2 * width : n;
      size_t i = lo, j = mid, k = lo;
      while (i < mid && j < hi) {
        if ((k & 0xFFFF) == 0 && sl_interrupted()) {
          free(tmp);
          return -1;
        }
        dst[k++] = by_magnitude(&src[j], &src[i]) < 0 ? src[j++] : src[i++];
      }
      while (i < mid) dst[k++] = src[i++];
      while (j < hi) dst[k++] = src[j++];
    }
    size_t *swap = src;
    src = dst, dst = swap;
  }
  if (src != order) memcpy(order, src, n * sizeof *order);
  free(tmp);
  return 0;
}

void slQ_prune_l1(const float *x, size_t n, double sparsity, unsigned char *mask) {
  size_t *order = malloc((n ? n : 1) * sizeof *order);
  for (size_t i = 0; i < n; i++) order[i] = i, mask[i] = 1;
  sort_values = x;
  if (sort_by_magnitude(order, n) == 0) { /* interrupted: nothing pruned, and the caller stops */
    size_t k = prune_count(n, sparsity);
    for (size_t i = 0; i < k && i < n; i++) mask[order[i]] = 0;
  }
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
