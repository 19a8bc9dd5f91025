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
#include "quant_format.h"
#include "slutil.h"

/* 0 for formats whose training gradient is not defined (QAT is refused) */
int slQ_has_gradient(slQ_Kind k);

const char *slQ_kind_name(slQ_Kind k);
int slQ_kind_from_name(const char *name); /* -1 if unknown */
/* 0, or -1 with err naming the parameter and the allowed range */
int slQ_check(const slQ_Format *f, char *err, size_t errlen);
/* quantise-dequantise n values; blocks run along rows of `row` elements
** (the last dimension). in and out may be the same array. */
void slQ_apply(const slQ_Format *f, const float *in, float *out, size_t n, size_t row);
/* the same, one value at a time in binary64: the reference slQ_apply's
** optimised loops are tested against */
void slQ_apply_reference(const slQ_Format *f, const float *in, float *out, size_t n, size_t row);
/* whole bytes that n values stored through transform t take (t NULL: float32),
** with each row's shared scales counted once per started block */
double slQ_transform_bytes(const slM_Transform *t, size_t n);
/* "integer(width=8, frac=4)" */
void slQ_describe(const slQ_Format *f, char *out, size_t size);
/* a compression transform (transform.h) applying f; rows of `row` */
slM_Transform *slQ_transform(const slQ_Format *f, size_t row);
/* a quantiser from the bytes after its 'Q' (a checkpoint); NULL with err */
slM_Transform *slQ_transform_decode(slU_Reader *r, char *err, size_t errlen);

/* MXINT8 packed form: int8 mantissas and one scale byte per block of g */
int slQ_mxint8_pack(const float *x, size_t n, int g, int8_t *mantissas, uint8_t *scales, char *err, size_t errlen);
void slQ_mxint8_unpack(const int8_t *mantissas, const uint8_t *scales, size_t n, int g, float *out);
/* the bfloat16 decode of one element as the ADLS Lab 4 MXINT8 kernel computes it (numerics §5.4) */
uint16_t slQ_mxint8_to_bf16(int8_t m, uint8_t e);

/* Pruning (exact-k): mask[i] = 0 for the k = RNE(s * n) pruned elements.
** l1: the smallest magnitudes, ties to the lower index; random: a uniform
** k-subset, the first k of numpy RandomState(seed).permutation(n) (MT19937,
** seeds 0 to 2^32 - 1), or of a permutation drawn from a running stream.
** l1 sorts, and stops at an interrupt with nothing pruned: a caller that
** may be interrupted checks sl_interrupted() after. */
void slQ_prune_l1(const float *x, size_t n, double sparsity, unsigned char *mask);
void slQ_prune_random(size_t n, double sparsity, uint64_t seed, unsigned char *mask);
void slQ_prune_random_stream(slM_Mt *rng, size_t n, double sparsity, unsigned char *mask);

#endif
