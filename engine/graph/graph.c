/*
** graph.c - the graph IR: nodes and parameters, the built-in model
** families, capture, copies, verification, metadata and transform passes.
**
** Nodes are kept in execution order and refer to their inputs by index, so
** an input always comes before its users and the graph is acyclic by
** construction; users are derived when needed rather than stored twice.
** Parameters are reference-counted: a capture or a pass shares them with
** the graph it came from, a deep copy owns new ones.
*/
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lm.h"
#include "memory.h"
#include "plan.h"

static const char *const op_names[SLM_NUM_OPS] = {
  "x", "labels", "attention_mask", "linear", "relu", "gelu", "tanh", "dropout", "layer_norm", "patchify",
  "add", "matmul_qk", "masked_fill", "softmax", "matmul_pv", "scaled_dot_product_attention", "mean", "mul",
  "cross_entropy", "output",
  "tokens", "targets", "embedding", "rms_norm", "rope", "swiglu", "causal_mask", "cross_entropy",
  "linear_act", "add_layer_norm", "masked_softmax",
};

const char *slM_op_name(slM_Op op) { return op < SLM_NUM_OPS ? op_names[op] : "?"; }

const char *slM_kind_name(slM_Kind k) {
  static const char *const names[] = {"placeholder", "call_module", "call_function", "call_method", "output"};
  return names[k];
}

/* ------------------------------------------------------------ parameters */

slM_Param *slM_param_new(const char *name, int ndim, const int *shape) {
  slM_Param *p = calloc(1, sizeof *p);
  p->refs = 1;
  snprintf(p->name, sizeof p->name, "%s", name);
  p->value = slM_tensor_new(ndim, shape);
  slM_mem_retag(p->value, SLM_MEM_PARAM);
  return p;
}

void slM_param_release(slM_Param *p) {
  if (!p || --p->refs > 0) return;
  slM_tensor_free(p->value);
  slM_tensor_free(p->grad);
  slM_tensor_free(p->m);
  slM_tensor_free(p->v);
  free(p);
}

static slM_Param *param_clone(const slM_Param *p) {
  slM_Param *c = slM_param_new(p->name, p->value->ndim, p->value->shape);
  memcpy(c->value->data, p->value->data, p->value->size * sizeof(float));
  c->frozen = p->frozen;
  return c;
}

static void init_normal(slM_Param *p, slM_Rng *rng, double std) {
  for (size_t i = 0; i < p->value->size; i++) p->value->data[i] = (float)(slM_rng_normal(rng) * std);
}

static void init_const(slM_Param *p, float v) {
  for (size_t i = 0; i < p->value->size; i++) p->value->data[i] = v;
}

/* ----------------------------------------------------------------- nodes */

int slM_add_node(slM_Graph *g, const char *name, slM_Kind kind, slM_Op op, const int *inputs, int ninputs) {
  if (g->n == g->cap) {
    g->cap = g->cap ? g->cap * 2 : 32;
    g->nodes = realloc(g->nodes, (size_t)g->cap * sizeof *g->nodes);
  }
  slM_Node *n = &g->nodes[g->n];
  memset(n, 0, sizeof *n);
  snprintf(n->name, sizeof n->name, "%s", name);
  n->kind = kind;
  n->op = op;
  for (int i = 0; i < ninputs; i++) n->inputs[i] = inputs[i];
  n->ninputs = ninputs;
  return g->n++;
}

static void free_comp(slM_NodeTransforms *c) {
  slM_Transform *ts[4] = {c->data_in, c->data_in_prune, c->weight, c->bias};
  for (int i = 0; i < 4; i++)
    if (ts[i] && ts[i]->free) ts[i]->free(ts[i]);
  free(c->weight_mask);
  memset(c, 0, sizeof *c);
}

static void free_node(slM_Node *n) {
  for (int k = 0; k < n->nparams; k++) slM_param_release(n->params[k]);
  free_comp(&n->comp);
  slM_tensor_free(n->out);
  slM_tensor_free(n->gout);
  slM_tensor_free(n->saved);
  slM_tensor_free(n->saved2);
}

void slM_graph_free(slM_Graph *g) {
  if (!g) return;
  slM_plan_free(g);
  for (int i = 0; i < g->n; i++) free_node(&g->nodes[i]);
  free(g->nodes);
  free(g);
}

int slM_find_node(const slM_Graph *g, const char *name) {
  for (int i = 0; i < g->n; i++)
    if (strcmp(g->nodes[i].name, name) == 0) return i;
  return -1;
}

int slM_output_node(const slM_Graph *g) {
  for (int i = g->n - 1; i >= 0; i--)
    if (g->nodes[i].op == OP_OUTPUT) return i;
  return -1;
}

int slM_logits_node(const slM_Graph *g) {
  for (int i = 0; i < g->n; i++)
    if (g->nodes[i].op == OP_CROSS_ENTROPY || g->nodes[i].op == OP_TOKEN_CE) return g->nodes[i].inputs[0];
  int o = slM_output_node(g);
  return o >= 0 ? g->nodes[o].inputs[0] : g->n - 1;
}

