/*
** bench_train.c - training speed and accuracy on the full Fashion-MNIST,
** beside the machine's own cblas_sgemm rate measured in the same run.
**
**   cmake --build build --target bench_train
**   build/bench_train [mlp_epochs=10] [transformer_epochs=10]
**
** Peak: the GFLOP/s of one large square cblas_sgemm (best of several). The
** MLP's fraction of peak counts its dense work (forward 2*in*out per layer
** and sample, backward twice that) against the measured epoch time.
*/
#include <cblas.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "graph/model.h"
#include "graph/train.h"

static double now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

static double sgemm_gflops(int n) {
  float *a = malloc((size_t)n * n * sizeof *a), *b = malloc((size_t)n * n * sizeof *b),
        *c = malloc((size_t)n * n * sizeof *c);
  for (size_t i = 0; i < (size_t)n * n; i++) a[i] = b[i] = (float)(i % 7) * 0.1f;
  double best = 0;
  for (int rep = 0; rep < 5; rep++) {
    double t0 = now();
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, n, n, n, 1, a, n, b, n, 0, c, n);
    double g = 2.0 * n * n * (double)n / (now() - t0) / 1e9;
    if (g > best) best = g;
  }
  free(a), free(b), free(c);
  return best;
}

static void run(const char *label, slM_Graph *g, slM_Dataset *d, slM_TrainConfig *c, double flops_per_sample,
                double peak) {
  slM_EpochStats *stats = calloc((size_t)c->epochs, sizeof *stats);
  int n = slM_train(g, d, c, NULL, stats);
  double best = 0, fastest = 0;
  for (int e = 0; e < n; e++) {
    if (stats[e].test_accuracy > best) best = stats[e].test_accuracy;
    if (stats[e].samples_per_second > fastest) fastest = stats[e].samples_per_second;
  }
  printf("%-34s epochs %2d  final test accuracy %.4f (best %.4f)  %8.0f samples/s  epoch %.2f s", label, n,
         stats[n - 1].test_accuracy, best, fastest, (double)d->ntrain / fastest);
  if (flops_per_sample > 0)
    printf("  %.1f GFLOP/s = %.0f%% of sgemm peak", fastest * flops_per_sample / 1e9,
           100 * fastest * flops_per_sample / 1e9 / peak);
  printf("\n");
  for (int e = 0; e < n; e++)
    printf("    epoch %2d: loss %.4f  train %.4f  test %.4f  %.2f s\n", stats[e].epoch, stats[e].loss,
           stats[e].train_accuracy, stats[e].test_accuracy, stats[e].seconds);
  free(stats);
}

int main(int argc, char **argv) {
  int mlp_epochs = argc > 1 ? atoi(argv[1]) : 10, tf_epochs = argc > 2 ? atoi(argv[2]) : 10;
  char err[512];
  slM_Dataset *d = slM_fashion_mnist("/usr/share/datasets/fashion-mnist", 0, 0, err, sizeof err);
  if (!d) {
    fprintf(stderr, "%s\n", err);
    return 1;
  }
  double peak = sgemm_gflops(1024);
  printf("cblas_sgemm 1024x1024x1024: %.1f GFLOP/s (peak used below)\n", peak);
  printf("Fashion-MNIST: %zu training, %zu test images\n", d->ntrain, d->ntest);

  slM_MlpSpec ms = {784, 10, {256, 128}, 2, OP_RELU, 0.1f};
  slM_Graph *mlp = slM_mlp(&ms, 0, 0, err, sizeof err);
  double mlp_flops = 3 * 2.0 * (784.0 * 256 + 256.0 * 128 + 128.0 * 10);
  slM_TrainConfig mc = {mlp_epochs, 128, 0.05, 0.9, 1e-4, SLM_SGD, SLM_COSINE, 0, 0};
  run("mlp 784-256-128-10, batch 128", mlp, d, &mc, mlp_flops, peak);

  slM_TransformerSpec ts = {28, 28, 10, 7, 2, 64, 2, 2, 0.1f};
  slM_Graph *tf = slM_transformer(&ts, 0, 0, 0, err, sizeof err);
  slM_TrainConfig tc = {tf_epochs, 128, 0.002, 0, 0.01, SLM_ADAMW, SLM_COSINE, 200, 0};
  run("transformer 2x64, 2 heads, batch 128", tf, d, &tc, 0, peak);
  slM_graph_free(mlp);
  slM_graph_free(tf);
  slM_dataset_free(d);
  return 0;
}
