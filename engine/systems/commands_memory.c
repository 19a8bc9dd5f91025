/*
** commands_memory.c - the profiling and memory commands of the Systems
** domain: the per-operation profile of a step, memory predicted from a
** configuration, predicted against measured peaks, the memory profile of one
** step (categories, largest allocations, timeline), attention's memory
** accounting and the attention benchmark (the CS336 systems assignment's problem pytorch_attention).
**
** commands.c registers them with the language-model, precision and
** fusion commands; the argument helpers both files use are in args.c.
** Every command that would run a step predicts its memory first and
** refuses, with the figures, what would not fit in the budget.
*/
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "args.h"
#include "commands_memory.h"
#include "graph/devices.h"
#include "graph/ops.h"
#include "graph/precision.h"
#include "graph/product.h"
#include "graph/profile.h"
#include "kernels/device.h"
#include "runner.h"

/* --------------------------------------------------------------- profile */

static slT_Table *profile_by_kind(const slM_Graph *g, const slM_Profile *inf, const slM_Profile *tr) {
  const char *cols[] = {"op",         "nodes", "inference_ms", "train_forward_ms", "train_backward_ms", "train_share",
                        "flop_share", NULL};
  slT_Table *t = slL_table(cols);
  double total = 0, flops = 0;
  for (int i = 0; i < g->n; i++) total += tr->forward[i] + tr->backward[i], flops += g->nodes[i].flops;
  for (int i = 0; i < g->n; i++) {
    const char *op = slM_op_name(g->nodes[i].op);
    size_t r = 0;
    while (r < t->nrows && strcmp(sl_str(slT_get(t, r, 0)), op) != 0) r++;
    if (r == t->nrows) {
      slT_add_row(t);
      slL_sets(t, r, "op", op);
      for (int c = 1; c < 7; c++) slT_set(t, r, (size_t)c, sl_number(0));
    }
    double add[6] = {1,
                     1e3 * inf->forward[i] / inf->steps,
                     1e3 * tr->forward[i] / tr->steps,
                     1e3 * tr->backward[i] / tr->steps,
                     total > 0 ? (tr->forward[i] + tr->backward[i]) / total : 0,
                     flops > 0 ? g->nodes[i].flops / flops : 0};
    for (int c = 0; c < 6; c++) slT_set(t, r, (size_t)c + 1, sl_number(slT_get(t, r, (size_t)c + 1).u.n + add[c]));
  }
  for (int c = 2; c <= 5; c++) slT_mark_timing(t, c);
  return t;
}

static slT_Table *profile_by_node(const slM_Graph *g, const slM_Profile *tr) {
  const char *cols[] = {"node", "op", "forward_ms", "backward_ms", "gflop", NULL};
  slT_Table *t = slL_table(cols);
  for (int i = 0; i < g->n; i++) {
    size_t r = slT_add_row(t);
    slL_sets(t, r, "node", g->nodes[i].name);
    slL_sets(t, r, "op", slM_op_name(g->nodes[i].op));
    slL_setn(t, r, "forward_ms", 1e3 * tr->forward[i] / tr->steps);
    slL_setn(t, r, "backward_ms", 1e3 * tr->backward[i] / tr->steps);
    slL_setn(t, r, "gflop", g->nodes[i].flops / 1e9);
  }
  slT_mark_timing(t, 2);
  slT_mark_timing(t, 3);
  return t;
}

static slT_Table *profile_gemm(const slM_Graph *g, const slM_Profile *inf, const slM_Profile *tr) {
  const char *cols[] = {"run", "gemm_ms", "other_ms", "gemm_share", NULL};
  slT_Table *t = slL_table(cols);
  for (int k = 0; k < 3; k++) {
    double gemm = 0, other = 0;
    for (int i = 0; i < g->n; i++) {
      double v = k == 0   ? inf->forward[i] / inf->steps
                 : k == 1 ? tr->forward[i] / tr->steps
                          : tr->backward[i] / tr->steps;
      if (slM_op(g->nodes[i].op)->flags & SLM_OP_PRODUCT) gemm += v;
      else other += v;
    }
    size_t r = slT_add_row(t);
    slL_sets(t, r, "run", k == 0 ? "inference" : k == 1 ? "training forward" : "training backward");
    slL_setn(t, r, "gemm_ms", gemm * 1e3);
    slL_setn(t, r, "other_ms", other * 1e3);
    slL_setn(t, r, "gemm_share", gemm + other > 0 ? gemm / (gemm + other) : 0);
  }
  slT_mark_timing(t, 1);
  slT_mark_timing(t, 2);
  slT_mark_timing(t, 3);
  return t;
}

