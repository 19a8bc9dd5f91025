/*
** test_train_edges.c - training and evaluation at their edges: an epoch cut
** short inside a step shows what it measured (its whole steps' loss and
** training accuracy, no test figures), an evaluation cut short reports no
** share of the items as the whole, and an fp16 model whose values overflow
** float16's range is told so, by train and by evaluate, whatever batch size
** hides it from the loss.
*/
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "graph/model.h"
#include "graph/train.h"
#include "syslab.h"

static slM_Graph *mlp(void) {
  slM_MlpSpec s = {16, 3, {32}, 1, OP_RELU, 0.0f};
  char err[256];
  slM_Graph *g = slM_mlp(&s, 4, 0, err, sizeof err);
  CHECK_MSG(g != NULL, "%s", err);
  return g;
}

/* Steps finished (the progress hook), and where to stop: before the step
** after `limit` (a batch boundary), or, with `in_backward`, at the first
** node of that step's backward pass, as an interrupt does. */
typedef struct {
  int done, limit, in_backward, nodes;
  long calls; /* stop-hook calls since the last finished step */
} Cut;

static void finished(void *ud, int epoch, double fraction, double loss) {
  (void)epoch, (void)fraction, (void)loss;
  Cut *c = ud;
  c->done++;
  c->calls = 0;
}

/* asked once before a batch, then between the nodes of its forward and backward passes */
static int cut_here(void *ud) {
  Cut *c = ud;
  if (c->done < c->limit) return 0;
  long at = c->in_backward ? 1 + c->nodes + 1 : 1; /* the batch's start, its forward's nodes, the backward's first */
  if (++c->calls < at) return 0;
  sl_interrupt(); /* as the kernel's interrupt does: evaluation sees it too */
  return 1;
}

static void test_epoch_cut_inside_a_step(void) {
  slM_Dataset *d = slM_synthetic(256, 64, 16, 3, 0.1, 7);
  slM_TrainConfig c = {2, 16, 0.05, 0.9, 0, SLM_SGD, SLM_CONSTANT, 0, 3};
  slM_EpochStats ref[2], cut[2];
  slM_Graph *a = mlp(), *b = mlp();
  Cut at_boundary = {0, 3, 0, a->n}, in_backward = {0, 3, 1, b->n};
  slM_TrainHooks ha = {&at_boundary, finished, cut_here}, hb = {&in_backward, finished, cut_here};
  sl_clear_interrupt();
  CHECK_EQ_INT(slM_train(a, d, &c, &ha, ref), 1);
  sl_clear_interrupt();
  CHECK_EQ_INT(slM_train(b, d, &c, &hb, cut), 1);
  sl_clear_interrupt();
  CHECK_EQ_INT(at_boundary.done, 3);
  CHECK_EQ_INT(in_backward.done, 3);
  /* the cut step counts nowhere: the row is the three whole steps', as when stopped at the boundary */
  CHECK(!cut[0].complete && !ref[0].complete);
  CHECK_MSG(cut[0].train_accuracy == ref[0].train_accuracy, "training accuracy %g, of three whole steps %g",
            cut[0].train_accuracy, ref[0].train_accuracy);
  CHECK(cut[0].train_accuracy <= 1);
  CHECK(cut[0].loss == ref[0].loss);
  /* the test split was not run: no figures for it, not zeros */
  CHECK_MSG(isnan(cut[0].test_accuracy) && isnan(cut[0].test_loss), "test accuracy %g, loss %g of a partial epoch",
            cut[0].test_accuracy, cut[0].test_loss);
  slM_graph_free(a);
  slM_graph_free(b);
  slM_dataset_free(d);
}

static void test_evaluation_cut_short(void) {
  slM_Dataset *d = slM_synthetic(16, 600, 16, 3, 0.1, 7);
  slM_Graph *g = mlp();
  double acc, loss;
  slM_evaluate(g, d->test_x, d->test_y, d->ntest, &acc, &loss);
  CHECK(acc >= 0 && acc <= 1 && isfinite(loss));
  sl_interrupt();
  slM_evaluate(g, d->test_x, d->test_y, d->ntest, &acc, &loss);
  sl_clear_interrupt();
  CHECK_MSG(isnan(acc) && isnan(loss), "an evaluation that did not run gave accuracy %g, loss %g", acc, loss);
  slM_graph_free(g);
  slM_dataset_free(d);
}

/* Inputs of 1e5 overflow float16 (65504) in the first layer's products. At
** a small batch every product overflows, the ReLU turns the NaN into 0 and
** the loss is a finite log(3): the overflow is found in the outputs, not
** only in the loss. */
static void test_fp16_overflow_named(void) {
  sl_State *S = sl_new();
  const char *e = check_fails(S, "d = dataset synthetic train=64 test=32 features=16 classes=3 spread=100000 seed=1\n"
                                 "m = precision (model mlp data=d hidden=[16] seed=2 dropout=0) fp16\n"
                                 "b = precision (model mlp data=d hidden=[16] seed=2 dropout=0) bf16\n");
  CHECK_MSG(e == NULL, "%s", e);
  const char *calls[] = {"h = train m d epochs=1 batch=64", "h = train m d epochs=1 batch=8"};
  for (int i = 0; i < 2; i++) {
    const char *err = check_eval(S, calls[i]);
    CHECK_CONTAINS(err, "overflowed float16's range");
    CHECK_CONTAINS(err, "at node fc1 (linear)");
    CHECK_CONTAINS(err, "first forward pass, before any update (the learning rate is not the cause)");
    CHECK_MSG(!strstr(err, "Use a smaller learning rate"), "%s: %s", calls[i], err);
  }
  e = check_eval(S, "evaluate m d");
  CHECK_CONTAINS(e, "so it has no accuracy");
  CHECK_CONTAINS(e, "overflowed float16's range");
  /* bf16 has float32's range: the same model trains */
  CHECK_MSG(check_fails(S, "h = train b d epochs=1 batch=8 lr=0.000001\nr = evaluate b d") == NULL, "bf16 failed");
  sl_free(S);
}

int main(void) {
  RUN(test_epoch_cut_inside_a_step);
  RUN(test_evaluation_cut_short);
  RUN(test_fp16_overflow_named);
  return check_summary();
}
