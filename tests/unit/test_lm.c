/* test_lm.c - the language-model family: gradients against finite
** differences, training on random tokens and on a byte stream, memory
** prediction against measured peaks, OOM refusal figures, mixed precision
** (accumulation, dtype table), fused against eager graphs, and the weights
** each preset starts from (drawn by the thread team, the same numbers as
** one thread drew them). */
#include <math.h>
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
#include "kernels/kernels.h"

static slM_LmSpec tiny = {"", 11, 5, 8, 12, 2, 2};

static slM_Graph *tiny_lm(uint64_t seed) {
  char err[256];
  slM_Graph *g = slM_lm(&tiny, seed, err, sizeof err);
  CHECK_MSG(g != NULL, "%s", err);
  return g;
}

static void test_builder_and_presets(void) {
  slM_LmSpec s;
  CHECK(slM_lm_preset("small", &s) == 0);
  CHECK_EQ_INT(s.d_model, 768);
  CHECK_EQ_INT(s.layers, 12);
  CHECK(slM_lm_preset("2.7B", &s) == 0 && s.d_ff == 10240 && s.heads == 32);
  CHECK(slM_lm_preset("huge", &s) == -1);
  char err[256];
  slM_LmSpec bad = tiny;
  bad.heads = 3;
  CHECK(slM_lm(&bad, 0, err, sizeof err) == NULL);
  CHECK_CONTAINS(err, "heads=3");
  slM_Graph *g = tiny_lm(1);
  if (!g) return;
  size_t trainable, total;
  slM_param_counts(g, &trainable, &total);
  /* embedding + 2 x (4 D^2 + 3 D F + 2 D) + final norm + head */
  CHECK_EQ_INT(total, 11 * 8 + 2 * (4 * 64 + 3 * 8 * 12 + 16) + 8 + 8 * 11);
  CHECK(slM_verify(g, err, sizeof err) == 0);
  /* the small preset's parameter count, by the same formula as the prediction */
  slL_Prediction p;
  slM_lm_preset("small", &s);
  slL_predict_lm(&s, 1, 128, SLL_RUN_FORWARD, SLM_ADAMW, SLM_FP32, &p);
  /* "small" of the CS336 systems assignment's model sizes (its §1.1.2):
  ** about 128.6M with a 10,000 vocabulary */
  CHECK_NEAR(p.params / 4, 128.6e6, 0.1e6);
  slM_graph_free(g);
}

static int32_t toks[3 * 5] = {1, 4, 2, 9, 0, 3, 3, 7, 10, 5, 6, 1, 8, 2, 4};
static int32_t tgts[3 * 5] = {4, 2, 9, 0, 6, 3, 7, 10, 5, 1, 1, 8, 2, 4, 4};

static double loss_of(slM_Graph *g) {
  slM_lm_forward(g, toks, tgts, 3, 5, 1);
  return slM_lm_loss(g);
}

static void test_gradients(void) {
  slM_Graph *g = tiny_lm(3);
  if (!g) return;
  slM_Rng r;
  slM_rng_seed(&r, 5);
  for (int i = 0; i < g->n; i++) /* gains off 1, so their gradients are not symmetric */
    for (int k = 0; k < g->nodes[i].nparams; k++)
      for (size_t j = 0; j < g->nodes[i].params[k]->value->size; j++)
        g->nodes[i].params[k]->value->data[j] += (float)(0.1 * slM_rng_normal(&r));
  loss_of(g);
  slM_zero_grads(g);
  slM_backward(g, NULL, 3);
  int checked = 0, bad = 0;
  double worst = 0;
  for (int i = 0; i < g->n; i++)
    for (int k = 0; k < g->nodes[i].nparams; k++) {
      slM_Param *p = g->nodes[i].params[k];
      for (size_t j = 0; j < p->value->size; j++) {
        float saved = p->value->data[j];
        double h = 1e-2;
        p->value->data[j] = saved + (float)h;
        double up = loss_of(g);
        p->value->data[j] = saved - (float)h;
        double down = loss_of(g);
        p->value->data[j] = saved;
        double numeric = (up - down) / (2 * h), analytic = p->grad->data[j];
        double err = fabs(numeric - analytic) / fmax(1e-2, fabs(numeric) + fabs(analytic));
        worst = fmax(worst, err);
        if (err > 0.02 && bad++ < 3)
          check_fail(__FILE__, __LINE__, "%s[%zu]: analytic %.6g, numeric %.6g", p->name, j, analytic, numeric);
        checked++;
      }
    }
  CHECK(checked > 500);
  printf("  lm: %d gradients, worst relative error %.2g\n", checked, worst);
  slM_graph_free(g);
}

