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
**
** The roofs are also measured on demand (slK_roofs_measure): a figure taken
** once at the start of a session and a kernel timed minutes later under
** another load put the kernel above its roof, so `bench` measures them
** beside each kernel it times.
*/
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "blas.h"
#include "device.h"
#include "kernels.h"
#include "syslab.h"

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
      {"sse4.2", __builtin_cpu_supports("sse4.2")},
      {"avx", __builtin_cpu_supports("avx")},
      {"avx2", __builtin_cpu_supports("avx2")},
      {"fma", __builtin_cpu_supports("fma")},
      {"avx512f", __builtin_cpu_supports("avx512f")},
      {"avx512bw", __builtin_cpu_supports("avx512bw")},
      {"avx512dq", __builtin_cpu_supports("avx512dq")},
      {"avx512vl", __builtin_cpu_supports("avx512vl")},
      {"avx512vnni", __builtin_cpu_supports("avx512vnni")},
      {"avx512bf16", __builtin_cpu_supports("avx512bf16")},
  };
  size_t used = 0;
  for (size_t i = 0; i < sizeof f / sizeof f[0]; i++)
    if (f[i].has)
      used += (size_t)snprintf(out + used, used < size ? size - used : 0, "%s%s", used ? " " : "", f[i].name);
#else
  snprintf(out, size, "(not an x86-64 build)");
#endif
}

/* The roofs' own operands, allocated once per meter: three n x n matrices
** for the products and three arrays of 16 Mi floats (far beyond the caches)
** for the triad. A meter measures the roofs as often as its caller asks, so
** that a benchmark can measure them beside each kernel it times. */
enum { ROOF_N = 1024 };

struct slK_RoofMeter {
  float *a, *b, *c;
  float *ta, *tb, *tc;
  size_t tn;
};

typedef struct {
  float *a, *b, *c;
  size_t n;
  int parts;
} Triad;

slK_RoofMeter *slK_roofs_begin(void) {
  slK_RoofMeter *m = calloc(1, sizeof *m);
  size_t nn = (size_t)ROOF_N * ROOF_N;
  m->tn = 16u << 20;
  m->a = slK_alloc(nn * 4), m->b = slK_alloc(nn * 4), m->c = slK_alloc(nn * 4);
  m->ta = slK_alloc(m->tn * 4), m->tb = slK_alloc(m->tn * 4), m->tc = slK_alloc(m->tn * 4);
  if (!m->a || !m->b || !m->c || !m->ta || !m->tb || !m->tc) {
    slK_roofs_end(m);
    return NULL;
  }
  for (size_t i = 0; i < nn; i++) m->a[i] = (float)(i % 17) * 0.01f, m->b[i] = (float)(i % 13) * 0.02f;
  for (size_t i = 0; i < m->tn; i++) m->ta[i] = 0, m->tb[i] = 1, m->tc[i] = 2;
  return m;
}

void slK_roofs_end(slK_RoofMeter *m) {
  if (!m) return;
  slK_free(m->a), slK_free(m->b), slK_free(m->c);
  slK_free(m->ta), slK_free(m->tb), slK_free(m->tc);
  free(m);
}

/* best of `reps` products at n = 1024: OpenBLAS on its own threads (all of
** them) or on one, or the blocked kernel on the team */
static double sgemm_rate(slK_RoofMeter *m, slK_GemmImpl impl, int threads_one, int reps) {
  const int n = ROOF_N;
  slK_blas_init(); /* OpenBLAS on one thread until a product asks for more (blas.c) */
  double best = 1e30;
  for (int r = 0; r < reps && !sl_interrupted(); r++) {
    double t0 = slK_now(NULL);
    if (threads_one) slK_blas_sgemm(0, 0, n, n, n, 1.0f, m->a, n, m->b, n, 0.0f, m->c, n);
    else slK_sgemm_with(impl, SLK_N, SLK_N, n, n, n, 1.0f, m->a, n, m->b, n, 0.0f, m->c, n);
    double t = slK_now(NULL) - t0;
    if (t < best) best = t;
  }
  return 2.0 * n * n * (double)n / best / 1e9;
}

static double memcpy_rate(void) {
  size_t bytes = 64u << 20;
  char *a = slK_alloc(bytes), *b = slK_alloc(bytes);
  if (!a || !b) {
    slK_free(a), slK_free(b);
    return 0;
  }
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
  return 2.0 * bytes / best / 1e9; /* read and written */
}

static void triad_part(void *ctx, int part, int worker) {
  Triad *t = ctx;
  size_t lo = t->n * part / t->parts, hi = t->n * (part + 1) / t->parts;
  for (size_t i = lo; i < hi; i++) t->a[i] = t->b[i] + 3.0f * t->c[i];
  (void)worker;
}

static double triad_rate(slK_RoofMeter *m, int reps) {
  Triad t = {m->ta, m->tb, m->tc, m->tn, slK_threads()};
  double best = 1e30;
  for (int r = 0; r < reps; r++) {
    double t0 = slK_now(NULL);
    slK_parallel(t.parts, t.parts, triad_part, &t);
    double s = slK_now(NULL) - t0;
    if (s < best) best = s;
  }
  return 3.0 * 4 * t.n / best / 1e9;
}

/* The roofs now: the faster of OpenBLAS and the blocked kernel at n = 1024,
** and the triad's bandwidth, each the best of `reps` runs on this process's
** threads. A benchmark calls it before and after each kernel it times, so
** that roof and kernel share the machine's load of the moment. */
void slK_roofs_measure(slK_RoofMeter *m, int reps, slK_Roofs *out) {
  double o = sgemm_rate(m, SLK_GEMM_OPENBLAS, 0, reps), b = sgemm_rate(m, SLK_GEMM_BLOCKED, 0, reps);
  out->sgemm_gflops = o > b ? o : b;
  out->stream_gbs = triad_rate(m, reps);
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
  slK_RoofMeter *meter = slK_roofs_begin();
  if (meter) {
    m->openblas_gflops = sgemm_rate(meter, SLK_GEMM_OPENBLAS, 0, 6);
    if (!sl_interrupted()) m->blocked_gflops = sgemm_rate(meter, SLK_GEMM_BLOCKED, 0, 6);
    if (!sl_interrupted()) m->sgemm1_gflops = sgemm_rate(meter, SLK_GEMM_OPENBLAS, 1, 6);
    if (!sl_interrupted()) m->stream_gbs = triad_rate(meter, 5);
    slK_roofs_end(meter);
  }
  if (sl_interrupted()) return m;
  m->sgemm_gflops = m->openblas_gflops > m->blocked_gflops ? m->openblas_gflops : m->blocked_gflops;
  m->memcpy_gbs = memcpy_rate();
  if (sl_interrupted()) return m;
  m->gpus = slK_dev_count();
  snprintf(m->gpu, sizeof m->gpu, "%s", slK_dev_why());
  if (m->gpus > 0) slK_gpu()->machine(&m->gpu_sgemm_gflops, &m->gpu_copy_gbs);
  measured = 1;
  return m;
}
