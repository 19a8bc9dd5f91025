/* test_half_storage.c - 16-bit activations (graph/model.h, precision.c):
** under a 16-bit precision a node's output is kept in 16 bits, and the
** numbers are those of float32 storage holding the same rounded values.
**
**   - the conversions of 16-bit storage (kernels/round.c) against their
**     scalar references, bit for bit: every 16-bit pattern widened, and
**     float32 values of every class rounded, to bits and kept float32
**     (ties, subnormals, the edges of float16's range, NaN, infinities);
**   - the products on 16-bit operands (slK_gemm_half_ex, the graph's
**     slM_product) against the same products on float32 operands holding
**     the same values, bit for bit, with the bias and the rounding into a
**     16-bit result;
**   - every model family (MLP with each activation and dropout, the image
**     transformer with its padding mask, the language model, fused with
**     and without its attention),
**     in bf16 and fp16: two training steps with 16-bit storage give the
**     losses and every weight of float32 storage bit for bit (the elementwise
**     kernels' reference is their float32 loop, which float32 storage runs),
**     while the activations take fewer bytes and every operator that writes
**     16 bits keeps its output in 16 bits;
**   - the weights' 16-bit working copies: written by the optimizer step from
**     the new values, never read stale after a weight changed otherwise.
*/
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "graph/lm.h"
#include "graph/memory.h"
#include "graph/ops.h"
#include "graph/passes.h"
#include "graph/precision.h"
#include "graph/product.h"
#include "graph/slots.h"
#include "graph/train.h"
#include "kernels/gemm_half.h"
#include "kernels/kernels.h"
#include "kernels/round.h"
#include "systems/predict.h"
#include "systems/runner.h"

static uint64_t rng_state = 88172645463325252ull;
static uint64_t next(void) {
  rng_state ^= rng_state << 13, rng_state ^= rng_state >> 7, rng_state ^= rng_state << 17;
  return rng_state;
}
static float from_bits(uint32_t u) {
  float f;
  memcpy(&f, &u, sizeof f);
  return f;
}
static uint32_t bits_of(float f) {
  uint32_t u;
  memcpy(&u, &f, sizeof u);
  return u;
}

/* ------------------------------------------------------------- conversions */

static void test_widening_every_pattern(void) {
  static uint16_t h[65536 + 5];
  static float got[65536 + 5], want[65536 + 5];
  for (int i = 0; i < 65536 + 5; i++) h[i] = (uint16_t)(i * 40503u); /* every pattern, in an odd order, and a tail */
  for (int f = SLK_BF16; f <= SLK_FP16; f++) {
    slK_half_to_f32_reference(f, h, want, 65536 + 5);
    for (int off = 0; off < 3; off++) { /* unaligned starts and tails */
      slK_half_to_f32(f, h + off, got + off, 65536 + 5 - off);
      int bad = 0;
      for (int i = off; i < 65536 + 5; i++) bad += bits_of(got[i]) != bits_of(want[i]);
      CHECK_MSG(bad == 0, "format %d from %d: %d patterns differ", f, off, bad);
    }
    for (int i = 0; i < 65536; i++) { /* the reference is the exact value */
      float v = f == SLK_BF16 ? slK_bf16_to_f32(h[i]) : slK_fp16_value(h[i]);
      if (bits_of(v) != bits_of(want[i])) {
        CHECK_MSG(0, "format %d pattern %04x", f, h[i]);
        break;
      }
    }
  }
}

