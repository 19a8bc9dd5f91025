/* test_systems.c - memory prediction against measured peaks and OOM
** refusal; mixed precision (accumulation, rounding, dtype table); fused
** against eager graphs; the profiler. */
#include <math.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "graph/passes.h"
#include "graph/lm.h"
#include "graph/memory.h"
#include "systems/predict.h"
#include "graph/precision.h"
#include "graph/product.h"
#include "graph/profile.h"
#include "systems/runner.h"
#include "graph/train.h"
#include "kernels/gemm_half.h"
#include "kernels/kernels.h"

static slM_Graph *mlp(void) {
  char err[256];
  slM_MlpSpec s = {20, 5, {16, 12}, 2, OP_RELU, 0.0f};
  return slM_mlp(&s, 1, 0, err, sizeof err);
}

static slM_Graph *vit(int precision) {
  char err[256];
  slM_TransformerSpec s = {8, 8, 4, 4, 2, 8, 2, 2, 0.0f};
  slM_Graph *g = slM_transformer(&s, 2, 1, 0, err, sizeof err);
  g->precision = precision;
  return g;
}

static slM_Graph *lm(int precision) {
  char err[256];
  slM_LmSpec s = {"", 50, 12, 16, 24, 2, 2};
  slM_Graph *g = slM_lm(&s, 3, err, sizeof err);
  g->precision = precision;
  return g;
}

/* measured: the tagged allocator's peak over two full training steps (the
** second has the optimizer state), and over a forward pass of a fresh model */
static void check_prediction(slM_Graph *g, const char *what, int batch, int T) {
  slM_TrainConfig c = {1, batch, 1e-3, 0, 0, SLM_ADAMW, SLM_CONSTANT, 0, 0};
  slL_Batch b;
  slL_batch_init(&b, g, batch, T, 4);
  slL_Prediction fwd, train, spec;
  slL_predict_graph(g, batch, T, SLL_RUN_FORWARD, SLM_ADAMW, &fwd);
  slL_predict_graph(g, batch, T, SLL_RUN_TRAIN, SLM_ADAMW, &train);
  slM_product_release();
  /* other tests' tensors are freed: what is live now is this model's parameters, counted apart */
  size_t trainable, total;
  slM_param_counts(g, &trainable, &total);
  size_t base = slM_mem_live() - 4 * total;
  size_t measured_fwd = slL_measure_peak(g, &b, 0, NULL, 1) - base;
  slM_release_activations(g);
  slM_product_release();
  size_t measured_train = slL_measure_peak(g, &b, 1, &c, 2) - base;
  printf("  %s: forward predicted %.0f measured %zu; training predicted %.0f measured %zu\n", what, fwd.peak,
         measured_fwd, train.peak, measured_train);
  CHECK_MSG(fabs(fwd.peak - (double)measured_fwd) <= 0.10 * (double)measured_fwd, "%s forward", what);
  CHECK_MSG(fabs(train.peak - (double)measured_train) <= 0.10 * (double)measured_train, "%s training", what);
  if (strcmp(g->family, "lm") == 0) { /* the configuration-only formula agrees with the graph walk */
    slM_LmSpec s;
    slM_lm_spec_of(g, &s);
    slL_predict_lm(&s, batch, T, SLL_RUN_TRAIN, SLM_ADAMW, g->precision, &spec);
    CHECK_NEAR(spec.peak, train.peak, 1e-6 * train.peak);
    CHECK_NEAR(spec.activations, train.activations, 1);
  }
  size_t by[SLM_MEM_NCAT];
  slM_mem_live_by(by);
  CHECK(by[SLM_MEM_OPTIM] > 0 && by[SLM_MEM_GRAD] > 0 && by[SLM_MEM_ACT] > 0 && by[SLM_MEM_PARAM] > 0);
  slL_batch_free(&b);
  slM_graph_free(g);
  slM_product_release();
}

static void test_memory_prediction(void) {
  check_prediction(mlp(), "mlp", 8, 0);
  check_prediction(vit(SLM_FP32), "image transformer", 4, 0);
  check_prediction(vit(SLM_BF16), "image transformer bf16", 4, 0);
  check_prediction(lm(SLM_FP32), "lm fp32", 3, 12);
  check_prediction(lm(SLM_BF16), "lm bf16", 3, 12);
}

