/* test_gpu_graph.c - models on the GPU (engine/graph/devices.c, devslots.c, ops_cuda.c,
** engine/kernels/device.c): the same model trained on the CPU and on the
** GPU gives the same losses, `to` moves weights and optimiser state there
** and back unchanged, and what cannot run on the GPU is refused with why.
**
** Tolerances on the losses, |gpu - cpu| <= tol (1 + |cpu|):
**   MLP            1e-4   products in cuBLAS's order against OpenBLAS's
**                         (test_gpu_ops: 1e-5 sqrt(K) per product), over
**                         a few SGD steps that carry the differences on
**   transformer    1e-3   the same, with softmax and layer norm through
**   language model 1e-3   CUDA's expf; more products per step
**   under bf16    2e-2   the products' sums in another order land a value
**   and fp16              near a rounding boundary of the 16-bit output on
**                         the other side of it: one bf16 step is 2^-8 of
**                         the value (fp16's 2^-11)
** The round trip `to gpu` then `to cpu` is exact (copies, no arithmetic);
** so is the rounding to 16 bits (ties, NaN, infinities, subnormals).
**
** Without a GPU every refusal is checked (the reason slK_dev_why gives:
** no module, or the CUDA module's reason, appears in the message, the
** allowed devices are named), the CPU side of
** `to` and the operator table's CUDA slots are checked, and the GPU part
** prints that it skipped and why.
**
** Each model's losses are printed as soon as a device has them (the CPU's
** before the GPU's run starts), line by line, so that a run that faults
** or is stopped still shows how far the models agreed. SYSLAB_GPU_TEST_SMALL=1
** (what bench/gpu_check.sh and bench/gpu_first.sh set under
** compute-sanitizer, which runs kernels far slower) trains one epoch on
** fewer samples, two language-model steps, and the fused node's causal
** cases alone. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "graph/devices.h"
#include "graph/lm.h"
#include "graph/memory.h"
#include "graph/ops.h"
#include "graph/passes.h"
#include "graph/train.h"
#include "kernels/device.h"
#include "kernels/gemm_half.h"
#include "kernels/kernels.h"
#include "kernels/round.h"

static int gpu;
static char err[512];

static int small(void) {
  const char *e = getenv("SYSLAB_GPU_TEST_SMALL");
  return e && *e == '1';
}

static slM_Graph *mlp(void) {
  slM_MlpSpec s = {16, 3, {32, 16}, 2, OP_RELU, 0.1f};
  slM_Graph *g = slM_mlp(&s, 7, 1, err, sizeof err);
  CHECK_MSG(g != NULL, "mlp: %s", err);
  return g;
}

static slM_Graph *transformer(void) {
  slM_TransformerSpec s = {8, 8, 3, 4, 1, 16, 2, 2, 0.1f, 0};
  slM_Graph *g = slM_transformer(&s, 7, 1, 1, err, sizeof err);
  CHECK_MSG(g != NULL, "transformer: %s", err);
  return g;
}

static slM_Graph *tiny_lm(void) {
  slM_LmSpec s = {"", 64, 16, 16, 32, 2, 2};
  slM_Graph *g = slM_lm(&s, 7, err, sizeof err);
  CHECK_MSG(g != NULL, "lm: %s", err);
  return g;
}

/* ------------------------------------------------------ without a GPU too */

/* a language model whose heads have 64 features, the width the GPU's fused attention takes in every precision */
static slM_Graph *lm_heads_64(int fused) {
  slM_LmSpec s = {"", 64, 32, 128, 256, 1, 2};
  slM_Graph *g = slM_lm(&s, 7, err, sizeof err);
  CHECK_MSG(g != NULL, "lm: %s", err);
  if (g && fused) CHECK_EQ_INT(slM_set_attention(g, 1), 1);
  return g;
}

