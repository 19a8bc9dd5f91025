/*
** bench_qat.c - one epoch of quantisation-aware training per number format
** beside one float32 epoch of the same model, in one run.
**
**   cmake --build build --target bench_qat && build/bench_qat [train=10000] [runs=2] [formats]
**
** formats: a comma-separated list of names to time (beside float32),
** e.g. `build/bench_qat 10000 5 ternary,block_fp`; all by default.
**
** An MLP 784-256-128-10 on the first `train` Fashion-MNIST images, batch
** 128, SGD. Every format quantises the inputs, weights and biases of all
** three linear layers (the labs' QAT); formats without a gradient
** (block_minifloat, binary_residual) cannot train and are left out. The
** table gives seconds per epoch (the best of `runs`) and the ratio to the
** float32 epoch; the target is at most 2.
**
** On a shared machine the speed drifts within seconds, so each format's
** epochs alternate with float32 epochs (float32, format, float32, ...) and
** its ratio is to the best of the float32 epochs taken beside it (the
** "float32 beside" column); the last row is the best float32 epoch of the
** whole run. The load average is printed before and after: figures taken
** above about 0.7 are provisional.
**
** A second table times the quantisers alone on the tensors of one training
** step (each layer's input batch, weight and bias, in the shapes and row
** lengths the graph gives them), best of 200 steps: these sub-millisecond
** figures stay close to the machine's best even when the epochs above
** drift, so they show what the quantisation itself costs per epoch.
*/
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "compress/quant.h"
#include "syslab.h"

static void quiet(void *ud, sl_Stream s, const char *t, size_t n) {}

static sl_Host host = {NULL, quiet, NULL, NULL, NULL, NULL};

static double run_number(sl_State *S, const char *code) {
  sl_Value v;
  sl_Error e;
  if (sl_execute(S, code, &host, &v, &e) != 0) {
    fprintf(stderr, "%s: %s\n%s\n", e.ename, e.evalue, code);
    sl_error_free(&e);
    exit(1);
  }
  double x = v.type == SL_NUMBER ? v.u.n : -1;
  sl_release(v);
  return x;
}

static void print_load(const char *when) {
  double avg[3];
  time_t now = time(NULL);
  char stamp[32];
  strftime(stamp, sizeof stamp, "%Y-%m-%d %H:%M UTC", gmtime(&now));
  if (getloadavg(avg, 3) > 0)
    printf("%s: %s, load average %.2f %.2f %.2f%s\n", when, stamp, avg[0], avg[1], avg[2],
           avg[0] > 0.7 ? "  (busy: provisional)" : "");
}

static int listed(const char *list, const char *name);

static double now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

/* the quantisers alone on one training step's tensors: per layer of the MLP
** the input batch (rows of in_f), the weight (rows of in_f) and the bias */
static void quantiser_table(int steps, const char *only, const char *const names[], size_t nf) {
  const int in_f[3] = {784, 256, 128}, out_f[3] = {256, 128, 10};
  slQ_Format fmt[] = {
      {.kind = SLQ_INTEGER, .width = 8, .frac_width = 4, .is_signed = 1},
      {.kind = SLQ_MINIFLOAT_DENORM, .width = 8, .exponent_width = 4, .is_signed = 1},
      {.kind = SLQ_MINIFLOAT_IEEE, .width = 8, .exponent_width = 4, .is_signed = 1},
      {.kind = SLQ_LOG, .width = 8, .is_signed = 1},
      {.kind = SLQ_BLOCK_FP, .width = 8, .exponent_width = 8, .block = 16, .bias_width = 4},
      {.kind = SLQ_BLOCK_LOG, .width = 8, .block = 16, .bias_width = 4},
      {.kind = SLQ_MXINT8, .block = 32},
      {.kind = SLQ_MXFP8_E4M3, .block = 32},
      {.kind = SLQ_MXFP4_E2M1, .block = 32},
      {.kind = SLQ_BINARY, .block = 16, .bipolar = 1},
      {.kind = SLQ_TERNARY, .block = 16, .scaled = 1},
  };
  float *x[3][3], *y = malloc(256 * 784 * sizeof *y);
  size_t len[3][3];
  uint32_t seed = 12345;
  for (int l = 0; l < 3; l++) {
    len[l][0] = (size_t)128 * in_f[l], len[l][1] = (size_t)out_f[l] * in_f[l], len[l][2] = (size_t)out_f[l];
    for (int t = 0; t < 3; t++) {
      x[l][t] = malloc(len[l][t] * sizeof(float));
      for (size_t i = 0; i < len[l][t];
           i++) { /* images in [0, 1], activations after ReLU, weights and biases around 0 */
        seed = seed * 1664525u + 1013904223u;
        float u = (float)(seed >> 8) / 16777216.0f;
        x[l][t][i] = t == 0 ? (l == 0 ? u : (u < 0.5f ? 0.0f : 2 * (u - 0.5f))) : (2 * u - 1) / 28.0f;
      }
    }
  }
  printf(
      "\nThe quantisers alone on one step's tensors (inputs, weights and biases of the three layers), best of 200 steps:\n\n");
  printf("| format | us per step | ms per epoch (%d steps) |\n|---|---:|---:|\n", steps);
  for (size_t f = 0; f < sizeof fmt / sizeof fmt[0] && f + 1 < nf; f++) {
    if (only && !listed(only, names[f + 1])) continue;
    double best = 1e30;
    for (int r = 0; r < 200; r++) {
      double t0 = now();
      for (int l = 0; l < 3; l++) {
        slQ_apply(&fmt[f], x[l][0], y, len[l][0], (size_t)in_f[l]);
        slQ_apply(&fmt[f], x[l][1], y, len[l][1], (size_t)in_f[l]);
        slQ_apply(&fmt[f], x[l][2], y, len[l][2], len[l][2]);
      }
      double t = now() - t0;
      if (t < best) best = t;
    }
    printf("| %s | %.0f | %.1f |\n", names[f + 1], best * 1e6, best * 1e3 * steps);
  }
  for (int l = 0; l < 3; l++)
    for (int t = 0; t < 3; t++) free(x[l][t]);
  free(y);
}

