/* test_plan.c - buffer planning for inference (graph/plan.c): the greedy
** placement on hand-made lifetimes; and on the MLP, the image transformer
** and the language model, fused and planned against the same graph
** unplanned: equal outputs, no tensor allocated in steady state, the peak
** equal to the arena plus what the plan keeps and no larger than the peak
** of freeing each output after its last use, a new plan for another batch
** shape, and training in between. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "graph/passes.h"
#include "graph/lm.h"
#include "graph/memory.h"
#include "systems/predict.h"
#include "graph/plan.h"
#include "systems/runner.h"
#include "graph/train.h"

static void test_placement(void) {
  /* a chain: b (the largest) first at 0; a and c overlap b in time but not
  ** each other, so they share the place after b, rounded up to 64 bytes */
  size_t bytes[3] = {100, 200, 100}, off[3];
  int first[3] = {0, 1, 2}, last[3] = {1, 2, 3};
  size_t size = slM_plan_place(3, bytes, first, last, off);
  CHECK(off[1] == 0 && off[0] == 256 && off[2] == 256);
  CHECK_EQ_INT((int)size, 384);
  /* the 128 bytes share 0 with the 512 (apart in time); the 64, alive
  ** throughout, goes past both */
  size_t b2[3] = {128, 512, 64}, o2[3];
  int f2[3] = {0, 2, 0}, l2[3] = {1, 3, 3};
  size = slM_plan_place(3, b2, f2, l2, o2);
  CHECK(o2[1] == 0 && o2[0] == 0 && o2[2] == 512);
  CHECK_EQ_INT((int)size, 576);
  /* random lifetimes: no two buffers alive at once share a byte; the arena
  ** holds at least the widest step */
  slM_Rng r;
  slM_rng_seed(&r, 7);
  enum { N = 60, STEPS = 30 };
  size_t rb[N], ro[N];
  int rf[N], rl[N];
  for (int i = 0; i < N; i++) {
    rb[i] = 1 + slM_rng_next(&r) % 5000;
    rf[i] = (int)(slM_rng_next(&r) % STEPS);
    rl[i] = rf[i] + (int)(slM_rng_next(&r) % 6);
  }
  size = slM_plan_place(N, rb, rf, rl, ro);
  int clashes = 0;
  size_t widest = 0;
  for (int i = 0; i < N; i++) {
    CHECK(ro[i] % 64 == 0 && ro[i] + rb[i] <= size);
    for (int j = i + 1; j < N; j++)
      if (rf[i] <= rl[j] && rf[j] <= rl[i]) clashes += ro[i] < ro[j] + rb[j] && ro[j] < ro[i] + rb[i];
  }
  for (int s = 0; s < STEPS + 6; s++) {
    size_t live = 0;
    for (int i = 0; i < N; i++) live += rf[i] <= s && s <= rl[i] ? rb[i] : 0;
    widest = live > widest ? live : widest;
  }
  CHECK_EQ_INT(clashes, 0);
  CHECK(size >= widest);
  printf("  random lifetimes: arena %zu B for a widest step of %zu B\n", size, widest);
}

static slM_Graph *mlp(void) {
  char err[256];
  slM_MlpSpec s = {20, 5, {16, 12}, 2, OP_RELU, 0.0f};
  return slM_mlp(&s, 1, 0, err, sizeof err);
}

static slM_Graph *vit(void) {
  char err[256];
  slM_TransformerSpec s = {8, 8, 4, 4, 2, 8, 2, 2, 0.0f};
  return slM_transformer(&s, 2, 1, 0, err, sizeof err);
}

static slM_Graph *lm(void) {
  char err[256];
  slM_LmSpec s = {"", 50, 12, 16, 24, 2, 2};
  return slM_lm(&s, 3, err, sizeof err);
}

