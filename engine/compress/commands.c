/*
** commands.c - the compression domain's commands for number formats, MXINT8 packing, pruning,
** and their application to model graphs (PTQ, QAT, pruned fine-tuning).
**
** Applied to a model, a format or a pruning mask returns a deep copy: the
** trained float model stays as it was, so PTQ and QAT can both start from
** it. The copy's linear nodes carry the transforms (transform.h); its
** forward pass computes with them and training updates the float weights
** behind them through the straight-through estimator, which is QAT.
*/
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "graph/model.h"
#include "kernels/kernels.h"
#include "quant.h"
#include "table/table.h"

static const char *const format_names[] = {
    "integer",    "minifloat_denorm", "minifloat_ieee",  "log",        "mxint8",   "mxfp8_e4m3",
    "mxfp8_e5m2", "mxfp6_e3m2",       "mxfp6_e2m3",      "mxfp4_e2m1", "block_fp", "block_minifloat",
    "block_log",  "binary",           "binary_residual", "ternary",    NULL};

/* the format from a call's arguments, with an optional operand prefix
** ("weight_", "data_in_", "bias_") whose settings win over the plain ones */
static int format_of(sl_Call *call, const char *prefix, slQ_Format *f) {
  char key[64];
#define PICK(name, operand_name, dflt) \
  (snprintf(key, sizeof key, "%s%s", prefix, operand_name), prefix[0] && sl_arg_given(call, key) \
                                                                ? sl_arg_number(call, key) \
                                                            : sl_arg_given(call, name) ? sl_arg_number(call, name) \
                                                                                       : (dflt))
  memset(f, 0, sizeof *f);
  snprintf(key, sizeof key, "%sformat", prefix);
  const char *format = prefix[0] && sl_arg_given(call, key) ? sl_arg_string(call, key) : sl_arg_string(call, "format");
  f->kind = (slQ_Kind)slQ_kind_from_name(format);
  /* An MX format's element width is fixed: a width given for this operand
  ** would be ignored. (The plain width is shared by every format of a sweep,
  ** so it is left to the formats that have one.) */
  snprintf(key, sizeof key, "%swidth", prefix);
  int mx_kind = f->kind >= SLQ_MXINT8 && f->kind <= SLQ_MXFP4_E2M1;
  if (mx_kind && prefix[0] && sl_arg_given(call, key))
    return sl_arg_error(call, key, "%s has a fixed element width (%s): leave width out for it", format,
                        f->kind == SLQ_MXINT8 || f->kind <= SLQ_MXFP8_E5M2 ? "8 bits"
                        : f->kind == SLQ_MXFP4_E2M1                        ? "4 bits"
                                                                           : "6 bits");
  f->width = (int)PICK("width", "width", 8);
  f->frac_width = (int)PICK("frac", "frac_width", f->width / 2);
  f->exponent_width = (int)PICK("exponent_width", "exponent_width", 4);
  f->is_signed = 1;
  int mx = f->kind >= SLQ_MXINT8 && f->kind <= SLQ_MXFP4_E2M1;
  f->block = sl_arg_given(call, "block") ? (int)sl_arg_number(call, "block") : mx ? 32 : 16;
  f->bias_width = (int)PICK("exponent_bias_width", "exponent_bias_width", 4);
  f->levels = (int)sl_arg_number(call, "levels");
  f->bipolar = sl_truthy(sl_arg(call, "bipolar"));
  f->scaled = sl_truthy(sl_arg(call, "scaled"));
  /* block_fp's shared exponent is 8 bits unless a width is given, plain or for this operand */
  snprintf(key, sizeof key, "%sexponent_width", prefix);
  if (f->kind == SLQ_BLOCK_FP && !sl_arg_given(call, "exponent_width") && !(prefix[0] && sl_arg_given(call, key)))
    f->exponent_width = 8;
  snprintf(key, sizeof key, "%sexponent_bias", prefix);
  if ((prefix[0] && sl_arg_given(call, key)) || sl_arg_given(call, "exponent_bias")) {
    f->has_bias = 1;
    f->exponent_bias = (int)PICK("exponent_bias", "exponent_bias", 0);
  }
#undef PICK
  char err[256];
  if (slQ_check(f, err, sizeof err) != 0) return sl_error(call, "%s%s%s", prefix, prefix[0] ? ": " : "", err);
  return 0;
}

/* long lists poll the interrupt every POLL values (a few milliseconds) */
enum { POLL = 1 << 16 };

