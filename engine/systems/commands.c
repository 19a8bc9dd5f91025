/*
** commands.c - the systems commands: the language-model family and its
** training, benchmarks with warm-up, mixed precision, and fused against
** eager execution (the CS336 systems assignment, and ADLS Lab 4 Part A: when torch.compile helps); the registry of the
** whole domain, whose profiling and memory commands are in
** commands_memory.c. The argument and table helpers both files use are in
** args.c.
**
** They form their own domain above the graph domain (graph/commands.c),
** listed right after it: they act on the same model objects. Every command that
** would allocate a model or run a step predicts the memory first and
** refuses, with the predicted figures, what would not fit in the budget
** (the engine's, sl_memory_budget, unless a budget is given).
*/
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "args.h"
#include "graph/devices.h"
#include "kernels/device.h"
#include "commands_memory.h"
#include "graph/passes.h"
#include "graph/precision.h"
#include "graph/product.h"
#include "graph/profile.h"
#include "graph/trainrun.h"
#include "runner.h"

/* ------------------------------------------------------------- the model */

static int cmd_lm(sl_Call *call, sl_Value *result) {
  slM_LmSpec s;
  if (slM_lm_preset(sl_arg_string(call, "preset"), &s) != 0) return sl_arg_error(call, "preset", "unknown preset");
  const char *dims[] = {"d_model", "d_ff", "layers", "heads", "vocab", "context"};
  int *field[] = {&s.d_model, &s.d_ff, &s.layers, &s.heads, &s.vocab, &s.context};
  for (int i = 0; i < 6; i++)
    if (sl_arg_given(call, dims[i])) {
      *field[i] = (int)sl_arg_number(call, dims[i]);
      if (i < 4) s.name[0] = '\0'; /* no longer the preset's shape */
    }
  char err[512];
  if (slM_lm_check(&s, err, sizeof err) != 0) return sl_error(call, "%s", err);
  if (slM_device_usable(sl_arg_string(call, "device"), err, sizeof err) != 0)
    return sl_arg_error(call, "device", "%s", err);
  double budget;
  if (slL_run_budget_of(call, &budget) != 0) return -1;
  slL_Prediction p;
  slL_predict_lm(&s, 1, 1, SLL_RUN_FORWARD, SLM_ADAMW, SLM_FP32, &p);
  if (p.params > budget)
    return sl_error(call, "OOM: the parameters alone take %.2f GB, over the budget of %.2f GB", p.params / 1e9,
                    budget / 1e9);
  slM_Graph *g = slM_lm(&s, (uint64_t)sl_arg_number(call, "seed"), err, sizeof err);
  if (!g) return sl_error(call, "%s", err);
  if (sl_interrupted()) { /* its weights were drawn in part */
    slM_graph_free(g);
    return sl_interrupted_error(call);
  }
  if (!(g = slM_graph_move(g, slM_device_parse(sl_arg_string(call, "device")), err, sizeof err)))
    return sl_arg_error(call, "device", "%s", err);
  *result = sl_object_new(&slM_model_class, g);
  return 0;
}

static int cmd_precision(sl_Call *call, sl_Value *result) {
  slM_Graph *g = slM_graph_copy(slL_model_of(call, "model"), 0);
  g->precision = slL_precision_arg(call);
  *result = sl_object_new(&slM_model_class, g);
  return 0;
}

/* ------------------------------------------------------------- training */

static int interrupted(void *ud) {
  (void)ud;
  return sl_interrupted();
}

/* one micro-batch of a step split by accumulate.c: its rows of the batch's token windows */
typedef struct {
  const int32_t *tok, *tgt;
  int T;
} LmRows;

static double lm_micro(void *ud, slM_Graph *g, int lo, int hi, long *correct) {
  const LmRows *m = ud;
  slM_lm_forward(g, m->tok + (size_t)lo * m->T, m->tgt + (size_t)lo * m->T, hi - lo, m->T, 1);
  return g->stopped ? NAN : slM_backward(g, NULL, hi - lo);
}

/* Where a run stands, for its checkpoint: the next step, the data's random
** state, the loss summed since the last row, and the rows so far. */
static void put_progress(slU_Text *o, int step, const slM_Rng *rng, double sum, int seen, double elapsed, double comm,
                         const slT_Table *t) {
  slU_put_u32(o, (uint32_t)step), slU_put_u64(o, rng->state), slU_put_f64(o, sum), slU_put_u32(o, (uint32_t)seen);
  slU_put_f64(o, elapsed), slU_put_f64(o, comm), slU_put_u32(o, (uint32_t)t->nrows);
  for (size_t r = 0; r < t->nrows; r++)
    for (size_t c = 0; c < t->ncols; c++) slU_put_f64(o, slT_get(t, r, c).u.n);
}

static int get_progress(const char *bytes, size_t n, int *step, slM_Rng *rng, double *sum, int *seen, double *elapsed,
                        double *comm, slT_Table *t) {
  slU_Reader r = {bytes, n, 0, 0};
  *step = (int)slU_get_u32(&r), rng->state = slU_get_u64(&r), *sum = slU_get_f64(&r), *seen = (int)slU_get_u32(&r);
  *elapsed = slU_get_f64(&r), *comm = slU_get_f64(&r);
  uint32_t rows = slU_get_u32(&r);
  if (r.bad || rows > 1000000) return -1;
  for (uint32_t i = 0; i < rows && !r.bad; i++) {
    size_t row = slT_add_row(t);
    for (size_t c = 0; c < t->ncols; c++) slT_set(t, row, c, sl_number(slU_get_f64(&r)));
  }
  return r.bad ? -1 : 0;
}

