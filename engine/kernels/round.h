/*
** round.h - rounding float32 to bfloat16 and IEEE binary16 (round.c), the
** one definition every mixed-precision product and experiment uses.
*/
#ifndef SYSLAB_ROUND_H
#define SYSLAB_ROUND_H

#include <stddef.h>
#include <stdint.h>

enum { SLK_FP32, SLK_BF16, SLK_FP16 }; /* number formats of values kept in float32 storage */

float slK_round_bf16(float x);
float slK_round_fp16(float x);
/* the IEEE binary16 bits of x rounded (as slK_round_fp16), and the float32 value of binary16 bits (exact) */
uint16_t slK_fp16_bits(float x);
float slK_fp16_value(uint16_t h);
/* out[i] = in[i] rounded to the format (a copy for SLK_FP32); out may be in */
void slK_round_array(int format, const float *in, float *out, size_t n);

/* 16-bit storage (a tensor of bfloat16 or IEEE half bits, graph/model.h):
** n values of the format's bits as float32 values, exactly; and n float32
** values rounded to the format (as slK_round_bf16, slK_fp16_bits) as its
** bits. Eight lanes at a time with AVX2 (and F16C for half) where the CPU
** has it, the same bits as the scalar references below, which the tests
** hold them to over every 16-bit pattern and rounding case. */
void slK_half_to_f32(int format, const uint16_t *h, float *out, size_t n);
void slK_f32_to_half(int format, const float *x, uint16_t *out, size_t n);
void slK_half_to_f32_reference(int format, const uint16_t *h, float *out, size_t n);
/* out[i] = x[i] rounded to the format, kept float32 (slK_round_array), with the same AVX2 loops */
void slK_round_f32(int format, const float *x, float *out, size_t n);
void slK_f32_to_half_reference(int format, const float *x, uint16_t *out, size_t n);
/* 0 keeps the AVX2 loops off (tests compare both ways); returns the setting before */
int slK_round_vector(int on);

#endif
