/*
** ops.cu - the graph's elementwise and gather operators on the GPU, forward
** and backward, on device pointers: device memory, the linear layer
** (cuBLAS), ReLU, GELU, SiLU, SwiGLU, the residual add, dropout, bfloat16
** rounding, the embedding and RoPE. The row-wise operators (norms, softmax,
** cross-entropy) are in ops_rows.cu, the optimisers in ops_train.cu.
**
** Build: part of the CUDA module when nvcc is found. Run: the test
** tests/unit/test_gpu_ops.c runs each operator here and the CPU operator of
** engine/graph/ on the same inputs and compares them (bit for bit where the
** arithmetic is the same); without a GPU it says it skipped. On a GPU
** machine: `make gpu-check OUT=DIR` (docs/gpu.md), or build/test_gpu_ops.
**
** Shapes are naive and clear: one thread per item with a grid-stride loop
** (ops.h); correctness first. They are timed inside the models' steps
** (bench/gpu_models.sl, lm_bench on the GPU), and the linear layer alone
** as a bf16 model runs it (`bench linear_cuda_bf16`). Each kernel
** computes in the order of the CPU loop it stands for, with the never-fused
** arithmetic of ops.h where the CPU's bits are the aim.
*/
#include <cuda_fp16.h>

#include "cublas.h"
#include "module.h"
#include "ops.h"

#include <stdint.h>

/* ======================================================= device memory */

#define CUDA_OR_FAIL(call, what) \
  do { \
    cudaError_t e_ = (call); \
    if (e_ != cudaSuccess) { \
      snprintf(err, errlen, "%s: %s", what, cudaGetErrorString(e_)); \
      cudaGetLastError(); \
      return -1; \
    } \
  } while (0)

extern "C" int slG_alloc(void **p, size_t bytes, char *err, size_t errlen) {
  *p = NULL;
  CUDA_OR_FAIL(cudaMalloc(p, bytes ? bytes : 1), "cudaMalloc");
  return 0;
}

extern "C" void slG_free(void *p) {
  if (p) cudaFree(p);
}

extern "C" int slG_upload(void *dev, const void *host, size_t bytes, char *err, size_t errlen) {
  if (bytes) CUDA_OR_FAIL(cudaMemcpy(dev, host, bytes, cudaMemcpyHostToDevice), "upload (cudaMemcpy)");
  return 0;
}

extern "C" int slG_download(void *host, const void *dev, size_t bytes, char *err, size_t errlen) {
  if (bytes) CUDA_OR_FAIL(cudaMemcpy(host, dev, bytes, cudaMemcpyDeviceToHost), "download (cudaMemcpy)");
  return 0;
}

extern "C" int slG_zero(void *dev, size_t bytes, char *err, size_t errlen) {
  if (bytes) CUDA_OR_FAIL(cudaMemset(dev, 0, bytes), "cudaMemset");
  return 0;
}

extern "C" int slG_copy(void *dst, const void *src, size_t bytes, char *err, size_t errlen) {
  if (bytes) CUDA_OR_FAIL(cudaMemcpy(dst, src, bytes, cudaMemcpyDeviceToDevice), "device copy (cudaMemcpy)");
  return 0;
}

extern "C" int slG_mem_info(size_t *free_bytes, size_t *total_bytes) {
  *free_bytes = *total_bytes = 0;
  if (cudaMemGetInfo(free_bytes, total_bytes) != cudaSuccess) {
    cudaGetLastError();
    return -1;
  }
  return 0;
}

extern "C" int slG_sync(char *err, size_t errlen) {
  CUDA_OR_FAIL(cudaDeviceSynchronize(), "cudaDeviceSynchronize");
  return 0;
}

/* ========================================================= column sums */

/* y[j] += a[0][j] + a[1][j] + ..., in slK_column_sums's order (gpu.h,
** SLG_SUM_ROWS), so a bias gradient has the CPU's bits: a warp's lanes read
** a row's 32 neighbouring columns (coalesced) and the block's warps sum 8
** chunks of rows abreast (ops.h's chunked_column_sums, sums_layout.h),
** where one thread per column used to walk every row alone. */
struct RowTerm { /* a column sum's term: the element */
  const float *a;
  size_t cols;
  __device__ void term(size_t r, size_t j, float *t) const { t[0] = a[r * cols + j]; }
};

