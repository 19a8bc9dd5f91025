/*
** kernels.h - compute on plain arrays: the one door from the graph (and
** every layer above it) to the CPU's kernels and to the GPU in cuda/.
**
** Callers pass raw float arrays and sizes, never tensors or models, so a
** kernel can be tested and timed on its own. Each operation goes through a
** dispatch function that picks an implementation (OpenBLAS today); cuda/ is
** reached only from this folder, so the layers above never see whether a
** GPU exists except through the questions asked here.
*/
#ifndef SYSLAB_KERNELS_H
#define SYSLAB_KERNELS_H

#include <stddef.h>

#include "syslab.h"

/* transposition flags for slK_sgemm */
enum { SLK_N = 0, SLK_T = 1 };

/* C = alpha * op(A) * op(B) + beta * C, float32, row-major; op(A) is M x K,
** op(B) is K x N, and lda/ldb/ldc are row strides as in BLAS. */
void slK_sgemm(int trans_a, int trans_b, int M, int N, int K, float alpha, const float *A, int lda, const float *B,
               int ldb, float beta, float *C, int ldc);

/* number of usable CUDA devices (0 without a GPU or a CUDA build) */
int slK_gpu_count(void);
/* one line: the GPU's name and memory, or why there is none */
const char *slK_gpu_describe(void);

#endif