/* every operator of the three families has a CUDA slot, the fused attention node too */
static void test_cuda_slots(void) {
  slM_Graph *gs[4] = {mlp(), transformer(), tiny_lm(), lm_heads_64(1)};
  for (int k = 0; k < 4; k++)
    for (int i = 0; gs[k] && i < gs[k]->n; i++) {
      const slM_OpImpl *c = &slM_op(gs[k]->nodes[i].op)->impl[SLM_CUDA];
      CHECK_MSG(c->forward && c->backward, "%s: %s has no CUDA slot", gs[k]->family, gs[k]->nodes[i].name);
    }
  for (int k = 0; k < 4; k++) slM_graph_free(gs[k]);
}

/* a copy on the CPU keeps the weights, gradients and optimiser state: it trains on exactly as the original */
static void test_to_cpu_copies_the_state(void) {
  slM_Graph *g = mlp();
  slM_Dataset *d = slM_synthetic(64, 16, 16, 3, 0.5, 3);
  slM_TrainConfig c = {1, 16, 0.01, 0.9, 0.0, SLM_ADAMW, SLM_CONSTANT, 0, 5};
  slM_EpochStats a[1], b[1];
  CHECK_EQ_INT(slM_train(g, d, &c, NULL, a), 1);
  slM_Graph *copy = slM_graph_to(g, SLM_CPU, err, sizeof err);
  CHECK_MSG(copy != NULL, "to cpu: %s", err);
  if (!copy) goto done;
  for (int i = 0; i < g->n; i++)
    for (int k = 0; k < g->nodes[i].nparams; k++) {
      slM_Param *p = g->nodes[i].params[k], *q = copy->nodes[i].params[k];
      CHECK(p != q && q->m && q->v && q->grad);
      CHECK(memcmp(p->value->data, q->value->data, p->value->size * sizeof(float)) == 0);
      CHECK(q->m && memcmp(p->m->data, q->m->data, p->m->size * sizeof(float)) == 0);
      CHECK(q->v && memcmp(p->v->data, q->v->data, p->v->size * sizeof(float)) == 0);
    }
  c.seed = 6;
  slM_train(g, d, &c, NULL, a);
  slM_train(copy, d, &c, NULL, b);
  CHECK(a[0].loss == b[0].loss);
  slM_graph_free(copy);
done:
  slM_graph_free(g);
  slM_dataset_free(d);
}

/* the prediction by category, and no device check on the CPU */
static void test_prediction(void) {
  slM_Graph *g = transformer();
  double by[SLM_MEM_NCAT], total = slM_device_predict(g, 8, 1, by), sum = 0;
  size_t trainable, params;
  slM_param_counts(g, &trainable, &params);
  CHECK_NEAR(by[SLM_MEM_PARAM], 4.0 * params, 0);
  CHECK_NEAR(by[SLM_MEM_OPTIM], 8.0 * trainable, 0);
  CHECK(by[SLM_MEM_ACT] > 0 && by[SLM_MEM_TEMP] > 0);
  for (int c = 0; c < SLM_MEM_NCAT; c++) sum += by[c];
  CHECK_NEAR(total, sum, 0);
  CHECK(slM_device_predict(g, 16, 1, NULL) > total);                /* activations grow with the batch */
  CHECK_EQ_INT(slM_device_fits(g, 1 << 30, 1, err, sizeof err), 0); /* a model on the CPU is not the GPU's */
  slM_graph_free(g);
}