__global__ void column_sums(const float *a, size_t rows, size_t cols, float *y) {
  float *const ys[1] = {y};
  chunked_column_sums<1>(RowTerm{a, cols}, rows, cols, ys);
}

static int column_sums_launch(const float *a, size_t rows, size_t cols, float *y, char *err, size_t errlen) {
  column_sums<<<sum_grid(cols), SUM_BLOCK>>>(a, rows, cols, y);
  return launched("column sums", err, errlen);
}

/* ============================================================== linear */

/* y[r][j] += b[j] after the product, as linear_forward's bias_range */
__global__ void add_bias(float *y, const float *b, size_t rows, int out_f) {
  EACH_ITEM(i, rows * (size_t)out_f) y[i] = add_rn(y[i], b[i % (size_t)out_f]);
}

static int linear_check(size_t rows, int in_f, int out_f, char *err, size_t errlen) {
  if (in_f <= 0 || out_f <= 0) return refuse(err, errlen, "linear: the widths must be positive");
  if (rows > 0x7fffffff) return refuse(err, errlen, "linear: more than 2^31 - 1 rows (cuBLAS takes int)");
  return 0;
}

/* the CPU's slM_gemm_w(N, T, rows, out_f, in_f, x, W, y): y = x W^T, from
** float32 x and W (format 0) or their 16-bit copies (SLG_BF16, SLG_FP16:
** the tensor cores, float32 sums), then the bias in float32 */
extern "C" int slG_linear_forward(int format, const void *x, const void *w, const float *b, float *y, size_t rows,
                                  int in_f, int out_f, char *err, size_t errlen) {
  if (linear_check(rows, in_f, out_f, err, errlen)) return -1;
  if (rows == 0) return 0;
  slG_Gemm g = slG_linear_gemm(SLG_LINEAR_Y, (int)rows, in_f, out_f);
  if (slG_gemm_run(format, &g, 1.0f, x, w, 0.0f, y, err, errlen)) return -1;
  if (!b) return 0;
  add_bias<<<grid_for(rows * (size_t)out_f), THREADS>>>(y, b, rows, out_f);
  return launched("linear bias", err, errlen);
}

/* linear_backward's three products, each added (beta = 1): dx and dW from
** dy, W and x in the format (float32 or their 16-bit copies), db from the
** float32 dy32 */
extern "C" int slG_linear_backward(int format, const void *x, const void *w, const void *dy, const float *dy32,
                                   float *dx, float *dw, float *db, size_t rows, int in_f, int out_f, char *err,
                                   size_t errlen) {
  if (linear_check(rows, in_f, out_f, err, errlen)) return -1;
  if (rows == 0) return 0;
  slG_Gemm gx = slG_linear_gemm(SLG_LINEAR_DX, (int)rows, in_f, out_f);
  slG_Gemm gw = slG_linear_gemm(SLG_LINEAR_DW, (int)rows, in_f, out_f);
  if (dx && slG_gemm_run(format, &gx, 1.0f, dy, w, 1.0f, dx, err, errlen)) return -1;
  if (dw && slG_gemm_run(format, &gw, 1.0f, dy, x, 1.0f, dw, err, errlen)) return -1;
  if (db) return column_sums_launch(dy32, rows, (size_t)out_f, db, err, errlen);
  return 0;
}

/* ========================================================= activations */

