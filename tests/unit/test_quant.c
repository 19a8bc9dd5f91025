/* test_quant.c - number formats against hand-worked values, their laws
** (idempotence, monotonicity, error shrinking with width), MXINT8 packing
** and its bfloat16 decode, exact-k pruning, and QAT/pruning on a model. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "graph/model.h"
#include "compress/quant.h"
#include "graph/train.h"

static slQ_Format fmt(slQ_Kind k, int w, int frac, int e) {
  slQ_Format f = {k, w, frac, e, 0, 0, 1, 32};
  return f;
}

static float q1(const slQ_Format *f, float x) {
  float y;
  slQ_apply(f, &x, &y, 1, 1);
  return y;
}

static void test_integer_worked_example(void) {
  /* numerics §2.1's example, w = 8, f = 4, ties to even */
  slQ_Format f = fmt(SLQ_INTEGER, 8, 4, 0);
  float in[] = {0.03125f, 0.09375f, 0.15625f, -0.09375f, 7.9f, 8.0f, -8.1f, 1.2345f, INFINITY, -INFINITY};
  float want[] = {0.0f, 0.125f, 0.125f, -0.125f, 7.875f, 7.9375f, -8.0f, 1.25f, 7.9375f, -8.0f};
  for (int i = 0; i < 10; i++)
    CHECK_MSG(q1(&f, in[i]) == want[i], "q(%g) = %g, want %g", in[i], q1(&f, in[i]), want[i]);
  CHECK(isnan(q1(&f, NAN)));
  CHECK(signbit(q1(&f, -0.01f))); /* a negative input that rounds to zero stays -0 */
}

static void test_minifloats(void) {
  slQ_Format d = fmt(SLQ_MINIFLOAT_DENORM, 8, 0, 4);
  CHECK(q1(&d, 1.0f) == 1.0f);     /* powers of two survive (binary64 exponent) */
  CHECK(q1(&d, 300.0f) == 224.0f); /* (1 - 2^-3) * 2^8: saturation */
  CHECK(q1(&d, 1e-9f) == 1e-9f);   /* near-zero passthrough */
  slQ_Format e = fmt(SLQ_MINIFLOAT_IEEE, 8, 0, 4);
  CHECK(q1(&e, 1.0f) == 1.0f);
  CHECK(q1(&e, 300.0f) == 288.0f);
  CHECK(q1(&e, 1000.0f) == 480.0f);      /* (2 - 2^-3) * 2^8, no infinities */
  CHECK(q1(&e, 0.001f) == 0.001953125f); /* smallest subnormal 2^-9 */
  CHECK(q1(&e, -1.1f) == -1.125f);
  slQ_Format l = fmt(SLQ_LOG, 4, 0, 0);
  CHECK(q1(&l, 0.1f) == 0.125f);
  CHECK(q1(&l, 3.0f) == 4.0f);
  CHECK(q1(&l, 0.0f) == 0.125f); /* log has no zero: +2^e_min */
  CHECK(q1(&l, -3.0f) == -4.0f);
}

static void test_laws_for_every_format(void) {
  slQ_Format formats[] = {fmt(SLQ_INTEGER, 6, 3, 0),        fmt(SLQ_MINIFLOAT_DENORM, 8, 0, 4),
                          fmt(SLQ_MINIFLOAT_IEEE, 8, 0, 3), fmt(SLQ_LOG, 5, 0, 0),
                          fmt(SLQ_MXINT8, 0, 0, 0),         fmt(SLQ_MXFP8_E4M3, 0, 0, 0),
                          fmt(SLQ_MXFP8_E5M2, 0, 0, 0),     fmt(SLQ_MXFP6_E3M2, 0, 0, 0),
                          fmt(SLQ_MXFP6_E2M3, 0, 0, 0),     fmt(SLQ_MXFP4_E2M1, 0, 0, 0)};
  float x[256], y[256], z[256];
  for (int i = 0; i < 256; i++) x[i] = (float)(i - 128) / 37.0f; /* sorted, mixed signs */
  for (size_t k = 0; k < sizeof formats / sizeof formats[0]; k++) {
    char err[128];
    CHECK(slQ_check(&formats[k], err, sizeof err) == 0);
    slQ_apply(&formats[k], x, y, 256, 256);
    slQ_apply(&formats[k], y, z, 256, 256);
    int idempotent = memcmp(y, z, sizeof y) == 0, monotone = 1;
    for (int i = 1; i < 256; i++) monotone &= y[i] >= y[i - 1];
    CHECK_MSG(idempotent, "%s is not idempotent", slQ_kind_name(formats[k].kind));
    /* MX blocks share a scale per 32 elements, so monotonicity holds within a block */
    if (formats[k].kind < SLQ_MXINT8) CHECK_MSG(monotone, "%s is not monotone", slQ_kind_name(formats[k].kind));
  }
  /* the error of fixed point shrinks as the width grows */
  double last = INFINITY;
  for (int w = 4; w <= 16; w += 2) {
    slQ_Format f = fmt(SLQ_INTEGER, w, w - 3, 0);
    slQ_apply(&f, x, y, 256, 256);
    double err = 0;
    for (int i = 0; i < 256; i++) err = fmax(err, fabs((double)x[i] - y[i]));
    CHECK_MSG(err < last, "width %d: error %g not below %g", w, err, last);
    last = err;
  }
}

