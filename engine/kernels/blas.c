/*
** blas.c - choosing OpenBLAS's kernels for this CPU.
**
** Debian 12's OpenBLAS (0.3.21, built with DYNAMIC_ARCH) picks its kernels
** from the CPU model number when it loads. Models newer than it knows
** (this machine: family 6, model 207) fall back to "Prescott", the SSE3
** kernels, which run sgemm about 6x slower than the AVX-512 ones the CPU
** can use. OPENBLAS_CORETYPE overrides the choice but is read only when
** the library loads, before main. So, once, before the first product: if
** the user set no OPENBLAS_CORETYPE and OpenBLAS fell back to Prescott on a
** CPU with AVX-512 (F, BW, DQ, VL) or AVX2 and FMA, set it and run
** OpenBLAS's own dynamic initialisation again. The choice is visible in
** slK_blas_core() and recorded with every benchmark.
*/
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "kernels.h"

char *openblas_get_corename(void);
void openblas_set_num_threads(int n);
void gotoblas_dynamic_init(void);
void gotoblas_dynamic_quit(void);

static pthread_once_t once = PTHREAD_ONCE_INIT;

static void select_core(void) {
  if (getenv("OPENBLAS_CORETYPE") || strcmp(openblas_get_corename(), "Prescott") != 0) return;
  __builtin_cpu_init();
  const char *core = NULL;
  if (__builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") && __builtin_cpu_supports("avx512dq") &&
      __builtin_cpu_supports("avx512vl"))
    core = "SkylakeX";
  else if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma"))
    core = "Haswell";
  if (!core) return;
  setenv("OPENBLAS_CORETYPE", core, 0);
  gotoblas_dynamic_quit();
  gotoblas_dynamic_init();
}

/* The team runs the products' pieces (gemm.c), so OpenBLAS computes each on
** the thread that calls it; its own threads are used only when a benchmark
** asks for them (slK_blas_threads), and sleep otherwise. */
static void init(void) {
  select_core();
  openblas_set_num_threads(1);
}

void slK_blas_init(void) { pthread_once(&once, init); }

void slK_blas_threads(int n) {
  slK_blas_init();
  openblas_set_num_threads(n);
}

const char *slK_blas_core(void) {
  slK_blas_init();
  return openblas_get_corename();
}