/* kernels/activation.c's erf: the same rational function, operation for
** operation (coefficients as its eight-lane version holds them), so that
** GELU's forward gives the CPU's bits */
__device__ float erf_rational(float x) {
  x = x < -4.0f ? -4.0f : x > 4.0f ? 4.0f : x;
  const float pc[] = {2.77068142495902e-08f,  -2.10102402082508e-06f, -5.69250639462346e-05f,
                      -7.34990630326855e-04f, -2.95459980854025e-03f, -1.60960333262415e-02f};
  const float qc[] = {-2.13374055278905e-04f, -1.68282697438203e-03f, -7.37332916720468e-03f, -1.42647390514189e-02f};
  float x2 = mul_rn(x, x), p = -2.72614225801306e-10f, q = -1.45660718464996e-05f;
#pragma unroll
  for (int k = 0; k < 6; k++) p = add_rn(mul_rn(p, x2), pc[k]);
#pragma unroll
  for (int k = 0; k < 4; k++) q = add_rn(mul_rn(q, x2), qc[k]);
  return div_rn(mul_rn(x, p), q);
}

__device__ float gelu(float x) { return mul_rn(mul_rn(0.5f, x), add_rn(1.0f, erf_rational(mul_rn(x, 0.70710678f)))); }

/* the CPU takes exp(-x^2/2) from its own vector exp; expf here: close, not equal */
__device__ float gelu_grad(float x) {
  float e = expf(mul_rn(mul_rn(-0.5f, x), x));
  return add_rn(mul_rn(0.5f, add_rn(1.0f, erf_rational(mul_rn(x, 0.70710678f)))), mul_rn(mul_rn(x, e), 0.39894228f));
}

/* ops_lm.c's sigmoid */
__device__ float sigmoid(float v) { return div_rn(1.0f, add_rn(1.0f, expf(-v))); }

__global__ void activation_fwd(int act, const float *x, float *y, size_t n) {
  EACH_ITEM(i, n) {
    float v = x[i];
    y[i] = act == SLG_RELU ? (v > 0 ? v : 0.0f) : act == SLG_GELU ? gelu(v) : mul_rn(v, sigmoid(v));
  }
}

/* ReLU: dx + (dy where x > 0, else +0), as ops_core.c's kept(); SiLU: as
** SwiGLU's da with b = 1 */
__global__ void activation_bwd(int act, const float *x, const float *dy, float *dx, size_t n) {
  EACH_ITEM(i, n) {
    float v = x[i], g = dy[i], t;
    if (act == SLG_RELU) {
      t = v > 0 ? g : 0.0f;
    } else if (act == SLG_GELU) {
      t = mul_rn(g, gelu_grad(v));
    } else {
      float s = sigmoid(v);
      t = mul_rn(mul_rn(g, s), add_rn(1.0f, mul_rn(v, sub_rn(1.0f, s))));
    }
    dx[i] = add_rn(dx[i], t);
  }
}

static int act_check(int act, char *err, size_t errlen) {
  if (act == SLG_RELU || act == SLG_GELU || act == SLG_SILU) return 0;
  snprintf(err, errlen, "unknown activation %d", act);
  return -1;
}

extern "C" int slG_activation_forward(int act, const float *x, float *y, size_t n, char *err, size_t errlen) {
  if (act_check(act, err, errlen)) return -1;
  if (n == 0) return 0;
  activation_fwd<<<grid_for(n), THREADS>>>(act, x, y, n);
  return launched("activation forward", err, errlen);
}

extern "C" int slG_activation_backward(int act, const float *x, const float *dy, float *dx, size_t n, char *err,
                                       size_t errlen) {
  if (act_check(act, err, errlen)) return -1;
  if (n == 0) return 0;
  activation_bwd<<<grid_for(n), THREADS>>>(act, x, dy, dx, n);
  return launched("activation backward", err, errlen);
}

/* ops_lm.c's swiglu_range and swiglu_grad_range */
__global__ void swiglu_fwd(const float *a, const float *b, float *y, size_t n) {
  EACH_ITEM(i, n) y[i] = mul_rn(mul_rn(a[i], sigmoid(a[i])), b[i]);
}

__global__ void swiglu_bwd(const float *a, const float *b, const float *dy, float *da, float *db, size_t n) {
  EACH_ITEM(i, n) {
    float v = a[i], s = sigmoid(v), g = dy[i];
    da[i] = add_rn(da[i], mul_rn(mul_rn(mul_rn(g, b[i]), s), add_rn(1.0f, mul_rn(v, sub_rn(1.0f, s)))));
    db[i] = add_rn(db[i], mul_rn(mul_rn(g, v), s));
  }
}

