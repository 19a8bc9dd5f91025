/*
** machine.c - what this machine can do, measured once per process: the
** roofs of the roofline and the anchors of every "fraction of peak".
**
** CPU: the model name (/proc/cpuinfo), the vector extensions found at run
** time, cores, the sgemm rate at n = 1024 (best of several runs) of OpenBLAS
** on all threads (its own) and on one, and of the blocked
** kernel; the peak is the faster of the two, because OpenBLAS may not know
** a new CPU and fall back to generic kernels (OpenBLAS 0.3.21 runs this
** machine's Xeon, family 6 model 207, as "Prescott", at a fraction of its
** rate). Then memcpy's rate on 64 MiB, and a triad's
** (a = b + s c) on all threads. GPU, when one exists: its description, the
** cuBLAS sgemm rate and the device-to-device copy rate (the CUDA module's
** table, kernels/device.h: asking is what loads it).
*/
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>


#include "blas.h"
#include "device.h"
#include "kernels.h"

static slK_Machine machine;
static int measured;

static void cpu_name(char *out, size_t size) {
  snprintf(out, size, "unknown CPU");
  FILE *f = fopen("/proc/cpuinfo", "r");
  if (!f) return;
  char line[512];
  while (fgets(line, sizeof line, f))
    if (strncmp(line, "model name", 10) == 0) {
      char *colon = strchr(line, ':');
      if (colon) {
        colon += 1 + (colon[1] == ' ');
        colon[strcspn(colon, "\n")] = 0;
        snprintf(out, size, "%s", colon);
      }
      break;
    }
  fclose(f);
}

static void cpu_features(char *out, size_t size) {
  out[0] = 0;
#if defined(__x86_64__) && defined(__GNUC__)
  __builtin_cpu_init();
  struct {
    const char *name;
    int has;
  } f[] = {
    {"sse4.2", __builtin_cpu_supports("sse4.2")},       {"avx", __builtin_cpu_supports("avx")},
    {"avx2", __builtin_cpu_supports("avx2")},           {"fma", __builtin_cpu_supports("fma")},
    {"avx512f", __builtin_cpu_supports("avx512f")},     {"avx512bw", __builtin_cpu_supports("avx512bw")},
    {"avx512dq", __builtin_cpu_supports("avx512dq")},   {"avx512vl", __builtin_cpu_supports("avx512vl")},
    {"avx512vnni", __builtin_cpu_supports("avx512vnni")}, {"avx512bf16", __builtin_cpu_supports("avx512bf16")},
  };
  size_t used = 0;
  for (size_t i = 0; i < sizeof f / sizeof f[0]; i++)
    if (f[i].has) used += (size_t)snprintf(out + used, used < size ? size - used : 0, "%s%s", used ? " " : "", f[i].name);
#else
  snprintf(out, size, "(not an x86-64 build)");
#endif
}

/* best of six products at n = 1024: OpenBLAS on its own threads (all of
** them) or on one, or the blocked kernel on the team */
static double sgemm_rate(slK_GemmImpl impl, int threads_one) {
  const int n = 1024;
  size_t nn = (size_t)n * n;
  float *a = slK_alloc(nn * 4), *b = slK_alloc(nn * 4), *c = slK_alloc(nn * 4);
  if (!a || !b || !c) return 0;
  for (size_t i = 0; i < nn; i++) a[i] = (float)(i % 17) * 0.01f, b[i] = (float)(i % 13) * 0.02f;
  slK_blas_init();   /* OpenBLAS on one thread until a product asks for more (blas.c) */
  double best = 1e30;
  for (int r = 0; r < 6 && !sl_interrupted(); r++) {
    double t0 = slK_now(NULL);
    if (threads_one) slK_blas_sgemm(0, 0, n, n, n, 1.0f, a, n, b, n, 0.0f, c, n);
    else slK_sgemm_with(impl, SLK_N, SLK_N, n, n, n, 1.0f, a, n, b, n, 0.0f, c, n);
    double t = slK_now(NULL) - t0;
    if (t < best) best = t;
  }
  slK_free(a), slK_free(b), slK_free(c);
  return 2.0 * n * n * (double)n / best / 1e9;
}

static double memcpy_rate(void) {
  size_t bytes = 64u << 20;
  char *a = slK_alloc(bytes), *b = slK_alloc(bytes);
  if (!a || !b) return 0;
  memset(a, 1, bytes);
  memset(b, 2, bytes);
  double best = 1e30;
  for (int r = 0; r < 5; r++) {
    double t0 = slK_now(NULL);
    memcpy(b, a, bytes);
    double t = slK_now(NULL) - t0;
    if (t < best) best = t;
  }
  slK_free(a), slK_free(b);
  return 2.0 * bytes / best / 1e9;   /* read and written */
}

typedef struct {
  float *a, *b, *c;
  size_t n;
  int parts;
} Triad;

static void triad_part(void *ctx, int part, int worker) {
  Triad *t = ctx;
  size_t lo = t->n * part / t->parts, hi = t->n * (part + 1) / t->parts;
  for (size_t i = lo; i < hi; i++) t->a[i] = t->b[i] + 3.0f * t->c[i];
  (void)worker;
}

static double triad_rate(void) {
  size_t n = 16u << 20;
  Triad t = {slK_alloc(n * 4), slK_alloc(n * 4), slK_alloc(n * 4), n, slK_threads()};
  if (!t.a || !t.b || !t.c) return 0;
  for (size_t i = 0; i < n; i++) t.a[i] = 0, t.b[i] = 1, t.c[i] = 2;
  double best = 1e30;
  for (int r = 0; r < 5; r++) {
    double t0 = slK_now(NULL);
    slK_parallel(t.parts, t.parts, triad_part, &t);
    double s = slK_now(NULL) - t0;
    if (s < best) best = s;
  }
  slK_free(t.a), slK_free(t.b), slK_free(t.c);
  return 3.0 * 4 * n / best / 1e9;
}

const slK_Machine *slK_machine(void) {
  if (measured) return &machine;
  slK_Machine *m = &machine;
  cpu_name(m->cpu, sizeof m->cpu);
  cpu_features(m->features, sizeof m->features);
  long cores = sysconf(_SC_NPROCESSORS_ONLN);
  m->cores = cores > 0 ? (int)cores : 1;
  m->threads = slK_threads();
  m->mem_total = (size_t)sysconf(_SC_PHYS_PAGES) * (size_t)sysconf(_SC_PAGESIZE);
  /* the measurements take a second or more: an interrupt between them leaves
  ** the roofs unmeasured (measured next time), and the caller, seeing
  ** sl_interrupted(), discards what it got */
  m->openblas_gflops = sgemm_rate(SLK_GEMM_OPENBLAS, 0);
  if (sl_interrupted()) return m;
  m->blocked_gflops = sgemm_rate(SLK_GEMM_BLOCKED, 0);
  if (sl_interrupted()) return m;
  m->sgemm_gflops = m->openblas_gflops > m->blocked_gflops ? m->openblas_gflops : m->blocked_gflops;
  m->sgemm1_gflops = sgemm_rate(SLK_GEMM_OPENBLAS, 1);
  if (sl_interrupted()) return m;
  m->memcpy_gbs = memcpy_rate();
  m->stream_gbs = triad_rate();
  if (sl_interrupted()) return m;
  m->gpus = slK_dev_count();
  snprintf(m->gpu, sizeof m->gpu, "%s", slK_dev_why());
  if (m->gpus > 0) slK_gpu()->machine(&m->gpu_sgemm_gflops, &m->gpu_copy_gbs);
  measured = 1;
  return m;
}
