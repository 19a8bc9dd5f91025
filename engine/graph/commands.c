/*
** commands.c - the graph domain's commands for data sets, models as graphs, passes, training
** and LoRA (the model as a value of the language: model_value.c).
**
** Transform commands return a new model and leave their argument as it was:
** remove_dropout and capture share the parameters with it (as a traced
** graph shares its module's weights), copy and lora own new ones, so that
** fine-tuning a copy never touches the original.
*/
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kernels/kernels.h"
#include "table/table.h"
#include "devices.h"
#include "kernels/device.h"
#include "ops.h"
#include "passes.h"
#include "precision.h"
#include "train.h"
#include "trainrun.h"

#define FASHION_MNIST_DIR "/usr/share/datasets/fashion-mnist"
#define FASHION_MNIST_TRAIN 60000
#define FASHION_MNIST_TEST 10000

static slM_Graph *arg_model(sl_Call *call, const char *name) { return sl_arg_object(call, name, &slM_model_class); }
static slM_Dataset *arg_data(sl_Call *call, const char *name) { return sl_arg_object(call, name, &slM_dataset_class); }

/* ------------------------------------------------------------- data sets */

static const char *const dataset_names[] = {"fashion_mnist", "synthetic", NULL};

static int cmd_dataset(sl_Call *call, sl_Value *result) {
  const char *name = sl_arg_string(call, "name");
  double ntrain = sl_arg_number(call, "train"), ntest = sl_arg_number(call, "test");
  if (ntrain < 0 || ntest < 0) return sl_arg_error(call, ntrain < 0 ? "train" : "test", "must be 0 (all) or more");
  slM_Dataset *d;
  if (strcmp(name, "fashion_mnist") == 0) {
    char err[1024];
    if (ntrain > FASHION_MNIST_TRAIN || ntest > FASHION_MNIST_TEST)
      return sl_arg_error(call, ntrain > FASHION_MNIST_TRAIN ? "train" : "test",
                          "Fashion-MNIST has %d training and %d test items; ask for at most that many (0 = all)",
                          FASHION_MNIST_TRAIN, FASHION_MNIST_TEST);
    const char *dir = sl_arg_given(call, "path") ? sl_arg_string(call, "path") : FASHION_MNIST_DIR;
    d = slM_fashion_mnist(dir, (size_t)ntrain, (size_t)ntest, err, sizeof err);
    if (!d && sl_interrupted()) return sl_interrupted_error(call);
    if (!d && sl_arg_given(call, "path")) { /* a folder of the user's: the Debian package is no remedy */
      char *hint = strstr(err, ": install the Debian package");
      if (hint) *hint = '\0';
      return sl_arg_error(call, "path", "%s (the folder must hold Fashion-MNIST's four .gz IDX files)", err);
    }
    if (!d) return sl_error(call, "%s", err);
  } else {
    double features = sl_arg_number(call, "features"), classes = sl_arg_number(call, "classes");
    double spread = sl_arg_number(call, "spread");
    if (features < 1 || features > 100000) return sl_arg_error(call, "features", "must be between 1 and 100000");
    if (classes < 2 || classes > 255) return sl_arg_error(call, "classes", "must be between 2 and 255");
    if (ntrain < 1) return sl_arg_error(call, "train", "a synthetic set needs at least one training item");
    if (!(spread >= 0 && spread <= 1e6)) return sl_arg_error(call, "spread", "must be between 0 and 1e6");
    if (sl_memory_check(call, "train", (ntrain + ntest) * (features * 4 + 1), "this data set") != 0) return -1;
    d = slM_synthetic((size_t)ntrain, (size_t)ntest, (int)features, (int)classes, spread,
                      (uint64_t)sl_arg_number(call, "seed"));
    if (!d) return sl_arg_error(call, "train", "not enough memory for this data set");
    if (sl_interrupted()) { /* drawn in part */
      slM_dataset_free(d);
      return sl_interrupted_error(call);
    }
  }
  *result = sl_object_new(&slM_dataset_class, d);
  return 0;
}

/* ---------------------------------------------------------------- models */

static const char *const families[] = {"mlp", "transformer", NULL};
static const char *const activations[] = {"relu", "gelu", "tanh", NULL};
static const char *const attentions[] = {"naive", "fused", NULL};

static const char *const device_names[] = {"cpu", "gpu", NULL};

static int finish_model(sl_Call *call, slM_Graph *g, const char *err, sl_Value *result) {
  if (g && sl_interrupted()) { /* its weights were drawn in part */
    slM_graph_free(g);
    return sl_interrupted_error(call);
  }
  if (!g) return sl_error(call, "%s", err);
  *result = sl_object_new(&slM_model_class, g);
  return 0;
}

/* the model built, moved to the device its argument names (built on the CPU, where its weights are drawn) */
static int finish_on_device(sl_Call *call, slM_Graph *g, const char *err, sl_Value *result) {
  char why[512];
  if (g && !(g = slM_graph_move(g, slM_device_parse(sl_arg_string(call, "device")), why, sizeof why)))
    return sl_arg_error(call, "device", "%s", why);
  return finish_model(call, g, err, result);
}

/* Without a GPU, device=gpu is refused before anything is built. */
static int device_arg_ok(sl_Call *call) {
  char why[512];
  if (slM_device_usable(sl_arg_string(call, "device"), why, sizeof why) != 0)
    return sl_arg_error(call, "device", "%s", why);
  return 0;
}

/* a pass on the GPU that stopped: why (0 when none did) */
static int device_fault(sl_Call *call, slM_Graph *g) {
  if (!g->fault[0]) return 0;
  int rc = sl_error(call, "%s", g->fault);
  g->fault[0] = '\0';
  return rc;
}

/* A whole-number argument within [lo, hi]; NaN and huge values fail here
** before any cast to int can wrap them. */
static int int_in(sl_Call *call, const char *arg, double lo, double hi, int *out) {
  double x = sl_arg_number(call, arg);
  if (!(x >= lo && x <= hi)) {
    char got[32];
    sl_format_number(x, got, sizeof got);
    if (strlen(got) > 20) snprintf(got, sizeof got, "%.3g", x);
    return sl_arg_error(call, arg, "must be between %.0f and %.0f, got %s", lo, hi, got);
  }
  *out = (int)x;
  return 0;
}