/* one inference step of each graph; the logits (and the loss) equal bit for bit */
static int same_step(slM_Graph *planned, slM_Graph *plain, slL_Batch *b) {
  double lp = slL_run_step(planned, b, 0, NULL, 0), lu = slL_run_step(plain, b, 0, NULL, 0);
  const slM_Tensor *x = planned->nodes[slM_logits_node(planned)].out, *y = plain->nodes[slM_logits_node(plain)].out;
  int same = x && y && x->size == y->size && memcmp(x->data, y->data, x->size * sizeof(float)) == 0;
  return same && (lp == lu || (isnan(lp) && isnan(lu)));
}

static void check_arena(slM_Graph *model, const char *what, int batch, int T, int attention) {
  char err[256];
  slM_Graph *planned = slM_graph_copy(model, 0);
  slM_FuseCounts c;
  CHECK_MSG(slM_fuse(planned, attention, &c, err, sizeof err) == 0, "%s", err);
  slM_Graph *plain = slM_graph_copy(planned, 0); /* the same fused graph, each output its own buffer */
  plain->plan = 0;
  slL_Batch b, b2;
  slL_batch_init(&b, model, batch, T, 11);
  slL_batch_init(&b2, model, batch + 3, T, 12);
  slL_run_step(plain, &b, 0, NULL, 0);

  /* the first call records and frees each output after its last use (the peak before the arena) */
  slM_mem_reset();
  size_t base = slM_mem_live();
  CHECK(same_step(planned, plain, &b));
  size_t first_peak = slM_mem_total_peak() - base;
  slM_PlanInfo pi;
  slM_plan_info(planned, &pi);
  CHECK_EQ_INT(pi.plans, 1);
  CHECK(pi.arena_bytes == 0 && pi.placed_bytes > 0 && pi.placed_bytes % 64 == 0);

  /* the second allocates the arena; from then on the graph holds the arena and what the plan keeps */
  slM_mem_reset();
  CHECK(same_step(planned, plain, &b));
  slM_plan_info(planned, &pi);
  CHECK_EQ_INT(pi.plans, 1);
  CHECK(pi.arena_bytes == pi.placed_bytes);
  size_t held = slM_mem_live() - base;
  CHECK_MSG(held == pi.arena_bytes + pi.kept_bytes, "%s: live %zu, arena %zu + kept %zu", what, held, pi.arena_bytes,
            pi.kept_bytes);

  /* steady state: no tensor allocated, the peak is what is held */
  slM_mem_reset();
  slM_mem_record(1);
  CHECK(same_step(planned, plain, &b));
  size_t nalloc;
  slM_mem_allocations(&nalloc);
  slM_mem_record(0);
  /* the plain graph reuses its buffers too: any allocation would be the planned one's */
  CHECK_EQ_INT((int)nalloc, 0);
  size_t steady_peak = slM_mem_total_peak() - base;
  CHECK_MSG(steady_peak == pi.arena_bytes + pi.kept_bytes, "%s: steady peak %zu, arena %zu + kept %zu", what,
            steady_peak, pi.arena_bytes, pi.kept_bytes);
  /* the lifetimes need no more than freeing each output after its last use
  ** did; the greedy placement stays within an eighth of the widest step
  ** (the unfused tiny language model needs 10% more: its 2304-byte
  ** attention tensors go first, and the long-lived residual stream above) */
  CHECK_MSG(pi.widest_exact_bytes + pi.kept_bytes <= first_peak,
            "%s: widest step %zu + kept %zu, first call's peak %zu", what, pi.widest_exact_bytes, pi.kept_bytes,
            first_peak);
  CHECK(pi.arena_bytes >= pi.widest_bytes && pi.arena_bytes <= pi.widest_bytes + pi.widest_bytes / 8);
  size_t live_before, live_by[SLM_MEM_NCAT], peak_by[SLM_MEM_NCAT];
  slM_mem_live_by(live_by);
  slM_mem_peak_by(peak_by);
  CHECK(memcmp(live_by, peak_by, sizeof live_by) == 0); /* by category too: nothing came and went */
  printf("  %s%s: arena %zu B (widest step %zu B) for %d buffers of %zu B, kept %zu B; steady peak %zu B, first "
         "call's %zu B\n",
         what, attention ? " (attention fused)" : "", pi.arena_bytes, pi.widest_bytes, pi.buffers, pi.outputs_bytes,
         pi.kept_bytes, steady_peak, first_peak);

  /* another batch size records and plans again; back to the first, again */
  CHECK(same_step(planned, plain, &b2));
  CHECK(same_step(planned, plain, &b2));
  slM_plan_info(planned, &pi);
  CHECK_EQ_INT(pi.plans, 2);
  CHECK(pi.arena_bytes == pi.placed_bytes && pi.arena_bytes > 0);
  CHECK(same_step(planned, plain, &b));
  CHECK(same_step(planned, plain, &b));
  slM_plan_info(planned, &pi);
  CHECK_EQ_INT(pi.plans, 3);

  /* a training step gives the arena back and matches the plain graph's; inference after it plans no more */
  double tp = slL_run_step(planned, &b, 1, NULL, 0), tu = slL_run_step(plain, &b, 1, NULL, 0);
  CHECK(tp == tu);
  slM_plan_info(planned, &pi);
  CHECK(pi.arena_bytes == 0);
  CHECK(same_step(planned, plain, &b));
  slM_plan_info(planned, &pi);
  CHECK(pi.arena_bytes == pi.placed_bytes && pi.plans == 3);
  live_before = slM_mem_live();

  /* released: nothing of the planned graph's activations stays live */
  slM_release_activations(planned);
  slM_plan_info(planned, &pi);
  CHECK(pi.arena_bytes == 0 && pi.kept_bytes == 0);
  CHECK(slM_mem_live() < live_before);
  slL_batch_free(&b);
  slL_batch_free(&b2);
  slM_graph_free(plain);
  slM_graph_free(planned);
}