static void test_refusals_without_a_device(void) {
  const char *why = slK_dev_why();
  slM_Graph *g = mlp();
  CHECK_EQ_INT(slM_device_check(g, SLM_CUDA, err, sizeof err), -1);
  CHECK_CONTAINS(err, why);
  CHECK_CONTAINS(err, "cpu runs everywhere");
  CHECK(slM_graph_to(g, SLM_CUDA, err, sizeof err) == NULL);
  CHECK_CONTAINS(err, why);
  CHECK_EQ_INT(slM_device_usable("tpu", err, sizeof err), -1);
  CHECK_CONTAINS(err, "cpu or gpu");
  CHECK(slK_dev_alloc(64, SLM_MEM_ACT, err, sizeof err) == NULL);
  CHECK(err[0] != '\0');
  CHECK_EQ_INT(slK_dev_fits(64, err, sizeof err), -1);
  slM_graph_free(g);
  sl_State *S = sl_new();
  const char *cases[] = {"m = model mlp hidden=[8] device=gpu", "m = model mlp hidden=[8]\nx = to m gpu",
                         "m = lm tiny device=gpu", "lm_bench device=gpu steps=1 warmups=[0] contexts=[8]", NULL};
  for (int i = 0; cases[i]; i++) {
    const char *out = check_fails(S, cases[i]);
    CHECK_MSG(out && strstr(out, why) && strstr(out, "cpu"), "%s: %s", cases[i], out ? out : "(ran)");
  }
  CHECK(check_fails(S, "m = model mlp hidden=[8]\nx = to m cpu\nparams x") == NULL); /* nothing else changes */
  sl_free(S);
}

/* ------------------------------------------------------------ on the GPU */

static int close_to(double gpu_loss, double cpu_loss, double tol) {
  return isfinite(gpu_loss) && fabs(gpu_loss - cpu_loss) <= tol * (1 + fabs(cpu_loss));
}

/* the same steps on both devices from the same weights */
static void train_both(slM_Graph *cpu, double tol, const char *what) {
  slM_Graph *dev = slM_graph_to(cpu, SLM_CUDA, err, sizeof err);
  CHECK_MSG(dev != NULL, "%s to gpu: %s", what, err);
  if (!dev) return;
  int epochs = small() ? 1 : 2;
  slM_Dataset *d = slM_synthetic(small() ? 32 : 64, small() ? 16 : 32, cpu->features, cpu->classes, 0.5, 3);
  slM_TrainConfig c = {epochs, 16, 0.01, 0.9, 0.01, SLM_ADAMW, SLM_CONSTANT, 0, 5};
  slM_EpochStats a[2], b[2];
  CHECK_EQ_INT(slM_train(cpu, d, &c, NULL, a), epochs);
  for (int e = 0; e < epochs; e++)
    printf("  %s epoch %d on the cpu: loss %.7f, test loss %.7f\n", what, e + 1, a[e].loss, a[e].test_loss);
  CHECK_EQ_INT(slM_train(dev, d, &c, NULL, b), epochs);
  CHECK_MSG(!dev->fault[0], "%s: %s", what, dev->fault);
  for (int e = 0; e < epochs; e++) {
    printf("  %s epoch %d: loss cpu %.7f gpu %.7f, test loss cpu %.7f gpu %.7f\n", what, e + 1, a[e].loss, b[e].loss,
           a[e].test_loss, b[e].test_loss);
    CHECK_MSG(close_to(b[e].loss, a[e].loss, tol), "%s epoch %d: %.9g vs %.9g", what, e + 1, b[e].loss, a[e].loss);
    CHECK_MSG(close_to(b[e].test_loss, a[e].test_loss, tol), "%s test loss: %.9g vs %.9g", what, b[e].test_loss,
              a[e].test_loss);
  }
  /* the host copies were brought up to date: the weights agree too */
  double worst = 0;
  const char *where = "-";
  for (int i = 0; i < cpu->n; i++)
    for (int k = 0; k < cpu->nodes[i].nparams; k++) {
      const slM_Tensor *x = cpu->nodes[i].params[k]->value, *y = dev->nodes[i].params[k]->value;
      for (size_t j = 0; j < x->size; j++)
        if (fabs((double)x->data[j] - y->data[j]) > worst)
          worst = fabs((double)x->data[j] - y->data[j]), where = cpu->nodes[i].params[k]->name;
    }
  printf("  %s: weights differ by at most %.3g (%s)\n", what, worst, where);
  CHECK_MSG(worst <= 10 * tol, "%s: weights differ by %g (%s)", what, worst, where);
  slM_graph_free(dev);
  slM_dataset_free(d);
}

