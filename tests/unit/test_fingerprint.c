/* test_fingerprint.c - what the CPU computes, one line per model: every
** model family trained a few steps in float32, bf16 and fp16, its losses
** printed exactly (hexadecimal floats) beside a hash of every weight and
** optimiser moment after the last step.
**
** A change meant to leave the arithmetic alone (a refactor, a new layout of
** the code) is checked by running this program before and after it on one
** machine: the lines must be identical. The lines are not compared with
** figures kept here, because the bits depend on the machine (AVX-512's
** vdpbf16ps against the portable loops, OpenBLAS's kernels for the CPU it
** finds). What the test itself asserts holds everywhere: each model trains
** to finite losses, and a second run from the same seed gives the same
** line, bit for bit (docs/numerics.md: same seed, same numbers).
**
** Families: the MLP (ReLU with dropout under SGD, GELU under AdamW), the
** image transformer (attention op by op with its mask and loss node, the
** fused attention node, the fusion pass's operators), and the language
** model (op by op, the fused attention node). */
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "graph/lm.h"
#include "graph/model.h"
#include "graph/passes.h"
#include "graph/train.h"

static char err[512];

enum { STEPS = 4 };

/* FNV-1a over bytes, continued from h */
static uint64_t fnv(uint64_t h, const void *p, size_t n) {
  const unsigned char *b = p;
  for (size_t i = 0; i < n; i++) h = (h ^ b[i]) * 0x100000001b3ull;
  return h;
}

static uint64_t hash_tensor(uint64_t h, const slM_Tensor *t) {
  return t && t->data ? fnv(h, t->data, t->size * sizeof(float)) : fnv(h, "-", 1);
}

/* every parameter's value and moments, in node order (a parameter shared by two nodes counts twice) */
static uint64_t weights_hash(const slM_Graph *g) {
  uint64_t h = 0xcbf29ce484222325ull;
  for (int i = 0; i < g->n; i++)
    for (int k = 0; k < g->nodes[i].nparams; k++) {
      const slM_Param *p = g->nodes[i].params[k];
      h = hash_tensor(hash_tensor(hash_tensor(h, p->value), p->m), p->v);
    }
  return h;
}

typedef enum { MLP_RELU, MLP_GELU, VIT, VIT_FUSED_ATTENTION, VIT_FUSION_PASS, LM, LM_FUSED_ATTENTION, NMODELS } Model;

static const char *const model_names[NMODELS] = {
    "mlp relu sgd", "mlp gelu adamw",    "transformer", "transformer fused attention", "transformer fusion pass",
    "lm",           "lm fused attention"};
static const char *const precision_names[] = {[SLM_FP32] = "fp32", [SLM_BF16] = "bf16", [SLM_FP16] = "fp16"};

static slM_Graph *build(Model m) {
  slM_Graph *g = NULL;
  if (m == MLP_RELU || m == MLP_GELU) {
    slM_MlpSpec s = {16, 3, {32, 16}, 2, m == MLP_RELU ? OP_RELU : OP_GELU, 0.1f};
    g = slM_mlp(&s, 7, 1, err, sizeof err);
  } else if (m == LM || m == LM_FUSED_ATTENTION) {
    slM_LmSpec s = {"", 64, 16, 32, 64, 2, 2};
    g = slM_lm(&s, 7, err, sizeof err);
    if (g && m == LM_FUSED_ATTENTION) slM_set_attention(g, 1);
  } else {
    slM_TransformerSpec s = {8, 8, 3, 4, 2, 16, 2, 2, 0.1f, m == VIT_FUSED_ATTENTION};
    slM_FuseCounts counts;
    g = slM_transformer(&s, 7, 1, m == VIT, err, sizeof err);
    if (g && m == VIT_FUSION_PASS && slM_fuse(g, 0, &counts, err, sizeof err) != 0) slM_graph_free(g), g = NULL;
  }
  CHECK_MSG(g != NULL, "%s: %s", model_names[m], err);
  return g;
}

/* STEPS steps of a language model on random tokens; the losses into loss */
static void train_lm(slM_Graph *g, double *loss) {
  enum { B = 4, T = 16 };
  int32_t tok[B * T], tgt[B * T];
  slM_Rng rng;
  slM_rng_seed(&rng, 11);
  slM_TrainConfig c = {1, B, 0.003, 0.9, 0.01, SLM_ADAMW, SLM_CONSTANT, 0, 0};
  for (int s = 0; s < STEPS; s++) {
    slM_lm_random_batch(&rng, g->vocab, B, T, tok, tgt);
    slM_lm_forward(g, tok, tgt, B, T, 1);
    slM_zero_grads(g);
    loss[s] = slM_backward(g, NULL, B);
    slM_optimizer_step(g, &c, c.lr, s);
  }
}

/* the model trained from scratch in a precision: its line, in out */
static void fingerprint(Model m, int precision, char *out, size_t size) {
  out[0] = '\0';
  slM_Graph *g = build(m);
  if (!g) return;
  g->precision = precision;
  double loss[STEPS] = {0};
  if (m == LM || m == LM_FUSED_ATTENTION) {
    train_lm(g, loss);
  } else {
    /* a training split of one batch: each epoch is one step, and its loss that step's */
    slM_Dataset *d = slM_synthetic(16, 16, g->features, g->classes, 0.5, 3);
    slM_TrainConfig c = {STEPS, 16, 0.01, 0.9, 0.01, m == MLP_RELU ? SLM_SGD : SLM_ADAMW, SLM_CONSTANT, 0, 5};
    slM_EpochStats st[STEPS];
    CHECK_EQ_INT(slM_train(g, d, &c, NULL, st), STEPS);
    for (int s = 0; s < STEPS; s++) loss[s] = st[s].loss;
    slM_dataset_free(d);
  }
  size_t used = (size_t)snprintf(out, size, "%-28s %s", model_names[m], precision_names[precision]);
  for (int s = 0; s < STEPS; s++) {
    CHECK_MSG(isfinite(loss[s]), "%s %s step %d: loss %g", model_names[m], precision_names[precision], s + 1, loss[s]);
    used += (size_t)snprintf(out + used, used < size ? size - used : 0, " %a", loss[s]);
  }
  snprintf(out + used, used < size ? size - used : 0, " weights %016" PRIx64, weights_hash(g));
  slM_graph_free(g);
}

static void test_every_family_in_every_precision(void) {
  static const int precisions[] = {SLM_FP32, SLM_BF16, SLM_FP16};
  char line[512], again[512];
  for (int m = 0; m < NMODELS; m++)
    for (int p = 0; p < 3; p++) {
      fingerprint((Model)m, precisions[p], line, sizeof line);
      printf("%s\n", line);
      fingerprint((Model)m, precisions[p], again, sizeof again);
      CHECK_MSG(strcmp(line, again) == 0, "a second run differs:\n  %s\n  %s", line, again);
    }
}

int main(void) {
  setvbuf(stdout, NULL, _IOLBF, 0);
  RUN(test_every_family_in_every_precision);
  return check_summary();
}
