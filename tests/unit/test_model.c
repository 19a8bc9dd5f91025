/* test_model.c - tensors and graphs: every backward pass against finite
** differences, the IDX loader, passes, tracing, LoRA, training. */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <zlib.h>

#include "check.h"
#include "graph/model.h"
#include "graph/ops.h"
#include "graph/passes.h"
#include "graph/precision.h"
#include "graph/train.h"
#include "kernels/round.h"

/* the loss of the graph on a fixed batch, with dropout's random numbers replayed */
static double loss_of(slM_Graph *g, const float *x, const uint8_t *y, int batch, slM_Rng rng) {
  g->rng = rng;
  slM_Tensor *logits = slM_forward(g, x, y, batch, 1);
  for (int i = 0; i < g->n; i++)
    if (g->nodes[i].op == OP_CROSS_ENTROPY) return g->nodes[i].out->data[0];
  double loss = 0;
  int C = logits->shape[1];
  for (int b = 0; b < batch; b++) {
    const float *row = logits->data + (size_t)b * C;
    double m = row[0], s = 0;
    for (int c = 1; c < C; c++) m = fmax(m, row[c]);
    for (int c = 0; c < C; c++) s += exp(row[c] - m);
    loss -= row[y[b]] - m - log(s);
  }
  return loss / batch;
}

/* compares every parameter gradient with a central difference */
static void check_gradients(slM_Graph *g, const char *what) {
  int batch = 3, F = g->features;
  float *x = malloc((size_t)batch * F * sizeof *x);
  uint8_t y[3] = {0, 1, 2};
  slM_Rng r;
  slM_rng_seed(&r, 7);
  for (int i = 0; i < batch * F; i++) x[i] = (float)slM_rng_normal(&r);
  /* zero biases put ReLU exactly on its kink when dropout zeroes a row, where
  ** a finite difference sees half a slope: move every parameter off zero */
  for (int i = 0; i < g->n; i++)
    for (int k = 0; k < g->nodes[i].nparams; k++)
      for (size_t j = 0; j < g->nodes[i].params[k]->value->size; j++)
        g->nodes[i].params[k]->value->data[j] += (float)(0.1 * slM_rng_normal(&r));
  slM_Rng dropout_rng = g->rng;
  g->rng = dropout_rng;
  slM_forward(g, x, y, batch, 1);
  slM_zero_grads(g);
  slM_backward(g, y, batch);
  int checked = 0, bad = 0, kinks = 0;
  double worst = 0;
  for (int i = 0; i < g->n; i++)
    for (int k = 0; k < g->nodes[i].nparams; k++) {
      slM_Param *p = g->nodes[i].params[k];
      if (p->frozen) continue;
      for (size_t j = 0; j < p->value->size; j++) {
        float saved = p->value->data[j];
        double numeric[2];
        for (int s = 0; s < 2; s++) {
          double h = s ? 5e-3 : 1e-2;
          p->value->data[j] = saved + (float)h;
          double up = loss_of(g, x, y, batch, dropout_rng);
          p->value->data[j] = saved - (float)h;
          double down = loss_of(g, x, y, batch, dropout_rng);
          numeric[s] = (up - down) / (2 * h);
        }
        p->value->data[j] = saved;
        /* two step sizes that disagree mean the step crossed a ReLU kink:
        ** no finite difference is valid there, so the entry is skipped */
        if (fabs(numeric[0] - numeric[1]) > 0.1 * fmax(fabs(numeric[0]), fabs(numeric[1])) + 1e-4) {
          kinks++;
          continue;
        }
        double analytic = p->grad->data[j];
        double err = fabs(numeric[1] - analytic) / fmax(1e-2, fabs(numeric[1]) + fabs(analytic));
        worst = fmax(worst, err);
        if (err > 0.05) {
          if (bad++ < 3)
            check_fail(__FILE__, __LINE__, "%s: %s[%zu]: analytic %.6g, numeric %.6g", what, p->name, j, analytic,
                       numeric[1]);
        }
        checked++;
      }
    }
  CHECK_MSG(kinks * 10 < checked, "%s: %d of %d entries sat on a kink", what, kinks, checked + kinks);
  CHECK_MSG(checked > 20, "%s: only %d gradients checked", what, checked);
  printf("  %s: %d gradients, worst relative error %.2g (%d on a kink skipped)\n", what, checked, worst, kinks);
  slM_release_activations(g);
  free(x);
}

