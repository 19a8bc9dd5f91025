/*
** attention.h - the fused attention kernels of attention.cu, for the entry
** points and benchmark cases of kernels.cu. CUDA C++ only; the engine sees
** them through the table of gpu.h.
*/
#ifndef SYSLAB_CUDA_ATTENTION_H
#define SYSLAB_CUDA_ATTENTION_H

#include <stddef.h>

#define SLG_ATTN_DIM 64 /* the head dimension the kernels are built for */

/* O and L = logsumexp of each row for bh heads of n x SLG_ATTN_DIM device
** arrays; version 2, or 1 (kept as the step 2 is measured against); 0, or
** -1 with CUDA's reason in err */
int slG_fused_forward(int version, int bh, int n, int causal, const float *q, const float *k, const float *v, float *o,
                      float *lse, char *err, size_t errlen);
/* dQ, dK, dV (overwritten) from O, dO and L; Dv is scratch of bh x n floats */
int slG_fused_backward(int version, int bh, int n, int causal, const float *q, const float *k, const float *v,
                       const float *o, const float *dout, const float *lse, float *Dv, float *dq, float *dk, float *dv,
                       char *err, size_t errlen);
/* the tensor-core forward of attention_tc.cu: q, k, v are bh heads of n x dim
** bf16 (dim 64 or 128), O and L float32 as above; 0, or -1 with the reason */
int slG_fused_forward_bf16(int bh, int n, int dim, int causal, const void *q, const void *k, const void *v, float *o,
                           float *lse, char *err, size_t errlen);
/* its backward: dQ, dK, dV (float32, overwritten) from bf16 q, k, v, dout, and the float32 O, dO and L of the
** forward (O and dO for rowsum(dO o O), into Dv: bh x n floats of scratch) */
int slG_fused_backward_bf16(int bh, int n, int dim, int causal, const void *q, const void *k, const void *v,
                            const void *dout, const float *o, const float *dout32, const float *lse, float *Dv,
                            float *dq, float *dk, float *dv, char *err, size_t errlen);
/* version 2 of the tensor-core kernels (attention_fa2.cu): scores, P and O in registers (mma.sync), operands by
** ldmatrix and cp.async; dim 64, 80 or 128; arguments as slG_fused_forward_bf16's */
int slG_fa2_forward_bf16(int bh, int n, int dim, int causal, const void *q, const void *k, const void *v, float *o,
                         float *lse, char *err, size_t errlen);
/* its backward, arguments as slG_fused_backward_bf16's */
int slG_fa2_backward_bf16(int bh, int n, int dim, int causal, const void *q, const void *k, const void *v,
                          const void *dout, const float *o, const float *dout32, const float *lse, float *Dv, float *dq,
                          float *dk, float *dv, char *err, size_t errlen);
/* 0 when this GPU can run a tensor-core kernel (compute capability 8.0 or later) with `bytes` of shared memory a
** block; else -1 with why, naming `what` (the kernel) and dim */
int slG_tc_fits(const char *what, int dim, size_t bytes, char *err, size_t errlen);
/* what a tensor-core backward does first, on the default stream: dQ zeroed (the kernels add into it), and
** Dv = rowsum(dO o O) over rows of dim floats */
void slG_attention_backward_start(float *dq, const float *dO, const float *O, float *Dv, long rows, int dim);
/* 0 when the last launch went well, else -1 with `what` and CUDA's message in err */
int slG_attention_launched(const char *what, char *err, size_t errlen);
/* n float32 values as bf16 (round to nearest even), launched on the default stream */
void slG_attention_to_bf16(const float *x, void *out, size_t n);
/* Dv = rowsum(dO o O) over rows of SLG_ATTN_DIM, launched on the default stream */
void slG_attention_rowdot(const float *dO, const float *O, float *Dv, long rows);

#endif