static void test_budget_and_refusal(void) {
  char err[256], msg[512];
  CHECK_NEAR(slL_budget("80GB", err, sizeof err), 80e9, 1);
  CHECK_NEAR(slL_budget("512 MiB", err, sizeof err), 512.0 * 1048576, 1);
  CHECK(slL_budget("", err, sizeof err) > 1e6); /* MemAvailable */
  CHECK(slL_budget("lots", err, sizeof err) == 0);
  CHECK_CONTAINS(err, "GiB");
  slM_LmSpec s;
  slM_lm_preset("2.7B", &s);
  slL_Prediction p;
  slL_predict_lm(&s, 4, 256, SLL_RUN_TRAIN, SLM_ADAMW, SLM_FP32, &p);
  /* parameters, gradients and two Adam moments: 16 bytes per parameter */
  CHECK(p.params > 10e9 && p.optim == 2 * p.params && p.peak > 4 * p.params);
  slL_refusal(&p, 24e9, msg, sizeof msg);
  CHECK_CONTAINS(msg, "OOM: predicted peak");
  CHECK_CONTAINS(msg, "budget of 24.00 GB");
}

static void test_tags_and_timeline(void) {
  slM_Graph *g = lm(SLM_FP32);
  slL_Batch b;
  slL_batch_init(&b, g, 2, 12, 1);
  slM_mem_record(1);
  slM_mem_reset();
  slL_run_step(g, &b, 1, NULL, 0);
  size_t n, na;
  const slM_MemEvent *ev = slM_mem_timeline(&n);
  const slM_MemAlloc *al = slM_mem_allocations(&na);
  CHECK(n > (size_t)g->n); /* forward and backward marks */
  int scores = 0;
  for (size_t i = 0; i < na; i++)
    if (strcmp(al[i].op, "matmul_qk") == 0 && al[i].category == SLM_MEM_ACT && !al[i].backward) {
      scores++;
      CHECK_STREQ(al[i].shape, "[2, 2, 12, 12]");
    }
  CHECK_EQ_INT(scores, 2);
  size_t max_fwd = 0;
  for (size_t i = 0; i < n; i++)
    if (!ev[i].backward && ev[i].live > max_fwd) max_fwd = ev[i].live;
  CHECK(ev[n - 1].live > max_fwd); /* backward adds the gradients on top */
  slM_mem_record(0);
  slL_batch_free(&b);
  slM_graph_free(g);
}

static void test_accumulation_and_rounding(void) {
  double v[3];
  slM_accumulation(v);
  char buf[3][16];
  for (int i = 0; i < 3; i++) snprintf(buf[i], sizeof buf[i], "%.4f", v[i]);
  CHECK_STREQ(buf[0], "10.0001");
  CHECK_STREQ(buf[1], "9.9531");
  CHECK_STREQ(buf[2], "10.0021");
  CHECK(slK_round_bf16(1.0f) == 1.0f);
  CHECK(slK_round_bf16(1.00390625f) == 1.0f);      /* halfway: ties to even */
  CHECK(slK_round_bf16(1.01171875f) == 1.015625f); /* halfway: ties to even, up */
  CHECK(slK_round_fp16(65520.0f) == INFINITY);
  CHECK(slK_round_fp16(0.1f) == 0.0999755859375f);
  CHECK(isnan(slK_round_bf16(NAN)));
}

static void test_dtype_table(void) {
  slM_Graph *g = mlp();
  int *dt = malloc((size_t)g->n * sizeof *dt);
  for (int mode = 0; mode < 3; mode++) {
    g->precision = mode;
    slM_dtypes(g, dt);
    int fc1 = slM_find_node(g, "fc1"), relu = slM_find_node(g, "relu_1");
    CHECK_EQ_INT(dt[fc1], mode);
    CHECK_EQ_INT(dt[relu], mode); /* an activation of a 16-bit product stays 16-bit, as autocast's relu */
  }
  free(dt);
  slM_graph_free(g);
  g = lm(SLM_BF16);
  dt = malloc((size_t)g->n * sizeof *dt);
  slM_dtypes(g, dt);
  CHECK_STREQ(slM_dtype_name(dt[slM_find_node(g, "layers_0_ln1")]), "float32");
  CHECK_STREQ(slM_dtype_name(dt[slM_find_node(g, "layers_0_attn_softmax")]), "float32");
  CHECK_STREQ(slM_dtype_name(dt[slM_find_node(g, "layers_0_attn_scores")]), "bfloat16");
  CHECK_STREQ(slM_dtype_name(dt[slM_find_node(g, "lm_head")]), "bfloat16");
  CHECK_STREQ(slM_dtype_name(dt[slM_find_node(g, "loss")]), "float32");
  CHECK_STREQ(slM_dtype_name(dt[slM_find_node(g, "layers_0_attn_residual")]), "float32");
  /* a bf16 run stores bf16 values in its products and trains within a stated tolerance of fp32 */
  slL_Batch b;
  slL_batch_init(&b, g, 2, 12, 3);
  double l16 = slL_run_step(g, &b, 1, NULL, 0);
  slM_Tensor *q = g->nodes[slM_find_node(g, "layers_0_attn_q_proj")].out; /* stored in 16 bits */
  CHECK(q->half && !q->data && q->dtype == SLM_BF16);
  for (size_t i = 0; i < q->size; i++) CHECK(slK_round_bf16(slM_tensor_at(q, i)) == slM_tensor_at(q, i));
  g->precision = SLM_FP32;
  double l32 = slL_run_step(g, &b, 1, NULL, 0);
  CHECK(l16 != l32);
  CHECK_NEAR(l16, l32, 0.02 * l32);
  slL_batch_free(&b);
  free(dt);
  slM_graph_free(g);
  slM_product_release();
}