/* inside attention: the two products against the softmax (with its mask) */
static slT_Table *profile_attention(const slM_Graph *g, const slM_Profile *inf) {
  const char *cols[] = {"part", "forward_ms", "time_share", "flop_share", NULL};
  slT_Table *t = slL_table(cols);
  const char *parts[4] = {"scores (q k^T)", "mask and softmax", "context (p v)", "fused attention"};
  double ms[4] = {0}, fl[4] = {0}, tms = 0, tfl = 0;
  for (int i = 0; i < g->n; i++) {
    slM_Op op = g->nodes[i].op;
    int k = op == OP_SCORES                                                                             ? 0
            : op == OP_CONTEXT                                                                          ? 2
            : op == OP_SOFTMAX || op == OP_CAUSAL_MASK || op == OP_MASK_FILL || op == OP_MASKED_SOFTMAX ? 1
            : op == OP_ATTENTION                                                                        ? 3
                                                                                                        : -1;
    if (k < 0) continue;
    ms[k] += inf->forward[i] / inf->steps, fl[k] += g->nodes[i].flops;
  }
  for (int k = 0; k < 4; k++) tms += ms[k], tfl += fl[k];
  for (int k = 0; k < 4 && tms > 0; k++) {
    if (k == 3 && ms[3] == 0) continue;
    size_t r = slT_add_row(t);
    slL_sets(t, r, "part", parts[k]);
    slL_setn(t, r, "forward_ms", ms[k] * 1e3);
    slL_setn(t, r, "time_share", ms[k] / tms);
    slL_setn(t, r, "flop_share", tfl > 0 ? fl[k] / tfl : 0);
  }
  slT_mark_timing(t, 1);
  slT_mark_timing(t, 2);
  return t;
}

int slL_cmd_profile(sl_Call *call, sl_Value *result) {
  slM_Graph *g = (slM_Graph *)slL_model_of(call, "model");
  int batch, T, steps = (int)sl_arg_number(call, "steps");
  if (slL_batch_args(call, g, &batch, &T) != 0) return -1;
  if (steps < 1 || steps > 1000) return sl_arg_error(call, "steps", "must be between 1 and 1000");
  double budget;
  slL_Prediction p;
  if (slL_model_budget_of(call, g, &budget) != 0) return -1;
  slL_predict(g, batch, T, SLL_RUN_TRAIN, -1, &p);
  if (slL_refuse_if_over(call, &p, budget) != 0) return -1;
  slL_Batch b;
  slL_batch_init(&b, g, batch, T, 1);
  slL_run_step(g, &b, 1, NULL, 0); /* warm: buffers allocated, threads started */
  slM_Profile *inf = slM_profile_attach(g);
  for (int s = 0; s < steps && !sl_interrupted(); s++) slL_run_step(g, &b, 0, NULL, 0);
  inf->steps = steps;
  slM_Profile *tr = slM_profile_attach(g);
  for (int s = 0; s < steps && !sl_interrupted(); s++) slL_run_step(g, &b, 1, NULL, 0);
  tr->steps = steps;
  slM_profile_detach(g);
  slM_release_activations(g);
  slL_batch_free(&b);
  if (sl_interrupted()) {
    slM_profile_free(inf);
    slM_profile_free(tr);
    return sl_interrupted_error(call);
  }
  sl_Value rec = sl_record_new();
  sl_record_set(rec, "by_op", slT_value(profile_by_kind(g, inf, tr)));
  sl_record_set(rec, "by_node", slT_value(profile_by_node(g, tr)));
  sl_record_set(rec, "gemm", slT_value(profile_gemm(g, inf, tr)));
  sl_record_set(rec, "attention", slT_value(profile_attention(g, inf)));
  slM_profile_free(inf);
  slM_profile_free(tr);
  *result = rec;
  return 0;
}

