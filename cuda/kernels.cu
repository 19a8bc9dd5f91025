/*
** kernels.cu - the GPU versions of the kernels: GEMM, naive attention, MXINT8, and their benchmark cases.
**
** Build: part of the CUDA module when nvcc is found (architectures 80 and
** 90). Run: tests/unit/test_kernels.c checks every version against the CPU
** references when a GPU is present (and says it skipped otherwise);
** `bench gemm_cuda_tiled sizes=[4096]` and the other *_cuda kernels time
** them with CUDA events (engine/kernels/bench.c).
**
**   GEMM (row-major C = A B)
**     v0 naive        one thread per element of C, reading A and B from
**                     global memory
**     v1 tiled        64 x 64 tiles of C per block of 256 threads, 16-deep
**                     slices of A and B staged in shared memory, 4 x 4
**                     outputs per thread in registers (kept as the step
**                     v2 is measured against: gemm_cuda_tiled_v1)
**     v2 tiled        128 x 128 tiles, 8 x 8 outputs per thread, 16-byte
**                     shared-memory reads, the next slice fetched into
**                     registers during this one (gemm_cuda_tiled)
**     v3 cuBLAS       cublasSgemm on the transposed problem (C^T = B^T A^T
**                     in column-major terms) through cublas.cu's
**                     slG_gemm_run, the one mapping of every product the
**                     engine asks of cuBLAS (cublas_args.h)
**   attention (contiguous batch x heads x L x dim, dim = 64)
**     naive           cuBLAS strided-batched S = QK^T, one kernel for scale,
**                     causal mask, softmax and L, cuBLAS O = PV: the N x N
**                     array goes through global memory
**     fused forward   FlashAttention-2, v1 and v2 (used): attention.cu
**     naive backward  P from the naive forward, four cuBLAS products (dV,
**                     dP, dQ, dK) and one kernel for dS = P o (dP - D): the
**                     reference the fused backward is timed against
**     fused backward  v1 and v2 (used): attention.cu
**   MXINT8            one thread per element, the ADLS Lab 4 kernel's bit assembly
**                     (numerics §5.4), 16-byte loads of mantissas
**
** Every entry point returns -1 with a message instead of failing hard; with
** no device, the table's device_count answers 0 and the engine never calls
** in.
*/
#include "attention.h"
#include "attention_fa2_layout.h"
#include "cublas.h"
#include "module.h"

#include <cuda_runtime.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define CK(call) \
  do { \
    cudaError_t e_ = (call); \
    if (e_ != cudaSuccess) { \
      snprintf(err, errlen, "%s: %s", #call, cudaGetErrorString(e_)); \
      cudaGetLastError(); \
      goto fail; \
    } \
  } while (0)

/* ================================================================== GEMM */

__global__ void gemm_naive(int M, int N, int K, const float *A, const float *B, float *C) {
  int i = blockIdx.y * blockDim.y + threadIdx.y, j = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= M || j >= N) return;
  float sum = 0;
  for (int k = 0; k < K; k++) sum += A[(size_t)i * K + k] * B[(size_t)k * N + j];
  C[(size_t)i * N + j] = sum;
}

#define TM 64
#define TK 16

__global__ void __launch_bounds__(256) gemm_tiled_v1(int M, int N, int K, const float *A, const float *B, float *C) {
  __shared__ float As[TK][TM + 4]; /* A slice stored transposed: As[k][i] */
  __shared__ float Bs[TK][TM + 4];
  int tx = threadIdx.x % 16, ty = threadIdx.x / 16, i0 = blockIdx.y * TM, j0 = blockIdx.x * TM;
  float acc[4][4] = {};
  for (int k0 = 0; k0 < K; k0 += TK) {
    for (int e = threadIdx.x; e < TM * TK; e += 256) {
      int r = e / TK, c = e % TK; /* A: 64 rows x 16 columns */
      As[c][r] = i0 + r < M && k0 + c < K ? A[(size_t)(i0 + r) * K + k0 + c] : 0.0f;
      int rb = e / TM, cb = e % TM; /* B: 16 rows x 64 columns */
      Bs[rb][cb] = k0 + rb < K && j0 + cb < N ? B[(size_t)(k0 + rb) * N + j0 + cb] : 0.0f;
    }
    __syncthreads();
#pragma unroll
    for (int k = 0; k < TK; k++) {
      float a[4], b[4];
#pragma unroll
      for (int u = 0; u < 4; u++) a[u] = As[k][ty * 4 + u], b[u] = Bs[k][tx * 4 + u];
#pragma unroll
      for (int u = 0; u < 4; u++)
#pragma unroll
        for (int v = 0; v < 4; v++) acc[u][v] += a[u] * b[v];
    }
    __syncthreads();
  }
  for (int u = 0; u < 4; u++)
    for (int v = 0; v < 4; v++) {
      int i = i0 + ty * 4 + u, j = j0 + tx * 4 + v;
      if (i < M && j < N) C[(size_t)i * N + j] = acc[u][v];
    }
}

/* Tiled, version 2: 128 x 128 tiles of C per block of 256 threads, 8 x 8
** outputs per thread, 8-deep slices. Version 1 reads 8 floats from shared
** memory for 16 multiply-adds (about 0.47 of cuBLAS on an H200); here a
** thread reads four float4 (rows ty*4.. and 64 + ty*4.., columns tx*4..
** and 64 + tx*4..: a half-warp's B reads are 16 consecutive float4) for 64
** multiply-adds, and the next slice is fetched into registers while this
** one is multiplied. */
#define T2 128
#define K2 8

