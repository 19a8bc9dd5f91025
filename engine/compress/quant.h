/*
** quant.h - number formats as quantise-dequantise functions on float32
** arrays, and pruning masks (docs/formats.md gives every formula).
*/
#ifndef SYSLAB_QUANT_H
#define SYSLAB_QUANT_H

#include <stddef.h>
#include <stdint.h>

#include "graph/mt19937.h"
#include "graph/transform.h"

typedef enum {
  SLQ_INTEGER,           /* fixed point: width, frac_width, signed */
  SLQ_MINIFLOAT_DENORM,  /* width, exponent_width, exponent_bias; no implicit bit */
  SLQ_MINIFLOAT_IEEE,    /* width, exponent_width, exponent_bias; IEEE-style subnormals, no specials */
  SLQ_LOG,               /* width (sign + exponent), exponent_bias */
  SLQ_MXINT8,            /* OCP MX: blocks of `block` sharing an E8M0 scale, INT8 elements */
  SLQ_MXFP8_E4M3, SLQ_MXFP8_E5M2, SLQ_MXFP6_E3M2, SLQ_MXFP6_E2M3, SLQ_MXFP4_E2M1,
  SLQ_BLOCK_FP,          /* width (sign + mantissa), exponent_width, bias; shared exponent per block */
  SLQ_BLOCK_MINIFLOAT,   /* width, exponent_width, bias_width: minifloat_ieee with a per-block bias */
  SLQ_BLOCK_LOG,         /* width, bias_width: log with a per-block bias */
  SLQ_BINARY,            /* sign: +1/-1 (bipolar) or mean|x| per row for x > 0 */
  SLQ_BINARY_RESIDUAL,   /* sum of `levels` binarised residuals */
  SLQ_TERNARY,           /* -1/0/+1 around 0.75 mean|x| per row, optionally scaled */
  SLQ_NUM_FORMATS
} slQ_Kind;

typedef struct slQ_Format {
  slQ_Kind kind;
  int width, frac_width, exponent_width;
  int exponent_bias;     /* meaningful when has_bias */
  int has_bias;
  int is_signed;
  int block;             /* block size along the last dimension (MX: 32; block formats: 16) */
  int bias_width;        /* block_minifloat, block_log: bits of the shared bias */
  int levels;            /* binary_residual: 1 to 3 */
  int bipolar;           /* binary: +1/-1 rather than scaled 0/1 */
  int scaled;            /* ternary: scale by the mean of the kept magnitudes */
} slQ_Format;

/* 1 for formats that share something across a block of `block` values */
int slQ_is_blocked(slQ_Kind k);
/* 0 for formats whose training gradient is not defined (QAT is refused) */
int slQ_has_gradient(slQ_Kind k);

const char *slQ_kind_name(slQ_Kind k);
int slQ_kind_from_name(const char *name);     /* -1 if unknown */
/* 0, or -1 with err naming the parameter and the allowed range */
int slQ_check(const slQ_Format *f, char *err, size_t errlen);
/* quantise-dequantise n values; blocks run along rows of `row` elements
** (the last dimension). in and out may be the same array. */
void slQ_apply(const slQ_Format *f, const float *in, float *out, size_t n, size_t row);
/* the same, one value at a time in binary64: the reference slQ_apply's
** optimised loops are tested against */
void slQ_apply_reference(const slQ_Format *f, const float *in, float *out, size_t n, size_t row);
/* storage bits per value, e.g. 8.25 for MXINT8 with blocks of 32 */
double slQ_bits(const slQ_Format *f);
/* "integer(width=8, frac=4)" */
void slQ_describe(const slQ_Format *f, char *out, size_t size);
/* a compression transform (transform.h) applying f; rows of `row` */
slM_Transform *slQ_transform(const slQ_Format *f, size_t row);

/* MXINT8 packed form: int8 mantissas and one scale byte per block of g */
int slQ_mxint8_pack(const float *x, size_t n, int g, int8_t *mantissas, uint8_t *scales, char *err, size_t errlen);
void slQ_mxint8_unpack(const int8_t *mantissas, const uint8_t *scales, size_t n, int g, float *out);
/* the bfloat16 decode of one element as the Lab 4 kernel computes it */
uint16_t slQ_mxint8_to_bf16(int8_t m, uint8_t e);
float slQ_bf16_to_float(uint16_t b);

/* Pruning (exact-k): mask[i] = 0 for the k = RNE(s * n) pruned elements.
** l1: the smallest magnitudes, ties to the lower index; random: a uniform
** k-subset, the first k of numpy RandomState(seed).permutation(n) (MT19937,
** seeds 0 to 2^32 - 1), or of a permutation drawn from a running stream. */
void slQ_prune_l1(const float *x, size_t n, double sparsity, unsigned char *mask);
void slQ_prune_random(size_t n, double sparsity, uint64_t seed, unsigned char *mask);
void slQ_prune_random_stream(slM_Mt *rng, size_t n, double sparsity, unsigned char *mask);

#endif