/* ---------------------------------------------------------------- memory */

static void prediction_row(slT_Table *t, size_t r, const slL_Prediction *p, double budget) {
  slL_setn(t, r, "params_gb", p->params / 1e9);
  slL_setn(t, r, "grads_gb", p->grads / 1e9);
  slL_setn(t, r, "optimizer_gb", p->optim / 1e9);
  slL_setn(t, r, "activations_gb", p->activations / 1e9);
  slL_setn(t, r, "activation_grads_gb", p->act_grads / 1e9);
  slL_setn(t, r, "scratch_gb", p->scratch / 1e9);
  slL_setn(t, r, "peak_gb", p->peak / 1e9);
  slL_setn(t, r, "residual_stream_mb", p->residual / 1e6);
  slL_setn(t, r, "attention_scores_gb", p->scores / 1e9);
  slL_setn(t, r, "budget_gb", budget / 1e9);
  slL_sets(t, r, "status", p->peak <= budget ? "OK" : "OOM");
}

int slL_cmd_memory_predict(sl_Call *call, sl_Value *result) {
  slM_LmSpec specs[8];
  int contexts[16];
  int np = slL_preset_list(call, specs, 8), nc = slL_list_ints(call, "contexts", contexts, 16, 1, 1 << 20);
  if (np < 0 || nc < 0) return -1;
  int batch = (int)sl_arg_number(call, "batch"), run = strcmp(sl_arg_string(call, "run"), "train") == 0;
  if (batch < 1) return sl_arg_error(call, "batch", "must be at least 1");
  double budget;
  slL_Shard sh;
  if (slL_budget_of(call, &budget) != 0 || slL_shard_args(call, NULL, &sh) != 0) return -1;
  const char *cols[] = {"config",
                        "context",
                        "run",
                        "precision",
                        "params_gb",
                        "grads_gb",
                        "optimizer_gb",
                        "activations_gb",
                        "activation_grads_gb",
                        "scratch_gb",
                        "peak_gb",
                        "residual_stream_mb",
                        "attention_scores_gb",
                        "budget_gb",
                        "status",
                        NULL};
  slT_Table *t = slL_table(cols);
  for (int p = 0; p < np; p++)
    for (int c = 0; c < nc; c++) {
      slL_Prediction m;
      slL_predict_lm(&specs[p], batch, contexts[c], run, slL_optimizer_arg(call), slL_precision_arg(call), &m);
      if (sh.on && run == SLL_RUN_TRAIN) { /* the rank with the largest share of the optimizer state */
        size_t *sizes = malloc((9 * (size_t)specs[p].layers + 3) * sizeof *sizes);
        int rank, n = slL_lm_param_sizes(&specs[p], sizes);
        slL_predict_shard(&m, slL_largest_share(sizes, n, sh.ranks, &rank), slL_optimizer_arg(call));
        free(sizes);
      }
      size_t r = slT_add_row(t);
      slL_sets(t, r, "config", specs[p].name);
      slL_setn(t, r, "context", contexts[c]);
      slL_sets(t, r, "run", slL_runs[run]);
      slL_sets(t, r, "precision", sl_arg_string(call, "precision"));
      prediction_row(t, r, &m, budget);
    }
  *result = slT_value(t);
  return 0;
}

/* The names of memory_check's training rows, by the optimizer argument */
static const char *train_row(int optimizer) {
  return optimizer == SLM_ADAMW ? "train (AdamW step)"
         : optimizer == SLM_SGD ? "train (SGD step)"
                                : "train (no optimizer step)";
}

