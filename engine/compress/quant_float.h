/*
** quant_float.h - the elementwise formats (quant_float.c): integer,
** minifloat_denorm, minifloat_ieee and log over n values.
*/
#ifndef SYSLAB_QUANT_FLOAT_H
#define SYSLAB_QUANT_FLOAT_H

#include <stddef.h>

#include "quant_format.h"

/* one value, in binary64: the reference, also the element of
** block_minifloat and block_log (f carries the block's bias) */
float slQ_minifloat_ieee_one(const slQ_Format *f, float x);
float slQ_log_one(const slQ_Format *f, float x);
/* n values of an elementwise format, one at a time: the reference */
void slQ_float_reference(const slQ_Format *f, const float *in, float *out, size_t n);
/* the same bits by the optimised and vector loops */
void slQ_float_fast(const slQ_Format *f, const float *in, float *out, size_t n);

#endif