/* eager and fused: the same numbers bit for bit, forward and every gradient */
static void check_fused(slM_Graph *eager, const char *what, int batch, int T, int expect) {
  char err[256];
  slM_Graph *fused = slM_graph_copy(eager, 1); /* own parameters, the same values */
  slM_FuseCounts c;
  CHECK_MSG(slM_fuse(fused, 0, &c, err, sizeof err) == 0, "%s", err);
  CHECK_MSG(c.linear_act + c.add_norm + c.masked_softmax == expect, "%s: %d fusions", what,
            c.linear_act + c.add_norm + c.masked_softmax);
  CHECK(fused->n < eager->n);
  slL_Batch b;
  slL_batch_init(&b, eager, batch, T, 5);
  double le = slL_run_step(eager, &b, 1, NULL, 0), lf = slL_run_step(fused, &b, 1, NULL, 0);
  CHECK_MSG(le == lf, "%s: loss %.9g vs %.9g", what, le, lf);
  int lo_e = slM_logits_node(eager), lo_f = slM_logits_node(fused);
  CHECK(memcmp(eager->nodes[lo_e].out->data, fused->nodes[lo_f].out->data,
               eager->nodes[lo_e].out->size * sizeof(float)) == 0);
  int params = 0, differ = 0;
  for (int i = 0; i < eager->n; i++)
    for (int k = 0; k < eager->nodes[i].nparams; k++) {
      slM_Param *p = eager->nodes[i].params[k];
      for (int j = 0; j < fused->n; j++)
        for (int m = 0; m < fused->nodes[j].nparams; m++)
          if (strcmp(fused->nodes[j].params[m]->name, p->name) == 0) {
            params++;
            differ += memcmp(p->grad->data, fused->nodes[j].params[m]->grad->data, p->grad->size * sizeof(float)) != 0;
          }
    }
  size_t trainable, total;
  slM_param_counts(eager, &trainable, &total);
  int nparams = 0;
  for (int i = 0; i < eager->n; i++) nparams += eager->nodes[i].nparams;
  CHECK_EQ_INT(params, nparams);
  CHECK_MSG(differ == 0, "%s: %d gradients differ", what, differ);
  /* inference with buffer planning: same logits, lower peak */
  slM_release_activations(eager);
  slM_release_activations(fused);
  slM_mem_reset();
  size_t base = slM_mem_live();
  slL_run_step(eager, &b, 0, NULL, 0);
  size_t peak_e = slM_mem_total_peak() - base;
  slM_release_activations(eager);
  slM_mem_reset();
  base = slM_mem_live();
  slL_run_step(fused, &b, 0, NULL, 0);
  size_t peak_f = slM_mem_total_peak() - base;
  printf("  %s: %d fused nodes; inference peak eager %zu B, fused and planned %zu B\n", what, expect, peak_e, peak_f);
  CHECK(peak_f < peak_e);
  slL_batch_free(&b);
  slM_graph_free(fused);
  slM_graph_free(eager);
}

static void test_fusion(void) {
  check_fused(mlp(), "mlp", 6, 0, 2);
  check_fused(vit(SLM_FP32), "image transformer", 3, 0, 2 + 2 * 2); /* gelu per layer; two add+norm per layer */
  check_fused(lm(SLM_FP32), "lm", 2, 12, 2);                        /* the masked softmax of each layer */
}