static void test_narrowing_every_class(void) {
  enum { N = 1 << 18 };
  float *x = malloc(N * sizeof *x);
  uint16_t *got = malloc(N * sizeof *got), *want = malloc(N * sizeof *want);
  const float special[] = {0.0f,
                           -0.0f,
                           1.0f,
                           -1.0f,
                           65504.0f,
                           65519.99f,
                           65520.0f,
                           -65520.0f,
                           65536.0f,
                           0x1p-14f,
                           0x1p-24f,
                           0x1p-25f,
                           0x1.8p-25f,
                           -0x1p-25f,
                           0x1p-126f,
                           0x1p-149f,
                           3.4e38f,
                           from_bits(0x7F800000u),
                           from_bits(0xFF800000u),
                           from_bits(0x7FC00001u),
                           from_bits(0xFFA00000u),
                           from_bits(0x7F800001u),
                           from_bits(0x3F808000u),
                           from_bits(0x3F818000u)};
  size_t ns = sizeof special / sizeof special[0];
  for (size_t i = 0; i < N; i++) {
    uint32_t u = (uint32_t)next();
    if (i % 4 == 1) u = (u & 0xFFFF0000u) | 0x8000u;     /* bf16 ties */
    if (i % 4 == 2) u = (u & 0x8FFFE000u) | 0x38001000u; /* float16 ties in range */
    x[i] = i < ns ? special[i] : from_bits(u);
  }
  for (int f = SLK_BF16; f <= SLK_FP16; f++) {
    slK_f32_to_half_reference(f, x, want, N);
    for (int off = 0; off < 3; off++) {
      slK_f32_to_half(f, x + off, got + off, N - off);
      int bad = 0;
      for (size_t i = (size_t)off; i < N; i++) bad += got[i] != want[i];
      CHECK_MSG(bad == 0, "format %d from %d: %d values differ", f, off, bad);
    }
    float *r32 = malloc(N * sizeof *r32), *ref = malloc(N * sizeof *ref); /* rounded and kept float32 */
    slK_round_f32(f, x + 1, r32 + 1, N - 1);
    slK_round_array(f, x + 1, ref + 1, N - 1);
    int bad = 0;
    for (size_t i = 1; i < N; i++) bad += bits_of(r32[i]) != bits_of(ref[i]);
    CHECK_MSG(bad == 0, "format %d: slK_round_f32 differs from slK_round_array at %d values", f, bad);
    free(r32), free(ref);
    for (size_t i = 0; i < N; i++) { /* the reference is round.c's rounding, as bits */
      float r = f == SLK_BF16 ? slK_round_bf16(x[i]) : slK_round_fp16(x[i]);
      float back = f == SLK_BF16 ? slK_bf16_to_f32(want[i]) : slK_fp16_value(want[i]);
      if (bits_of(r) != bits_of(back) && !(r != r && back != back)) {
        CHECK_MSG(0, "format %d value %a", f, (double)x[i]);
        break;
      }
    }
  }
  free(x), free(got), free(want);
}

/* ------------------------------------------------------------------ products */

static float *values(size_t n, int format) { /* normal values, a few already 16-bit */
  float *x = malloc((n ? n : 1) * sizeof *x);
  for (size_t i = 0; i < n; i++) {
    x[i] = (float)((int64_t)(next() % 20001) - 10000) / 2500.0f;
    if (i % 3 == 0) x[i] = format == SLK_BF16 ? slK_round_bf16(x[i]) : slK_round_fp16(x[i]);
  }
  return x;
}

static uint16_t *bits16(int format, const float *x, size_t n) {
  uint16_t *h = malloc((n ? n : 1) * sizeof *h);
  slK_f32_to_half_reference(format, x, h, n);
  return h;
}

static int same(const float *a, const float *b, size_t n) {
  for (size_t i = 0; i < n; i++)
    if (bits_of(a[i]) != bits_of(b[i])) return 0;
  return 1;
}

static void test_kernel_on_16bit_operands(void) {
  const int shapes[][3] = {{1, 1, 1}, {7, 5, 3}, {17, 33, 65}, {96, 48, 64}, {130, 70, 1100}};
  for (int f = SLK_BF16; f <= SLK_FP16; f++)
    for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; s++)
      for (int t = 0; t < 4; t++) {
        int M = shapes[s][0], N = shapes[s][1], K = shapes[s][2], ta = t & 1, tb = t >> 1;
        int lda = ta ? M : K, ldb = tb ? K : N;
        size_t na = (size_t)M * K, nb = (size_t)K * N;
        float *A = values(na, f), *B = values(nb, f), *bias = values((size_t)N, f);
        uint16_t *Ah = bits16(f, A, na), *Bh = bits16(f, B, nb);
        float *want = values((size_t)M * N, f), *got = malloc((size_t)M * N * sizeof *got);
        memcpy(got, want, (size_t)M * N * sizeof *got);
        /* the float32 operands' product, then the bias and the rounding (slK_gemm_half_bias's definition) */
        slK_gemm_half(f, ta, tb, M, N, K, 0.5f, A, lda, B, NULL, ldb, 1.0f, want, N);
        for (int i = 0; i < M; i++) {
          for (int j = 0; j < N; j++) want[(size_t)i * N + j] += bias[j];
          slK_round_array(f, want + (size_t)i * N, want + (size_t)i * N, (size_t)N);
        }
        slK_gemm_half_ex(f, ta, tb, M, N, K, 0.5f, NULL, Ah, lda, NULL, Bh, ldb, 1.0f, bias, 1, got, N);
        CHECK_MSG(same(got, want, (size_t)M * N), "format %d %dx%dx%d trans %d%d", f, M, N, K, ta, tb);
        free(A), free(B), free(bias), free(Ah), free(Bh), free(want), free(got);
      }
}

