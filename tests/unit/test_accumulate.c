/* test_accumulate.c - training steps split into micro-batches in one
** process (graph/accumulate.c), and what train and lm_train share around
** them (graph/trainrun.c): how a batch is cut and the optimizer state
** shared out, dropout masks that do not depend on the cut, the gradient
** that is still the batch's mean, a group of one that is the plain run bit
** for bit, checkpoints resumed to the uninterrupted run, the arguments'
** errors, and the memory commands' figures of a sharded optimizer. The
** runs across processes are tests/python/test_ddp.py's. */
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "graph/accumulate.h"
#include "graph/model.h"
#include "graph/train.h"
#include "graph/trainrun.h"
#include "slcommand.h"

static char tmpdir[64];

static void test_micro_rows(void) {
  int rows[] = {1, 7, 8, 64, 100}, K[] = {1, 2, 3, 5, 8};
  for (size_t i = 0; i < 5; i++)
    for (size_t j = 0; j < 5; j++) {
      int at = 0;
      for (int k = 0; k < K[j]; k++) {
        int lo, hi;
        slM_micro_rows(rows[i], K[j], k, &lo, &hi);
        CHECK_EQ_INT(lo, at); /* contiguous, in order */
        int size = rows[i] / K[j] + (k < rows[i] % K[j]);
        CHECK_EQ_INT(hi - lo, size); /* the first rows % K one larger */
        at = hi;
      }
      CHECK_EQ_INT(at, rows[i]);
    }
}

static void test_shard_owners(void) {
  size_t sizes[] = {100, 10, 10, 300, 5, 5, 200, 1, 50, 400};
  int n = 10, owner[10];
  double total = 0, most = 400;
  for (int i = 0; i < n; i++) total += (double)sizes[i];
  for (int ranks = 1; ranks <= 4; ranks++) {
    slM_shard_owners(sizes, n, ranks, owner);
    double share[4] = {0};
    for (int i = 0; i < n; i++) {
      CHECK(owner[i] >= 0 && owner[i] < ranks);
      if (i > 0) CHECK(owner[i] >= owner[i - 1]); /* contiguous shares, in the graph's order */
      share[owner[i]] += (double)sizes[i];
    }
    for (int q = 0; q < ranks; q++) /* whole parameters: a share overshoots by at most one of them */
      CHECK_MSG(share[q] <= total / ranks + most, "ranks %d: rank %d holds %g of %g", ranks, q, share[q], total);
  }
  slM_shard_owners(sizes, n, 1, owner);
  for (int i = 0; i < n; i++) CHECK_EQ_INT(owner[i], 0);
}

/* a dropout node's mask for rows [lo, hi) of a batch, run as a micro-batch */
static float *masks(slM_Graph *g, const float *x, const uint8_t *y, int lo, int hi, int features, uint64_t *rng) {
  slM_Rng at = g->rng;
  g->feed_row0 = lo;
  slM_forward(g, x + (size_t)lo * features, y + lo, hi - lo, 1);
  g->feed_row0 = 0;
  *rng = g->rng.state;
  g->rng = at;
  int drop = -1;
  for (int i = 0; i < g->n && drop < 0; i++)
    if (g->nodes[i].op == OP_DROPOUT) drop = i;
  const slM_Tensor *z = g->nodes[drop].saved;
  float *copy = malloc(z->size * sizeof *copy);
  memcpy(copy, z->data, z->size * sizeof *copy);
  return copy;
}