/* attention into FlashAttention-2: a different summation order, so a stated
** tolerance (1e-4 relative) instead of equality; the T x T tensors are gone */
static void check_fused_attention(slM_Graph *eager, const char *what, int batch, int T, int blocks) {
  char err[256];
  slM_Graph *fused = slM_graph_copy(eager, 1);
  slM_FuseCounts c;
  CHECK_MSG(slM_fuse(fused, 1, &c, err, sizeof err) == 0, "%s", err);
  CHECK_EQ_INT(c.attention, blocks);
  for (int i = 0; i < fused->n; i++) CHECK(fused->nodes[i].op != OP_SCORES && fused->nodes[i].op != OP_SOFTMAX);
  slL_Batch b;
  slL_batch_init(&b, eager, batch, T, 6);
  double le = slL_run_step(eager, &b, 1, NULL, 0), lf = slL_run_step(fused, &b, 1, NULL, 0);
  CHECK_NEAR(lf, le, 1e-4 * fabs(le));
  double worst = 0;
  for (int i = 0; i < eager->n; i++)
    for (int k = 0; k < eager->nodes[i].nparams; k++) {
      slM_Param *p = eager->nodes[i].params[k];
      for (int j = 0; j < fused->n; j++)
        for (int m = 0; m < fused->nodes[j].nparams; m++)
          if (strcmp(fused->nodes[j].params[m]->name, p->name) == 0) {
            double scale = 0, diff = 0;
            for (size_t e = 0; e < p->grad->size; e++) {
              scale = fmax(scale, fabs(p->grad->data[e]));
              diff = fmax(diff, fabs(p->grad->data[e] - fused->nodes[j].params[m]->grad->data[e]));
            }
            /* a key bias's gradient is zero in exact arithmetic (softmax ignores a shift): an absolute floor */
            worst = fmax(worst, diff / (1e-4 * scale + 1e-7));
          }
    }
  printf("  %s with FlashAttention-2: loss %.9g vs %.9g, gradients within %.2g of the tolerance\n", what, lf, le,
         worst);
  CHECK(worst <= 1); /* every gradient within 1e-4 of its parameter's largest entry, plus 1e-7 */
  /* the prediction follows the fused graph: logsumexp rows instead of T x T tensors */
  slL_Prediction pe, pf;
  slL_predict_graph(eager, batch, T, SLL_RUN_TRAIN, -1, &pe);
  slL_predict_graph(fused, batch, T, SLL_RUN_TRAIN, -1, &pf);
  CHECK(pf.peak < pe.peak && pf.scores == 0);
  slM_release_activations(fused);
  slM_mem_reset();
  size_t trainable, total;
  slM_param_counts(fused, &trainable, &total);
  size_t base = slM_mem_live() - 8 * total; /* parameters and their gradients (shared names, own copies) */
  slL_run_step(fused, &b, 1, NULL, 0);
  size_t measured = slM_mem_total_peak() - base;
  CHECK_MSG(fabs(pf.peak - (double)measured) <= 0.1 * (double)measured, "%s: predicted %.0f measured %zu", what,
            pf.peak, measured);
  slL_batch_free(&b);
  slM_graph_free(fused);
  slM_graph_free(eager);
}

static void test_fused_attention(void) {
  check_fused_attention(lm(SLM_FP32), "lm", 2, 12, 2);
  check_fused_attention(vit(SLM_FP32), "image transformer", 3, 0, 2);
}

/* the largest relative difference of g's and h's gradients (same parameter names) */
static double grad_gap(slM_Graph *g, slM_Graph *h) {
  double worst = 0;
  for (int i = 0; i < g->n; i++)
    for (int k = 0; k < g->nodes[i].nparams; k++) {
      slM_Param *p = g->nodes[i].params[k];
      for (int j = 0; j < h->n; j++)
        for (int m = 0; m < h->nodes[j].nparams; m++) {
          slM_Param *q = h->nodes[j].params[m];
          if (strcmp(q->name, p->name) != 0) continue;
          double scale = 0, diff = 0;
          for (size_t e = 0; e < p->grad->size; e++) {
            scale = fmax(scale, fabs(p->grad->data[e]));
            diff = fmax(diff, fabs(p->grad->data[e] - q->grad->data[e]));
          }
          worst = fmax(worst, diff / (scale + 1e-6));
        }
    }
  return worst;
}

