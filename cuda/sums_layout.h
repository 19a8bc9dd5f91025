/*
** sums_layout.h - who sums what in the GPU's column sums (ops.cu's
** column_sums, ops_rows.cu's norm_param_grads): the gradients of biases,
** gains and shifts, in the order of gpu.h's SLG_SUM_ROWS.
**
** Plain C that CUDA C++ compiles as constexpr functions of host and device,
** so that the kernels and tests/unit/test_gpu_args.c, which runs them
** block by block and warp by warp on the CPU, share the arithmetic.
**
** A block of SLG_SUM_WARPS x 32 threads owns tiles of 32 columns (a grid
** stride over the tiles); lane x is column 32 tile + x. In round k the
** block's warps take chunks SLG_SUM_WARPS k + w of the column's rows, each
** warp summing its chunk from zero in row order; then warp 0 adds the
** round's partials in chunk order to the running sums it started from the
** gradients' values. So the rows are summed SLG_SUM_WARPS chunks abreast,
** and the result is reduce.c's, bit for bit.
*/
#ifndef SYSLAB_SUMS_LAYOUT_H
#define SYSLAB_SUMS_LAYOUT_H

#include <stddef.h>

#include "gpu.h"

#ifdef __CUDACC__
#define SLG_SUM_FN static __host__ __device__ constexpr inline
#else
#define SLG_SUM_FN static inline
#endif

enum { SLG_SUM_WARPS = 8, SLG_SUM_LANES = 32 };

SLG_SUM_FN size_t slG_sum_chunks(size_t rows) { return (rows + SLG_SUM_ROWS - 1) / SLG_SUM_ROWS; }
SLG_SUM_FN size_t slG_sum_tiles(size_t cols) { return (cols + SLG_SUM_LANES - 1) / SLG_SUM_LANES; }
/* the chunk warp w sums in round k, and its rows [first, end) */
SLG_SUM_FN size_t slG_sum_chunk(size_t round, int w) { return round * SLG_SUM_WARPS + (size_t)w; }
SLG_SUM_FN size_t slG_sum_first(size_t chunk) { return chunk * SLG_SUM_ROWS; }
SLG_SUM_FN size_t slG_sum_end(size_t chunk, size_t rows) {
  return (chunk + 1) * SLG_SUM_ROWS < rows ? (chunk + 1) * SLG_SUM_ROWS : rows;
}

#endif
