/*
** args.c - what the systems commands (commands.c, commands_memory.c) share:
** their arguments read and checked the same way (models, batches, budgets,
** presets, precisions), their tables, and the refusal of a run predicted
** over the memory budget.
*/
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "args.h"
#include "graph/accumulate.h"
#include "graph/devices.h"
#include "graph/train.h"
#include "kernels/device.h"

const slM_Graph *slL_model_of(sl_Call *call, const char *name) { return sl_arg_object(call, name, &slM_model_class); }

int slL_cpu_only(sl_Call *call, const slM_Graph *g) {
  if (g->device == SLM_CPU) return 0;
  return sl_arg_error(call, "model",
                      "this command measures the CPU's passes and memory, and the model is on the %s: "
                      "`to m cpu` gives a copy on the CPU",
                      slM_device_name(g->device));
}

/* a table with the given columns */
slT_Table *slL_table(const char *const *cols) {
  slT_Table *t = slT_new();
  for (int c = 0; cols[c]; c++) slT_add_column(t, cols[c]);
  return t;
}

void slL_setn(slT_Table *t, size_t r, const char *col, double v) {
  slT_set(t, r, (size_t)slT_column(t, col), isnan(v) ? sl_nil() : sl_number(v));
}
void slL_sets(slT_Table *t, size_t r, const char *col, const char *v) {
  slT_set(t, r, (size_t)slT_column(t, col), sl_string(v));
}

int slL_budget_of(sl_Call *call, double *budget) {
  char err[256];
  *budget = slL_budget(sl_arg_given(call, "budget") ? sl_arg_string(call, "budget") : NULL, err, sizeof err);
  return *budget > 0 ? 0 : sl_arg_error(call, "budget", "%s", err);
}

/* A command that allocates what it predicts cannot go past what this
** process may really use: a budget given for another machine ("80GB" for a
** GPU) still answers what would fit there, but only memory_predict and
** attention_accounting, which allocate nothing, may plan beyond this one. */
int slL_run_budget_of(sl_Call *call, double *budget) {
  if (slL_budget_of(call, budget) != 0) return -1;
  double here = sl_memory_budget();
  if (here < *budget) *budget = here;
  return 0;
}

/* For a command that steps a model the session already holds: what the
** model holds (its parameters, gradients and optimizer state, part of the
** predicted peak) is allocated already and no longer counted as available,
** so it is added back to the machine's limit (not to SYSLAB_MEMORY_BUDGET,
** a cap on the whole process). Without this a model that fits, built, is
** refused: the 2.7B preset's 13.6 GB of parameters counted twice. */
int slL_model_budget_of(sl_Call *call, const slM_Graph *g, double *budget) {
  if (slL_budget_of(call, budget) != 0) return -1;
  double here = sl_memory_budget();
  if (g->device == SLM_CPU && strcmp(sl_memory_budget_source(), "SYSLAB_MEMORY_BUDGET") != 0) {
    size_t own[SLM_MEM_NCAT];
    slL_own_bytes(g, own);
    for (int c = 0; c < SLM_MEM_NCAT; c++) here += (double)own[c];
  }
  if (!sl_arg_given(call, "budget") || here < *budget) *budget = here;
  return 0;
}

int slL_device_budget_of(sl_Call *call, int device, double *budget) {
  if (slL_run_budget_of(call, budget) != 0) return -1;
  if (device == SLM_CUDA && !sl_arg_given(call, "budget")) { /* on the GPU the budget is the device's memory */
    slK_DevMemory m;
    slK_dev_memory(&m);
    *budget = (double)(m.free_bytes + m.cached);
  }
  return 0;
}

int slL_precision_arg(sl_Call *call) {
  const char *p = sl_arg_string(call, "precision");
  return strcmp(p, "bf16") == 0 ? SLM_BF16 : strcmp(p, "fp16") == 0 ? SLM_FP16 : SLM_FP32;
}

int slL_is_lm(const slM_Graph *g) { return strcmp(g->family, "lm") == 0; }

/* the prediction for a built model on this batch: the graph walked as it
** is, fused, adapted or compressed (the configuration's formula would see
** only the language model as lm builds it) */
void slL_predict(const slM_Graph *g, int batch, int T, int run, int optimizer, slL_Prediction *p) {
  slL_predict_graph(g, batch, T, run, optimizer, p);
}

/* batch and tokens per sample from the call; T = 0 for image models */
int slL_batch_args(sl_Call *call, const slM_Graph *g, int *batch, int *T) {
  *batch = (int)sl_arg_number(call, "batch");
  *T = slL_is_lm(g) ? (sl_arg_given(call, "context") ? (int)sl_arg_number(call, "context") : g->context) : 0;
  if (*batch < 1 || *batch > 65536) return sl_arg_error(call, "batch", "must be between 1 and 65536");
  if (slL_is_lm(g) && (*T < 1 || *T > g->context))
    return sl_arg_error(call, "context", "must be between 1 and the model's context length %d", g->context);
  return 0;
}

