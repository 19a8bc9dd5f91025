/*
** bench_kernels.c - the kernels side by side with their anchors, in one run,
** through the same harness as the `bench` command (engine/kernels/bench.c).
**
**   cmake --build build --target bench_kernels
**   build/bench_kernels gemm [n=1024]        blocked, bf16, fp16 vs OpenBLAS; slK_sgemm vs OpenBLAS's threads
**   build/bench_kernels attention [L ...]    fused vs naive, forward and forward+backward; fused bf16 vs float32
**   build/bench_kernels mxint8 [MiB=64]      decode vs memcpy; fused vs unfused linear
**   build/bench_kernels csv [L ...]          attention rows as CSV (bench/torch_attention.py)
**   build/bench_kernels shapes               the image transformer's products, float32 against bf16
**
** The load average is printed first: figures taken above about 0.7 on a
** shared machine are not worth recording. Every side of a comparison runs
** on the same threads, by the wall clock: SYSLAB_THREADS (2 by default
** here, the cores) for the kernels' thread team, and OpenBLAS's own rows
** on as many of its threads; memcpy, the anchor of the decoders, is cut into as many parts as
** they are. Attention uses batch 1, 8 heads, head dim 64.
** SYSLAB_BENCH_CLOCK=cpu times by the process's CPU time (meaningful with
** SYSLAB_THREADS=1): other jobs on a shared machine then change it little.
*/
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "kernels/blas.h"
#include "kernels/gemm_half.h"
#include "kernels/kernels.h"