/* the causal mask: changing a later token leaves earlier logits unchanged */
static void test_causal(void) {
  slM_Graph *g = tiny_lm(4);
  if (!g) return;
  int32_t a[5] = {1, 2, 3, 4, 5}, b[5] = {1, 2, 3, 9, 0};
  slM_Tensor *la = slM_tensor_copy(slM_lm_forward(g, a, NULL, 1, 5, 0));
  slM_Tensor *lb = slM_lm_forward(g, b, NULL, 1, 5, 0);
  for (int i = 0; i < 3 * 11; i++) CHECK(la->data[i] == lb->data[i]);
  int differs = 0;
  for (int i = 3 * 11; i < 5 * 11; i++) differs |= la->data[i] != lb->data[i];
  CHECK(differs);
  slM_tensor_free(la);
  slM_graph_free(g);
}

static double train_loss(slM_Graph *g, const unsigned char *bytes, size_t n, int steps, double *first) {
  slM_TrainConfig c = {1, 8, 3e-3, 0, 0.0, SLM_ADAMW, SLM_CONSTANT, 0, 0};
  slM_Rng rng;
  slM_rng_seed(&rng, 9);
  int B = 8, T = g->context;
  int32_t *tok = malloc((size_t)B * T * sizeof *tok), *tgt = malloc((size_t)B * T * sizeof *tgt);
  double last = 0;
  for (int s = 0; s < steps; s++) {
    if (bytes) slM_lm_stream_batch(&rng, bytes, n, B, T, tok, tgt);
    else slM_lm_random_batch(&rng, g->vocab, B, T, tok, tgt);
    slM_lm_forward(g, tok, tgt, B, T, 1);
    slM_zero_grads(g);
    double loss = slM_backward(g, NULL, B);
    slM_optimizer_step(g, &c, c.lr, s);
    if (s == 0) *first = loss;
    last = loss;
  }
  free(tok), free(tgt);
  return last;
}

static void test_training(void) {
  char err[256];
  /* a byte-level model on this project's own README: the loss falls well below log(256) */
  FILE *f = fopen(SYSLAB_SOURCE_DIR "/README.md", "rb");
  CHECK(f != NULL);
  if (!f) return;
  static unsigned char text[1 << 16];
  size_t n = fread(text, 1, sizeof text, f);
  fclose(f);
  slM_LmSpec s = {"", 256, 16, 32, 64, 2, 2};
  slM_Graph *g = slM_lm(&s, 1, err, sizeof err);
  double first, last = train_loss(g, text, n, 150, &first);
  printf("  bytes of README.md: loss %.3f -> %.3f\n", first, last);
  CHECK(first > 5.0); /* about log(256) = 5.55 at the start */
  CHECK(last < first - 2.0);
  slM_graph_free(g);
  /* random tokens: nothing to learn but the (uniform) unigram, so the loss goes toward log(vocab) */
  slM_LmSpec r = {"", 64, 8, 16, 32, 1, 2};
  g = slM_lm(&r, 2, err, sizeof err);
  last = train_loss(g, NULL, 0, 60, &first);
  printf("  random tokens: loss %.3f -> %.3f (log 64 = %.3f)\n", first, last, log(64));
  CHECK(last < first);
  CHECK(fabs(last - log(64)) < 0.3);
  slM_graph_free(g);
}

static void test_determinism(void) {
  double a, b, fa, fb;
  slM_Graph *g = tiny_lm(7), *h = tiny_lm(7);
  a = train_loss(g, NULL, 0, 5, &fa);
  b = train_loss(h, NULL, 0, 5, &fb);
  CHECK(a == b && fa == fb);
  slM_graph_free(g);
  slM_graph_free(h);
}

