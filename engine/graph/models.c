/*
** models.c - the image model families: the MLP and the image transformer
** (a ViT over patches), built as graphs in the shape torch.fx traces them,
** and a model traced again with other inputs (capture).
**
** The language model, the third family, is built in lm.c. Every builder
** names its nodes as the seeds' PyTorch modules are named, so lab code can
** address them (meta, identity, lora targets).
*/
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lm.h"
#include "memory.h"

static int linear(slM_Graph *g, const char *name, int input, int in_f, int out_f, int bias, slM_Rng *rng, double gain) {
  int i = slM_add_node(g, name, SLM_CALL_MODULE, OP_LINEAR, &input, 1);
  char pname[96];
  int wshape[2] = {out_f, in_f};
  snprintf(pname, sizeof pname, "%s.weight", name);
  slM_Node *n = &g->nodes[i];
  n->params[n->nparams++] = slM_param_new(pname, 2, wshape);
  slM_param_normal(n->params[0], rng, gain / sqrt((double)in_f));
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
  slM_param_fill(n->params[0], 1);
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
    snprintf(err, errlen, "dropout must be in [0, 1), got %s", SL_NUM(s->dropout));
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

slM_Graph *slM_transformer(const slM_TransformerSpec *s, uint64_t seed, int labels, int mask, char *err,
                           size_t errlen) {
  if (s->heads < 1 || s->width % s->heads != 0) {
    snprintf(err, errlen, "heads=%d does not divide width=%d: each head gets width / heads features", s->heads,
             s->width);
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
    snprintf(err, errlen, "dropout must be in [0, 1), got %s", SL_NUM(s->dropout));
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
    slM_param_normal(n->params[0], &rng, 0.02);
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
  snprintf(
      g->description, sizeof g->description,
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
    slM_TransformerSpec s = {side,     side,     g->classes,   g->patch,   g->depth,
                             g->width, g->heads, g->mlp_ratio, g->dropout, g->fused_attention};
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
  c->precision = g->precision; /* the mode is the model's, however it is traced */
  c->device = g->device;       /* it shares the weights, so it runs where they live */
  return c;
}