/* parameters of a transformer, counted as slM_transformer lays them out */
static double transformer_params(int side, int classes, int patch, int depth, int D, int ratio) {
  double T = (double)(side / patch) * (side / patch), P = (double)patch * patch, H = (double)D * ratio;
  double layer = 4 * ((double)D * D + D) + 4.0 * D + (D * H + H) + (H * D + D);
  return (P * D + D) + T * D + depth * layer + 2.0 * D + ((double)D * D + D) + ((double)D * classes + classes);
}

static int cmd_model(sl_Call *call, sl_Value *result) {
  const char *family = sl_arg_string(call, "family");
  if (device_arg_ok(call) != 0) return -1;
  slM_Dataset *d = arg_data(call, "data");
  int inputs, classes;
  if (d) inputs = d->features, classes = d->classes;
  else if (int_in(call, "inputs", 1, 1e7, &inputs) != 0 || int_in(call, "classes", 2, 1e5, &classes) != 0) return -1;
  uint64_t seed = (uint64_t)sl_arg_number(call, "seed");
  int labels = sl_truthy(sl_arg(call, "labels")), mask = sl_truthy(sl_arg(call, "mask"));
  double p = sl_arg_number(call, "dropout");
  if (!(p >= 0 && p < 1)) return sl_arg_error(call, "dropout", "must be in [0, 1), got %s", SL_NUM(p));
  float dropout = (float)p;
  char err[512];
  if (strcmp(family, "mlp") == 0) {
    sl_Value hidden = sl_arg(call, "hidden");
    slM_MlpSpec s = {inputs, classes, {0}, 0, OP_RELU, dropout};
    if (sl_list_len(hidden) > 8) return sl_arg_error(call, "hidden", "at most 8 hidden layers");
    double params = 0, width = inputs;
    for (size_t i = 0; i < sl_list_len(hidden); i++) {
      sl_Value h = sl_list_get(hidden, i);
      if (h.type != SL_NUMBER || h.u.n != floor(h.u.n))
        return sl_arg_error(call, "hidden", "must be a list of whole numbers");
      if (!(h.u.n >= 1 && h.u.n <= 65536)) {
        char got[32];
        sl_format_number(h.u.n, got, sizeof got);
        if (strlen(got) > 20) snprintf(got, sizeof got, "%.3g", h.u.n);
        return sl_arg_error(call, "hidden", "hidden sizes must be between 1 and 65536, got %s", got);
      }
      s.hidden[s.nhidden++] = (int)h.u.n;
      params += width * h.u.n + h.u.n;
      width = h.u.n;
    }
    params += width * classes + classes;
    if (sl_memory_check(call, NULL, params * sizeof(float), "the model's parameters") != 0) return -1;
    const char *act = sl_arg_string(call, "activation");
    s.activation = strcmp(act, "gelu") == 0 ? OP_GELU : strcmp(act, "tanh") == 0 ? OP_TANH : OP_RELU;
    if (mask) return sl_arg_error(call, "mask", "an mlp has no attention to mask");
    return finish_on_device(call, slM_mlp(&s, seed, labels, err, sizeof err), err, result);
  }
  int side = (int)lround(sqrt((double)inputs));
  if (side * side != inputs)
    return sl_arg_error(call, "inputs", "a transformer reads square images; %d is not a square", inputs);
  int patch, depth, width, heads, ratio;
  if (int_in(call, "depth", 1, 24, &depth) != 0 || int_in(call, "width", 2, 4096, &width) != 0 ||
      int_in(call, "heads", 1, 4096, &heads) != 0 || int_in(call, "mlp_ratio", 1, 16, &ratio) != 0 ||
      int_in(call, "patch", 1, side, &patch) != 0)
    return -1;
  double params = transformer_params(side, classes, patch, depth, width, ratio);
  if (side % patch == 0 && sl_memory_check(call, NULL, params * sizeof(float), "the model's parameters") != 0)
    return -1;
  slM_TransformerSpec s = {side,  side,  classes, patch,   depth,
                           width, heads, ratio,   dropout, strcmp(sl_arg_string(call, "attention"), "fused") == 0};
  return finish_on_device(call, slM_transformer(&s, seed, labels, mask, err, sizeof err), err, result);
}

static int cmd_capture(sl_Call *call, sl_Value *result) {
  char err[512];
  slM_Graph *g = slM_capture(arg_model(call, "model"), sl_truthy(sl_arg(call, "labels")),
                             sl_truthy(sl_arg(call, "mask")), err, sizeof err);
  return finish_model(call, g, err, result);
}

static int cmd_to(sl_Call *call, sl_Value *result) {
  slM_Graph *g = arg_model(call, "model");
  if (device_arg_ok(call) != 0) return -1;
  char why[512];
  slM_Graph *c = slM_graph_to(g, slM_device_parse(sl_arg_string(call, "device")), why, sizeof why);
  if (!c) return sl_arg_error(call, "device", "%s", why);
  *result = sl_object_new(&slM_model_class, c);
  return 0;
}

static int cmd_copy(sl_Call *call, sl_Value *result) {
  slM_Graph *g = arg_model(call, "model");
  if (g->device != SLM_CPU) { /* a copy of a model on the GPU stays there, with its own device memory */
    char why[512];
    slM_Graph *c = slM_graph_to(g, g->device, why, sizeof why);
    if (!c) return sl_error(call, "%s", why);
    *result = sl_object_new(&slM_model_class, c);
    return 0;
  }
  *result = sl_object_new(&slM_model_class, slM_graph_copy(g, 1));
  return 0;
}

/* ---------------------------------------------------------------- passes */

static const char *const count_by[] = {"op", "kind", NULL};

static int cmd_count_nodes(sl_Call *call, sl_Value *result) {
  slM_Graph *g = arg_model(call, "model");
  int by_kind = strcmp(sl_arg_string(call, "by"), "kind") == 0;
  slT_Table *t = slT_new();
  slT_add_column(t, by_kind ? "kind" : "op");
  slT_add_column(t, "count");
  for (int i = 0; i < g->n; i++) {
    const char *key = by_kind ? slM_kind_name(g->nodes[i].kind) : slM_op_name(g->nodes[i].op);
    size_t r = 0;
    while (r < t->nrows && strcmp(sl_str(slT_get(t, r, 0)), key) != 0) r++;
    if (r == t->nrows) {
      slT_add_row(t);
      slT_set(t, r, 0, sl_string(key));
      slT_set(t, r, 1, sl_number(0));
    }
    slT_set(t, r, 1, sl_number(slT_get(t, r, 1).u.n + 1));
  }
  *result = slT_value(t);
  return 0;
}

