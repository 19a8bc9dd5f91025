/*
** bench_speed.c - training speed of the engine against the machine's own
** sgemm rate and against PyTorch on the same cores, measured in one run:
** the MLP and the image transformer on the full Fashion-MNIST (the
** configurations of bench_train.c).
**
**   cmake --build build --target bench_speed
**   BENCH_VENV=.bench-venv build/bench_speed [epochs=2] [mlp|transformer|all]
**
** Peak: the fastest sgemm at n = 1024 in this run, after OpenBLAS's kernel
** choice (kernels/blas.c): OpenBLAS on its own threads or as the engine's
** products (pieces on the thread team), best of five each, measured before
** and after the MLP's epochs (sgemm_peak). The MLP's
** rate counts 6 x parameters FLOPs per sample (forward 2, backward 4)
** against its fastest epoch. Every product of the MLP's step is also timed
** alone, with the rate the step would reach if nothing else cost time.
**
** With BENCH_VENV set (a venv with torch, bench/venv.sh), each model's run
** is followed by the same model in PyTorch (bench/torch_train.py: same
** architecture, batch, optimizer, schedule, data and threads), back to back
** so both see the same machine, and the ratios are printed at the end with
** both parameter counts. Without it only the engine's side runs.
*/
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "graph/model.h"
#include "graph/profile.h"
#include "graph/train.h"
#include "kernels/blas.h"
#include "kernels/kernels.h"

/* best of five: `reps` products op(A) op(B) of M x N x K, as the engine's
** products (slK_sgemm: OpenBLAS pieces on the thread team) or, with
** openblas set, on OpenBLAS's own threads */
static double gemm_rate_of(int openblas, int ta, int tb, int M, int N, int K, int reps) {
  float *a = calloc((size_t)M * K, 4), *b = calloc((size_t)K * N, 4), *c = calloc((size_t)M * N, 4);
  for (size_t i = 0; i < (size_t)M * K; i++) a[i] = (float)(i % 7) * 0.1f;
  for (size_t i = 0; i < (size_t)K * N; i++) b[i] = (float)(i % 5) * 0.1f;
  double best = 0;
  for (int r = 0; r < 5; r++) {
    double t0 = slU_now();
    for (int k = 0; k < reps; k++)
      if (openblas) slK_sgemm_with(SLK_GEMM_OPENBLAS, ta, tb, M, N, K, 1, a, ta ? M : K, b, tb ? K : N, 0, c, N);
      else slK_sgemm(ta, tb, M, N, K, 1, a, ta ? M : K, b, tb ? K : N, 0, c, N);
    double g = 2.0 * M * N * (double)K * reps / (slU_now() - t0) / 1e9;
    if (g > best) best = g;
  }
  free(a), free(b), free(c);
  return best;
}

static double gemm_rate(int ta, int tb, int M, int N, int K, int reps) {
  return gemm_rate_of(0, ta, tb, M, N, K, reps);
}

/* The peak: the faster of OpenBLAS on its own threads and the engine's
** products at n = 1024. This shared machine's speed drifts within a run
** (the same sgemm measured 185 to 333 GFLOP/s on one day), so the peak is
** measured before and after the MLP's epochs and the larger figure kept:
** a slow moment of the peak never flatters the ratio. */
static double sgemm_peak(const char *when) {
  double own = gemm_rate_of(1, SLK_N, SLK_N, 1024, 1024, 1024, 3);
  double team = gemm_rate_of(0, SLK_N, SLK_N, 1024, 1024, 1024, 3);
  printf("sgemm 1024^3 %s: %.1f GFLOP/s on OpenBLAS's own threads, %.1f as the engine's products\n", when, own, team);
  return own > team ? own : team;
}

static double run(const char *label, slM_Graph *g, slM_Dataset *d, slM_TrainConfig *c) {
  slM_EpochStats *stats = calloc((size_t)c->epochs, sizeof *stats);
  int n = slM_train(g, d, c, NULL, stats);
  double fastest = 0;
  for (int e = 0; e < n; e++)
    if (stats[e].samples_per_second > fastest) fastest = stats[e].samples_per_second;
  printf("%-44s %8.0f samples/s (best of %d epochs), final test accuracy %.4f\n", label, fastest, n,
         stats[n - 1].test_accuracy);
  fflush(stdout);
  free(stats);
  return fastest;
}

/* one result of each side, for the ratios at the end */
typedef struct {
  const char *key;
  size_t params;
  double ours, torch;
  size_t torch_params;
} Pair;

/* runs bench/torch_train.py for `which` (mlp: both optimizers), echoing
** its output and reading its RESULT lines into the pairs */
static void torch_side(const char *venv, int epochs, const char *which, Pair *pairs, int np) {
  char cmd[1024], line[512];
  snprintf(cmd, sizeof cmd, "%s/bin/python bench/torch_train.py %d %s 2>&1", venv, epochs, which);
  FILE *p = popen(cmd, "r");
  if (!p) {
    fprintf(stderr, "cannot run %s\n", cmd);
    return;
  }
  while (fgets(line, sizeof line, p)) {
    char key[64];
    size_t params;
    double sps;
    if (sscanf(line, "RESULT %63s %zu %lf", key, &params, &sps) == 3) {
      for (int i = 0; i < np; i++)
        if (strcmp(pairs[i].key, key) == 0) pairs[i].torch = sps, pairs[i].torch_params = params;
    } else {
      printf("  torch | %s", line);
    }
    fflush(stdout);
  }
  if (pclose(p) != 0) fprintf(stderr, "%s failed\n", cmd);
}