/* one row of the table: the mean loss since the last one */
static void loss_row(slT_Table *t, int step, double loss, double elapsed, double tokens, double comm, int with_comm) {
  size_t r = slT_add_row(t);
  slL_setn(t, r, "step", step);
  slL_setn(t, r, "loss", loss);
  slL_setn(t, r, "seconds", elapsed);
  slL_setn(t, r, "tokens_per_second", tokens / elapsed);
  if (with_comm) slL_setn(t, r, "comm_seconds", comm);
}

static int cmd_lm_train(sl_Call *call, sl_Value *result) {
  slM_Graph *g = (slM_Graph *)slL_model_of(call, "model");
  if (!slL_is_lm(g)) return sl_arg_error(call, "model", "lm_train trains a language model (see `lm`)");
  int batch, T, steps = (int)sl_arg_number(call, "steps"), every = (int)sl_arg_number(call, "every");
  if (slL_batch_args(call, g, &batch, &T) != 0) return -1;
  if (steps < 1 || steps > 1000000) return sl_arg_error(call, "steps", "must be between 1 and 1000000");
  if (every < 1) return sl_arg_error(call, "every", "must be at least 1");
  double lr = sl_arg_number(call, "lr");
  if (!(lr > 0) || lr > 10) return sl_arg_error(call, "lr", "must be above 0 and at most 10");
  slM_TrainConfig c = {1,
                       batch,
                       lr,
                       0.9,
                       sl_arg_number(call, "weight_decay"),
                       strcmp(sl_arg_string(call, "optimizer"), "sgd") == 0 ? SLM_SGD : SLM_ADAMW,
                       SLM_CONSTANT,
                       0,
                       (uint64_t)sl_arg_number(call, "seed")};
  double budget;
  slL_Prediction p;
  if (slL_run_budget_of(call, &budget) != 0) return -1;
  slL_predict(g, batch, T, SLL_RUN_TRAIN, c.optimizer, &p);
  if (slL_refuse_if_over(call, &p, budget) != 0) return -1;
  char why[512];
  if (slM_device_fits(g, batch, 1, why, sizeof why) != 0) return sl_arg_error(call, "batch", "%s", why);
  g->fault[0] = '\0';
  const char *data = sl_arg_string(call, "data");
  unsigned char *bytes = NULL;
  size_t n = 0;
  if (strcmp(data, "random") != 0) {
    char err[512];
    if (g->vocab < 256)
      return sl_arg_error(call, "data", "a byte stream needs a vocabulary of at least 256, the model has %d", g->vocab);
    /* a regular file, whole (a FIFO would block, /dev/zero never ends) */
    if (!(bytes = (unsigned char *)slF_read_file(data, "the text to train on", 0, &n, err, sizeof err)))
      return sl_arg_error(call, "data", "%s (give a text file, or data=\"random\")", err);
    if (n <= (size_t)T + 1) {
      free(bytes);
      return sl_arg_error(call, "data", "'%s' has %zu bytes, fewer than a context of %d", data, n, T);
    }
  }
  /* the run: its data (the bytes themselves) and settings */
  const double set[] = {steps, every, batch, T, lr, c.weight_decay, c.optimizer, c.seed, n};
  uint64_t id = slM_hash(slM_hash(SLM_HASH_START, set, sizeof set), bytes ? (const void *)bytes : "", n);
  slM_Run run;
  if (slM_run_begin(call, g, batch, id, &run) != 0) return free(bytes), -1;
  c.run = &run;
  slM_Steps *split = run.use_split ? slM_steps_new(g, &run.split, run.err, sizeof run.err) : NULL;
  int32_t *tok = malloc((size_t)batch * T * sizeof *tok), *tgt = malloc((size_t)batch * T * sizeof *tgt);
  slM_Rng rng;
  slM_rng_seed(&rng, c.seed);
  const char *cols[] = {"step", "loss", "seconds", "tokens_per_second", run.ranks > 1 ? "comm_seconds" : NULL, NULL};
  slT_Table *t = slL_table(cols);
  double sum = 0, elapsed = 0, comm = 0;
  int seen = 0, first = 0;
  if (run.use_ckpt && (!run.use_split || split)) {
    char *progress = NULL;
    size_t len = 0;
    int got = slM_ckpt_load(&run.ckpt, g, split, &progress, &len, run.err, sizeof run.err);
    if (got > 0 && get_progress(progress, len, &first, &rng, &sum, &seen, &elapsed, &comm, t) != 0)
      snprintf(run.err, sizeof run.err, "cannot resume from '%s': its progress is damaged", run.ckpt.path);
    run.resumed = got > 0;
    free(progress);
  }
  sl_Progress *bar = sl_progress_begin(call, "lm_train", steps);
  double t0 = slU_now() - elapsed;
  g->stop = interrupted; /* an interrupt inside a step skips its update */
  for (int s = first; s < steps && !run.err[0]; s++) {
    int stop = sl_interrupted();
    if (stop && !run.split.group) break; /* in a group the others must hear of it first */
    if (bytes) slM_lm_stream_batch(&rng, bytes, n, batch, T, tok, tgt);
    else slM_lm_random_batch(&rng, g->vocab, batch, T, tok, tgt);
    double loss;
    if (split) {
      LmRows rows = {tok, tgt, T};
      slM_StepUpdate u = {&c, lr, s};
      slM_StepWork work = {lm_micro, &rows, slM_update_param, &u};
      slM_StepStats st;
      if (slM_steps_run(split, batch, stop, &work, &st, run.err, sizeof run.err) != 0 || st.stopped) break;
      if (st.nonfinite) {
        snprintf(run.err, sizeof run.err,
                 "training diverged: the loss was not finite at step %d, so training stopped "
                 "there (the weights are those before that step)",
                 s + 1);
        break;
      }
      loss = st.loss_sum / st.rows;
      comm += st.comm_seconds;
    } else {
      slM_lm_forward(g, tok, tgt, batch, T, 1);
      if (g->stopped) break;
      slM_zero_grads(g);
      loss = slM_backward(g, NULL, batch);
      if (g->stopped) break;
      slM_optimizer_step(g, &c, lr, s);
    }
    sum += loss;
    seen++;
    if ((s + 1) % every == 0 || s + 1 == steps) {
      loss_row(t, s + 1, sum / seen, slU_now() - t0, (double)(s + 1) * batch * T, comm, run.ranks > 1);
      char detail[64];
      snprintf(detail, sizeof detail, "loss %.4f", sum / seen);
      sl_progress_update(bar, s + 1, detail);
      sum = 0, seen = 0;
    }
    if (run.use_ckpt && (s + 1) % run.ckpt.every == 0) {
      slU_Text progress = {0};
      put_progress(&progress, s + 1, &rng, sum, seen, slU_now() - t0, comm, t);
      slM_ckpt_save(&run.ckpt, g, split, &progress, run.err, sizeof run.err);
      free(progress.s);
    }
  }
  g->stop = NULL, g->stopped = 0;
  sl_progress_end(bar);
  /* a sharded optimizer's state back on every rank, so the model goes on anywhere */
  if (split && !run.err[0]) slM_steps_collect(split, -1, run.err, sizeof run.err);
  slM_steps_free(split);
  slM_run_end(&run, run.err[0] ? run.err : NULL);
  free(tok), free(tgt), free(bytes);
  slM_release_activations(g);
  if (!g->fault[0]) slM_device_pull(g, why, sizeof why); /* the host copies of a model on the GPU */
  if (g->fault[0] || run.err[0]) {
    slT_free(t);
    int rc = sl_error(call, "%s", run.err[0] ? run.err : g->fault);
    g->fault[0] = '\0';
    return rc;
  }
  if (run.resumed) sl_printf(call, "resumed from %s\n", run.ckpt.path);
  for (size_t col = 2; col < t->ncols; col++) slT_mark_timing(t, (int)col);
  *result = slT_value(t);
  return sl_interrupted() ? (sl_release(*result), *result = sl_nil(), sl_interrupted_error(call)) : 0;
}

