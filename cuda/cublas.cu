/*
** cublas.cu - cuBLAS, loaded at run time, and every product the engine
** asks of it.
**
** libcublas is opened with dlopen on first use (CUDA 13 ships it only as a
** shared library), so that the module loads, and the program runs on the
** CPU, where there is none. The engine's products are row-major requests
** (cublas_args.h); slG_gemm_run maps each to cuBLAS's column-major call
** and checks it against cuBLAS's rules first, so that the graph's
** operators (through slG_gemm_batched, the table's gemm_batched), ops.cu's
** linear layer and the naive attention of kernels.cu all go through the one
** mapping that tests/unit/test_gpu_args.c checks on the CPU.
*/
#include "cublas.h"
#include "module.h"

#include <dlfcn.h>
#include <stdio.h>

typedef int (*CublasCreate)(void **);
typedef int (*CublasSgemm)(void *, int, int, int, int, int, const float *, const float *, int, const float *, int,
                           const float *, float *, int);
typedef int (*CublasSgemmBatched)(void *, int, int, int, int, int, const float *, const float *, int, long long,
                                  const float *, int, long long, const float *, float *, int, long long, int);
/* cublasGemmStridedBatchedEx: the data types and the compute type are ints (cudaDataType, cublasComputeType_t) */
typedef int (*CublasGemmBatchedEx)(void *, int, int, int, int, int, const void *, const void *, int, int, long long,
                                   const void *, int, int, long long, const void *, void *, int, int, long long, int,
                                   int, int);

static struct {
  int tried;
  void *lib, *handle;
  CublasSgemm sgemm;
  CublasSgemmBatched batched;
  CublasGemmBatchedEx batched_ex;
  char why[256];
} blas;

enum { OP_N = 0, OP_T = 1 }; /* cublasOperation_t */

extern "C" int slG_cublas_open(char *err, size_t errlen) {
  if (!blas.tried) {
    blas.tried = 1;
    const char *names[] = {"libcublas.so.13", "libcublas.so.12", "libcublas.so", NULL};
    for (int i = 0; names[i] && !blas.lib; i++) blas.lib = dlopen(names[i], RTLD_NOW | RTLD_LOCAL);
    if (!blas.lib) {
      snprintf(blas.why, sizeof blas.why, "cuBLAS could not be loaded (libcublas.so.13): %s", dlerror());
    } else {
      CublasCreate create = (CublasCreate)dlsym(blas.lib, "cublasCreate_v2");
      blas.sgemm = (CublasSgemm)dlsym(blas.lib, "cublasSgemm_v2");
      blas.batched = (CublasSgemmBatched)dlsym(blas.lib, "cublasSgemmStridedBatched");
      blas.batched_ex = (CublasGemmBatchedEx)dlsym(blas.lib, "cublasGemmStridedBatchedEx");
      if (!create || !blas.sgemm || !blas.batched || !blas.batched_ex || create(&blas.handle) != 0) {
        snprintf(blas.why, sizeof blas.why, "cuBLAS was loaded but could not be initialised");
        blas.handle = NULL;
      }
    }
  }
  if (!blas.handle) snprintf(err, errlen, "%s", blas.why);
  return blas.handle ? 0 : -1;
}

/* library_types.h and cublas_api.h's numbers, which the types above carry as ints */
enum { R_32F = 0, R_16F = 2, R_16BF = 14, COMPUTE_32F = 68, GEMM_DEFAULT = -1 };

static const char *format_name(int format) { return format == 0 ? "float32" : format == SLG_BF16 ? "bf16" : "fp16"; }

/* A row-major request on device pointers, through cublas_args.h's mapping
** and checks: float32 operands (format 0) by cublasSgemm (one product) or
** cublasSgemmStridedBatched, 16-bit ones (SLG_BF16, SLG_FP16) by
** cublasGemmStridedBatchedEx on the tensor cores with float32 sums and C. */
extern "C" int slG_gemm_run(int format, const slG_Gemm *g, float alpha, const void *A, const void *B, float beta,
                            float *C, char *err, size_t errlen) {
  if (format != 0 && format != SLG_BF16 && format != SLG_FP16) {
    snprintf(err, errlen, "GEMM: unknown operand format %d (allowed: float32, bf16, fp16)", format);
    return -1;
  }
  slG_Cublas c = slG_cublas_of(g);
  if (slG_cublas_check(&c, err, errlen) != 0) return -1;
  if (c.m == 0 || c.n == 0 || c.batch == 0) return 0;
  if (slG_cublas_open(err, errlen) != 0) return -1;
  int rc;
  if (format == 0 && c.batch == 1)
    rc = blas.sgemm(blas.handle, c.transa, c.transb, c.m, c.n, c.k, &alpha, (const float *)B, c.lda, (const float *)A,
                    c.ldb, &beta, C, c.ldc);
  else if (format == 0)
    rc = blas.batched(blas.handle, c.transa, c.transb, c.m, c.n, c.k, &alpha, (const float *)B, c.lda, c.stride_a,
                      (const float *)A, c.ldb, c.stride_b, &beta, C, c.ldc, c.stride_c, c.batch);
  else {
    int type = format == SLG_BF16 ? R_16BF : R_16F;
    rc = blas.batched_ex(blas.handle, c.transa, c.transb, c.m, c.n, c.k, &alpha, B, type, c.lda, c.stride_a, A, type,
                         c.ldb, c.stride_b, &beta, C, R_32F, c.ldc, c.stride_c, c.batch, COMPUTE_32F, GEMM_DEFAULT);
  }
  if (rc != 0) {
    snprintf(err, errlen, "cuBLAS %s GEMM failed (status %d) on %d x %d x %d, batch %d", format_name(format), rc, g->M,
             g->N, g->K, g->batch);
    return -1;
  }
  return 0;
}

extern "C" int slG_gemm_batched(int format, int trans_a, int trans_b, int M, int N, int K, float alpha, const void *A,
                                int lda, long long stride_a, const void *B, int ldb, long long stride_b, float beta,
                                float *C, int ldc, long long stride_c, int batch, char *err, size_t errlen) {
  slG_Gemm g = {trans_a, trans_b, M, N, K, lda, ldb, ldc, stride_a, stride_b, stride_c, batch};
  return slG_gemm_run(format, &g, alpha, A, B, beta, C, err, errlen);
}

/* the benchmark's row "cublasSgemm called directly": C = A B of n x n, written out as its column-major call */
extern "C" int slG_cublas_direct(int n, const float *A, const float *B, float *C) {
  float one = 1.0f, zero = 0.0f;
  return blas.sgemm(blas.handle, OP_N, OP_N, n, n, n, &one, B, n, A, n, &zero, C, n);
}

void slG_fill_cublas(slG_Backend *b) { b->gemm_batched = slG_gemm_batched; }