/* a list of numbers, or of lists of numbers (a small matrix), flattened */
static int numbers_of(sl_Call *call, sl_Value v, float **out, size_t *n, size_t *row) {
  *n = 0;
  *row = 0;
  size_t cap = 64;
  *out = malloc(cap * sizeof **out);
  for (size_t i = 0; i < sl_list_len(v); i++) {
    sl_Value item = sl_list_get(v, i);
    size_t len = item.type == SL_LIST ? sl_list_len(item) : 1;
    /* all numbers, or all rows of one non-zero length: a mix would be cut into rows wrongly */
    if ((item.type == SL_LIST) != (sl_list_get(v, 0).type == SL_LIST) || (item.type == SL_LIST && len == 0)) {
      free(*out);
      return sl_arg_error(call, "values",
                          "must be a list of numbers, or a matrix: a list of non-empty rows of numbers");
    }
    if (item.type == SL_LIST) {
      if (*row && *row != len) {
        free(*out);
        return sl_arg_error(call, "values", "the rows of a matrix must have the same length");
      }
      *row = len;
    }
    for (size_t j = 0; j < len; j++) {
      sl_Value x = item.type == SL_LIST ? sl_list_get(item, j) : item;
      if (x.type != SL_NUMBER) {
        free(*out);
        return sl_arg_error(call, "values", "must hold numbers only, found a %s", sl_typename(x));
      }
      if ((*n & (POLL - 1)) == POLL - 1 && sl_interrupted()) {
        free(*out);
        return sl_interrupted_error(call);
      }
      if (*n == cap) *out = realloc(*out, (cap *= 2) * sizeof **out);
      (*out)[(*n)++] = (float)x.u.n;
    }
  }
  if (*n == 0) {
    free(*out);
    return sl_arg_error(call, "values", "give at least one number");
  }
  return 0;
}

/* back to the shape the values came in; nil if interrupted on the way */
static sl_Value shaped(const float *x, size_t n, size_t row) {
  sl_Value out = sl_list_new(), line = out;
  for (size_t i = 0; i < n; i++) {
    if (row && i % row == 0) {
      line = sl_list_new();
      sl_list_push(out, line);
    }
    sl_list_push(line, sl_number(x[i]));
    if ((i & (POLL - 1)) == POLL - 1 && sl_interrupted()) {
      sl_release(out);
      return sl_nil();
    }
  }
  return out;
}

static int cmd_quantize(sl_Call *call, sl_Value *result) {
  slQ_Format f;
  if (format_of(call, "", &f) != 0) return -1;
  float *x;
  size_t n, row;
  if (numbers_of(call, sl_arg(call, "values"), &x, &n, &row) != 0) return -1;
  slQ_apply(&f, x, x, n, row ? row : n); /* fast: about a nanosecond a value */
  *result = shaped(x, n, row);
  free(x);
  return result->type == SL_NIL ? sl_interrupted_error(call) : 0;
}

static void hex16(uint16_t v, char out[8]) { snprintf(out, 8, "0x%04X", v); }