/* ----------------------------------------------------------- benchmarking */

/* a run of lm_bench that faulted: its status is the fault, its times are left empty */
static void lm_bench_fault(slT_Table *t, size_t r, const char *status, const char *why) {
  char text[600];
  snprintf(text, sizeof text, "fault: %s", why);
  slL_sets(t, r, status, text);
}

/* The products of one step of batch x T tokens, forward (train 0) or forward+backward (three times the forward):
** two FLOPs per weight of the layers' products and of the head per token, and the attention's two T x T
** products. A step's time is predicted as these FLOPs at the rate of the last run measured. */
static double lm_step_flops(const slM_LmSpec *s, int batch, int T, int train) {
  double d = s->d_model, weights = s->layers * (4 * d * d + 3 * d * s->d_ff) + d * s->vocab;
  double fwd = 2.0 * batch * T * weights + 4.0 * batch * s->layers * (double)T * T * d;
  return train ? 3 * fwd : fwd;
}

/* What a row's runs share: the budgets, the FLOP rate of the last run measured (forward, forward+backward), and
** for the configuration of the rows now made, each run's predicted step (0: no prediction yet) and whether it is
** SLOW; decided once for all its warm-up counts, so that a configuration's rows all ran or none did. */
typedef struct {
  int batch, steps;
  double max_step_s; /* 0: no limit */
  double rate[2], predicted[2];
  int slow[2];
} LmBench;

static void lm_bench_predict(LmBench *b, const slM_LmSpec *s, int T) {
  for (int train = 0; train < 2; train++) {
    b->predicted[train] = b->rate[train] > 0 ? lm_step_flops(s, b->batch, T, train) / b->rate[train] : 0;
    b->slow[train] = b->max_step_s > 0 && b->predicted[train] > b->max_step_s;
  }
}

/* The row's two runs, forward and forward+backward, each cold, on g (NULL when the preset could not be built: its
** runs are that fault); fits[train] 0 for a run predicted over the budget (OOM, not run); a run whose step is
** predicted longer than max_step_s is SLOW, not run. A run that faults is a row whose status is the fault, and the
** table goes on. */
static void lm_bench_runs(slT_Table *t, size_t r, slM_Graph *g, const char *fault, const int fits[2],
                          const slM_LmSpec *s, int T, int warmup, LmBench *b) {
  for (int train = 0; train < 2 && !sl_interrupted(); train++) {
    const char *status = train ? "status_train" : "status_fwd";
    if (!fits[train]) {
      slL_sets(t, r, status, "OOM");
      continue;
    }
    if (b->predicted[train] > 0) slL_setn(t, r, train ? "predicted_s_train" : "predicted_s_fwd", b->predicted[train]);
    if (b->slow[train]) {
      slL_sets(t, r, status, "SLOW");
      continue;
    }
    if (!g) {
      lm_bench_fault(t, r, status, fault);
      continue;
    }
    slL_Batch bt;
    slL_Timing tm;
    g->fault[0] = '\0';
    slL_batch_init(&bt, g, b->batch, T, 1);
    /* each row starts cold, as a fresh process would: without the activations and the parameter gradients of the
    ** run before, which the prediction this run was admitted by does not count (a forward after a training run
    ** would otherwise hold the gradients too: large's 3.1 GB took a forward predicted to fit past the memory) */
    slM_release_activations(g);
    slM_release_grads(g);
    slM_mem_reset();
    slL_time_steps(g, &bt, train, warmup, b->steps, &tm);
    double measured = (double)slM_mem_total_peak();
    slL_batch_free(&bt);
    if (g->fault[0]) {
      lm_bench_fault(t, r, status, g->fault);
      continue;
    }
    if (tm.mean > 0) b->rate[train] = lm_step_flops(s, b->batch, T, train) / tm.mean;
    slL_sets(t, r, status, "OK");
    slL_setn(t, r, train ? "warmup_s_train" : "warmup_s_fwd", tm.warmup_seconds);
    slL_setn(t, r, train ? "mean_s_train" : "mean_s_fwd", tm.mean);
    slL_setn(t, r, train ? "std_s_train" : "std_s_fwd", tm.std);
    slL_setn(t, r, train ? "measured_gb_train" : "measured_gb_fwd", measured / 1e9);
  }
}