static void test_mlp_on_both(void) {
  slM_Graph *g = mlp();
  train_both(g, 1e-4, "mlp");
  slM_graph_free(g);
}

static void test_transformer_on_both(void) {
  slM_Graph *g = transformer();
  train_both(g, 1e-3, "transformer");
  slM_graph_free(g);
}

/* the same model in a 16-bit precision on both devices: the GPU's products on the tensor cores */
static void test_half_on_both(void) {
  slM_Graph *g = transformer();
  g->precision = SLM_BF16;
  train_both(g, 2e-2, "transformer bf16");
  slM_graph_free(g);
  g = mlp();
  g->precision = SLM_FP16;
  train_both(g, 2e-2, "mlp fp16");
  slM_graph_free(g);
}

/* the device's rounding to 16 bits gives round.c's bits, including the awkward values */
static void test_rounding_bits(void) {
  enum { N = 4096 };
  static float x[N], y[N], r[N];
  static uint16_t h[N];
  const float special[] = {0.0f,    -0.0f,    1.0f,       1.00390625f, 1.01171875f, 65504.0f, 65520.0f, 1e30f,
                           -1e-40f, 0x1p-25f, 0x1.8p-24f, INFINITY,    -INFINITY,   NAN,      -NAN};
  int ns = (int)(sizeof special / sizeof *special);
  slM_Rng rng;
  slM_rng_seed(&rng, 5);
  for (int i = 0; i < N; i++) {
    uint32_t u = (uint32_t)slM_rng_next(&rng);
    memcpy(&x[i], &u, sizeof u); /* every bit pattern: NaN payloads, subnormals, ties */
    if (i < ns) x[i] = special[i];
  }
  float *dx = slK_dev_alloc(sizeof x, SLM_MEM_TEMP, err, sizeof err),
        *dy = slK_dev_alloc(sizeof y, SLM_MEM_TEMP, err, sizeof err);
  uint16_t *dh = slK_dev_alloc(sizeof h, SLM_MEM_TEMP, err, sizeof err);
  CHECK_MSG(dx && dy && dh, "alloc: %s", err);
  if (!dx || !dy || !dh) return;
  for (int format = SLK_BF16; format <= SLK_FP16; format++) {
    CHECK_EQ_INT(slK_gpu()->upload(dx, x, sizeof x, err, sizeof err), 0);
    CHECK_EQ_INT(slK_gpu()->round_half(format, dx, dy, N, err, sizeof err), 0);
    CHECK_EQ_INT(slK_gpu()->to_half(format, dx, dh, N, err, sizeof err), 0);
    CHECK_EQ_INT(slK_gpu()->download(y, dy, sizeof y, err, sizeof err), 0);
    CHECK_EQ_INT(slK_gpu()->download(h, dh, sizeof h, err, sizeof err), 0);
    slK_round_array(format, x, r, N);
    int bad = 0;
    for (int i = 0; i < N; i++) {
      uint32_t want, got, from;
      memcpy(&want, &r[i], 4), memcpy(&got, &y[i], 4), memcpy(&from, &x[i], 4);
      uint16_t bits = format == SLK_FP16 ? slK_fp16_bits(x[i]) : (uint16_t)(want >> 16);
      if ((got != want || h[i] != bits) && bad++ < 5)
        printf("  format %d: %a (0x%08x) rounded 0x%08x / 0x%04x, want 0x%08x / 0x%04x\n", format, x[i], (unsigned)from,
               (unsigned)got, h[i], (unsigned)want, bits);
    }
    CHECK_MSG(bad == 0, "format %d: %d of %d values rounded otherwise than round.c", format, bad, N);
  }
  slK_dev_free(dx, sizeof x, SLM_MEM_TEMP), slK_dev_free(dy, sizeof y, SLM_MEM_TEMP),
      slK_dev_free(dh, sizeof h, SLM_MEM_TEMP);
}