/* bf16 products with vdpbf16ps (the weights rounded once per step) against the
** emulated path (operands rounded into scratch, float32 sgemm): both compute
** "bf16 inputs, float32 sums", so they differ only in the order of the sums
** and in vdpbf16ps's flushing of subnormals; a stated tolerance of 1% of each
** gradient's largest entry after bf16 rounding of the activations between */
static void check_native_half(slM_Graph *g, const char *what, int batch, int T, int fuse_attention) {
  char err[256];
  slM_FuseCounts c;
  if (fuse_attention) CHECK_MSG(slM_fuse(g, 1, &c, err, sizeof err) == 0 && c.attention > 0, "%s", err);
  g->precision = SLM_BF16;
  slM_Graph *h = slM_graph_copy(g, 1);
  h->precision = SLM_BF16;
  slL_Batch b;
  slL_batch_init(&b, g, batch, T, 7);
  double ln = slL_run_step(g, &b, 1, NULL, 0);
  int was = slK_force_portable(1);
  CHECK(!slM_product_native(SLM_BF16));
  double le = slL_run_step(h, &b, 1, NULL, 0);
  slK_force_portable(was);
  double gap = grad_gap(g, h);
  printf("  %s bf16: loss native %.7g emulated %.7g, gradients within %.2g of their largest entry\n", what, ln, le,
         gap);
  CHECK_NEAR(ln, le, 2e-3 * fabs(le));
  CHECK(gap < 0.01);
  /* the rounded weights are given back when the step ends */
  for (int i = 0; i < g->n; i++)
    for (int k = 0; k < g->nodes[i].nparams; k++) CHECK(g->nodes[i].params[k]->half == NULL);
  slL_batch_free(&b);
  slM_graph_free(h);
  slM_graph_free(g);
  slM_product_release();
}

static void test_native_half(void) {
  if (!slM_product_native(SLM_BF16)) {
    printf("  skipped: this CPU has no avx512_bf16, so bf16 products run the emulated path only\n");
    return;
  }
  check_native_half(lm(SLM_FP32), "lm", 2, 12, 0);
  check_native_half(lm(SLM_FP32), "lm with FlashAttention-2", 2, 12, 1);
  check_native_half(vit(SLM_FP32), "image transformer", 3, 0, 0);
}

static void test_profile(void) {
  slM_Graph *g = lm(SLM_FP32);
  slL_Batch b;
  slL_batch_init(&b, g, 2, 12, 1);
  slM_Profile *p = slM_profile_attach(g);
  slL_run_step(g, &b, 1, NULL, 0);
  slM_profile_detach(g);
  double fwd = 0, bwd = 0;
  for (int i = 0; i < p->n; i++) fwd += p->forward[i], bwd += p->backward[i];
  CHECK(fwd > 0 && bwd > 0);
  CHECK(p->forward[slM_find_node(g, "lm_head")] > 0);
  CHECK(p->backward[slM_find_node(g, "tokens")] == 0);
  slM_profile_free(p);
  slL_batch_free(&b);
  slM_graph_free(g);
}

/* The budget is the smallest of MemAvailable, the address-space headroom
** under ulimit -v and SYSLAB_MEMORY_BUDGET, and the systems commands that
** allocate are held to it even when given a larger one for another machine. */
static void test_budget_limits_hold(void) {
  double machine = sl_memory_budget();
  setenv("SYSLAB_MEMORY_BUDGET", "1G", 1);
  CHECK_NEAR(sl_memory_budget(), 1073741824.0, 1);
  CHECK_STREQ(sl_memory_budget_source(), "SYSLAB_MEMORY_BUDGET");
  sl_State *S = sl_new();
  CHECK_CONTAINS(check_eval(S, "m = lm medium"), "over the budget of 1.07 GB");
  CHECK_CONTAINS(check_eval(S, "m = lm medium budget=\"80GB\""), "over the budget of 1.07 GB");
  CHECK_CONTAINS(check_eval(S, "p = memory_predict presets=[\"small\"] contexts=[128] batch=4 run=train\np.status[0]"),
                 "\"OOM\"");
  CHECK_CONTAINS(
      check_eval(S, "p = memory_predict presets=[\"small\"] contexts=[128] batch=4 run=train budget=\"80GB\"\n"
                    "p.status[0]"),
      "\"OK\""); /* a prediction for another machine allocates nothing */
  unsetenv("SYSLAB_MEMORY_BUDGET");
  CHECK_NEAR(sl_memory_budget(), machine, machine * 0.2);
  /* ulimit -v, in a child so the limit stays there */
  pid_t pid = fork();
  if (pid == 0) {
    struct rlimit rl = {(rlim_t)6 << 30, (rlim_t)6 << 30};
    int ok = setrlimit(RLIMIT_AS, &rl) == 0 && sl_memory_budget() < 6.0 * (1 << 30) &&
             strstr(sl_memory_budget_source(), "ulimit -v") != NULL;
    _exit(ok ? 0 : 1);
  }
  int status = 0;
  waitpid(pid, &status, 0);
  CHECK_MSG(WIFEXITED(status) && WEXITSTATUS(status) == 0, "under ulimit -v the budget is the address space left");
  sl_free(S);
}

