/*
** precision.h - mixed precision (precision.c): rounding to bfloat16 and
** float16, the products of a graph, and each node's output dtype.
*/
#ifndef SYSLAB_PRECISION_H
#define SYSLAB_PRECISION_H

#include "model.h"

enum { SLM_INT64 = 10 };   /* a dtype beside SLM_FP32, SLM_BF16, SLM_FP16 (ids and labels) */

extern const char *const slM_precision_names[];   /* fp32, bf16, fp16: indexed by SLM_FP32.. */
const char *slM_dtype_name(int dtype);
float slM_round_bf16(float x);
float slM_round_fp16(float x);
void slM_round_array(int precision, const float *in, float *out, size_t n);
/* output dtype of node i under the graph's precision, given its inputs' */
int slM_node_dtype(const slM_Graph *g, int i, const int *dtypes);
void slM_dtypes(const slM_Graph *g, int *dtypes);         /* every node, size g->n */
void slM_dtypes_upto(const slM_Graph *g, int last, int *dtypes);
void slM_precision_after(slM_Graph *g, int i);
size_t slM_precision_scratch_bytes(void);
void slM_precision_release(void);
/* 1000 additions of 0.01: float32; float16; float16 values into a float32 sum */
void slM_accumulation(double out[3]);

#endif
