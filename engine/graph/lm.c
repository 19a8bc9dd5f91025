/*
** lm.c - the transformer language-model family (the CS336 basics model: the transformer of CS336 assignment 1, which the systems assignment benchmarks):
** token embedding, pre-norm blocks of RMSNorm, causal multi-head attention
** with rotary position embeddings and a SwiGLU feed-forward, a final norm and
** an output projection, trained on next-token cross-entropy.
**
** The model is an ordinary graph: its own operators (embedding, RMSNorm,
** RoPE, SwiGLU, the causal mask, the token loss) are declared in
** ops_lm.c; its products are the core's linear and attention's scores and
** context operators, so every pass (profile, memory, precision, fusion)
** sees the language model exactly as it sees the MLP and the image
** transformer. Token ids enter through two placeholders that read the
** batch given to slM_lm_forward.
*/
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kernels/device.h"
#include "lm.h"

/* ------------------------------------------------------------- presets */

/* the five model sizes of the CS336 systems assignment (its §1.1.2), and a tiny one for tests */
/* clang-format off */
static const slM_LmSpec presets[] = {
  {"tiny", 10000, 256, 64, 128, 2, 2},
  {"small", 10000, 256, 768, 3072, 12, 12},
  {"medium", 10000, 256, 1024, 4096, 24, 16},
  {"large", 10000, 256, 1280, 5120, 36, 20},
  {"xl", 10000, 256, 1600, 6400, 48, 25},
  {"2.7B", 10000, 256, 2560, 10240, 32, 32},
};
/* clang-format on */

const char *const slM_lm_preset_names[] = {"tiny", "small", "medium", "large", "xl", "2.7B", NULL};

int slM_lm_preset(const char *name, slM_LmSpec *out) {
  for (size_t i = 0; i < sizeof presets / sizeof presets[0]; i++)
    if (strcmp(presets[i].name, name) == 0) {
      *out = presets[i];
      return 0;
    }
  return -1;
}

/* ------------------------------------------------------------- builder */

static int node(slM_Graph *g, const char *name, slM_Kind kind, slM_Op op, int a, int b) {
  int ins[2] = {a, b};
  return slM_add_node(g, name, kind, op, ins, b >= 0 ? 2 : a >= 0 ? 1 : 0);
}

static slM_Param *param(slM_Node *n, const char *name, int ndim, const int *shape) {
  char pname[96];
  snprintf(pname, sizeof pname, "%s.%s", n->name, name);
  slM_Param *p = slM_param_new(pname, ndim, shape);
  n->params[n->nparams++] = p;
  return p;
}

static int lm_linear(slM_Graph *g, const char *name, int x, int in_f, int out_f, slM_Rng *rng) {
  int i = node(g, name, SLM_CALL_MODULE, OP_LINEAR, x, -1);
  int shape[2] = {out_f, in_f};
  slM_param_normal(param(&g->nodes[i], "weight", 2, shape), rng, 1.0 / sqrt((double)in_f));
  return i;
}

static int rmsnorm(slM_Graph *g, const char *name, int x, int d) {
  int i = node(g, name, SLM_CALL_MODULE, OP_RMSNORM, x, -1);
  slM_Param *p = param(&g->nodes[i], "weight", 1, &d);
  for (int j = 0; j < d; j++) p->value->data[j] = 1;
  g->nodes[i].p = 1e-5f;
  return i;
}

int slM_lm_check(const slM_LmSpec *s, char *err, size_t errlen) {
  if (s->d_model < 2 || s->d_model > 16384 || s->d_ff < 1 || s->d_ff > 65536)
    return snprintf(err, errlen, "d_model must be 2..16384 and d_ff 1..65536, got %d and %d", s->d_model, s->d_ff), -1;
  if (s->heads < 1 || s->d_model % s->heads != 0 || (s->d_model / s->heads) % 2 != 0)
    return snprintf(err, errlen,
                    "heads=%d must divide d_model=%d into heads of an even width (rotary embeddings turn pairs)",
                    s->heads, s->d_model),
           -1;
  if (s->layers < 1 || s->layers > 128) return snprintf(err, errlen, "layers must be 1..128, got %d", s->layers), -1;
  if (s->vocab < 2 || s->vocab > (1 << 24))
    return snprintf(err, errlen, "vocab must be 2..16777216, got %d", s->vocab), -1;
  if (s->context < 1 || s->context > 65536)
    return snprintf(err, errlen, "context must be 1..65536, got %d", s->context), -1;
  return 0;
}

