/* test_attention_graph.c - the transformer's attention op by op against the
** fused node (FlashAttention-2): built either way with one seed, or switched
** by the set_attention pass in both directions, the two graphs give the same
** logits, loss and parameter gradients within float32 rounding, with and
** without an attention mask; training runs through the fused kernel. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "graph/model.h"
#include "graph/passes.h"
#include "graph/train.h"
#include "syslab.h"

static int count_op(const slM_Graph *g, slM_Op op) {
  int n = 0;
  for (int i = 0; i < g->n; i++) n += g->nodes[i].op == op;
  return n;
}

static float *images(int batch, int features) {
  float *x = malloc(sizeof(float) * (size_t)batch * features);
  slM_Rng r;
  slM_rng_seed(&r, 9);
  for (int i = 0; i < batch * features; i++) x[i] = (float)slM_rng_normal(&r);
  return x;
}

/* forward and backward on both graphs; logits, loss and every parameter gradient compared */
static void same_results(slM_Graph *a, slM_Graph *b, const char *what) {
  int batch = 5, C = a->classes;
  float *x = images(batch, a->features);
  uint8_t y[5] = {0, 1, 2, 1, 0};
  slM_zero_grads(a);
  slM_zero_grads(b);
  slM_Tensor *la = slM_tensor_copy(slM_forward(a, x, y, batch, 1));
  slM_Tensor *lb = slM_forward(b, x, y, batch, 1);
  double worst = 0;
  for (int i = 0; i < batch * C; i++) worst = fmax(worst, fabs(la->data[i] - lb->data[i]));
  CHECK_MSG(worst < 1e-5, "%s: logits differ by %g", what, worst);
  double loss_a = slM_backward(a, y, batch), loss_b = slM_backward(b, y, batch);
  CHECK_MSG(fabs(loss_a - loss_b) < 1e-5, "%s: losses %.9g and %.9g", what, loss_a, loss_b);
  int compared = 0;
  for (int i = 0; i < a->n; i++) {
    int j = slM_find_node(b, a->nodes[i].name);
    if (j < 0 || a->nodes[i].nparams == 0) continue;
    for (int k = 0; k < a->nodes[i].nparams; k++) {
      slM_Tensor *ga = a->nodes[i].params[k]->grad, *gb = b->nodes[j].params[k]->grad;
      if (!ga || !gb) continue;
      double scale = 1e-12, diff = 0;
      for (size_t e = 0; e < ga->size; e++) {
        scale = fmax(scale, fabs(ga->data[e]));
        diff = fmax(diff, fabs(ga->data[e] - gb->data[e]));
      }
      CHECK_MSG(diff <= 1e-4 * scale + 1e-6, "%s: gradient of %s differs by %g (largest %g)", what,
                a->nodes[i].params[k]->name, diff, scale);
      compared++;
    }
  }
  CHECK_MSG(compared > 10, "%s: only %d gradients compared", what, compared);
  slM_tensor_free(la);
  free(x);
}

static void test_builder_naive_and_fused_agree(void) {
  char err[256];
  for (int mask = 0; mask < 2; mask++) {
    /* 8x8 images in 2x2 patches: 16 tokens; no dropout, so both graphs compute the same function */
    slM_TransformerSpec s = {8, 8, 3, 2, 2, 16, 2, 2, 0.0f, 0};
    slM_Graph *naive = slM_transformer(&s, 7, 1, mask, err, sizeof err);
    s.fused_attention = 1;
    slM_Graph *fused = slM_transformer(&s, 7, 1, mask, err, sizeof err);
    CHECK_MSG(naive && fused, "%s", err);
    if (!naive || !fused) return;
    CHECK_EQ_INT(count_op(fused, OP_ATTENTION), 2);
    CHECK_EQ_INT(count_op(fused, OP_SCORES) + count_op(fused, OP_SOFTMAX) + count_op(fused, OP_CONTEXT), 0);
    CHECK(slM_verify(fused, err, sizeof err) == 0);
    same_results(naive, fused, mask ? "builders, with mask" : "builders");
    slM_graph_free(naive);
    slM_graph_free(fused);
  }
}