static int verified(sl_Call *call, slM_Graph *g) {
  char err[512];
  if (slM_verify(g, err, sizeof err) != 0) return sl_error(call, "the graph is not valid: %s", err);
  return 0;
}

/* The end every transform command shares: the pass ran on `g`, a copy of
** the model (rc < 0: it failed with `err`, an error about argument `arg`,
** or about the call when arg is NULL); the copy is verified and becomes the
** result, or is freed, so the caller's model is never touched. */
static int transformed(sl_Call *call, slM_Graph *g, int rc, const char *arg, const char *err, sl_Value *result) {
  if (rc < 0 || verified(call, g) != 0) {
    slM_graph_free(g);
    if (rc >= 0) return -1;
    return arg ? sl_arg_error(call, arg, "%s", err) : sl_error(call, "%s", err);
  }
  *result = sl_object_new(&slM_model_class, g);
  return 0;
}

static int cmd_remove_dropout(sl_Call *call, sl_Value *result) {
  slM_Graph *g = slM_graph_copy(arg_model(call, "model"), 0);
  int removed = slM_remove_dropout(g);
  if (transformed(call, g, 0, NULL, NULL, result) != 0) return -1;
  sl_printf(call, "removed %d dropout node%s\n", removed, removed == 1 ? "" : "s");
  return 0;
}

static int cmd_set_attention(sl_Call *call, sl_Value *result) {
  slM_Graph *from = arg_model(call, "model");
  if (strcmp(from->family, "transformer") != 0) return sl_arg_error(call, "model", "only a transformer has attention");
  int fused = !sl_arg_given(call, "attention") || strcmp(sl_arg_string(call, "attention"), "fused") == 0;
  slM_Graph *g = slM_graph_copy(from, 0);
  int changed = slM_set_attention(g, fused);
  if (transformed(call, g, 0, NULL, NULL, result) != 0) return -1;
  sl_printf(call, "%d attention block%s now %s\n", changed, changed == 1 ? "" : "s",
            fused ? "fused" : "naive (op by op)");
  return 0;
}

static int cmd_identity(sl_Call *call, sl_Value *result) {
  sl_Value layers = sl_arg(call, "layers");
  size_t n = sl_list_len(layers);
  const char **names = malloc((n ? n : 1) * sizeof *names);
  for (size_t i = 0; i < n; i++)
    if (!(names[i] = sl_str(sl_list_get(layers, i)))) {
      free(names);
      return sl_arg_error(call, "layers", "must be a list of layer names");
    }
  slM_Graph *g = slM_graph_copy(arg_model(call, "model"), 0);
  char err[512];
  int rc = slM_identity_layers(g, names, (int)n, err, sizeof err);
  free(names);
  return transformed(call, g, rc, "layers", err, result);
}

static int cmd_verify(sl_Call *call, sl_Value *result) {
  if (verified(call, arg_model(call, "model")) != 0) return -1;
  *result = sl_bool(1);
  return 0;
}

static int cmd_report(sl_Call *call, sl_Value *result) {
  slM_Graph *g = arg_model(call, "model");
  slT_Table *t = slT_new();
  const char *cols[] = {"name", "op", "params", "flops", "activation_bytes"};
  for (int c = 0; c < 5; c++) slT_add_column(t, cols[c]);
  double params = 0, flops = 0, act = 0;
  for (int i = 0; i < g->n; i++) {
    const slM_Node *n = &g->nodes[i];
    if (n->kind == SLM_PLACEHOLDER || n->op == OP_OUTPUT) continue;
    size_t elems = 1;
    for (int d = 1; d < n->ndim; d++) elems *= (size_t)n->shape[d];
    size_t r = slT_add_row(t);
    slT_set(t, r, 0, sl_string(n->name));
    slT_set(t, r, 1, sl_string(slM_op_name(n->op)));
    slT_set(t, r, 2, sl_number((double)slM_node_params(n)));
    slT_set(t, r, 3, sl_number(n->flops));
    slT_set(t, r, 4, sl_number((double)elems * 4));
    params += (double)slM_node_params(n), flops += n->flops, act += (double)elems * 4;
  }
  size_t r = slT_add_row(t);
  slT_set(t, r, 0, sl_string("total"));
  slT_set(t, r, 2, sl_number(params));
  slT_set(t, r, 3, sl_number(flops));
  slT_set(t, r, 4, sl_number(act));
  *result = slT_value(t);
  return 0;
}

static sl_Value dims_list(const slM_Node *n) {
  sl_Value l = sl_list_new();
  for (int d = 0; d < n->ndim; d++) sl_list_push(l, sl_number(d == 0 ? 1 : n->shape[d]));
  return l;
}

static int cmd_meta(sl_Call *call, sl_Value *result) {
  slM_Graph *g = arg_model(call, "model");
  const char *name = sl_arg_string(call, "node");
  int i = slM_find_node(g, name);
  if (i < 0) return sl_arg_error(call, "node", "the model has no node '%s' (see model.node_names)", name);
  const slM_Node *n = &g->nodes[i];
  int *dtypes = malloc((size_t)(i + 1) * sizeof *dtypes);
  slM_dtypes_upto(g, i, dtypes);
  char kernel[96];
  slM_node_kernel(g, n, kernel, sizeof kernel);
  sl_Value common = sl_record_new(), hw = sl_record_new(), sw = sl_record_new(), meta = sl_record_new();
  sl_record_set(common, "mase_type",
                sl_string(n->kind == SLM_CALL_MODULE   ? "module"
                          : n->kind == SLM_PLACEHOLDER ? "placeholder"
                          : n->kind == SLM_OUTPUT      ? "output"
                                                       : "function"));
  sl_record_set(common, "mase_op", sl_string(slM_op_name(n->op)));
  sl_record_set(common, "shape", dims_list(n));
  sl_record_set(common, "precision", sl_string(slM_node_format(n, dtypes[i])));
  free(dtypes);
  sl_record_set(common, "params", sl_number((double)slM_node_params(n)));
  sl_record_set(common, "flops", sl_number(n->flops));
  sl_record_set(hw, "device", sl_string(g->device == SLM_CUDA ? "cuda" : "cpu"));
  sl_record_set(hw, "parallelism", sl_number(1));
  sl_record_set(sw, "kernel", sl_string(kernel));
  sl_record_set(sw, "trainable", sl_bool(n->nparams > 0 && !n->params[0]->frozen));
  sl_record_set(meta, "common", common);
  sl_record_set(meta, "hardware", hw);
  sl_record_set(meta, "software", sw);
  *result = meta;
  return 0;
}