static int cmd_mxint8(sl_Call *call, sl_Value *result) {
  float *x;
  size_t n, row;
  if (numbers_of(call, sl_arg(call, "values"), &x, &n, &row) != 0) return -1;
  int g = (int)sl_arg_number(call, "block");
  int8_t *m = malloc(n);
  uint8_t *e = malloc(n / (size_t)(g > 0 ? g : 1) + 1);
  char err[256];
  if (slQ_mxint8_pack(x, n, g, m, e, err, sizeof err) != 0) {
    free(x), free(m), free(e);
    return sl_arg_error(call, "values", "%s", err);
  }
  /* the record's lists, in its order; an interrupt releases all of them */
  enum { MANT, SCALES, BF16, VALUES, BIT6, ASSEMBLED, BF16_VALUES, NLISTS };
  static const char *const names[NLISTS] = {"mantissas", "scales",    "bf16",       "values",
                                            "bit6",      "assembled", "bf16_values"};
  sl_Value l[NLISTS];
  for (int k = 0; k < NLISTS; k++) l[k] = sl_list_new();
  float *dec = malloc(n * sizeof *dec);
  slQ_mxint8_unpack(m, e, n, g, dec);
  for (size_t i = 0; i < n; i++) {
    if ((i & 65535) == 0 && sl_interrupted()) { /* seven lists of millions of values take seconds */
      for (int k = 0; k < NLISTS; k++) sl_release(l[k]);
      free(x), free(m), free(e), free(dec);
      return sl_interrupted_error(call);
    }
    char hex[8];
    uint8_t scale = e[i / (size_t)g];
    uint16_t b = slQ_mxint8_to_bf16(m[i], scale);
    hex16(b, hex);
    sl_list_push(l[MANT], sl_number(m[i]));
    sl_list_push(l[BF16], sl_string(hex));
    sl_list_push(l[VALUES], sl_number(dec[i]));
    /* the kernel's region selector: bit 6 of |m| set, the assembled pattern is the value; clear, the
    ** implicit 1 (the same sign and exponent, fraction 0) is subtracted from it */
    int a = abs((int)m[i]);
    sl_list_push(l[BIT6], sl_bool((a & 0x40) != 0));
    hex16((uint16_t)((((uint8_t)m[i] & 0x80) << 8) | (scale << 7) | ((a & 0x3F) << 1)), hex);
    sl_list_push(l[ASSEMBLED], sl_string(hex));
    sl_list_push(l[BF16_VALUES], sl_number(slK_bf16_to_f32(b)));
  }
  for (size_t b = 0; b < n / (size_t)g; b++) sl_list_push(l[SCALES], sl_number(e[b]));
  *result = sl_record_new();
  for (int k = 0; k < NLISTS; k++) sl_record_set(*result, names[k], l[k]);
  sl_record_set(*result, "bits_per_value", sl_number(8 + 8.0 / g));
  free(x), free(m), free(e), free(dec);
  return 0;
}

static const char *const prune_methods[] = {"l1", "random", NULL};
static const char *const scopes[] = {"local", "global", NULL};

static int check_sparsity(sl_Call *call, double s) {
  if (!(s >= 0 && s <= 1)) return sl_arg_error(call, "sparsity", "must be between 0 and 1, got %s", SL_NUM(s));
  return 0;
}

/* MT19937 takes seeds of 32 bits, as numpy's RandomState does */
static int check_seed(sl_Call *call) {
  double seed = sl_arg_number(call, "seed");
  if (!(seed >= 0 && seed <= 4294967295.0))
    return sl_arg_error(call, "seed", "must be between 0 and 2^32 - 1, got %s", SL_NUM(seed));
  return 0;
}

static int cmd_prune_values(sl_Call *call, sl_Value *result) {
  double s = sl_arg_number(call, "sparsity");
  if (check_sparsity(call, s) != 0 || check_seed(call) != 0) return -1;
  float *x;
  size_t n, row;
  if (numbers_of(call, sl_arg(call, "values"), &x, &n, &row) != 0) return -1;
  unsigned char *mask = malloc(n);
  if (strcmp(sl_arg_string(call, "method"), "l1") == 0) slQ_prune_l1(x, n, s, mask);
  else slQ_prune_random(n, s, (uint64_t)sl_arg_number(call, "seed"), mask);
  for (size_t i = 0; i < n; i++)
    if (!mask[i]) x[i] = 0;
  *result = sl_interrupted() ? sl_nil() : shaped(x, n, row);
  free(x), free(mask);
  return result->type == SL_NIL ? sl_interrupted_error(call) : 0;
}

/* ------------------------------------------------------------- models */

static int targeted(sl_Call *call, const slM_Node *n) {
  if (n->op != OP_LINEAR || strstr(n->name, "lora_")) return 0;
  sl_Value names = sl_arg(call, "layers");
  if (sl_list_len(names) == 0) return 1; /* by type: every linear layer */
  for (size_t i = 0; i < sl_list_len(names); i++)
    if (sl_str(sl_list_get(names, i)) && strcmp(sl_str(sl_list_get(names, i)), n->name) == 0) return 1;
  return 0;
}

static int check_layers(sl_Call *call, const slM_Graph *g) {
  sl_Value names = sl_arg(call, "layers");
  for (size_t i = 0; i < sl_list_len(names); i++) {
    const char *name = sl_str(sl_list_get(names, i));
    int k = name ? slM_find_node(g, name) : -1;
    if (k < 0 || g->nodes[k].op != OP_LINEAR)
      return sl_arg_error(call, "layers", "'%s' is not a linear layer of this model (see model.node_names)",
                          name ? name : "?");
  }
  return 0;
}

static void replace(slM_Transform **slot, slM_Transform *t) {
  if (*slot && (*slot)->free) (*slot)->free(*slot);
  *slot = t;
}

