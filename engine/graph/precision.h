/*
** precision.h - mixed precision (precision.c): each node's output dtype
** under the graph's precision, and the rounding of outputs to it.
*/
#ifndef SYSLAB_PRECISION_H
#define SYSLAB_PRECISION_H

#include "model.h"

enum { SLM_INT64 = 10 }; /* a dtype beside SLM_FP32, SLM_BF16, SLM_FP16 (ids and labels) */

extern const char *const slM_precision_names[]; /* fp32, bf16, fp16: indexed by SLM_FP32.. */
const char *slM_dtype_name(int dtype);
/* a node's number format for tables and metadata: its quantiser's, else its dtype's name */
const char *slM_node_format(const slM_Node *n, int dtype);
void slM_dtypes(const slM_Graph *g, int *dtypes); /* every node, size g->n */
/* what runs node n on the CPU under its graph's precision mode (node metadata) */
void slM_node_kernel(const slM_Graph *g, const slM_Node *n, char *buf, size_t size);
void slM_dtypes_upto(const slM_Graph *g, int last, int *dtypes);
/* the dtype node i's forward stores its output in: its dtype when that is 16-bit, the graph runs on
** the CPU and the operator's kernels write 16 bits (SLM_OP_HALF), except for what the caller reads
** after the pass (the output node's inputs: the logits, the loss); else SLM_FP32 */
int slM_node_store(const slM_Graph *g, int i, const int *dtypes);
/* (slots.h: slM_half_storage, slM_mask_store) */
/* rounds node i's output to its dtype (dtypes: slM_dtypes of the graph) */
void slM_precision_after(slM_Graph *g, int i, const int *dtypes);
/* after a forward pass on the CPU: the first node whose output holds NaN or infinity (-1: none) */
int slM_first_nonfinite(const slM_Graph *g);
/* after a forward pass of an fp16 model on the CPU: the first float16 node whose output overflowed (-1: none) */
int slM_fp16_overflow(const slM_Graph *g);
/* why node i's output is not finite (i < 0: unknown), for messages: float16's range, when it overflowed */
void slM_nonfinite_why(const slM_Graph *g, int i, char *buf, size_t size);
/* 1000 additions of 0.01: float32; float16; float16 values into a float32 sum */
void slM_accumulation(double out[3]);

#endif