/* A model the session holds is not counted twice: its parameters are in the
** predicted peak and already allocated, so a step that fits is not refused
** because they left the memory available. In a child, under an address-space
** limit that leaves room for the step but not for the parameters again. */
static void test_held_model_counts_once(void) {
  pid_t pid = fork();
  if (pid == 0) {
    sl_State *S = sl_new();
    /* about 102 MB of parameters (two 50,000 x 256 tables), a step of a few MB */
    const char *e = check_fails(S, "m = lm tiny vocab=50000 d_model=256 d_ff=256 layers=1 heads=2 context=8\n"
                                   "w = memory_profile m batch=1 run=forward");
    double pages = 0;
    FILE *f = fopen("/proc/self/statm", "r");
    int got = f && fscanf(f, "%lf", &pages) == 1;
    if (f) fclose(f);
    double mapped = pages * (double)sysconf(_SC_PAGESIZE);
    struct rlimit rl = {(rlim_t)(mapped + 60e6), (rlim_t)(mapped + 60e6)};
    if (e || !got || setrlimit(RLIMIT_AS, &rl) != 0) _exit(2);
    const char *r = check_eval(S, "p = memory_profile m batch=1 run=forward\np.peak_mb > 100");
    _exit(strcmp(r, "true") == 0 ? 0 : (fprintf(stderr, "  %s\n", r), 1));
  }
  int status = 0;
  waitpid(pid, &status, 0);
  CHECK_MSG(WIFEXITED(status) && WEXITSTATUS(status) == 0,
            "a profile of a held model under a limit that fits its step (exit %d)", WEXITSTATUS(status));
}

/* lm_bench keeps what it measured: a preset that faults becomes rows whose
** status names the fault, and the presets after it are measured. The fault
** is a real one of the executor's (SYSLAB_FAULT_NODE stops a pass at a node
** as a failed kernel does on the GPU), at a node of the third layer, which
** the small preset has and the tiny one has not. */
static void test_lm_bench_keeps_rows(void) {
  sl_State *S = sl_new();
  setenv("SYSLAB_FAULT_NODE", "layers_2_ffn_w1", 1);
  const char *out = check_eval(S, "t = lm_bench presets=[\"tiny\", \"small\", \"tiny\"] contexts=[8] warmups=[0] "
                                  "steps=1 batch=1\n[t.config, t.status_fwd, t.status_train, t.mean_s_train]");
  unsetenv("SYSLAB_FAULT_NODE");
  CHECK_CONTAINS(out, "[[\"tiny\", \"small\", \"tiny\"], [\"OK\", \"fault: node layers_2_ffn_w1");
  CHECK_CONTAINS(out, "\"OK\"]"); /* the tiny preset after the fault: measured */
  double t0 = atof(check_eval(S, "t.mean_s_train[0]")), t2 = atof(check_eval(S, "t.mean_s_train[2]"));
  CHECK(t0 > 0 && t2 > 0);
  CHECK_STREQ(check_eval(S, "t.mean_s_train[1]"), "nil"); /* no time for a run that faulted */
  /* without the fault the same table runs through: the fault was the only difference */
  CHECK_CONTAINS(
      check_eval(S, "u = lm_bench presets=[\"tiny\"] contexts=[8] warmups=[0] steps=1 batch=1\nu.status_train"),
      "[\"OK\"]");
  /* several precisions from one build of each preset: a row per precision, each named */
  CHECK_STREQ(check_eval(S, "v = lm_bench presets=[\"tiny\"] contexts=[8, 16] warmups=[0] steps=1 batch=1 "
                            "precisions=[\"fp32\", \"bf16\"]\n[v.precision, v.context, v.status_train]"),
              "[[\"fp32\", \"bf16\", \"fp32\", \"bf16\"], [8, 8, 16, 16], [\"OK\", \"OK\", \"OK\", \"OK\"]]");
  CHECK_CONTAINS(check_eval(S, "lm_bench presets=[\"tiny\"] precisions=[\"fp64\"]"), "'fp64' is not a precision");
  /* max_step_s: the first configuration has no prediction and runs; the next is predicted from its rate, and every
  ** warm-up row of a configuration predicted too slow is SLOW, with its prediction and no time */
  CHECK_STREQ(check_eval(S, "w = lm_bench presets=[\"tiny\"] contexts=[8, 64] warmups=[0, 1] steps=1 batch=1 "
                            "max_step_s=0.000000001\n[w.status_fwd, w.status_train, w.predicted_s_train[0]]"),
              "[[\"OK\", \"OK\", \"SLOW\", \"SLOW\"], [\"OK\", \"OK\", \"SLOW\", \"SLOW\"], nil]");
  /* a prediction for each pass of the SLOW configuration, the same for its every warm-up row (which pass is predicted
  ** the longer depends on the two measured times of a step of microseconds, so it is not asserted) */
  CHECK(atof(check_eval(S, "w.predicted_s_train[3]")) > 0 && atof(check_eval(S, "w.predicted_s_fwd[3]")) > 0);
  CHECK_STREQ(check_eval(S, "w.predicted_s_train[2] == w.predicted_s_train[3]"), "true");
  CHECK_STREQ(check_eval(S, "w.mean_s_train[2]"), "nil");
  CHECK_STREQ(check_eval(S, "(lm_bench presets=[\"tiny\"] contexts=[8, 64] warmups=[0] steps=1 batch=1 "
                            "max_step_s=1000).status_train"),
              "[\"OK\", \"OK\"]");
  CHECK_CONTAINS(check_eval(S, "lm_bench max_step_s=-1"), "max_step_s: must be 0 (no limit) or a number of seconds");
  sl_free(S);
}