/* Dropout's masks: a micro-batch gets exactly the rows it has in the whole
** batch, for even and odd first elements (7 features a row), and leaves
** the stream where the whole batch leaves it. */
static void test_dropout_masks_per_row(void) {
  slM_MlpSpec s = {5, 3, {7}, 1, OP_RELU, 0.5f};
  char err[256];
  slM_Graph *g = slM_mlp(&s, 4, 0, err, sizeof err);
  CHECK_MSG(g != NULL, "%s", err);
  enum { B = 9 };
  float x[B * 5];
  uint8_t y[B];
  for (int i = 0; i < B * 5; i++) x[i] = (float)(i % 11) - 5;
  for (int i = 0; i < B; i++) y[i] = (uint8_t)(i % 3);
  uint64_t whole_rng, part_rng;
  float *whole = masks(g, x, y, 0, B, 5, &whole_rng);
  int cuts[][2] = {{0, 3}, {3, 4}, {4, 9}, {1, 2}, {7, 9}};
  int dropped = 0;
  for (size_t c = 0; c < 5; c++) {
    float *part = masks(g, x, y, cuts[c][0], cuts[c][1], 5, &part_rng);
    size_t n = (size_t)(cuts[c][1] - cuts[c][0]) * 7;
    CHECK_MSG(memcmp(part, whole + (size_t)cuts[c][0] * 7, n * sizeof *part) == 0, "rows %d..%d", cuts[c][0],
              cuts[c][1]);
    CHECK(part_rng == whole_rng);
    free(part);
  }
  for (int i = 0; i < B * 7; i++) dropped += whole[i] == 0;
  CHECK_MSG(dropped > 10 && dropped < B * 7 - 10, "%d of %d dropped", dropped, B * 7);
  free(whole);
  slM_graph_free(g);
}

/* the weights of a model, as one array */
static float *weights(const slM_Graph *g, size_t *n) {
  slM_Param **ps;
  int np = slM_trainable_params(g, &ps);
  size_t total = 0;
  for (int j = 0; j < np; j++) total += ps[j]->value->size;
  float *w = malloc(total * sizeof *w), *at = w;
  for (int j = 0; j < np; j++)
    memcpy(at, ps[j]->value->data, ps[j]->value->size * sizeof *at), at += ps[j]->value->size;
  free(ps);
  *n = total;
  return w;
}

/* The micro-batches' gradients summed is the batch's mean gradient: one
** SGD step with accumulate=3 moves the weights as the whole batch does, to
** rounding; dropout draws the same masks. A group of one process
** (parallel="data" workers=1) is the plain run, bit for bit. */
static void test_accumulated_step_is_the_batch_step(void) {
  sl_State *S = sl_new();
  const char *setup = "d = dataset synthetic train=48 test=8 features=6 classes=3 seed=1\n"
                      "a = model mlp data=d hidden=[10] dropout=0.3 seed=2\n"
                      "b = model mlp data=d hidden=[10] dropout=0.3 seed=2\n"
                      "c = model mlp data=d hidden=[10] dropout=0.3 seed=2\n"
                      "h = train a d epochs=1 batch=48 lr=0.5 optimizer=sgd momentum=0\n"
                      "h = train b d epochs=1 batch=48 lr=0.5 optimizer=sgd momentum=0 accumulate=3\n"
                      "h = train c d epochs=1 batch=48 lr=0.5 optimizer=sgd momentum=0 parallel=\"data\" workers=1\n";
  const char *why = check_fails(S, setup);
  CHECK_MSG(why == NULL, "%s", why);
  sl_Value va = sl_state_get(S, "a"), vb = sl_state_get(S, "b"), vc = sl_state_get(S, "c");
  slM_Graph *a = sl_object_as(va, &slM_model_class), *b = sl_object_as(vb, &slM_model_class);
  slM_Graph *c = sl_object_as(vc, &slM_model_class);
  size_t n, nb, nc;
  float *wa = weights(a, &n), *wb = weights(b, &nb), *wc = weights(c, &nc);
  CHECK_EQ_INT(n, nb);
  double worst = 0, moved = 0;
  slM_MlpSpec s = {6, 3, {10}, 1, OP_RELU, 0.3f};
  char err[256];
  slM_Graph *start = slM_mlp(&s, 2, 0, err, sizeof err);
  size_t n0;
  float *w0 = weights(start, &n0);
  for (size_t i = 0; i < n; i++) {
    worst = fmax(worst, fabs((double)wa[i] - wb[i]));
    moved = fmax(moved, fabs((double)wa[i] - w0[i]));
  }
  CHECK_MSG(moved > 1e-3, "the step moved the weights by at most %g", moved);
  CHECK_MSG(worst < 1e-6 * 1e3 * moved, "accumulate=3 differs from the batch by %g (the step moved %g)", worst, moved);
  CHECK_MSG(nc == n && memcmp(wa, wc, n * sizeof *wa) == 0, "a group of one differs from the plain run");
  free(wa), free(wb), free(wc), free(w0);
  slM_graph_free(start);
  sl_free(S);
}