int main(int argc, char **argv) {
  int epochs = argc > 1 ? atoi(argv[1]) : 2;
  const char *which = argc > 2 ? argv[2] : "all", *venv = getenv("BENCH_VENV");
  char err[512];
  slK_blas_init();
  printf("OpenBLAS kernels: %s; loop threads: %d\n", slK_blas_core(), slK_threads());
  double peak = sgemm_peak("before");
  /* every product of the MLP's SGD step (fc1 needs no input gradient), and
  ** what the step would reach if everything between them cost nothing */
  static const struct {
    const char *name;
    int ta, tb, M, N, K;
  } prods[] = {{"fc1 fwd", SLK_N, SLK_T, 128, 256, 784}, {"fc1 dW", SLK_T, SLK_N, 256, 784, 128},
               {"fc2 fwd", SLK_N, SLK_T, 128, 128, 256}, {"fc2 dW", SLK_T, SLK_N, 128, 256, 128},
               {"fc2 dx", SLK_N, SLK_N, 128, 256, 128},  {"fc3 fwd", SLK_N, SLK_T, 128, 10, 128},
               {"fc3 dW", SLK_T, SLK_N, 10, 128, 128},   {"fc3 dx", SLK_N, SLK_N, 128, 128, 10}};
  double step_s = 0;
  printf("MLP step products alone (batch 128), GFLOP/s:");
  for (size_t i = 0; i < sizeof prods / sizeof *prods; i++) {
    double flops = 2.0 * prods[i].M * prods[i].N * prods[i].K;
    double rate = gemm_rate(prods[i].ta, prods[i].tb, prods[i].M, prods[i].N, prods[i].K, flops > 1e7 ? 20 : 200);
    step_s += flops / (rate * 1e9);
    printf(" %s %.1f%s", prods[i].name, rate, i + 1 < sizeof prods / sizeof *prods ? "," : "\n");
  }
  double ceiling = 128 / step_s * 6.0 * 235146 / 1e9;
  printf("  products only: %.3f ms per step = %.1f GFLOP/s, the step's ceiling\n", step_s * 1e3, ceiling);
  slM_Dataset *d = slM_fashion_mnist("/usr/share/datasets/fashion-mnist", 0, 0, err, sizeof err);
  if (!d) {
    fprintf(stderr, "%s\n", err);
    return 1;
  }
  Pair pairs[3] = {{"mlp_sgd", 0, 0, 0, 0}, {"mlp_adamw", 0, 0, 0, 0}, {"transformer", 0, 0, 0, 0}};
  double mlp_rate = 0;
  size_t trainable, total;
  if (strcmp(which, "transformer") != 0) {
    slM_MlpSpec ms = {784, 10, {256, 128}, 2, OP_RELU, 0.1f};
    slM_Graph *mlp = slM_mlp(&ms, 0, 0, err, sizeof err);
    slM_param_counts(mlp, &trainable, &total);
    pairs[0].params = pairs[1].params = total;
    slM_TrainConfig mc = {epochs, 128, 0.05, 0.9, 1e-4, SLM_SGD, SLM_COSINE, 0, 0};
    double sps = pairs[0].ours = run("mlp 784-256-128-10, SGD, batch 128", mlp, d, &mc);
    mlp_rate = sps * 6.0 * (double)total / 1e9;
    printf("  %zu parameters: %.1f GFLOP/s\n", total, mlp_rate);
    slM_graph_free(mlp);
    mlp = slM_mlp(&ms, 0, 0, err, sizeof err);
    slM_TrainConfig ma = {epochs, 128, 0.001, 0, 1e-4, SLM_ADAMW, SLM_COSINE, 0, 0};
    sps = pairs[1].ours = run("mlp 784-256-128-10, AdamW, batch 128", mlp, d, &ma);
    printf("  %.1f GFLOP/s\n", sps * 6.0 * (double)total / 1e9);
    slM_graph_free(mlp);
    double after = sgemm_peak("after");
    if (after > peak) peak = after;
    if (venv) torch_side(venv, epochs, "mlp", pairs, 3);
  }
  if (strcmp(which, "mlp") != 0) {
    slM_TransformerSpec ts = {28, 28, 10, 7, 2, 64, 2, 2, 0.1f, 0};
    slM_Graph *tf = slM_transformer(&ts, 0, 0, 0, err, sizeof err);
    slM_param_counts(tf, &trainable, &total);
    pairs[2].params = total;
    slM_TrainConfig tc = {epochs, 128, 0.002, 0, 0.01, SLM_ADAMW, SLM_COSINE, 200, 0};
    pairs[2].ours = run("transformer 2x64, 2 heads, AdamW, batch 128", tf, d, &tc);
    slM_graph_free(tf);
    if (venv) torch_side(venv, epochs, "transformer", pairs, 3);
  }
  slM_dataset_free(d);
  printf("\nsummary (same run): sgemm peak %.1f GFLOP/s (the larger of before and after)", peak);
  if (mlp_rate > 0) printf("; MLP SGD step %.1f GFLOP/s = %.0f%% of it", mlp_rate, 100 * mlp_rate / peak);
  printf("\n");
  if (!venv) printf("(set BENCH_VENV to a venv with torch for the ratios against PyTorch)\n");
  for (int i = 0; i < 3; i++)
    if (pairs[i].ours > 0 && pairs[i].torch > 0)
      printf("%-12s syslab %8.0f /s  torch %8.0f /s  ratio %.2fx  parameters %zu / %zu%s\n", pairs[i].key,
             pairs[i].ours, pairs[i].torch, pairs[i].ours / pairs[i].torch, pairs[i].params, pairs[i].torch_params,
             pairs[i].params == pairs[i].torch_params ? "" : "  (MISMATCH)");
  return 0;
}