/* Each lm_bench run starts as a fresh model: the forward at the second context comes after the first context's
** training run, and holds no gradients from it, so every run's measured peak stays within the prediction it was
** admitted by. (Holding them, the forward measured the parameters twice over: over its prediction, which is how a
** forward predicted to fit the machine's memory was killed once the run before it had trained.) */
static void test_lm_bench_runs_start_fresh(void) {
  sl_State *S = sl_new();
  check_eval(S, "b = lm_bench presets=[\"tiny\"] contexts=[32, 16] warmups=[0, 1] steps=1 batch=2");
  CHECK_STREQ(check_eval(S, "[b.status_fwd, b.status_train]"),
              "[[\"OK\", \"OK\", \"OK\", \"OK\"], [\"OK\", \"OK\", \"OK\", \"OK\"]]");
  for (int r = 0; r < 4; r++) {
    char q[160];
    snprintf(q, sizeof q,
             "[b.measured_gb_fwd[%d], b.predicted_gb_fwd[%d], b.measured_gb_train[%d], b.predicted_gb_train[%d]]", r, r,
             r, r);
    double v[4];
    CHECK(sscanf(check_eval(S, q), "[%lf, %lf, %lf, %lf]", &v[0], &v[1], &v[2], &v[3]) == 4);
    CHECK_MSG(v[0] > 0 && v[0] <= v[1], "row %d: forward measured %g GB, predicted %g GB", r, v[0], v[1]);
    CHECK_MSG(v[2] > v[0] && v[2] <= v[3], "row %d: training measured %g GB, predicted %g GB", r, v[2], v[3]);
  }
  sl_free(S);
}

/* memory_profile measures the profiled model alone, whatever else the session holds */
static void test_memory_profile_is_the_models_own(void) {
  sl_State *S = sl_new();
  check_eval(S, "t = lm tiny context=32\np1 = memory_profile t batch=2 context=32 run=train");
  const char *alone = check_eval(S, "p1.peak_mb");
  char first[64];
  snprintf(first, sizeof first, "%s", alone);
  check_eval(S, "s = lm tiny d_model=128 d_ff=256 layers=4 heads=4 context=32\n"
                "h = lm_train s steps=1 batch=2 context=32");
  check_eval(S, "p2 = memory_profile t batch=2 context=32 run=train");
  CHECK_STREQ(check_eval(S, "p2.peak_mb"), first);
  CHECK_STREQ(check_eval(S, "p2.peak_mb == p2.predicted_mb"), "true");
  sl_free(S);
}

/* attention_bench in bf16: the products' inputs rounded and their outputs
** stored in 16 bits, which the prediction counts (below float32's), the row
** saying which precision ran;
** fusion_bench times the pass alone, which eager does not run */
static void test_attention_precision_and_fusion_pass(void) {
  sl_State *S = sl_new();
  check_eval(S, "a = attention_bench contexts=[32] widths=[16] steps=1\n"
                "b = attention_bench contexts=[32] widths=[16] steps=1 precision=bf16");
  CHECK_STREQ(check_eval(S, "[a.precision[0], b.precision[0], b.status[0]]"), "[\"fp32\", \"bf16\", \"OK\"]");
  CHECK_STREQ(check_eval(S, "b.predicted_mb[0] < a.predicted_mb[0] and b.forward_ms[0] > 0"), "true");
  check_eval(S, "f = fusion_bench (lm tiny context=32) batch=2 steps=1");
  CHECK_STREQ(check_eval(S, "[f.mode[0], f.pass_ms[0], f.mode[1]]"), "[\"eager\", 0, \"fused\"]");
  CHECK_STREQ(check_eval(S, "f.pass_ms[1] > 0 and f.pass_ms[1] < f.first_call_ms[1] and f.pass_ms[3] > 0"), "true");
  sl_free(S);
}

