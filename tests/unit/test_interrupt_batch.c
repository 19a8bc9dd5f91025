/* test_interrupt_batch.c - an interrupt inside one large training batch: it
** lands within 100 ms (the forward and backward passes ask between nodes),
** the cut step's update is skipped so every weight is as it was, and an
** interrupt after some steps leaves exactly those steps' updates (compared
** bit for bit with a run stopped at the same batch boundary). */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "check.h"
#include "graph/model.h"
#include "graph/profile.h"
#include "graph/train.h"
#include "syslab.h"
#include "slutil.h"

enum { BATCH = 1024 };

static slM_Graph *model(void) {
  slM_TransformerSpec s = {28, 28, 10, 7, 2, 64, 2, 2, 0.1f, 0};
  char err[256];
  slM_Graph *g = slM_transformer(&s, 3, 1, 0, err, sizeof err);
  CHECK_MSG(g != NULL, "%s", err);
  return g;
}

/* every parameter value, in node order */
static float *weights(const slM_Graph *g, size_t *n) {
  size_t total = 0;
  for (int i = 0; i < g->n; i++)
    for (int k = 0; k < g->nodes[i].nparams; k++) total += g->nodes[i].params[k]->value->size;
  float *w = malloc(total * sizeof *w), *p = w;
  for (int i = 0; i < g->n; i++)
    for (int k = 0; k < g->nodes[i].nparams; k++) {
      const slM_Tensor *t = g->nodes[i].params[k]->value;
      memcpy(p, t->data, t->size * sizeof *p);
      p += t->size;
    }
  *n = total;
  return w;
}

static int on_stop(void *ud) {
  (void)ud;
  return sl_interrupted();
}

/* Four batches of BATCH; after the second, an interrupt is sent 40% of that
** step's time later, so it lands inside the third (or, if the load changes,
** the fourth). The weights are copied after every step: at the end they
** must be the last copy's, and the interrupt must have been answered
** within a node's time, not at the batch's end. */
typedef struct {
  int done;
  double last, step;
  float *copy;
  size_t n;
  slM_Graph *g;
  check_Timer timer;
} Watch;

static void watch_step(void *ud, int epoch, double fraction, double loss) {
  (void)epoch, (void)fraction, (void)loss;
  Watch *w = ud;
  double now = slU_now();
  free(w->copy);
  w->copy = weights(w->g, &w->n);
  if (++w->done == 2) {
    w->step = now - w->last;
    check_interrupt_later(&w->timer, 0.4 * w->step);
  }
  w->last = slU_now();
}

static void test_interrupt_lands_inside_a_batch(void) {
  slM_Dataset *d = slM_synthetic(4 * BATCH, 64, 784, 10, 1.0, 5);
  slM_Graph *g = model();
  slM_TrainConfig c = {1, BATCH, 0.002, 0, 0.01, SLM_ADAMW, SLM_COSINE, 0, 7};
  slM_EpochStats st;
  Watch w = {.g = g};
  slM_TrainHooks hooks = {&w, watch_step, on_stop};
  sl_clear_interrupt();
  w.last = slU_now();
  slM_train(g, d, &c, &hooks, &st);
  double end = slU_now();
  if (w.done >= 2) check_interrupt_join(&w.timer);
  CHECK(sl_interrupted());
  sl_clear_interrupt();
  CHECK_MSG(w.done == 2 || w.done == 3, "%d of 4 steps finished", w.done);
  double latency = end - w.timer.at;
  printf("  a step of batch %d: %.0f ms; the interrupt, sent %.0f ms into the next, answered in %.1f ms\n", BATCH,
         w.step * 1e3, w.timer.after * 1e3, latency * 1e3);
  /* Sent 40% into a step, the interrupt waits for the node then running,
  ** some of which take a large share of this small model's step: answered
  ** 29% of a step after it was sent on a quiet machine (23 ms of 78), 37%
  ** beside the other tests on two cores (63 ms of 169). Every node
  ** stretches with the step under load, so the bound is a share of the
  ** step: 45%, which still tells a node's wait from the 60% of a step that
  ** waiting for the batch's end would take (a sixth failed at a load of 7,
  ** a quarter and a third beside another test) */
  double bound = w.step * 0.45 > 0.05 ? w.step * 0.45 : 0.05;
  CHECK_MSG(latency < bound, "the interrupt took %.0f ms (bound %.0f ms, a step %.0f ms)", latency * 1e3, bound * 1e3,
            w.step * 1e3);
  size_t n;
  float *now = weights(g, &n);
  CHECK_EQ_INT(n, w.n);
  CHECK_MSG(w.copy && memcmp(now, w.copy, n * sizeof *now) == 0, "the cut step changed the weights");
  free(now), free(w.copy);
  slM_graph_free(g);
  slM_dataset_free(d);
}

/* counts finished steps; the reference run stops once `limit` have run;
** the interrupted run starts the interrupt after step `arm`, half a step's
** time later, so that it most likely lands inside the next step */
typedef struct {
  int done, limit, arm;
  double last;
  check_Timer timer;
} Steps;

static void count_steps(void *ud, int epoch, double fraction, double loss) {
  (void)epoch, (void)fraction, (void)loss;
  Steps *s = ud;
  double now = slU_now();
  if (++s->done == s->arm) {
    check_interrupt_later(&s->timer, (now - s->last) / 2);
  }
  s->last = now;
}

static int after_limit(void *ud) {
  const Steps *s = ud;
  return s->done >= s->limit;
}

static void test_weights_are_whole_steps(void) {
  enum { STEPS = 16, SMALL = 256 }; /* room for an interrupt that a loaded machine delays */
  slM_Dataset *d = slM_synthetic(STEPS * SMALL, 64, 784, 10, 1.0, 5);
  slM_TrainConfig c = {1, SMALL, 0.002, 0, 0.01, SLM_ADAMW, SLM_COSINE, 0, 7};
  slM_EpochStats st;
  slM_Graph *g = model();
  Steps seen = {.arm = 3};
  slM_TrainHooks hooks = {&seen, count_steps, on_stop};
  sl_clear_interrupt();
  slM_train(g, d, &c, &hooks, &st);
  if (seen.done >= seen.arm) check_interrupt_join(&seen.timer);
  CHECK(sl_interrupted());
  sl_clear_interrupt();
  CHECK_MSG(seen.done >= 3 && seen.done < STEPS, "%d of %d steps ran before the interrupt", seen.done, STEPS);

  Steps limit = {0, seen.done};
  slM_Graph *ref = model();
  slM_TrainHooks stop = {&limit, count_steps, after_limit};
  slM_train(ref, d, &c, &stop, &st);
  CHECK_EQ_INT(limit.done, seen.done);
  size_t n, nr;
  float *w = weights(g, &n), *wr = weights(ref, &nr);
  CHECK_EQ_INT(n, nr);
  CHECK_MSG(memcmp(w, wr, n * sizeof *w) == 0, "the weights are not those of %d whole steps", seen.done);
  free(w), free(wr);
  slM_graph_free(g);
  slM_graph_free(ref);
  slM_dataset_free(d);
}

int main(void) {
  RUN(test_interrupt_lands_inside_a_batch);
  RUN(test_weights_are_whole_steps);
  return check_summary();
}