int slM_users(const slM_Graph *g, int i, int *users) {
  int n = 0;
  for (int j = i + 1; j < g->n; j++)
    for (int k = 0; k < g->nodes[j].ninputs; k++)
      if (g->nodes[j].inputs[k] == i) {
        users[n++] = j;
        break;
      }
  return n;
}

size_t slM_node_params(const slM_Node *n) {
  size_t total = 0;
  for (int k = 0; k < n->nparams; k++) total += n->params[k]->value->size;
  return total;
}

void slM_param_counts(const slM_Graph *g, size_t *trainable, size_t *total) {
  *trainable = *total = 0;
  for (int i = 0; i < g->n; i++)
    for (int k = 0; k < g->nodes[i].nparams; k++) {
      size_t s = g->nodes[i].params[k]->value->size;
      *total += s;
      if (!g->nodes[i].params[k]->frozen) *trainable += s;
    }
}

/* ------------------------------------------------------------ builders */

static int linear(slM_Graph *g, const char *name, int input, int in_f, int out_f, int bias, slM_Rng *rng, double gain) {
  int i = slM_add_node(g, name, SLM_CALL_MODULE, OP_LINEAR, &input, 1);
  char pname[96];
  int wshape[2] = {out_f, in_f};
  snprintf(pname, sizeof pname, "%s.weight", name);
  slM_Node *n = &g->nodes[i];
  n->params[n->nparams++] = slM_param_new(pname, 2, wshape);
  init_normal(n->params[0], rng, gain / sqrt((double)in_f));
  if (bias) {
    snprintf(pname, sizeof pname, "%s.bias", name);
    n->params[n->nparams++] = slM_param_new(pname, 1, &out_f);
  }
  return i;
}

static int unary(slM_Graph *g, const char *name, slM_Kind kind, slM_Op op, int input) {
  return slM_add_node(g, name, kind, op, &input, 1);
}

static int dropout(slM_Graph *g, const char *name, int input, float p) {
  int i = unary(g, name, SLM_CALL_MODULE, OP_DROPOUT, input);
  g->nodes[i].p = p;
  return i;
}

static int layernorm(slM_Graph *g, const char *name, int input, int d) {
  int i = unary(g, name, SLM_CALL_MODULE, OP_LAYERNORM, input);
  slM_Node *n = &g->nodes[i];
  char pname[96];
  snprintf(pname, sizeof pname, "%s.weight", name);
  n->params[n->nparams++] = slM_param_new(pname, 1, &d);
  init_const(n->params[0], 1);
  snprintf(pname, sizeof pname, "%s.bias", name);
  n->params[n->nparams++] = slM_param_new(pname, 1, &d);
  n->p = 1e-5f;
  return i;
}

static int add2(slM_Graph *g, const char *name, int a, int b) {
  int ins[2] = {a, b};
  return slM_add_node(g, name, SLM_CALL_FUNCTION, OP_ADD, ins, 2);
}

/* the end of every model: logits, then the loss when labels are traced */
static void finish(slM_Graph *g, int logits, int labels) {
  if (labels) {
    int lab = slM_add_node(g, "labels", SLM_PLACEHOLDER, OP_LABELS, NULL, 0);
    int ins[2] = {logits, lab};
    int loss = slM_add_node(g, "loss", SLM_CALL_FUNCTION, OP_CROSS_ENTROPY, ins, 2);
    int outs[2] = {loss, logits};
    slM_add_node(g, "output", SLM_OUTPUT, OP_OUTPUT, outs, 2);
  } else {
    slM_add_node(g, "output", SLM_OUTPUT, OP_OUTPUT, &logits, 1);
  }
  g->with_labels = labels;
}