/* slM_product: 16-bit storage in and out, against float32 storage of the same values */
static void test_graph_product(void) {
  slM_Graph g = {0};
  for (int f = SLM_BF16; f <= SLM_FP16; f++)
    for (int portable = 0; portable < 2; portable++) {
      int was = slK_force_portable(portable);
      g.precision = f;
      int M = 37, N = 29, K = 70;
      float *A = values((size_t)M * K, f), *B = values((size_t)N * K, f), *bias = values((size_t)N, f);
      uint16_t *Ah = bits16(f, A, (size_t)M * K);
      float *c32 = calloc((size_t)M * N, sizeof *c32), *back = malloc((size_t)M * N * sizeof *back);
      uint16_t *c16 = calloc((size_t)M * N, sizeof *c16);
      slM_product(&g, 0, 1, M, N, K, 1.0f, slM_f32(A), K, NULL, slM_f32(B), K, 0.0f, bias, 1, (slM_Dst){c32, NULL}, N);
      slM_product(&g, 0, 1, M, N, K, 1.0f, (slM_Mat){NULL, Ah}, K, NULL, slM_f32(B), K, 0.0f, bias, 0,
                  (slM_Dst){NULL, c16}, N);
      slK_half_to_f32_reference(f, c16, back, (size_t)M * N);
      CHECK_MSG(same(back, c32, (size_t)M * N), "format %d portable %d: 16-bit result", f, portable);
      /* a float32 result (a gradient) from a 16-bit operand */
      float *g32 = calloc((size_t)K * N, sizeof *g32), *g16 = calloc((size_t)K * N, sizeof *g16);
      slM_product(&g, 1, 0, K, N, M, 1.0f, slM_f32(A), K, NULL, slM_f32(c32), N, 0.0f, NULL, 0, (slM_Dst){g32, NULL},
                  N);
      slM_product(&g, 1, 0, K, N, M, 1.0f, (slM_Mat){NULL, Ah}, K, NULL, (slM_Mat){NULL, c16}, N, 0.0f, NULL, 0,
                  (slM_Dst){g16, NULL}, N);
      CHECK_MSG(same(g16, g32, (size_t)K * N), "format %d portable %d: float32 result", f, portable);
      free(A), free(B), free(bias), free(Ah), free(c32), free(back), free(c16), free(g32), free(g16);
      slK_force_portable(was);
    }
  slM_product_release();
}

/* ------------------------------------------------------------------- models */

enum { MLP_RELU, MLP_GELU, MLP_TANH, VIT, VIT_FUSED, LM, LM_FUSED, LM_MASKED_SOFTMAX, FAMILIES };
static const char *const family_names[] = {"mlp relu",
                                           "mlp gelu",
                                           "mlp tanh",
                                           "image transformer",
                                           "image transformer fused",
                                           "lm",
                                           "lm fused",
                                           "lm fused, attention op by op"};

static slM_Graph *build(int family, int precision) {
  char err[256];
  slM_Graph *g = NULL;
  if (family <= MLP_TANH) {
    const int act[] = {OP_RELU, OP_GELU, OP_TANH};
    slM_MlpSpec s = {24, 5, {16, 12}, 2, act[family], 0.2f};
    g = slM_mlp(&s, 11, 0, err, sizeof err);
  } else if (family <= VIT_FUSED) {
    slM_TransformerSpec s = {8, 8, 4, 4, 2, 8, 2, 2, 0.1f};
    g = slM_transformer(&s, 12, 1, family == VIT, err, sizeof err);
  } else {
    slM_LmSpec s = {"", 50, 12, 16, 24, 2, 2};
    g = slM_lm(&s, 13, err, sizeof err);
  }
  CHECK_MSG(g != NULL, "%s", err);
  slM_FuseCounts c;
  if (g && family >= LM_FUSED) { /* attention fused, or left op by op with its mask and softmax fused */
    CHECK_MSG(slM_fuse(g, family == LM_FUSED, &c, err, sizeof err) == 0, "%s", err);
    if (family == LM_MASKED_SOFTMAX) CHECK_EQ_INT(c.masked_softmax, 2);
  }
  if (g && family == VIT_FUSED) CHECK_MSG(slM_fuse(g, 0, &c, err, sizeof err) == 0, "%s", err);
  if (g) g->precision = precision;
  return g;
}