/* One rank's training step with the optimizer state sharded: on a copy of
** the model without optimizer state, two steps that update (and so keep
** the state of) the largest share only; its peak beyond what was live. */
static size_t shard_peak(const slM_Graph *g, int batch, int T, const slL_Shard *sh, const slM_TrainConfig *c) {
  slM_Graph *m = slM_graph_copy(g, 1);
  slL_Batch b;
  slL_batch_init(&b, m, batch, T, 1);
  slM_product_release();
  size_t own[SLM_MEM_NCAT], base = slM_mem_total_live();
  slL_own_bytes(m, own);
  for (int k = 0; k < SLM_MEM_NCAT; k++) base -= own[k];
  slM_mem_reset();
  for (int i = 0; i < 2; i++) {
    slL_run_step(m, &b, 1, NULL, i);
    slL_shard_step(m, sh, c, i);
  }
  size_t peak = slM_mem_total_peak() - base;
  slL_batch_free(&b);
  slM_graph_free(m);
  slM_product_release();
  return peak;
}

/* Predicted against measured, for a model that fits. The steps run on a
** fresh deep copy: the model keeps its weights, gradients and optimizer
** state, and what it holds from earlier training does not blur the
** figures. Measured: the tagged allocator's peak over the steps, less what
** the rest of the session holds. */
int slL_cmd_memory_check(sl_Call *call, sl_Value *result) {
  const slM_Graph *model = slL_model_of(call, "model");
  int batch, T, optimizer = slL_optimizer_arg(call);
  if (slL_cpu_only(call, model) != 0 || slL_batch_args(call, model, &batch, &T) != 0) return -1;
  double budget;
  slL_Shard sh;
  if (slL_run_budget_of(call, &budget) != 0 || slL_shard_args(call, model, &sh) != 0) return -1;
  const char *cols[] = {"run", "predicted_mb", "measured_mb", "ratio", NULL};
  slT_Table *t = slL_table(cols);
  slM_TrainConfig c = {1, batch, 1e-3, 0.9, 0, optimizer == SLM_SGD ? SLM_SGD : SLM_ADAMW, SLM_CONSTANT, 0, 0};
  for (int run = 0; run < 2; run++) {
    slL_Prediction p;
    slL_predict(model, batch, T, run, run ? optimizer : SLM_ADAMW, &p);
    p.peak += p.params; /* the copy's parameters beside the model's own */
    if (slL_refuse_if_over(call, &p, budget) != 0) {
      slT_free(t);
      return -1;
    }
    p.peak -= p.params;
    slM_Graph *g = slM_graph_copy(model, 1);
    slL_Batch b;
    slL_batch_init(&b, g, batch, T, 1);
    slM_product_release();
    size_t own[SLM_MEM_NCAT], base = slM_mem_total_live();
    slL_own_bytes(g, own);
    for (int k = 0; k < SLM_MEM_NCAT; k++) base -= own[k];
    size_t peak = slL_measure_peak(g, &b, run, run && optimizer >= 0 ? &c : NULL, run ? 2 : 1) - base;
    slL_batch_free(&b);
    slM_graph_free(g);
    slM_product_release();
    if (sl_interrupted()) {
      slT_free(t);
      return sl_interrupted_error(call);
    }
    size_t r = slT_add_row(t);
    slL_sets(t, r, "run", run ? train_row(optimizer) : "forward");
    slL_setn(t, r, "predicted_mb", p.peak / 1e6);
    slL_setn(t, r, "measured_mb", (double)peak / 1e6);
    slL_setn(t, r, "ratio", p.peak / (double)peak);
  }
  if (sh.on) { /* the rank with the largest share: its prediction, then its step measured */
    slL_Prediction p;
    slL_predict(model, batch, T, SLL_RUN_TRAIN, c.optimizer, &p);
    slL_predict_shard(&p, sh.share, c.optimizer);
    p.peak += p.params; /* the copy's parameters beside the model's own */
    if (slL_refuse_if_over(call, &p, budget) != 0) {
      slT_free(t);
      return -1;
    }
    p.peak -= p.params;
    size_t peak = shard_peak(model, batch, T, &sh, &c);
    char what[96];
    snprintf(what, sizeof what, "train, optimizer sharded: rank %d of %d", sh.rank, sh.ranks);
    size_t r = slT_add_row(t);
    slL_sets(t, r, "run", what);
    slL_setn(t, r, "predicted_mb", p.peak / 1e6);
    slL_setn(t, r, "measured_mb", (double)peak / 1e6);
    slL_setn(t, r, "ratio", p.peak / (double)peak);
  }
  *result = slT_value(t);
  return 0;
}

