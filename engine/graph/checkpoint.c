/*
** checkpoint.c - models as bytes: what `save` writes, what `load` reads,
** and what a search ships to its worker processes (data sets travel as
** their definition: data.c).
**
** A model is written whole, field by field, in a fixed order and fixed
** widths (lang/codec.c's helpers, little endian): the graph's settings and
** builder arguments (the language model's vocabulary, context and widths
** among them), its precision mode and buffer planning, the dropout random
** state, then every parameter once (graphs share parameters between nodes,
** so nodes refer to them by number), then the nodes with their settings and
** pruning masks. Operators are written by name, never by their number in
** model.h's enum, so a new operator numbered among the others re-labels no
** saved model. Reading it back rebuilds the same structure and the same
** bits, and checks it with slM_verify (each operator's record declares the
** settings it reads and their ranges), so a damaged body cannot produce a
** graph that crashes later.
**
** Formats: 2 is written; 1 (operators by number, no precision mode, no
** language-model sizes, no attention or activation settings of fused
** nodes) is still read, and what it left out is recovered from what it
** kept (format1_fill).
**
** Node transforms (quantisers, activation pruners) are written by their own
** encode and read back by the decoder compress/ installs when the engine
** starts (slM_set_transform_decoder): the graph stores their bytes without
** knowing what they mean.
** Optimiser state (Adam's m and v) travels with the weights: training a
** loaded model continues exactly as the original would.
*/
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ops.h"
#include "precision.h"

static slM_TransformDecoder transform_decoder;

void slM_set_transform_decoder(slM_TransformDecoder decode) { transform_decoder = decode; }

#define GRAPH_FORMAT 2
#define MAX_NODES 100000
#define MAX_PARAMS 200000

/* Format 1 wrote each operator as its number in the enum of that time:
** these are the names those operators have now, in that order (number 27,
** the language model's loss, was then called cross_entropy too). Frozen:
** the enum may change, this list may not. */
static const char *const format1_ops[] = {
    "x",
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
    "masked_softmax",
};
#define FORMAT1_OPS ((uint32_t)(sizeof format1_ops / sizeof *format1_ops))

static void put_tensor(slU_Text *out, const slM_Tensor *t) {
  slU_put_u8(out, t != NULL);
  if (!t) return;
  slU_put_u32(out, (uint32_t)t->ndim);
  for (int d = 0; d < t->ndim; d++) slU_put_u32(out, (uint32_t)t->shape[d]);
  slU_put_f32s(out, t->data, t->size);
}

static slM_Tensor *get_tensor(slU_Reader *r) {
  if (!slU_get_u8(r)) return NULL;
  int ndim = (int)slU_get_u32(r), shape[SLM_MAX_DIMS] = {0};
  if (ndim < 0 || ndim > SLM_MAX_DIMS) return r->bad = 1, NULL;
  size_t size = 1;
  for (int d = 0; d < ndim; d++) {
    shape[d] = (int)slU_get_u32(r);
    if (shape[d] < 0) return r->bad = 1, NULL;
    size *= (size_t)shape[d];
  }
  if (r->bad || size > (r->n - r->at) / 4) return r->bad = 1, NULL; /* before allocating */
  slM_Tensor *t = slM_tensor_new(ndim, shape);
  slU_get_f32s(r, t->data, t->size);
  return t;
}

/* an operator by name, as format 2 writes it (-1: none known by that name) */
static int get_op(slU_Reader *r) {
  char name[64];
  slU_get_str(r, name, sizeof name);
  return r->bad ? -1 : slM_op_by_name(name);
}

/* the node's transforms, in a fixed order */
static slM_Transform **slots(slM_Node *n, int k) {
  slM_Transform **all[] = {&n->comp.data_in, &n->comp.data_in_prune, &n->comp.weight, &n->comp.bias};
  return all[k];
}

/* the graph's settings, in format 2's order (the decoder reads them back in it) */
enum { GRAPH_INTS = 18 };
static void graph_ints(slM_Graph *g, int *out[GRAPH_INTS]) {
  int *all[GRAPH_INTS] = {&g->features, &g->classes, &g->tokens, &g->with_labels, &g->with_mask, &g->training,
                          &g->nhidden,  &g->depth,   &g->width,  &g->heads,       &g->mlp_ratio, &g->patch,
                          &g->vocab,    &g->context, &g->d_ff,   &g->layers,      &g->plan,      &g->fused_attention};
  memcpy(out, all, sizeof all);
}

