/*
** ops.h - what the operator kernels (ops.cu, ops_rows.cu, ops_train.cu)
** share: launch shapes, the report of a failed launch, block reductions,
** and float arithmetic that the compiler may not fuse. CUDA C++ only; the
** engine sees these kernels through the table of gpu.h.
**
** Arithmetic. nvcc contracts a * b + c into one fused multiply-add, rounded
** once; the CPU build (C11, -ffp-contract=off) rounds the product and the
** sum apart. Where an operator is meant to give the CPU's bits (ReLU, the
** residual add, dropout, GELU's forward, the optimisers, the column sums of
** the parameter gradients) its kernel computes with add_rn, mul_rn, ...
** (__fadd_rn and friends, which are never contracted), in the CPU's order.
** Division and square root are IEEE-rounded in this build (no
** --use_fast_math), as on the CPU. expf is not the CPU's expf (CUDA's is
** within 2 ulp), so what goes through an exponential is close, not equal.
*/
#ifndef SYSLAB_CUDA_OPS_H
#define SYSLAB_CUDA_OPS_H

#include <cuda_runtime.h>
#include <math.h>
#include <stdio.h>

#include "sums_layout.h"

/* Every kernel runs blocks of 256 threads (a multiple of 32: the block
** reductions assume whole warps). Elementwise kernels loop over their items
** with a grid stride and row kernels over their rows with a block stride,
** so a grid of at most 65535 blocks covers any size, and a size that is
** not a multiple of a block leaves the last threads idle. */
static const int THREADS = 256;
static const size_t MAX_BLOCKS = 65535;

static inline unsigned grid_for(size_t items) {
  size_t b = (items + THREADS - 1) / THREADS;
  return (unsigned)(b == 0 ? 1 : b < MAX_BLOCKS ? b : MAX_BLOCKS);
}

static inline unsigned grid_rows(size_t rows) {
  return (unsigned)(rows == 0 ? 1 : rows < MAX_BLOCKS ? rows : MAX_BLOCKS);
}

/* the column sums' blocks, and their grid: a block per tile of 32 columns
** (sums_layout.h), as grid_rows gives a block per row */
static const dim3 SUM_BLOCK(SLG_SUM_LANES, SLG_SUM_WARPS);
static inline unsigned sum_grid(size_t cols) { return grid_rows(slG_sum_tiles(cols)); }

#define EACH_ITEM(i, n) \
  for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < (n); i += (size_t)gridDim.x * blockDim.x)
#define EACH_ROW(r, rows) for (size_t r = blockIdx.x; r < (rows); r += gridDim.x)
#define EACH_COLUMN(j, d) for (int j = threadIdx.x; j < (d); j += blockDim.x)

/* 0 when the last launch was accepted; else -1 with "what: CUDA's reason" */
static inline int launched(const char *what, char *err, size_t errlen) {
  cudaError_t e = cudaGetLastError();
  if (e == cudaSuccess) return 0;
  snprintf(err, errlen, "%s: %s", what, cudaGetErrorString(e));
  return -1;
}

static inline int refuse(char *err, size_t errlen, const char *what) {
  snprintf(err, errlen, "%s", what);
  return -1;
}

/* rounded once each, never fused */
__device__ __forceinline__ float add_rn(float a, float b) { return __fadd_rn(a, b); }
__device__ __forceinline__ float sub_rn(float a, float b) { return __fsub_rn(a, b); }
__device__ __forceinline__ float mul_rn(float a, float b) { return __fmul_rn(a, b); }
__device__ __forceinline__ float div_rn(float a, float b) { return __fdiv_rn(a, b); }

/* NS sums down the columns at once, in gpu.h's chunked order, so that they
** have reduce.c's bits (sums_layout.h says which warp sums which rows): f.term(r,
** j, t) gives row r's NS terms of column j; y[s] gets sum s added (NULL: not
** kept). For blocks of SUM_BLOCK threads, on a grid of any size. */
template <int NS, class F>
__device__ void chunked_column_sums(const F &f, size_t rows, size_t cols, float *const *y) {
  __shared__ float part[NS][SLG_SUM_WARPS][SLG_SUM_LANES];
  const int w = threadIdx.y, l = threadIdx.x;
  const size_t chunks = slG_sum_chunks(rows);
  for (size_t tile = blockIdx.x; tile < slG_sum_tiles(cols); tile += gridDim.x) {
    const size_t j = tile * SLG_SUM_LANES + l;
    const bool mine = w == 0 && j < cols; /* warp 0 holds the running sums */
    float acc[NS];
#pragma unroll
    for (int s = 0; s < NS; s++) acc[s] = mine && y[s] ? y[s][j] : 0.0f;
    for (size_t k = 0; slG_sum_chunk(k, 0) < chunks; k++) {
      const size_t c = slG_sum_chunk(k, w);
      float p[NS] = {}, t[NS];
      if (j < cols && c < chunks)
        for (size_t r = slG_sum_first(c); r < slG_sum_end(c, rows); r++) {
          f.term(r, j, t);
#pragma unroll
          for (int s = 0; s < NS; s++) p[s] = add_rn(p[s], t[s]);
        }
#pragma unroll
      for (int s = 0; s < NS; s++) part[s][w][l] = p[s];
      __syncthreads();
      if (w == 0)
        for (int v = 0; v < SLG_SUM_WARPS && slG_sum_chunk(k, v) < chunks; v++)
#pragma unroll
          for (int s = 0; s < NS; s++) acc[s] = add_rn(acc[s], part[s][v][l]);
      __syncthreads();
    }
#pragma unroll
    for (int s = 0; s < NS; s++)
      if (mine && y[s]) y[s][j] = acc[s];
  }
}

/* The sum of v over the block, the same value in every thread: a warp
** shuffle tree, then each thread adds the warps' sums in warp order. red is
** 32 doubles of shared memory; the first barrier lets a previous call's
** readers finish before it is written again. */
__device__ __forceinline__ double block_sum(double v, double *red) {
  for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
  __syncthreads();
  if (threadIdx.x % 32 == 0) red[threadIdx.x / 32] = v;
  __syncthreads();
  double s = 0;
  for (int w = 0; w < (int)blockDim.x / 32; w++) s += red[w];
  return s;
}

__device__ __forceinline__ float block_max(float v, float *red) {
  for (int o = 16; o > 0; o >>= 1) v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, o));
  __syncthreads();
  if (threadIdx.x % 32 == 0) red[threadIdx.x / 32] = v;
  __syncthreads();
  float m = -INFINITY;
  for (int w = 0; w < (int)blockDim.x / 32; w++) m = fmaxf(m, red[w]);
  return m;
}

#endif
