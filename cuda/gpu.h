/*
** gpu.h - what the engine asks of the GPU, whether or not one exists.
**
** The CPU build links gpu_none.c, which always answers "no device". A build
** with nvcc links the CUDA sources of cuda/ instead (device.cu, kernels.cu),
** which find a device at run time; with no driver or no device they answer
** the same as gpu_none.c, so one binary runs everywhere and every caller
** keeps a CPU path. Only engine/kernels/ includes this file. Arrays passed
** to the slG_ compute calls are host arrays: each call copies in, runs,
** synchronises and copies out, which is what the tests need; the benchmark
** cases keep their operands on the device and time with CUDA events.
*/
#ifndef SYSLAB_GPU_H
#define SYSLAB_GPU_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* number of usable CUDA devices; 0 without a GPU or a CUDA build */
int slG_device_count(void);
/* one line: device name and memory, or why there is none */
const char *slG_describe(void);
/* 1 if this binary was built with CUDA kernels */
int slG_built_with_cuda(void);

/* versions, in the order of the benchmark table of engine/kernels/bench.c */
enum {
  SLG_GEMM_NAIVE, SLG_GEMM_TILED, SLG_GEMM_CUBLAS, SLG_GEMM_CUBLAS_DIRECT,
  SLG_ATTN_NAIVE, SLG_ATTN_FUSED, SLG_ATTN_FUSED_TRAIN, SLG_MXINT8_DEQUANT, SLG_COPY, SLG_ATTN_NAIVE_TRAIN
};

/* C = A B, row-major, M x K times K x N; 0, or -1 with a message in err */
int slG_sgemm(int impl, int M, int N, int K, const float *A, const float *B, float *C, char *err, size_t errlen);
/* contiguous batch x heads x n x dim; impl SLG_ATTN_NAIVE or SLG_ATTN_FUSED */
int slG_attention_forward(int impl, int batch, int heads, int n, int dim, int causal, const float *q, const float *k,
                          const float *v, float *o, float *lse, char *err, size_t errlen);
/* dq, dk, dv are overwritten; impl SLG_ATTN_FUSED (from O and L) or SLG_ATTN_NAIVE (P recomputed by the
** naive forward, then the N x N arrays through global memory) */
int slG_attention_backward(int impl, int batch, int heads, int n, int dim, int causal, const float *q, const float *k,
                           const float *v, const float *o, const float *dout, const float *lse, float *dq, float *dk,
                           float *dv, char *err, size_t errlen);
int slG_mxint8_dequant_bf16(const int8_t *m, const uint8_t *scales, size_t n, int g, uint16_t *out, char *err,
                            size_t errlen);

/* a benchmark case on the device: operands allocated and filled once */
void *slG_case_new(int kind, int size, int batch, int heads, int dim, int causal, char *err, size_t errlen);
/* runs once; seconds between CUDA events around the kernel, after synchronising;
** NaN if a launch failed, with the reason in slG_case_error() */
double slG_case_run(void *c);
const char *slG_case_error(void);
/* device memory the case holds (operands and the naive version's N x N arrays) */
size_t slG_case_bytes(void *c);
void slG_case_free(void *c);

/* cuBLAS sgemm at n = 4096 and device-to-device copy rate; 0, or -1 */
int slG_machine(double *sgemm_gflops, double *copy_gbs);

#ifdef __cplusplus
}
#endif

#endif