slM_Graph *slM_mlp(const slM_MlpSpec *s, uint64_t seed, int labels, char *err, size_t errlen) {
  if (s->inputs < 1 || s->classes < 2) {
    snprintf(err, errlen, "an mlp needs at least 1 input and 2 classes");
    return NULL;
  }
  for (int i = 0; i < s->nhidden; i++)
    if (s->hidden[i] < 1 || s->hidden[i] > 65536) {
      snprintf(err, errlen, "hidden sizes must be between 1 and 65536, got %d", s->hidden[i]);
      return NULL;
    }
  if (s->dropout < 0 || s->dropout >= 1) {
    snprintf(err, errlen, "dropout must be in [0, 1), got %g", s->dropout);
    return NULL;
  }
  slM_Graph *g = calloc(1, sizeof *g);
  snprintf(g->family, sizeof g->family, "mlp");
  g->features = s->inputs;
  g->classes = s->classes;
  memcpy(g->hidden, s->hidden, sizeof g->hidden);
  g->nhidden = s->nhidden;
  g->activation = s->activation;
  g->dropout = s->dropout;
  slM_Rng rng;
  slM_rng_seed(&rng, seed);
  slM_rng_seed(&g->rng, seed ^ 0xD50Full);
  int h = slM_add_node(g, "x", SLM_PLACEHOLDER, OP_INPUT, NULL, 0), width = s->inputs;
  for (int i = 0; i < s->nhidden; i++) {
    char name[32];
    snprintf(name, sizeof name, "fc%d", i + 1);
    h = linear(g, name, h, width, s->hidden[i], 1, &rng, s->activation == OP_RELU ? sqrt(2.0) : 1.0);
    snprintf(name, sizeof name, "%s_%d", slM_op_name((slM_Op)s->activation), i + 1);
    h = unary(g, name, SLM_CALL_FUNCTION, (slM_Op)s->activation, h);
    if (s->dropout > 0) {
      snprintf(name, sizeof name, "dropout_%d", i + 1);
      h = dropout(g, name, h, s->dropout);
    }
    width = s->hidden[i];
  }
  h = linear(g, "classifier", h, width, s->classes, 1, &rng, 1.0);
  finish(g, h, labels);
  snprintf(g->description, sizeof g->description, "mlp %d", s->inputs);
  for (int i = 0; i < s->nhidden; i++) {
    size_t l = strlen(g->description);
    snprintf(g->description + l, sizeof g->description - l, "-%d", s->hidden[i]);
  }
  size_t l = strlen(g->description);
  snprintf(g->description + l, sizeof g->description - l, "-%d, %s, dropout %g", s->classes,
           slM_op_name((slM_Op)s->activation), s->dropout);
  if (slM_propagate(g, err, errlen) != 0) {
    slM_graph_free(g);
    return NULL;
  }
  return g;
}

slM_Graph *slM_transformer(const slM_TransformerSpec *s, uint64_t seed, int labels, int mask, char *err, size_t errlen) {
  if (s->heads < 1 || s->width % s->heads != 0) {
    snprintf(err, errlen, "heads=%d does not divide width=%d: each head gets width / heads features", s->heads, s->width);
    return NULL;
  }
  if (s->patch < 1 || s->height % s->patch != 0 || s->width_px % s->patch != 0) {
    snprintf(err, errlen, "patch=%d does not divide the %dx%d image", s->patch, s->height, s->width_px);
    return NULL;
  }
  if (s->depth < 1 || s->depth > 24 || s->width < 2 || s->width > 4096 || s->mlp_ratio < 1 || s->mlp_ratio > 16) {
    snprintf(err, errlen, "depth must be 1..24, width 2..4096 and mlp_ratio 1..16");
    return NULL;
  }
  if (s->dropout < 0 || s->dropout >= 1) {
    snprintf(err, errlen, "dropout must be in [0, 1), got %g", s->dropout);
    return NULL;
  }
  slM_Graph *g = calloc(1, sizeof *g);
  snprintf(g->family, sizeof g->family, "transformer");
  g->features = s->height * s->width_px;
  g->classes = s->classes;
  g->depth = s->depth;
  g->width = s->width;
  g->heads = s->heads;
  g->mlp_ratio = s->mlp_ratio;
  g->patch = s->patch;
  g->dropout = s->dropout;
  g->tokens = (s->height / s->patch) * (s->width_px / s->patch);
  g->with_mask = mask;
  g->fused_attention = s->fused_attention;
  slM_Rng rng;
  slM_rng_seed(&rng, seed);
  slM_rng_seed(&g->rng, seed ^ 0xD50Full);
  int D = s->width, T = g->tokens;
  int x = slM_add_node(g, "x", SLM_PLACEHOLDER, OP_INPUT, NULL, 0);
  int m = mask ? slM_add_node(g, "attention_mask", SLM_PLACEHOLDER, OP_MASK, NULL, 0) : -1;
  int h = unary(g, "patches", SLM_CALL_METHOD, OP_PATCHIFY, x);
  g->nodes[h].patch = s->patch;
  h = linear(g, "embeddings_patch", h, s->patch * s->patch, D, 1, &rng, 1.0);
  h = unary(g, "embeddings_position", SLM_CALL_FUNCTION, OP_ADD, h);
  {
    slM_Node *n = &g->nodes[h];
    int shape[2] = {T, D};
    n->params[n->nparams++] = slM_param_new("embeddings_position.weight", 2, shape);
    init_normal(n->params[0], &rng, 0.02);
  }
  h = layernorm(g, "embeddings_layer_norm", h, D);
  h = dropout(g, "embeddings_dropout", h, s->dropout);
  for (int l = 0; l < s->depth; l++) {
    char name[64];
#define NAME(suffix) (snprintf(name, sizeof name, "encoder_%d_%s", l, suffix), name)
    int q = linear(g, NAME("attention_query"), h, D, D, 1, &rng, 1.0);
    int k = linear(g, NAME("attention_key"), h, D, D, 1, &rng, 1.0);
    int v = linear(g, NAME("attention_value"), h, D, D, 1, &rng, 1.0);
    int c;
    if (s->fused_attention) {
      /* one node: the kernel computes scores, softmax and context without an N x N array */
      int qkv[4] = {q, k, v, m};
      c = slM_add_node(g, NAME("attention_sdpa"), SLM_CALL_FUNCTION, OP_ATTENTION, qkv, mask ? 4 : 3);
    } else {
      int qk[2] = {q, k};
      int sc = slM_add_node(g, NAME("attention_scores"), SLM_CALL_FUNCTION, OP_SCORES, qk, 2);
      g->nodes[sc].heads = s->heads;
      if (mask) {
        int ins[2] = {sc, m};
        sc = slM_add_node(g, NAME("attention_mask_fill"), SLM_CALL_FUNCTION, OP_MASK_FILL, ins, 2);
      }
      int p = unary(g, NAME("attention_softmax"), SLM_CALL_FUNCTION, OP_SOFTMAX, sc);
      p = dropout(g, NAME("attention_dropout"), p, s->dropout);
      int pv[2] = {p, v};
      c = slM_add_node(g, NAME("attention_context"), SLM_CALL_FUNCTION, OP_CONTEXT, pv, 2);
    }
    g->nodes[c].heads = s->heads;
    int o = linear(g, NAME("attention_output"), c, D, D, 1, &rng, 1.0);
    o = dropout(g, NAME("attention_output_dropout"), o, s->dropout);
    o = add2(g, NAME("attention_residual"), o, h);
    h = layernorm(g, NAME("attention_layer_norm"), o, D);
    int f = linear(g, NAME("intermediate"), h, D, D * s->mlp_ratio, 1, &rng, 1.0);
    f = unary(g, NAME("intermediate_gelu"), SLM_CALL_FUNCTION, OP_GELU, f);
    f = linear(g, NAME("output"), f, D * s->mlp_ratio, D, 1, &rng, 1.0);
    f = dropout(g, NAME("output_dropout"), f, s->dropout);
    f = add2(g, NAME("output_residual"), f, h);
    h = layernorm(g, NAME("output_layer_norm"), f, D);
#undef NAME
  }
  h = unary(g, "pooler_mean", SLM_CALL_METHOD, OP_MEAN_TOKENS, h);
  h = linear(g, "pooler_dense", h, D, D, 1, &rng, 1.0);
  h = unary(g, "pooler_tanh", SLM_CALL_FUNCTION, OP_TANH, h);
  h = dropout(g, "pooler_dropout", h, s->dropout);
  h = linear(g, "classifier", h, D, s->classes, 1, &rng, 1.0);
  finish(g, h, labels);
  snprintf(g->description, sizeof g->description,
           "transformer: %dx%d patches of %d pixels -> %d tokens, %d layers, width %d, %d heads, mlp ratio %d, dropout %g, "
           "%s attention",
           s->height / s->patch, s->width_px / s->patch, s->patch * s->patch, T, s->depth, D, s->heads, s->mlp_ratio,
           s->dropout, s->fused_attention ? "fused" : "naive");
  if (slM_propagate(g, err, errlen) != 0) {
    slM_graph_free(g);
    return NULL;
  }
  return g;
}