static void test_bad_parameters(void) {
  char err[256];
  slQ_Format f = fmt(SLQ_INTEGER, 0, 0, 0);
  CHECK(slQ_check(&f, err, sizeof err) != 0);
  CHECK_CONTAINS(err, "width must be between 1 and 32");
  f = fmt(SLQ_INTEGER, 40, 2, 0);
  CHECK(slQ_check(&f, err, sizeof err) != 0);
  f = fmt(SLQ_INTEGER, 4, 6, 0);
  CHECK(slQ_check(&f, err, sizeof err) != 0);
  CHECK_CONTAINS(err, "frac=6 is larger than width=4");
  f = fmt(SLQ_MINIFLOAT_IEEE, 4, 0, 3);
  CHECK(slQ_check(&f, err, sizeof err) != 0);
  f = fmt(SLQ_MXINT8, 0, 0, 0);
  f.block = 0;
  CHECK(slQ_check(&f, err, sizeof err) != 0);
  /* a format read from a checkpoint reaches the shifts only through slQ_check */
  f = fmt(SLQ_BLOCK_MINIFLOAT, 40, 0, 3);
  f.bias_width = 4;
  CHECK(slQ_check(&f, err, sizeof err) != 0);
  CHECK_CONTAINS(err, "width 3..32");
  f = fmt(SLQ_BLOCK_MINIFLOAT, 16, 0, 12);
  f.bias_width = 4;
  CHECK(slQ_check(&f, err, sizeof err) != 0);
  f = fmt(SLQ_BLOCK_MINIFLOAT, 8, 0, 3);
  f.bias_width = 4, f.has_bias = 1, f.exponent_bias = 100000;
  CHECK(slQ_check(&f, err, sizeof err) != 0);
  CHECK_CONTAINS(err, "exponent_bias must be between -1024 and 1024");
}

static void test_mx_blocks(void) {
  slQ_Format f = fmt(SLQ_MXINT8, 0, 0, 0);
  float x[32], y[32];
  for (int i = 0; i < 32; i++) x[i] = (float)(i + 1);
  slQ_apply(&f, x, y, 32, 32);
  CHECK(y[31] == 32.0f && y[0] == 1.0f); /* amax 32: scale 2^5, step 0.5 */
  x[3] = 0.3f;
  slQ_apply(&f, x, y, 32, 32);
  CHECK(y[3] == 0.5f);
  x[5] = NAN;
  slQ_apply(&f, x, y, 32, 32);
  CHECK(isnan(y[0]) && isnan(y[31])); /* a non-finite element poisons its block */
  slQ_Format e4 = fmt(SLQ_MXFP8_E4M3, 0, 0, 0);
  float a[4] = {448, 1, -3, 0}, b[4];
  slQ_apply(&e4, a, b, 4, 4);
  CHECK(b[0] == 448.0f && b[1] == 1.0f && b[2] == -3.0f && b[3] == 0.0f);
}