/* gradients of every parameter equal bit for bit (the graphs have their own parameters) */
static int same_grads(const slM_Graph *a, const slM_Graph *b) {
  int differ = 0, compared = 0;
  for (int i = 0; i < a->n; i++)
    for (int k = 0; k < a->nodes[i].nparams; k++) {
      const slM_Param *p = a->nodes[i].params[k], *q = b->nodes[i].params[k];
      if (!p->grad || !q->grad) continue;
      compared++;
      differ += memcmp(p->grad->data, q->grad->data, p->grad->size * sizeof(float)) != 0;
      differ += memcmp(p->value->data, q->value->data, p->value->size * sizeof(float)) != 0;
    }
  return compared > 0 && differ == 0;
}

/* training steps: the second step of a shape plans, later ones run in the
** arena; losses, gradients and updated weights equal the unplanned graph's */
static void check_training(slM_Graph *model, const char *what, int batch, int T, int attention) {
  char err[256];
  slM_Graph *planned = slM_graph_copy(model, 1);
  slM_FuseCounts c;
  CHECK_MSG(slM_fuse(planned, attention, &c, err, sizeof err) == 0, "%s", err);
  slM_Graph *plain = slM_graph_copy(planned, 1); /* own parameters, the same values */
  plain->plan = 0;
  slM_TrainConfig opt = {1, batch, 1e-2, 0, 0, SLM_ADAMW, SLM_CONSTANT, 0, 0};
  slL_Batch b, b2;
  slL_batch_init(&b, model, batch, T, 21);
  slL_batch_init(&b2, model, batch + 2, T, 22);
  slM_PlanInfo pi;
  int same = 1;
  for (int step = 0; step < 4; step++) {
    double lp = slL_run_step(planned, &b, 1, &opt, step), lu = slL_run_step(plain, &b, 1, &opt, step);
    same &= lp == lu && same_grads(planned, plain);
    slM_plan_info(planned, &pi);
    CHECK(step == 0 ? pi.arena_bytes == 0 : pi.arena_bytes == pi.placed_bytes && pi.plans == 1);
  }
  CHECK_MSG(same, "%s: planned training differs", what);
  /* steady state: only the loss's gradient is made anew (slM_backward's own) */
  slM_mem_reset();
  size_t base = slM_mem_live();
  slM_mem_record(1);
  slL_run_step(planned, &b, 1, &opt, 4);
  size_t nalloc;
  slM_mem_allocations(&nalloc);
  slM_mem_record(0);
  CHECK_EQ_INT((int)nalloc, 1);
  CHECK(slM_mem_total_peak() - base <= 4 * (size_t)batch * 64);
  slL_run_step(plain, &b, 1, &opt, 4);
  CHECK(same_grads(planned, plain));
  slM_PlanInfo ui;
  slM_plan_info(plain, &ui);
  slM_plan_info(planned, &pi);
  printf("  %s%s training: arena %zu B (widest step %zu B) + kept %zu B against %zu B unplanned\n", what,
         attention ? " (attention fused)" : "", pi.arena_bytes, pi.widest_bytes, pi.kept_bytes, ui.kept_bytes);
  /* the MLP's activations are all alive when its few gradients are made:
  ** nothing to share, and 64-byte alignment costs up to 63 bytes a buffer */
  CHECK(pi.arena_bytes + pi.kept_bytes <= ui.kept_bytes + 64 * (size_t)pi.buffers);
  if (strcmp(what, "mlp") != 0) CHECK(pi.arena_bytes + pi.kept_bytes < ui.kept_bytes * 3 / 4);
  /* inference and another batch in between, then training again: still equal */
  CHECK(same_step(planned, plain, &b));
  same = 1;
  for (int step = 5; step < 8; step++) {
    slL_Batch *x = step == 6 ? &b : &b2;
    double lp = slL_run_step(planned, x, 1, &opt, step), lu = slL_run_step(plain, x, 1, &opt, step);
    same &= lp == lu && same_grads(planned, plain);
  }
  CHECK_MSG(same, "%s: planned training differs after inference and another batch", what);
  slL_batch_free(&b);
  slL_batch_free(&b2);
  slM_graph_free(plain);
  slM_graph_free(planned);
}