/* A model on the GPU: the device's bytes by category at the step's peak
** (the caching allocator's counters, kernels/device.c) against the graph's
** prediction of them, which the step was checked against before it ran. */
static sl_Value device_figures(const slM_Graph *g, int batch, int train) {
  slK_DevMemory m;
  slK_dev_memory(&m);
  double by[SLM_MEM_NCAT], predicted = slM_device_predict(g, batch, train, by);
  const char *cols[] = {"category", "mb_at_peak", "predicted_mb", NULL};
  slT_Table *t = slL_table(cols);
  for (int c = 0; c < SLM_MEM_NCAT; c++) {
    size_t r = slT_add_row(t);
    slL_sets(t, r, "category", slM_mem_category_names[c]);
    slL_setn(t, r, "mb_at_peak", (double)m.at_peak[c] / 1e6);
    slL_setn(t, r, "predicted_mb", by[c] / 1e6);
  }
  sl_Value rec = sl_record_new();
  sl_record_set(rec, "gpu", sl_string(slK_dev_why()));
  sl_record_set(rec, "peak_mb", sl_number((double)m.peak / 1e6));
  sl_record_set(rec, "predicted_mb", sl_number(predicted / 1e6));
  sl_record_set(rec, "cached_mb", sl_number((double)m.cached / 1e6));
  sl_record_set(rec, "categories", slT_value(t));
  return rec;
}

