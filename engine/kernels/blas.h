/*
** blas.h - OpenBLAS, loaded on first use, and its kernel choice for this
** CPU (blas.c).
*/
#ifndef SYSLAB_BLAS_H
#define SYSLAB_BLAS_H

/* once, before the first product: replaces a fallback to the SSE3 kernels
** on CPUs newer than the library knows (no-op when OPENBLAS_CORETYPE is set) */
void slK_blas_init(void);
/* OpenBLAS's own thread count: 1 after slK_blas_init (the engine's team
** splits products, gemm.c); set to more only around a product that should
** run on OpenBLAS's threads, from one thread at a time */
void slK_blas_threads(int n);
/* the kernels in use, e.g. "SkylakeX" */
const char *slK_blas_core(void);
/* cblas_sgemm, row-major, on the calling thread (and OpenBLAS's own threads
** when slK_blas_threads asked for them); loads OpenBLAS the first time */
void slK_blas_sgemm(int trans_a, int trans_b, int M, int N, int K, float alpha, const float *A, int lda, const float *B,
                    int ldb, float beta, float *C, int ldc);

#endif
