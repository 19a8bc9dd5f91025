/*
** gpu.h - the GPU backend: one table of entry points that cuda/ fills and
** builds as a module (syslab_cuda.so), which engine/kernels/device.c loads
** with dlopen the first time a GPU is asked for.
**
** Why a module loaded at run time: the program must start as fast as it
** does and run on machines without NVIDIA's driver or toolkit, so neither
** `syslab` nor the engine links the CUDA runtime; only this module does
** (statically, so it needs no toolkit where it runs), and it is loaded
** when something asks for a GPU: a model moved there, a GPU benchmark
** case, the machine's GPU rows. A build without nvcc has no module; the
** program then says so wherever a GPU is asked for, as it says "no CUDA
** device" where the module loads and finds none. Only engine/kernels/
** includes this file (and the tests); the layers above reach the table
** through kernels/device.h.
**
** The table's first part takes host arrays (GEMM, attention, MXINT8): each
** call copies in, runs, synchronises and copies out, which is what the
** tests need; the benchmark cases keep their operands on the device and
** time with CUDA events. The operator calls of the second part (ops.cu,
** ops_rows.cu, ops_train.cu, ops_graph.cu) take device pointers, run on
** the default stream and return without waiting: the graph's CUDA slots
** call them between their own allocations.
*/
#ifndef SYSLAB_GPU_H
#define SYSLAB_GPU_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define SLG_BACKEND_VERSION 3

/* The sums shared by every row (a bias's gradient, a norm's gain and shift
** gradients) add their rows in chunks of SLG_SUM_ROWS: each chunk's partial
** from zero in row order, then the partials in chunk order onto what the
** gradient held. engine/kernels/reduce.c and cuda/ops.cu, ops_rows.cu keep
** this one order, so both devices give the same bits while the GPU sums the
** chunks of a column in parallel (docs/numerics.md §11). */
#define SLG_SUM_ROWS 64

/* the kernel versions the host-array calls and the benchmark cases take (engine/kernels/bench.c names each
** of its GPU cases' version here) */
enum {
  SLG_GEMM_NAIVE,
  SLG_GEMM_TILED,
  SLG_GEMM_CUBLAS,
  SLG_GEMM_CUBLAS_DIRECT,
  SLG_ATTN_NAIVE,
  SLG_ATTN_FUSED,
  SLG_ATTN_FUSED_TRAIN,
  SLG_MXINT8_DEQUANT,
  SLG_COPY,
  SLG_ATTN_NAIVE_TRAIN,
  /* the first tiled and fused kernels, kept as the step the current ones improve on */
  SLG_ATTN_FUSED_V1,
  SLG_ATTN_FUSED_V1_TRAIN,
  SLG_GEMM_TILED_V1,
  /* the fused forward (and forward and backward) on the tensor cores: bf16 Q, K, V (rounded from float32), dim 64 or
  ** 128 */
  SLG_ATTN_FUSED_BF16,
  SLG_ATTN_FUSED_BF16_TRAIN,
  /* bf16 products on the tensor cores, n x n times n x n: cuBLAS on operands rounded once beforehand, and the
  ** linear layer as the graph runs it (x and W rounded into bf16 copies in every call, the product, the bias) */
  SLG_GEMM_CUBLAS_BF16,
  SLG_LINEAR_BF16,
  /* version 2 of the tensor-core forward (and forward and backward): scores, P and O in registers (mma.sync), dim
  ** 64, 80 or 128 */
  SLG_ATTN_FA2_BF16,
  SLG_ATTN_FA2_BF16_TRAIN
};

/* 16-bit operand formats (the engine's SLK_BF16 and SLK_FP16) */
enum { SLG_BF16 = 1, SLG_FP16 = 2 };
/* elementwise activations: ReLU, GELU (the CPU's erf form), SiLU (x sigmoid(x)) */
enum { SLG_RELU, SLG_GELU, SLG_SILU };
/* the mean cross-entropy of rows of C logits against labels: SLG_LOSS_CLASSES is the image models'
** cross_entropy, SLG_LOSS_TOKENS the language model's (cross_entropy_forward below) */
enum { SLG_LOSS_CLASSES, SLG_LOSS_TOKENS };