int slL_cmd_memory_profile(sl_Call *call, sl_Value *result) {
  slM_Graph *model = (slM_Graph *)slL_model_of(call, "model"), *g = model;
  int batch, T, train = strcmp(sl_arg_string(call, "run"), "train") == 0, top = (int)sl_arg_number(call, "top");
  if (slL_batch_args(call, g, &batch, &T) != 0) return -1;
  double budget;
  slL_Prediction p;
  slL_Shard sh;
  if (slL_model_budget_of(call, g, &budget) != 0 || slL_shard_args(call, g, &sh) != 0) return -1;
  if (sh.on && (!train || g->device != SLM_CPU))
    return sl_arg_error(call, "shard_optimizer",
                        "applies to run=train on the CPU (the update makes the optimizer state)");
  slL_predict(g, batch, T, train, -1, &p);
  if (sh.on) slL_predict_shard(&p, sh.share, SLM_ADAMW);
  if (slL_refuse_if_over(call, &p, budget) != 0) return -1;
  char why[512];
  if (slM_device_fits(g, batch, train, why, sizeof why) != 0) return sl_arg_error(call, "batch", "%s", why);
  /* sharded: one rank's step, on a copy without optimizer state, whose update keeps its share's */
  if (sh.on) g = slM_graph_copy(model, 1);
  slL_Batch b;
  slL_batch_init(&b, g, batch, T, 1);
  slM_release_activations(g);
  slM_product_release();
  slK_dev_reset_peak();
  g->fault[0] = '\0';
  /* The counters see every tensor of the session. What other models hold
  ** stays as it is while this one steps, so it is measured now and taken
  ** off: the figures are this model's alone. */
  size_t live[SLM_MEM_NCAT], own[SLM_MEM_NCAT], others[SLM_MEM_NCAT], others_total = 0;
  slM_mem_live_by(live);
  slL_own_bytes(g, own);
  for (int c = 0; c < SLM_MEM_NCAT; c++) others[c] = live[c] > own[c] ? live[c] - own[c] : 0, others_total += others[c];
  slM_mem_record(1);
  slM_mem_reset();
  slL_run_step(g, &b, train, NULL, 0);
  slM_TrainConfig adamw = {1, batch, 1e-3, 0.9, 0, SLM_ADAMW, SLM_CONSTANT, 0, 0};
  if (sh.on) slL_shard_step(g, &sh, &adamw, 0);
  size_t n, na, peak[SLM_MEM_NCAT];
  const slM_MemEvent *ev = slM_mem_timeline(&n);
  const slM_MemAlloc *al = slM_mem_allocations(&na);
  slM_mem_peak_by(peak);
  for (int c = 0; c < SLM_MEM_NCAT; c++) peak[c] -= others[c] < peak[c] ? others[c] : peak[c];
  double grads, optim; /* held from earlier steps: live through this one too */
  slL_state_bytes(g, &grads, &optim);
  double predicted = p.peak + (sh.on ? 0 : optim) + (train ? 0 : grads); /* sharded: the share is in p */
  const char *ccols[] = {"category", "mb_at_peak", NULL};
  slT_Table *cat = slL_table(ccols);
  for (int c = 0; c < SLM_MEM_NCAT; c++) {
    size_t r = slT_add_row(cat);
    slL_sets(cat, r, "category", slM_mem_category_names[c]);
    slL_setn(cat, r, "mb_at_peak", (double)peak[c] / 1e6);
  }
  const char *tcols[] = {"index", "phase", "node", "live_mb", NULL};
  slT_Table *tl = slL_table(tcols);
  for (size_t i = 0; i < n; i++) {
    size_t r = slT_add_row(tl);
    slL_setn(tl, r, "index", (double)i);
    slL_sets(tl, r, "phase", ev[i].backward ? "backward" : "forward");
    slL_sets(tl, r, "node", ev[i].node >= 0 && ev[i].node < g->n ? g->nodes[ev[i].node].name : "");
    slL_setn(tl, r, "live_mb", (double)(ev[i].live - others_total) / 1e6);
  }
  /* the largest allocations: a selection sort of the first `top` */
  const char *acols[] = {"rank", "mb", "category", "node", "op", "phase", "shape", NULL};
  slT_Table *at = slL_table(acols);
  char *taken = calloc(na ? na : 1, 1);
  for (int k = 0; k < top && (size_t)k < na; k++) {
    size_t best = na;
    for (size_t i = 0; i < na; i++)
      if (!taken[i] && (best == na || al[i].bytes > al[best].bytes)) best = i;
    taken[best] = 1;
    size_t r = slT_add_row(at);
    slL_setn(at, r, "rank", k + 1);
    slL_setn(at, r, "mb", (double)al[best].bytes / 1e6);
    slL_sets(at, r, "category", slM_mem_category_names[al[best].category]);
    slL_sets(at, r, "node", al[best].node_name);
    slL_sets(at, r, "op", al[best].op);
    slL_sets(at, r, "phase", al[best].backward ? "backward" : "forward");
    slL_sets(at, r, "shape", al[best].shape);
  }
  free(taken);
  slM_mem_record(0);
  slL_batch_free(&b);
  sl_Value rec = sl_record_new();
  sl_record_set(rec, "peak_mb", sl_number((double)(slM_mem_total_peak() - others_total) / 1e6));
  sl_record_set(rec, "predicted_mb", sl_number(predicted / 1e6));
  sl_record_set(rec, "categories", slT_value(cat));
  sl_record_set(rec, "top", slT_value(at));
  sl_record_set(rec, "timeline", slT_value(tl));
  if (g->device != SLM_CPU) sl_record_set(rec, "device", device_figures(g, batch, train));
  if (sh.on) {
    sl_record_set(rec, "rank", sl_number(sh.rank));
    sl_record_set(rec, "ranks", sl_number(sh.ranks));
  }
  slM_release_activations(g);
  if (g != model) slM_graph_free(g), g = model;
  if (sl_interrupted()) { /* the step was cut: its figures are not the step's */
    sl_release(rec);
    g->fault[0] = '\0';
    return sl_interrupted_error(call);
  }
  if (g->fault[0]) {
    sl_release(rec);
    int rc = sl_error(call, "%s", g->fault);
    g->fault[0] = '\0';
    return rc;
  }
  *result = rec;
  return 0;
}

