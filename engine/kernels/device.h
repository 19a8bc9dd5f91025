/*
** device.h - the GPU as the layers above see it (device.c): whether one is
** here and why not, a caching allocator of device memory with the bytes
** counted by category, copies between host and device, and the graph's
** operators on device arrays.
**
** Every pointer named dev (or a float * argument of the operator calls) is
** device memory from slK_dev_alloc. Calls return 0, or -1 with the reason
** in err: the reason cuda/ gives for a failed launch, or the figures of a
** request that does not fit. The operator calls compute what the CPU's
** operators compute (cuda/gpu.h says each one's contract: a backward ADDS
** into the gradients it is given). Without a GPU every call fails with the
** reason slK_dev_why() gives, so a caller needs no second test.
*/
#ifndef SYSLAB_DEVICE_H
#define SYSLAB_DEVICE_H

#include <stddef.h>
#include <stdint.h>

/* 1 when a CUDA device can be used; else 0 */
int slK_dev_available(void);
/* one line: the device, or why there is none ("no GPU: ...") */
const char *slK_dev_why(void);

/* ---------------------------------------------------------------- memory */

/* the categories a caller counts its bytes under (the graph's: parameter,
** gradient, optimiser state, activation, temporary) */
#define SLK_DEV_CATEGORIES 8

/* bytes of device memory for a category; NULL with err when it cannot be
** had even after the cache is returned to the driver */
void *slK_dev_alloc(size_t bytes, int category, char *err, size_t errlen);
/* back to the cache, under the size and category it was allocated with */
void slK_dev_free(void *dev, size_t bytes, int category);
/* bytes allocated under one category counted under another from now on */
void slK_dev_recount(size_t bytes, int from, int to);
/* the cached blocks returned to the driver */
void slK_dev_trim(void);

typedef struct slK_DevMemory {
  size_t live[SLK_DEV_CATEGORIES];      /* handed out now, by category */
  size_t at_peak[SLK_DEV_CATEGORIES];   /* by category when the total was highest */
  size_t peak;                          /* the highest total since the last reset */
  size_t cached;                        /* held for reuse, not handed out */
  size_t free_bytes, total_bytes;       /* the driver's figures (0 without a GPU) */
} slK_DevMemory;
void slK_dev_memory(slK_DevMemory *m);
void slK_dev_reset_peak(void);
/* 0 when bytes more can be allocated now (the driver's free memory and
** this allocator's cache); else -1 with both figures in err */
int slK_dev_fits(size_t bytes, char *err, size_t errlen);

int slK_dev_upload(void *dev, const void *host, size_t bytes, char *err, size_t errlen);
int slK_dev_download(void *host, const void *dev, size_t bytes, char *err, size_t errlen);
int slK_dev_copy(void *dst, const void *src, size_t bytes, char *err, size_t errlen);
int slK_dev_zero(void *dev, size_t bytes, char *err, size_t errlen);
int slK_dev_sync(char *err, size_t errlen);

/* ------------------------------------------------------------- operators */

/* Forward calls write their outputs; backward calls ADD into the gradients
** they are given (NULL: not computed). The norm is layer norm over rows
** of d when a shift is given (the mean kept per row), else RMSNorm (mean
** NULL); 1 / std or 1 / rms is kept per row in both. */
enum { SLK_DEV_RELU, SLK_DEV_GELU, SLK_DEV_SILU };
enum { SLK_DEV_LOSS_CLASSES, SLK_DEV_LOSS_TOKENS };

/* RoPE's table of cos and sin (T x dh), made once per context length */
int slK_dev_rope_table(float *table, int T, int dh, float theta, char *err, size_t errlen);

/* the forwards: products, elementwise, rows */
/* y = x W^T + b, from float32 x and W (format SLK_FP32) or their 16-bit bits (SLK_BF16, SLK_FP16: the tensor
** cores, float32 sums); b and y float32 */
int slK_dev_linear_forward(int format, const void *x, const void *w, const float *b, float *y, size_t rows, int in_f,
                           int out_f, char *err, size_t errlen);
/* the graph's products on the device: row-major C = alpha op(A) op(B) +
** beta C (op(X) = X^T when trans_x != 0) over `batch` products at fixed
** strides (in elements; a stride 0 repeats the operand; batch 1 is one
** product), with the operands float32 (format SLK_FP32)
** or the 16-bit bits of SLK_BF16 / SLK_FP16 (round.h), which run on the
** tensor cores with float32 sums into a float32 C */
int slK_dev_gemm_batched(int format, int trans_a, int trans_b, int M, int N, int K, float alpha, const void *A, int lda,
                         long long stride_a, const void *B, int ldb, long long stride_b, float beta, float *C, int ldc,
                         long long stride_c, int batch, char *err, size_t errlen);
