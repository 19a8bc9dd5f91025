/*
** quant_block.h - the formats that share something across a block or a row
** (quant_block.c): MX, block_fp, block_minifloat, block_log, binary,
** binary_residual and ternary.
*/
#ifndef SYSLAB_QUANT_BLOCK_H
#define SYSLAB_QUANT_BLOCK_H

#include <stddef.h>
#include <stdint.h>

#include "quant_format.h"

/* the references, one value at a time in binary64, over n values in rows
** of `row` (0: one row) */
void slQ_mx_reference(const slQ_Format *f, const float *in, float *out, size_t n, size_t row);
void slQ_block_reference(const slQ_Format *f, const float *in, float *out, size_t n, size_t row);
void slQ_binary_reference(const slQ_Format *f, const float *in, float *out, size_t n, size_t row);

/* rows r0 to r1: the bit pattern of every block's largest magnitude into
** m (per row, blocks of k) and each row's candidate for the zero-block fix
** into smallest[r] (the least pattern - 1 of its finite non-zero maxima) */
void slQ_block_maxima_rows(const float *in, size_t n, size_t row, size_t k, uint32_t *m, uint32_t *smallest, size_t r0,
                           size_t r1);
/* rows r0 to r1 of binary or ternary, the same bits as the reference */
void slQ_binary_ternary_rows(const slQ_Format *f, const float *in, float *out, size_t n, size_t row, size_t r0,
                             size_t r1);
/* one row of an MX or shared-exponent format, the same bits as the
** reference; zero_as: what an all-zero block's maximum becomes */
void slQ_block_row(const slQ_Format *f, const float *x, float *y, size_t len, const uint32_t *m, uint32_t zero_as);

#endif