static void test_mxint8_pack_and_bf16(void) {
  /* every mantissa and scale: the kernel's bf16 decode equals the exact value */
  int bad = 0;
  for (int e = 1; e <= 254; e++)
    for (int m = -127; m <= 127; m++) {
      float exact = ldexpf((float)m, e - 133);
      uint16_t got = slQ_mxint8_to_bf16((int8_t)m, (uint8_t)e);
      uint32_t u;
      memcpy(&u, &exact, sizeof u);
      if (got != (uint16_t)(u >> 16) && !(m == 0 && got == 0)) bad++;
    }
  CHECK_EQ_INT(bad, 0);
  struct {
    int8_t m;
    uint8_t e;
    uint16_t bits;
  } examples[] = {{64, 127, 0x3F80}, {127, 127, 0x3FFE}, {63, 127, 0x3F7C},  {32, 127, 0x3F00},
                  {1, 127, 0x3C80},  {0, 127, 0x0000},   {-96, 127, 0xBFC0}, {-16, 130, 0xC000}};
  for (int i = 0; i < 8; i++)
    CHECK_MSG(slQ_mxint8_to_bf16(examples[i].m, examples[i].e) == examples[i].bits, "m=%d e=%d", examples[i].m,
              examples[i].e);
  CHECK(slQ_mxint8_to_bf16(-128, 127) == 0x0000); /* the kernel's -128 quirk decodes to +0 */
  /* the command shows the region selector: 96 and -48 have bit 6 of |m| set and clear, 16 clear; the
  ** assembled pattern is the value when it is set, less the implicit 1 when it is clear */
  sl_State *S = sl_new();
  check_eval(S, "p = mxint8 ([1.5, -0.75, 0.25, 1.0] + [0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0]) block=16");
  CHECK_STREQ(check_eval(S, "[p.mantissas[0], p.mantissas[1], p.mantissas[2], p.mantissas[3]]"), "[96, -48, 16, 64]");
  CHECK_STREQ(check_eval(S, "[p.bit6[0], p.bit6[1], p.bit6[2], p.bit6[3]]"), "[true, false, false, true]");
  CHECK_STREQ(check_eval(S, "[p.assembled[0], p.assembled[1], p.assembled[2], p.assembled[3]]"),
              "[\"0x3FC0\", \"0xBFE0\", \"0x3FA0\", \"0x3F80\"]");
  CHECK_STREQ(check_eval(S, "[p.bf16_values[0], p.bf16_values[1], p.bf16_values[2], p.bf16_values[3]]"),
              "[1.5, -0.75, 0.25, 1]");
  sl_free(S);
  float x[64], y[64], z[64];
  for (int i = 0; i < 64; i++) x[i] = sinf((float)i) * (i < 32 ? 1.0f : 1e-3f);
  int8_t m[64];
  uint8_t s[2];
  char err[128];
  CHECK(slQ_mxint8_pack(x, 64, 32, m, s, err, sizeof err) == 0);
  slQ_mxint8_unpack(m, s, 64, 32, y);
  slQ_Format f = fmt(SLQ_MXINT8, 0, 0, 0);
  slQ_apply(&f, x, z, 64, 64);
  CHECK(memcmp(y, z, sizeof y) == 0); /* fake-quant equals the packed decode */
  for (int i = 0; i < 64; i++) CHECK(m[i] >= -127 && m[i] <= 127);
  CHECK(slQ_mxint8_pack(x, 40, 32, m, s, err, sizeof err) != 0);
  CHECK_CONTAINS(err, "do not divide into groups of 32");
}

static void test_pruning_is_exact(void) {
  float x[10] = {0.5f, -2, 0.1f, 3, -0.1f, 7, 0.01f, -4, 0.2f, 1};
  unsigned char mask[10];
  slQ_prune_l1(x, 10, 0.3, mask);
  int pruned = 0;
  for (int i = 0; i < 10; i++) pruned += !mask[i];
  CHECK_EQ_INT(pruned, 3);
  CHECK(!mask[6] && !mask[2] && !mask[4] && mask[0]); /* the smallest magnitudes; 0.1 ties: lower index first */
  slQ_prune_random(1000, 0.25, 7, (unsigned char[1000]){0});
  unsigned char big[1000];
  slQ_prune_random(1000, 0.25, 7, big);
  pruned = 0;
  for (int i = 0; i < 1000; i++) pruned += !big[i];
  CHECK_EQ_INT(pruned, 250);
  slQ_prune_l1(x, 10, 0.0, mask);
  for (int i = 0; i < 10; i++) CHECK(mask[i]);
  slQ_prune_l1(x, 10, 1.0, mask);
  for (int i = 0; i < 10; i++) CHECK(!mask[i]);
}