/* Tracing again runs the builder with the other inputs, as torch.fx re-runs
** forward(); the new graph then takes the original's parameters by name. */
slM_Graph *slM_capture(const slM_Graph *g, int labels, int mask, char *err, size_t errlen) {
  slM_Graph *c;
  if (strcmp(g->family, "lm") == 0) {
    if (!labels || mask) {
      snprintf(err, errlen, "a language model is traced with its targets and no attention mask (it is causal)");
      return NULL;
    }
    slM_LmSpec s;
    slM_lm_spec_of(g, &s);
    c = slM_lm(&s, 0, err, errlen);
  } else if (strcmp(g->family, "mlp") == 0) {
    if (mask) {
      snprintf(err, errlen, "an mlp has no attention, so it takes no attention mask");
      return NULL;
    }
    slM_MlpSpec s = {g->features, g->classes, {0}, g->nhidden, g->activation, g->dropout};
    memcpy(s.hidden, g->hidden, sizeof s.hidden);
    c = slM_mlp(&s, 0, labels, err, errlen);
  } else {
    int side = (int)lround(sqrt((double)g->features));
    slM_TransformerSpec s = {side, side, g->classes, g->patch, g->depth, g->width, g->heads, g->mlp_ratio, g->dropout,
                             g->fused_attention};
    c = slM_transformer(&s, 0, labels, mask, err, errlen);
  }
  if (!c) return NULL;
  for (int i = 0; i < c->n; i++) {
    int j = slM_find_node(g, c->nodes[i].name);
    if (j < 0) continue;
    for (int k = 0; k < c->nodes[i].nparams && k < g->nodes[j].nparams; k++) {
      slM_param_release(c->nodes[i].params[k]);
      c->nodes[i].params[k] = g->nodes[j].params[k];
      c->nodes[i].params[k]->refs++;
    }
  }
  c->rng = g->rng;
  return c;
}