static void put_node(slU_Text *out, const slM_Node *n, const slM_Param *const *params) {
  slU_put_str(out, n->name);
  slU_put_u32(out, (uint32_t)n->kind);
  slU_put_str(out, slM_op_name(n->op));
  slU_put_u32(out, (uint32_t)n->ninputs);
  for (int k = 0; k < n->ninputs; k++) slU_put_u32(out, (uint32_t)n->inputs[k]);
  slU_put_u32(out, (uint32_t)n->nparams);
  for (int k = 0; k < n->nparams; k++) {
    int j = 0;
    while (params[j] != n->params[k]) j++;
    slU_put_u32(out, (uint32_t)j);
  }
  slU_put_u32(out, (uint32_t)n->heads);
  slU_put_u32(out, (uint32_t)n->patch);
  slU_put_f32(out, n->p);
  slU_put_u8(out, n->causal != 0);
  slU_put_str(out, n->op == OP_LINEAR_ACT ? slM_op_name((slM_Op)n->act) : "");
  slU_put_u8(out, n->comp.weight_mask != NULL);
  if (n->comp.weight_mask) slU_put_bytes(out, n->comp.weight_mask, n->params[0]->value->size);
  for (int k = 0; k < 4; k++) {
    const slM_Transform *t = *slots((slM_Node *)n, k);
    slU_put_u8(out, t != NULL);
    if (!t) continue;
    slU_Text bytes = {0};
    t->encode(t, &bytes);
    slU_put_bytes(out, bytes.s, bytes.n);
    free(bytes.s);
  }
}

int slM_graph_encode(const slM_Graph *g, slU_Text *out, char *err, size_t errlen) {
  for (int i = 0; i < g->n; i++)
    for (int k = 0; k < 4; k++) {
      const slM_Transform *t = *slots(&g->nodes[i], k);
      if (t && !t->encode)
        return snprintf(err, errlen, "node '%s' carries the transform %s, which cannot be saved", g->nodes[i].name,
                        t->name),
               -1;
    }
  slU_put_u32(out, GRAPH_FORMAT);
  slU_put_str(out, g->family);
  slU_put_str(out, g->description);
  int *ints[GRAPH_INTS];
  graph_ints((slM_Graph *)g, ints); /* read, not written */
  for (int i = 0; i < GRAPH_INTS; i++) slU_put_u32(out, (uint32_t)*ints[i]);
  slU_put_str(out, slM_op_name((slM_Op)g->activation));
  slU_put_str(out, slM_precision_names[g->precision]);
  for (int i = 0; i < 8; i++) slU_put_u32(out, (uint32_t)g->hidden[i]);
  slU_put_f32(out, g->dropout);
  slU_put_u64(out, g->rng.state);

  /* parameters, each once, numbered in order of first use */
  const slM_Param **params = malloc(((size_t)g->n * SLM_MAX_PARAMS + 1) * sizeof *params);
  int np = 0;
  for (int i = 0; i < g->n; i++)
    for (int k = 0; k < g->nodes[i].nparams; k++) {
      int j = 0;
      while (j < np && params[j] != g->nodes[i].params[k]) j++;
      if (j == np) params[np++] = g->nodes[i].params[k];
    }
  slU_put_u32(out, (uint32_t)np);
  for (int j = 0; j < np; j++) {
    slU_put_str(out, params[j]->name);
    slU_put_u8(out, (unsigned)params[j]->frozen);
    put_tensor(out, params[j]->value);
    put_tensor(out, params[j]->m);
    put_tensor(out, params[j]->v);
  }
  slU_put_u32(out, (uint32_t)g->n);
  for (int i = 0; i < g->n; i++) put_node(out, &g->nodes[i], params);
  free(params);
  return 0;
}

/* Shape functions multiply the builders' arguments and a node's settings
** in int and divide by some of them: a checkpoint keeps them within what a
** builder makes, so a damaged one is refused here rather than overflowing
** or dividing by zero in slM_verify. (A node's own settings are held to the
** ranges its operator's record declares, by slM_verify.) */
#define MAX_SIZE (1 << 24)

static int in_range(int x, int lo, int hi) { return x >= lo && x <= hi; }

static int settings_ok(const slM_Graph *g) {
  const int sizes[] = {g->features,  g->classes, g->tokens, g->depth,   g->width, g->heads,
                       g->mlp_ratio, g->patch,   g->vocab,  g->context, g->d_ff,  g->layers};
  for (size_t i = 0; i < sizeof sizes / sizeof *sizes; i++)
    if (!in_range(sizes[i], 0, MAX_SIZE)) return 0;
  for (int i = 0; i < 8; i++)
    if (!in_range(g->hidden[i], 0, MAX_SIZE)) return 0;
  return in_range(g->nhidden, 0, 8) && in_range(g->activation, 0, SLM_NUM_OPS - 1) && in_range(g->with_labels, 0, 1) &&
         in_range(g->with_mask, 0, 1) && in_range(g->training, 0, 1) && in_range(g->plan, 0, 1) &&
         in_range(g->fused_attention, 0, 1) && in_range(g->precision, SLM_FP32, SLM_FP16) && g->dropout >= 0 &&
         g->dropout < 1;
}