static void test_qat_and_masks_survive_training(void) {
  char err[256];
  slM_Dataset *d = slM_synthetic(800, 200, 16, 4, 0.9, 3);
  slM_MlpSpec s = {16, 4, {32}, 1, OP_RELU, 0.0f};
  slM_Graph *g = slM_mlp(&s, 1, 0, err, sizeof err);
  slM_TrainConfig c = {3, 32, 0.05, 0.9, 0, SLM_SGD, SLM_CONSTANT, 0, 1};
  slM_EpochStats st[3];
  slM_train(g, d, &c, NULL, st);
  double float_acc = st[2].test_accuracy;
  /* QAT at 8 bits stays within a point of float */
  slM_Graph *q = slM_graph_copy(g, 1);
  slQ_Format f8 = fmt(SLQ_INTEGER, 8, 4, 0);
  for (int i = 0; i < q->n; i++)
    if (q->nodes[i].op == OP_LINEAR) {
      q->nodes[i].comp.weight = slQ_transform(&f8, (size_t)q->nodes[i].params[0]->value->shape[1]);
      q->nodes[i].comp.data_in = slQ_transform(&f8, (size_t)q->nodes[i].params[0]->value->shape[1]);
    }
  slM_TrainConfig qc = {1, 32, 0.01, 0.9, 0, SLM_SGD, SLM_CONSTANT, 0, 2};
  slM_train(q, d, &qc, NULL, st);
  CHECK_MSG(st[0].test_accuracy >= float_acc - 0.01, "QAT %.3f vs float %.3f", st[0].test_accuracy, float_acc);
  /* pruned weights stay exactly zero through fine-tuning */
  slM_Graph *p = slM_graph_copy(g, 1);
  int fc = slM_find_node(p, "fc1");
  slM_Tensor *w = p->nodes[fc].params[0]->value;
  p->nodes[fc].comp.weight_mask = malloc(w->size);
  slQ_prune_l1(w->data, w->size, 0.7, p->nodes[fc].comp.weight_mask);
  for (size_t i = 0; i < w->size; i++)
    if (!p->nodes[fc].comp.weight_mask[i]) w->data[i] = 0;
  slM_train(p, d, &qc, NULL, st);
  int zero = 1;
  for (size_t i = 0; i < w->size; i++)
    if (!p->nodes[fc].comp.weight_mask[i]) zero &= w->data[i] == 0.0f;
  CHECK(zero);
  slM_graph_free(g);
  slM_graph_free(q);
  slM_graph_free(p);
  slM_dataset_free(d);
}

static void test_optimised_equals_reference(void) {
  size_t n = 4096 * 4;
  float *x = malloc(n * sizeof *x), *a = malloc(n * sizeof *a), *b = malloc(n * sizeof *b);
  uint64_t s = 12345;
  for (size_t i = 0; i < n; i++) {
    s = s * 6364136223846793005ull + 1442695040888963407ull;
    double u = (double)(s >> 11) / 9007199254740992.0;
    x[i] = (float)((u - 0.5) * pow(2.0, (double)(i % 40) - 20)); /* magnitudes 2^-21 .. 2^19 */
  }
  x[7] = 0.03125f, x[8] = -0.09375f, x[9] = 1e30f, x[10] = -0.0f; /* ties, saturation, signed zero */
  int widths[] = {2, 4, 8, 12, 16, 24};
  for (int k = 0; k < 6; k++) {
    slQ_Format f = fmt(SLQ_INTEGER, widths[k], widths[k] / 2, 0);
    slQ_apply(&f, x, a, n, 4096);
    slQ_apply_reference(&f, x, b, n, 4096);
    CHECK_MSG(memcmp(a, b, n * sizeof *a) == 0, "integer width %d differs from the reference", widths[k]);
  }
  slQ_Format m = fmt(SLQ_MXINT8, 0, 0, 0);
  for (int blocks = 16; blocks <= 32; blocks += 16) {
    m.block = blocks;
    slQ_apply(&m, x, a, n, 4096);
    slQ_apply_reference(&m, x, b, n, 4096);
    CHECK_MSG(memcmp(a, b, n * sizeof *a) == 0, "mxint8 block %d differs from the reference", blocks);
  }
  free(x), free(a), free(b);
}

static void apply_list(slQ_Format f, const float *x, float *y, size_t n, size_t row) { slQ_apply(&f, x, y, n, row); }