__global__ void __launch_bounds__(256, 2) gemm_tiled(int M, int N, int K, const float *A, const float *B, float *C) {
  __shared__ __align__(16) float As[K2][T2 + 4]; /* As[k][i], the A slice transposed */
  __shared__ __align__(16) float Bs[K2][T2 + 4];
  int tx = threadIdx.x % 16, ty = threadIdx.x / 16, i0 = blockIdx.y * T2, j0 = blockIdx.x * T2;
  /* each thread loads 4 elements of each slice: A rows e / 8, column e % 8; B row e / 128, column e % 128 */
  float ra[4], rb[4];
  auto fetch = [&](int k0) {
    for (int t = 0; t < 4; t++) {
      int e = threadIdx.x + 256 * t;
      int r = e / K2, c = e % K2, br = e / T2, bc = e % T2;
      ra[t] = i0 + r < M && k0 + c < K ? A[(size_t)(i0 + r) * K + k0 + c] : 0.0f;
      rb[t] = k0 + br < K && j0 + bc < N ? B[(size_t)(k0 + br) * N + j0 + bc] : 0.0f;
    }
  };
  float acc[8][8];
  for (int u = 0; u < 8; u++)
    for (int v = 0; v < 8; v++) acc[u][v] = 0;
  fetch(0);
  for (int k0 = 0; k0 < K; k0 += K2) {
    for (int t = 0; t < 4; t++) {
      int e = threadIdx.x + 256 * t;
      As[e % K2][e / K2] = ra[t];
      Bs[e / T2][e % T2] = rb[t];
    }
    __syncthreads();
    if (k0 + K2 < K) fetch(k0 + K2);
#pragma unroll
    for (int k = 0; k < K2; k++) {
      float4 a0 = *(const float4 *)&As[k][ty * 4], a1 = *(const float4 *)&As[k][64 + ty * 4];
      float4 b0 = *(const float4 *)&Bs[k][tx * 4], b1 = *(const float4 *)&Bs[k][64 + tx * 4];
      float a[8] = {a0.x, a0.y, a0.z, a0.w, a1.x, a1.y, a1.z, a1.w};
      float b[8] = {b0.x, b0.y, b0.z, b0.w, b1.x, b1.y, b1.z, b1.w};
#pragma unroll
      for (int u = 0; u < 8; u++)
#pragma unroll
        for (int v = 0; v < 8; v++) acc[u][v] += a[u] * b[v];
    }
    __syncthreads();
  }
  for (int u = 0; u < 8; u++) {
    int i = i0 + (u < 4 ? ty * 4 + u : 64 + ty * 4 + u - 4);
    if (i >= M) continue;
    for (int v = 0; v < 8; v++) {
      int j = j0 + (v < 4 ? tx * 4 + v : 64 + tx * 4 + v - 4);
      if (j < N) C[(size_t)i * N + j] = acc[u][v];
    }
  }
}

static int gemm_launch(int impl, int M, int N, int K, const float *A, const float *B, float *C, char *err,
                       size_t errlen) {
  if (impl == SLG_GEMM_NAIVE) {
    dim3 block(16, 16), grid((N + 15) / 16, (M + 15) / 16);
    gemm_naive<<<grid, block>>>(M, N, K, A, B, C);
  } else if (impl == SLG_GEMM_TILED_V1) {
    dim3 grid((N + TM - 1) / TM, (M + TM - 1) / TM);
    gemm_tiled_v1<<<grid, 256>>>(M, N, K, A, B, C);
  } else if (impl == SLG_GEMM_TILED) {
    dim3 grid((N + T2 - 1) / T2, (M + T2 - 1) / T2);
    gemm_tiled<<<grid, 256>>>(M, N, K, A, B, C);
  } else {
    slG_Gemm g = {0, 0, M, N, K, K, N, N, 0, 0, 0, 1};
    if (slG_gemm_run(0, &g, 1.0f, A, B, 0.0f, C, err, errlen) != 0) return -1;
  }
  cudaError_t e = cudaGetLastError();
  if (e != cudaSuccess) {
    snprintf(err, errlen, "GEMM kernel launch: %s", cudaGetErrorString(e));
    return -1;
  }
  return 0;
}

extern "C" int slG_sgemm(int impl, int M, int N, int K, const float *A, const float *B, float *C, char *err,
                         size_t errlen) {
  float *a = NULL, *b = NULL, *c = NULL;
  size_t sa = sizeof(float) * (size_t)M * K, sb = sizeof(float) * (size_t)K * N, sc = sizeof(float) * (size_t)M * N;
  int rc = -1;
  CK(cudaMalloc(&a, sa));
  CK(cudaMalloc(&b, sb));
  CK(cudaMalloc(&c, sc));
  CK(cudaMemcpy(a, A, sa, cudaMemcpyHostToDevice));
  CK(cudaMemcpy(b, B, sb, cudaMemcpyHostToDevice));
  if (gemm_launch(impl, M, N, K, a, b, c, err, errlen) != 0) goto fail;
  CK(cudaDeviceSynchronize());
  CK(cudaMemcpy(C, c, sc, cudaMemcpyDeviceToHost));
  rc = 0;
fail:
  cudaFree(a), cudaFree(b), cudaFree(c);
  return rc;
}

