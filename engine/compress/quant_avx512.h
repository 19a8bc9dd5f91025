/*
** quant_avx512.h - the AVX-512 loops of the number formats
** (quant_avx512.c), each the sixteen-lane form of a quant_simd.c loop and
** called by it only where the CPU has AVX-512F, DQ and VL; each returns
** how many values it did, as quant_simd.h's do.
*/
#ifndef SYSLAB_QUANT_AVX512_H
#define SYSLAB_QUANT_AVX512_H

#include <stddef.h>
#include <stdint.h>

/* binary64 in eight lanes: slQ_simd_minifloat and slQ_simd_log */
size_t slQ_avx512_minifloat(const float *in, float *out, size_t n, int M, int B, int emax, int ieee, double inf_q);
size_t slQ_avx512_log(const float *in, float *out, size_t n, double tau, int emin, int emax);
/* float32 in sixteen lanes: slQ_simd_minifloat_f32 and slQ_simd_log_f32 (table: the
** 32 log thresholds of quant_simd.c's log_table) */
size_t slQ_avx512_minifloat_f32(const float *in, float *out, size_t n, int M, int B, int emax, int ieee, float inf_q);
size_t slQ_avx512_log_f32(const float *in, float *out, size_t n, int B, int emax, const uint32_t *table);
/* rows in blocks of k: slQ_simd_block_fp_row, slQ_simd_block_log_row (float32 form) and slQ_simd_mx_row */
size_t slQ_avx512_block_fp_row(const float *in, float *out, size_t len, size_t k, const uint32_t *m, uint32_t zero_as,
                               int M, int B, int emax);
size_t slQ_avx512_block_log_f32_row(const float *in, float *out, size_t len, size_t k, const uint32_t *m,
                                    uint32_t zero_as, int Eb, int bias_width, const uint32_t *table);
size_t slQ_avx512_mx_row(const float *in, float *out, size_t len, size_t k, int is_int, int emax, int mbits, int bias,
                         float max_normal);

#endif
