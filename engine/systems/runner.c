/*
** runner.c - steps of any model on random data, timed or measured.
**
** Benchmarks and profiles use random inputs, as the CS336 systems
** assignment's end-to-end benchmarking script (its §1.1.3) does: uniform token ids for a language model, standard normal
** pixels and uniform labels for the image models. Data come from the seed,
** so two runs step through the same batches.
*/
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "graph/lm.h"
#include "graph/profile.h"
#include "kernels/kernels.h"
#include "runner.h"

static int is_lm(const slM_Graph *g) { return strcmp(g->family, "lm") == 0; }

/* Every step the runner takes stops at an interrupt: the graph asks between
** nodes (one step of a large model runs for seconds), the loops below ask
** between steps, and a cut step skips its optimizer update. The commands
** see sl_interrupted() afterwards and discard what was measured. */
static int interrupted(void *ud) {
  (void)ud;
  return sl_interrupted();
}

void slL_batch_init(slL_Batch *b, const slM_Graph *g, int batch, int T, uint64_t seed) {
  memset(b, 0, sizeof *b);
  b->batch = batch;
  b->T = T;
  slM_rng_seed(&b->rng, seed);
  if (is_lm(g)) {
    b->tok = malloc((size_t)batch * T * sizeof *b->tok);
    b->tgt = malloc((size_t)batch * T * sizeof *b->tgt);
    slM_lm_random_batch(&b->rng, g->vocab, batch, T, b->tok, b->tgt);
  } else {
    b->x = malloc((size_t)batch * g->features * sizeof *b->x);
    b->y = malloc((size_t)batch);
    for (size_t i = 0; i < (size_t)batch * g->features; i++) b->x[i] = (float)slM_rng_normal(&b->rng);
    for (int i = 0; i < batch; i++) b->y[i] = (uint8_t)(slM_rng_next(&b->rng) % (uint64_t)g->classes);
  }
}

void slL_batch_free(slL_Batch *b) {
  free(b->tok), free(b->tgt), free(b->x), free(b->y);
  memset(b, 0, sizeof *b);
}

double slL_run_step(slM_Graph *g, slL_Batch *b, int train, const slM_TrainConfig *opt, long step) {
  double loss = 0;
  int own_hook = !g->stop; /* a caller's hook (lm_train's) stays */
  if (own_hook) g->stop = interrupted;
  if (is_lm(g)) slM_lm_forward(g, b->tok, b->tgt, b->batch, b->T, train);
  else slM_forward(g, b->x, b->y, b->batch, train);
  if (!g->stopped) { /* a forward pass cut short has no loss to go back from */
    if (is_lm(g)) loss = slM_lm_loss(g);
    if (train) {
      slM_zero_grads(g);
      loss = slM_backward(g, is_lm(g) ? NULL : b->y, b->batch);
    }
  }
  if (train && opt && !g->stopped) slM_optimizer_step(g, opt, opt->lr, step);
  if (own_hook) g->stop = NULL;
  return loss;
}

/* the statistics are the kernels harness's (slK_stats), so model steps and
** kernels are summarised the same way */
void slL_time_steps(slM_Graph *g, slL_Batch *b, int train, int warmup, int steps, slL_Timing *out) {
  memset(out, 0, sizeof *out);
  double t0 = slU_now(), *samples = malloc((size_t)(steps > 0 ? steps : 1) * sizeof *samples);
  for (int i = 0; i < warmup && !sl_interrupted(); i++) slL_run_step(g, b, train, NULL, i);
  out->warmup_seconds = warmup ? slU_now() - t0 : 0;
  int done = 0;
  for (; done < steps && !sl_interrupted(); done++) {
    double s = slU_now();
    slL_run_step(g, b, train, NULL, warmup + done);
    samples[done] = slU_now() - s;
  }
  out->first = done ? samples[0] : 0;
  out->total_seconds = slU_now() - t0;
  slK_Stats st = {0};
  if (done) slK_stats(samples, done, &st);
  out->mean = st.mean, out->std = st.std, out->median = st.median;
  free(samples);
}

size_t slL_measure_peak(slM_Graph *g, slL_Batch *b, int train, const slM_TrainConfig *opt, int steps) {
  slM_mem_reset();
  for (int i = 0; i < steps && !sl_interrupted(); i++) slL_run_step(g, b, train, opt, i);
  return slM_mem_total_peak();
}