static void test_mlp_gradients_each_activation(void) {
  int acts[3] = {OP_RELU, OP_GELU, OP_TANH};
  const char *names[3] = {"mlp relu", "mlp gelu", "mlp tanh"};
  char err[256];
  for (int a = 0; a < 3; a++) {
    slM_MlpSpec s = {6, 3, {5, 4}, 2, acts[a], 0.3f};
    slM_Graph *g = slM_mlp(&s, 11, a == 1, err, sizeof err); /* gelu one traced with its loss node */
    CHECK(g != NULL);
    if (g) check_gradients(g, names[a]);
    slM_graph_free(g);
  }
}

static void test_transformer_gradients(void) {
  char err[256];
  /* a 4x4 image in 2x2 patches: 4 tokens; every attention op, layer norm, residuals, mask, pooler */
  slM_TransformerSpec s = {4, 4, 3, 2, 1, 4, 2, 2, 0.2f};
  slM_Graph *g = slM_transformer(&s, 5, 1, 1, err, sizeof err);
  CHECK_MSG(g != NULL, "%s", err);
  if (!g) return;
  check_gradients(g, "transformer with mask and loss");
  slM_Graph *l = slM_graph_copy(g, 1);
  CHECK(slM_add_lora(l, 2, 4, NULL, 0, 3, err, sizeof err) > 0);
  /* B starts at zero: perturb it so the adapters' gradients are not trivially zero */
  for (int i = 0; i < l->n; i++)
    if (strstr(l->nodes[i].name, "lora_B"))
      for (size_t j = 0; j < l->nodes[i].params[0]->value->size; j++) l->nodes[i].params[0]->value->data[j] = 0.3f;
  check_gradients(l, "transformer with LoRA adapters");
  slM_graph_free(l);
  slM_graph_free(g);
}

static void write_gz(const char *path, const unsigned char *data, size_t n) {
  gzFile f = gzopen(path, "wb");
  gzwrite(f, data, (unsigned)n);
  gzclose(f);
}

static void test_idx_loader(void) {
  char dir[] = "/tmp/syslab-idx-XXXXXX";
  CHECK(mkdtemp(dir) != NULL);
  char path[256];
  int n = 3;
  size_t isz = 16 + (size_t)n * 784;
  unsigned char *img = calloc(isz, 1);
  unsigned char hdr[16] = {0, 0, 8, 3, 0, 0, 0, (unsigned char)n, 0, 0, 0, 28, 0, 0, 0, 28};
  memcpy(img, hdr, 16);
  for (int i = 0; i < n; i++) img[16 + (size_t)i * 784 + 10] = (unsigned char)(100 * i);
  unsigned char lab[8 + 3] = {0, 0, 8, 1, 0, 0, 0, 3, 7, 2, 9};
  const char *splits[2] = {"train", "t10k"};
  for (int s = 0; s < 2; s++) {
    snprintf(path, sizeof path, "%s/%s-images-idx3-ubyte.gz", dir, splits[s]);
    write_gz(path, img, isz);
    snprintf(path, sizeof path, "%s/%s-labels-idx1-ubyte.gz", dir, splits[s]);
    write_gz(path, lab, sizeof lab);
  }
  char err[512];
  slM_Dataset *d = slM_fashion_mnist(dir, 0, 2, err, sizeof err);
  CHECK_MSG(d != NULL, "%s", err);
  if (d) {
    CHECK_EQ_INT(d->ntrain, 3);
    CHECK_EQ_INT(d->ntest, 2);
    CHECK_EQ_INT(d->train_y[0], 7);
    CHECK_EQ_INT(d->train_y[2], 9);
    CHECK(d->train_x[784 + 10] > d->train_x[10]); /* brighter pixel, larger value after normalisation */
    slM_dataset_free(d);
  }
  /* truncated images */
  snprintf(path, sizeof path, "%s/train-images-idx3-ubyte.gz", dir);
  write_gz(path, img, isz - 100);
  CHECK(slM_fashion_mnist(dir, 0, 0, err, sizeof err) == NULL);
  CHECK_CONTAINS(err, "truncated");
  CHECK_CONTAINS(err, "dataset-fashion-mnist");
  /* wrong magic */
  img[2] = 9;
  write_gz(path, img, isz);
  CHECK(slM_fashion_mnist(dir, 0, 0, err, sizeof err) == NULL);
  CHECK_CONTAINS(err, "element type");
  /* missing */
  unlink(path);
  CHECK(slM_fashion_mnist(dir, 0, 0, err, sizeof err) == NULL);
  CHECK_CONTAINS(err, "cannot open");
  CHECK_CONTAINS(err, "install the Debian package dataset-fashion-mnist");
  /* a corrupt gzip stream */
  FILE *f = fopen(path, "wb");
  fwrite("\x1f\x8b\x08\x00garbage-garbage", 1, 19, f);
  fclose(f);
  CHECK(slM_fashion_mnist(dir, 0, 0, err, sizeof err) == NULL);
  for (int s = 0; s < 2; s++) {
    snprintf(path, sizeof path, "%s/%s-images-idx3-ubyte.gz", dir, splits[s]);
    unlink(path);
    snprintf(path, sizeof path, "%s/%s-labels-idx1-ubyte.gz", dir, splits[s]);
    unlink(path);
  }
  rmdir(dir);
  free(img);
}