static slM_Transform *clone_transform(const slM_Transform *t) { return t && t->clone ? t->clone(t) : NULL; }

slM_Graph *slM_graph_copy(const slM_Graph *g, int deep) {
  slM_Graph *c = malloc(sizeof *c);
  *c = *g;
  c->stop = NULL, c->stop_ud = NULL, c->stopped = 0;
  c->profile = NULL;
  c->arena = NULL;   /* a plan is for one graph's buffers */
  c->nodes = malloc((size_t)g->cap * sizeof *c->nodes);
  for (int i = 0; i < g->n; i++) {
    slM_Node *n = &c->nodes[i];
    *n = g->nodes[i];
    n->out = n->gout = n->saved = n->saved2 = NULL;
    n->gout_live = 0;
    for (int k = 0; k < n->nparams; k++) {
      if (deep) n->params[k] = param_clone(g->nodes[i].params[k]);
      else n->params[k]->refs++;
    }
    const slM_NodeTransforms *from = &g->nodes[i].comp;
    n->comp.data_in = clone_transform(from->data_in);
    n->comp.data_in_prune = clone_transform(from->data_in_prune);
    n->comp.weight = clone_transform(from->weight);
    n->comp.bias = clone_transform(from->bias);
    if (from->weight_mask) {
      size_t size = n->params[0]->value->size;
      n->comp.weight_mask = malloc(size);
      memcpy(n->comp.weight_mask, from->weight_mask, size);
    }
  }
  return c;
}

/* ------------------------------------------------- verification, metadata */

static int arity(slM_Op op) {
  switch (op) {
    case OP_INPUT: case OP_LABELS: case OP_MASK: case OP_TOKENS: case OP_TARGETS: return 0;
    case OP_SCORES: case OP_MASK_FILL: case OP_CONTEXT: case OP_CROSS_ENTROPY: case OP_SWIGLU: case OP_TOKEN_CE:
    case OP_ADD_NORM: return 2;
    case OP_ADD: return -1;  /* one input and a parameter, or two inputs */
    case OP_ATTENTION: return -3;  /* q, k, v and an optional mask */
    case OP_OUTPUT: return -2;
    default: return 1;
  }
}

int slM_propagate(slM_Graph *g, char *err, size_t errlen) {
  for (int i = 0; i < g->n; i++) {
    slM_Node *n = &g->nodes[i];
    slM_Node *a = n->ninputs > 0 ? &g->nodes[n->inputs[0]] : NULL;
    n->flops = 0;
    if (slM_lm_propagate(g, n)) continue;
    switch (n->op) {
      case OP_INPUT: n->ndim = 2, n->shape[0] = 1, n->shape[1] = g->features; break;
      case OP_LABELS: n->ndim = 1, n->shape[0] = 1; break;
      case OP_MASK: n->ndim = 2, n->shape[0] = 1, n->shape[1] = g->tokens; break;
      case OP_LINEAR: case OP_LINEAR_ACT: {
        slM_Tensor *w = n->params[0]->value;
        if (a->shape[a->ndim - 1] != w->shape[1]) {
          snprintf(err, errlen, "%s: input has %d features but the weight expects %d", n->name, a->shape[a->ndim - 1],
                   w->shape[1]);
          return -1;
        }
        n->ndim = a->ndim;
        memcpy(n->shape, a->shape, sizeof n->shape);
        n->shape[n->ndim - 1] = w->shape[0];
        size_t rows = 1;
        for (int d = 1; d < a->ndim - 1; d++) rows *= (size_t)a->shape[d];
        n->flops = 2.0 * (double)rows * w->shape[0] * w->shape[1];
        break;
      }
      case OP_PATCHIFY: {
        int side = (int)lround(sqrt((double)g->features)), per = side / n->patch;
        n->ndim = 3, n->shape[0] = 1, n->shape[1] = per * per, n->shape[2] = n->patch * n->patch;
        break;
      }
      case OP_SCORES: case OP_CONTEXT: {
        slM_Node *b = &g->nodes[n->inputs[1]];
        int T = b->shape[1], D = b->shape[2];
        if (n->op == OP_SCORES && (a->ndim != 3 || memcmp(a->shape, b->shape, sizeof a->shape) != 0)) {
          snprintf(err, errlen, "%s: query and key shapes differ", n->name);
          return -1;
        }
        if (n->op == OP_SCORES) n->ndim = 4, n->shape[0] = 1, n->shape[1] = n->heads, n->shape[2] = T, n->shape[3] = T;
        else n->ndim = 3, memcpy(n->shape, b->shape, sizeof n->shape);
        n->flops = 2.0 * T * T * D;
        break;
      }
      case OP_ATTENTION: {
        slM_Node *k = &g->nodes[n->inputs[1]], *v = &g->nodes[n->inputs[2]];
        if (a->ndim != 3 || memcmp(a->shape, k->shape, sizeof a->shape) != 0 || memcmp(a->shape, v->shape, sizeof a->shape) != 0) {
          snprintf(err, errlen, "%s: query, key and value shapes differ", n->name);
          return -1;
        }
        if (n->heads < 1 || a->shape[2] % n->heads != 0) {
          snprintf(err, errlen, "%s: %d heads do not divide width %d", n->name, n->heads, a->shape[2]);
          return -1;
        }
        n->ndim = 3, memcpy(n->shape, a->shape, sizeof n->shape);
        n->flops = 4.0 * a->shape[1] * a->shape[1] * a->shape[2];   /* QK^T and PV */
        break;
      }
      case OP_MEAN_TOKENS: n->ndim = 2, n->shape[0] = 1, n->shape[1] = a->shape[2]; break;
      case OP_CROSS_ENTROPY: n->ndim = 1, n->shape[0] = 1; break;
      case OP_OUTPUT: n->ndim = a->ndim, memcpy(n->shape, a->shape, sizeof n->shape); break;
      case OP_ADD:
        if (n->ninputs == 2 && memcmp(a->shape, g->nodes[n->inputs[1]].shape, sizeof a->shape) != 0) {
          snprintf(err, errlen, "%s: the two inputs have different shapes", n->name);
          return -1;
        }
        /* fall through */
      default:
        n->ndim = a->ndim;
        memcpy(n->shape, a->shape, sizeof n->shape);
        size_t elems = 1;
        for (int d = 0; d < n->ndim; d++) elems *= (size_t)n->shape[d];
        n->flops = n->op == OP_LAYERNORM || n->op == OP_SOFTMAX || n->op == OP_RMSNORM || n->op == OP_ADD_NORM ||
                   n->op == OP_MASKED_SOFTMAX ? 5.0 * (double)elems
                 : n->op == OP_DROPOUT ? 0 : (double)elems;
        break;
    }
  }
  return 0;
}

