/*
** runner.h - running steps of any model on random data (runner.c): the
** shared ground of the benchmarks, profiles and memory measurements.
*/
#ifndef SYSLAB_RUNNER_H
#define SYSLAB_RUNNER_H

#include "graph/memory.h"
#include "graph/train.h"

typedef struct slL_Batch {
  int batch, T;       /* T: tokens per sample (language models) */
  int32_t *tok, *tgt; /* language models */
  float *x;           /* image models */
  uint8_t *y;
  slM_Rng rng;
} slL_Batch;

/* random data of the model's kind: token ids, or normal pixels and labels */
void slL_batch_init(slL_Batch *b, const slM_Graph *g, int batch, int T, uint64_t seed);
void slL_batch_free(slL_Batch *b);
/* one step: forward (train = 0), forward and backward (train = 1), or a full
** training step with the optimizer (opt != NULL). Returns the loss. An
** interrupt cuts the step between nodes (and skips its update); here and in
** the loops below, the caller checks sl_interrupted() afterwards. */
double slL_run_step(slM_Graph *g, slL_Batch *b, int train, const slM_TrainConfig *opt, long step);

/* Times steps the way the CS336 systems assignment's end-to-end benchmarking script does (its §1.1.3): `warmup` untimed steps,
** then `steps` timed ones; mean and standard deviation in seconds. */
typedef struct slL_Timing {
  double warmup_seconds, total_seconds, mean, std, median, first;
} slL_Timing;
void slL_time_steps(slM_Graph *g, slL_Batch *b, int train, int warmup, int steps, slL_Timing *out);

/* peak bytes of one run of `steps` steps after a reset, tagged tensors and scratch */
size_t slL_measure_peak(slM_Graph *g, slL_Batch *b, int train, const slM_TrainConfig *opt, int steps);

#endif