static int cmd_params(sl_Call *call, sl_Value *result) {
  size_t trainable, total;
  slM_param_counts(arg_model(call, "model"), &trainable, &total);
  *result = sl_record_new();
  sl_record_set(*result, "trainable", sl_number((double)trainable));
  sl_record_set(*result, "total", sl_number((double)total));
  sl_record_set(*result, "fraction", sl_number(total ? (double)trainable / (double)total : 0));
  return 0;
}

static int cmd_lora(sl_Call *call, sl_Value *result) {
  sl_Value targets = sl_arg(call, "targets");
  size_t nt = sl_list_len(targets);
  const char **names = nt ? malloc(nt * sizeof *names) : NULL;
  for (size_t i = 0; i < nt; i++) {
    names[i] = sl_str(sl_list_get(targets, i));
    if (!names[i]) {
      free(names);
      return sl_arg_error(call, "targets", "must be a list of layer names (or parts of names)");
    }
  }
  int rank;
  double alpha = sl_arg_number(call, "alpha");
  if (int_in(call, "rank", 1, 4096, &rank) != 0) return free(names), -1;
  if (!(alpha > -1e6 && alpha < 1e6)) {
    free(names);
    return sl_arg_error(call, "alpha", "must be a finite number between -1e6 and 1e6, got %s", SL_NUM(alpha));
  }
  slM_Graph *g = slM_graph_copy(arg_model(call, "model"), 1);
  char err[512];
  int n =
      slM_add_lora(g, rank, alpha, nt ? names : NULL, (int)nt, (uint64_t)sl_arg_number(call, "seed"), err, sizeof err);
  free(names);
  if (transformed(call, g, n, NULL, err, result) != 0) return -1;
  sl_printf(call, "added LoRA adapters to %d linear layer%s\n", n, n == 1 ? "" : "s");
  return 0;
}

/* -------------------------------------------------------------- training */

static const char *const optimizers[] = {"sgd", "adamw", NULL};
static const char *const schedules[] = {"constant", "cosine", "step", NULL};

typedef struct {
  sl_Progress *bar;
  int epochs;
} TrainUi;

static void on_progress(void *ud, int epoch, double fraction, double loss) {
  TrainUi *ui = ud;
  char detail[96];
  snprintf(detail, sizeof detail, "epoch %d/%d  loss %.4f", epoch + 1, ui->epochs, loss);
  sl_progress_update(ui->bar, epoch + fraction, detail);
}

static int on_stop(void *ud) { return sl_interrupted(); }

static int check_fit(sl_Call *call, slM_Graph *g, slM_Dataset *d) {
  if (g->features != d->features || g->classes < d->classes)
    return sl_error(call, "the model reads %d features into %d classes but the data set has %d features and %d classes",
                    g->features, g->classes, d->features, d->classes);
  return 0;
}

/* bytes of every node's output for one item, as `report` counts them */
static double activation_bytes(const slM_Graph *g) {
  double bytes = 0;
  for (int i = 0; i < g->n; i++) {
    double elems = 1;
    for (int k = 1; k < g->nodes[i].ndim; k++) elems *= g->nodes[i].shape[k];
    bytes += elems * 4;
  }
  return bytes;
}

/* Training stopped at values that are not numbers: a loss, or under fp16
** an output that overflowed float16's range. Before any update the
** learning rate cannot be the cause. */
static int diverged(sl_Call *call, slM_Graph *g, const slM_EpochStats *s, double lr) {
  char why[512];
  slM_nonfinite_why(g, s->nonfinite_node, why, sizeof why);
  const char *loss = isnan(s->loss) ? "nan" : isinf(s->loss) ? "infinite" : NULL;
  int first = s->epoch == 1 && s->diverged == 1, fp16 = strstr(why, "float16") != NULL;
  if (first)
    return sl_error(call,
                    "training stopped in the first forward pass, before any update (the learning rate is not the "
                    "cause): %s",
                    why);
  if (fp16 || !loss)
    return sl_error(call,
                    "training stopped at step %ld of epoch %d (the weights are those before that step): %s; a "
                    "smaller learning rate than %g may keep the values in range",
                    s->diverged, s->epoch, why, lr);
  return sl_arg_error(call, "lr",
                      "training diverged: the loss became %s at step %ld of epoch %d, so training stopped there "
                      "(the weights are those before that step). Use a smaller learning rate than %g",
                      loss, s->diverged, s->epoch, lr);
}

