/*
** accumulate.h - a training step made of micro-batches (accumulate.c):
** gradient accumulation in one process, or data parallelism over a group
** of processes with one micro-batch per rank, the two giving the same
** numbers bit for bit.
*/
#ifndef SYSLAB_ACCUMULATE_H
#define SYSLAB_ACCUMULATE_H

#include "parallel.h"

/* how gradients travel between ranks */
enum { SLM_REDUCE_PARAM, SLM_REDUCE_FLAT, SLM_REDUCE_BUCKET };
extern const char *const slM_reduce_names[]; /* "param", "flat", "bucket", NULL */

typedef struct slM_StepConfig {
  int accumulate;   /* micro-batches per step in this process (without a group); 1: none */
  slM_Group *group; /* data parallelism: one micro-batch per rank; NULL: this process alone */
  int reduce;       /* SLM_REDUCE_*: one collective per parameter, one for all, or buckets */
  double bucket_mb; /* SLM_REDUCE_BUCKET: the largest bucket in MB (10^6 bytes); 0: one parameter each */
  int shard;        /* each rank keeps the optimizer state of its share of the parameters */
} slM_StepConfig;

/* Runs one micro-batch, rows [lo, hi) of the step's batch (hi > lo), forward
** and backward into gradients that were zeroed: returns its mean loss and
** sets *correct (image models; 0 for others). Setting g->stopped means the
** pass was cut short. */
typedef double (*slM_MicroFn)(void *ud, slM_Graph *g, int lo, int hi, long *correct);
/* the update of one parameter from its gradient, with the step's settings
** (the training loop's optimizer: train.h's slM_update_param) */
typedef void (*slM_UpdateFn)(void *ud, slM_Param *p);

/* what a step runs: its micro-batches and its update */
typedef struct slM_StepWork {
  slM_MicroFn micro;
  void *micro_ud;
  slM_UpdateFn update;
  void *update_ud;
} slM_StepWork;

typedef struct slM_StepStats {
  double loss_sum; /* sum over micro-batches, in order, of mean loss x rows */
  long correct;
  int rows;
  int nonfinite;       /* a micro-batch's loss was not finite: nothing was updated */
  int stopped;         /* asked to stop, or a pass was cut: nothing was updated */
  double comm_seconds; /* spent in communication that the compute did not hide */
} slM_StepStats;

typedef struct slM_Steps slM_Steps;

/* Prepares the steps of one training call of g; with a sharded optimizer
** each rank frees the optimizer state it does not own. NULL with err. */
slM_Steps *slM_steps_new(slM_Graph *g, const slM_StepConfig *sc, char *err, size_t errlen);
/* One step over a batch of `rows` rows (same on every rank): the
** micro-batches, their gradients combined in micro-batch order, then the
** update (unless a loss was not finite or some rank was asked to stop:
** `stop`). 0, or -1 with err when the group failed. */
int slM_steps_run(slM_Steps *s, int rows, int stop, const slM_StepWork *w, slM_StepStats *out, char *err,
                  size_t errlen);
/* With a sharded optimizer: hands every rank's state to `root` (every rank
** when root < 0), so that it holds the whole of it; slM_steps_drop gives
** back what this rank does not own. 0, or -1 with err. */
int slM_steps_collect(slM_Steps *s, int root, char *err, size_t errlen);
void slM_steps_drop(slM_Steps *s);
/* frees what the steps hold (the accumulators, the buckets); the group stays the caller's */
void slM_steps_free(slM_Steps *s);
/* this rank and the group's size (0 and 1 without a group) */
int slM_steps_rank(const slM_Steps *s);
int slM_steps_size(const slM_Steps *s);
/* the group, or NULL */
slM_Group *slM_steps_group(const slM_Steps *s);

/* micro-batch k of K in a batch of `rows`: rows [*lo, *hi), the first rows % K one row larger */
void slM_micro_rows(int rows, int K, int k, int *lo, int *hi);
/* acc[i] += c[i]: the one addition of micro-batch gradients, in one process and across ranks */
void slM_grads_add(float *acc, const float *c, size_t n);
/* the rank that keeps the optimizer state of each of n parameters (sizes
** in the order of the graph) among `ranks`: contiguous shares of about
** equal size, each parameter whole */
void slM_shard_owners(const size_t *sizes, int n, int ranks, int *owner);
/* the trainable parameters of g, each once, in the order of the graph;
** returns their count and a malloc'd array in *out */
int slM_trainable_params(const slM_Graph *g, slM_Param ***out);

#endif