/* x as the 16-bit bits of the format, rounded as round.c rounds */
int slK_dev_to_half(int format, const float *x, uint16_t *y, size_t n, char *err, size_t errlen);
/* y = x rounded to the format, kept in float32 (y may be x) */
int slK_dev_round(int format, const float *x, float *y, size_t n, char *err, size_t errlen);
int slK_dev_activation_forward(int act, const float *x, float *y, size_t n, char *err, size_t errlen);
int slK_dev_tanh_forward(const float *x, float *y, size_t n, char *err, size_t errlen);
int slK_dev_scale_forward(const float *x, float *y, size_t n, float a, char *err, size_t errlen);
int slK_dev_swiglu_forward(const float *a, const float *b, float *y, size_t n, char *err, size_t errlen);
int slK_dev_add_forward(const float *a, const float *b, float *y, size_t n, size_t bn, char *err, size_t errlen);
int slK_dev_dropout_forward(const float *x, float *y, float *mask, size_t n, float p, uint64_t base, char *err,
                            size_t errlen);
int slK_dev_embedding_forward(const float *ids, const float *table, float *y, size_t n, int vocab, int width,
                              char *err, size_t errlen);
int slK_dev_rope_forward(const float *x, float *y, const float *table, size_t B, int T, int D, int heads, char *err,
                         size_t errlen);
int slK_dev_norm_forward(const float *x, const float *gain, const float *shift, float *y, float *mean, float *rstd,
                         size_t rows, int d, float eps, char *err, size_t errlen);
int slK_dev_softmax_forward(const float *x, float *y, size_t rows, int n, int causal, char *err, size_t errlen);
int slK_dev_cross_entropy_forward(int kind, const float *logits, const float *labels, float *probs, float *loss,
                                  size_t rows, int C, char *err, size_t errlen);

/* fused attention of token rows B x T x H dh (heads interleaved), causal or not, in float32 (dh = 64) or with bf16
** products on the tensor cores (format SLK_BF16, dh = 64 or 128); lse B x H x T. The backward ADDS into dq, dk, dv.
** Their scratch is device memory counted under `category` while the call runs. */
int slK_dev_attention_forward(int format, int B, int T, int H, int dh, int causal, const float *q, const float *k,
                              const float *v, float *out, float *lse, int category, char *err, size_t errlen);
int slK_dev_attention_backward(int format, int B, int T, int H, int dh, int causal, const float *q, const float *k,
                               const float *v, const float *out, const float *gout, const float *lse, float *dq,
                               float *dk, float *dv, int category, char *err, size_t errlen);

/* the backwards, in the same order */
/* dx += dy W, dW += dy^T x from x, W and dy in the format; db += the column sums of the float32 dy32 */
int slK_dev_linear_backward(int format, const void *x, const void *w, const void *dy, const float *dy32, float *dx,
                            float *dw, float *db, size_t rows, int in_f, int out_f, char *err, size_t errlen);
int slK_dev_activation_backward(int act, const float *x, const float *dy, float *dx, size_t n, char *err,
                                size_t errlen);
int slK_dev_tanh_backward(const float *y, const float *dy, float *dx, size_t n, char *err, size_t errlen);
int slK_dev_scale_backward(const float *dy, float *dx, size_t n, float a, char *err, size_t errlen);
int slK_dev_swiglu_backward(const float *a, const float *b, const float *dy, float *da, float *db, size_t n,
                            char *err, size_t errlen);
int slK_dev_add_backward(const float *dy, float *da, float *db, size_t n, size_t bn, char *err, size_t errlen);
int slK_dev_dropout_backward(const float *dy, const float *mask, float *dx, size_t n, char *err, size_t errlen);
int slK_dev_embedding_backward(const float *ids, const float *dy, float *dtable, size_t n, int vocab, int width,
                               char *err, size_t errlen);
int slK_dev_rope_backward(const float *dy, float *dx, const float *table, size_t B, int T, int D, int heads,
                          char *err, size_t errlen);
int slK_dev_norm_backward(const float *x, const float *gain, const float *dy, const float *mean, const float *rstd,
                          float *dx, float *dgain, float *dshift, size_t rows, int d, char *err, size_t errlen);
int slK_dev_softmax_backward(const float *y, const float *dy, float *dx, size_t rows, int n, int causal, char *err,
                             size_t errlen);
int slK_dev_cross_entropy_backward(int kind, const float *probs, const float *labels, const float *dloss, float *dx,
                                   size_t rows, int C, char *err, size_t errlen);

/* the optimisers over every parameter in one launch (cuda/gpu.h's slG_Optimizer) */
typedef struct slK_DevParam {
  float *w, *g, *m, *v;   /* v: AdamW only */
  size_t n;
  float weight_decay;
} slK_DevParam;
typedef struct slK_DevOptimizer {
  int adamw;
  double lr, momentum, beta1, beta2;
  float eps;
  long step;
} slK_DevOptimizer;
int slK_dev_optimizer_step(const slK_DevParam *params, int count, const slK_DevOptimizer *o, char *err,
                           size_t errlen);

#endif