static int cmd_train(sl_Call *call, sl_Value *result) {
  slM_Graph *g = arg_model(call, "model");
  slM_Dataset *d = arg_data(call, "data");
  if (check_fit(call, g, d) != 0) return -1;
  slM_TrainConfig c = {0,
                       0,
                       sl_arg_number(call, "lr"),
                       sl_arg_number(call, "momentum"),
                       sl_arg_number(call, "weight_decay"),
                       strcmp(sl_arg_string(call, "optimizer"), "adamw") == 0 ? SLM_ADAMW : SLM_SGD,
                       strcmp(sl_arg_string(call, "schedule"), "cosine") == 0 ? SLM_COSINE
                       : strcmp(sl_arg_string(call, "schedule"), "step") == 0 ? SLM_STEP
                                                                              : SLM_CONSTANT,
                       0,
                       (uint64_t)sl_arg_number(call, "seed")};
  if (int_in(call, "epochs", 1, 1000, &c.epochs) != 0 || int_in(call, "batch", 1, 65536, &c.batch) != 0 ||
      int_in(call, "warmup", 0, 1e8, &c.warmup) != 0)
    return -1;
  if (!(c.lr > 0 && c.lr <= 10))
    return sl_arg_error(call, "lr", "must be above 0 and at most 10, got %s", SL_NUM(c.lr));
  if (!(c.momentum >= 0 && c.momentum < 1))
    return sl_arg_error(call, "momentum", "must be in [0, 1), got %s", SL_NUM(c.momentum));
  if (!(c.weight_decay >= 0 && c.weight_decay <= 1))
    return sl_arg_error(call, "weight_decay", "must be between 0 and 1, got %s", SL_NUM(c.weight_decay));
  size_t trainable, total;
  slM_param_counts(g, &trainable, &total);
  if (trainable == 0) return sl_error(call, "every parameter of this model is frozen: nothing would learn");
  /* gradients and optimiser state beside the weights, activations and their
  ** gradients for one batch */
  if (sl_memory_check(call, "batch", (double)total * 4 * 3 + activation_bytes(g) * c.batch * 2,
                      "training this model") != 0)
    return -1;
  for (int i = 0; i < g->n; i++) {
    const slM_NodeTransforms *q = &g->nodes[i].comp;
    const slM_Transform *ts[4] = {q->data_in, q->data_in_prune, q->weight, q->bias};
    for (int k = 0; k < 4; k++)
      if (ts[k] && !ts[k]->has_gradient)
        return sl_error(call,
                        "%s: %s has no usable gradient, so quantisation-aware training is not supported; "
                        "evaluate the model without training it (PTQ), or choose another format",
                        g->nodes[i].name, ts[k]->name);
  }
  char why[512];
  if (slM_device_fits(g, c.batch, 1, why, sizeof why) != 0) return sl_arg_error(call, "batch", "%s", why);
  /* the run is its data and settings (and, in slM_run_begin, the model it starts from) */
  slU_Text def = {0};
  slM_dataset_encode(d, &def, why, sizeof why);
  const double set[] = {c.epochs, c.batch, c.lr, c.momentum, c.weight_decay, c.optimizer, c.schedule, c.warmup, c.seed};
  uint64_t id = slM_hash(slM_hash(SLM_HASH_START, def.s, def.n), set, sizeof set);
  free(def.s);
  slM_Run run;
  if (slM_run_begin(call, g, c.batch, id, &run) != 0) return -1;
  c.run = &run;
  slM_EpochStats *stats = calloc((size_t)c.epochs, sizeof *stats);
  TrainUi ui = {sl_progress_begin(call, "train", c.epochs), c.epochs};
  slM_TrainHooks hooks = {&ui, on_progress, on_stop};
  int done = slM_train(g, d, &c, &hooks, stats);
  sl_progress_end(ui.bar);
  slM_run_end(&run, run.err[0] ? run.err : NULL);
  if (run.err[0] || device_fault(call, g) != 0) {
    free(stats);
    return run.err[0] ? sl_error(call, "%s", run.err) : -1;
  }
  if (run.resumed) sl_printf(call, "resumed from %s\n", run.ckpt.path);
  if (done > 0 && stats[done - 1].diverged) {
    slM_EpochStats last = stats[done - 1];
    free(stats);
    return diverged(call, g, &last, c.lr);
  }
  slT_Table *t = slT_new();
  /* in parallel, the time spent communicating that the compute did not hide */
  const char *cols[] = {"epoch",     "loss",    "train_accuracy",     "test_accuracy",
                        "test_loss", "seconds", "samples_per_second", "comm_seconds"};
  int ncols = run.ranks > 1 ? 8 : 7;
  for (int k = 0; k < ncols; k++) slT_add_column(t, cols[k]);
  for (int e = 0; e < done; e++) {
    size_t r = slT_add_row(t);
    double v[8] = {stats[e].epoch,     stats[e].loss,    stats[e].train_accuracy,     stats[e].test_accuracy,
                   stats[e].test_loss, stats[e].seconds, stats[e].samples_per_second, stats[e].comm_seconds};
    for (int k = 0; k < ncols; k++)
      slT_set(t, r, (size_t)k, isnan(v[k]) ? sl_nil() : sl_number(v[k])); /* not measured */
  }
  free(stats);
  for (int k = 5; k < ncols; k++) slT_mark_timing(t, k);
  sl_Value table = slT_value(t);
  if (sl_interrupted()) {
    sl_Bundle b;
    sl_show(table, &b);
    sl_display(call, &b);
    sl_bundle_free(&b);
    sl_release(table);
    return sl_interrupted_error(call); /* stopped at a batch boundary: the model keeps its weights */
  }
  *result = table;
  return 0;
}

static const char *const splits[] = {"test", "train", NULL};

static int cmd_evaluate(sl_Call *call, sl_Value *result) {
  slM_Graph *g = arg_model(call, "model");
  slM_Dataset *d = arg_data(call, "data");
  if (check_fit(call, g, d) != 0) return -1;
  int train = strcmp(sl_arg_string(call, "split"), "train") == 0;
  double acc, loss;
  size_t n = train ? d->ntrain : d->ntest;
  if (n == 0) return sl_arg_error(call, "split", "the %s split is empty", train ? "train" : "test");
  if (sl_memory_check(call, NULL, activation_bytes(g) * 256, "evaluating this model") != 0) return -1;
  char why[512]; /* slM_evaluate's batches are 256 items */
  if (slM_device_fits(g, n < 256 ? (int)n : 256, 0, why, sizeof why) != 0) return sl_error(call, "%s", why);
  g->fault[0] = '\0';
  int nonfinite = slM_evaluate(g, train ? d->train_x : d->test_x, train ? d->train_y : d->test_y, n, &acc, &loss);
  if (device_fault(call, g) != 0) return -1;
  if (sl_interrupted()) return sl_interrupted_error(call);
  if (!isfinite(loss)) { /* an accuracy beside it would count the argmax of NaN */
    slM_nonfinite_why(g, nonfinite, why, sizeof why);
    return sl_error(call, "the model's loss on the %s split is %s, so it has no accuracy: %s", train ? "train" : "test",
                    isnan(loss) ? "nan" : "infinite", why);
  }
  *result = sl_record_new();
  sl_record_set(*result, "accuracy", sl_number(acc));
  sl_record_set(*result, "loss", sl_number(loss));
  sl_record_set(*result, "n", sl_number((double)n));
  return 0;
}

static int cmd_difference(sl_Call *call, sl_Value *result) {
  slM_Graph *a = arg_model(call, "a"), *b = arg_model(call, "b");
  slM_Dataset *d = arg_data(call, "data");
  if (check_fit(call, a, d) != 0 || check_fit(call, b, d) != 0) return -1;
  size_t n = d->ntest < 512 ? d->ntest : 512;
  if (n == 0) return sl_arg_error(call, "data", "the data set has no test items");
  a->fault[0] = b->fault[0] = '\0';
  a->stop = b->stop = on_stop; /* each pass asks between nodes */
  slM_Tensor *la = slM_forward(a, d->test_x, d->test_y, (int)n, 0);
  slM_Tensor *lb = sl_interrupted() ? NULL : slM_forward(b, d->test_x, d->test_y, (int)n, 0);
  a->stop = b->stop = NULL;
  a->stopped = b->stopped = 0;
  if (device_fault(call, a) != 0 || device_fault(call, b) != 0 || !la || !lb || sl_interrupted()) {
    slM_release_activations(a);
    slM_release_activations(b);
    return sl_interrupted() ? sl_interrupted_error(call) : -1;
  }
  double max = 0;
  for (size_t i = 0; i < la->size && i < lb->size; i++) max = fmax(max, fabs((double)la->data[i] - lb->data[i]));
  slM_release_activations(a);
  slM_release_activations(b);
  *result = sl_record_new();
  sl_record_set(*result, "max_abs", sl_number(max));
  sl_record_set(*result, "identical", sl_bool(max == 0));
  sl_record_set(*result, "items", sl_number((double)n));
  return 0;
}

