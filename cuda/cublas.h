/*
** cublas.h - what kernels.cu and ops.cu ask of cublas.cu: cuBLAS loaded
** (once; -1 with why when it cannot be), every product as a row-major
** request, and the benchmark's directly written call. CUDA C++ only.
*/
#ifndef SYSLAB_CUDA_CUBLAS_H
#define SYSLAB_CUDA_CUBLAS_H

#include "cublas_args.h"

extern "C" int slG_cublas_open(char *err, size_t errlen);
/* A row-major product on device pointers (cublas_args.h's request:
** C = alpha op(A) op(B) + beta C over its batch), the operands float32
** (format 0, cuBLAS's default math mode: no TF32) or the 16-bit bits of
** SLG_BF16 / SLG_FP16 (the tensor cores, float32 sums); C is float32. A
** request cuBLAS would refuse is refused here with the rule it breaks. */
extern "C" int slG_gemm_run(int format, const slG_Gemm *g, float alpha, const void *A, const void *B, float beta,
                            float *C, char *err, size_t errlen);
extern "C" int slG_cublas_direct(int n, const float *A, const float *B, float *C);

#endif