/* whether name is one of the comma-separated list */
static int listed(const char *list, const char *name) {
  size_t n = strlen(name);
  for (const char *p = list; *p;) {
    const char *end = strchr(p, ',');
    size_t len = end ? (size_t)(end - p) : strlen(p);
    if (len == n && strncmp(p, name, n) == 0) return 1;
    if (!end) break;
    p = end + 1;
  }
  return 0;
}

int main(int argc, char **argv) {
  sl_init();
  int train = argc > 1 ? atoi(argv[1]) : 10000, runs = argc > 2 ? atoi(argv[2]) : 2;
  const char *only = argc > 3 ? argv[3] : NULL;
  const char *formats[][2] = {
      {"float32", ""},
      {"integer", "format=integer width=8 frac=4"},
      {"minifloat_denorm", "format=minifloat_denorm width=8 exponent_width=4"},
      {"minifloat_ieee", "format=minifloat_ieee width=8 exponent_width=4"},
      {"log", "format=log width=8"},
      {"block_fp", "format=block_fp width=8 exponent_width=8 block=16"},
      {"block_log", "format=block_log width=8 block=16"},
      {"mxint8", "format=mxint8"},
      {"mxfp8_e4m3", "format=mxfp8_e4m3"},
      {"mxfp4_e2m1", "format=mxfp4_e2m1"},
      {"binary", "format=binary"},
      {"ternary", "format=ternary"},
  };
  size_t nf = sizeof formats / sizeof formats[0];
  sl_State *S = sl_new();
  char code[1024];
  snprintf(code, sizeof code,
           "data = dataset fashion_mnist train=%d test=1000\nbase = model mlp hidden=[256, 128] seed=1\n0", train);
  run_number(S, code);
  printf("MLP 784-256-128-10, %d training images, batch 128, best of %d runs\n", train, runs);
  print_load("before");
  printf("\n| format | seconds per epoch | float32 beside | ratio to float32 |\n|---|---:|---:|---:|\n");
  double f32_best = 1e30;
  char f32_code[256];
  snprintf(f32_code, sizeof f32_code, "q = copy base\n(train q data epochs=1 seed=1).seconds[0]");
  run_number(S, f32_code); /* one float32 epoch first, so caches and the thread teams are warm */
  for (size_t f = 1; f < nf; f++) {
    if (only && !listed(only, formats[f][0])) continue;
    double best = 1e30, beside = 1e30;
    snprintf(code, sizeof code, "q = quantize_model base %s\n(train q data epochs=1 seed=1).seconds[0]", formats[f][1]);
    for (int r = 0; r < runs; r++) {
      double b = run_number(S, f32_code), s = run_number(S, code);
      if (b < beside) beside = b;
      if (s < best) best = s;
    }
    if (beside < f32_best) f32_best = beside;
    printf("| %s | %.3f | %.3f | %.2f |\n", formats[f][0], best, beside, best / beside);
    fflush(stdout);
  }
  printf("| float32 (best of the run) | %.3f | | 1.00 |\n", f32_best);
  print_load("after");
  const char *names[sizeof formats / sizeof formats[0]];
  for (size_t f = 0; f < nf; f++) names[f] = formats[f][0];
  quantiser_table((train + 127) / 128, only, names, nf);
  sl_free(S);
  return 0;
}