/* the device's bytes by the memory categories, where there is a GPU */
static void device_memory(sl_Value record) {
  if (!slK_dev_available()) return;
  slK_DevMemory m;
  slK_dev_memory(&m);
  sl_Value live = sl_record_new(), peak = sl_record_new();
  double total = 0;
  for (int c = 0; c < SLM_MEM_NCAT; c++) {
    sl_record_set(live, slM_mem_category_names[c], sl_number((double)m.live[c]));
    sl_record_set(peak, slM_mem_category_names[c], sl_number((double)m.at_peak[c]));
    total += (double)m.live[c];
  }
  sl_record_set(record, "device_live_bytes", sl_number(total));
  sl_record_set(record, "device_peak_bytes", sl_number((double)m.peak));
  sl_record_set(record, "device_cached_bytes", sl_number((double)m.cached));
  sl_record_set(record, "device_free_bytes", sl_number((double)m.free_bytes));
  sl_record_set(record, "device_live_by_category", live);
  sl_record_set(record, "device_peak_by_category", peak);
}

static int cmd_memory(sl_Call *call, sl_Value *result) {
  *result = sl_record_new();
  sl_record_set(*result, "live_bytes", sl_number((double)slM_mem_live()));
  sl_record_set(*result, "peak_bytes", sl_number((double)slM_mem_peak()));
  device_memory(*result);
  return 0;
}

/* ------------------------------------------------------------ passes */

/* The pass registry: every pass over a graph, described once: its name
** (also the name of the command that runs it), whether it observes or
** rewrites, what it does, and that command. `passes` lists it; `pass m
** NAME` runs a pass by name with its defaults, and takes as its choices the
** names below (pass_names, filled from this table when the domain opens),
** so help, completion, argument checks and docs/commands.md list them. */
typedef struct {
  const char *name, *kind, *summary;
  sl_CommandFn run;
} Pass;

/* clang-format off */
static const Pass pass_table[] = {
  {"count_nodes", "analysis", "count the nodes by operator", cmd_count_nodes},
  {"report", "analysis", "parameters, FLOPs and activation bytes per node", cmd_report},
  {"verify", "analysis", "structure and shape checks", cmd_verify},
  {"remove_dropout", "transform", "delete dropout nodes, rewiring their users", cmd_remove_dropout},
  {"set_attention", "transform", "attention as one fused node (attention=fused) or op by op (naive)", cmd_set_attention},
  {"lora", "transform", "add low-rank adapters, freeze the rest", cmd_lora},
};
/* clang-format on */

#define NPASSES (sizeof pass_table / sizeof pass_table[0])

static const char *pass_names[NPASSES + 1]; /* `pass`'s choices; the last stays NULL */

static void graph_open(void) {
  for (size_t i = 0; i < NPASSES; i++) pass_names[i] = pass_table[i].name;
}

static int cmd_passes(sl_Call *call, sl_Value *result) {
  slT_Table *t = slT_new();
  slT_add_column(t, "pass");
  slT_add_column(t, "kind");
  slT_add_column(t, "does");
  for (size_t i = 0; i < NPASSES; i++) {
    size_t r = slT_add_row(t);
    slT_set(t, r, 0, sl_string(pass_table[i].name));
    slT_set(t, r, 1, sl_string(pass_table[i].kind));
    slT_set(t, r, 2, sl_string(pass_table[i].summary));
  }
  *result = slT_value(t);
  return 0;
}

/* the pass's own command, called with this call's model and the pass's defaults */
static int cmd_pass(sl_Call *call, sl_Value *result) {
  const char *name = sl_arg_string(call, "name");
  for (size_t i = 0; i < NPASSES; i++)
    if (strcmp(pass_table[i].name, name) == 0) return pass_table[i].run(call, result);
  return sl_arg_error(call, "name", "no pass named '%s' (see passes)", name);
}

/* --------------------------------------------------------------- registry */

/* clang-format off */
#define MODEL_ARG {"model", SL_ARG_OBJECT, SL_POSITIONAL | SL_REQUIRED, NULL, "the model", NULL, "model"}
#define DATA_ARG {"data", SL_ARG_OBJECT, SL_POSITIONAL | SL_REQUIRED, NULL, "the data set", NULL, "dataset"}

