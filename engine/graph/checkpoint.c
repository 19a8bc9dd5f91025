/*
** checkpoint.c - models as bytes: what `save` writes, what `load` reads,
** and what a search ships to its worker processes (data sets travel as
** their definition: data.c).
**
** A model is written whole, field by field, in a fixed order and fixed
** widths (lang/codec.c's helpers, little endian): the graph's settings and
** builder arguments, the dropout random state, then every parameter once
** (graphs share parameters between nodes, so nodes refer to them by
** number), then the nodes with their metadata and pruning masks. Reading it
** back rebuilds the same structure and the same bits, and checks it with
** slM_verify, so a damaged body cannot produce a graph that crashes later.
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

#include "model.h"

static slM_TransformDecoder transform_decoder;

void slM_set_transform_decoder(slM_TransformDecoder decode) { transform_decoder = decode; }

#define GRAPH_FORMAT 1
#define MAX_NODES 100000
#define MAX_PARAMS 200000

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
  if (r->bad || size > (r->n - r->at) / 4) return r->bad = 1, NULL;  /* before allocating */
  slM_Tensor *t = slM_tensor_new(ndim, shape);
  slU_get_f32s(r, t->data, t->size);
  return t;
}

/* the node's transforms, in a fixed order */
static slM_Transform **slots(slM_Node *n, int k) {
  slM_Transform **all[] = {&n->comp.data_in, &n->comp.data_in_prune, &n->comp.weight, &n->comp.bias};
  return all[k];
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
  const int ints[] = {g->features, g->classes, g->tokens, g->with_labels, g->with_mask, g->training, g->nhidden,
                      g->activation, g->depth, g->width, g->heads, g->mlp_ratio, g->patch};
  for (size_t i = 0; i < sizeof ints / sizeof *ints; i++) slU_put_u32(out, (uint32_t)ints[i]);
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
  for (int i = 0; i < g->n; i++) {
    const slM_Node *n = &g->nodes[i];
    slU_put_str(out, n->name);
    slU_put_u32(out, (uint32_t)n->kind);
    slU_put_u32(out, (uint32_t)n->op);
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
  free(params);
  return 0;
}

/* Shape functions multiply the builders' arguments and a node's settings
** in int and divide by some of them: a checkpoint keeps them within what a
** builder makes, so a damaged one is refused here rather than overflowing
** or dividing by zero in slM_verify. */
#define MAX_SIZE (1 << 24)

static int in_range(int x, int lo, int hi) { return x >= lo && x <= hi; }

static int settings_ok(const slM_Graph *g) {
  const int sizes[] = {g->features, g->classes, g->tokens, g->depth, g->width, g->heads, g->mlp_ratio, g->patch};
  for (size_t i = 0; i < sizeof sizes / sizeof *sizes; i++)
    if (!in_range(sizes[i], 0, MAX_SIZE)) return 0;
  for (int i = 0; i < 8; i++)
    if (!in_range(g->hidden[i], 0, MAX_SIZE)) return 0;
  return in_range(g->nhidden, 0, 8) && in_range(g->activation, 0, SLM_NUM_OPS - 1) && in_range(g->with_labels, 0, 1) &&
         in_range(g->with_mask, 0, 1) && in_range(g->training, 0, 1) && g->dropout >= 0 && g->dropout < 1;
}

static int node_settings_ok(const slM_Node *n) {
  if (!in_range(n->heads, 0, 1 << 16) || !in_range(n->patch, 0, 1 << 15) || !isfinite(n->p)) return 0;
  if ((n->op == OP_SCORES || n->op == OP_CONTEXT || n->op == OP_ATTENTION || n->op == OP_ROPE) && n->heads < 1) return 0;
  if (n->op == OP_PATCHIFY && n->patch < 1) return 0;
  if (n->op == OP_DROPOUT && !(n->p >= 0 && n->p < 1)) return 0;
  return 1;
}

static slM_Graph *fail(slM_Graph *g, slM_Param **params, int np, char *err, size_t errlen, const char *why) {
  snprintf(err, errlen, "not a model checkpoint: %s", why);
  for (int j = 0; j < np; j++) slM_param_release(params[j]);
  free(params);
  slM_graph_free(g);
  return NULL;
}

slM_Graph *slM_graph_decode(const char *bytes, size_t size, char *err, size_t errlen) {
  slU_Reader r = {bytes, size, 0, 0};
  uint32_t format = slU_get_u32(&r);
  if (format != GRAPH_FORMAT) {
    snprintf(err, errlen, "the model was written in format %u; this syslab reads format %d", format, GRAPH_FORMAT);
    return NULL;
  }
  slM_Graph *g = calloc(1, sizeof *g);
  slU_get_str(&r, g->family, sizeof g->family);
  slU_get_str(&r, g->description, sizeof g->description);
  int *ints[] = {&g->features, &g->classes, &g->tokens, &g->with_labels, &g->with_mask, &g->training, &g->nhidden,
                 &g->activation, &g->depth, &g->width, &g->heads, &g->mlp_ratio, &g->patch};
  for (size_t i = 0; i < sizeof ints / sizeof *ints; i++) *ints[i] = (int)slU_get_u32(&r);
  for (int i = 0; i < 8; i++) g->hidden[i] = (int)slU_get_u32(&r);
  g->dropout = slU_get_f32(&r);
  g->rng.state = slU_get_u64(&r);

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
  for (uint32_t i = 0; i < nn; i++) {
    char name[64];
    slU_get_str(&r, name, sizeof name);
    slM_Kind kind = (slM_Kind)slU_get_u32(&r);
    slM_Op op = (slM_Op)slU_get_u32(&r);
    int ninputs = (int)slU_get_u32(&r), inputs[SLM_MAX_INPUTS] = {0};
    if (r.bad || kind > SLM_OUTPUT || op >= SLM_NUM_OPS || ninputs < 0 || ninputs > SLM_MAX_INPUTS)
      return fail(g, params, (int)np, err, errlen, "a node is malformed");
    for (int k = 0; k < ninputs; k++) {
      inputs[k] = (int)slU_get_u32(&r);
      if (inputs[k] < 0 || inputs[k] >= (int)i) return fail(g, params, (int)np, err, errlen, "a node input is out of range");
    }
    int at = slM_add_node(g, name, kind, op, inputs, ninputs);
    slM_Node *n = &g->nodes[at];
    int nparams = (int)slU_get_u32(&r);
    if (nparams < 0 || nparams > SLM_MAX_PARAMS) return fail(g, params, (int)np, err, errlen, "a node is malformed");
    for (int k = 0; k < nparams; k++) {
      uint32_t j = slU_get_u32(&r);
      if (r.bad || j >= np) return fail(g, params, (int)np, err, errlen, "a parameter reference is out of range");
      n->params[n->nparams++] = params[j];
      params[j]->refs++;
    }
    n->heads = (int)slU_get_u32(&r);
    n->patch = (int)slU_get_u32(&r);
    n->p = slU_get_f32(&r);
    if (!node_settings_ok(n)) return fail(g, params, (int)np, err, errlen, "a node's settings are out of range");
    if (slU_get_u8(&r)) {
      size_t len;
      const char *mask = slU_get_bytes(&r, &len);
      if (!mask || n->nparams == 0 || len != n->params[0]->value->size)
        return fail(g, params, (int)np, err, errlen, "a pruning mask does not fit its weight");
      n->comp.weight_mask = malloc(len);
      memcpy(n->comp.weight_mask, mask, len);
    }
    for (int k = 0; k < 4; k++) {
      if (!slU_get_u8(&r)) continue;
      size_t len;
      const char *tb = slU_get_bytes(&r, &len);
      char why[256];
      if (tb && !transform_decoder) snprintf(why, sizeof why, "no number format is known to this program");
      slM_Transform *t = tb && transform_decoder ? transform_decoder(tb, len, why, sizeof why) : NULL;
      if (!t) return fail(g, params, (int)np, err, errlen, tb ? why : "the data is truncated");
      *slots(n, k) = t;
    }
    if (r.bad) return fail(g, params, (int)np, err, errlen, "the data is truncated");
  }
  if (r.bad) return fail(g, params, (int)np, err, errlen, "the data is truncated");
  if (r.at != r.n) return fail(g, params, (int)np, err, errlen, "unexpected bytes after the last node");
  for (uint32_t j = 0; j < np; j++) slM_param_release(params[j]);  /* the nodes hold them now */
  free(params);
  char why[512];
  if (slM_verify(g, why, sizeof why) != 0 || slM_propagate(g, why, sizeof why) != 0) {
    snprintf(err, errlen, "the checkpoint's graph is inconsistent: %s", why);
    slM_graph_free(g);
    return NULL;
  }
  return g;
}