static int count_op(const slM_Graph *g, slM_Op op) {
  int c = 0;
  for (int i = 0; i < g->n; i++) c += g->nodes[i].op == op;
  return c;
}

static void test_tracing_sensitivity(void) {
  char err[256];
  slM_TransformerSpec s = {28, 28, 10, 7, 2, 16, 2, 2, 0.1f};
  slM_Graph *plain = slM_transformer(&s, 1, 0, 0, err, sizeof err);
  slM_Graph *with_labels = slM_capture(plain, 1, 0, err, sizeof err);
  slM_Graph *with_mask = slM_capture(plain, 0, 1, err, sizeof err);
  CHECK(plain && with_labels && with_mask);
  CHECK_EQ_INT(count_op(plain, OP_CROSS_ENTROPY), 0);
  CHECK_EQ_INT(count_op(plain, OP_LABELS), 0);
  CHECK_EQ_INT(count_op(with_labels, OP_CROSS_ENTROPY), 1);
  CHECK_EQ_INT(count_op(with_labels, OP_LABELS), 1);
  CHECK_EQ_INT(count_op(plain, OP_MASK_FILL), 0);
  CHECK_EQ_INT(count_op(with_mask, OP_MASK_FILL), 2); /* one per encoder layer */
  CHECK_EQ_INT(count_op(with_mask, OP_MASK), 1);
  CHECK_EQ_INT(with_labels->n, plain->n + 2);
  CHECK_EQ_INT(with_mask->n, plain->n + 3);
  /* the capture shares the weights */
  CHECK(with_labels->nodes[slM_find_node(with_labels, "classifier")].params[0] ==
        plain->nodes[slM_find_node(plain, "classifier")].params[0]);
  CHECK(slM_verify(with_mask, err, sizeof err) == 0);
  slM_graph_free(plain);
  slM_graph_free(with_labels);
  slM_graph_free(with_mask);
  s.heads = 3;
  CHECK(slM_transformer(&s, 1, 0, 0, err, sizeof err) == NULL);
  CHECK_CONTAINS(err, "heads=3 does not divide width=16");
}