/* The optimisers of engine/graph/train.c as one launch over every
** parameter. A parameter is its value w, gradient g and state m (and v for
** AdamW), n floats, with its own weight decay (train.c: the weights' only) */
typedef struct slG_ParamRef {
  float *w, *g, *m, *v;
  size_t n;
  float weight_decay;
} slG_ParamRef;
typedef struct slG_Optimizer {
  int adamw;           /* 0: SGD with momentum; 1: AdamW */
  double lr, momentum; /* as train.c takes them: rounded to float32 */
  double beta1, beta2; /* AdamW; the bias corrections 1 / (1 - beta^(step + 1)) in binary64 */
  float eps;
  long step; /* from 0 */
} slG_Optimizer;

/* Every member is filled (the loader refuses a module that leaves one
** empty); each returns 0, or -1 with a message in err, unless it says
** otherwise. */
typedef struct slG_Backend {
  int version; /* SLG_BACKEND_VERSION */

  /* ---------------------------------------------------------- the device (device.cu) */
  /* number of usable CUDA devices; 0 without a driver or a device */
  int (*device_count)(void);
  /* one line: device name and memory, or why there is none ("no GPU: ...") */
  const char *(*describe)(void);

  /* ------------------------------------------------- host arrays and benchmark cases (kernels.cu) */
  /* C = A B, row-major, M x K times K x N; impl SLG_GEMM_NAIVE, _TILED_V1, _TILED or _CUBLAS */
  int (*sgemm)(int impl, int M, int N, int K, const float *A, const float *B, float *C, char *err, size_t errlen);
  /* contiguous batch x heads x n x dim; impl SLG_ATTN_NAIVE, SLG_ATTN_FUSED, SLG_ATTN_FUSED_V1 (dim 64) or
  ** SLG_ATTN_FUSED_BF16 (q, k, v rounded to bf16 on the device; dim 64 or 128) or SLG_ATTN_FA2_BF16 (the same, dim
  ** 64, 80 or 128) */
  int (*attention_forward)(int impl, int batch, int heads, int n, int dim, int causal, const float *q, const float *k,
                           const float *v, float *o, float *lse, char *err, size_t errlen);
  /* dq, dk, dv are overwritten; impl SLG_ATTN_FUSED or _V1 (from O and L), SLG_ATTN_FUSED_BF16 or _FA2_BF16 (q, k,
  ** v and dout rounded to bf16) or SLG_ATTN_NAIVE (P recomputed by the naive forward, then the N x N arrays through global
  ** memory) */
  int (*attention_backward)(int impl, int batch, int heads, int n, int dim, int causal, const float *q, const float *k,
                            const float *v, const float *o, const float *dout, const float *lse, float *dq, float *dk,
                            float *dv, char *err, size_t errlen);
  int (*mxint8_dequant_bf16)(const int8_t *m, const uint8_t *scales, size_t n, int g, uint16_t *out, char *err,
                             size_t errlen);
  /* a benchmark case on the device (kind: the versions above), operands allocated and filled once; NULL
  ** with err when it cannot be set up */
  void *(*case_new)(int kind, int size, int batch, int heads, int dim, int causal, char *err, size_t errlen);
  /* runs once; seconds between CUDA events around the kernel, after synchronising;
  ** NaN if a launch failed, with the reason in case_error() */
  double (*case_run)(void *c);
  const char *(*case_error)(void);
  /* device memory the case holds (operands and the naive version's N x N arrays) */
  size_t (*case_bytes)(void *c);
  /* the device array i of a case, for the harness to download and check against the CPU's reference before
  ** timing (bench.c): 0-10 its float32 arrays (cuda/kernels.cu's Case.x), 11-13 its others (Case.raw); NULL
  ** where the case has none */
  void *(*case_buffer)(void *c, int i);
  void (*case_free)(void *c);
  /* cuBLAS sgemm at n = 4096 and the device-to-device copy rate; 0, or -1 */
  int (*machine)(double *sgemm_gflops, double *copy_gbs);

  /* ==================================================================
  ** The graph's operators on the device (ops.cu, ops_rows.cu,
  ** ops_train.cu, ops_graph.cu). Every pointer is a device pointer; every
  ** call returns 0, or -1 with a message in err (a refused argument, or
  ** CUDA's reason for a failed launch; a fault inside a kernel shows at
  ** the next sync or download). Each computes what the CPU operator of
  ** engine/graph/ does, in its order where it can (docs/kernels.md "GPU").
  ** A backward call ADDS into the gradients it is given, as the CPU's
  ** backward adds into its gradient slots; a gradient pointer that may be
  ** NULL is not computed. Sizes of 0 do nothing. ids and labels are floats
  ** holding integers, as in the graph's tensors.
  ** ================================================================== */

  /* device memory (ops.cu); free(NULL) does nothing */
  int (*alloc)(void **p, size_t bytes, char *err, size_t errlen);
  void (*free)(void *p);
  int (*upload)(void *dev, const void *host, size_t bytes, char *err, size_t errlen);
  int (*download)(void *host, const void *dev, size_t bytes, char *err, size_t errlen);
  int (*zero)(void *dev, size_t bytes, char *err, size_t errlen);
  /* device to device */
  int (*copy)(void *dst, const void *src, size_t bytes, char *err, size_t errlen);
  /* the driver's free and total device memory; 0, or -1 without a device */
  int (*mem_info)(size_t *free_bytes, size_t *total_bytes);
  /* waits for everything launched; reports a fault of any of it */
  int (*sync)(char *err, size_t errlen);

  /* A row-major product on device pointers (cublas.cu; cublas_args.h's request with its fields as
  ** arguments: C = alpha op(A) op(B) + beta C over `batch` products at fixed strides, in elements, a
  ** stride 0 repeating the operand), the operands float32 (format 0, cuBLAS's default math mode: no TF32)
  ** or the 16-bit bits of SLG_BF16 / SLG_FP16 (the tensor cores, float32 sums); C is float32. A request
  ** cuBLAS would refuse is refused here with the rule it breaks. */
  int (*gemm_batched)(int format, int trans_a, int trans_b, int M, int N, int K, float alpha, const void *A, int lda,
                      long long stride_a, const void *B, int ldb, long long stride_b, float beta, float *C, int ldc,
                      long long stride_c, int batch, char *err, size_t errlen);
  /* float32 values as 16-bit bits of the format, rounded as kernels/round.c rounds; the values rounded
  ** in place of float32 (y may be x); y = x rounded to bfloat16, kept in float32 (numerics §8) */
  int (*to_half)(int format, const float *x, uint16_t *y, size_t n, char *err, size_t errlen);
  int (*round_half)(int format, const float *x, float *y, size_t n, char *err, size_t errlen);
  int (*round_bf16)(const float *x, float *y, size_t n, char *err, size_t errlen);

  /* linear: y = x W^T + b over rows of in_f; W is out_f x in_f; b may be NULL.
  ** Backward: dx += dy W, dW += dy^T x, db += column sums of dy32 (row
  ** order). x, w and dy are float32 (format 0) or their 16-bit copies
  ** (SLG_BF16, SLG_FP16: the products on the tensor cores); b, dy32 and the
  ** results are float32 */
  int (*linear_forward)(int format, const void *x, const void *w, const float *b, float *y, size_t rows, int in_f,
                        int out_f, char *err, size_t errlen);
  int (*linear_backward)(int format, const void *x, const void *w, const void *dy, const float *dy32, float *dx,
                         float *dw, float *db, size_t rows, int in_f, int out_f, char *err, size_t errlen);

  /* the activations SLG_RELU, SLG_GELU, SLG_SILU; backward dx += dy * act'(x) */
  int (*activation_forward)(int act, const float *x, float *y, size_t n, char *err, size_t errlen);
  int (*activation_backward)(int act, const float *x, const float *dy, float *dx, size_t n, char *err, size_t errlen);
  /* tanh y = tanh(x), backward dx += dy (1 - y^2) from the output y (ops_graph.cu);
  ** the scale y = a x, backward dx += a dy */
  int (*tanh_forward)(const float *x, float *y, size_t n, char *err, size_t errlen);
  int (*tanh_backward)(const float *y, const float *dy, float *dx, size_t n, char *err, size_t errlen);
  int (*scale_forward)(const float *x, float *y, size_t n, float a, char *err, size_t errlen);
  int (*scale_backward)(const float *dy, float *dx, size_t n, float a, char *err, size_t errlen);
  /* SwiGLU y = silu(a) b; da += dy b silu'(a), db += dy silu(a) */
  int (*swiglu_forward)(const float *a, const float *b, float *y, size_t n, char *err, size_t errlen);
  int (*swiglu_backward)(const float *a, const float *b, const float *dy, float *da, float *db, size_t n, char *err,
                         size_t errlen);

  /* residual add y = a + b: b has n items, or bn items (bn divides n) added
  ** to every row of bn (a parameter row). Backward: da += dy; db += dy, or
  ** the column sums of dy for a row */
  int (*add_forward)(const float *a, const float *b, float *y, size_t n, size_t bn, char *err, size_t errlen);
  int (*add_backward)(const float *dy, float *da, float *db, size_t n, size_t bn, char *err, size_t errlen);

  /* dropout (numerics §9): base is the forward's one draw from the graph's
  ** stream; mask[i] = 0 or 1/(1 - p), y = x mask; p = 0 copies x and leaves
  ** mask alone. Backward: dx += dy mask, or dx += dy for a NULL mask */
  int (*dropout_forward)(const float *x, float *y, float *mask, size_t n, float p, uint64_t base, char *err,
                         size_t errlen);
  int (*dropout_backward)(const float *dy, const float *mask, float *dx, size_t n, char *err, size_t errlen);

  /* embedding: y[i] = table[ids[i]] (rows of width); an id outside
  ** [0, vocab) gives a row of zeros. Backward: dtable[ids[i]] += dy[i], in
  ** the order of i (no atomics), ids outside [0, vocab) skipped */
  int (*embedding_forward)(const float *ids, const float *table, float *y, size_t n, int vocab, int width, char *err,
                           size_t errlen);
  int (*embedding_backward)(const float *ids, const float *dy, float *dtable, size_t n, int vocab, int width, char *err,
                            size_t errlen);

  /* RoPE over B x T x D, heads of dh = D / heads (even): the table (T x dh:
  ** cos in the first dh/2 of a row, sin in the second) of angles
  ** t theta^(-2i/dh), made in binary64 as the CPU makes it; forward turns
  ** features (2i, 2i+1) of each head by the angle; backward dx += the
  ** inverse turn of dy */
  int (*rope_table)(float *table, int T, int dh, float theta, char *err, size_t errlen);
  int (*rope_forward)(const float *x, float *y, const float *table, size_t B, int T, int D, int heads, char *err,
                      size_t errlen);
  int (*rope_backward)(const float *dy, float *dx, const float *table, size_t B, int T, int D, int heads, char *err,
                       size_t errlen);

  /* layer norm over rows of d (ops_rows.cu): y = (x - mean) rstd gamma + beta, mean and
  ** rstd = 1 / sqrt(var + eps) per row kept for the backward (the moments in
  ** binary64). Backward: dx, and dgamma, dbeta (either may be NULL) summed
  ** over rows in row order */
  int (*layernorm_forward)(const float *x, const float *gamma, const float *beta, float *y, float *mean, float *rstd,
                           size_t rows, int d, float eps, char *err, size_t errlen);
  int (*layernorm_backward)(const float *x, const float *gamma, const float *dy, const float *mean, const float *rstd,
                            float *dx, float *dgamma, float *dbeta, size_t rows, int d, char *err, size_t errlen);
  /* RMSNorm: y = x rstd gain, rstd = 1 / sqrt(mean(x^2) + eps) per row kept */
  int (*rmsnorm_forward)(const float *x, const float *gain, float *y, float *rstd, size_t rows, int d, float eps,
                         char *err, size_t errlen);
  int (*rmsnorm_backward)(const float *x, const float *gain, const float *dy, const float *rstd, float *dx,
                          float *dgain, size_t rows, int d, char *err, size_t errlen);

  /* softmax of rows of n; causal: the rows are T x T matrices stacked (n = T)
  ** and row r keeps its first r % n + 1 entries, the rest 0 (the fused
  ** masked_softmax). Backward from y: dx += y (dy - <dy, y>) over the kept entries */
  int (*softmax_forward)(const float *x, float *y, size_t rows, int n, int causal, char *err, size_t errlen);
  int (*softmax_backward)(const float *y, const float *dy, float *dx, size_t rows, int n, int causal, char *err,
                          size_t errlen);

  /* the mean cross-entropy of rows of C logits against labels: probs =
  ** softmax (kept for the backward), loss[0] = mean of -log(p[label] + eps).
  ** SLG_LOSS_CLASSES is the image models' cross_entropy (eps 1e-12; dx +=
  ** dloss (p - onehot) / rows), SLG_LOSS_TOKENS the language model's (eps
  ** 1e-30; s = dloss / rows, dx += s p, then s off the target). dloss is the
  ** loss's gradient, one float on the device. A label outside [0, C) makes
  ** the loss NaN and has no one-hot term */
  int (*cross_entropy_forward)(int kind, const float *logits, const float *labels, float *probs, float *loss,
                               size_t rows, int C, char *err, size_t errlen);
  int (*cross_entropy_backward)(int kind, const float *probs, const float *labels, const float *dloss, float *dx,
                                size_t rows, int C, char *err, size_t errlen);

  /* The fused attention node of the graph (ops_graph.cu): q, k, v and out are token rows B x T x H dh, heads
  ** interleaved; lse is B x H x T. format 0 runs attention.cu's float32 kernels (dh = 64), SLG_BF16 the tensor
  ** cores' (dh = 64 or 128: attention_tc.cu; 80: attention_fa2.cu); anything else is refused with the reason. scratch is device memory of
  ** attention_graph_scratch bytes. The backward ADDS into dq, dk, dv. */
  size_t (*attention_graph_scratch)(int format, int B, int T, int H, int dh, int backward);
  int (*attention_graph_forward)(int format, int B, int T, int H, int dh, int causal, const float *q, const float *k,
                                 const float *v, float *out, float *lse, void *scratch, char *err, size_t errlen);
  int (*attention_graph_backward)(int format, int B, int T, int H, int dh, int causal, const float *q, const float *k,
                                  const float *v, const float *out, const float *gout, const float *lse, float *dq,
                                  float *dk, float *dv, void *scratch, char *err, size_t errlen);

  /* the optimisers (ops_train.cu): the parameters' records copied to the device once (refs is a host array
  ** of device pointers; NULL with err on failure), then one launch per step */
  void *(*params_new)(const slG_ParamRef *refs, int count, char *err, size_t errlen);
  void (*params_free)(void *params);
  int (*optimizer_step)(void *params, const slG_Optimizer *o, char *err, size_t errlen);
} slG_Backend;

/* the module's one exported symbol: its table, filled once */
const slG_Backend *slG_backend(void);

#ifdef __cplusplus
}
#endif

#endif