int slM_verify(slM_Graph *g, char *err, size_t errlen) {
  int outputs = 0;
  for (int i = 0; i < g->n; i++) {
    slM_Node *n = &g->nodes[i];
    int want = arity(n->op);
    if ((want >= 0 && n->ninputs != want) || (want == -1 && n->ninputs + n->nparams != 2) ||
        (want == -2 && n->ninputs < 1) || (want == -3 && n->ninputs != 3 && n->ninputs != 4)) {
      snprintf(err, errlen, "node %s (%s) has %d inputs", n->name, slM_op_name(n->op), n->ninputs);
      return -1;
    }
    for (int k = 0; k < n->ninputs; k++) {
      int j = n->inputs[k];
      if (j < 0 || j >= i) {
        snprintf(err, errlen, "node %s reads node %d, which does not come before it (the graph must be acyclic)",
                 n->name, j);
        return -1;
      }
      if (g->nodes[j].op == OP_OUTPUT) {
        snprintf(err, errlen, "node %s reads the output node", n->name);
        return -1;
      }
    }
    if ((n->op == OP_LINEAR && n->nparams < 1) || (n->op == OP_LAYERNORM && n->nparams != 2)) {
      snprintf(err, errlen, "node %s lacks its parameters", n->name);
      return -1;
    }
    if (n->op == OP_OUTPUT) outputs++;
    for (int j = 0; j < i; j++)
      if (strcmp(g->nodes[j].name, n->name) == 0) {
        snprintf(err, errlen, "two nodes are named %s", n->name);
        return -1;
      }
  }
  if (outputs != 1 || g->nodes[g->n - 1].op != OP_OUTPUT) {
    snprintf(err, errlen, "a graph needs exactly one output node, at the end (found %d)", outputs);
    return -1;
  }
  return slM_propagate(g, err, errlen);
}

/* ------------------------------------------------------- transform passes */

static void remove_node(slM_Graph *g, int i) {
  int replacement = g->nodes[i].ninputs ? g->nodes[i].inputs[0] : -1;
  free_node(&g->nodes[i]);
  memmove(&g->nodes[i], &g->nodes[i + 1], (size_t)(g->n - i - 1) * sizeof *g->nodes);
  g->n--;
  for (int j = i; j < g->n; j++)
    for (int k = 0; k < g->nodes[j].ninputs; k++) {
      int *in = &g->nodes[j].inputs[k];
      if (*in == i) *in = replacement;   /* replace_all_uses_with */
      else if (*in > i) (*in)--;
    }
}

void slM_remove_node(slM_Graph *g, int i) { remove_node(g, i); }

int slM_identity_layers(slM_Graph *g, const char *const *names, int n, char *err, size_t errlen) {
  for (int k = 0; k < n; k++) {
    int i = slM_find_node(g, names[k]);
    if (i < 0 || g->nodes[i].op != OP_LINEAR) {
      snprintf(err, errlen, "'%s' is not a linear layer of this model (see model.node_names)", names[k]);
      return -1;
    }
    const slM_Tensor *w = g->nodes[i].params[0]->value;
    if (w->shape[0] != w->shape[1]) {
      snprintf(err, errlen, "'%s' maps %d features to %d: only a square linear layer can become the identity", names[k],
               w->shape[1], w->shape[0]);
      return -1;
    }
    remove_node(g, i);
  }
  return slM_propagate(g, err, errlen);
}

