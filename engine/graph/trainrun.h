/*
** trainrun.h - what `train` and `lm_train` share around their loops
** (trainrun.c): the arguments of accumulation and data parallelism, the
** group of processes a parallel call runs in, and checkpoints that let the
** same command resume where a stopped run left off.
*/
#ifndef SYSLAB_TRAINRUN_H
#define SYSLAB_TRAINRUN_H

#include "accumulate.h"

/* the registry's arguments, the same in both commands */
extern const char *const slM_parallel_names[]; /* "none", "data", NULL */
/* clang-format off */
#define SLM_RUN_ARGS                                                                                                  \
  {"accumulate", SL_ARG_INT, 0, "1", "micro-batches per step: the batch is split and their gradients summed in order"}, \
  {"parallel", SL_ARG_ENUM, 0, "none", "\"data\": one micro-batch of every step per process, gradients summed across them", \
   slM_parallel_names},                                                                                              \
  {"workers", SL_ARG_INT, 0, "0", "parallel=\"data\" without mpirun: processes that train (this one and workers - 1 started)"}, \
  {"reduce", SL_ARG_ENUM, 0, "bucket", "how gradients travel: per parameter, one flat buffer, or buckets during the backward", \
   slM_reduce_names},                                                                                                \
  {"bucket_mb", SL_ARG_NUMBER, 0, "25", "reduce=bucket: largest bucket in MB (0: one parameter each)"},               \
  {"shard_optimizer", SL_ARG_BOOL, 0, "false", "each process keeps the optimizer state of its share of the parameters"}, \
  {"checkpoint", SL_ARG_STRING, 0, "\"\"", "file of the run's checkpoints; an existing one is resumed"},              \
  {"checkpoint_every", SL_ARG_INT, 0, "0", "steps between checkpoints (with checkpoint=)"}
/* clang-format on */

typedef struct slM_Checkpoint {
  char path[1024];
  int every;    /* steps between checkpoints */
  uint64_t run; /* what identifies the run: the model at its start, the data, the settings */
} slM_Checkpoint;

typedef struct slM_Run {
  slM_StepConfig split;
  const slM_GroupOps *ops;
  int use_split; /* accumulation or a group: steps run through accumulate.c */
  int ranks;     /* processes in the group (1: none) */
  slM_Checkpoint ckpt;
  int use_ckpt;
  int resumed;    /* the run went on from its checkpoint */
  char err[1400]; /* why the group or a checkpoint failed ("" when neither did) */
} slM_Run;

/* Reads the arguments, refuses what does not fit together (with the
** argument's name), checks the model can run that way, and opens the
** group of a parallel call. `batch`: rows per step; `run_id`: a number
** that names the data and settings of the run (not the model), the same
** in every process of a group. 0, or -1 after reporting the error. */
int slM_run_begin(sl_Call *call, slM_Graph *g, int batch, uint64_t run_id, slM_Run *r);
/* closes the group: why non-NULL when this process stops on an error */
void slM_run_end(slM_Run *r, const char *why);

/* A checkpoint: rank 0 writes the model (the sharded optimizer state
** gathered from its owners) and the loop's own progress bytes, under a
** temporary name then renamed, so a crash leaves the last whole one. */
int slM_ckpt_save(const slM_Checkpoint *k, slM_Graph *g, slM_Steps *s, const slU_Text *progress, char *err,
                  size_t errlen);
/* At the start of a run with a checkpoint file: 1 when it holds this run
** (the model takes its weights, optimizer state and random state, and
** *progress its progress bytes, malloc'd), 0 when there is no file, -1
** with err when it is another run's or damaged. Every rank calls it; rank
** 0 reads the file and sends it to the others. */
int slM_ckpt_load(const slM_Checkpoint *k, slM_Graph *g, slM_Steps *s, char **progress, size_t *n, char *err,
                  size_t errlen);

/* a hash of bytes, chained: h = slM_hash(h, p, n), from h = SLM_HASH_START */
#define SLM_HASH_START 0xcbf29ce484222325ull
uint64_t slM_hash(uint64_t h, const void *p, size_t n);

#endif