/* the attention-memory accounting the CS336 systems assignment asks for (pytorch_attention): formula against the tensors allocated */
int slL_cmd_attention_accounting(sl_Call *call, sl_Value *result) {
  int T = (int)sl_arg_number(call, "context"), D = (int)sl_arg_number(call, "d_model");
  int B = (int)sl_arg_number(call, "batch"), H = (int)sl_arg_number(call, "heads");
  if (T < 1 || D < 2 || B < 1 || H < 1 || D % H || (D / H) % 2)
    return sl_error(call, "need context >= 1, batch >= 1, and heads dividing d_model into even widths");
  slM_LmSpec s = {"", 16, T, D, 2 * D, 1, H};
  double budget;
  slL_Prediction p;
  if (slL_budget_of(call, &budget) != 0) return -1;
  slL_predict_lm(&s, B, T, SLL_RUN_FORWARD, -1, SLM_FP32, &p);
  if (slL_refuse_if_over(call, &p, budget) != 0) return -1;
  char err[256];
  slM_Graph *g = slM_lm(&s, 0, err, sizeof err);
  slL_Batch b;
  slL_batch_init(&b, g, B, T, 1);
  if (!sl_interrupted()) slL_run_step(g, &b, 0, NULL, 0);
  if (sl_interrupted()) {
    slL_batch_free(&b);
    slM_graph_free(g);
    return sl_interrupted_error(call);
  }
  /* clang-format off */
  struct { const char *what, *formula, *node; double count; } rows[] = {
    {"input (residual stream)", "B x S x D x 4", "token_embeddings", (double)B * T * D},
    {"Q, K, V", "3 x B x S x D x 4", "layers_0_attn_q_proj", 3.0 * B * T * D},
    {"attention scores (Q K^T)", "B x H x S x S x 4", "layers_0_attn_scores", (double)B * H * T * T},
    {"masked scores", "B x H x S x S x 4", "layers_0_attn_causal_mask", (double)B * H * T * T},
    {"attention weights (softmax)", "B x H x S x S x 4", "layers_0_attn_softmax", (double)B * H * T * T},
    {"attention output", "B x S x D x 4", "layers_0_attn_context", (double)B * T * D},
  };
  /* clang-format on */
  const char *cols[] = {"component", "formula", "formula_mb", "measured_mb", NULL};
  slT_Table *t = slL_table(cols);
  double ft = 0, mt = 0;
  for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++) {
    slM_Node *n = &g->nodes[slM_find_node(g, rows[i].node)];
    double measured = 4.0 * (double)n->out->size * (i == 1 ? 3 : 1);
    size_t r = slT_add_row(t);
    slL_sets(t, r, "component", rows[i].what);
    slL_sets(t, r, "formula", rows[i].formula);
    slL_setn(t, r, "formula_mb", 4 * rows[i].count / 1e6);
    slL_setn(t, r, "measured_mb", measured / 1e6);
    ft += 4 * rows[i].count, mt += measured;
  }
  size_t r = slT_add_row(t);
  slL_sets(t, r, "component", "total");
  slL_setn(t, r, "formula_mb", ft / 1e6);
  slL_setn(t, r, "measured_mb", mt / 1e6);
  slL_batch_free(&b);
  slM_graph_free(g);
  *result = slT_value(t);
  return 0;
}