/* two training steps of AdamW; the losses, and the activations' bytes after the second */
static void steps(slM_Graph *g, int store, double loss[2], size_t *act_bytes) {
  int was = slM_half_storage(store);
  slM_TrainConfig c = {1, 4, 1e-2, 0.9, 0.01, SLM_ADAMW, SLM_CONSTANT, 0, 5};
  slL_Batch b;
  slL_batch_init(&b, g, 4, 12, 6);
  slM_rng_seed(&g->rng, 77);
  for (int s = 0; s < 2; s++) loss[s] = slL_run_step(g, &b, 1, &c, s);
  *act_bytes = 0;
  for (int i = 0; i < g->n; i++) {
    slM_Node *n = &g->nodes[i];
    const slM_Tensor *own[3] = {n->out, n->saved, n->saved2};
    for (int k = 0; k < 3; k++)
      if (own[k] && !own[k]->view) *act_bytes += slM_tensor_bytes(own[k]);
    if (n->out && n->out->view) *act_bytes += slM_tensor_bytes(n->out); /* planned: its place in the arena */
  }
  slL_batch_free(&b);
  slM_half_storage(was);
}

static int weights_equal(const slM_Graph *a, const slM_Graph *b) {
  for (int i = 0; i < a->n; i++)
    for (int k = 0; k < a->nodes[i].nparams; k++) {
      const slM_Tensor *x = a->nodes[i].params[k]->value, *y = b->nodes[i].params[k]->value;
      if (memcmp(x->data, y->data, x->size * sizeof(float)) != 0) return 0;
    }
  return 1;
}

static void test_models_bit_for_bit(void) {
  for (int f = SLM_BF16; f <= SLM_FP16; f++)
    for (int fam = 0; fam < FAMILIES; fam++) {
      slM_Graph *on = build(fam, f), *off = build(fam, f);
      if (!on || !off) return;
      double l_on[2], l_off[2];
      size_t b_on, b_off;
      steps(on, 1, l_on, &b_on);
      steps(off, 0, l_off, &b_off);
      const char *what = family_names[fam];
      CHECK_MSG(l_on[0] == l_off[0] && l_on[1] == l_off[1], "%s %s: losses %.9g %.9g against %.9g %.9g", what,
                slM_precision_names[f], l_on[0], l_on[1], l_off[0], l_off[1]);
      CHECK_MSG(weights_equal(on, off), "%s %s: the weights differ", what, slM_precision_names[f]);
      CHECK_MSG(b_on < b_off, "%s %s: %zu bytes of activations against %zu", what, slM_precision_names[f], b_on, b_off);
      int *dt = malloc((size_t)on->n * sizeof *dt), halves = 0, wrong = 0;
      slM_dtypes(on, dt);
      for (int i = 0; i < on->n; i++) {
        const slM_Node *n = &on->nodes[i];
        if (!n->out || i == slM_logits_node(on) || n->kind == SLM_OUTPUT) continue;
        int expect = dt[i] == f && (slM_op(n->op)->flags & SLM_OP_HALF);
        wrong += expect != (n->out->half != NULL);
        halves += expect;
      }
      CHECK_MSG(wrong == 0 && halves > 0, "%s: %d outputs in the wrong storage (%d in 16 bits)", what, wrong, halves);
      if (f == SLM_BF16)
        printf("  %s: %d outputs in 16 bits, activations %zu bytes against %zu\n", what, halves, b_on, b_off);
      free(dt);
      slM_graph_free(on), slM_graph_free(off);
    }
  slM_product_release();
}