/* SYSLAB_BENCH_CLOCK=cpu: the process's CPU time instead of the wall clock, for
** single-threaded comparisons on a machine other jobs keep busy */
static double cpu_clock(void *ud) {
  struct timespec ts;
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
  (void)ud;
  return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

static slK_Clock clock_of(void) {
  const char *c = getenv("SYSLAB_BENCH_CLOCK");
  return c && strcmp(c, "cpu") == 0 ? cpu_clock : slK_now;
}

static slK_Result time_case(const char *name, int size, const slK_Attn *shape, int reps) {
  slK_Result r;
  char err[512];
  if (slK_bench_run(slK_bench_find(name), size, shape, 1, reps, clock_of(), NULL, &r, err, sizeof err) != 0) {
    fprintf(stderr, "%s at %d: %s\n", name, size, err);
    exit(1);
  }
  return r;
}

static double gflops(const slK_Result *r) { return r->flops / r->t.median / 1e9; }

/* Both sides of a ratio use as many cores: the engine's products run as
** OpenBLAS pieces on the team, and the OpenBLAS rows ask OpenBLAS for as
** many threads of its own for each call (kernels/gemm.c). */
static void same_threads(void) {
  printf("threads: %d (kernels' team; OpenBLAS rows on as many of its own); clock: %s\n", slK_team_size(),
         clock_of() == slK_now ? "wall" : "process CPU time");
}

static void load(void) {
  double avg[3] = {0};
  if (getloadavg(avg, 3) > 0)
    printf("load average %.2f %.2f %.2f%s\n", avg[0], avg[1], avg[2], avg[0] > 0.7 ? "  (busy: do not record)" : "");
}

/* the bf16 peak: vdpbf16ps does 64 FLOPs per cycle and core (Zen 4, Sapphire Rapids): two float32 FMA rates */
#define BF16_CORE_GFLOPS 234.0

static void gemm(int n) {
  const slK_Machine *m = slK_machine();
  printf("GEMM n = %d, %d threads, inner loops %s, bf16 %s; machine: OpenBLAS %.1f, blocked %.1f GFLOP/s at n = 1024\n",
         n, slK_threads(), slK_isa(), slK_half_native(SLK_BF16) ? "vdpbf16ps" : "emulated", m->openblas_gflops,
         m->blocked_gflops);
  /* interleaved rounds, so that a change of load falls on every version alike; the best median of each */
  const char *names[5] = {"gemm_blocked", "gemm_openblas", "gemm_bf16", "gemm_fp16", "gemm_bf16_emulated"};
  slK_Result r[5];
  int reps = n >= 4096 ? 3 : n >= 2048 ? 6 : 15;
  for (int round = 0; round < 3; round++)
    for (int k = 0; k < 5; k++) {
      slK_Result x = time_case(names[k], n, NULL, reps);
      if (round == 0 || x.t.median < r[k].t.median) r[k] = x;
    }
  printf("%-20s %10s %10s %10s\n", "version", "median ms", "GFLOP/s", "/ OpenBLAS");
  for (int k = 0; k < 5; k++)
    printf("%-20s %10.3f %10.1f %10.2f\n", names[k] + 5, r[k].t.median * 1e3, gflops(&r[k]),
           gflops(&r[k]) / gflops(&r[1]));
  slK_Result b = r[0], o = r[1];
  printf("blocked / OpenBLAS: %.2f of its rate (target at least 0.90)\n", gflops(&b) / gflops(&o));
  printf("bf16 / OpenBLAS float32: %.2f (target at least 1.70); %.0f%% of the bf16 peak (%d x %.0f GFLOP/s)\n",
         gflops(&r[2]) / gflops(&o), 100 * gflops(&r[2]) / (slK_threads() * BF16_CORE_GFLOPS), slK_threads(),
         BF16_CORE_GFLOPS);
  /* the graph's entry point (OpenBLAS pieces on the team) against OpenBLAS on
  ** its own threads, short calls and long, alternating the two (the long
  ** ones up to n = 1024: larger sizes would take minutes) */
  int sizes[3] = {32, 128, n}, ns = n <= 1024 ? 3 : 2;
  for (int s = 0; s < ns; s++) {
    int dreps = sizes[s] <= 128 ? 2000 : 30;
    double d = 0, direct = 0;
    for (int round = 0; round < 5; round++) {
      slK_Result a = time_case("gemm_dispatch", sizes[s], NULL, dreps),
                 c = time_case("gemm_openblas", sizes[s], NULL, dreps);
      d += a.t.median, direct += c.t.median;
    }
    printf("slK_sgemm at n = %4d: %.4f ms against %.4f ms on OpenBLAS's threads: %+.2f%% (target under 2%%)\n",
           sizes[s], d / 5 * 1e3, direct / 5 * 1e3, 100 * (d / direct - 1));
  }
}

static void attention(int argc, char **argv, int csv) {
  const slK_Machine *m = slK_machine();
  slK_Attn shape;
  slK_attention_contiguous(&shape, 1, 8, 0, 0, 64, 0);
  int sizes[16] = {1024, 2048, 4096}, ns = 3;
  if (argc > 0) {
    ns = 0;
    for (int i = 0; i < argc && i < 16; i++) sizes[ns++] = atoi(argv[i]);
  }
  if (csv) {
    /* the blocked product at n = 1024 by the same clock: one anchor of the peak */
    slK_Result g = time_case("gemm_blocked", 1024, NULL, 10);
    printf("impl,pass,L,median_s,min_s,gflops,of_peak,peak_bytes\n");
    printf("blocked,gemm,1024,%.6f,%.6f,%.2f,0,%zu\n", g.t.median, g.t.min, gflops(&g), g.peak_bytes);
  } else
    printf(
        "attention, batch 1, 8 heads, dim 64, %d threads; sgemm peak %.1f GFLOP/s (n = 1024: OpenBLAS %.1f, blocked %.1f)\n",
        slK_threads(), m->sgemm_gflops, m->openblas_gflops, m->blocked_gflops);
  const char *names[6] = {"attention_fused",       "attention_naive",      "attention_fused_train",
                          "attention_naive_train", "attention_fused_bf16", "attention_fused_bf16_train"};
  for (int s = 0; s < ns; s++) {
    slK_Result r[6];
    int nk = csv ? 4 : 6, rounds = csv ? 1 : 3;
    for (int round = 0; round < rounds; round++) /* interleaved rounds, the best median of each */
      for (int k = 0; k < nk; k++) {
        slK_Result x = time_case(names[k], sizes[s], &shape, sizes[s] >= 4096 ? 3 : 5);
        if (round == 0 || x.t.median < r[k].t.median) r[k] = x;
      }
    for (int k = 0; k < nk; k++) {
      if (csv)
        printf("%s,%s,%d,%.6f,%.6f,%.2f,%.4f,%zu\n", k % 2 ? "naive" : "fused", k < 2 ? "forward" : "forward+backward",
               sizes[s], r[k].t.median, r[k].t.min, gflops(&r[k]), gflops(&r[k]) / m->sgemm_gflops, r[k].peak_bytes);
    }
    if (!csv)
      for (int p = 0; p < 2; p++)
        printf(
            "L = %5d %-17s fused %9.2f ms (%5.1f GFLOP/s, %4.0f%% of peak, %7.1f MiB)  naive %9.2f ms (%5.1f GFLOP/s, "
            "%7.1f MiB)  naive/fused %.2fx\n",
            sizes[s], p ? "forward+backward" : "forward", r[2 * p].t.median * 1e3, gflops(&r[2 * p]),
            100 * gflops(&r[2 * p]) / m->sgemm_gflops, r[2 * p].peak_bytes / 1048576.0, r[2 * p + 1].t.median * 1e3,
            gflops(&r[2 * p + 1]), r[2 * p + 1].peak_bytes / 1048576.0, r[2 * p + 1].t.median / r[2 * p].t.median);
    if (!csv) /* bf16 products (slK_Attn.format), against the float32 fused version of the same run */
      for (int p = 0; p < 2; p++)
        printf("L = %5d %-17s fused bf16 %9.2f ms (%5.1f GFLOP/s, %7.1f MiB)  fused float32 / bf16 %.2fx\n", sizes[s],
               p ? "forward+backward" : "forward", r[4 + p].t.median * 1e3, gflops(&r[4 + p]),
               r[4 + p].peak_bytes / 1048576.0, r[2 * p].t.median / r[4 + p].t.median);
  }
}

static void mxint8(int mib) {
  int n = mib * 1048576 / 4; /* float32 outputs of `mib` MiB */
  slK_Result c = time_case("memcpy", n, NULL, 10), f = time_case("mxint8_dequant_f32", n, NULL, 10),
             h = time_case("mxint8_dequant_bf16", n, NULL, 10), r = time_case("mxint8_dequant_ref", n, NULL, 5);
  double copy = c.bytes / c.t.median / 1e9;
  printf("MXINT8 decode of %d elements (%d MiB of float32), inner loops %s\n", n, mib, slK_isa());
  printf("%-22s %10s %10s %10s\n", "kernel", "median ms", "GB/s", "of memcpy");
  slK_Result *all[4] = {&c, &f, &h, &r};
  const char *names[4] = {"memcpy", "dequant to float32", "dequant to bfloat16", "one at a time (ldexpf)"};
  for (int i = 0; i < 4; i++) {
    double gbs = all[i]->bytes / all[i]->t.median / 1e9;
    printf("%-22s %10.3f %10.2f %9.0f%%\n", names[i], all[i]->t.median * 1e3, gbs, 100 * gbs / copy);
  }
  printf("decode / memcpy bandwidth: float32 %.2f, bfloat16 %.2f (target at least 0.60)\n",
         f.bytes / f.t.median / 1e9 / copy, h.bytes / h.t.median / 1e9 / copy);
  for (int size = 256; size <= 4096; size *= 2) {
    slK_Result a, b;
    for (int round = 0; round < 3; round++) { /* interleaved, the best median of each */
      slK_Result x = time_case("mxint8_linear_fused", size, NULL, 10),
                 y = time_case("mxint8_linear_unfused", size, NULL, 10);
      if (round == 0 || x.t.median < a.t.median) a = x;
      if (round == 0 || y.t.median < b.t.median) b = y;
    }
    printf("MXINT8 linear 128 x %d x %d: fused %.3f ms (%.1f GFLOP/s, peak %.2f MiB), unfused %.3f ms (%.1f GFLOP/s, "
           "peak %.2f MiB), unfused / fused %.2fx; weights %.2f MiB packed against %.2f MiB float32\n",
           size, size, a.t.median * 1e3, gflops(&a), a.peak_bytes / 1048576.0, b.t.median * 1e3, gflops(&b),
           b.peak_bytes / 1048576.0, b.t.median / a.t.median, size * (double)size * (1 + 1.0 / 32) / 1048576,
           4.0 * size * size / 1048576);
  }
}

/* The products of one training step of the labs' image transformer (width
** 64, MLP 128, 2,176 tokens: batch 128 x 17), slK_sgemm (the graph's float32
** entry point) against slK_gemm_half in bf16 on the same operands, best of
** `reps` calls each, interleaved: the forward's four products of a layer,
** the input gradients, the weight gradients (K = tokens). */
static double best_of(int half, const int *s, const float *A, const float *B, float *C, int reps) {
  double best = 1e30;
  int lda = s[3] ? s[0] : s[2], ldb = s[4] ? s[2] : s[1];
  for (int r = 0; r < reps; r++) {
    double t0 = slK_now(NULL);
    if (half) slK_gemm_half(SLK_BF16, s[3], s[4], s[0], s[1], s[2], 1, A, lda, B, NULL, ldb, 0, C, s[1]);
    else slK_sgemm(s[3], s[4], s[0], s[1], s[2], 1, A, lda, B, ldb, 0, C, s[1]);
    double t = slK_now(NULL) - t0;
    if (t < best) best = t;
  }
  return best;
}

static void shapes(void) {
  slK_blas_init();
  static const int S[][5] = {{2176, 192, 64, 0, 1}, {2176, 64, 64, 0, 1}, {2176, 128, 64, 0, 1}, {2176, 64, 128, 0, 1},
                             {2176, 64, 192, 0, 0}, {2176, 64, 64, 0, 0}, {2176, 64, 128, 0, 0}, {2176, 128, 64, 0, 0},
                             {192, 64, 2176, 1, 0}, {64, 64, 2176, 1, 0}, {128, 64, 2176, 1, 0}, {64, 128, 2176, 1, 0}};
  size_t n = 2176 * 256;
  float *A = slK_alloc(n * 4), *B = slK_alloc(n * 4), *C = slK_alloc(n * 4);
  for (size_t i = 0; i < n; i++)
    A[i] = (float)((i * 7919) % 1000) / 1000 - 0.5f, B[i] = (float)((i * 104729) % 997) / 997 - 0.5f;
  printf("image transformer's products (M x N x K, op(A), op(B)): slK_sgemm float32 against bf16, best of 200\n");
  printf("%5s %4s %5s %3s %3s %10s %10s %8s\n", "M", "N", "K", "tA", "tB", "fp32 us", "bf16 us", "speed-up");
  double t32 = 0, t16 = 0;
  for (size_t k = 0; k < sizeof S / sizeof S[0]; k++) {
    double a = 1e30, b = 1e30;
    for (int round = 0; round < 2; round++)
      a = fmin(a, best_of(0, S[k], A, B, C, 100)), b = fmin(b, best_of(1, S[k], A, B, C, 100));
    t32 += a, t16 += b;
    printf("%5d %4d %5d %3d %3d %10.1f %10.1f %8.2f\n", S[k][0], S[k][1], S[k][2], S[k][3], S[k][4], a * 1e6, b * 1e6,
           a / b);
  }
  printf("one layer's products: float32 %.1f us, bf16 %.1f us, speed-up %.2f\n", t32 * 1e6, t16 * 1e6, t32 / t16);
  /* the unfused attention's per-head products (T = 17 tokens, 32 per head, rows of 64), one
  ** (sample, head) pair after another on one thread, as a team thread runs its share */
  static const int H[][7] = {{17, 17, 32, 0, 1, 64, 64}, {17, 32, 17, 0, 0, 17, 64}, {17, 32, 17, 0, 0, 17, 64},
                             {17, 32, 17, 1, 0, 17, 64}, {17, 17, 32, 0, 1, 64, 64}, {17, 32, 17, 1, 0, 17, 64}};
  /* the graph rounds each operand once (product.h) and multiplies the bfloat16 copies: the third column */
  uint16_t *Ah = slK_alloc(n * 2), *Bh = slK_alloc(n * 2);
  slK_to_half(SLK_BF16, A, Ah, n), slK_to_half(SLK_BF16, B, Bh, n);
  double h[3] = {0, 0, 0};
  for (size_t k = 0; k < sizeof H / sizeof H[0]; k++)
    for (int how = 0; how < 3; how++) {
      double best = 1e30;
      for (int r = 0; r < 20; r++) {
        double t0 = slK_now(NULL);
        for (int p = 0; p < 256; p++) {
          const int *s = H[k];
          size_t off = (size_t)p * 17 * 64;
          float *c = C + off;
          if (how == 2)
            slK_gemm_bf16_rounded(s[3], s[4], s[0], s[1], s[2], 1, Ah + off, s[5], Bh + off, s[6], 0, c, s[1]);
          else if (how == 1)
            slK_gemm_half(SLK_BF16, s[3], s[4], s[0], s[1], s[2], 1, A + off, s[5], B + off, NULL, s[6], 0, c, s[1]);
          else slK_sgemm(s[3], s[4], s[0], s[1], s[2], 1, A + off, s[5], B + off, s[6], 0, c, s[1]);
        }
        double t = slK_now(NULL) - t0;
        if (t < best) best = t;
      }
      h[how] += best;
    }
  printf("one layer's 6 x 256 per-head attention products, one thread: float32 %.1f us, bf16 %.1f us (%.2fx), "
         "bf16 from rounded operands %.1f us (%.2fx)\n",
         h[0] * 1e6, h[1] * 1e6, h[0] / h[1], h[2] * 1e6, h[0] / h[2]);
  slK_free(A), slK_free(B), slK_free(C), slK_free(Ah), slK_free(Bh);
}

int main(int argc, char **argv) {
  const char *what = argc > 1 ? argv[1] : "attention";
  int csv = strcmp(what, "csv") == 0;
  if (!csv) load();
  if (!csv) same_threads();
  if (strcmp(what, "gemm") == 0) gemm(argc > 2 ? atoi(argv[2]) : 1024);
  else if (strcmp(what, "attention") == 0 || csv) attention(argc - 2, argv + 2, csv);
  else if (strcmp(what, "mxint8") == 0) mxint8(argc > 2 ? atoi(argv[2]) : 64);
  else if (strcmp(what, "shapes") == 0) shapes();
  else {
    fprintf(stderr, "usage: %s gemm [n] | attention [L ...] | mxint8 [MiB] | csv [L ...] | shapes\n", argv[0]);
    return 2;
  }
  return 0;
}
