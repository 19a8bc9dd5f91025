/*
** gpu.h - what the engine asks of the GPU, whether or not one exists.
**
** The CPU build links gpu_none.c, which always answers "no device". A build
** with nvcc links the CUDA sources of cuda/ instead (device.cu, kernels.cu),
** which find a device at run time; with no driver or no device they answer
** the same as gpu_none.c, so one binary runs everywhere and every caller
** keeps a CPU path. Only engine/kernels/ includes this file (and the
** tests). Arrays passed to the kernel calls of the first part (GEMM,
** attention, MXINT8) are host arrays: each call copies in, runs,
** synchronises and copies out, which is what the tests need; the benchmark
** cases keep their operands on the device and time with CUDA events. The
** operator calls of the second part (ops.cu, ops_rows.cu, ops_train.cu)
** take device pointers, run on the default stream and return without
** waiting: the graph's CUDA slots are to call them between its own
** allocations.
*/
#ifndef SYSLAB_GPU_H
#define SYSLAB_GPU_H

#include <stddef.h>
#include <stdint.h>

#include "cublas_args.h"

#ifdef __cplusplus
extern "C" {
#endif

/* number of usable CUDA devices; 0 without a GPU or a CUDA build */
int slG_device_count(void);
/* one line: device name and memory, or why there is none */
const char *slG_describe(void);
/* 1 if this binary was built with CUDA kernels */
int slG_built_with_cuda(void);

/* versions, in the order of the benchmark table of engine/kernels/bench.c */
enum {
  SLG_GEMM_NAIVE, SLG_GEMM_TILED, SLG_GEMM_CUBLAS, SLG_GEMM_CUBLAS_DIRECT,
  SLG_ATTN_NAIVE, SLG_ATTN_FUSED, SLG_ATTN_FUSED_TRAIN, SLG_MXINT8_DEQUANT, SLG_COPY, SLG_ATTN_NAIVE_TRAIN,
  /* the first tiled and fused kernels, kept as the step the current ones improve on */
  SLG_ATTN_FUSED_V1, SLG_ATTN_FUSED_V1_TRAIN, SLG_GEMM_TILED_V1,
  /* the fused forward (and forward and backward) on the tensor cores: bf16 Q, K, V (rounded from float32), dim 64 or
  ** 128 */
  SLG_ATTN_FUSED_BF16, SLG_ATTN_FUSED_BF16_TRAIN,
  /* bf16 products on the tensor cores, n x n times n x n: cuBLAS on operands rounded once beforehand, and the
  ** linear layer as the graph runs it (x and W rounded into bf16 copies in every call, the product, the bias) */
  SLG_GEMM_CUBLAS_BF16, SLG_LINEAR_BF16
};

/* C = A B, row-major, M x K times K x N; 0, or -1 with a message in err */
int slG_sgemm(int impl, int M, int N, int K, const float *A, const float *B, float *C, char *err, size_t errlen);
/* contiguous batch x heads x n x dim; impl SLG_ATTN_NAIVE, SLG_ATTN_FUSED, SLG_ATTN_FUSED_V1 (dim 64) or
** SLG_ATTN_FUSED_BF16 (q, k, v rounded to bf16 on the device; dim 64 or 128) */
int slG_attention_forward(int impl, int batch, int heads, int n, int dim, int causal, const float *q, const float *k,
                          const float *v, float *o, float *lse, char *err, size_t errlen);
/* dq, dk, dv are overwritten; impl SLG_ATTN_FUSED or _V1 (from O and L), SLG_ATTN_FUSED_BF16 (q, k, v and dout
** rounded to bf16) or SLG_ATTN_NAIVE (P recomputed by the naive forward, then the N x N arrays through global
** memory) */
int slG_attention_backward(int impl, int batch, int heads, int n, int dim, int causal, const float *q, const float *k,
                           const float *v, const float *o, const float *dout, const float *lse, float *dq, float *dk,
                           float *dv, char *err, size_t errlen);
int slG_mxint8_dequant_bf16(const int8_t *m, const uint8_t *scales, size_t n, int g, uint16_t *out, char *err,
                            size_t errlen);

/* a benchmark case on the device: operands allocated and filled once */
void *slG_case_new(int kind, int size, int batch, int heads, int dim, int causal, char *err, size_t errlen);
/* runs once; seconds between CUDA events around the kernel, after synchronising;
** NaN if a launch failed, with the reason in slG_case_error() */
double slG_case_run(void *c);
const char *slG_case_error(void);
/* device memory the case holds (operands and the naive version's N x N arrays) */
size_t slG_case_bytes(void *c);
void slG_case_free(void *c);

/* cuBLAS sgemm at n = 4096 and device-to-device copy rate; 0, or -1 */
int slG_machine(double *sgemm_gflops, double *copy_gbs);

/* ====================================================================
** The graph's operators on the device (cuda/ops.cu, ops_rows.cu,
** ops_train.cu). Every pointer is a device pointer; every call returns 0,
** or -1 with a message in err (a refused argument, or CUDA's reason for a
** failed launch; a fault inside a kernel shows at the next slG_sync or
** slG_download). Each computes what the CPU operator of engine/graph/ does,
** in its order where it can (docs/kernels.md "GPU"). A backward call ADDS
** into the gradients it is given, as the CPU's backward adds into its
** gradient slots; a gradient pointer that may be NULL is not computed.
** Sizes of 0 do nothing. ids and labels are floats holding integers, as in
** the graph's tensors.
** ==================================================================== */

/* device memory; slG_free(NULL) does nothing */
int slG_alloc(void **p, size_t bytes, char *err, size_t errlen);
void slG_free(void *p);
int slG_upload(void *dev, const void *host, size_t bytes, char *err, size_t errlen);
int slG_download(void *host, const void *dev, size_t bytes, char *err, size_t errlen);
int slG_zero(void *dev, size_t bytes, char *err, size_t errlen);
/* device to device */
int slG_copy(void *dst, const void *src, size_t bytes, char *err, size_t errlen);
/* the driver's free and total device memory; 0, or -1 without a device */
int slG_mem_info(size_t *free_bytes, size_t *total_bytes);
/* waits for everything launched; reports a fault of any of it */
int slG_sync(char *err, size_t errlen);

/* A row-major product on device pointers (cublas_args.h's request:
** C = alpha op(A) op(B) + beta C over its batch), the operands float32
** (format 0, cuBLAS's default math mode: no TF32) or the 16-bit bits of
** SLG_BF16 / SLG_FP16 (the tensor cores, float32 sums); C is float32. A
** request cuBLAS would refuse is refused here with the rule it breaks. */
int slG_gemm_run(int format, const slG_Gemm *g, float alpha, const void *A, const void *B, float beta, float *C,
                 char *err, size_t errlen);

/* The fused attention node of the graph (ops_graph.cu): q, k, v and out are token rows B x T x H dh, heads
** interleaved; lse is B x H x T. format 0 runs attention.cu's float32 kernels (dh = 64), SLG_BF16 the tensor
** cores' (dh = 64 or 128); anything else is refused with the reason. scratch is device memory of
** slG_attention_graph_scratch bytes. The backward ADDS into dq, dk, dv. */
size_t slG_attention_graph_scratch(int format, int B, int T, int H, int dh, int backward);
int slG_attention_graph_forward(int format, int B, int T, int H, int dh, int causal, const float *q, const float *k,
                                const float *v, float *out, float *lse, void *scratch, char *err, size_t errlen);
int slG_attention_graph_backward(int format, int B, int T, int H, int dh, int causal, const float *q, const float *k,
                                 const float *v, const float *out, const float *gout, const float *lse, float *dq,
                                 float *dk, float *dv, void *scratch, char *err, size_t errlen);

/* 16-bit operand formats (the engine's SLK_BF16 and SLK_FP16) */
enum { SLG_BF16 = 1, SLG_FP16 = 2 };
/* slG_gemm_run with the request's fields as arguments */
int slG_gemm_batched(int format, int trans_a, int trans_b, int M, int N, int K, float alpha, const void *A, int lda,
                     long long stride_a, const void *B, int ldb, long long stride_b, float beta, float *C, int ldc,
                     long long stride_c, int batch, char *err, size_t errlen);
/* float32 values as 16-bit bits of the format, rounded as kernels/round.c rounds; and the
** values rounded in place of float32 (y may be x) */
int slG_to_half(int format, const float *x, uint16_t *y, size_t n, char *err, size_t errlen);
int slG_round_half(int format, const float *x, float *y, size_t n, char *err, size_t errlen);

/* linear: y = x W^T + b over rows of in_f; W is out_f x in_f; b may be NULL.
** Backward: dx += dy W, dW += dy^T x, db += column sums of dy32 (row
** order). x, w and dy are float32 (format 0) or their 16-bit copies
** (SLG_BF16, SLG_FP16: the products on the tensor cores); b, dy32 and the
** results are float32 */
int slG_linear_forward(int format, const void *x, const void *w, const float *b, float *y, size_t rows, int in_f,
                       int out_f, char *err, size_t errlen);
int slG_linear_backward(int format, const void *x, const void *w, const void *dy, const float *dy32, float *dx,
                        float *dw, float *db, size_t rows, int in_f, int out_f, char *err, size_t errlen);

/* elementwise activations: ReLU, GELU (the CPU's erf form), SiLU (x sigmoid(x)) */
enum { SLG_RELU, SLG_GELU, SLG_SILU };
int slG_activation_forward(int act, const float *x, float *y, size_t n, char *err, size_t errlen);
/* dx += dy * act'(x) */
int slG_activation_backward(int act, const float *x, const float *dy, float *dx, size_t n, char *err,
                            size_t errlen);
/* tanh y = tanh(x), backward dx += dy (1 - y^2) from the output y (ops_graph.cu);
** the scale y = a x, backward dx += a dy */
int slG_tanh_forward(const float *x, float *y, size_t n, char *err, size_t errlen);
int slG_tanh_backward(const float *y, const float *dy, float *dx, size_t n, char *err, size_t errlen);
int slG_scale_forward(const float *x, float *y, size_t n, float a, char *err, size_t errlen);
int slG_scale_backward(const float *dy, float *dx, size_t n, float a, char *err, size_t errlen);
/* SwiGLU y = silu(a) b; da += dy b silu'(a), db += dy silu(a) */
int slG_swiglu_forward(const float *a, const float *b, float *y, size_t n, char *err, size_t errlen);
int slG_swiglu_backward(const float *a, const float *b, const float *dy, float *da, float *db, size_t n, char *err,
                        size_t errlen);

/* residual add y = a + b: b has n items, or bn items (bn divides n) added
** to every row of bn (a parameter row). Backward: da += dy; db += dy, or
** the column sums of dy for a row */
int slG_add_forward(const float *a, const float *b, float *y, size_t n, size_t bn, char *err, size_t errlen);
int slG_add_backward(const float *dy, float *da, float *db, size_t n, size_t bn, char *err, size_t errlen);

/* dropout (numerics §9): base is the forward's one draw from the graph's
** stream; mask[i] = 0 or 1/(1 - p), y = x mask; p = 0 copies x and leaves
** mask alone. Backward: dx += dy mask, or dx += dy for a NULL mask */
int slG_dropout_forward(const float *x, float *y, float *mask, size_t n, float p, uint64_t base, char *err,
                        size_t errlen);
int slG_dropout_backward(const float *dy, const float *mask, float *dx, size_t n, char *err, size_t errlen);

/* y = x rounded to bfloat16, kept in float32 (numerics §8); y may be x */
int slG_round_bf16(const float *x, float *y, size_t n, char *err, size_t errlen);

/* embedding: y[i] = table[ids[i]] (rows of width); an id outside
** [0, vocab) gives a row of zeros. Backward: dtable[ids[i]] += dy[i], in
** the order of i (no atomics), ids outside [0, vocab) skipped */
int slG_embedding_forward(const float *ids, const float *table, float *y, size_t n, int vocab, int width, char *err,
                          size_t errlen);
int slG_embedding_backward(const float *ids, const float *dy, float *dtable, size_t n, int vocab, int width,
                           char *err, size_t errlen);

/* RoPE over B x T x D, heads of dh = D / heads (even): the table (T x dh:
** cos in the first dh/2 of a row, sin in the second) of angles
** t theta^(-2i/dh), made in binary64 as the CPU makes it; forward turns
** features (2i, 2i+1) of each head by the angle; backward dx += the
** inverse turn of dy */
int slG_rope_table(float *table, int T, int dh, float theta, char *err, size_t errlen);
int slG_rope_forward(const float *x, float *y, const float *table, size_t B, int T, int D, int heads, char *err,
                     size_t errlen);
int slG_rope_backward(const float *dy, float *dx, const float *table, size_t B, int T, int D, int heads, char *err,
                      size_t errlen);

/* layer norm over rows of d: y = (x - mean) rstd gamma + beta, mean and
** rstd = 1 / sqrt(var + eps) per row kept for the backward (the moments in
** binary64). Backward: dx, and dgamma, dbeta (either may be NULL) summed
** over rows in row order */
int slG_layernorm_forward(const float *x, const float *gamma, const float *beta, float *y, float *mean, float *rstd,
                          size_t rows, int d, float eps, char *err, size_t errlen);
int slG_layernorm_backward(const float *x, const float *gamma, const float *dy, const float *mean, const float *rstd,
                           float *dx, float *dgamma, float *dbeta, size_t rows, int d, char *err, size_t errlen);
/* RMSNorm: y = x rstd gain, rstd = 1 / sqrt(mean(x^2) + eps) per row kept */
int slG_rmsnorm_forward(const float *x, const float *gain, float *y, float *rstd, size_t rows, int d, float eps,
                        char *err, size_t errlen);
int slG_rmsnorm_backward(const float *x, const float *gain, const float *dy, const float *rstd, float *dx,
                         float *dgain, size_t rows, int d, char *err, size_t errlen);

/* softmax of rows of n; causal: the rows are T x T matrices stacked (n = T)
** and row r keeps its first r % n + 1 entries, the rest 0 (the fused
** masked_softmax). Backward from y: dx += y (dy - <dy, y>) over the kept entries */
int slG_softmax_forward(const float *x, float *y, size_t rows, int n, int causal, char *err, size_t errlen);
int slG_softmax_backward(const float *y, const float *dy, float *dx, size_t rows, int n, int causal, char *err,
                         size_t errlen);

/* the mean cross-entropy of rows of C logits against labels: probs =
** softmax (kept for the backward), loss[0] = mean of -log(p[label] + eps).
** SLG_LOSS_CLASSES is the image models' cross_entropy (eps 1e-12; dx +=
** dloss (p - onehot) / rows), SLG_LOSS_TOKENS the language model's (eps
** 1e-30; s = dloss / rows, dx += s p, then s off the target). dloss is the
** loss's gradient, one float on the device. A label outside [0, C) makes
** the loss NaN and has no one-hot term */
enum { SLG_LOSS_CLASSES, SLG_LOSS_TOKENS };
int slG_cross_entropy_forward(int kind, const float *logits, const float *labels, float *probs, float *loss,
                              size_t rows, int C, char *err, size_t errlen);
int slG_cross_entropy_backward(int kind, const float *probs, const float *labels, const float *dloss, float *dx,
                               size_t rows, int C, char *err, size_t errlen);

/* The optimisers of engine/graph/train.c as one launch over every
** parameter. A parameter is its value w, gradient g and state m (and v for
** AdamW), n floats, with its own weight decay (train.c: the weights' only) */
typedef struct slG_ParamRef {
  float *w, *g, *m, *v;
  size_t n;
  float weight_decay;
} slG_ParamRef;
typedef struct slG_Optimizer {
  int adamw;               /* 0: SGD with momentum; 1: AdamW */
  double lr, momentum;     /* as train.c takes them: rounded to float32 */
  double beta1, beta2;     /* AdamW; the bias corrections 1 / (1 - beta^(step + 1)) in binary64 */
  float eps;
  long step;               /* from 0 */
} slG_Optimizer;
/* the parameters' records copied to the device once (refs is a host array of
** device pointers); NULL with err on failure */
void *slG_params_new(const slG_ParamRef *refs, int count, char *err, size_t errlen);
void slG_params_free(void *params);
int slG_optimizer_step(void *params, const slG_Optimizer *o, char *err, size_t errlen);

#ifdef __cplusplus
}
#endif

#endif