/* ============================================================= attention */

#define D SLG_ATTN_DIM

/* scale, causal mask, softmax and logsumexp of one row of S per block (the naive path) */
__global__ void softmax_rows(float *S, float *L, int n, float scale, int causal) {
  long row = blockIdx.x;
  int q = (int)(row % n);
  float *s = S + row * n;
  __shared__ float red[32];
  float m = -INFINITY;
  for (int k = threadIdx.x; k < n; k += blockDim.x) {
    float v = causal && k > q ? -INFINITY : s[k] * scale;
    s[k] = v;
    m = fmaxf(m, v);
  }
  for (int o = 16; o; o >>= 1) m = fmaxf(m, __shfl_xor_sync(0xffffffff, m, o));
  if (threadIdx.x % 32 == 0) red[threadIdx.x / 32] = m;
  __syncthreads();
  m = -INFINITY;
  for (int w = 0; w < (int)blockDim.x / 32; w++) m = fmaxf(m, red[w]);
  __syncthreads();
  float sum = 0;
  for (int k = threadIdx.x; k < n; k += blockDim.x) sum += s[k] = __expf(s[k] - m);
  for (int o = 16; o; o >>= 1) sum += __shfl_xor_sync(0xffffffff, sum, o);
  if (threadIdx.x % 32 == 0) red[threadIdx.x / 32] = sum;
  __syncthreads();
  sum = 0;
  for (int w = 0; w < (int)blockDim.x / 32; w++) sum += red[w];
  float inv = 1.0f / sum;
  for (int k = threadIdx.x; k < n; k += blockDim.x) s[k] *= inv;
  if (threadIdx.x == 0) L[row] = m + logf(sum);
}

static int attention_naive_launch(int bh, int n, int dim, int causal, const float *q, const float *k, const float *v,
                                  float *o, float *lse, float *S, char *err, size_t errlen) {
  slG_Gemm s = slG_attention_gemm(SLG_ATTN_GEMM_S, bh, n, dim), pv = slG_attention_gemm(SLG_ATTN_GEMM_O, bh, n, dim);
  if (slG_gemm_run(0, &s, 1.0f, q, k, 0.0f, S, err, errlen) != 0) return -1;
  softmax_rows<<<(unsigned)((long)bh * n), 256>>>(S, lse, n, 1.0f / sqrtf((float)dim), causal);
  return slG_gemm_run(0, &pv, 1.0f, S, v, 0.0f, o, err, errlen);
}

/* dS = P o (dP - D) scale, in place over dP, one row per block (the naive backward) */
__global__ void attention_naive_ds(const float *P, float *dP, const float *Dv, int n, float scale) {
  long row = blockIdx.x;
  const float *p = P + row * n;
  float *g = dP + row * n, d = Dv[row];
  for (int k = threadIdx.x; k < n; k += blockDim.x) g[k] = p[k] * (g[k] - d) * scale;
}

/* The naive backward: P from the naive forward (S holds it), then four
** cuBLAS products and one elementwise kernel, every N x N array in global
** memory: dV = P^T dO, dP = dO V^T, dS = P o (dP - D) / sqrt(d), dQ = dS K,
** dK = dS^T Q, with D = rowsum(dO o O). The row-major products are written
** as their column-major transposes, as in attention_naive_launch. */
static int attention_naive_bwd_launch(int bh, int n, int dim, const float *q, const float *k, const float *v,
                                      const float *o, const float *dout, const float *P, float *dP, float *Dv,
                                      float *dq, float *dk, float *dv, char *err, size_t errlen) {
  long rows = (long)bh * n;
  slG_Gemm g[4];
  for (int i = 0; i < 4; i++) g[i] = slG_attention_gemm(SLG_ATTN_GEMM_DV + i, bh, n, dim);
  slG_attention_rowdot(dout, o, Dv, rows);
  if (slG_gemm_run(0, &g[0], 1.0f, P, dout, 0.0f, dv, err, errlen) != 0 ||
      slG_gemm_run(0, &g[1], 1.0f, dout, v, 0.0f, dP, err, errlen) != 0)
    return -1;
  attention_naive_ds<<<(unsigned)rows, 256>>>(P, dP, Dv, n, 1.0f / sqrtf((float)dim));
  if (slG_gemm_run(0, &g[2], 1.0f, dP, k, 0.0f, dq, err, errlen) != 0 ||
      slG_gemm_run(0, &g[3], 1.0f, dP, q, 0.0f, dk, err, errlen) != 0)
    return -1;
  cudaError_t e = cudaGetLastError();
  if (e != cudaSuccess) {
    snprintf(err, errlen, "naive attention backward: %s", cudaGetErrorString(e));
    return -1;
  }
  return 0;
}

static int check_dim(int dim, char *err, size_t errlen) {
  if (dim == D) return 0;
  snprintf(err, errlen, "the CUDA attention kernels are built for dim = %d, got %d", D, dim);
  return -1;
}

/* count float32 device arrays of nx values each as consecutive bf16 arrays in halves: the tensor-core kernels'
** inputs (attention_tc.cu) */
static uint16_t *to_halves(const float *const *src, int count, void *halves, size_t nx) {
  uint16_t *h = (uint16_t *)halves;
  for (int i = 0; i < count; i++) slG_attention_to_bf16(src[i], h + i * nx, nx);
  return h;
}