static void test_remove_dropout_keeps_outputs(void) {
  char err[256];
  slM_TransformerSpec s = {28, 28, 10, 7, 1, 16, 2, 2, 0.3f};
  slM_Graph *g = slM_transformer(&s, 2, 0, 0, err, sizeof err);
  slM_Graph *c = slM_graph_copy(g, 0);
  int dropouts = count_op(g, OP_DROPOUT);
  CHECK_EQ_INT(slM_remove_dropout(c), dropouts);
  CHECK_EQ_INT(count_op(c, OP_DROPOUT), 0);
  CHECK(slM_verify(c, err, sizeof err) == 0);
  float x[2 * 784];
  uint8_t y[2] = {1, 2};
  slM_Rng r;
  slM_rng_seed(&r, 3);
  for (int i = 0; i < 2 * 784; i++) x[i] = (float)slM_rng_normal(&r);
  slM_Tensor *a = slM_tensor_copy(slM_forward(g, x, y, 2, 0));
  slM_Tensor *b = slM_forward(c, x, y, 2, 0);
  CHECK(memcmp(a->data, b->data, a->size * sizeof(float)) == 0); /* bit for bit */
  slM_tensor_free(a);
  slM_graph_free(g);
  slM_graph_free(c);
}

static void test_lora_freezes_the_base(void) {
  char err[256];
  slM_Dataset *d = slM_synthetic(256, 64, 16, 3, 0.7, 4);
  slM_TransformerSpec s = {4, 4, 3, 2, 1, 8, 2, 2, 0.0f};
  slM_Graph *g = slM_transformer(&s, 9, 0, 0, err, sizeof err);
  slM_Graph *l = slM_graph_copy(g, 1);
  size_t before_trainable, total;
  slM_param_counts(l, &before_trainable, &total);
  CHECK(slM_add_lora(l, 2, 4, (const char *[]){"attention_query", "attention_value"}, 2, 1, err, sizeof err) == 2);
  size_t trainable;
  slM_param_counts(l, &trainable, &total);
  CHECK_EQ_INT(trainable, 2 * (2 * 8 + 8 * 2));
  slM_TrainConfig c = {2, 32, 0.01, 0.9, 0, SLM_ADAMW, SLM_CONSTANT, 0, 1};
  slM_EpochStats stats[2];
  CHECK_EQ_INT(slM_train(l, d, &c, NULL, stats), 2);
  int identical = 1, adapters_moved = 0;
  for (int i = 0; i < l->n; i++) {
    int j = slM_find_node(g, l->nodes[i].name);
    for (int k = 0; k < l->nodes[i].nparams; k++) {
      slM_Tensor *v = l->nodes[i].params[k]->value;
      if (j >= 0) identical &= memcmp(v->data, g->nodes[j].params[k]->value->data, v->size * sizeof(float)) == 0;
      else if (strstr(l->nodes[i].name, "lora_B"))
        for (size_t e = 0; e < v->size; e++) adapters_moved |= v->data[e] != 0;
    }
  }
  CHECK(identical);
  CHECK(adapters_moved);
  slM_graph_free(g);
  slM_graph_free(l);
  slM_dataset_free(d);
}

static void test_training_is_deterministic_and_learns(void) {
  char err[256];
  slM_Dataset *d = slM_synthetic(600, 200, 16, 4, 0.8, 2);
  double losses[2][3];
  for (int run = 0; run < 2; run++) {
    slM_TransformerSpec s = {4, 4, 4, 2, 1, 8, 2, 2, 0.1f};
    slM_Graph *g = slM_transformer(&s, 3, 0, 0, err, sizeof err);
    slM_TrainConfig c = {3, 32, 0.01, 0.9, 0.01, SLM_ADAMW, SLM_COSINE, 5, 42};
    slM_EpochStats stats[3];
    CHECK_EQ_INT(slM_train(g, d, &c, NULL, stats), 3);
    for (int e = 0; e < 3; e++) losses[run][e] = stats[e].loss;
    if (run == 0) CHECK_MSG(stats[2].test_accuracy > 0.6, "transformer test accuracy %.3f", stats[2].test_accuracy);
    slM_graph_free(g);
  }
  CHECK(memcmp(losses[0], losses[1], sizeof losses[0]) == 0);
  CHECK(losses[0][2] < losses[0][0]);
  slM_dataset_free(d);
}