extern "C" int slG_swiglu_forward(const float *a, const float *b, float *y, size_t n, char *err, size_t errlen) {
  if (n == 0) return 0;
  swiglu_fwd<<<grid_for(n), THREADS>>>(a, b, y, n);
  return launched("SwiGLU forward", err, errlen);
}

extern "C" int slG_swiglu_backward(const float *a, const float *b, const float *dy, float *da, float *db, size_t n,
                                   char *err, size_t errlen) {
  if (n == 0) return 0;
  swiglu_bwd<<<grid_for(n), THREADS>>>(a, b, dy, da, db, n);
  return launched("SwiGLU backward", err, errlen);
}

/* ======================================================== residual add */

/* bn == n: two tensors; else b is one row of bn added to every row */
__global__ void add_fwd(const float *a, const float *b, float *y, size_t n, size_t bn) {
  EACH_ITEM(i, n) y[i] = add_rn(a[i], b[bn == n ? i : i % bn]);
}

__global__ void accumulate(const float *dy, float *dx, size_t n) { EACH_ITEM(i, n) dx[i] = add_rn(dx[i], dy[i]); }

static int add_check(size_t n, size_t bn, char *err, size_t errlen) {
  if (bn == 0 || n % bn != 0) return refuse(err, errlen, "add: the second operand's size must divide the first's");
  return 0;
}

extern "C" int slG_add_forward(const float *a, const float *b, float *y, size_t n, size_t bn, char *err,
                               size_t errlen) {
  if (n == 0) return 0;
  if (add_check(n, bn, err, errlen)) return -1;
  add_fwd<<<grid_for(n), THREADS>>>(a, b, y, n, bn);
  return launched("add forward", err, errlen);
}

extern "C" int slG_add_backward(const float *dy, float *da, float *db, size_t n, size_t bn, char *err, size_t errlen) {
  if (n == 0) return 0;
  if (add_check(n, bn, err, errlen)) return -1;
  if (da) {
    accumulate<<<grid_for(n), THREADS>>>(dy, da, n);
    if (launched("add backward", err, errlen)) return -1;
  }
  if (!db) return 0;
  if (bn < n) return column_sums_launch(dy, n / bn, bn, db, err, errlen);
  accumulate<<<grid_for(n), THREADS>>>(dy, db, n);
  return launched("add backward", err, errlen);
}

/* ============================================================= dropout */

#define GOLDEN 0x9E3779B97F4A7C15ull