extern "C" int slG_attention_forward(int impl, int batch, int heads, int n, int dim, int causal, const float *q,
                                     const float *k, const float *v, float *o, float *lse, char *err, size_t errlen) {
  int half = impl == SLG_ATTN_FUSED_BF16 || impl == SLG_ATTN_FA2_BF16;
  if (!half && check_dim(dim, err, errlen)) return -1;
  int bh = batch * heads, rc = -1;
  size_t sx = sizeof(float) * (size_t)bh * n * dim, sl = sizeof(float) * (size_t)bh * n;
  float *dq = NULL, *dk = NULL, *dv = NULL, *dO = NULL, *dl = NULL, *S = NULL;
  CK(cudaMalloc(&dq, sx));
  CK(cudaMalloc(&dk, sx));
  CK(cudaMalloc(&dv, sx));
  CK(cudaMalloc(&dO, sx));
  CK(cudaMalloc(&dl, sl));
  CK(cudaMemcpy(dq, q, sx, cudaMemcpyHostToDevice));
  CK(cudaMemcpy(dk, k, sx, cudaMemcpyHostToDevice));
  CK(cudaMemcpy(dv, v, sx, cudaMemcpyHostToDevice));
  if (impl == SLG_ATTN_NAIVE) {
    CK(cudaMalloc(&S, sizeof(float) * (size_t)bh * n * n));
    if (attention_naive_launch(bh, n, dim, causal, dq, dk, dv, dO, dl, S, err, errlen) != 0) goto fail;
  } else if (half) {
    size_t nx = (size_t)bh * n * dim;
    CK(cudaMalloc(&S, sizeof(uint16_t) * 3 * nx));
    const float *src[3] = {dq, dk, dv};
    uint16_t *h = to_halves(src, 3, S, nx);
    if ((impl == SLG_ATTN_FA2_BF16 ? slG_fa2_forward_bf16 : slG_fused_forward_bf16)(bh, n, dim, causal, h, h + nx,
                                                                                    h + 2 * nx, dO, dl, err, errlen))
      goto fail;
  } else if (slG_fused_forward(impl == SLG_ATTN_FUSED_V1 ? 1 : 2, bh, n, causal, dq, dk, dv, dO, dl, err, errlen) !=
             0) {
    goto fail;
  }
  CK(cudaDeviceSynchronize());
  CK(cudaMemcpy(o, dO, sx, cudaMemcpyDeviceToHost));
  CK(cudaMemcpy(lse, dl, sl, cudaMemcpyDeviceToHost));
  rc = 0;
fail:
  cudaFree(dq), cudaFree(dk), cudaFree(dv), cudaFree(dO), cudaFree(dl), cudaFree(S);
  return rc;
}

/* a tensor-core backward (version 1, or 2 for SLG_ATTN_FA2_BF16) from float32 device arrays: q, k, v, dout rounded into halves (4 nx bf16) first */
static int fused_backward_bf16(int impl, int bh, int n, int dim, int causal, const float *q, const float *k,
                               const float *v, const float *o, const float *dout, const float *lse, float *Dv,
                               void *halves, float *dq, float *dk, float *dv, char *err, size_t errlen) {
  size_t nx = (size_t)bh * n * dim;
  const float *src[4] = {q, k, v, dout};
  uint16_t *h = to_halves(src, 4, halves, nx);
  return (impl == SLG_ATTN_FA2_BF16 ? slG_fa2_backward_bf16 : slG_fused_backward_bf16)(
      bh, n, dim, causal, h, h + nx, h + 2 * nx, h + 3 * nx, o, dout, lse, Dv, dq, dk, dv, err, errlen);
}

extern "C" int slG_attention_backward(int impl, int batch, int heads, int n, int dim, int causal, const float *q,
                                      const float *k, const float *v, const float *o, const float *dout,
                                      const float *lse, float *dq, float *dk, float *dv, char *err, size_t errlen) {
  int half = impl == SLG_ATTN_FUSED_BF16 || impl == SLG_ATTN_FA2_BF16;
  if (!half && check_dim(dim, err, errlen)) return -1;
  int bh = batch * heads, rc = -1;
  size_t sx = sizeof(float) * (size_t)bh * n * dim, sl = sizeof(float) * (size_t)bh * n;
  size_t ss = sizeof(float) * (size_t)bh * n * n;
  float *b[11] = {NULL}, *S = NULL, *dP = NULL;
  for (int i = 0; i < 11; i++) CK(cudaMalloc(&b[i], i >= 9 ? sl : sx));
  CK(cudaMemcpy(b[0], q, sx, cudaMemcpyHostToDevice));
  CK(cudaMemcpy(b[1], k, sx, cudaMemcpyHostToDevice));
  CK(cudaMemcpy(b[2], v, sx, cudaMemcpyHostToDevice));
  CK(cudaMemcpy(b[3], o, sx, cudaMemcpyHostToDevice));
  CK(cudaMemcpy(b[4], dout, sx, cudaMemcpyHostToDevice));
  CK(cudaMemcpy(b[9], lse, sl, cudaMemcpyHostToDevice));
  if (impl == SLG_ATTN_NAIVE) {
    /* P again from the naive forward (its O and L land in scratch, b[8] and b[10]; D overwrites L in b[9]) */
    CK(cudaMalloc(&S, ss));
    CK(cudaMalloc(&dP, ss));
    if (attention_naive_launch(bh, n, dim, causal, b[0], b[1], b[2], b[8], b[10], S, err, errlen) != 0 ||
        attention_naive_bwd_launch(bh, n, dim, b[0], b[1], b[2], b[3], b[4], S, dP, b[9], b[5], b[6], b[7], err,
                                   errlen) != 0)
      goto fail;
  } else if (half) {
    CK(cudaMalloc(&S, sizeof(uint16_t) * 4 * (size_t)bh * n * dim));
    if (fused_backward_bf16(impl, bh, n, dim, causal, b[0], b[1], b[2], b[3], b[4], b[9], b[10], S, b[5], b[6], b[7],
                            err, errlen) != 0)
      goto fail;
  } else if (slG_fused_backward(impl == SLG_ATTN_FUSED_V1 ? 1 : 2, bh, n, causal, b[0], b[1], b[2], b[3], b[4], b[9],
                                b[10], b[5], b[6], b[7], err, errlen) != 0) {
    goto fail;
  }
  CK(cudaDeviceSynchronize());
  CK(cudaMemcpy(dq, b[5], sx, cudaMemcpyDeviceToHost));
  CK(cudaMemcpy(dk, b[6], sx, cudaMemcpyDeviceToHost));
  CK(cudaMemcpy(dv, b[7], sx, cudaMemcpyDeviceToHost));
  rc = 0;
fail:
  for (int i = 0; i < 11; i++) cudaFree(b[i]);
  cudaFree(S), cudaFree(dP);
  return rc;
}