/* the run of test_checkpoint_resumes: a fresh model and data each time */
typedef struct {
  int stop_after, steps;
} Stopper;

static int stop_at(void *ud) {
  Stopper *s = ud;
  return s->stop_after >= 0 && s->steps++ >= s->stop_after;
}

static void train_run(slM_Graph **g, slM_EpochStats *st, int stop_after, int K, const char *path, uint64_t run_id,
                      char *err) {
  slM_MlpSpec s = {6, 3, {12}, 1, OP_RELU, 0.2f};
  slM_Dataset *d = slM_synthetic(200, 20, 6, 3, 1.0, 4);
  *g = slM_mlp(&s, 3, 0, err, 256);
  slM_Run run = {0};
  run.split.accumulate = K;
  run.use_split = K > 1;
  run.use_ckpt = 1;
  run.ckpt.every = 5;
  run.ckpt.run = run_id;
  snprintf(run.ckpt.path, sizeof run.ckpt.path, "%s", path);
  slM_TrainConfig c = {2, 16, 0.01, 0.9, 0.01, SLM_ADAMW, SLM_COSINE, 3, 7, &run};
  Stopper stop = {stop_after, 0};
  slM_TrainHooks hooks = {&stop, NULL, stop_at};
  memset(st, 0, 2 * sizeof *st);
  slM_train(*g, d, &c, &hooks, st);
  snprintf(err, 256, "%.250s", run.err);
  slM_dataset_free(d);
}

/* A run stopped after 23 steps (its last checkpoint at 20) and run again
** goes on from the checkpoint to the uninterrupted run's weights,
** optimizer state, random state and losses, bit for bit, with and without
** accumulation; a checkpoint of another run is refused. */
static void test_checkpoint_resumes(void) {
  for (int K = 1; K <= 2; K++) {
    char path[512], err[256];
    snprintf(path, sizeof path, "%s/resume_%d.ckpt", tmpdir, K);
    remove(path);
    slM_Graph *ref, *cut, *resumed;
    slM_EpochStats want[2], got[2], partial[2];
    train_run(&ref, want, -1, K, path, 11, err);
    CHECK_MSG(!err[0], "%s", err);
    remove(path);
    train_run(&cut, partial, 23, K, path, 11, err);
    CHECK_MSG(!err[0], "%s", err);
    train_run(&resumed, got, -1, K, path, 11, err);
    CHECK_MSG(!err[0], "%s", err);
    slU_Text a = {0}, b = {0};
    slM_graph_encode(ref, &a, err, 256);
    slM_graph_encode(resumed, &b, err, 256);
    CHECK_MSG(a.n == b.n && memcmp(a.s, b.s, a.n) == 0, "accumulate=%d: the resumed model differs", K);
    for (int e = 0; e < 2; e++) {
      CHECK(want[e].loss == got[e].loss);
      CHECK(want[e].test_loss == got[e].test_loss);
      CHECK(want[e].train_accuracy == got[e].train_accuracy);
    }
    slM_Graph *other;
    train_run(&other, got, -1, K, path, 12, err); /* another run's id */
    CHECK_CONTAINS(err, "was written by another run");
    free(a.s), free(b.s);
    slM_graph_free(ref), slM_graph_free(cut), slM_graph_free(resumed), slM_graph_free(other);
    remove(path);
  }
}

