/*
** args.h - the argument and table helpers of the systems commands (args.c).
*/
#ifndef SYSLAB_SYSTEMS_ARGS_H
#define SYSLAB_SYSTEMS_ARGS_H

#include "graph/lm.h"
#include "graph/memory.h"
#include "graph/train.h"
#include "predict.h"
#include "table/table.h"

extern const char *const slL_runs[]; /* forward, train */
/* 0 for a model on the CPU; else an error saying the command measures the CPU (-1) */
int slL_cpu_only(sl_Call *call, const slM_Graph *g);
extern const char *const slL_devices[];    /* cpu, gpu */
extern const char *const slL_optimizers[]; /* adamw, sgd, none */

const slM_Graph *slL_model_of(sl_Call *call, const char *name);
/* a table with the given columns (NULL-terminated) */
slT_Table *slL_table(const char *const *cols);
void slL_setn(slT_Table *t, size_t r, const char *col, double v); /* NaN: nil */
void slL_sets(slT_Table *t, size_t r, const char *col, const char *v);
int slL_budget_of(sl_Call *call, double *budget);     /* the "budget" argument, or the engine's */
int slL_run_budget_of(sl_Call *call, double *budget); /* the same, no more than this process may use */
/* the same, for a command that steps a model the session holds: its own bytes count as available */
int slL_model_budget_of(sl_Call *call, const slM_Graph *g, double *budget);
/* the run budget for a model on `device`: on the GPU, without a "budget" argument, the device's free memory */
int slL_device_budget_of(sl_Call *call, int device, double *budget);
int slL_precision_arg(sl_Call *call);
int slL_optimizer_arg(sl_Call *call); /* SLM_ADAMW, SLM_SGD, or -1 for none */
int slL_is_lm(const slM_Graph *g);
/* the prediction for a built model on this batch */
void slL_predict(const slM_Graph *g, int batch, int T, int run, int optimizer, slL_Prediction *p);
/* batch and tokens per sample from the call; T = 0 for image models */
int slL_batch_args(sl_Call *call, const slM_Graph *g, int *batch, int *T);
/* the bytes a model holds by category (parameters, gradients, optimizer state) */
void slL_own_bytes(const slM_Graph *g, size_t own[SLM_MEM_NCAT]);
/* gradients and optimizer state a model already holds from earlier training */
void slL_state_bytes(const slM_Graph *g, double *grads, double *optim);
/* an OOM error with the predicted figures when p's peak exceeds the budget */
int slL_refuse_if_over(sl_Call *call, const slL_Prediction *p, double budget);
/* ranks= and shard_optimizer= of the memory commands: each of `ranks`
** processes keeping the optimizer state of its share of the parameters */
typedef struct slL_Shard {
  int on, ranks;
  int rank;     /* the rank with the largest share: the one the figures are for */
  double share; /* its parameters' elements */
} slL_Shard;
/* reads the arguments; for a model g (NULL: the caller fills share) the
** largest share. 0, or -1 after reporting the error */
int slL_shard_args(sl_Call *call, const slM_Graph *g, slL_Shard *s);
/* the update of the parameters the shard's rank owns, as that rank makes it */
void slL_shard_step(slM_Graph *g, const slL_Shard *s, const slM_TrainConfig *c, long step);
/* a list argument of 1 to max whole numbers in [lo, hi]; the count, or -1 */
int slL_list_ints(sl_Call *call, const char *name, int *out, int max, int lo, int hi);
/* the "presets" argument as specifications; the count, or -1 */
int slL_preset_list(sl_Call *call, slM_LmSpec *out, int max);

#endif