static void test_fashion_mnist_mlp(void) {
  char err[512];
  slM_Dataset *d = slM_fashion_mnist("/usr/share/datasets/fashion-mnist", 5000, 1000, err, sizeof err);
  if (!d) {
    check_skip("test_fashion_mnist_mlp", err);
    return;
  }
  slM_MlpSpec s = {784, 10, {128}, 1, OP_RELU, 0.0f};
  slM_Graph *g = slM_mlp(&s, 0, 0, err, sizeof err);
  slM_TrainConfig c = {2, 64, 0.05, 0.9, 0, SLM_SGD, SLM_CONSTANT, 0, 0};
  slM_EpochStats stats[2];
  slM_train(g, d, &c, NULL, stats);
  CHECK_MSG(stats[1].test_accuracy > 0.75, "accuracy %.3f", stats[1].test_accuracy); /* chance is 0.1 */
  printf("  fashion-mnist mlp: test accuracy %.4f after 2 epochs on 5000 images\n", stats[1].test_accuracy);
  slM_graph_free(g);
  slM_dataset_free(d);
}

static void test_memory_counter(void) {
  size_t before = slM_mem_live();
  int shape[2] = {100, 10};
  slM_Tensor *t = slM_tensor_new(2, shape);
  CHECK_EQ_INT(slM_mem_live() - before, 4000);
  CHECK(slM_mem_peak() >= slM_mem_live());
  slM_tensor_free(t);
  CHECK_EQ_INT(slM_mem_live(), before);
}

/* The operator table: every operator declared once, with both CPU kernels;
** the names graphs, checkpoints and metadata show; and the records driving
** verification (arity, parameters) and mixed precision. */
static void test_operator_table(void) {
  CHECK_STREQ(slM_ops_check(), "");
  static const char *const names[SLM_NUM_OPS] = {"x",
                                                 "labels",
                                                 "attention_mask",
                                                 "linear",
                                                 "relu",
                                                 "gelu",
                                                 "tanh",
                                                 "dropout",
                                                 "layer_norm",
                                                 "patchify",
                                                 "add",
                                                 "matmul_qk",
                                                 "masked_fill",
                                                 "softmax",
                                                 "matmul_pv",
                                                 "scaled_dot_product_attention",
                                                 "mean",
                                                 "mul",
                                                 "cross_entropy",
                                                 "output",
                                                 "tokens",
                                                 "targets",
                                                 "embedding",
                                                 "rms_norm",
                                                 "rope",
                                                 "swiglu",
                                                 "causal_mask",
                                                 "token_cross_entropy",
                                                 "linear_act",
                                                 "add_layer_norm",
                                                 "masked_softmax"};
  for (int op = 0; op < SLM_NUM_OPS; op++) {
    CHECK_STREQ(slM_op_name((slM_Op)op), names[op]);
    CHECK(slM_op((slM_Op)op)->op == (slM_Op)op);
    /* the GPU runs every operator but the fusion pass's (the fused attention node included) */
    const slM_OpImpl *cuda = &slM_op((slM_Op)op)->impl[SLM_CUDA];
    int fused = op == OP_LINEAR_ACT || op == OP_ADD_NORM || op == OP_MASKED_SOFTMAX;
    CHECK_MSG((cuda->forward == NULL) == fused && (cuda->backward == NULL) == fused, "%s: CUDA slot", names[op]);
  }
  CHECK(slM_op(OP_LINEAR)->flags & SLM_OP_PRODUCT);
  CHECK(slM_op(OP_TOKEN_CE)->flags & SLM_OP_LOSS);
  CHECK(!(slM_op(OP_SOFTMAX)->flags & SLM_OP_PRODUCT));

  /* verification reads arity and parameters from the records */
  char err[256];
  slM_MlpSpec s = {16, 3, {8}, 1, OP_RELU, 0};
  slM_Graph *g = slM_mlp(&s, 1, 1, err, sizeof err);
  CHECK(g && slM_verify(g, err, sizeof err) == 0);
  int fc = slM_find_node(g, "fc1");
  slM_Param *w = g->nodes[fc].params[0];
  g->nodes[fc].nparams = 0;
  CHECK(slM_verify(g, err, sizeof err) != 0);
  CHECK_CONTAINS(err, "fc1 lacks its parameters");
  g->nodes[fc].params[0] = w, g->nodes[fc].nparams = 2;
  int relu = slM_find_node(g, "relu_1");
  g->nodes[relu].ninputs = 2, g->nodes[relu].inputs[1] = 0;
  CHECK(slM_verify(g, err, sizeof err) != 0);
  CHECK_CONTAINS(err, "relu_1 (relu) has 2 inputs");
  g->nodes[relu].ninputs = 1;
  CHECK(slM_verify(g, err, sizeof err) == 0);
  /* FLOPs and bytes from the shape rule: fc1 is 16 -> 8 with a bias */
  CHECK_NEAR(g->nodes[fc].flops, 2.0 * 16 * 8, 0);
  CHECK_NEAR(g->nodes[fc].bytes, 4.0 * (16 + 8 + 16 * 8 + 8), 0);

  /* mixed precision: the product low, the activation the widest of its input, the loss float32 */
  g->precision = SLM_BF16;
  int *dt = malloc((size_t)g->n * sizeof *dt);
  slM_dtypes(g, dt);
  CHECK_EQ_INT(dt[fc], SLM_BF16);
  CHECK_EQ_INT(dt[relu], SLM_BF16);
  CHECK_EQ_INT(dt[slM_find_node(g, "labels")], SLM_INT64);
  CHECK_EQ_INT(dt[slM_find_node(g, "loss")], SLM_FP32);
  free(dt);
  slM_graph_free(g);
}