/* ================================================================ MXINT8 */

__device__ inline unsigned short mxint8_bf16(signed char m, unsigned char e) {
  if (e == 0) return 0x0000;
  if (e == 0xFF) return 0x7FC0;
  unsigned short sign = (unsigned short)(((unsigned char)m & 0x80) << 8), ex = (unsigned short)(e << 7);
  int a = abs((int)m);
  unsigned short frac = (unsigned short)((a & 0x3F) << 1);
  float out = __uint_as_float((unsigned)(sign | ex | frac) << 16), bias = __uint_as_float((unsigned)(sign | ex) << 16);
  float y = (a & 0x40) ? out : out - bias;
  return (unsigned short)(__float_as_uint(y) >> 16);
}

/* 16 elements per thread: one 16-byte load of mantissas, two 16-byte stores */
__global__ void mxint8_dequant(const signed char *m, const unsigned char *s, size_t n, int g, unsigned short *out) {
  size_t i = ((size_t)blockIdx.x * blockDim.x + threadIdx.x) * 16;
  if (i >= n) return;
  if (i + 16 <= n && g % 16 == 0 && ((size_t)m % 16) == 0) {
    int4 raw = *(const int4 *)(m + i);
    const signed char *b = (const signed char *)&raw;
    unsigned char e = s[i / g];
    __align__(16) unsigned short r[16];
#pragma unroll
    for (int j = 0; j < 16; j++) r[j] = mxint8_bf16(b[j], e);
    *(int4 *)(out + i) = *(int4 *)r;
    *(int4 *)(out + i + 8) = *(int4 *)(r + 8);
    return;
  }
  for (size_t j = i; j < i + 16 && j < n; j++) out[j] = mxint8_bf16(m[j], s[j / g]);
}

extern "C" int slG_mxint8_dequant_bf16(const int8_t *m, const uint8_t *scales, size_t n, int g, uint16_t *out,
                                       char *err, size_t errlen) {
  signed char *dm = NULL;
  unsigned char *ds = NULL;
  unsigned short *dout = NULL;
  size_t groups = (n + g - 1) / g;
  int rc = -1;
  CK(cudaMalloc(&dm, n + 16));
  CK(cudaMalloc(&ds, groups));
  CK(cudaMalloc(&dout, 2 * n + 32));
  CK(cudaMemcpy(dm, m, n, cudaMemcpyHostToDevice));
  CK(cudaMemcpy(ds, scales, groups, cudaMemcpyHostToDevice));
  mxint8_dequant<<<(unsigned)((n / 16 + 256) / 256), 256>>>(dm, ds, n, g, dout);
  CK(cudaGetLastError());
  CK(cudaDeviceSynchronize());
  CK(cudaMemcpy(out, dout, 2 * n, cudaMemcpyDeviceToHost));
  rc = 0;
fail:
  cudaFree(dm), cudaFree(ds), cudaFree(dout);
  return rc;
}

/* ===================================================== benchmark cases */

typedef struct {
  int kind, n, bh, dim, causal;
  float *x[11];
  void *raw[3];
  size_t bytes; /* device memory of the case: what the `bench` table reports as peak_mib */
  cudaEvent_t start, stop;
} Case;

static char case_error[256]; /* why the last slG_case_run failed */

__global__ void fill_kernel(float *x, size_t n, unsigned seed) {
  size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  unsigned z = (unsigned)i * 2654435761u ^ seed;
  z ^= z >> 13, z *= 0x5bd1e995u, z ^= z >> 15;
  x[i] = (float)(z & 0xFFFF) / 32768.0f - 1.0f;
}

