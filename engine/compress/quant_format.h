/*
** quant_format.h - what a number format is: its kind and its settings.
**
** The one type every file of the folder shares. quant.h (the folder's
** interface) includes it; the files of the format families (quant_float.c,
** quant_block.c) include it alone, so that they sit below quant.c, which
** dispatches to them.
*/
#ifndef SYSLAB_QUANT_FORMAT_H
#define SYSLAB_QUANT_FORMAT_H

typedef enum {
  SLQ_INTEGER,          /* fixed point: width, frac_width, signed */
  SLQ_MINIFLOAT_DENORM, /* width, exponent_width, exponent_bias; no implicit bit */
  SLQ_MINIFLOAT_IEEE,   /* width, exponent_width, exponent_bias; IEEE-style subnormals, no specials */
  SLQ_LOG,              /* width (sign + exponent), exponent_bias */
  SLQ_MXINT8,           /* OCP MX: blocks of `block` sharing an E8M0 scale, INT8 elements */
  SLQ_MXFP8_E4M3,
  SLQ_MXFP8_E5M2,
  SLQ_MXFP6_E3M2,
  SLQ_MXFP6_E2M3,
  SLQ_MXFP4_E2M1,
  SLQ_BLOCK_FP,        /* width (sign + mantissa), exponent_width, bias; shared exponent per block */
  SLQ_BLOCK_MINIFLOAT, /* width, exponent_width, bias_width: minifloat_ieee with a per-block bias */
  SLQ_BLOCK_LOG,       /* width, bias_width: log with a per-block bias */
  SLQ_BINARY,          /* sign: +1/-1 (bipolar) or mean|x| per row for x > 0 */
  SLQ_BINARY_RESIDUAL, /* sum of `levels` binarised residuals */
  SLQ_TERNARY,         /* -1/0/+1 around 0.75 mean|x| per row, optionally scaled */
  SLQ_NUM_FORMATS
} slQ_Kind;

typedef struct slQ_Format {
  slQ_Kind kind;
  int width, frac_width, exponent_width;
  int exponent_bias; /* meaningful when has_bias */
  int has_bias;
  int is_signed;
  int block;      /* block size along the last dimension (MX: 32; block formats: 16) */
  int bias_width; /* block_minifloat, block_log: bits of the shared bias */
  int levels;     /* binary_residual: 1 to 3 */
  int bipolar;    /* binary: +1/-1 rather than scaled 0/1 */
  int scaled;     /* ternary: scale by the mean of the kept magnitudes */
} slQ_Format;

/* the OCP Microscaling formats: MXINT8 and the MXFP element types */
static inline int slQ_is_mx(slQ_Kind k) { return k >= SLQ_MXINT8 && k <= SLQ_MXFP4_E2M1; }

#endif