/* Under bf16 every node whose dtype is bf16 holds bf16 values after a
** training forward, whether the node rounded as it wrote (the elementwise
** operators, the per-head products, a native product's store) or
** precision.c rounded it after; and those that round as they write skip
** the pass after them. */
static void test_bf16_outputs_rounded_as_written(void) {
  char err[256];
  slM_TransformerSpec s = {8, 8, 3, 4, 2, 16, 2, 2, 0.25f, 0};
  slM_Graph *g = slM_transformer(&s, 9, 1, 0, err, sizeof err);
  CHECK_MSG(g != NULL, "%s", err);
  if (!g) return;
  g->precision = SLM_BF16;
  int batch = 5, F = g->features;
  float *x = malloc(sizeof(float) * (size_t)batch * F);
  uint8_t y[5] = {0, 1, 2, 1, 0};
  for (int i = 0; i < batch * F; i++) x[i] = (float)((i * 37) % 101) / 101.0f - 0.3f;
  slM_forward(g, x, y, batch, 1);
  int *dt = malloc((size_t)g->n * sizeof *dt);
  slM_dtypes(g, dt);
  int self = 0;
  for (int i = 0; i < g->n; i++) {
    slM_Node *n = &g->nodes[i];
    if (dt[i] != SLM_BF16 || !n->out) continue;
    size_t off = 0;
    for (size_t j = 0; j < n->out->size; j++)
      off += slM_tensor_at(n->out, j) != slK_round_bf16(slM_tensor_at(n->out, j));
    CHECK_MSG(off == 0, "%s (%s): %zu values are not bfloat16", n->name, slM_op(n->op)->name, off);
    /* kept in 16 bits where its operator writes them, except what the caller reads (the logits) */
    int half = (slM_op(n->op)->flags & SLM_OP_HALF) && i != slM_logits_node(g);
    CHECK_MSG(half == (n->out->half != NULL), "%s (%s) is stored in %s", n->name, slM_op(n->op)->name,
              n->out->half ? "16 bits" : "float32");
    int by_itself =
        n->op == OP_GELU || n->op == OP_DROPOUT || n->op == OP_ADD || n->op == OP_SCORES || n->op == OP_CONTEXT;
    if (by_itself)
      CHECK_MSG(n->rounded, "%s (%s) left its rounding to a pass of its own", n->name, slM_op(n->op)->name);
    self += n->rounded;
  }
  CHECK(self >= 6);
  free(dt), free(x);
  slM_graph_free(g);
}

int main(void) {
  RUN(test_operator_table);
  RUN(test_bf16_outputs_rounded_as_written);
  RUN(test_memory_counter);
  RUN(test_mlp_gradients_each_activation);
  RUN(test_transformer_gradients);
  RUN(test_idx_loader);
  RUN(test_tracing_sensitivity);
  RUN(test_remove_dropout_keeps_outputs);
  RUN(test_lora_freezes_the_base);
  RUN(test_training_is_deterministic_and_learns);
  RUN(test_fashion_mnist_mlp);
  return check_summary();
}