/* the threaded, vectorised AdamW against the formula written out in double */
static void test_adamw(void) {
  char err[256];
  slM_MlpSpec s = {37, 3, {100}, 1, OP_RELU, 0.0f}; /* 3700 + 100 + 300 + 3: not multiples of 8 */
  slM_Graph *g = slM_mlp(&s, 1, 0, err, sizeof err);
  slM_TrainConfig c = {1, 1, 1e-2, 0, 0.1, SLM_ADAMW, SLM_CONSTANT, 0, 0};
  slM_Rng r;
  slM_rng_seed(&r, 3);
  int checked = 0;
  for (int i = 0; i < g->n; i++)
    for (int k = 0; k < g->nodes[i].nparams; k++) {
      slM_Param *p = g->nodes[i].params[k];
      p->grad = slM_tensor_like(p->value);
    }
  for (long step = 0; step < 3; step++) {
    float *before[8], *mb[8], *vb[8];
    int np = 0;
    for (int i = 0; i < g->n; i++)
      for (int k = 0; k < g->nodes[i].nparams; k++, np++) {
        slM_Param *p = g->nodes[i].params[k];
        for (size_t j = 0; j < p->grad->size; j++) p->grad->data[j] = (float)slM_rng_normal(&r);
        before[np] = malloc(p->value->size * sizeof(float));
        mb[np] = calloc(p->value->size, sizeof(float));
        vb[np] = calloc(p->value->size, sizeof(float));
        memcpy(before[np], p->value->data, p->value->size * sizeof(float));
        if (p->m) memcpy(mb[np], p->m->data, p->value->size * sizeof(float));
        if (p->v) memcpy(vb[np], p->v->data, p->value->size * sizeof(float));
      }
    slM_optimizer_step(g, &c, c.lr, step);
    np = 0;
    for (int i = 0; i < g->n; i++)
      for (int k = 0; k < g->nodes[i].nparams; k++, np++) {
        slM_Param *p = g->nodes[i].params[k];
        double wd = p->value->ndim >= 2 ? c.weight_decay : 0, c1 = 1 - pow(0.9, step + 1),
               c2 = 1 - pow(0.999, step + 1);
        for (size_t j = 0; j < p->value->size; j++) {
          double gr = p->grad->data[j], m = 0.9 * mb[np][j] + 0.1 * gr, v = 0.999 * vb[np][j] + 0.001 * gr * gr;
          double w = before[np][j] - c.lr * ((m / c1) / (sqrt(v / c2) + 1e-8) + wd * before[np][j]);
          CHECK_NEAR(p->value->data[j], w, 1e-6 + 1e-5 * fabs(w));
          checked++;
        }
        free(before[np]), free(mb[np]), free(vb[np]);
      }
  }
  CHECK_EQ_INT(checked, 3 * 4103);
  /* SGD with momentum, against the formula in float (the same operations: equal) */
  slM_TrainConfig sgd = {1, 1, 0.05, 0.9, 0.01, SLM_SGD, SLM_CONSTANT, 0, 0};
  slM_Param *w = g->nodes[slM_find_node(g, "fc1")].params[0];
  slM_tensor_free(w->m);
  w->m = NULL;
  float *w0 = malloc(w->value->size * sizeof *w0), *m0;
  memcpy(w0, w->value->data, w->value->size * sizeof *w0);
  slM_optimizer_step(g, &sgd, sgd.lr, 0);
  m0 = w->m->data;
  int equal = 1;
  for (size_t j = 0; j < w->value->size; j++) {
    float m = 0.9f * 0.0f + w->grad->data[j] + 0.01f * w0[j];
    equal &= m0[j] == m && w->value->data[j] == w0[j] - 0.05f * m;
  }
  CHECK(equal);
  free(w0);
  slM_graph_free(g);
}

/* ------------------------------------------------ the weights a model starts from */

/* FNV-1a over the bits of every parameter, node by node */
static uint64_t fingerprint(const slM_Graph *g) {
  uint64_t h = 0xcbf29ce484222325ull;
  for (int i = 0; i < g->n; i++)
    for (int k = 0; k < g->nodes[i].nparams; k++) {
      const slM_Tensor *t = g->nodes[i].params[k]->value;
      const unsigned char *b = (const unsigned char *)t->data;
      for (size_t j = 0; j < t->size * sizeof(float); j++) h = (h ^ b[j]) * 0x100000001b3ull;
    }
  return h;
}