/* the precisions to measure: the list `precisions` when given, else `precision`; their count, or -1 */
static int lm_bench_precisions(sl_Call *call, int *out) {
  if (!sl_arg_given(call, "precisions")) return out[0] = slL_precision_arg(call), 1;
  sl_Value l = sl_arg(call, "precisions");
  int n = (int)sl_list_len(l);
  if (n < 1 || n > 3) return sl_arg_error(call, "precisions", "must list 1 to 3 of fp32, bf16 and fp16"), -1;
  for (int i = 0; i < n; i++) {
    const char *name = sl_str(sl_list_get(l, (size_t)i));
    out[i] = -1;
    for (int m = SLM_FP32; m <= SLM_FP16 && name; m++)
      if (strcmp(name, slM_precision_names[m]) == 0) out[i] = m;
    if (out[i] < 0)
      return sl_arg_error(call, "precisions", "'%s' is not a precision: fp32, bf16 or fp16", name ? name : "?"), -1;
  }
  return n;
}

static int cmd_lm_bench(sl_Call *call, sl_Value *result) {
  slM_LmSpec specs[8];
  int contexts[16], warmups[8], precisions[3];
  int np = slL_preset_list(call, specs, 8), nc = slL_list_ints(call, "contexts", contexts, 16, 1, 65536);
  int nw = slL_list_ints(call, "warmups", warmups, 8, 0, 100), steps = (int)sl_arg_number(call, "steps");
  int batch = (int)sl_arg_number(call, "batch"), nm = lm_bench_precisions(call, precisions);
  int device = slM_device_parse(sl_arg_string(call, "device"));
  if (np < 0 || nc < 0 || nw < 0 || nm < 0) return -1;
  char why[512] = ""; /* why the device cannot be used */
  if (slM_device_usable(sl_arg_string(call, "device"), why, sizeof why) != 0)
    return sl_arg_error(call, "device", "%s", why);
  if (steps < 1 || steps > 1000) return sl_arg_error(call, "steps", "must be between 1 and 1000");
  if (batch < 1) return sl_arg_error(call, "batch", "must be at least 1");
  double budget;
  if (slL_device_budget_of(call, device, &budget) != 0) return -1;
  LmBench b = {batch, steps, sl_arg_number(call, "max_step_s"), {0, 0}, {0, 0}, {0, 0}};
  if (!(b.max_step_s >= 0))
    return sl_arg_error(call, "max_step_s", "must be 0 (no limit) or a number of seconds, not %g", b.max_step_s);
  const char *cols[] = {"config",
                        "context",
                        "warmup",
                        "d_model",
                        "d_ff",
                        "layers",
                        "heads",
                        "status_fwd",
                        "status_train",
                        "predicted_gb_fwd",
                        "predicted_gb_train",
                        "measured_gb_fwd",
                        "measured_gb_train",
                        "warmup_s_fwd",
                        "warmup_s_train",
                        "mean_s_fwd",
                        "mean_s_train",
                        "std_s_fwd",
                        "std_s_train",
                        "predicted_s_fwd",
                        "predicted_s_train",
                        "precision",
                        NULL};
  slT_Table *t = slL_table(cols);
  sl_Progress *bar = sl_progress_begin(call, "lm_bench", np * nc);
  for (int p = 0; p < np && !sl_interrupted(); p++) {
    slM_LmSpec s = specs[p];
    int maxT = 0;
    for (int c = 0; c < nc; c++) maxT = contexts[c] > maxT ? contexts[c] : maxT;
    s.context = maxT;
    /* Built once for every context and precision (the weights are float32 in every precision), at the first
    ** configuration predicted to fit and not predicted SLOW. A build or move that fails is the fault of the preset's rows. */
    slM_Graph *g = NULL;
    char fault[512] = "";
    for (int c = 0; c < nc && !sl_interrupted(); c++)
      for (int m = 0; m < nm; m++) {
        slL_Prediction pf, pt;
        slL_predict_lm(&s, batch, contexts[c], SLL_RUN_FORWARD, SLM_ADAMW, precisions[m], &pf);
        slL_predict_lm(&s, batch, contexts[c], SLL_RUN_TRAIN, -1, precisions[m], &pt);
        int fits[2] = {pf.peak <= budget, pt.peak <= budget};
        lm_bench_predict(&b, &s, contexts[c]);
        int runs = (fits[0] && !b.slow[0]) || (fits[1] && !b.slow[1]);
        if (runs && !g && !fault[0] && (g = slM_lm(&s, 0, fault, sizeof fault)))
          g = slM_graph_move(g, device, fault, sizeof fault);
        if (g && g->precision != precisions[m]) {
          slM_product_release(); /* the last precision's 16-bit copies of the weights */
          g->precision = precisions[m];
        }
        for (int w = 0; w < nw && !sl_interrupted(); w++) {
          size_t r = slT_add_row(t);
          slL_sets(t, r, "config", specs[p].name);
          slL_sets(t, r, "precision", slM_precision_names[precisions[m]]);
          slL_setn(t, r, "context", contexts[c]);
          slL_setn(t, r, "warmup", warmups[w]);
          slL_setn(t, r, "d_model", s.d_model), slL_setn(t, r, "d_ff", s.d_ff);
          slL_setn(t, r, "layers", s.layers), slL_setn(t, r, "heads", s.heads);
          slL_setn(t, r, "predicted_gb_fwd", pf.peak / 1e9);
          slL_setn(t, r, "predicted_gb_train", pt.peak / 1e9);
          lm_bench_runs(t, r, g, fault, fits, &s, contexts[c], warmups[w], &b);
        }
        sl_progress_update(bar, p * nc + c + 1, specs[p].name);
      }
    slM_graph_free(g);
    slM_product_release();
  }
  sl_progress_end(bar);
  for (int c = slT_column(t, "warmup_s_fwd"); c <= slT_column(t, "predicted_s_train"); c++) slT_mark_timing(t, c);
  *result = slT_value(t);
  return sl_interrupted() ? (sl_release(*result), *result = sl_nil(), sl_interrupted_error(call)) : 0;
}

