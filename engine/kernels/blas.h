/*
** blas.h - OpenBLAS's kernel choice for this CPU (blas.c).
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

#endif