static float *dev_fill(Case *c, size_t n, unsigned seed) {
  float *p = NULL;
  if (cudaMalloc(&p, n * sizeof(float) + 64) != cudaSuccess) return NULL;
  c->bytes += n * sizeof(float) + 64;
  fill_kernel<<<(unsigned)((n + 255) / 256), 256>>>(p, n, seed);
  return p;
}

extern "C" void slG_case_free(void *p) {
  Case *c = (Case *)p;
  if (!c) return;
  for (int i = 0; i < 11; i++) cudaFree(c->x[i]);
  for (int i = 0; i < 3; i++) cudaFree(c->raw[i]);
  if (c->start) cudaEventDestroy(c->start);
  if (c->stop) cudaEventDestroy(c->stop);
  free(c);
}

extern "C" void *slG_case_new(int kind, int size, int batch, int heads, int dim, int causal, char *err, size_t errlen) {
  Case *c = (Case *)calloc(1, sizeof *c);
  c->kind = kind, c->n = size, c->bh = batch * heads, c->dim = dim, c->causal = causal;
  size_t n = (size_t)size, nn = n * n, nx = (size_t)c->bh * n * dim, nl = (size_t)c->bh * n;
  int ok = 1;
  CK(cudaEventCreate(&c->start));
  CK(cudaEventCreate(&c->stop));
  switch (kind) {
    case SLG_GEMM_NAIVE:
    case SLG_GEMM_TILED:
    case SLG_GEMM_CUBLAS:
    case SLG_GEMM_CUBLAS_DIRECT:
    case SLG_GEMM_TILED_V1:
      if ((kind == SLG_GEMM_CUBLAS || kind == SLG_GEMM_CUBLAS_DIRECT) && slG_cublas_open(err, errlen) != 0) goto fail;
      ok = (c->x[0] = dev_fill(c, nn, 1)) && (c->x[1] = dev_fill(c, nn, 2)) && (c->x[2] = dev_fill(c, nn, 0));
      break;
    case SLG_ATTN_NAIVE:
    case SLG_ATTN_FUSED:
    case SLG_ATTN_FUSED_TRAIN:
    case SLG_ATTN_NAIVE_TRAIN:
    case SLG_ATTN_FUSED_V1:
    case SLG_ATTN_FUSED_V1_TRAIN: {
      int naive = kind == SLG_ATTN_NAIVE || kind == SLG_ATTN_NAIVE_TRAIN;
      int train = kind == SLG_ATTN_FUSED_TRAIN || kind == SLG_ATTN_NAIVE_TRAIN || kind == SLG_ATTN_FUSED_V1_TRAIN;
      if (check_dim(dim, err, errlen)) goto fail;
      if (naive && slG_cublas_open(err, errlen) != 0) goto fail;
      /* x: 0-2 Q K V, 3 O, 4 L; 5 dO, 6-8 dQ dK dV, 9 D; 10 and raw scores: the naive version's N x N arrays */
      ok = (c->x[0] = dev_fill(c, nx, 1)) && (c->x[1] = dev_fill(c, nx, 2)) && (c->x[2] = dev_fill(c, nx, 3)) &&
           (c->x[3] = dev_fill(c, nx, 0)) && (c->x[4] = dev_fill(c, nl, 0));
      if (ok && naive) ok = (c->x[10] = dev_fill(c, (size_t)c->bh * nn, 0)) != NULL;
      if (ok && train)
        ok = (c->x[5] = dev_fill(c, nx, 4)) && (c->x[6] = dev_fill(c, nx, 0)) && (c->x[7] = dev_fill(c, nx, 0)) &&
             (c->x[8] = dev_fill(c, nx, 0)) && (c->x[9] = dev_fill(c, nl, 0));
      if (ok && naive && train) ok = (c->raw[0] = dev_fill(c, (size_t)c->bh * nn, 0)) != NULL;
      break;
    }
    case SLG_ATTN_FUSED_BF16:
    case SLG_ATTN_FUSED_BF16_TRAIN:
    case SLG_ATTN_FA2_BF16:
    case SLG_ATTN_FA2_BF16_TRAIN: {
      int v2 = kind == SLG_ATTN_FA2_BF16 || kind == SLG_ATTN_FA2_BF16_TRAIN;
      if (v2 ? !slG_fa2_dim_ok(dim) : dim != 64 && dim != 128) {
        snprintf(err, errlen, "the bf16 tensor-core attention%s is built for dim = %s, got %d",
                 v2 ? " (version 2)" : "", v2 ? "64, 80 and 128" : "64 and 128", dim);
        goto fail;
      }
      /* x: 0-2 Q K V float32, 3 O, 4 L, 5 dO, 6-8 dQ dK dV, 9 D; raw[0]: Q K V dO rounded once (not timed) */
      ok = (c->x[0] = dev_fill(c, nx, 1)) && (c->x[1] = dev_fill(c, nx, 2)) && (c->x[2] = dev_fill(c, nx, 3)) &&
           (c->x[3] = dev_fill(c, nx, 0)) && (c->x[4] = dev_fill(c, nl, 0)) && (c->x[5] = dev_fill(c, nx, 4));
      if (ok && (kind == SLG_ATTN_FUSED_BF16_TRAIN || kind == SLG_ATTN_FA2_BF16_TRAIN))
        ok = (c->x[6] = dev_fill(c, nx, 0)) && (c->x[7] = dev_fill(c, nx, 0)) && (c->x[8] = dev_fill(c, nx, 0)) &&
             (c->x[9] = dev_fill(c, nl, 0));
      if (ok && cudaMalloc(&c->raw[0], sizeof(uint16_t) * 4 * nx) != cudaSuccess) ok = 0;
      if (ok) {
        c->bytes += sizeof(uint16_t) * 4 * nx;
        const float *src[4] = {c->x[0], c->x[1], c->x[2], c->x[5]};
        to_halves(src, 4, c->raw[0], nx);
      }
      break;
    }
    case SLG_GEMM_CUBLAS_BF16:
    case SLG_LINEAR_BF16:
      if (slG_cublas_open(err, errlen) != 0) goto fail;
      /* x: 0 A (or x), 1 B (or W), 2 C (or y), 3 the bias; raw[0]: the bf16 copies of A and B */
      ok = (c->x[0] = dev_fill(c, nn, 1)) && (c->x[1] = dev_fill(c, nn, 2)) && (c->x[2] = dev_fill(c, nn, 0)) &&
           (c->x[3] = dev_fill(c, n, 3));
      if (ok && cudaMalloc(&c->raw[0], sizeof(uint16_t) * 2 * nn) != cudaSuccess) ok = 0;
      if (ok) {
        c->bytes += sizeof(uint16_t) * 2 * nn;
        if (kind == SLG_GEMM_CUBLAS_BF16) { /* rounded once, not timed */
          const float *src[2] = {c->x[0], c->x[1]};
          to_halves(src, 2, c->raw[0], nn);
        }
      }
      break;
    case SLG_MXINT8_DEQUANT:
      CK(cudaMalloc(&c->raw[0], n + 16));
      CK(cudaMalloc(&c->raw[1], n / 32 + 1));
      CK(cudaMalloc(&c->raw[2], 2 * n + 32));
      c->bytes = n + 16 + n / 32 + 1 + 2 * n + 32;
      CK(cudaMemset(c->raw[0], 37, n));
      CK(cudaMemset(c->raw[1], 120, n / 32 + 1));
      break;
    case SLG_COPY: ok = (c->x[0] = dev_fill(c, n, 1)) && (c->x[1] = dev_fill(c, n, 0)); break;
    default: snprintf(err, errlen, "unknown GPU kernel %d", kind); goto fail;
  }
  if (!ok) {
    snprintf(err, errlen, "could not allocate the device buffers (%s)", cudaGetErrorString(cudaGetLastError()));
    goto fail;
  }
  CK(cudaDeviceSynchronize());
  return c;
fail:
  slG_case_free(c);
  return NULL;
}