/* ------------------------------------------------------- mixed precision */

static int cmd_accumulation(sl_Call *call, sl_Value *result) {
  double v[3];
  slM_accumulation(v);
  const char *cols[] = {"accumulator", "addend", "sum", "printed", NULL};
  const char *acc[3] = {"float32", "float16", "float32"}, *add[3] = {"float32", "float16", "float16"};
  slT_Table *t = slL_table(cols);
  for (int i = 0; i < 3; i++) {
    size_t r = slT_add_row(t);
    char buf[32];
    snprintf(buf, sizeof buf, "%.4f", v[i]);
    slL_sets(t, r, "accumulator", acc[i]);
    slL_sets(t, r, "addend", add[i]);
    slL_setn(t, r, "sum", v[i]);
    slL_sets(t, r, "printed", buf);
  }
  *result = slT_value(t);
  return 0;
}

static int cmd_dtypes(sl_Call *call, sl_Value *result) {
  slM_Graph *g = slM_graph_copy(slL_model_of(call, "model"), 0);
  const char *cols[] = {"node", "op", "fp32", "bf16", "fp16", NULL};
  slT_Table *t = slL_table(cols);
  int *dt[3];
  for (int m = 0; m < 3; m++) {
    g->precision = m;
    dt[m] = malloc((size_t)g->n * sizeof *dt[m]);
    slM_dtypes(g, dt[m]);
  }
  for (int i = 0; i < g->n; i++) {
    size_t r = slT_add_row(t);
    slL_sets(t, r, "node", g->nodes[i].name);
    slL_sets(t, r, "op", slM_op_name(g->nodes[i].op));
    for (int m = 0; m < 3; m++) slL_sets(t, r, slM_precision_names[m], slM_dtype_name(dt[m][i]));
  }
  for (int m = 0; m < 3; m++) free(dt[m]);
  slM_graph_free(g);
  *result = slT_value(t);
  return 0;
}

/* ----------------------------------------------------------------- fusion */

static int cmd_fuse(sl_Call *call, sl_Value *result) {
  slM_Graph *g = slM_graph_copy(slL_model_of(call, "model"), 0);
  slM_FuseCounts c;
  char err[512];
  if (slM_fuse(g, sl_truthy(sl_arg(call, "attention")), &c, err, sizeof err) != 0) {
    slM_graph_free(g);
    return sl_error(call, "the fused graph is not valid: %s", err);
  }
  sl_printf(call,
            "fused %d attention block%s (FlashAttention-2), %d linear+activation, %d add+layer_norm, "
            "%d mask+softmax; buffer planning on\n",
            c.attention, c.attention == 1 ? "" : "s", c.linear_act, c.add_norm, c.masked_softmax);
  *result = sl_object_new(&slM_model_class, g);
  return 0;
}