/* the graph's settings: format 2 in graph_ints's order with the activation and precision by name,
** format 1 in its own order with the activation by number */
static void get_settings(slU_Reader *r, uint32_t format, slM_Graph *g) {
  if (format == 1) {
    int *ints[] = {&g->features,   &g->classes, &g->tokens, &g->with_labels, &g->with_mask, &g->training, &g->nhidden,
                   &g->activation, &g->depth,   &g->width,  &g->heads,       &g->mlp_ratio, &g->patch};
    for (size_t i = 0; i < sizeof ints / sizeof *ints; i++) *ints[i] = (int)slU_get_u32(r);
    uint32_t act = (uint32_t)g->activation;
    g->activation = act < FORMAT1_OPS ? slM_op_by_name(format1_ops[act]) : -1;
  } else {
    int *ints[GRAPH_INTS];
    graph_ints(g, ints);
    for (int i = 0; i < GRAPH_INTS; i++) *ints[i] = (int)slU_get_u32(r);
    g->activation = get_op(r);
    char precision[16];
    slU_get_str(r, precision, sizeof precision);
    g->precision = -1;
    for (int m = 0; slM_precision_names[m]; m++)
      if (strcmp(precision, slM_precision_names[m]) == 0) g->precision = m;
  }
  for (int i = 0; i < 8; i++) g->hidden[i] = (int)slU_get_u32(r);
  g->dropout = slU_get_f32(r);
  g->rng.state = slU_get_u64(r);
}

/* What format 1 did not write, recovered from what it did, as the builders
** and the fusion pass (passes.c) make them: a language model's sizes (its
** vocabulary is its classes, its context its tokens, its layers its depth,
** d_ff the rows of a feed-forward weight); fused attention is causal in the
** language model alone, and an image transformer with it was built or set
** so; a fused linear layer's activation is the one its
** name was joined with; buffer planning is on where the fusion pass ran. */
static void format1_fill(slM_Graph *g) {
  int lm = strcmp(g->family, "lm") == 0, fused = 0;
  if (lm) g->vocab = g->classes, g->context = g->tokens, g->layers = g->depth;
  for (int i = 0; i < g->n; i++) {
    slM_Node *n = &g->nodes[i];
    const char *joined = strchr(n->name, '+');
    if (lm && g->d_ff == 0 && n->nparams && strstr(n->params[0]->name, "ffn_w1.weight"))
      g->d_ff = n->params[0]->value->shape[0];
    if (n->op == OP_ATTENTION) n->causal = lm, g->fused_attention = strcmp(g->family, "transformer") == 0;
    if (n->op == OP_LINEAR_ACT) n->act = joined && strstr(joined, "gelu") ? OP_GELU : OP_RELU;
    fused |=
        n->op == OP_LINEAR_ACT || n->op == OP_ADD_NORM || n->op == OP_MASKED_SOFTMAX || (lm && n->op == OP_ATTENTION);
  }
  g->plan = fused;
}

static slM_Graph *fail(slM_Graph *g, slM_Param **params, int np, char *err, size_t errlen, const char *why) {
  snprintf(err, errlen, "not a model checkpoint: %s", why);
  for (int j = 0; j < np; j++) slM_param_release(params[j]);
  free(params);
  slM_graph_free(g);
  return NULL;
}

/* a node's pruning mask and transforms: NULL, or why they are damaged */
static const char *get_compression(slU_Reader *r, slM_Node *n, char *why, size_t whylen) {
  if (slU_get_u8(r)) {
    size_t len;
    const char *mask = slU_get_bytes(r, &len);
    if (!mask || n->nparams == 0 || len != n->params[0]->value->size) return "a pruning mask does not fit its weight";
    n->comp.weight_mask = slM_mask_new(len);
    memcpy(n->comp.weight_mask, mask, len);
  }
  for (int k = 0; k < 4; k++) {
    if (!slU_get_u8(r)) continue;
    size_t len;
    const char *tb = slU_get_bytes(r, &len);
    if (!tb) return "the data is truncated";
    if (!transform_decoder) return "no number format is known to this program";
    slM_Transform *t = transform_decoder(tb, len, why, whylen);
    if (!t) return why;
    *slots(n, k) = t;
  }
  return NULL;
}