/* a strided batch of bf16 products on the tensor cores against the CPU's exact-product reference */
static void test_half_gemm_batched(void) {
  enum { B = 3, M = 37, N = 45, K = 70 };
  static float a[B * M * K], b[B * K * N], c[B * M * N], ref[M * N];
  static uint16_t ah[B * M * K], bh[B * K * N];
  slM_Rng rng;
  slM_rng_seed(&rng, 9);
  for (size_t i = 0; i < sizeof a / sizeof *a; i++) a[i] = (float)slM_rng_uniform(&rng) - 0.5f;
  for (size_t i = 0; i < sizeof b / sizeof *b; i++) b[i] = (float)slM_rng_uniform(&rng) - 0.5f;
  slK_to_half(SLK_BF16, a, ah, sizeof a / sizeof *a);
  slK_to_half(SLK_BF16, b, bh, sizeof b / sizeof *b);
  uint16_t *dah = slK_dev_alloc(sizeof ah, SLM_MEM_TEMP, err, sizeof err),
           *dbh = slK_dev_alloc(sizeof bh, SLM_MEM_TEMP, err, sizeof err);
  float *dc = slK_dev_alloc(sizeof c, SLM_MEM_TEMP, err, sizeof err);
  CHECK_MSG(dah && dbh && dc, "alloc: %s", err);
  if (!dah || !dbh || !dc) return;
  slK_gpu()->upload(dah, ah, sizeof ah, err, sizeof err);
  slK_gpu()->upload(dbh, bh, sizeof bh, err, sizeof err);
  slK_gpu()->zero(dc, sizeof c, err, sizeof err);
  /* op(A) = A^T stored K x M, op(B) = B stored K x N: a weight's gradient's shape */
  int rc = slK_gpu()->gemm_batched(SLK_BF16, 1, 0, M, N, K, 0.5f, dah, M, (long long)M * K, dbh, N, (long long)K * N,
                                   0.0f, dc, N, (long long)M * N, B, err, sizeof err);
  CHECK_MSG(rc == 0, "gemm: %s", err);
  slK_gpu()->download(c, dc, sizeof c, err, sizeof err);
  double worst = 0;
  for (int s = 0; s < B; s++) {
    slK_gemm_half_reference(SLK_BF16, 1, 0, M, N, K, 0.5f, a + (size_t)s * M * K, M, b + (size_t)s * K * N, NULL, N,
                            0.0f, ref, N);
    for (int i = 0; i < M * N; i++) worst = fmax(worst, fabs((double)c[(size_t)s * M * N + i] - ref[i]));
  }
  printf("  bf16 strided batch %d x %d x %d x %d: largest difference from the CPU reference %.3g\n", B, M, N, K, worst);
  CHECK_MSG(worst <= 1e-5 * sqrt((double)K), "bf16 batch differs by %g",
            worst); /* |terms| <= 1/4: sums in another order */
  slK_dev_free(dah, sizeof ah, SLM_MEM_TEMP), slK_dev_free(dbh, sizeof bh, SLM_MEM_TEMP),
      slK_dev_free(dc, sizeof c, SLM_MEM_TEMP);
}