/* Every preset's weights at seed 0 (what lm_bench builds) and at seed 7, as
** one thread drew them before the draw was shared by the thread team: the
** numbers a model starts from must not depend on the cores. The tiny
** preset's table of 640,000 values already spans 20 of the team's chunks;
** the presets from small up take seconds and up to 11 GB each, so they run
** only with SYSLAB_TEST_LARGE_PRESETS=1. */
static void test_preset_weights_unchanged(void) {
  static const struct {
    const char *preset;
    uint64_t seed0, seed7;
  } want[] = {
      {"tiny", 0x2863922f1dba1c28ull, 0x99bbf835fa3f79faull},   {"small", 0xd74409f66c504378ull, 0x9181726a23678482ull},
      {"medium", 0xcc86c514d09c6e9full, 0x17f355c683f0e5c9ull}, {"large", 0xc57099ca4cc9a4c8ull, 0xa1b7891bab62c0a4ull},
      {"xl", 0xdb2a5eadbc4fd4aeull, 0x3c5b539060cfc9c3ull},     {"2.7B", 0x6e6b1f3709e8fd57ull, 0x8c6080d76c67185full},
  };
  const char *large = getenv("SYSLAB_TEST_LARGE_PRESETS");
  int all = large && *large == '1';
  for (size_t i = 0; i < sizeof want / sizeof *want; i++) {
    if (i >= 1 && !all) {
      check_skip(want[i].preset, "the larger presets' weights are checked with SYSLAB_TEST_LARGE_PRESETS=1");
      continue;
    }
    slM_LmSpec s;
    char err[256];
    CHECK(slM_lm_preset(want[i].preset, &s) == 0);
    for (int k = 0; k < 2; k++) {
      double t0 = slU_now();
      slM_Graph *g = slM_lm(&s, k ? 7 : 0, err, sizeof err);
      double built = slU_now() - t0;
      CHECK_MSG(g != NULL, "%s", err);
      if (!g) continue;
      uint64_t h = fingerprint(g), w = k ? want[i].seed7 : want[i].seed0;
      printf("  %s seed %d: weights 0x%016llx, built in %.2f s on %d threads\n", want[i].preset, k ? 7 : 0,
             (unsigned long long)h, built, slK_threads());
      CHECK_MSG(h == w, "%s seed %d: weights 0x%016llx, want 0x%016llx", want[i].preset, k ? 7 : 0,
                (unsigned long long)h, (unsigned long long)w);
      slM_graph_free(g);
    }
  }
}

/* the team's draw against one thread's, value by value, at sizes around its chunks' edges, and the generator's
** state after it (what the next parameter draws from) */
static void test_normal_draw_is_one_threads(void) {
  static const int sizes[] = {1, 2, 32767, 32768, 32769, 65536 + 3, 3 * 32768 + 17, 1 << 20};
  for (size_t k = 0; k < sizeof sizes / sizeof *sizes; k++) {
    int n = sizes[k];
    slM_Param *p = slM_param_new("w", 1, &n);
    slM_Rng team, one;
    slM_rng_seed(&team, 100 + k), slM_rng_seed(&one, 100 + k);
    slM_param_normal(p, &team, 0.5);
    int differ = 0;
    for (int i = 0; i < n; i++) {
      float v = (float)(slM_rng_normal(&one) * 0.5);
      differ += memcmp(&v, &p->value->data[i], sizeof v) != 0;
    }
    CHECK_MSG(differ == 0, "%d values: %d differ from one thread's", n, differ);
    CHECK_MSG(team.state == one.state, "%d values: the generator is not where one thread left it", n);
    slM_param_release(p);
  }
}

int main(void) {
  RUN(test_normal_draw_is_one_threads);
  RUN(test_preset_weights_unchanged);
  RUN(test_adamw);
  RUN(test_builder_and_presets);
  RUN(test_gradients);
  RUN(test_causal);
  RUN(test_training);
  RUN(test_determinism);
  return check_summary();
}