/* attention alone over sequence length x width: forward and backward time
** of its nodes (from the profiler, which on the GPU waits after each node)
** and the memory live before backward, on the CPU or the GPU, in float32 or
** with the products' inputs in bf16 or fp16 (the CS336 mixed-precision
** question of the attention scores) */
int slL_cmd_attention_bench(sl_Call *call, sl_Value *result) {
  int contexts[16], widths[16];
  int nc = slL_list_ints(call, "contexts", contexts, 16, 2, 1 << 20),
      nw = slL_list_ints(call, "widths", widths, 16, 2, 16384);
  int B = (int)sl_arg_number(call, "batch"), steps = (int)sl_arg_number(call, "steps");
  int precision = slL_precision_arg(call);
  if (nc < 0 || nw < 0) return -1;
  if (B < 1 || steps < 1) return sl_error(call, "batch and steps must be at least 1");
  char why[512] = "";
  int device = slM_device_parse(sl_arg_string(call, "device"));
  if (slM_device_usable(sl_arg_string(call, "device"), why, sizeof why) != 0)
    return sl_arg_error(call, "device", "%s", why);
  double budget;
  if (slL_device_budget_of(call, device, &budget) != 0) return -1;
  const char *cols[] = {
      "context",      "d_model", "precision", "status", "forward_ms", "backward_ms", "memory_before_backward_mb",
      "predicted_mb", NULL};
  slT_Table *t = slL_table(cols);
  for (int c = 0; c < nc && !sl_interrupted() && !why[0]; c++)
    for (int w = 0; w < nw && !sl_interrupted(); w++) {
      slM_LmSpec s = {"", 16, contexts[c], widths[w] % 2 ? widths[w] + 1 : widths[w], widths[w], 1, 1};
      slL_Prediction p;
      slL_predict_lm(&s, B, contexts[c], SLL_RUN_TRAIN, -1, precision, &p);
      size_t r = slT_add_row(t);
      slL_setn(t, r, "context", contexts[c]);
      slL_setn(t, r, "d_model", widths[w]);
      slL_sets(t, r, "precision", slM_precision_names[precision]);
      slL_setn(t, r, "predicted_mb", p.peak / 1e6);
      if (p.peak > budget) {
        slL_sets(t, r, "status", "OOM");
        continue;
      }
      slM_Graph *g = slM_lm(&s, 0, why, sizeof why);
      if (g) g->precision = precision; /* the products' inputs: the scores and the context in bf16 or fp16 */
      if (!g || !(g = slM_graph_move(g, device, why, sizeof why))) break;
      slL_Batch b;
      slL_batch_init(&b, g, B, contexts[c], 1);
      slL_run_step(g, &b, 1, NULL, 0);
      slM_Profile *pr = slM_profile_attach(g);
      for (int k = 0; k < steps && !sl_interrupted(); k++) slL_run_step(g, &b, 1, NULL, 0);
      slM_profile_detach(g);
      double f = 0, bw = 0, mem = 0;
      for (int i = 0; i < g->n; i++) {
        slM_Op op = g->nodes[i].op;
        int part = op == OP_SCORES || op == OP_CAUSAL_MASK || op == OP_SOFTMAX || op == OP_CONTEXT ||
                   op == OP_MASKED_SOFTMAX || op == OP_ROPE ||
                   (op == OP_LINEAR && strstr(g->nodes[i].name, "attn_") && !strstr(g->nodes[i].name, "output"));
        if (!part) continue;
        f += pr->forward[i], bw += pr->backward[i];
        if (g->nodes[i].out) mem += 4.0 * (double)g->nodes[i].out->size;
        if (g->nodes[i].saved) mem += 4.0 * (double)g->nodes[i].saved->size;
      }
      if (g->fault[0]) snprintf(why, sizeof why, "%.400s", g->fault);
      slL_sets(t, r, "status", g->fault[0] ? "failed" : "OK");
      slL_setn(t, r, "forward_ms", 1e3 * f / steps);
      slL_setn(t, r, "backward_ms", 1e3 * bw / steps);
      slL_setn(t, r, "memory_before_backward_mb", mem / 1e6);
      slM_profile_free(pr);
      slL_batch_free(&b);
      slM_graph_free(g);
      if (why[0]) break;
    }
  if (why[0]) { /* a model that could not be built or run on the device: the reason, not a partial table */
    slT_free(t);
    return sl_arg_error(call, "device", "%s", why);
  }
  slT_mark_timing(t, slT_column(t, "forward_ms"));
  slT_mark_timing(t, slT_column(t, "backward_ms"));
  *result = slT_value(t);
  return sl_interrupted() ? (sl_release(*result), *result = sl_nil(), sl_interrupted_error(call)) : 0;
}