/* inserts a node at position `at`, shifting later nodes and their references */
static int insert_node(slM_Graph *g, int at, const char *name, slM_Kind kind, slM_Op op, const int *inputs, int ninputs) {
  int last = slM_add_node(g, name, kind, op, inputs, ninputs);
  slM_Node fresh = g->nodes[last];
  memmove(&g->nodes[at + 1], &g->nodes[at], (size_t)(last - at) * sizeof *g->nodes);
  g->nodes[at] = fresh;
  for (int j = at + 1; j < g->n; j++)
    for (int k = 0; k < g->nodes[j].ninputs; k++)
      if (g->nodes[j].inputs[k] >= at) g->nodes[j].inputs[k]++;
  return at;
}

/* "encoder_0_attention_context" -> "encoder_0_attention_sdpa" (and back) */
static void rename_suffix(slM_Node *n, const char *from, const char *to) {
  size_t len = strlen(n->name), lf = strlen(from);
  char prefix[64];
  snprintf(prefix, sizeof prefix, "%.*s", (int)(len >= lf && strcmp(n->name + len - lf, from) == 0 ? len - lf : len), n->name);
  snprintf(n->name, sizeof n->name, "%.40s%s", prefix, to);
}

static int single_user(const slM_Graph *g, int i) {
  int count = 0;
  for (int j = i + 1; j < g->n; j++)
    for (int k = 0; k < g->nodes[j].ninputs; k++) count += g->nodes[j].inputs[k] == i;
  return count == 1;
}

/* The op-by-op block is the chain scores(q, k) [-> mask_fill(., mask)] ->
** softmax [-> dropout] -> context(., v); the fused block is one node
** attention(q, k, v [, mask]). Parameters are untouched either way. */
int slM_set_attention(slM_Graph *g, int fused) {
  int changed = 0;
  for (int c = 0; c < g->n; c++) {
    slM_Node *n = &g->nodes[c];
    if (fused && n->op == OP_CONTEXT) {
      int chain[5], nchain = 0, x = n->inputs[0], v = n->inputs[1], mask = -1;
      if (g->nodes[x].op == OP_DROPOUT) chain[nchain++] = x, x = g->nodes[x].inputs[0];
      if (g->nodes[x].op != OP_SOFTMAX) continue;
      chain[nchain++] = x, x = g->nodes[x].inputs[0];
      if (g->nodes[x].op == OP_MASK_FILL) chain[nchain++] = x, mask = g->nodes[x].inputs[1], x = g->nodes[x].inputs[0];
      int causal = g->nodes[x].op == OP_CAUSAL_MASK;   /* the language model's */
      if (causal) chain[nchain++] = x, x = g->nodes[x].inputs[0];
      if (g->nodes[x].op != OP_SCORES) continue;
      chain[nchain++] = x;
      int alone = 1;
      for (int i = 0; i < nchain; i++) alone &= single_user(g, chain[i]);
      if (!alone) continue;   /* something else reads the probabilities: leave the block as it is */
      n->op = OP_ATTENTION;
      n->causal = causal;
      n->inputs[0] = g->nodes[x].inputs[0], n->inputs[1] = g->nodes[x].inputs[1], n->inputs[2] = v;
      n->ninputs = 3;
      if (mask >= 0) n->inputs[n->ninputs++] = mask;
      rename_suffix(n, "attention_context", "attention_sdpa");
      for (int i = 0; i < nchain; i++) remove_node(g, chain[i]);   /* chain[] runs from the highest index down */
      c -= nchain;
      changed++;
    } else if (!fused && n->op == OP_ATTENTION) {
      int q = n->inputs[0], k = n->inputs[1], v = n->inputs[2], mask = n->ninputs > 3 ? n->inputs[3] : -1, heads = n->heads;
      char prefix[64], name[96];
      snprintf(prefix, sizeof prefix, "%s", n->name);
      size_t len = strlen(prefix), lf = strlen("attention_sdpa");
      if (len >= lf && strcmp(prefix + len - lf, "attention_sdpa") == 0) prefix[len - lf] = 0;
      int ins[2] = {q, k};
      snprintf(name, sizeof name, "%sattention_scores", prefix);
      int x = insert_node(g, c++, name, SLM_CALL_FUNCTION, OP_SCORES, ins, 2);
      g->nodes[x].heads = heads;
      if (mask >= 0) {
        int mi[2] = {x, mask};
        snprintf(name, sizeof name, "%sattention_mask_fill", prefix);
        x = insert_node(g, c++, name, SLM_CALL_FUNCTION, OP_MASK_FILL, mi, 2);
      }
      if (g->nodes[c].causal) {
        snprintf(name, sizeof name, "%sattention_causal_mask", prefix);
        x = insert_node(g, c++, name, SLM_CALL_FUNCTION, OP_CAUSAL_MASK, &x, 1);
      }
      snprintf(name, sizeof name, "%sattention_softmax", prefix);
      x = insert_node(g, c++, name, SLM_CALL_FUNCTION, OP_SOFTMAX, &x, 1);
      if (!g->nodes[c].causal) {   /* the language model has no attention dropout */
        snprintf(name, sizeof name, "%sattention_dropout", prefix);
        x = insert_node(g, c++, name, SLM_CALL_MODULE, OP_DROPOUT, &x, 1);
        g->nodes[x].p = g->dropout;
      }
      n = &g->nodes[c];
      n->causal = 0;
      n->op = OP_CONTEXT;
      n->inputs[0] = x, n->inputs[1] = v, n->ninputs = 2;
      rename_suffix(n, "attention_sdpa", "attention_context");
      changed++;
    }
  }
  g->fused_attention = fused;
  return changed;
}