/* quantises a copy of src as the call's settings say */
static int quantize_graph(sl_Call *call, slM_Graph *src, sl_Value *result) {
  if (check_layers(call, src) != 0) return -1;
  slQ_Format fx, fw, fb;
  if (format_of(call, "data_in_", &fx) != 0 || format_of(call, "weight_", &fw) != 0 ||
      format_of(call, "bias_", &fb) != 0)
    return -1;
  slM_Graph *g = slM_graph_copy(src, 1);
  int layers = 0;
  for (int i = 0; i < g->n; i++) {
    slM_Node *n = &g->nodes[i];
    if (!targeted(call, n)) continue;
    size_t in_f = (size_t)n->params[0]->value->shape[1];
    replace(&n->comp.data_in, slQ_transform(&fx, in_f));
    replace(&n->comp.weight, slQ_transform(&fw, in_f));
    if (n->nparams > 1) replace(&n->comp.bias, slQ_transform(&fb, (size_t)n->params[1]->value->size));
    layers++;
  }
  if (layers == 0) {
    slM_graph_free(g);
    return sl_error(call, "the model has no linear layer to quantise");
  }
  *result = sl_object_new(&slM_model_class, g);
  return 0;
}

/* model size: every parameter at 32 bits, against the formats and masks attached */
static int cmd_model_size(sl_Call *call, sl_Value *result) {
  slM_Graph *g = sl_arg_object(call, "model", &slM_model_class);
  /* bytes are whole per tensor, shared scales counted per started block;
  ** sparsity is of the weight matrices, the only parameters pruning masks */
  double params = 0, bytes = 0, weights = 0, kept = 0;
  for (int i = 0; i < g->n; i++) {
    const slM_Node *n = &g->nodes[i];
    for (int k = 0; k < n->nparams; k++) {
      size_t size = n->params[k]->value->size, live = size;
      const slM_Transform *t = k == 0 ? n->comp.weight : k == 1 && n->op == OP_LINEAR ? n->comp.bias : NULL;
      if (k == 0 && n->comp.weight_mask) {
        live = 0;
        for (size_t j = 0; j < size; j++) live += n->comp.weight_mask[j];
      }
      params += (double)size;
      if (n->params[k]->value->ndim >= 2) weights += (double)size, kept += (double)live;
      bytes += slQ_transform_bytes(t, size);
    }
  }
  *result = sl_record_new();
  sl_record_set(*result, "params", sl_number(params));
  sl_record_set(*result, "float32_bytes", sl_number(params * 4));
  sl_record_set(*result, "bytes", sl_number(bytes));
  sl_record_set(*result, "bits_per_param", sl_number(params ? bytes * 8 / params : 0));
  sl_record_set(*result, "saving", sl_number(params ? 1 - bytes / (params * 4) : 0));
  sl_record_set(*result, "sparsity", sl_number(weights ? 1 - kept / weights : 0));
  return 0;
}

/* Activation pruning: each forward zeroes exactly round(s * n) of the
** layer's input values, the smallest (l1) or a fresh random set (random). */
typedef struct {
  double sparsity;
  int l1;
  uint64_t seed;
  slM_Mt rng; /* random: seeded once per layer, a fresh subset every forward */
} ActivationPrune;

static void prune_activations(const slM_Transform *t, const float *in, float *out, size_t n) {
  ActivationPrune *a = t->state;
  unsigned char *mask = malloc(n ? n : 1);
  if (a->l1) slQ_prune_l1(in, n, a->sparsity, mask);
  else slQ_prune_random_stream(&a->rng, n, a->sparsity, mask);
  for (size_t i = 0; i < n; i++) out[i] = mask[i] ? in[i] : 0.0f;
  free(mask);
}

static void free_transform(slM_Transform *t) {
  free(t->state);
  free(t);
}

static slM_Transform *activation_pruner(double s, int l1, uint64_t seed);

static slM_Transform *clone_pruner(const slM_Transform *t) {
  const ActivationPrune *a = t->state;
  return activation_pruner(a->sparsity, a->l1, a->seed);
}

/* checkpoints: 'A', its settings and its random stream where it stands */
static void encode_pruner(const slM_Transform *t, slU_Text *out) {
  const ActivationPrune *a = t->state;
  slU_put_u8(out, 'A');
  slU_put_f64(out, a->sparsity);
  slU_put_u8(out, (unsigned)a->l1);
  slU_put_u64(out, a->seed);
  for (int i = 0; i < 624; i++) slU_put_u32(out, a->rng.mt[i]);
  slU_put_u32(out, (uint32_t)a->rng.index);
  slU_put_u64(out, a->rng.draws);
}

