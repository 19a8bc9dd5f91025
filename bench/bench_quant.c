/*
** bench_quant.c - quantiser throughput beside memcpy, in one run.
**
**   cmake --build build --target bench_quant && build/bench_quant [MiB=64]
**
** Each format quantise-dequantises a float32 buffer into another of the same
** size (rows of 4096); memcpy copies the same bytes. Throughput counts the
** input bytes per second, so a ratio of 1 means the format costs as much as
** a copy. Best of five runs each.
*/
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "compress/quant.h"

static double now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

int main(int argc, char **argv) {
  size_t mib = argc > 1 ? (size_t)atoi(argv[1]) : 64, n = mib * 1024 * 1024 / sizeof(float);
  float *in = malloc(n * sizeof *in), *out = malloc(n * sizeof *out);
  for (size_t i = 0; i < n; i++) in[i] = (float)((double)(i % 9973) / 997.0 - 5.0);
  memcpy(out, in, n * sizeof *in); /* touch every page before timing */
  double best = 1e9;
  for (int r = 0; r < 5; r++) {
    double t0 = now();
    memcpy(out, in, n * sizeof *in);
    double t = now() - t0;
    if (t < best) best = t;
  }
  double copy = (double)n * sizeof(float) / best / 1e9;
  printf("buffer %zu MiB; memcpy %.2f GB/s\n", mib, copy);
  printf("%-18s %10s %10s\n", "format", "GB/s", "of memcpy");
  slQ_Format formats[] = {
      {SLQ_INTEGER, 8, 4, 0, 0, 0, 1, 32},        {SLQ_MINIFLOAT_DENORM, 8, 0, 4, 0, 0, 1, 32},
      {SLQ_MINIFLOAT_IEEE, 8, 0, 4, 0, 0, 1, 32}, {SLQ_LOG, 5, 0, 0, 0, 0, 1, 32},
      {SLQ_MXINT8, 0, 0, 0, 0, 0, 1, 32},         {SLQ_MXFP8_E4M3, 0, 0, 0, 0, 0, 1, 32},
      {SLQ_MXFP4_E2M1, 0, 0, 0, 0, 0, 1, 32},
  };
  for (size_t k = 0; k < sizeof formats / sizeof formats[0]; k++) {
    best = 1e9;
    for (int r = 0; r < 5; r++) {
      double t0 = now();
      slQ_apply(&formats[k], in, out, n, 4096);
      double t = now() - t0;
      if (t < best) best = t;
    }
    double gbs = (double)n * sizeof(float) / best / 1e9;
    printf("%-18s %10.2f %9.0f%%\n", slQ_kind_name(formats[k].kind), gbs, 100 * gbs / copy);
  }
  free(in);
  free(out);
  return 0;
}
