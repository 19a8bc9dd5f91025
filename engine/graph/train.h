/*
** train.h - training and evaluation of model graphs.
*/
#ifndef SYSLAB_TRAIN_H
#define SYSLAB_TRAIN_H

#include "model.h"

struct slM_Run; /* trainrun.h */

enum { SLM_SGD, SLM_ADAMW };
enum { SLM_CONSTANT, SLM_COSINE, SLM_STEP };

typedef struct slM_TrainConfig {
  int epochs, batch;
  double lr, momentum, weight_decay;
  int optimizer; /* SLM_SGD, SLM_ADAMW */
  int schedule;  /* SLM_CONSTANT, SLM_COSINE, SLM_STEP */
  int warmup;    /* steps of linear warm-up */
  uint64_t seed;
  /* micro-batches, data parallelism and checkpoints (trainrun.h); NULL:
  ** one batch a step in this process. Its err holds why a group failed. */
  struct slM_Run *run;
} slM_TrainConfig;

typedef struct slM_TrainHooks {
  void *ud;
  /* fraction of the epoch done, running mean loss */
  void (*progress)(void *ud, int epoch, double fraction, double loss);
  /* asked before every batch and between the nodes of its forward and
  ** backward passes: non-zero stops training there, skipping the cut
  ** batch's update (it may be asked many times: it should only look) */
  int (*stop)(void *ud);
} slM_TrainHooks;

typedef struct slM_EpochStats {
  int epoch;
  int complete;       /* 0 when the epoch was cut short */
  long diverged;      /* the step (from 1) whose loss was not finite, where training stopped; 0 if none */
  int nonfinite_node; /* then the first node whose output was not finite (-1: unknown) */
  double loss, train_accuracy, test_accuracy, test_loss, seconds, samples_per_second;
  double comm_seconds; /* data parallel: communication the compute did not hide */
} slM_EpochStats;

/* one update of every trainable parameter from its gradient (step counts from 0) */
void slM_optimizer_step(slM_Graph *g, const slM_TrainConfig *c, double lr, long step);
/* the same update of one parameter on the CPU (nothing for a frozen one or one without a gradient) */
void slM_param_step(slM_Param *p, const slM_TrainConfig *c, double lr, long step);
/* slM_param_step as a step of accumulate.c calls it (slM_UpdateFn): ud is an slM_StepUpdate */
typedef struct slM_StepUpdate {
  const slM_TrainConfig *c;
  double lr;
  long step;
} slM_StepUpdate;
void slM_update_param(void *ud, slM_Param *p);
/* trains; fills stats[0..epochs-1]; returns the number of epochs recorded */
int slM_train(slM_Graph *g, const slM_Dataset *d, const slM_TrainConfig *c, const slM_TrainHooks *hooks,
              slM_EpochStats *stats);
/* accuracy and mean loss over n items (NaN when cut short); returns the first node whose output was
** not finite in the first batch whose loss was not (-1: none, or unknown) */
int slM_evaluate(slM_Graph *g, const float *x, const uint8_t *y, size_t n, double *accuracy, double *loss);

#endif
