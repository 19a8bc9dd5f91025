/*
** predict.h - a run's memory predicted before anything is allocated
** (predict.c), and the refusal of runs that would not fit.
*/
#ifndef SYSLAB_PREDICT_H
#define SYSLAB_PREDICT_H

#include "graph/lm.h"

typedef struct slL_Prediction {
  double params, grads, optim, activations, act_grads, scratch; /* bytes */
  double peak;
  double scores;   /* of the activations: the O(T^2) attention tensors */
  double residual; /* one residual-stream tensor, batch x context x d_model */
} slL_Prediction;

enum { SLL_RUN_FORWARD, SLL_RUN_TRAIN };
/* from the configuration alone, before any allocation */
void slL_predict_lm(const slM_LmSpec *s, int batch, int T, int run, int optimizer, int precision, slL_Prediction *out);
/* from a built graph (any family) on a batch (T: tokens per sample for an lm) */
void slL_predict_graph(const slM_Graph *g, int batch, int T, int run, int optimizer, slL_Prediction *out);
/* Optimizer-state sharding over `ranks` (shard_optimizer=true): each rank
** keeps the state of a contiguous share of the parameters, whole
** (graph/accumulate.c, slM_shard_owners). The largest share in elements,
** and whose it is. */
double slL_largest_share(const size_t *sizes, int n, int ranks, int *rank);
/* a training prediction with the optimizer state of `share` parameter
** elements only (one rank's), its peak again */
void slL_predict_shard(slL_Prediction *p, double share, int optimizer);
/* the parameters' sizes of a language-model configuration, in the order
** graph/lm.c builds them (out: 9 * layers + 3 entries); their count */
int slL_lm_param_sizes(const slM_LmSpec *s, size_t *out);
/* the budget: bytes named in text ("80GB", "512MiB", "1e9"), or the
** engine's (sl_memory_budget) when text is NULL or empty; 0 with err on bad text */
double slL_budget(const char *text, char *err, size_t errlen);
/* one sentence with the figures, for an OOM refusal */
void slL_refusal(const slL_Prediction *p, double budget, char *buf, size_t size);

#endif