extern "C" double slG_case_run(void *p) {
  Case *c = (Case *)p;
  char err[256];
  size_t errlen = sizeof err;
  int n = c->n, rc = 0;
  float ms = -1;
  err[0] = 0;
  cudaDeviceSynchronize();
  cudaEventRecord(c->start);
  switch (c->kind) {
    case SLG_GEMM_NAIVE:
    case SLG_GEMM_TILED:
    case SLG_GEMM_CUBLAS:
    case SLG_GEMM_TILED_V1: rc = gemm_launch(c->kind, n, n, n, c->x[0], c->x[1], c->x[2], err, errlen); break;
    case SLG_GEMM_CUBLAS_DIRECT: {
      if (slG_cublas_direct(n, c->x[0], c->x[1], c->x[2]) != 0) rc = -1, snprintf(err, errlen, "cublasSgemm failed");
      break;
    }
    case SLG_ATTN_NAIVE:
    case SLG_ATTN_NAIVE_TRAIN:
      rc = attention_naive_launch(c->bh, n, c->dim, c->causal, c->x[0], c->x[1], c->x[2], c->x[3], c->x[4], c->x[10],
                                  err, errlen);
      if (rc == 0 && c->kind == SLG_ATTN_NAIVE_TRAIN)
        rc = attention_naive_bwd_launch(c->bh, n, c->dim, c->x[0], c->x[1], c->x[2], c->x[3], c->x[5], c->x[10],
                                        (float *)c->raw[0], c->x[9], c->x[6], c->x[7], c->x[8], err, errlen);
      break;
    case SLG_ATTN_FUSED:
    case SLG_ATTN_FUSED_V1:
    case SLG_ATTN_FUSED_TRAIN:
    case SLG_ATTN_FUSED_V1_TRAIN: {
      int version = c->kind == SLG_ATTN_FUSED_V1 || c->kind == SLG_ATTN_FUSED_V1_TRAIN ? 1 : 2;
      rc = slG_fused_forward(version, c->bh, n, c->causal, c->x[0], c->x[1], c->x[2], c->x[3], c->x[4], err, errlen);
      if (rc == 0 && (c->kind == SLG_ATTN_FUSED_TRAIN || c->kind == SLG_ATTN_FUSED_V1_TRAIN))
        rc = slG_fused_backward(version, c->bh, n, c->causal, c->x[0], c->x[1], c->x[2], c->x[3], c->x[5], c->x[4],
                                c->x[9], c->x[6], c->x[7], c->x[8], err, errlen);
      break;
    }
    case SLG_ATTN_FUSED_BF16:
    case SLG_ATTN_FUSED_BF16_TRAIN: {
      const uint16_t *h = (const uint16_t *)c->raw[0];
      size_t nx = (size_t)c->bh * n * c->dim;
      rc = slG_fused_forward_bf16(c->bh, n, c->dim, c->causal, h, h + nx, h + 2 * nx, c->x[3], c->x[4], err, errlen);
      if (rc == 0 && c->kind == SLG_ATTN_FUSED_BF16_TRAIN)
        rc = slG_fused_backward_bf16(c->bh, n, c->dim, c->causal, h, h + nx, h + 2 * nx, h + 3 * nx, c->x[3], c->x[5],
                                     c->x[4], c->x[9], c->x[6], c->x[7], c->x[8], err, errlen);
      break;
    }
    case SLG_ATTN_FA2_BF16:
    case SLG_ATTN_FA2_BF16_TRAIN: {
      const uint16_t *h = (const uint16_t *)c->raw[0];
      size_t nx = (size_t)c->bh * n * c->dim;
      rc = slG_fa2_forward_bf16(c->bh, n, c->dim, c->causal, h, h + nx, h + 2 * nx, c->x[3], c->x[4], err, errlen);
      if (rc == 0 && c->kind == SLG_ATTN_FA2_BF16_TRAIN)
        rc = slG_fa2_backward_bf16(c->bh, n, c->dim, c->causal, h, h + nx, h + 2 * nx, h + 3 * nx, c->x[3], c->x[5],
                                   c->x[4], c->x[9], c->x[6], c->x[7], c->x[8], err, errlen);
      break;
    }
    case SLG_GEMM_CUBLAS_BF16: {
      const uint16_t *h = (const uint16_t *)c->raw[0];
      slG_Gemm g = {0, 0, n, n, n, n, n, n, 0, 0, 0, 1};
      rc = slG_gemm_run(SLG_BF16, &g, 1.0f, h, h + (size_t)n * n, 0.0f, c->x[2], err, errlen);
      break;
    }
    case SLG_LINEAR_BF16: { /* the graph's 16-bit linear forward: its operands' copies made in the call */
      uint16_t *h = (uint16_t *)c->raw[0];
      size_t nn = (size_t)n * n;
      rc = slG_to_half(SLG_BF16, c->x[0], h, nn, err, errlen);
      if (rc == 0) rc = slG_to_half(SLG_BF16, c->x[1], h + nn, nn, err, errlen);
      if (rc == 0) rc = slG_linear_forward(SLG_BF16, h, h + nn, c->x[3], c->x[2], (size_t)n, n, n, err, errlen);
      break;
    }
    case SLG_MXINT8_DEQUANT:
      mxint8_dequant<<<(unsigned)((n / 16 + 256) / 256), 256>>>(
          (const signed char *)c->raw[0], (const unsigned char *)c->raw[1], (size_t)n, 32, (unsigned short *)c->raw[2]);
      break;
    case SLG_COPY: cudaMemcpy(c->x[1], c->x[0], (size_t)n * sizeof(float), cudaMemcpyDeviceToDevice); break;
  }
  cudaEventRecord(c->stop);
  cudaError_t e = cudaEventSynchronize(c->stop);
  if (e == cudaSuccess) e = cudaGetLastError();
  /* a failed launch takes no time: report it instead of a time */
  if (rc != 0 || e != cudaSuccess) {
    snprintf(case_error, sizeof case_error, "%s", rc != 0 ? err : cudaGetErrorString(e));
    cudaGetLastError();
    return NAN;
  }
  cudaEventElapsedTime(&ms, c->start, c->stop);
  return ms / 1e3;
}