static void test_block_binary_ternary(void) {
  float y[8];
  slQ_Format f = fmt(SLQ_BLOCK_FP, 4, 0, 8);
  f.block = 4;
  float x[8] = {0.5f, -0.25f, 3.0f, 0.0625f, 0, 1, 2, 4};
  apply_list(f, x, y, 8, 8);
  float want_fp[8] = {0.5f, -0.0f, 3.0f, 0.0f, 0.0f, 1.0f, 2.0f, 3.5f}; /* 4 = a power-of-two maximum: 0.875 * 4 */
  CHECK(memcmp(y, want_fp, sizeof want_fp) == 0);
  CHECK(signbit(y[1])); /* -0.25 rounds (tie to even) to -0 */
  slQ_Format bm = fmt(SLQ_BLOCK_MINIFLOAT, 8, 0, 4);
  bm.block = 4, bm.bias_width = 4;
  apply_list(bm, x, y, 4, 4);
  CHECK(y[0] == 0.5f && y[1] == -0.25f && y[2] == 3.0f && y[3] == 0.0f);
  slQ_Format bl = fmt(SLQ_BLOCK_LOG, 4, 0, 0);
  bl.block = 4, bl.bias_width = 4;
  apply_list(bl, x, y, 4, 4);
  CHECK(y[0] == 0.5f && y[1] == -0.25f && y[2] == 4.0f && y[3] == 0.0625f);
  slQ_Format b = fmt(SLQ_BINARY, 0, 0, 0);
  b.bipolar = 0;
  float m[4] = {0.5f, -0.25f, 3.0f, 0.0f};
  apply_list(b, m, y, 4, 2); /* two rows, scaled by each row's mean |x| */
  CHECK(y[0] == 0.375f && y[1] == 0.0f && y[2] == 1.5f && y[3] == 0.0f);
  b.bipolar = 1;
  apply_list(b, x, y, 4, 4);
  CHECK(y[0] == 1 && y[1] == -1 && y[2] == 1 && y[3] == 1);
  slQ_Format t = fmt(SLQ_TERNARY, 0, 0, 0);
  t.scaled = 1;
  apply_list(t, x, y, 4, 4);
  CHECK(y[0] == 0 && y[1] == 0 && y[2] == 3.0f && y[3] == 0);
  float zeros[4] = {0}, out[4];
  apply_list(t, zeros, out, 4, 4);
  CHECK(out[0] == 0 && out[3] == 0); /* an all-zero row stays zero, not NaN */
  slQ_Format r = fmt(SLQ_BINARY_RESIDUAL, 0, 0, 0);
  r.levels = 2;
  apply_list(r, x, y, 4, 4);
  CHECK_NEAR(y[0], 1.0 / 3, 1e-7);
  CHECK_NEAR(y[2], 1.0, 1e-7);
  CHECK(!slQ_has_gradient(SLQ_BLOCK_MINIFLOAT) && !slQ_has_gradient(SLQ_BINARY_RESIDUAL) &&
        slQ_has_gradient(SLQ_BLOCK_FP));
  char err[128];
  r.levels = 4;
  CHECK(slQ_check(&r, err, sizeof err) != 0);
  CHECK_CONTAINS(err, "levels must be 1, 2 or 3");
}

/* block_fp's 8-bit shared exponent is the default only when no width is
** given: weight_exponent_width=4 was thrown away (8.5 bits, not 8.25) */
static void test_block_fp_operand_exponent_width(void) {
  sl_State *S = sl_new();
  check_eval(S, "d = dataset synthetic train=64 test=16 features=32 classes=3\nm = model mlp data=d hidden=[32]");
  CHECK_STREQ(check_eval(S, "q = quantize_model m format=block_fp weight_exponent_width=4 weight_width=8\n"
                            "round((model_size q).bits_per_param, 2)"),
              "8.26");
  CHECK_STREQ(check_eval(S, "q = quantize_model m format=block_fp weight_width=8\n"
                            "round((model_size q).bits_per_param, 2)"),
              "8.51");
  /* numbers in messages as the language prints them: not %g's 4.2949673e+09 */
  CHECK_CONTAINS(check_eval(S, "p = prune m sparsity=0.5 seed=4294967296"), "got 4294967296");
  CHECK_CONTAINS(check_eval(S, "p = prune m sparsity=0.5 seed=1.5"), "got 1.5");
  sl_free(S);
}

int main(void) {
  RUN(test_block_fp_operand_exponent_width);
  RUN(test_block_binary_ternary);
  RUN(test_optimised_equals_reference);
  RUN(test_integer_worked_example);
  RUN(test_minifloats);
  RUN(test_laws_for_every_format);
  RUN(test_bad_parameters);
  RUN(test_mx_blocks);
  RUN(test_mxint8_pack_and_bf16);
  RUN(test_pruning_is_exact);
  RUN(test_qat_and_masks_survive_training);
  return check_summary();
}