/* predicted = measured, to the byte, for every family with 16-bit storage (the prediction walks the
** same storage rule, graph/precision.c): a forward pass, and two AdamW steps */
static void test_prediction_matches(void) {
  slM_TrainConfig c = {1, 4, 1e-3, 0, 0, SLM_ADAMW, SLM_CONSTANT, 0, 0};
  for (int fam = 0; fam < FAMILIES; fam++) {
    slM_product_release();
    size_t before = slM_mem_live(); /* nothing of this model yet: its parameters count in both figures */
    slM_Graph *g = build(fam, SLM_BF16);
    if (!g) return;
    slL_Batch b;
    slL_batch_init(&b, g, 4, 12, 4);
    slL_Prediction run[2];
    for (int train = 0; train < 2; train++) {
      slL_predict_graph(g, 4, 12, train ? SLL_RUN_TRAIN : SLL_RUN_FORWARD, SLM_ADAMW, &run[train]);
      slM_release_activations(g);
      slM_product_release();
      double measured = (double)(slL_measure_peak(g, &b, train, train ? &c : NULL, train ? 2 : 1) - before);
      /* a planned graph's forward frees each output after its last reader: below the prediction, a bound */
      int bound = !train && (fam == VIT_FUSED || fam >= LM_FUSED);
      CHECK_MSG(bound ? run[0].peak >= measured : run[train].peak == measured, "%s %s: predicted %.0f measured %.0f",
                family_names[fam], train ? "training" : "forward", run[train].peak, measured);
    }
    slL_batch_free(&b);
    slM_graph_free(g);
  }
  slM_product_release();
}

/* --------------------------------------------------------- working copies */

static slM_Param *first_weight(slM_Graph *g) {
  for (int i = 0; i < g->n; i++)
    if (g->nodes[i].op == OP_LINEAR) return g->nodes[i].params[0];
  return NULL;
}

static void test_weight_copies(void) {
  int was = slM_product_copies(1); /* as the native products keep them, on any machine */
  slM_Graph *g = build(MLP_RELU, SLM_BF16), *fresh = build(MLP_RELU, SLM_BF16);
  if (!g || !fresh) return;
  slM_TrainConfig c = {1, 4, 1e-2, 0.9, 0, SLM_SGD, SLM_CONSTANT, 0, 5};
  slL_Batch b;
  slL_batch_init(&b, g, 4, 12, 6);
  slL_run_step(g, &b, 1, &c, 0);
  slM_Param *w = first_weight(g);
  CHECK(w && w->half);
  if (!w || !w->half) return;
  uint16_t *want = bits16(SLK_BF16, w->value->data, w->value->size);
  CHECK_MSG(memcmp(w->half, want, w->value->size * sizeof *want) == 0, "the optimizer's copy is not the new weight");
  free(want);
  /* the pass after the step reads the optimizer's copy; a weight changed after that pass (outside the
  ** optimizer) is read as changed by the next pass, as a model built with it reads it */
  slM_forward(g, b.x, b.y, 4, 1);
  w->value->data[0] += 0.5f;
  for (int i = 0; i < g->n; i++)
    for (int k = 0; k < g->nodes[i].nparams; k++) {
      float *to = fresh->nodes[i].params[k]->value->data;
      memcpy(to, g->nodes[i].params[k]->value->data, g->nodes[i].params[k]->value->size * sizeof *to);
    }
  slM_rng_seed(&g->rng, 9), slM_rng_seed(&fresh->rng, 9); /* the same dropout masks */
  slM_forward(g, b.x, b.y, 4, 1);
  slM_forward(fresh, b.x, b.y, 4, 1);
  const slM_Tensor *lg = g->nodes[slM_logits_node(g)].out, *lf = fresh->nodes[slM_logits_node(fresh)].out;
  CHECK(memcmp(lg->data, lf->data, lg->size * sizeof(float)) == 0);
  /* training done: the copies are given back with the activations */
  slM_release_activations(g);
  CHECK(w->half == NULL);
  slL_batch_free(&b);
  slM_graph_free(g), slM_graph_free(fresh);
  slM_product_release();
  slM_product_copies(was);
}

int main(void) {
  RUN(test_widening_every_pattern);
  RUN(test_narrowing_every_class);
  int was = slK_round_vector(0); /* the scalar loops: the references compared with themselves must agree */
  RUN(test_widening_every_pattern);
  slK_round_vector(was);
  RUN(test_kernel_on_16bit_operands);
  RUN(test_graph_product);
  RUN(test_models_bit_for_bit);
  RUN(test_prediction_matches);
  int copies = slM_product_copies(1); /* the working copies' path on any machine, to the same bits */
  RUN(test_models_bit_for_bit);
  RUN(test_prediction_matches);
  slM_product_copies(copies);
  RUN(test_weight_copies);
  return check_summary();
}