/* gradients and optimizer state a model already holds from earlier training */
void slL_state_bytes(const slM_Graph *g, double *grads, double *optim) {
  *grads = *optim = 0;
  for (int i = 0; i < g->n; i++)
    for (int k = 0; k < g->nodes[i].nparams; k++) {
      const slM_Param *q = g->nodes[i].params[k];
      *grads += q->grad ? 4.0 * (double)q->grad->size : 0;
      *optim += 4.0 * (double)((q->m ? q->m->size : 0) + (q->v ? q->v->size : 0));
    }
}

/* the bytes a model holds by category: its parameters (each once, however
** many nodes share it) and pruning masks, their gradients and optimizer state */
void slL_own_bytes(const slM_Graph *g, size_t own[SLM_MEM_NCAT]) {
  memset(own, 0, SLM_MEM_NCAT * sizeof *own);
  for (int i = 0; i < g->n; i++) {
    if (g->nodes[i].comp.weight_mask) own[SLM_MEM_PARAM] += g->nodes[i].params[0]->value->size;
    for (int k = 0; k < g->nodes[i].nparams; k++) {
      const slM_Param *q = g->nodes[i].params[k];
      int seen = 0;
      for (int j = 0; j <= i && !seen; j++)
        for (int l = 0; l < (j == i ? k : g->nodes[j].nparams) && !seen; l++) seen = g->nodes[j].params[l] == q;
      if (seen) continue;
      own[SLM_MEM_PARAM] += 4 * q->value->size;
      own[SLM_MEM_GRAD] += q->grad ? 4 * q->grad->size : 0;
      own[SLM_MEM_OPTIM] += 4 * ((q->m ? q->m->size : 0) + (q->v ? q->v->size : 0));
    }
  }
}

int slL_refuse_if_over(sl_Call *call, const slL_Prediction *p, double budget) {
  if (p->peak <= budget) return 0;
  char msg[512];
  slL_refusal(p, budget, msg, sizeof msg);
  return sl_error(call, "%s", msg);
}

const char *const slL_runs[] = {"forward", "train", NULL};
const char *const slL_devices[] = {"cpu", "gpu", NULL};
const char *const slL_optimizers[] = {"adamw", "sgd", "none", NULL};

int slL_optimizer_arg(sl_Call *call) {
  const char *o = sl_arg_string(call, "optimizer");
  return strcmp(o, "adamw") == 0 ? SLM_ADAMW : strcmp(o, "sgd") == 0 ? SLM_SGD : -1;
}

int slL_list_ints(sl_Call *call, const char *name, int *out, int max, int lo, int hi) {
  sl_Value l = sl_arg(call, name);
  int n = (int)sl_list_len(l);
  if (n < 1 || n > max) return sl_arg_error(call, name, "must list 1 to %d whole numbers", max), -1;
  for (int i = 0; i < n; i++) {
    sl_Value v = sl_list_get(l, (size_t)i);
    if (v.type != SL_NUMBER || v.u.n != floor(v.u.n) || v.u.n < lo || v.u.n > hi)
      return sl_arg_error(call, name, "must list whole numbers between %d and %d", lo, hi), -1;
    out[i] = (int)v.u.n;
  }
  return n;
}

int slL_preset_list(sl_Call *call, slM_LmSpec *out, int max) {
  sl_Value l = sl_arg(call, "presets");
  int n = (int)sl_list_len(l);
  if (n < 1 || n > max) return sl_arg_error(call, "presets", "must list 1 to %d presets", max), -1;
  for (int i = 0; i < n; i++) {
    const char *name = sl_str(sl_list_get(l, (size_t)i));
    if (!name || slM_lm_preset(name, &out[i]) != 0)
      return sl_arg_error(call, "presets", "'%s' is not a preset: tiny, small, medium, large, xl or 2.7B",
                          name ? name : "?"),
             -1;
  }
  return n;
}

int slL_shard_args(sl_Call *call, const slM_Graph *g, slL_Shard *s) {
  memset(s, 0, sizeof *s);
  double ranks = sl_arg_number(call, "ranks");
  s->on = sl_arg_number(call, "shard_optimizer") != 0;
  if (ranks < 1 || ranks > 4096) return sl_arg_error(call, "ranks", "must be between 1 and 4096");
  if (!s->on && ranks > 1)
    return sl_arg_error(call, "ranks",
                        "counts the processes that share the optimizer state: give shard_optimizer=true");
  s->ranks = (int)ranks;
  if (!s->on || !g) return 0;
  slM_Param **ps;
  int n = slM_trainable_params(g, &ps);
  size_t *sizes = calloc((size_t)n + 1, sizeof *sizes);
  for (int i = 0; i < n; i++) sizes[i] = ps[i]->value->size;
  s->share = slL_largest_share(sizes, n, s->ranks, &s->rank);
  free(sizes), free(ps);
  return 0;
}

void slL_shard_step(slM_Graph *g, const slL_Shard *s, const slM_TrainConfig *c, long step) {
  slM_Param **ps;
  int n = slM_trainable_params(g, &ps);
  size_t *sizes = calloc((size_t)n + 1, sizeof *sizes);
  int *owner = calloc((size_t)n + 1, sizeof *owner);
  for (int i = 0; i < n; i++) sizes[i] = ps[i]->value->size;
  slM_shard_owners(sizes, n, s->ranks, owner);
  for (int i = 0; i < n; i++)
    if (owner[i] == s->rank) slM_param_step(ps[i], c, c->lr, step);
  free(sizes), free(owner), free(ps);
}
