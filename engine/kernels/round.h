/*
** round.h - rounding float32 to bfloat16 and IEEE binary16 (round.c), the
** one definition every mixed-precision product and experiment uses.
*/
#ifndef SYSLAB_ROUND_H
#define SYSLAB_ROUND_H

#include <stddef.h>
#include <stdint.h>

enum { SLK_FP32, SLK_BF16, SLK_FP16 };   /* number formats of values kept in float32 storage */

float slK_round_bf16(float x);
float slK_round_fp16(float x);
/* the IEEE binary16 bits of x rounded (as slK_round_fp16), and the float32 value of binary16 bits (exact) */
uint16_t slK_fp16_bits(float x);
float slK_fp16_value(uint16_t h);
/* out[i] = in[i] rounded to the format (a copy for SLK_FP32); out may be in */
void slK_round_array(int format, const float *in, float *out, size_t n);

#endif