/* a few AdamW steps of a language model on both devices from the same weights; the CPU model is freed */
static void lm_both(slM_Graph *cpu, double tol, const char *what) {
  slM_Graph *dev = slM_graph_to(cpu, SLM_CUDA, err, sizeof err);
  CHECK_MSG(dev != NULL, "%s to gpu: %s", what, err);
  if (!dev) goto done;
  enum { B = 4, T = 16 };
  int32_t tok[B * T], tgt[B * T];
  const int steps = small() ? 2 : 4;
  slM_Rng rng;
  slM_rng_seed(&rng, 11);
  slM_TrainConfig c = {1, B, 0.003, 0.9, 0.0, SLM_ADAMW, SLM_CONSTANT, 0, 0};
  for (int s = 0; s < steps; s++) {
    slM_lm_random_batch(&rng, cpu->vocab, B, T, tok, tgt);
    double loss[2];
    slM_Graph *gs[2] = {cpu, dev};
    for (int k = 0; k < 2; k++) {
      slM_lm_forward(gs[k], tok, tgt, B, T, 1);
      slM_zero_grads(gs[k]);
      loss[k] = slM_backward(gs[k], NULL, B);
      slM_optimizer_step(gs[k], &c, c.lr, s);
    }
    CHECK_MSG(!dev->fault[0], "%s: %s", what, dev->fault);
    printf("  %s step %d: loss cpu %.7f gpu %.7f\n", what, s + 1, loss[0], loss[1]);
    CHECK_MSG(close_to(loss[1], loss[0], tol), "%s step %d: %.9g vs %.9g", what, s + 1, loss[1], loss[0]);
  }
  slM_graph_free(dev);
done:
  slM_graph_free(cpu);
}

static void test_lm_on_both(void) { lm_both(tiny_lm(), 1e-3, "lm"); }

/* largest |a - b| over n values, and the largest |b| */
static double worst_of(const float *a, const float *b, size_t n, double *scale) {
  double w = 0;
  *scale = 0;
  for (size_t i = 0; i < n; i++) w = fmax(w, fabs((double)a[i] - b[i])), *scale = fmax(*scale, fabs((double)b[i]));
  return isfinite(w) ? w : INFINITY;
}

/* The fused node's device calls against the CPU's fused attention on the
** same interleaved token rows: several heads, T past one tile of 64, heads
** of 64 (float32 and bf16), 128 and 80 (bf16). The backward ADDS to the
** gradients it is given, so they start at 0.25. */
static void fused_rows_case(int format, int B, int T, int H, int dh, int causal, double tol) {
  size_t D = (size_t)H * dh, nx = (size_t)B * T * D, nl = (size_t)B * H * T, bx = nx * sizeof(float);
  float *h[12]; /* q k v dout; the CPU's o lse dq dk dv; the GPU's o lse, then its dq dk dv in turn */
  for (int i = 0; i < 12; i++) h[i] = calloc(nx, sizeof(float));
  slM_Rng rng;
  slM_rng_seed(&rng, 21);
  for (int i = 0; i < 4; i++)
    for (size_t j = 0; j < nx; j++) h[i][j] = (float)(2 * slM_rng_uniform(&rng) - 1);
  slK_Attn a;
  slK_attention_contiguous(&a, B, H, T, T, dh, causal);
  a.q_row = a.k_row = (long)D, a.q_head = a.k_head = dh, a.q_batch = a.k_batch = (long)T * D, a.format = format;
  CHECK(slK_attention_forward(SLK_ATTN_FUSED, &a, h[0], h[1], h[2], h[4], h[5]) == 0);
  CHECK(slK_attention_backward(SLK_ATTN_FUSED, &a, h[0], h[1], h[2], h[4], h[3], h[5], h[6], h[7], h[8]) == 0);
  float *d[9];
  for (int i = 0; i < 9; i++) d[i] = slK_dev_alloc(bx, SLM_MEM_TEMP, err, sizeof err);
  for (int i = 0; i < 4; i++) slK_gpu()->upload(d[i], h[i], bx, err, sizeof err);
  int rc = slK_dev_attention_forward(format, B, T, H, dh, causal, d[0], d[1], d[2], d[4], d[5], SLM_MEM_TEMP, err,
                                     sizeof err);
  CHECK_MSG(rc == 0, "fused rows forward: %s", err);
  for (size_t j = 0; j < nx; j++) h[9][j] = 0.25f;
  for (int i = 6; i < 9; i++) slK_gpu()->upload(d[i], h[9], bx, err, sizeof err);
  rc = rc ? rc
          : slK_dev_attention_backward(format, B, T, H, dh, causal, d[0], d[1], d[2], d[4], d[3], d[5], d[6], d[7],
                                       d[8], SLM_MEM_TEMP, err, sizeof err);
  CHECK_MSG(rc == 0, "fused rows backward: %s", err);
  const char *names[5] = {"O", "L", "dQ", "dK", "dV"};
  for (int i = 0; rc == 0 && i < 5; i++) {
    slK_gpu()->download(h[9], d[4 + i], i == 1 ? nl * sizeof(float) : bx, err, sizeof err);
    size_t n = i == 1 ? nl : nx;
    if (i >= 2)
      for (size_t j = 0; j < n; j++) h[9][j] -= 0.25f;
    double scale, w = worst_of(h[9], h[4 + i], n, &scale);
    printf("  fused rows %s B%d T%d H%d dh %d%s %s: largest difference %.3g (largest value %.3g)\n",
           format == SLK_BF16 ? "bf16" : "float32", B, T, H, dh, causal ? " causal" : "", names[i], w, scale);
    CHECK_MSG(w <= tol * (1 + scale), "fused rows %s dh %d %s: %g", format == SLK_BF16 ? "bf16" : "float32", dh,
              names[i], w);
  }
  for (int i = 0; i < 9; i++) slK_dev_free(d[i], bx, SLM_MEM_TEMP);
  for (int i = 0; i < 12; i++) free(h[i]);
}