extern "C" const char *slG_case_error(void) { return case_error; }
extern "C" size_t slG_case_bytes(void *p) { return p ? ((Case *)p)->bytes : 0; }
extern "C" void *slG_case_buffer(void *p, int i) {
  Case *c = (Case *)p;
  if (!c || i < 0 || i > 13) return NULL;
  return i < 11 ? (void *)c->x[i] : c->raw[i - 11];
}

extern "C" int slG_machine(double *sgemm_gflops, double *copy_gbs) {
  char err[256];
  *sgemm_gflops = *copy_gbs = 0;
  const int n = 4096, words = 64 << 20;
  void *g = slG_case_new(SLG_GEMM_CUBLAS, n, 1, 1, 64, 0, err, sizeof err);
  void *cp = slG_case_new(SLG_COPY, words, 1, 1, 64, 0, err, sizeof err);
  double best_g = 1e30, best_c = 1e30;
  for (int r = 0; r < 5; r++) { /* fmin drops a NaN (a failed run) */
    if (g) best_g = fmin(best_g, slG_case_run(g));
    if (cp) best_c = fmin(best_c, slG_case_run(cp));
  }
  if (g) *sgemm_gflops = 2.0 * n * n * (double)n / best_g / 1e9;
  if (cp) *copy_gbs = 2.0 * 4 * words / best_c / 1e9;
  slG_case_free(g);
  slG_case_free(cp);
  return g && cp ? 0 : -1;
}

void slG_fill_kernels(slG_Backend *b) {
  b->sgemm = slG_sgemm;
  b->attention_forward = slG_attention_forward;
  b->attention_backward = slG_attention_backward;
  b->mxint8_dequant_bf16 = slG_mxint8_dequant_bf16;
  b->case_new = slG_case_new;
  b->case_run = slG_case_run;
  b->case_error = slG_case_error;
  b->case_bytes = slG_case_bytes;
  b->case_buffer = slG_case_buffer;
  b->case_free = slG_case_free;
  b->machine = slG_machine;
}
