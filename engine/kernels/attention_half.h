/*
** attention_half.h - the fused attention with bf16 products (attention_half.c),
** reached through slK_attention_forward and slK_attention_backward
** (kernels.h) when slK_Attn's format is SLK_BF16 and the CPU has avx512_bf16.
*/
#ifndef SYSLAB_ATTENTION_HALF_H
#define SYSLAB_ATTENTION_HALF_H

#include "kernels.h"

int slK_attention_half_forward(const slK_Attn *a, const float *q, const float *k, const float *v, float *o, float *lse);
int slK_attention_half_backward(const slK_Attn *a, const float *q, const float *k, const float *v, const float *o,
                                const float *dout, const float *lse, float *dq, float *dk, float *dv);
/* bytes beyond inputs, outputs and lse that one call needs at its peak */
double slK_attention_half_workspace(const slK_Attn *a, int backward);

#endif