static int cmd_fusion_bench(sl_Call *call, sl_Value *result) {
  const slM_Graph *m = slL_model_of(call, "model");
  int batch, T, steps = (int)sl_arg_number(call, "steps");
  if (slL_cpu_only(call, m) != 0 || slL_batch_args(call, m, &batch, &T) != 0) return -1;
  if (steps < 1 || steps > 1000) return sl_arg_error(call, "steps", "must be between 1 and 1000");
  double budget;
  slL_Prediction p;
  if (slL_model_budget_of(call, m, &budget) != 0) return -1;
  slL_predict(m, batch, T, SLL_RUN_TRAIN, -1, &p);
  if (slL_refuse_if_over(call, &p, budget) != 0) return -1;
  const char *cols[] = {"mode",           "run", "pass_ms", "first_call_ms", "steady_ms", "steady_std_ms", "peak_mb",
                        "steady_peak_mb", NULL};
  slT_Table *t = slL_table(cols);
  for (int train = 0; train < 2 && !sl_interrupted(); train++)
    for (int fused = 0; fused < 2 && !sl_interrupted(); fused++) {
      double t0 = slU_now();
      slM_Graph *g = slM_graph_copy(m, 0);
      slM_FuseCounts c;
      char err[512];
      double p0 = slU_now(); /* the pass alone: what compiling costs here, against torch.compile's seconds */
      if (fused && slM_fuse(g, sl_truthy(sl_arg(call, "attention")), &c, err, sizeof err) != 0) {
        slM_graph_free(g);
        slT_free(t);
        return sl_error(call, "%s", err);
      }
      slL_Batch b;
      double pass = fused ? slU_now() - p0 : 0;
      slL_batch_init(&b, g, batch, T, 1);
      /* gradients made by an earlier run of the shared weights count as this step's own */
      double grads, optim;
      slL_state_bytes(g, &grads, &optim);
      slM_mem_reset();
      size_t base = slM_mem_total_live(); /* the peak counts what is not a tensor too (pruning masks, scratch) */
      slL_run_step(g, &b, train, NULL, 0);
      double first = slU_now() - t0;
      size_t peak = slM_mem_total_peak() - base + (size_t)(train ? grads : 0);
      /* steady state: a planned graph takes its arena in the second call of a
      ** shape (it lets the first call's buffers go), so the steady peak is
      ** measured from the third */
      slL_run_step(g, &b, train, NULL, 1);
      slM_mem_reset();
      slL_Timing tm;
      slL_time_steps(g, &b, train, 0, steps, &tm);
      size_t steady_peak = slM_mem_total_peak() - base + (size_t)(train ? grads : 0);
      size_t r = slT_add_row(t);
      slL_sets(t, r, "mode", fused ? "fused" : "eager");
      slL_sets(t, r, "run", train ? "forward+backward" : "inference");
      slL_setn(t, r, "pass_ms", pass * 1e3);
      slL_setn(t, r, "first_call_ms", first * 1e3);
      slL_setn(t, r, "steady_ms", tm.mean * 1e3);
      slL_setn(t, r, "steady_std_ms", tm.std * 1e3);
      slL_setn(t, r, "peak_mb", (double)peak / 1e6);
      slL_setn(t, r, "steady_peak_mb", (double)steady_peak / 1e6);
      slL_batch_free(&b);
      slM_graph_free(g);
    }
  if (sl_interrupted()) { /* the runner stopped between nodes or steps: no partial figures */
    slT_free(t);
    return sl_interrupted_error(call);
  }
  for (int c = 2; c <= 5; c++) slT_mark_timing(t, c);
  *result = slT_value(t);
  return 0;
}

/* --------------------------------------------------------------- registry */

/* clang-format off */
#define MODEL_ARG {"model", SL_ARG_OBJECT, SL_POSITIONAL | SL_REQUIRED, NULL, "the model", NULL, "model"}
#define BUDGET_ARG {"budget", SL_ARG_STRING, 0, NULL, "memory budget, e.g. \"80GB\" (default: what this process may use; a command that runs the model is held to that)"}
#define BATCH_ARG(d) {"batch", SL_ARG_INT, 0, d, "samples per step"}
#define CONTEXT_ARG {"context", SL_ARG_INT, 0, NULL, "tokens per sample (language models; default: the model's context)"}
#define DEVICE_ARG \
  {"device", SL_ARG_ENUM, 0, "cpu", "where the weights live and the passes run: cpu, or gpu (a CUDA GPU)", slL_devices}
#define SHARD_ARGS                                                                                                    \
  {"ranks", SL_ARG_INT, 0, "1", "processes sharing the optimizer state (with shard_optimizer=true)"},                  \
  {"shard_optimizer", SL_ARG_BOOL, 0, "false", "the figures of the process with the largest share of the optimizer state"}
#define PRECISION_ARG {"precision", SL_ARG_ENUM, 0, "fp32", "inputs of products: fp32, or bf16/fp16 with float32 accumulation", slM_precision_names}