/* a node transform from the bytes its encode wrote (graph/checkpoint.c asks) */
static slM_Transform *transform_decode(const char *bytes, size_t n, char *err, size_t errlen) {
  slU_Reader r = {bytes, n, 0, 0};
  unsigned kind = slU_get_u8(&r);
  slM_Transform *t = NULL;
  if (kind == 'Q') {
    t = slQ_transform_decode(&r, err, errlen);
  } else if (kind == 'A') {
    double sparsity = slU_get_f64(&r);
    int l1 = (int)slU_get_u8(&r);
    uint64_t seed = slU_get_u64(&r);
    if (!(sparsity >= 0 && sparsity <= 1))
      return snprintf(err, errlen, "an activation pruner's settings are damaged"), NULL;
    t = activation_pruner(sparsity, l1, seed);
    ActivationPrune *a = t->state;
    for (int i = 0; i < 624; i++) a->rng.mt[i] = slU_get_u32(&r);
    a->rng.index = (int)slU_get_u32(&r);
    a->rng.draws = slU_get_u64(&r);
    if (a->rng.index < 0 || a->rng.index > 624) r.bad = 1;
  } else {
    return snprintf(err, errlen, "unknown node transform '%c' (quantisers and activation pruners are known)", kind),
           NULL;
  }
  if (t && (r.bad || r.at != n)) {
    t->free(t);
    return snprintf(err, errlen, "a node transform is truncated or damaged"), NULL;
  }
  return t;
}

static slM_Transform *activation_pruner(double s, int l1, uint64_t seed) {
  slM_Transform *t = calloc(1, sizeof *t);
  ActivationPrune *a = calloc(1, sizeof *a);
  a->sparsity = s;
  a->l1 = l1;
  a->seed = seed;
  slM_mt_seed(&a->rng, (uint32_t)seed);
  t->apply = prune_activations;
  t->free = free_transform;
  t->clone = clone_pruner;
  t->encode = encode_pruner;
  t->state = a;
  t->bits = 32;
  t->has_gradient = 1;
  snprintf(t->name, sizeof t->name, "%s activation pruning %.3g", l1 ? "l1" : "random", s);
  return t;
}

/* prunes a copy of src as the call's settings say */
static int prune_graph(sl_Call *call, slM_Graph *src, sl_Value *result) {
  double s = sl_arg_number(call, "sparsity"), as = sl_arg_number(call, "activation_sparsity");
  if (check_sparsity(call, s) != 0 || check_seed(call) != 0 || check_layers(call, src) != 0) return -1;
  if (!(as >= 0 && as <= 1))
    return sl_arg_error(call, "activation_sparsity", "must be between 0 and 1, got %s", SL_NUM(as));
  int l1 = strcmp(sl_arg_string(call, "method"), "l1") == 0;
  int global = strcmp(sl_arg_string(call, "scope"), "global") == 0;
  uint64_t seed = (uint64_t)sl_arg_number(call, "seed");
  slM_Graph *g = slM_graph_copy(src, 1);
  /* global scope pools every prunable weight in graph order */
  size_t total = 0;
  for (int i = 0; i < g->n; i++)
    if (targeted(call, &g->nodes[i])) total += g->nodes[i].params[0]->value->size;
  float *pool = global ? malloc(total * sizeof *pool) : NULL;
  unsigned char *pool_mask = global ? malloc(total) : NULL;
  size_t at = 0;
  if (global) {
    for (int i = 0; i < g->n; i++)
      if (targeted(call, &g->nodes[i])) {
        slM_Tensor *w = g->nodes[i].params[0]->value;
        memcpy(pool + at, w->data, w->size * sizeof *pool);
        at += w->size;
      }
    if (l1) slQ_prune_l1(pool, total, s, pool_mask);
    else slQ_prune_random(total, s, seed, pool_mask);
  }
  slT_Table *t = slT_new();
  slT_add_column(t, "layer");
  slT_add_column(t, "weights");
  slT_add_column(t, "pruned");
  slT_add_column(t, "sparsity");
  at = 0;
  for (int i = 0; i < g->n && !sl_interrupted(); i++) {
    slM_Node *n = &g->nodes[i];
    if (!targeted(call, n)) continue;
    slM_Tensor *w = n->params[0]->value;
    unsigned char *mask = slM_mask_new(w->size);
    if (global) memcpy(mask, pool_mask + at, w->size);
    else if (l1) slQ_prune_l1(w->data, w->size, s, mask);
    else slQ_prune_random(w->size, s, seed + (uint64_t)i, mask);
    at += w->size;
    size_t pruned = 0;
    for (size_t j = 0; j < w->size; j++) {
      if (n->comp.weight_mask && !n->comp.weight_mask[j]) mask[j] = 0; /* pruning twice keeps the first mask */
      pruned += !mask[j];
    }
    slM_mask_free(n->comp.weight_mask, w->size);
    n->comp.weight_mask = mask;
    if (as > 0) replace(&n->comp.data_in_prune, activation_pruner(as, l1, seed + 1000 + (uint64_t)i));
    for (size_t j = 0; j < w->size; j++) /* the stored weights are zero too, so an export of them is sparse */
      if (!mask[j]) w->data[j] = 0;
    size_t r = slT_add_row(t);
    slT_set(t, r, 0, sl_string(n->name));
    slT_set(t, r, 1, sl_number((double)w->size));
    slT_set(t, r, 2, sl_number((double)pruned));
    slT_set(t, r, 3, sl_number((double)pruned / (double)w->size));
  }
  free(pool);
  free(pool_mask);
  if (sl_interrupted()) { /* a sort of the weights stopped: the copy is half pruned */
    slT_free(t);
    slM_graph_free(g);
    return sl_interrupted_error(call);
  }
  sl_Value table = slT_value(t);
  if (sl_truthy(sl_arg(call, "verbose"))) {
    sl_Bundle b;
    sl_show(table, &b);
    sl_display(call, &b);
    sl_bundle_free(&b);
  }
  sl_release(table);
  *result = sl_object_new(&slM_model_class, g);
  return 0;
}

