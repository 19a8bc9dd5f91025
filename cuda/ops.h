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

/* the column sums' blocks and grid (sums_layout.h): a stride over the tiles
** of 32 columns covers any width */
static const dim3 SUM_BLOCK(SLG_SUM_LANES, SLG_SUM_WARPS);

static inline unsigned sum_grid(size_t cols) {
  size_t tiles = slG_sum_tiles(cols);
  return (unsigned)(tiles == 0 ? 1 : tiles < MAX_BLOCKS ? tiles : MAX_BLOCKS);
}

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