static const sl_Command commands[] = {
  {"lm", "language model", "Build a transformer language model (the CS336 basics model): a preset or explicit sizes.",
   "Token embedding, pre-norm blocks (RMSNorm, causal multi-head attention with rotary embeddings, SwiGLU "
   "feed-forward), final norm and output projection. Presets: tiny (64, 128, 2, 2), small (768, 3072, 12, 12), "
   "medium (1024, 4096, 24, 16), large (1280, 5120, 36, 20), xl (1600, 6400, 48, 25), 2.7B (2560, 10240, 32, 32) "
   "as (d_model, d_ff, layers, heads); vocab 10,000 and context 256 unless given. Refused when the parameters "
   "alone exceed the budget.",
   "m = lm tiny context=64\nbig = lm small budget=\"80GB\"", cmd_lm, SL_CMD_LONG,
   {{"preset", SL_ARG_ENUM, SL_POSITIONAL, "tiny", "the configuration", slM_lm_preset_names},
    {"d_model", SL_ARG_INT, 0, NULL, "width"}, {"d_ff", SL_ARG_INT, 0, NULL, "feed-forward width"},
    {"layers", SL_ARG_INT, 0, NULL, "blocks"}, {"heads", SL_ARG_INT, 0, NULL, "attention heads"},
    {"vocab", SL_ARG_INT, 0, NULL, "vocabulary size (256 for bytes)"},
    {"context", SL_ARG_INT, 0, NULL, "longest sequence"}, {"seed", SL_ARG_INT, 0, "0", "seed of the weights"},
    BUDGET_ARG, DEVICE_ARG, {NULL}}},
  {"lm_train", "language model", "Train a language model on random tokens or on the bytes of a file; a table of the loss.",
   "data=\"random\" draws uniform tokens (nothing to learn beyond log(vocab)); a path trains on windows of the "
   "file's bytes (vocab must be at least 256), where the loss falls. Refused when the predicted training peak "
   "exceeds the budget. accumulate=, parallel=\"data\" and checkpoints as in train.",
   "m = lm tiny vocab=256 context=64\nlm_train m data=\"/usr/share/common-licenses/GPL-3\" steps=200 batch=8 lr=0.003", cmd_lm_train, SL_CMD_LONG,
   {MODEL_ARG, {"data", SL_ARG_STRING, 0, "\"random\"", "\"random\" or the path of a file"},
    {"steps", SL_ARG_INT, 0, "100", "optimizer steps"}, BATCH_ARG("8"), CONTEXT_ARG,
    {"lr", SL_ARG_NUMBER, 0, "0.003", "learning rate"},
    {"optimizer", SL_ARG_ENUM, 0, "adamw", "AdamW or SGD with momentum 0.9", slL_optimizers},
    {"weight_decay", SL_ARG_NUMBER, 0, "0", "decoupled weight decay"},
    {"every", SL_ARG_INT, 0, "10", "steps per row (mean loss over them)"},
    {"seed", SL_ARG_INT, 0, "0", "seed of the batches"}, BUDGET_ARG, SLM_RUN_ARGS, {NULL}}},
  {"lm_bench", "benchmark", "Time forward and forward+backward steps of language-model presets over context lengths and warm-ups.",
   "For every preset, context and warm-up count: the warm-up time, then the mean and standard deviation of `steps` "
   "timed steps, for the forward pass and for forward+backward (the table of the CS336 systems assignment's end-to-end benchmark, its §1.1.3). Each row starts "
   "cold. Configurations predicted over the budget are reported as OOM with their predicted peak, not run; a run "
   "measures its peak (`measured_gb_fwd`, `measured_gb_train`: the tensors the model and its step hold); with "
   "`max_step_s`, a run whose step is predicted to take longer (its FLOPs at the rate of the last run measured, "
   "`predicted_s_fwd` and `predicted_s_train`) is reported as SLOW, not run; the first run measured has no "
   "prediction. A run "
   "that faults (a model that cannot be built or moved, a kernel's error) is a row whose status is the fault, and "
   "the table goes on.",
   "lm_bench presets=[\"tiny\"] contexts=[64, 128] warmups=[0, 1, 5] steps=5", cmd_lm_bench, SL_CMD_LONG,
   {{"presets", SL_ARG_LIST, 0, "[\"tiny\"]", "preset names"},
    {"contexts", SL_ARG_LIST, 0, "[128]", "context lengths"},
    {"warmups", SL_ARG_LIST, 0, "[0, 1, 5]", "untimed steps before timing"},
    {"steps", SL_ARG_INT, 0, "10", "timed steps"}, BATCH_ARG("4"), PRECISION_ARG,
    {"precisions", SL_ARG_LIST, 0, NULL, "several precisions instead of one, e.g. [\"fp32\", \"bf16\"]: each preset "
     "built once for all of them"},
    {"max_step_s", SL_ARG_NUMBER, 0, "0", "seconds a step may be predicted to take, else SLOW (0: no limit)"},
    BUDGET_ARG, DEVICE_ARG, {NULL}}},
  {"profile", "benchmark", "Per-operation profile of inference and training steps: time per operator and node, GEMM share, attention's parts.",
   "Returns a record: by_op (time per operator kind in inference, training forward and backward, against its FLOP "
   "share), by_node, gemm (products against the rest), attention (the two products against the mask and softmax, "
   "time share against FLOP share).",
   "m = lm tiny context=64\np = profile m batch=4\np.gemm", slL_cmd_profile, SL_CMD_LONG,
   {MODEL_ARG, BATCH_ARG("4"), CONTEXT_ARG, {"steps", SL_ARG_INT, 0, "3", "profiled steps of each kind"}, BUDGET_ARG,
    {NULL}}},
  {"memory_predict", "memory", "Predicted memory of language-model presets, by category, against a budget.",
   "Parameters, gradients, optimizer state, activations, activation gradients and scratch, and the peak, computed "
   "from the configuration alone (nothing is allocated). status is OOM when the peak exceeds the budget.",
   "memory_predict presets=[\"small\", \"2.7B\"] contexts=[128, 256] run=train budget=\"80GB\"", slL_cmd_memory_predict, 0,
   {{"presets", SL_ARG_LIST, 0, "[\"small\"]", "preset names"}, {"contexts", SL_ARG_LIST, 0, "[128]", "context lengths"},
    BATCH_ARG("4"), {"run", SL_ARG_ENUM, 0, "\"train\"", "forward only, or forward+backward and the optimizer", slL_runs},
    {"optimizer", SL_ARG_ENUM, 0, "adamw", "optimizer state: AdamW (two moments), SGD (one), none", slL_optimizers},
    PRECISION_ARG, BUDGET_ARG, SHARD_ARGS, {NULL}}},
  {"memory_check", "memory", "Predicted against measured peak memory of a model's forward pass and training step.",
   "Measured: the peak of the engine's tagged tensor allocations (and mixed-precision scratch, pruning masks) over "
   "the run. The steps run on a fresh copy of the model, whose weights, gradients and optimizer state stay as they "
   "were; the training row's step is the optimizer's (none: forward and backward alone). A compressed model is "
   "predicted with what its quantisers and masks hold.",
   "m = lm tiny context=64\nmemory_check m batch=4", slL_cmd_memory_check, SL_CMD_LONG,
   {MODEL_ARG, BATCH_ARG("4"), CONTEXT_ARG, {"optimizer", SL_ARG_ENUM, 0, "adamw", "optimizer of the training step", slL_optimizers},
    BUDGET_ARG, SHARD_ARGS, {NULL}}},
  {"memory_profile", "memory", "Memory profile of one step: bytes by category at the peak, the largest allocations, and a timeline.",
   "Returns a record: peak_mb, predicted_mb, categories, top (size, category, node, operator, shape) and timeline "
   "(live bytes after every node, forward then backward) for plotting.",
   "m = lm tiny context=64\nmp = memory_profile m run=train\nplot mp.timeline x=index y=live_mb series=phase", slL_cmd_memory_profile, SL_CMD_LONG,
   {MODEL_ARG, BATCH_ARG("4"), CONTEXT_ARG, {"run", SL_ARG_ENUM, 0, "\"train\"", "forward only, or forward+backward", slL_runs},
    {"top", SL_ARG_INT, 0, "10", "allocations to list"}, BUDGET_ARG, SHARD_ARGS, {NULL}}},
  {"attention_accounting", "memory", "Attention's memory accounting: each tensor's formula against the bytes allocated.",
   "", "attention_accounting context=1024 d_model=16 batch=8 heads=1", slL_cmd_attention_accounting, SL_CMD_LONG,
   {{"context", SL_ARG_INT, 0, "256", "sequence length S"}, {"d_model", SL_ARG_INT, 0, "16", "width D"},
    BATCH_ARG("8"), {"heads", SL_ARG_INT, 0, "1", "heads H"}, BUDGET_ARG, {NULL}}},
  {"attention_bench", "benchmark", "Causal attention over sequence lengths and widths: forward and backward time, memory before backward.",
   "One head, batch 8 by default (the CS336 systems assignment's attention benchmark, problem pytorch_attention). Times are the profiler's for the attention nodes "
   "(projections, rotary embeddings, scores, mask, softmax, context); memory is what those nodes hold for the "
   "backward pass. precision=bf16 (or fp16) gives the products, the scores Q K^T among them, 16-bit inputs and "
   "float32 sums, as autocast does. Over-budget configurations are OOM with their predicted peak.",
   "attention_bench contexts=[64, 128] widths=[16, 32]", slL_cmd_attention_bench, SL_CMD_LONG,
   {{"contexts", SL_ARG_LIST, 0, "[256]", "sequence lengths"}, {"widths", SL_ARG_LIST, 0, "[16, 32, 64, 128]", "d_model values"},
    BATCH_ARG("8"), {"steps", SL_ARG_INT, 0, "3", "timed steps"}, PRECISION_ARG, BUDGET_ARG, DEVICE_ARG, {NULL}}},
  {"accumulation", "precision", "The accumulation experiment: 1000 additions of 0.01 in float32, float16, and float16 into float32.", "",
   "accumulation", cmd_accumulation, 0, {{NULL}}},
  {"precision", "precision", "The model in a mixed-precision mode (sharing its weights): products take bf16 or fp16 inputs.",
   "Products (linear layers and attention's two products) round their inputs to the format and accumulate in "
   "float32; norms, softmax and the loss stay float32; parameters and gradients stay float32.",
   "m = lm tiny context=64\nmb = precision m bf16", cmd_precision, 0,
   {MODEL_ARG, {"precision", SL_ARG_ENUM, SL_POSITIONAL | SL_REQUIRED, NULL, "the mode", slM_precision_names}, {NULL}}},
  {"dtypes", "precision", "Each node's output dtype under fp32, bf16 and fp16 modes.", "", "m = lm tiny context=64\ndtypes m", cmd_dtypes, 0,
   {MODEL_ARG, {NULL}}},
  {"fuse", "fusion", "Fusion pass: a new graph with linear+activation, add+layer_norm and mask+softmax fused, and buffer planning.",
   "The result shares the weights. Without attention fusion it computes the same numbers as the original, bit for "
   "bit in float32; with it, each attention block runs FlashAttention-2, equal within float32 rounding.",
   "m = lm tiny context=64\nf = fuse m\nexact = fuse m attention=false", cmd_fuse, 0,
   {MODEL_ARG, {"attention", SL_ARG_BOOL, 0, "true", "also fuse each attention block into FlashAttention-2"}, {NULL}}},
  {"fusion_bench", "fusion", "Eager against fused: first call (with the pass) against steady state, time and peak memory of each.",
   "pass_ms is the fusion pass alone (0 for eager), first_call_ms the pass and the first step (its buffers "
   "allocated, a planned graph's shapes noted), steady_ms the mean of `steps` later steps; peak_mb is the tagged "
   "tensor memory of the first step, steady_peak_mb that of the later ones.", "m = lm tiny context=64\nfusion_bench m batch=64", cmd_fusion_bench, SL_CMD_LONG,
   {MODEL_ARG, BATCH_ARG("32"), CONTEXT_ARG, {"steps", SL_ARG_INT, 0, "10", "timed steady-state steps"},
    {"attention", SL_ARG_BOOL, 0, "true", "also fuse attention blocks into FlashAttention-2"}, BUDGET_ARG, {NULL}}},
  {NULL},
};
/* clang-format on */

const sl_Domain slL_domain = {
    "Systems",
    "Systems experiments on models (the CS336 systems assignment and ADLS Lab 4 Part A): the transformer language-model family, "
    "benchmarks with warm-up, per-operation profiles, memory prediction before allocating, memory profiles, mixed "
    "precision, and fused against eager graph execution.",
    commands,
};