static void test_fused_rows(void) {
  for (int causal = small(); causal < 2; causal++) {
    fused_rows_case(SLK_FP32, 2, 150, 3, 64, causal, 1e-4);
    fused_rows_case(SLK_BF16, 2, 150, 3, 64, causal, 3e-2);
    fused_rows_case(SLK_BF16, 1, 150, 2, 128, causal, 3e-2);
    fused_rows_case(SLK_BF16, 1, 150, 2, 80, causal, 3e-2); /* version 2 of the tensor-core kernels */
  }
}

/* the fused attention node on the GPU: float32 (attention.cu's kernels) and bf16 (the tensor cores') */
static void test_fused_attention_on_both(void) {
  lm_both(lm_heads_64(1), 1e-3, "lm fused");
  slM_Graph *g = lm_heads_64(1);
  g->precision = SLM_BF16;
  lm_both(g, 2e-2, "lm fused bf16");
  /* heads the kernels are not built for: the pass stops at the node, with why */
  slM_Graph *cpu = tiny_lm();
  CHECK_EQ_INT(slM_set_attention(cpu, 1), 2);
  slM_Graph *dev = slM_graph_to(cpu, SLM_CUDA, err, sizeof err);
  CHECK_MSG(dev != NULL, "fused tiny lm to gpu: %s", err);
  if (dev) {
    int32_t tok[2 * 8] = {0}, tgt[2 * 8] = {0};
    slM_lm_forward(dev, tok, tgt, 2, 8, 1);
    CHECK_CONTAINS(dev->fault, "fused attention");
    CHECK_CONTAINS(dev->fault, "64");
    slM_graph_free(dev);
  }
  slM_graph_free(cpu);
}

/* to gpu and back: every weight and moment bit for bit */
static void test_round_trip(void) {
  slM_Graph *g = mlp();
  slM_Dataset *d = slM_synthetic(32, 8, 16, 3, 0.5, 3);
  slM_TrainConfig c = {1, 16, 0.01, 0.9, 0.0, SLM_ADAMW, SLM_CONSTANT, 0, 5};
  slM_EpochStats s[1];
  slM_train(g, d, &c, NULL, s);
  slM_Graph *there = slM_graph_to(g, SLM_CUDA, err, sizeof err);
  slM_Graph *back = there ? slM_graph_to(there, SLM_CPU, err, sizeof err) : NULL;
  CHECK_MSG(back != NULL, "round trip: %s", err);
  for (int i = 0; back && i < g->n; i++)
    for (int k = 0; k < g->nodes[i].nparams; k++) {
      slM_Param *p = g->nodes[i].params[k], *q = back->nodes[i].params[k];
      CHECK(back->device == SLM_CPU && !q->value->dev);
      CHECK(memcmp(p->value->data, q->value->data, p->value->size * sizeof(float)) == 0);
      CHECK(q->m && memcmp(p->m->data, q->m->data, p->m->size * sizeof(float)) == 0);
      CHECK(q->v && memcmp(p->v->data, q->v->data, p->v->size * sizeof(float)) == 0);
    }
  slM_graph_free(back);
  slM_graph_free(there);
  slM_graph_free(g);
  slM_dataset_free(d);
}