/* predicted against measured by memory_check, for models whose nodes hold
** more than a plain model's: quantised (copies of inputs and weights), pruned
** (masks, masked weights, pruned activations), a quantised language model at
** a context below its own, and a pruned one fused (whose planned inference
** frees each output after its last reader: its forward is predicted as the
** sum, an upper bound); each training row's step is the optimizer asked for */
static void test_memory_check_compressed_and_optimizers(void) {
  sl_State *S = sl_new();
  const char *e = check_fails(S, "m = model mlp hidden=[256, 128] seed=1\n"
                                 "q = quantize_model m format=integer width=8 frac=4\n"
                                 "p = prune m sparsity=0.5 activation_sparsity=0.25\n"
                                 "c = compress m format=mxint8 sparsity=0.3\n"
                                 "l = quantize_model (lm tiny vocab=256 context=64) format=mxint8\n"
                                 "f = fuse (prune (lm tiny vocab=256 context=64) sparsity=0.5)\n");
  CHECK_MSG(e == NULL, "%s", e);
  const char *calls[] = {"memory_check q batch=64", "memory_check p batch=64 optimizer=sgd",
                         "memory_check c batch=64 optimizer=none", "memory_check l batch=2 context=16",
                         "memory_check f batch=2 context=32"};
  for (size_t i = 0; i < sizeof calls / sizeof *calls; i++) {
    char code[256];
    snprintf(code, sizeof code, "r = %s\n[r.ratio[0], r.ratio[1]]", calls[i]);
    const char *ratios = check_eval(S, code);
    double fwd = 0, train = 0;
    CHECK_MSG(sscanf(ratios, "[%lf, %lf]", &fwd, &train) == 2, "%s: %s", calls[i], ratios);
    printf("  %s: predicted / measured %.4f forward, %.4f training\n", calls[i], fwd, train);
    int planned = strstr(calls[i], " f ") != NULL;
    CHECK_MSG((planned ? fwd >= 1 : fabs(fwd - 1) <= 0.10) && fabs(train - 1) <= 0.10, "%s: %s", calls[i], ratios);
  }
  CHECK_STREQ(check_eval(S, "(memory_check m batch=8).run[1]"), "\"train (AdamW step)\"");
  CHECK_STREQ(check_eval(S, "(memory_check m batch=8 optimizer=sgd).run[1]"), "\"train (SGD step)\"");
  CHECK_STREQ(check_eval(S, "(memory_check m batch=8 optimizer=none).run[1]"), "\"train (no optimizer step)\"");
  /* each optimizer's state is what it holds: AdamW two moments, SGD one, none none */
  CHECK_STREQ(check_eval(S, "a = memory_check m batch=8\ns = memory_check m batch=8 optimizer=sgd\n"
                            "n = memory_check m batch=8 optimizer=none\n"
                            "a.measured_mb[1] > s.measured_mb[1] and s.measured_mb[1] > n.measured_mb[1]"),
              "true");
  /* and the model checked is left as it was: no step touched its weights */
  CHECK_STREQ(check_eval(S, "x = copy m\nr = memory_check m batch=8\n"
                            "(difference x m (dataset synthetic train=8 test=8 features=784 classes=10)).identical"),
              "true");
  sl_free(S);
}

int main(void) {
  RUN(test_memory_prediction);
  RUN(test_memory_check_compressed_and_optimizers);
  RUN(test_budget_and_refusal);
  RUN(test_budget_limits_hold);
  RUN(test_lm_bench_keeps_rows);
  RUN(test_lm_bench_runs_start_fresh);
  RUN(test_memory_profile_is_the_models_own);
  RUN(test_attention_precision_and_fusion_pass);
  RUN(test_held_model_counts_once);
  RUN(test_tags_and_timeline);
  RUN(test_accumulation_and_rounding);
  RUN(test_dtype_table);
  RUN(test_fusion);
  RUN(test_fused_attention);
  RUN(test_native_half);
  RUN(test_profile);
  return check_summary();
}