static void test_training(void) {
  slM_Graph *m = mlp(), *v = vit(), *l = lm();
  check_training(m, "mlp", 6, 0, 0);
  check_training(v, "image transformer", 3, 0, 0);
  check_training(v, "image transformer", 3, 0, 1);
  check_training(l, "lm", 2, 12, 0);
  check_training(l, "lm", 2, 12, 1);
  slM_graph_free(m);
  slM_graph_free(v);
  slM_graph_free(l);
}

static void test_arena(void) {
  slM_Graph *m = mlp(), *v = vit(), *l = lm();
  check_arena(m, "mlp", 6, 0, 0);
  check_arena(v, "image transformer", 3, 0, 0);
  check_arena(v, "image transformer", 3, 0, 1);
  check_arena(l, "lm", 2, 12, 0);
  check_arena(l, "lm", 2, 12, 1);
  slM_graph_free(m);
  slM_graph_free(v);
  slM_graph_free(l);
}

/* a graph freed while its arena is held frees the arena (ASan's leak check) */
static void test_free_with_arena(void) {
  slM_Graph *m = mlp();
  char err[256];
  slM_FuseCounts c;
  size_t before = slM_mem_live();
  CHECK(slM_fuse(m, 0, &c, err, sizeof err) == 0);
  slL_Batch b;
  slL_batch_init(&b, m, 4, 0, 1);
  for (int i = 0; i < 3; i++) slL_run_step(m, &b, 0, NULL, 0);
  slM_PlanInfo pi;
  slM_plan_info(m, &pi);
  CHECK(pi.arena_bytes > 0);
  slM_graph_free(m);
  slL_batch_free(&b);
  CHECK(slM_mem_live() < before); /* its parameters went too */
}

int main(void) {
  RUN(test_placement);
  RUN(test_arena);
  RUN(test_training);
  RUN(test_free_with_arena);
  return check_summary();
}