int slM_remove_dropout(slM_Graph *g) {
  int removed = 0;
  for (int i = g->n - 1; i >= 0; i--)
    if (g->nodes[i].op == OP_DROPOUT) {
      remove_node(g, i);
      removed++;
    }
  return removed;
}


static int name_matches(const char *name, const char *const *targets, int ntargets) {
  if (!targets) return strcmp(name, "classifier") != 0;
  for (int t = 0; t < ntargets; t++)
    if (strstr(name, targets[t])) return 1;
  return 0;
}

int slM_add_lora(slM_Graph *g, int rank, double alpha, const char *const *targets, int ntargets, uint64_t seed,
                 char *err, size_t errlen) {
  if (rank < 1) {
    snprintf(err, errlen, "rank must be at least 1, got %d", rank);
    return -1;
  }
  for (int i = 0; i < g->n; i++)
    for (int k = 0; k < g->nodes[i].nparams; k++) g->nodes[i].params[k]->frozen = 1;
  slM_Rng rng;
  slM_rng_seed(&rng, seed);
  int adapted = 0;
  for (int i = 0; i < g->n; i++) {
    slM_Node *base = &g->nodes[i];
    if (base->op != OP_LINEAR || strstr(base->name, "lora_") || !name_matches(base->name, targets, ntargets)) continue;
    int in_f = base->params[0]->value->shape[1], out_f = base->params[0]->value->shape[0];
    if (rank > in_f || rank > out_f) {
      snprintf(err, errlen, "rank %d is larger than layer %s (%d x %d)", rank, base->name, out_f, in_f);
      return -1;
    }
    char name[96], base_name[64];
    snprintf(base_name, sizeof base_name, "%s", base->name);
    int x = base->inputs[0];
    /* users of the base layer are collected before the adapter nodes exist */
    int *users = malloc((size_t)g->n * sizeof *users);
    int nusers = slM_users(g, i, users);
    snprintf(name, sizeof name, "%s_lora_A", base_name);
    int a = insert_node(g, i + 1, name, SLM_CALL_MODULE, OP_LINEAR, &x, 1);
    int ashape[2] = {rank, in_f}, bshape[2] = {out_f, rank};
    snprintf(name, sizeof name, "%s_lora_A.weight", base_name);
    g->nodes[a].params[g->nodes[a].nparams++] = slM_param_new(name, 2, ashape);
    init_normal(g->nodes[a].params[0], &rng, 1.0 / sqrt((double)in_f));
    snprintf(name, sizeof name, "%s_lora_B", base_name);
    int b = insert_node(g, a + 1, name, SLM_CALL_MODULE, OP_LINEAR, &a, 1);
    snprintf(name, sizeof name, "%s_lora_B.weight", base_name);
    g->nodes[b].params[g->nodes[b].nparams++] = slM_param_new(name, 2, bshape);  /* zero: starts as the base model */
    snprintf(name, sizeof name, "%s_lora_scale", base_name);
    int s = insert_node(g, b + 1, name, SLM_CALL_FUNCTION, OP_SCALE, &b, 1);
    g->nodes[s].p = (float)(alpha / rank);
    int ins[2] = {i, s};
    snprintf(name, sizeof name, "%s_lora_add", base_name);
    int sum = insert_node(g, s + 1, name, SLM_CALL_FUNCTION, OP_ADD, ins, 2);
    for (int u = 0; u < nusers; u++) {
      slM_Node *user = &g->nodes[users[u] + 4];  /* every user sits after the four new nodes */
      for (int k = 0; k < user->ninputs; k++)
        if (user->inputs[k] == i) user->inputs[k] = sum;
    }
    free(users);
    adapted++;
    i = sum;
  }
  if (adapted == 0) {
    snprintf(err, errlen, "no linear layer matches the names given");
    return -1;
  }
  return slM_propagate(g, err, errlen) == 0 ? adapted : -1;
}