/* slM_rng_next of a splitmix64 in state s: the state steps first */
__device__ __forceinline__ unsigned long long splitmix_next(unsigned long long s) {
  unsigned long long z = s + GOLDEN;
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

/* One thread per element, each hashing its pair's counter (the pair's
** other element hashes it again: half the hashes are spare, and the mask
** does not depend on the launch shape). threshold and keep come from the
** host, computed as ops_core.c's dropout_range computes them. */
__global__ void dropout_fwd(const float *x, float *y, float *mask, size_t n, unsigned long long base,
                            unsigned long long threshold, float keep) {
  EACH_ITEM(i, n) {
    unsigned long long h = splitmix_next(base + (unsigned long long)(i >> 1) * GOLDEN);
    float z = ((h >> (32 * (i & 1))) & 0xFFFFFFFFull) < threshold ? 0.0f : keep;
    mask[i] = z;
    y[i] = mul_rn(x[i], z);
  }
}

__global__ void mul_accumulate(const float *dy, const float *mask, float *dx, size_t n) {
  EACH_ITEM(i, n) dx[i] = add_rn(dx[i], mul_rn(dy[i], mask[i]));
}

extern "C" int slG_dropout_forward(const float *x, float *y, float *mask, size_t n, float p, uint64_t base, char *err,
                                   size_t errlen) {
  if (n == 0) return 0;
  if (!(p >= 0.0f)) return refuse(err, errlen, "dropout: p must be at least 0");
  if (p == 0.0f) {
    if (x != y) CUDA_OR_FAIL(cudaMemcpyAsync(y, x, n * sizeof(float), cudaMemcpyDeviceToDevice), "dropout copy");
    return 0;
  }
  float keep = 1.0f / (1.0f - p);
  unsigned long long threshold = (unsigned long long)((double)p * 4294967296.0);
  dropout_fwd<<<grid_for(n), THREADS>>>(x, y, mask, n, (unsigned long long)base, threshold, keep);
  return launched("dropout forward", err, errlen);
}

extern "C" int slG_dropout_backward(const float *dy, const float *mask, float *dx, size_t n, char *err, size_t errlen) {
  if (n == 0) return 0;
  if (mask) mul_accumulate<<<grid_for(n), THREADS>>>(dy, mask, dx, n);
  else accumulate<<<grid_for(n), THREADS>>>(dy, dx, n);
  return launched("dropout backward", err, errlen);
}

/* ============================================================ bfloat16 */

/* kernels/round.c's slK_round_bf16 on the bits (the float's bits, rounded) */
__device__ __forceinline__ unsigned bf16_round_bits(unsigned u) {
  if ((u & 0x7F800000u) == 0x7F800000u) {
    if (u & 0x007FFFFFu) u |= 0x00400000u;
  } else {
    u += 0x7FFFu + ((u >> 16) & 1u);
  }
  return u & 0xFFFF0000u;
}

/* kernels/round.c's slK_fp16_bits: __float2half_rn rounds to nearest even,
** overflows to infinity and keeps subnormals as it does; only a NaN differs
** (CUDA's canonical 0x7FFF against the quiet NaN 0x7E00 with the sign) */
__device__ __forceinline__ unsigned short fp16_bits(float x) {
  if (isnan(x)) return (unsigned short)(((__float_as_uint(x) >> 16) & 0x8000u) | 0x7E00u);
  return __half_as_ushort(__float2half_rn(x));
}

/* the result is stored as bits, so no float operation can touch a NaN's payload */
__global__ void round_bf16(const unsigned *x, unsigned *y, size_t n) { EACH_ITEM(i, n) y[i] = bf16_round_bits(x[i]); }

/* kernels/round.c's slK_fp16_value: __half2float for every half but a NaN,
** which it gives as CUDA's canonical NaN; round.c widens its bits */
__device__ __forceinline__ float fp16_value(unsigned short h) {
  if ((h & 0x7C00u) == 0x7C00u && (h & 0x03FFu))
    return __uint_as_float(((unsigned)(h & 0x8000u) << 16) | 0x7F800000u | ((unsigned)(h & 0x03FFu) << 13));
  return __half2float(__ushort_as_half(h));
}

__global__ void round_fp16(const float *x, float *y, size_t n) { EACH_ITEM(i, n) y[i] = fp16_value(fp16_bits(x[i])); }

__global__ void to_bf16(const unsigned *x, unsigned short *y, size_t n) {
  EACH_ITEM(i, n) y[i] = (unsigned short)(bf16_round_bits(x[i]) >> 16);
}

__global__ void to_fp16(const float *x, unsigned short *y, size_t n) { EACH_ITEM(i, n) y[i] = fp16_bits(x[i]); }

extern "C" int slG_round_bf16(const float *x, float *y, size_t n, char *err, size_t errlen) {
  if (n == 0) return 0;
  round_bf16<<<grid_for(n), THREADS>>>((const unsigned *)x, (unsigned *)y, n);
  return launched("bfloat16 rounding", err, errlen);
}

extern "C" int slG_round_half(int format, const float *x, float *y, size_t n, char *err, size_t errlen) {
  if (format == SLG_BF16) return slG_round_bf16(x, y, n, err, errlen);
  if (format != SLG_FP16) return refuse(err, errlen, "rounding: the formats are bf16 and fp16");
  if (n == 0) return 0;
  round_fp16<<<grid_for(n), THREADS>>>(x, y, n);
  return launched("fp16 rounding", err, errlen);
}

/* the 16-bit operands of a tensor-core product */
extern "C" int slG_to_half(int format, const float *x, uint16_t *y, size_t n, char *err, size_t errlen) {
  if (format != SLG_BF16 && format != SLG_FP16)
    return refuse(err, errlen, "16-bit copy: the formats are bf16 and fp16");
  if (n == 0) return 0;
  if (format == SLG_BF16) to_bf16<<<grid_for(n), THREADS>>>((const unsigned *)x, (unsigned short *)y, n);
  else to_fp16<<<grid_for(n), THREADS>>>(x, (unsigned short *)y, n);
  return launched("16-bit copy", err, errlen);
}

/* =========================================================== embedding */

/* the id as an index, or -1 outside [0, vocab) (NaN included) */
__device__ __forceinline__ long row_of(float id, int vocab) { return id >= 0.0f && id < (float)vocab ? (long)id : -1; }

__global__ void embedding_fwd(const float *ids, const float *table, float *y, size_t n, int vocab, int width) {
  EACH_ITEM(e, n * (size_t)width) {
    long row = row_of(ids[e / (size_t)width], vocab);
    y[e] = row < 0 ? 0.0f : table[(size_t)row * width + e % (size_t)width];
  }
}

/* The scatter-add without atomics: grid.x covers the columns, grid.y
** slices of the vocabulary. A thread owns column j of the table rows in
** its slice and walks every id in order, adding the ones in its slice: each
** entry sums its tokens in token order, as embedding_backward does (the
** CPU's bits), and no two threads write one entry. Every thread of a warp
** reads the same id at once (one broadcast load). */
__global__ void embedding_bwd(const float *ids, const float *dy, float *dtable, size_t n, int vocab, int width,
                              int slice) {
  int j = blockIdx.x * blockDim.x + threadIdx.x;
  long v0 = (long)blockIdx.y * slice, v1 = v0 + slice;
  if (j >= width) return;
  for (size_t i = 0; i < n; i++) {
    long row = row_of(ids[i], vocab);
    if (row < v0 || row >= v1) continue;
    float *cell = dtable + (size_t)row * width + j;
    *cell = add_rn(*cell, dy[i * width + j]);
  }
}

static int embedding_check(int vocab, int width, char *err, size_t errlen) {
  if (vocab <= 0 || width <= 0) return refuse(err, errlen, "embedding: vocab and width must be positive");
  if (vocab > (1 << 24)) return refuse(err, errlen, "embedding: ids above 2^24 are not exact in float32");
  return 0;
}

extern "C" int slG_embedding_forward(const float *ids, const float *table, float *y, size_t n, int vocab, int width,
                                     char *err, size_t errlen) {
  if (embedding_check(vocab, width, err, errlen)) return -1;
  if (n == 0) return 0;
  embedding_fwd<<<grid_for(n * (size_t)width), THREADS>>>(ids, table, y, n, vocab, width);
  return launched("embedding forward", err, errlen);
}

extern "C" int slG_embedding_backward(const float *ids, const float *dy, float *dtable, size_t n, int vocab, int width,
                                      char *err, size_t errlen) {
  if (embedding_check(vocab, width, err, errlen)) return -1;
  if (n == 0) return 0;
  int slices = vocab < 128 ? vocab : 128, slice = (vocab + slices - 1) / slices;
  slices = (vocab + slice - 1) / slice;
  dim3 grid((unsigned)((width + THREADS - 1) / THREADS), (unsigned)slices); /* slices <= 128 */
  embedding_bwd<<<grid, THREADS>>>(ids, dy, dtable, n, vocab, width, slice);
  return launched("embedding backward", err, errlen);
}

/* ================================================================ RoPE */

/* ops_lm.c's rope_table, in binary64: angle = t theta^(-2i/dh) */
__global__ void rope_table_fill(float *tab, int T, int dh, double theta) {
  int half = dh / 2;
  EACH_ITEM(e, (size_t)T * half) {
    int t = (int)(e / half), i = (int)(e % half);
    double angle = t * pow(theta, -2.0 * i / dh);
    tab[(size_t)t * dh + i] = (float)cos(angle);
    tab[(size_t)t * dh + half + i] = (float)sin(angle);
  }
}

/* ops_lm.c's rope_apply, one thread per feature pair: y0 = x0 c - x1 s,
** y1 = x0 s + x1 c with s = sign sin; accumulate adds into y */
__global__ void rope_apply(const float *x, float *y, const float *tab, size_t B, int T, int D, int heads, float sign,
                           int accumulate) {
  int dh = D / heads, half = dh / 2;
  size_t per_token = (size_t)heads * half;
  EACH_ITEM(e, B * T * per_token) {
    size_t token = e / per_token;
    int rest = (int)(e % per_token), h = rest / half, i = rest % half, t = (int)(token % T);
    size_t j = token * D + (size_t)h * dh + 2 * i;
    float c = tab[(size_t)t * dh + i], s = sign * tab[(size_t)t * dh + half + i];
    float x0 = x[j], x1 = x[j + 1];
    float y0 = sub_rn(mul_rn(x0, c), mul_rn(x1, s)), y1 = add_rn(mul_rn(x0, s), mul_rn(x1, c));
    if (accumulate) y0 = add_rn(y[j], y0), y1 = add_rn(y[j + 1], y1);
    y[j] = y0, y[j + 1] = y1;
  }
}

static int rope_check(int T, int D, int heads, char *err, size_t errlen) {
  if (T <= 0 || D <= 0 || heads <= 0 || D % heads != 0 || (D / heads) % 2 != 0)
    return refuse(err, errlen, "RoPE: heads must divide the width into an even head width");
  return 0;
}

extern "C" int slG_rope_table(float *table, int T, int dh, float theta, char *err, size_t errlen) {
  if (rope_check(T, dh, 1, err, errlen)) return -1;
  rope_table_fill<<<grid_for((size_t)T * (dh / 2)), THREADS>>>(table, T, dh, (double)theta);
  return launched("RoPE table", err, errlen);
}

static int rope_launch(const float *x, float *y, const float *table, size_t B, int T, int D, int heads, float sign,
                       int accumulate, char *err, size_t errlen) {
  if (rope_check(T, D, heads, err, errlen)) return -1;
  if (B == 0) return 0;
  rope_apply<<<grid_for(B * T * (size_t)(D / 2)), THREADS>>>(x, y, table, B, T, D, heads, sign, accumulate);
  return launched(accumulate ? "RoPE backward" : "RoPE forward", err, errlen);
}

extern "C" int slG_rope_forward(const float *x, float *y, const float *table, size_t B, int T, int D, int heads,
                                char *err, size_t errlen) {
  return rope_launch(x, y, table, B, T, D, heads, 1.0f, 0, err, errlen);
}

/* the inverse turn, added (rope_backward) */
extern "C" int slG_rope_backward(const float *dy, float *dx, const float *table, size_t B, int T, int D, int heads,
                                 char *err, size_t errlen) {
  return rope_launch(dy, dx, table, B, T, D, heads, -1.0f, 1, err, errlen);
}

void slG_fill_ops(slG_Backend *b) {
  b->alloc = slG_alloc;
  b->free = slG_free;
  b->upload = slG_upload;
  b->download = slG_download;
  b->zero = slG_zero;
  b->copy = slG_copy;
  b->mem_info = slG_mem_info;
  b->sync = slG_sync;
  b->to_half = slG_to_half;
  b->round_half = slG_round_half;
  b->round_bf16 = slG_round_bf16;
  b->linear_forward = slG_linear_forward;
  b->linear_backward = slG_linear_backward;
  b->activation_forward = slG_activation_forward;
  b->activation_backward = slG_activation_backward;
  b->swiglu_forward = slG_swiglu_forward;
  b->swiglu_backward = slG_swiglu_backward;
  b->add_forward = slG_add_forward;
  b->add_backward = slG_add_backward;
  b->dropout_forward = slG_dropout_forward;
  b->dropout_backward = slG_dropout_backward;
  b->embedding_forward = slG_embedding_forward;
  b->embedding_backward = slG_embedding_backward;
  b->rope_table = slG_rope_table;
  b->rope_forward = slG_rope_forward;
  b->rope_backward = slG_rope_backward;
}