static void test_argument_errors(void) {
  sl_State *S = sl_new();
  check_eval(S, "d = dataset synthetic train=40 test=8 features=4 classes=2 seed=1\nm = model mlp data=d hidden=[4]");
  /* clang-format off */
  struct { const char *code, *want; } cases[] = {
    {"train m d batch=8 accumulate=9", "give at most accumulate=8"},
    {"train m d accumulate=0", "accumulate: must be between 1 and 65536"},
    {"train m d parallel=\"data\"", "run the script under mpirun -n N, or give workers=N"},
    {"train m d parallel=\"data\" workers=1 accumulate=2", "already is accumulate=N"},
    {"train m d shard_optimizer=true", "shard_optimizer: applies to parallel=\"data\" only"},
    {"train m d workers=2", "workers: applies to parallel=\"data\" only"},
    {"train m d checkpoint_every=5", "checkpoint_every= needs a file"},
    {"train m d checkpoint=\"x.ckpt\"", "give the steps between checkpoints"},
    {"train m d parallel=\"data\" workers=1 bucket_mb=-1", "bucket_mb: must be between 0 and 1000000"},
    {"lm_train (lm tiny context=8) steps=2 batch=2 accumulate=3", "give at most accumulate=2"},
    {"memory_check (lm tiny context=8) batch=2 ranks=2", "give shard_optimizer=true"},
  };
  /* clang-format on */
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
    CHECK_CONTAINS(check_fails(S, cases[i].code), cases[i].want);
  sl_free(S);
}

/* A language model read back from bytes knows its sizes again: it trains
** as the one saved does (the worker of a parallel call gets such a copy). */
static void test_loaded_lm_trains(void) {
  sl_State *S = sl_new();
  char code[1024];
  snprintf(code, sizeof code,
           "m = lm tiny vocab=64 context=16 seed=3\nsave m \"%s/lm.slm\"\nc = load \"%s/lm.slm\"\n"
           "a = lm_train m steps=3 batch=2 context=8 every=3\nb = lm_train c steps=3 batch=2 context=8 every=3\n"
           "a.loss[0] == b.loss[0]",
           tmpdir, tmpdir);
  CHECK_STREQ(check_eval(S, code), "true");
  sl_free(S);
}

/* With the optimizer state sharded over N ranks, the rank with the largest
** share is predicted and measured to the byte, below the unsharded step;
** memory_predict's figure from the configuration alone is the same. */
static void test_sharded_memory(void) {
  sl_State *S = sl_new();
  CHECK_STREQ(
      check_eval(S, "m = lm tiny vocab=1000 context=16\nt = memory_check m batch=2 ranks=3 shard_optimizer=true\n"
                    "t.ratio[2] == 1 and t.measured_mb[2] < t.measured_mb[1]"),
      "true");
  CHECK_STREQ(check_eval(S, "p = memory_predict presets=[\"tiny\"] contexts=[16] batch=2 optimizer=adamw\n"
                            "q = memory_predict presets=[\"tiny\"] contexts=[16] batch=2 ranks=3 shard_optimizer=true\n"
                            "q.optimizer_gb[0] < p.optimizer_gb[0] / 2 and q.peak_gb[0] < p.peak_gb[0]"),
              "true");
  /* the same model from the configuration: the same share */
  CHECK_STREQ(check_eval(S, "n = lm tiny context=16\nt = memory_check n batch=2 ranks=2 shard_optimizer=true\n"
                            "p = memory_predict presets=[\"tiny\"] contexts=[16] batch=2 ranks=2 shard_optimizer=true\n"
                            "mp = memory_profile n batch=2 ranks=2 shard_optimizer=true\n"
                            "[mp.peak_mb == mp.predicted_mb, mp.peak_mb == t.measured_mb[2], "
                            "round(t.predicted_mb[2] - p.peak_gb[0] * 1000, 6)]"),
              "[true, true, 0]");
  sl_free(S);
}

int main(void) {
  sl_init();
  if (!check_tmpdir(tmpdir, sizeof tmpdir, "accumulate")) return 1;
  RUN(test_micro_rows);
  RUN(test_shard_owners);
  RUN(test_dropout_masks_per_row);
  RUN(test_accumulated_step_is_the_batch_step);
  RUN(test_checkpoint_resumes);
  RUN(test_argument_errors);
  RUN(test_loaded_lm_trains);
  RUN(test_sharded_memory);
  if (check_tmpdir_remove(tmpdir) != 0) return 1;
  return check_summary();
}
