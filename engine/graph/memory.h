/*
** memory.h - memory accounting (memory.c): every tensor tagged with its
** category and the node that made it; live and peak bytes by category; a
** timeline of one step; and the prediction of a run's memory before
** anything is allocated, with the refusal of runs that would not fit.
*/
#ifndef SYSLAB_MEMORY_H
#define SYSLAB_MEMORY_H

#include "lm.h"

enum { SLM_MEM_PARAM, SLM_MEM_GRAD, SLM_MEM_OPTIM, SLM_MEM_ACT, SLM_MEM_TEMP, SLM_MEM_NCAT };
extern const char *const slM_mem_category_names[];   /* parameter, gradient, ... */

void slM_mem_on_alloc(slM_Tensor *t);   /* tensor.c */
void slM_mem_on_free(slM_Tensor *t);
void slM_mem_retag(slM_Tensor *t, int category);
/* memory outside tensors (scratch buffers), counted as temporaries */
void slM_mem_external(long long delta);
/* the tag new tensors get: set around each node by the node hooks */
void slM_mem_set_context(const slM_Graph *g, int node, int backward);

/* live bytes by category now; at the overall peak since the last reset */
void slM_mem_live_by(size_t out[SLM_MEM_NCAT]);
void slM_mem_peak_by(size_t out[SLM_MEM_NCAT]);
size_t slM_mem_total_peak(void);   /* tensors and scratch */
void slM_mem_reset(void);          /* peaks := live, records cleared */

/* recording of allocations and a timeline while on */
typedef struct slM_MemEvent {
  int index, node, backward;
  size_t live;
} slM_MemEvent;
typedef struct slM_MemAlloc {
  size_t bytes;
  int category, node, backward;
  char node_name[64], op[24], shape[48];
} slM_MemAlloc;
void slM_mem_record(int on);
const slM_MemEvent *slM_mem_timeline(size_t *n);
const slM_MemAlloc *slM_mem_allocations(size_t *n);
void slM_mem_mark(int node, int backward);   /* a timeline point after a node */

/* ------------------------------------------------------------ prediction */

typedef struct slM_MemPrediction {
  double params, grads, optim, activations, act_grads, scratch;  /* bytes */
  double peak;
  double scores;        /* of the activations: the O(T^2) attention tensors */
  double residual;      /* one residual-stream tensor, batch x context x d_model */
} slM_MemPrediction;

enum { SLM_RUN_FORWARD, SLM_RUN_TRAIN };
/* from the configuration alone, before any allocation */
void slM_mem_predict_lm(const slM_LmSpec *s, int batch, int T, int run, int optimizer, int precision,
                        slM_MemPrediction *out);
/* from a built graph (any family) on a batch (T: tokens per sample for an lm) */
void slM_mem_predict_graph(const slM_Graph *g, int batch, int T, int run, int optimizer, slM_MemPrediction *out);
/* the budget: bytes named in text ("80GB", "512MiB", "1e9"), or MemAvailable
** when text is NULL or empty; 0 with err on bad text */
double slM_mem_budget(const char *text, char *err, size_t errlen);
/* one sentence with the figures, for an OOM refusal */
void slM_mem_refusal(const slM_MemPrediction *p, double budget, char *buf, size_t size);

#endif