/* device memory by category after a step, and a batch that cannot fit refused before allocating */
static void test_device_memory(void) {
  slM_Graph *g = transformer(), *dev = slM_graph_to(g, SLM_CUDA, err, sizeof err);
  CHECK_MSG(dev != NULL, "to gpu: %s", err);
  if (!dev) goto done;
  slK_dev_reset_peak();
  slM_Dataset *d = slM_synthetic(32, 8, g->features, g->classes, 0.5, 3);
  slM_TrainConfig c = {1, 32, 0.01, 0.9, 0.0, SLM_ADAMW, SLM_CONSTANT, 0, 5};
  slM_EpochStats s[1];
  slM_train(dev, d, &c, NULL, s);
  slK_DevMemory m;
  slK_dev_memory(&m);
  double by[SLM_MEM_NCAT], predicted = slM_device_predict(dev, 32, 1, by);
  size_t trainable, params;
  slM_param_counts(dev, &trainable, &params);
  printf("  device peak %zu bytes (parameters %zu, gradients %zu, optimiser %zu, activations %zu, temporaries %zu), "
         "predicted %.0f\n",
         m.peak, m.at_peak[SLM_MEM_PARAM], m.at_peak[SLM_MEM_GRAD], m.at_peak[SLM_MEM_OPTIM], m.at_peak[SLM_MEM_ACT],
         m.at_peak[SLM_MEM_TEMP], predicted);
  CHECK(m.live[SLM_MEM_PARAM] >= 4 * params && m.live[SLM_MEM_OPTIM] >= 8 * trainable);
  CHECK(m.peak > 0 && m.peak <= 2 * predicted + (2u << 20)); /* size classes round each block up */
  CHECK_EQ_INT(slM_device_fits(dev, 1 << 30, 1, err, sizeof err), -1);
  CHECK_CONTAINS(err, "refused before allocating");
  CHECK_CONTAINS(err, "GiB");
  slM_graph_free(dev);
  slM_dataset_free(d);
done:
  slM_graph_free(g);
}

/* what the GPU does not run is refused with the reason */
static void test_refusals_on_a_device(void) {
  slM_Graph *m = mlp(), *dev;
  m->precision = SLM_BF16; /* a 16-bit precision moves: its products run on the tensor cores */
  CHECK_MSG((dev = slM_graph_to(m, SLM_CUDA, err, sizeof err)) != NULL, "bf16 to gpu: %s", err);
  CHECK(dev && dev->precision == SLM_BF16);
  slM_graph_free(dev);
  slM_graph_free(m);
}

int main(void) {
  setvbuf(stdout, NULL, _IOLBF, 0); /* each line as it comes, into a log too */
  gpu = slK_dev_available();
  RUN(test_cuda_slots);
  RUN(test_to_cpu_copies_the_state);
  RUN(test_prediction);
  if (!gpu) {
    RUN(test_refusals_without_a_device);
    check_skip("test_gpu_graph's GPU side (models trained on both devices, to and back, device memory)", slK_dev_why());
    return check_summary();
  }
  RUN(test_mlp_on_both);
  RUN(test_transformer_on_both);
  RUN(test_lm_on_both);
  RUN(test_fused_rows);
  RUN(test_fused_attention_on_both);
  RUN(test_rounding_bits);
  RUN(test_half_gemm_batched);
  RUN(test_half_on_both);
  RUN(test_round_trip);
  RUN(test_device_memory);
  RUN(test_refusals_on_a_device);
  return check_summary();
}