slM_Graph *slM_lm(const slM_LmSpec *s, uint64_t seed, char *err, size_t errlen) {
  if (slM_lm_check(s, err, errlen) != 0) return NULL;
  slM_Graph *g = calloc(1, sizeof *g);
  snprintf(g->family, sizeof g->family, "lm");
  int D = s->d_model;
  g->vocab = s->vocab, g->context = s->context, g->d_ff = s->d_ff, g->layers = s->layers;
  g->width = D, g->heads = s->heads, g->depth = s->layers, g->tokens = s->context;
  g->classes = s->vocab;
  slM_Rng rng;
  slM_rng_seed(&rng, seed);
  slM_rng_seed(&g->rng, seed ^ 0xD50Full);
  int tok = node(g, "tokens", SLM_PLACEHOLDER, OP_TOKENS, -1, -1);
  int h = node(g, "token_embeddings", SLM_CALL_MODULE, OP_EMBEDDING, tok, -1);
  {
    int shape[2] = {s->vocab, D};
    slM_param_normal(param(&g->nodes[h], "weight", 2, shape), &rng, 1.0);
  }
  for (int l = 0; l < s->layers; l++) {
    char name[64];
#define NAME(suffix) (snprintf(name, sizeof name, "layers_%d_%s", l, suffix), name)
    int n1 = rmsnorm(g, NAME("ln1"), h, D);
    int q = lm_linear(g, NAME("attn_q_proj"), n1, D, D, &rng);
    int k = lm_linear(g, NAME("attn_k_proj"), n1, D, D, &rng);
    int v = lm_linear(g, NAME("attn_v_proj"), n1, D, D, &rng);
    q = node(g, NAME("attn_q_rope"), SLM_CALL_FUNCTION, OP_ROPE, q, -1);
    g->nodes[q].heads = s->heads;
    g->nodes[q].p = 10000.0f;
    k = node(g, NAME("attn_k_rope"), SLM_CALL_FUNCTION, OP_ROPE, k, -1);
    g->nodes[k].heads = s->heads;
    g->nodes[k].p = 10000.0f;
    int sc = node(g, NAME("attn_scores"), SLM_CALL_FUNCTION, OP_SCORES, q, k);
    g->nodes[sc].heads = s->heads;
    sc = node(g, NAME("attn_causal_mask"), SLM_CALL_FUNCTION, OP_CAUSAL_MASK, sc, -1);
    int p = node(g, NAME("attn_softmax"), SLM_CALL_FUNCTION, OP_SOFTMAX, sc, -1);
    int c = node(g, NAME("attn_context"), SLM_CALL_FUNCTION, OP_CONTEXT, p, v);
    g->nodes[c].heads = s->heads;
    int o = lm_linear(g, NAME("attn_output_proj"), c, D, D, &rng);
    h = node(g, NAME("attn_residual"), SLM_CALL_FUNCTION, OP_ADD, h, o);
    int n2 = rmsnorm(g, NAME("ln2"), h, D);
    int a = lm_linear(g, NAME("ffn_w1"), n2, D, s->d_ff, &rng);
    int b = lm_linear(g, NAME("ffn_w3"), n2, D, s->d_ff, &rng);
    int sw = node(g, NAME("ffn_swiglu"), SLM_CALL_FUNCTION, OP_SWIGLU, a, b);
    int f = lm_linear(g, NAME("ffn_w2"), sw, s->d_ff, D, &rng);
    h = node(g, NAME("ffn_residual"), SLM_CALL_FUNCTION, OP_ADD, h, f);
#undef NAME
  }
  h = rmsnorm(g, "ln_final", h, D);
  int logits = lm_linear(g, "lm_head", h, D, s->vocab, &rng);
  int tgt = node(g, "targets", SLM_PLACEHOLDER, OP_TARGETS, -1, -1);
  int loss = node(g, "loss", SLM_CALL_FUNCTION, OP_TOKEN_CE, logits, tgt);
  node(g, "output", SLM_OUTPUT, OP_OUTPUT, loss, logits);
  g->with_labels = 1;
  snprintf(g->description, sizeof g->description,
           "language model%s%s: vocab %d, context %d, d_model %d, d_ff %d, %d layers, %d heads", s->name[0] ? " " : "",
           s->name, s->vocab, s->context, D, s->d_ff, s->layers, s->heads);
  if (slM_propagate(g, err, errlen) != 0) {
    slM_graph_free(g);
    return NULL;
  }
  return g;
}

void slM_lm_spec_of(const slM_Graph *g, slM_LmSpec *s) {
  memset(s, 0, sizeof *s);
  s->vocab = g->vocab, s->context = g->context, s->d_model = g->width, s->d_ff = g->d_ff;
  s->layers = g->layers, s->heads = g->heads;
}

/* ------------------------------------------------------------ running */

slM_Tensor *slM_lm_forward(slM_Graph *g, const int32_t *tokens, const int32_t *targets, int batch, int T,
                           int training) {
  g->tok = tokens, g->tgt = targets;
  g->batch_rows = batch, g->context_now = T;
  slM_Tensor *logits = slM_forward(g, NULL, NULL, batch, training);
  return logits;
}

double slM_lm_loss(const slM_Graph *g) {
  for (int i = 0; i < g->n; i++) {
    const slM_Tensor *t = g->nodes[i].out;
    if (g->nodes[i].op != OP_TOKEN_CE || !t) continue;
    if (t->data) return t->data[0];
    float loss = NAN; /* on the GPU: read back */
    char err[200];
    return slK_gpu()->download(&loss, t->dev, sizeof loss, err, sizeof err) == 0 ? loss : NAN;
  }
  return NAN;
}

void slM_lm_random_batch(slM_Rng *rng, int vocab, int batch, int T, int32_t *tokens, int32_t *targets) {
  for (int b = 0; b < batch; b++) {
    for (int t = 0; t <= T; t++) {
      int32_t id = (int32_t)(slM_rng_next(rng) % (uint64_t)vocab);
      if (t < T) tokens[(size_t)b * T + t] = id;
      if (t > 0) targets[(size_t)b * T + t - 1] = id;
    }
  }
}

void slM_lm_stream_batch(slM_Rng *rng, const unsigned char *bytes, size_t n, int batch, int T, int32_t *tokens,
                         int32_t *targets) {
  for (int b = 0; b < batch; b++) {
    size_t start = (size_t)(slM_rng_next(rng) % (uint64_t)(n - (size_t)T));
    for (int t = 0; t < T; t++) {
      tokens[(size_t)b * T + t] = bytes[start + (size_t)t];
      targets[(size_t)b * T + t] = bytes[start + (size_t)t + 1];
    }
  }
}