static int cmd_quantize_model(sl_Call *call, sl_Value *result) {
  return quantize_graph(call, sl_arg_object(call, "model", &slM_model_class), result);
}

static int cmd_prune(sl_Call *call, sl_Value *result) {
  return prune_graph(call, sl_arg_object(call, "model", &slM_model_class), result);
}

/* the labs' CompressionPipeline: quantise, then prune the quantised copy */
static int cmd_compress(sl_Call *call, sl_Value *result) {
  sl_Value quantised;
  if (quantize_graph(call, sl_arg_object(call, "model", &slM_model_class), &quantised) != 0) return -1;
  int rc = prune_graph(call, sl_object_data(quantised), result);
  sl_release(quantised);
  return rc;
}

static int cmd_sparsity(sl_Call *call, sl_Value *result) {
  slM_Graph *g = sl_arg_object(call, "model", &slM_model_class);
  slT_Table *t = slT_new();
  slT_add_column(t, "layer");
  slT_add_column(t, "weights");
  slT_add_column(t, "zeros");
  slT_add_column(t, "sparsity");
  for (int i = 0; i < g->n; i++) {
    const slM_Node *n = &g->nodes[i];
    if (n->op != OP_LINEAR) continue;
    const slM_Tensor *w = n->params[0]->value;
    size_t zeros = 0;
    for (size_t j = 0; j < w->size; j++) zeros += w->data[j] == 0 || (n->comp.weight_mask && !n->comp.weight_mask[j]);
    size_t r = slT_add_row(t);
    slT_set(t, r, 0, sl_string(n->name));
    slT_set(t, r, 1, sl_number((double)w->size));
    slT_set(t, r, 2, sl_number((double)zeros));
    slT_set(t, r, 3, sl_number((double)zeros / (double)w->size));
  }
  *result = slT_value(t);
  return 0;
}

/* --------------------------------------------------------------- registry */

/* clang-format off */
#define FORMAT_ARGS                                                                                    \
  {"format", SL_ARG_ENUM, 0, "integer", "the number format", format_names},                            \
  {"width", SL_ARG_INT, 0, "8", "total bits (integer, minifloat, log)"},                               \
  {"frac", SL_ARG_INT, 0, NULL, "fractional bits (integer; default width / 2)"},                       \
  {"exponent_width", SL_ARG_INT, 0, "4", "exponent bits (minifloat)"},                                 \
  {"exponent_bias", SL_ARG_INT, 0, NULL, "exponent bias (minifloat, log; default 2^(e-1) - 1)"},       \
  {"block", SL_ARG_INT, 0, NULL, "elements sharing a scale or bias (MX: 32, block formats: 16)"},              \
  {"exponent_bias_width", SL_ARG_INT, 0, "4", "bits of the shared bias (block_minifloat, block_log)"},      \
  {"levels", SL_ARG_INT, 0, "2", "binary residual levels, 1 to 3"},                                        \
  {"bipolar", SL_ARG_BOOL, 0, "true", "binary: +1/-1 (true) or mean|x| for positives (false)"},            \
  {"scaled", SL_ARG_BOOL, 0, "true", "ternary: scale by the mean kept magnitude"}