/* one node, appended to g; NULL, or why it is damaged */
static const char *get_node(slU_Reader *r, uint32_t format, slM_Graph *g, slM_Param **params, uint32_t np, char *why,
                            size_t whylen) {
  char name[64];
  slU_get_str(r, name, sizeof name);
  slM_Kind kind = (slM_Kind)slU_get_u32(r);
  int op;
  if (format == 1) {
    uint32_t number = slU_get_u32(r);
    op = number < FORMAT1_OPS ? slM_op_by_name(format1_ops[number]) : -1;
  } else {
    op = get_op(r);
  }
  int ninputs = (int)slU_get_u32(r), inputs[SLM_MAX_INPUTS] = {0};
  if (r->bad || kind > SLM_OUTPUT || op < 0 || ninputs < 0 || ninputs > SLM_MAX_INPUTS) return "a node is malformed";
  for (int k = 0; k < ninputs; k++) {
    inputs[k] = (int)slU_get_u32(r);
    if (inputs[k] < 0 || inputs[k] >= g->n) return "a node input is out of range";
  }
  int at = slM_add_node(g, name, kind, (slM_Op)op, inputs, ninputs); /* may move g->nodes */
  slM_Node *n = &g->nodes[at];
  int nparams = (int)slU_get_u32(r);
  if (nparams < 0 || nparams > SLM_MAX_PARAMS) return "a node is malformed";
  for (int k = 0; k < nparams; k++) {
    uint32_t j = slU_get_u32(r);
    if (r->bad || j >= np) return "a parameter reference is out of range";
    n->params[n->nparams++] = params[j];
    params[j]->refs++;
  }
  n->heads = (int)slU_get_u32(r);
  n->patch = (int)slU_get_u32(r);
  n->p = slU_get_f32(r);
  if (format >= 2) {
    n->causal = slU_get_u8(r) != 0;
    char act[64];
    slU_get_str(r, act, sizeof act);
    if (act[0] && (n->act = slM_op_by_name(act)) < 0) return "a fused node's activation is unknown";
  }
  const char *damaged = get_compression(r, n, why, whylen);
  return damaged ? damaged : r->bad ? "the data is truncated" : NULL;
}

slM_Graph *slM_graph_decode(const char *bytes, size_t size, char *err, size_t errlen) {
  slU_Reader r = {bytes, size, 0, 0};
  uint32_t format = slU_get_u32(&r);
  if (format < 1 || format > GRAPH_FORMAT) {
    snprintf(err, errlen, "the model was written in format %u; this syslab reads formats 1 to %d", format,
             GRAPH_FORMAT);
    return NULL;
  }
  slM_Graph *g = calloc(1, sizeof *g);
  slU_get_str(&r, g->family, sizeof g->family);
  slU_get_str(&r, g->description, sizeof g->description);
  get_settings(&r, format, g);
  if (r.bad || !settings_ok(g)) return fail(g, NULL, 0, err, errlen, "the model's settings are out of range");
  uint32_t np = slU_get_u32(&r);
  if (r.bad || np > MAX_PARAMS) return fail(g, NULL, 0, err, errlen, "the parameter count is out of range");
  slM_Param **params = calloc(np + 1, sizeof *params);
  for (uint32_t j = 0; j < np; j++) {
    slM_Param *p = calloc(1, sizeof *p);
    p->refs = 1;
    params[j] = p;
    slU_get_str(&r, p->name, sizeof p->name);
    p->frozen = (int)slU_get_u8(&r);
    p->value = get_tensor(&r);
    p->m = get_tensor(&r);
    p->v = get_tensor(&r);
    if (r.bad || !p->value) return fail(g, params, (int)j + 1, err, errlen, "a parameter is truncated");
  }
  uint32_t nn = slU_get_u32(&r);
  if (r.bad || nn > MAX_NODES) return fail(g, params, (int)np, err, errlen, "the node count is out of range");
  char why[256];
  for (uint32_t i = 0; i < nn; i++) {
    const char *damaged = get_node(&r, format, g, params, np, why, sizeof why);
    if (damaged) return fail(g, params, (int)np, err, errlen, damaged);
  }
  if (r.bad) return fail(g, params, (int)np, err, errlen, "the data is truncated");
  if (r.at != r.n) return fail(g, params, (int)np, err, errlen, "unexpected bytes after the last node");
  for (uint32_t j = 0; j < np; j++) slM_param_release(params[j]); /* the nodes hold them now */
  free(params);
  if (format == 1) format1_fill(g);
  char reason[512];
  if (slM_verify(g, reason, sizeof reason) != 0 || slM_propagate(g, reason, sizeof reason) != 0) {
    snprintf(err, errlen, "the checkpoint's graph is inconsistent: %s", reason);
    slM_graph_free(g);
    return NULL;
  }
  return g;
}
