/*
** cublas.h - what kernels.cu asks of cublas.cu besides gpu.h's products:
** cuBLAS loaded (once; -1 with why when it cannot be), and the benchmark's
** directly written call. CUDA C++ only.
*/
#ifndef SYSLAB_CUDA_CUBLAS_H
#define SYSLAB_CUDA_CUBLAS_H

extern "C" int slG_cublas_open(char *err, size_t errlen);
extern "C" int slG_cublas_direct(int n, const float *A, const float *B, float *C);

#endif
