/*
** blas.c - loading OpenBLAS, and choosing its kernels for this CPU.
**
** OpenBLAS is loaded when the first product needs it (dlopen), not linked:
** loading it costs more than the rest of a kernel's start together (12,000
** symbol relocations of its per-CPU tables, libgfortran, its buffers, and
** a thread per core that spins a while before it sleeps, competing with
** the kernel's own threads for a small machine's cores), and neither a
** kernel's first reply nor most commands of the command line need it. It is
** loaded from the file the build linked against (SYSLAB_OPENBLAS, an
** absolute path: never a library found in the current folder).
**
** Debian 12's OpenBLAS (0.3.21, built with DYNAMIC_ARCH) picks its kernels
** from the CPU model number when it loads. Models newer than it knows
** (this machine: family 6, model 207) fall back to "Prescott", the SSE3
** kernels, which run sgemm about 6x slower than the AVX-512 ones the CPU
** can use. OPENBLAS_CORETYPE overrides the choice but is read only when
** the library loads. So, once, before the first product: if the user set
** no OPENBLAS_CORETYPE and OpenBLAS fell back to Prescott on a CPU with
** AVX-512 (F, BW, DQ, VL) or AVX2 and FMA, set it and run OpenBLAS's own
** dynamic initialisation again. The choice is visible in slK_blas_core()
** and recorded with every benchmark.
*/
#include <cblas.h>
#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "blas.h"
#include "kernels.h"

static struct {
  void (*sgemm)(enum CBLAS_ORDER, enum CBLAS_TRANSPOSE, enum CBLAS_TRANSPOSE, blasint, blasint, blasint, float,
                const float *, blasint, const float *, blasint, float, float *, blasint);
  char *(*corename)(void);
  void (*set_num_threads)(int);
  void (*dynamic_init)(void);
  void (*dynamic_quit)(void);
} ob;

/* a missing or different OpenBLAS is an installation fault no product can
** work around: said once, with the path, and the program stops */
static void load(void) {
  void *h = dlopen(SYSLAB_OPENBLAS, RTLD_NOW | RTLD_LOCAL);
  if (h) {
    *(void **)&ob.sgemm = dlsym(h, "cblas_sgemm");
    *(void **)&ob.corename = dlsym(h, "openblas_get_corename");
    *(void **)&ob.set_num_threads = dlsym(h, "openblas_set_num_threads");
    *(void **)&ob.dynamic_init = dlsym(h, "gotoblas_dynamic_init");
    *(void **)&ob.dynamic_quit = dlsym(h, "gotoblas_dynamic_quit");
  }
  if (!h || !ob.sgemm || !ob.corename || !ob.set_num_threads || !ob.dynamic_init || !ob.dynamic_quit) {
    fprintf(stderr, "syslab: cannot load OpenBLAS from %s: %s\n", SYSLAB_OPENBLAS,
            h ? "a function is missing" : dlerror());
    abort();
  }
}

static pthread_once_t once = PTHREAD_ONCE_INIT;

static void select_core(void) {
  if (getenv("OPENBLAS_CORETYPE") || strcmp(ob.corename(), "Prescott") != 0) return;
  __builtin_cpu_init();
  const char *core = NULL;
  if (__builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") && __builtin_cpu_supports("avx512dq") &&
      __builtin_cpu_supports("avx512vl"))
    core = "SkylakeX";
  else if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma")) core = "Haswell";
  if (!core) return;
  setenv("OPENBLAS_CORETYPE", core, 0);
  ob.dynamic_quit();
  ob.dynamic_init();
}

/* The team runs the products' pieces (gemm.c), so OpenBLAS computes each on
** the thread that calls it; its own threads are used only when a benchmark
** asks for them (slK_blas_threads), and sleep otherwise. */
static void init(void) {
  load();
  select_core();
  ob.set_num_threads(1);
}

void slK_blas_init(void) { pthread_once(&once, init); }

void slK_blas_threads(int n) {
  slK_blas_init();
  ob.set_num_threads(n);
}

const char *slK_blas_core(void) {
  slK_blas_init();
  return ob.corename();
}

void slK_blas_sgemm(int trans_a, int trans_b, int M, int N, int K, float alpha, const float *A, int lda, const float *B,
                    int ldb, float beta, float *C, int ldc) {
  slK_blas_init();
  ob.sgemm(CblasRowMajor, trans_a ? CblasTrans : CblasNoTrans, trans_b ? CblasTrans : CblasNoTrans, M, N, K, alpha, A,
           lda, B, ldb, beta, C, ldc);
}