static const sl_Command slM_commands[] = {
  {"dataset", "data", "Load a data set: Fashion-MNIST from its Debian package, or synthetic Gaussian blobs.",
   "Fashion-MNIST is read from /usr/share/datasets/fashion-mnist (package dataset-fashion-mnist); train and test "
   "take the first items of each split (0 = all). Images are normalised with the training split's mean and "
   "standard deviation. Fields of a data set d: d.name, d.ntrain and d.ntest (items per split), d.features "
   "(per item), d.classes, d.mean and d.std (of the normalisation).",
   "data = dataset fashion_mnist train=10000 test=2000\nblobs = dataset synthetic train=500 test=100 features=16 classes=3",
   cmd_dataset, SL_CMD_LONG,
   {{"name", SL_ARG_ENUM, SL_POSITIONAL | SL_REQUIRED, NULL, "which data set", dataset_names},
    {"train", SL_ARG_INT, 0, "0", "training items to keep (0 = all)"},
    {"test", SL_ARG_INT, 0, "0", "test items to keep (0 = all)"},
    {"path", SL_ARG_STRING, 0, NULL, "folder of the IDX files (Fashion-MNIST)"},
    {"features", SL_ARG_INT, 0, "16", "features per item (synthetic)"},
    {"classes", SL_ARG_INT, 0, "3", "number of classes (synthetic)"},
    {"spread", SL_ARG_NUMBER, 0, "0.5", "standard deviation around each class centre (synthetic)"},
    {"seed", SL_ARG_INT, 0, "0", "random seed (synthetic)"},
    {NULL}}},
  {"model", "model", "Build a model as a compute graph: an mlp, or a tiny transformer encoder (bert-tiny's shape).",
   "The transformer cuts each image into patches (tokens), embeds them, runs `depth` encoder layers of multi-head "
   "self-attention and MLP with residuals and layer norm, mean-pools, and classifies through a tanh pooler. "
   "Fields of a model m: m.nodes (number of graph nodes), m.params (all parameters), m.trainable (those not "
   "frozen), m.family (\"mlp\", \"transformer\" or \"lm\"), m.classes, m.precision (its mode: \"fp32\", or "
   "\"bf16\"/\"fp16\" after `precision`), m.node_names (a list, for `meta`).",
   "m = model mlp hidden=[256, 128] dropout=0.1\nt = model transformer depth=2 width=64 heads=2 patch=7",
   cmd_model, SL_CMD_LONG,
   {{"family", SL_ARG_ENUM, SL_POSITIONAL | SL_REQUIRED, NULL, "the model family", families},
    {"data", SL_ARG_OBJECT, 0, NULL, "take inputs and classes from this data set", NULL, "dataset"},
    {"inputs", SL_ARG_INT, 0, "784", "input features (images: pixels)"},
    {"classes", SL_ARG_INT, 0, "10", "output classes"},
    {"hidden", SL_ARG_LIST, 0, "[256, 128]", "hidden layer sizes (mlp)"},
    {"activation", SL_ARG_ENUM, 0, "relu", "activation (mlp)", activations},
    {"dropout", SL_ARG_NUMBER, 0, "0.1", "dropout probability"},
    {"depth", SL_ARG_INT, 0, "2", "encoder layers (transformer)"},
    {"width", SL_ARG_INT, 0, "64", "token width (transformer)"},
    {"heads", SL_ARG_INT, 0, "2", "attention heads; must divide width (transformer)"},
    {"mlp_ratio", SL_ARG_INT, 0, "2", "MLP width as a multiple of width (transformer)"},
    {"patch", SL_ARG_INT, 0, "7", "patch side in pixels; must divide the image side (transformer)"},
    {"labels", SL_ARG_BOOL, 0, "false", "trace with a label input: adds the loss node"},
    {"mask", SL_ARG_BOOL, 0, "false", "trace with an attention mask input (transformer)"},
    {"attention", SL_ARG_ENUM, 0, "naive", "attention op by op, or one fused FlashAttention-2 node (transformer)", attentions},
    {"seed", SL_ARG_INT, 0, "0", "seed of the initial weights"},
    {"device", SL_ARG_ENUM, 0, "cpu", "where its weights live and its passes run: cpu, or gpu (a CUDA GPU)",
     device_names},
    {NULL}}},
  {"to", "graph", "A copy of a model on a device: its weights, gradients and optimiser state move; results are equal.",
   "`to m gpu` puts a copy of m on the CUDA GPU: training, evaluation and the language model's commands then run "
   "its operators there, and the optimiser updates every parameter in one launch; `to m cpu` brings a copy back. "
   "The copy keeps the model's precision mode (bf16 and fp16 products run on the tensor cores). Without a GPU, or for "
   "a model the GPU does not run (the fusion pass's operators or buffer planning, compression transforms), the "
   "error says why. docs/gpu.md lists what runs where.",
   "m = model mlp hidden=[64]\nback = to m cpu", cmd_to, 0,
   {MODEL_ARG, {"device", SL_ARG_ENUM, SL_POSITIONAL | SL_REQUIRED, NULL, "cpu or gpu", device_names}, {NULL}}},
  {"capture", "graph", "Trace a model again with other inputs; the new graph shares the weights.",
   "With labels the graph ends in a cross-entropy loss node; without, it is a pure inference graph. With an "
   "attention mask every attention block gains a masked_fill node.",
   "m = model mlp hidden=[64]\ntrain_graph = capture m labels=true", cmd_capture, 0,
   {MODEL_ARG, {"labels", SL_ARG_BOOL, 0, "false", "supply labels"}, {"mask", SL_ARG_BOOL, 0, "false", "supply an attention mask"},
    {NULL}}},
  {"copy", "graph", "A deep copy of a model: new weights with the same values.", "", "m = model mlp hidden=[64]\nbackup = copy m", cmd_copy, 0,
   {MODEL_ARG, {NULL}}},
  {"count_nodes", "graph", "Analysis pass: count the nodes of a graph by operator or by node kind.", "",
   "m = model mlp hidden=[64]\ncount_nodes m by=op", cmd_count_nodes, 0,
   {MODEL_ARG, {"by", SL_ARG_ENUM, 0, "op", "group by operator or by FX node kind", count_by}, {NULL}}},
  {"remove_dropout", "graph", "Transform pass: a new graph without dropout nodes, their users rewired to their inputs.",
   "The result shares the weights; in evaluation it computes exactly what the original computes. The graph is "
   "verified after the transform.",
   "m = model mlp hidden=[64]\nclean = remove_dropout m", cmd_remove_dropout, 0, {MODEL_ARG, {NULL}}},
  {"set_attention", "graph", "Transform pass: a new graph whose attention runs fused (FlashAttention-2) or op by op.",
   "attention=fused replaces each chain matmul_qk, [masked_fill,] softmax, dropout, matmul_pv by one "
   "scaled_dot_product_attention node, which never forms the tokens x tokens matrix and saves only the row logsumexp "
   "for the backward; attention=naive restores the chain. The fused node applies no dropout to the attention "
   "probabilities (the other dropouts stay). The result shares the weights; outputs and gradients agree within "
   "float32 rounding.",
   "m = model transformer depth=1 width=32 heads=2\nf = set_attention m attention=fused", cmd_set_attention, 0,
   {MODEL_ARG, {"attention", SL_ARG_ENUM, 0, "fused", "fused or naive", attentions}, {NULL}}},
  {"identity", "graph", "Transform pass: a new graph where the named square linear layers are the identity.",
   "ADLS Lab 2's per-layer choice of layer type (linear or identity): each named layer is removed and its users read "
   "its input. The result shares the other weights. A layer whose input and output widths differ is refused.",
   "t = model transformer depth=2 width=32 heads=2\nlean = identity t layers=[\"encoder_0_attention_output\", \"encoder_1_attention_query\"]", cmd_identity, 0,
   {MODEL_ARG, {"layers", SL_ARG_LIST, SL_POSITIONAL | SL_REQUIRED, NULL, "names of square linear layers"}, {NULL}}},
  {"verify", "graph", "Check a graph: acyclic, inputs defined, parameters present, shapes consistent.", "", "m = model mlp hidden=[64]\nverify m",
   cmd_verify, 0, {MODEL_ARG, {NULL}}},
  {"report", "graph", "Analysis pass: parameters, FLOPs and activation bytes per node (per sample), with totals.", "",
   "m = model mlp hidden=[64]\nreport m", cmd_report, 0, {MODEL_ARG, {NULL}}},
  {"meta", "graph", "The metadata of one node: common, hardware and software parts, as MASE attaches them.", "",
   "m = model mlp hidden=[64]\n(meta m \"fc1\").common", cmd_meta, 0,
   {MODEL_ARG, {"node", SL_ARG_STRING, SL_POSITIONAL | SL_REQUIRED, NULL, "node name"}, {NULL}}},
  {"params", "model", "Trainable and total parameter counts of a model.", "", "m = model mlp hidden=[64]\nparams m", cmd_params, 0, {MODEL_ARG, {NULL}}},
  {"lora", "model", "A copy of a model with LoRA adapters on its linear layers; everything else is frozen.",
   "Each adapted layer gains nodes A (input to rank), B (rank to output, starting at zero), a scale alpha/rank and an "
   "add. Only A and B train. targets names parts of layer names; by default every linear layer but the classifier.",
   "m = model transformer\ntuned = lora m rank=4 alpha=8 targets=[\"attention_query\", \"attention_value\"]", cmd_lora, 0,
   {MODEL_ARG, {"rank", SL_ARG_INT, 0, "4", "rank of the adapters"}, {"alpha", SL_ARG_NUMBER, 0, "8", "scale numerator"},
    {"targets", SL_ARG_LIST, 0, "[]", "parts of layer names to adapt ([] = all but the classifier)"},
    {"seed", SL_ARG_INT, 0, "0", "seed of the A matrices"}, {NULL}}},
  {"train", "model", "Train a model; returns a table with one row per epoch.",
   "Shows progress in place; an interrupt stops at the next batch with the weights intact. The same seed gives "
   "the same numbers. accumulate=K splits each batch into K micro-batches whose gradients are summed in order; "
   "parallel=\"data\" runs one micro-batch per process (under mpirun -n N, or workers=N), with the numbers of "
   "accumulate=N; checkpoint= with checkpoint_every= lets the same command resume (docs/scaling.md).",
   "data = dataset fashion_mnist train=1000 test=200\nm = model mlp data=data hidden=[64]\nhistory = train m data epochs=3 lr=0.05 optimizer=sgd momentum=0.9", cmd_train, SL_CMD_LONG,
   {MODEL_ARG, DATA_ARG,
    {"epochs", SL_ARG_INT, 0, "1", "passes over the training split"},
    {"batch", SL_ARG_INT, 0, "128", "mini-batch size"},
    {"lr", SL_ARG_NUMBER, 0, "0.05", "learning rate"},
    {"optimizer", SL_ARG_ENUM, 0, "sgd", "SGD with momentum, or AdamW", optimizers},
    {"momentum", SL_ARG_NUMBER, 0, "0.9", "momentum (sgd)"},
    {"weight_decay", SL_ARG_NUMBER, 0, "0", "decoupled weight decay on weight matrices"},
    {"schedule", SL_ARG_ENUM, 0, "constant", "learning-rate schedule", schedules},
    {"warmup", SL_ARG_INT, 0, "0", "steps of linear warm-up"},
    {"seed", SL_ARG_INT, 0, "0", "seed of the data order and dropout"},
    SLM_RUN_ARGS,
    {NULL}}},
  {"evaluate", "model", "Accuracy and loss of a model on a split, as a record.", "", "data = dataset fashion_mnist train=1000 test=200\nm = model mlp data=data hidden=[64]\n(evaluate m data).accuracy",
   cmd_evaluate, SL_CMD_LONG, {MODEL_ARG, DATA_ARG, {"split", SL_ARG_ENUM, 0, "test", "which split", splits}, {NULL}}},
  {"difference", "model", "Largest difference between two models' outputs on test items, as a record.", "",
   "data = dataset fashion_mnist train=1000 test=200\nm = model mlp data=data hidden=[64]\ndifference m (remove_dropout m) data", cmd_difference, SL_CMD_LONG,
   {{"a", SL_ARG_OBJECT, SL_POSITIONAL | SL_REQUIRED, NULL, "first model", NULL, "model"},
    {"b", SL_ARG_OBJECT, SL_POSITIONAL | SL_REQUIRED, NULL, "second model", NULL, "model"}, DATA_ARG, {NULL}}},
  {"memory", "model", "Bytes of tensor data alive now and at the peak, as a record.", "", "memory", cmd_memory, 0,
   {{NULL}}},
  {"passes", "graph", "The pass registry: every analysis and transform pass, with what it does.", "", "passes",
   cmd_passes, 0, {{NULL}}},
  {"pass", "graph", "Run a pass from the registry by name, with its default settings.",
   "Analysis passes return what they found; transform passes return a new, verified model.",
   "m = model mlp hidden=[64]\nclean = pass m remove_dropout", cmd_pass, 0,
   {MODEL_ARG, {"name", SL_ARG_ENUM, SL_POSITIONAL | SL_REQUIRED, NULL, "the pass", pass_names},
    {"by", SL_ARG_ENUM, 0, "op", "count_nodes: group by operator or kind", count_by},
    {"rank", SL_ARG_INT, 0, "4", "lora: rank"}, {"alpha", SL_ARG_NUMBER, 0, "8", "lora: scale numerator"},
    {"targets", SL_ARG_LIST, 0, "[]", "lora: parts of layer names"}, {"seed", SL_ARG_INT, 0, "0", "lora: seed"},
    {"attention", SL_ARG_ENUM, 0, "fused", "set_attention: fused or naive", attentions},
    {NULL}}},
  {NULL},
};
/* clang-format on */

const sl_Domain slM_domain = {
    "Graphs",
    "Models as compute graphs: data sets (Fashion-MNIST and synthetic), the models built from them (MLPs and transformers), graph capture and metadata, analysis and transform passes, training and evaluation, LoRA adapters. A model is a graph of nodes with shapes, parameters and metadata that passes read and rewrite.",
    slM_commands,
    (const sl_Class *const[]){&slM_dataset_class, &slM_model_class, NULL},
    graph_open,
};