static void test_pass_switches_both_ways(void) {
  char err[256];
  slM_TransformerSpec s = {8, 8, 3, 2, 2, 16, 4, 2, 0.0f, 0};
  slM_Graph *naive = slM_transformer(&s, 3, 1, 1, err, sizeof err);
  slM_Graph *fused = slM_graph_copy(naive, 0);
  CHECK_EQ_INT(slM_set_attention(fused, 1), 2);
  CHECK(slM_verify(fused, err, sizeof err) == 0);
  CHECK_EQ_INT(count_op(fused, OP_ATTENTION), 2);
  CHECK_EQ_INT(count_op(fused, OP_MASK_FILL), 0);
  CHECK(slM_find_node(fused, "encoder_0_attention_sdpa") >= 0);
  same_results(naive, fused, "pass to fused");
  slM_Graph *back = slM_graph_copy(fused, 0);
  CHECK_EQ_INT(slM_set_attention(back, 0), 2);
  CHECK(slM_verify(back, err, sizeof err) == 0);
  CHECK_EQ_INT(back->n, naive->n);
  for (int i = 0; i < naive->n && i < back->n; i++) {
    CHECK_STREQ(back->nodes[i].name, naive->nodes[i].name);
    CHECK_EQ_INT(back->nodes[i].op, naive->nodes[i].op);
  }
  same_results(naive, back, "pass back to naive");
  CHECK_EQ_INT(slM_set_attention(back, 0), 0); /* nothing left to change */
  slM_graph_free(back);
  slM_graph_free(fused);
  slM_graph_free(naive);
}

static void test_training_runs_fused(void) {
  char err[256];
  slM_Dataset *d = slM_synthetic(400, 100, 16, 3, 0.6, 11);
  slM_TransformerSpec s = {4, 4, 3, 2, 1, 8, 2, 2, 0.1f, 1};
  slM_Graph *g = slM_transformer(&s, 2, 1, 0, err, sizeof err);
  CHECK_MSG(g != NULL, "%s", err);
  if (!g) return;
  slM_TrainConfig c = {4, 32, 0.01, 0.9, 0, SLM_ADAMW, SLM_CONSTANT, 0, 1};
  slM_EpochStats st[4];
  CHECK_EQ_INT(slM_train(g, d, &c, NULL, st), 4);
  CHECK_MSG(st[3].loss < st[0].loss, "loss %g then %g", st[0].loss, st[3].loss);
  CHECK_MSG(st[3].test_accuracy > 0.5, "test accuracy %g", st[3].test_accuracy);
  slM_graph_free(g);
  slM_dataset_free(d);
}

static void test_commands(void) {
  sl_State *S = sl_new();
  sl_Value v;
  sl_Error e;
  const char *code =
      "m = model transformer inputs=64 classes=3 depth=1 width=8 heads=2 patch=2 dropout=0\n"
      "f = set_attention m attention=fused\n"
      "n = pass f set_attention attention=naive\n"
      "b = model transformer inputs=64 classes=3 depth=1 width=8 heads=2 patch=2 attention=fused\n"
      "[(count_nodes f).count, (count_nodes n).count, (meta f \"encoder_0_attention_sdpa\").software.kernel]";
  int rc = sl_execute(S, code, NULL, &v, &e);
  CHECK_MSG(rc == 0, "%s", rc ? e.evalue : "");
  if (rc == 0) {
    char *text = sl_tostring(v);
    CHECK_CONTAINS(text, "flash_attention_2");
    free(text);
    sl_release(v);
  } else {
    sl_error_free(&e);
  }
  rc = sl_execute(S, "set_attention (model mlp)", NULL, &v, &e);
  CHECK(rc != 0);
  if (rc != 0) {
    CHECK_CONTAINS(e.evalue, "only a transformer");
    sl_error_free(&e);
  }
  sl_free(S);
}

int main(void) {
  RUN(test_builder_naive_and_fused_agree);
  RUN(test_pass_switches_both_ways);
  RUN(test_training_runs_fused);
  RUN(test_commands);
  return check_summary();
}