#define OPERAND_ARGS(p)                                                                        \
  {p "format", SL_ARG_ENUM, 0, NULL, "number format for this operand", format_names},          \
  {p "width", SL_ARG_INT, 0, NULL, "width for this operand"},                                  \
  {p "frac_width", SL_ARG_INT, 0, NULL, "fractional width for this operand (integer)"},        \
  {p "exponent_width", SL_ARG_INT, 0, NULL, "exponent width for this operand (minifloat)"},    \
  {p "exponent_bias", SL_ARG_INT, 0, NULL, "exponent bias for this operand"}

static const sl_Command slQ_commands[] = {
  {"quantize", "compress", "Quantise numbers (a list, or a matrix as a list of rows) to a number format.",
   "The result shows every value exactly (float32 round-trips). MX formats share one scale per block along each row.",
   "quantize [0.03125, 0.09375, 1.2345, 8.0] format=integer width=8 frac=4\nquantize [1.0, 0.1, 300] format=minifloat_ieee width=8 exponent_width=4",
   cmd_quantize, SL_CMD_LONG,
   {{"values", SL_ARG_LIST, SL_POSITIONAL | SL_REQUIRED, NULL, "the numbers"}, FORMAT_ARGS, {NULL}}},
  {"mxint8", "compress", "Pack numbers as MXINT8: int8 mantissas and one E8M0 scale byte per block.",
   "Shows the mantissas, the scale bytes, the bfloat16 bit patterns the GPU kernel decodes to, and the values; "
   "and the kernel's region selector: bit6 (bit 6 of |m|), the pattern assembled from the sign, the scale byte and "
   "|m|'s low six bits (the result itself when bit6 is set; when it is clear the same sign and exponent with a zero "
   "fraction, the implicit 1, is subtracted from it) and bf16_values, the patterns' values.",
   "mxint8 (1..32) block=32", cmd_mxint8, SL_CMD_LONG,
   {{"values", SL_ARG_LIST, SL_POSITIONAL | SL_REQUIRED, NULL, "the numbers; a multiple of block"},
    {"block", SL_ARG_INT, 0, "32", "group size: 16 or 32"}, {NULL}}},
  {"prune_values", "compress", "Zero exactly round(sparsity * n) of the numbers: the smallest (l1) or a random set.",
   "", "prune_values [0.5, -2, 0.1, 3] sparsity=0.5 method=l1", cmd_prune_values, SL_CMD_LONG,
   {{"values", SL_ARG_LIST, SL_POSITIONAL | SL_REQUIRED, NULL, "the numbers"},
    {"sparsity", SL_ARG_NUMBER, 0, "0.5", "fraction to prune, 0 to 1"},
    {"method", SL_ARG_ENUM, 0, "l1", "l1: smallest magnitudes; random: a seeded random set", prune_methods},
    {"seed", SL_ARG_INT, 0, "0", "seed (random)"}, {NULL}}},
  {"quantize_model", "compress", "A copy of a model whose linear layers compute in a number format (PTQ; train it for QAT).",
   "Settings apply to the layer input (data_in_), weight (weight_) and bias (bias_); a prefixed setting overrides the "
   "plain one. layers names the layers (default: every linear layer). Training the copy is quantisation-aware "
   "training: the forward pass uses the format, gradients pass straight through.",
   "data = dataset fashion_mnist train=1000 test=200\nbase = model mlp data=data hidden=[64]\nq = quantize_model base format=integer width=8 frac=4\nq = quantize_model base weight_width=4 weight_frac_width=2",
   cmd_quantize_model, 0,
   {{"model", SL_ARG_OBJECT, SL_POSITIONAL | SL_REQUIRED, NULL, "the model", NULL, "model"}, FORMAT_ARGS,
    OPERAND_ARGS("data_in_"), OPERAND_ARGS("weight_"), OPERAND_ARGS("bias_"),
    {"layers", SL_ARG_LIST, 0, "[]", "node names of the layers to quantise ([] = every linear layer)"}, {NULL}}},
  {"prune", "compress", "A copy of a model with weight masks: exactly round(sparsity * n) weights pruned.",
   "l1 prunes the smallest magnitudes (ties: the lower index first), random a seeded random set; local scope per "
   "layer, global over all layers pooled. Masks stay applied through training: pruned weights remain exactly 0.",
   "data = dataset fashion_mnist train=1000 test=200\nbase = model mlp data=data hidden=[64]\np = prune base sparsity=0.5 method=l1 scope=local", cmd_prune, SL_CMD_LONG,
   {{"model", SL_ARG_OBJECT, SL_POSITIONAL | SL_REQUIRED, NULL, "the model", NULL, "model"},
    {"sparsity", SL_ARG_NUMBER, 0, "0.5", "fraction of weights to prune, 0 to 1"},
    {"method", SL_ARG_ENUM, 0, "l1", "which weights", prune_methods},
    {"scope", SL_ARG_ENUM, 0, "local", "per layer, or over all layers", scopes},
    {"seed", SL_ARG_INT, 0, "0", "seed (random)"},
    {"layers", SL_ARG_LIST, 0, "[]", "node names of the layers to prune ([] = every linear layer)"},
    {"activation_sparsity", SL_ARG_NUMBER, 0, "0", "also prune this fraction of each layer's input on every forward"},
    {"verbose", SL_ARG_BOOL, 0, "false", "show the achieved sparsity per layer"}, {NULL}}},
  {"compress", "compress", "Quantise, then prune, with one configuration (the labs' compression pipeline).",
   "Takes the settings of quantize_model and of prune; returns a new model.",
   "data = dataset fashion_mnist train=1000 test=200\nbase = model mlp data=data hidden=[64]\nc = compress base format=integer width=8 frac=4 sparsity=0.5 method=l1", cmd_compress, SL_CMD_LONG,
   {{"model", SL_ARG_OBJECT, SL_POSITIONAL | SL_REQUIRED, NULL, "the model", NULL, "model"}, FORMAT_ARGS,
    OPERAND_ARGS("data_in_"), OPERAND_ARGS("weight_"), OPERAND_ARGS("bias_"),
    {"layers", SL_ARG_LIST, 0, "[]", "node names of the layers to compress ([] = every linear layer)"},
    {"sparsity", SL_ARG_NUMBER, 0, "0.5", "fraction of weights to prune, 0 to 1"},
    {"method", SL_ARG_ENUM, 0, "l1", "which weights", prune_methods},
    {"scope", SL_ARG_ENUM, 0, "local", "per layer, or over all layers", scopes},
    {"seed", SL_ARG_INT, 0, "0", "seed (random)"},
    {"activation_sparsity", SL_ARG_NUMBER, 0, "0", "also prune this fraction of each layer's input"},
    {"verbose", SL_ARG_BOOL, 0, "false", "show the achieved sparsity per layer"}, {NULL}}},
  {"sparsity", "compress", "The fraction of zero (or masked) weights in each linear layer, as a table.", "",
   "data = dataset fashion_mnist train=1000 test=200\nbase = model mlp data=data hidden=[64]\np = prune base sparsity=0.5\nsparsity p", cmd_sparsity, 0,
   {{"model", SL_ARG_OBJECT, SL_POSITIONAL | SL_REQUIRED, NULL, "the model", NULL, "model"}, {NULL}}},
  {"model_size", "compress", "Parameters, bytes in float32 and in the attached formats, bits per parameter, saving.",
   "", "data = dataset fashion_mnist train=1000 test=200\nbase = model mlp data=data hidden=[64]\nq = quantize_model base format=mxint8\nmodel_size q", cmd_model_size, 0,
   {{"model", SL_ARG_OBJECT, SL_POSITIONAL | SL_REQUIRED, NULL, "the model", NULL, "model"}, {NULL}}},
  {NULL},
};
/* clang-format on */

/* the engine's start: the graph reads checkpointed transforms through this layer */
static void compress_open(void) { slM_set_transform_decoder(transform_decode); }

const sl_Domain slQ_domain = {
    "Compression",
    "Number formats and pruning applied to numbers and to models: quantisation to integer, minifloat, log, block and OCP MX formats (post-training, or quantisation-aware when the model is trained), exact-k pruning of weights and activations, and the sizes and sparsities that result.",
    slQ_commands,
    .open = compress_open,
};
