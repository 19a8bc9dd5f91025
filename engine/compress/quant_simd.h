/*
** quant_simd.h - AVX2 (and AVX-512) inner loops of the number formats
** (quant_simd.c, quant_avx512.c). Each takes a run of values that share
** their block parameters, does as many as it can eight (or four) at a time
** and returns how many it did; quant_float.c and quant_block.c finish the
** rest with the scalar code. On a machine without AVX2 each returns 0.
*/
#ifndef SYSLAB_QUANT_SIMD_H
#define SYSLAB_QUANT_SIMD_H

#include <stddef.h>
#include <stdint.h>

int slQ_simd_available(void);
/* for tests: use at most level max (0 scalar, 2 AVX2, 3 AVX-512 where the
** CPU has it) from now on; returns the level then in use */
int slQ_simd_cap(int max);

/* log elements with bias -emin, in binary64 as the reference: 2^clamp(nlog2(|x| + tau)) with
** the sign of x + tau, 0 where x + tau is 0 */
size_t slQ_simd_log(const float *in, float *out, size_t n, double tau, int emin, int emax);
/* minifloat_ieee (ieee) or minifloat_denorm elements with M mantissa bits, bias B and
** largest exponent emax, as quant_float.c's minifloat_fast; inf_q: what infinity becomes */
size_t slQ_simd_minifloat(const float *in, float *out, size_t n, int M, int B, int emax, int ieee, double inf_q);
/* MX floating-point elements of one finite block: p = |x| * unscale, e = max(flog2 p, 1 - bias),
** min(rint(p 2^(mbits - e)) 2^(e - mbits), max_normal) * scale with x's sign */
size_t slQ_simd_mxfp(const float *in, float *out, size_t n, float unscale, float scale, int mbits, int bias,
                     float max_normal);
/* MXINT8 elements of one finite block: clamp(rint(x * up), -127, 127) * down, +0 for a zero mantissa */
size_t slQ_simd_mxint8(const float *in, float *out, size_t n, float up, float down);

/* binary and ternary rows: the sums of |x| in binary64 of eight rows of len values (row r at x + r * stride),
** each row's in index order as the reference adds them; with delta (eight thresholds), only the |x| > delta[r],
** and counts[r] of them. Returns 0 (nothing done) without AVX2. */
int slQ_simd_abs_sums8(const float *x, size_t stride, size_t len, const double *delta, double *sums, size_t *counts);
/* ternary elements: alpha * ((x > t) - (x < -t)) */
size_t slQ_simd_ternary(const float *x, float *y, size_t n, float t, float alpha);
/* binary elements: bipolar x >= 0 ? 1 : -1, else x > 0 ? a : 0 */
size_t slQ_simd_binary(const float *x, float *y, size_t n, float a, int bipolar);

/* the largest of the bit patterns of |x| (sign cleared) over the first values, eight at a time, in *top */
size_t slQ_simd_abs_bits_max(const float *x, size_t n, uint32_t *top);

/* block_fp and block_log over a row of len values in blocks of k (the last may be short), m[b] the bit
** pattern of block b's largest magnitude (above 0x7F800000: the block holds a NaN; 0: use zero_as).
** Each stops before a block it cannot do (block_fp scales that are not normal floats) and returns how
** many values it did. */
size_t slQ_simd_block_fp_row(const float *in, float *out, size_t len, size_t k, const uint32_t *m, uint32_t zero_as,
                             int M, int B, int emax);
size_t slQ_simd_block_log_row(const float *in, float *out, size_t len, size_t k, const uint32_t *m, uint32_t zero_as,
                              int Eb, int bias_width);

/* integer elements as quant_float.c's integer_fast: clamp(rint(x * scale), qmin, qmax) * inv in float32 */
size_t slQ_simd_integer(const float *in, float *out, size_t n, float scale, float inv, float qmin, float qmax);

/* the block maxima of one row for block_fp and block_log: m[b] the bit pattern of the largest |x| of
** block b of k (the sign bit cleared before the maximum, so a NaN shows above 0x7F800000); in *smallest
** the least pattern - 1 among the finite non-zero maxima (UINT32_MAX if none). 0 without AVX2. */
int slQ_simd_block_maxima(const float *x, size_t len, size_t k, uint32_t *m, uint32_t *smallest);

/* the MX formats over a row of len values in blocks of k (the last may be short): MXINT8 (is_int) or
** an MXFP element type (its emax, mantissa bits, bias and largest normal). Stops before a block whose
** largest magnitude is subnormal (or whose scales are not normal floats) and returns how many values
** it did. */
size_t slQ_simd_mx_row(const float *in, float *out, size_t len, size_t k, int is_int, int emax, int mbits, int bias,
                       float max_normal);

/* binary and ternary rows whose sums are exact: 1 and the sum of |x| in *sum where adding the row's values
** in binary64 in any order gives the same bits as in the reference's order (no rounding at any step: see
** quant_simd.c), 0 otherwise (and without AVX2). For such a row only, slQ_simd_kept_sum adds the |x| > delta
** and counts them, in any order too. */
int slQ_simd_abs_sum_exact(const float *x, size_t len, double *sum);
void slQ_simd_kept_sum(const float *x, size_t len, double delta, double *kept, size_t *count);

/* the same in float32, eight lanes, for the formats quant_float.c's minifloat_float_fits allows (where every
** step is exact, so the bits are the reference's); inf_q already rounded to float */
size_t slQ_simd_minifloat_f32(const float *in, float *out, size_t n, int M, int B, int emax, int ieee, float inf_q);

/* log elements with bias B (emin = -B) in float32, eight lanes; only where -B >= -120 and emax <= 127 */
size_t slQ_simd_log_f32(const float *in, float *out, size_t n, int B, int emax);

#endif
