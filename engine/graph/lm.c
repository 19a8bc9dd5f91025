/*
** lm.c - the transformer language-model family (the CS336 basics model):
** token embedding, pre-norm blocks of RMSNorm, causal multi-head attention
** with rotary position embeddings and a SwiGLU feed-forward, a final norm and
** an output projection, trained on next-token cross-entropy.
**
** The model is an ordinary graph: its new operators (embedding, RMSNorm,
** RoPE, SwiGLU, the causal mask, the token loss) are defined here and reached
** from the dispatch in exec.c; its products are the existing linear, scores
** and context operators, so every pass (profile, memory, precision, fusion)
** sees the language model exactly as it sees the MLP and the image
** transformer. Token ids enter through two placeholders that read the
** batch given to slM_lm_forward, because the image path's inputs are float
** pixels and byte labels while a vocabulary of 10,000 needs wider ids.
*/
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kernels/parallel.h"
#include "kernels/reduce.h"
#include "lm.h"

/* ------------------------------------------------------------- presets */

/* the five configurations of the CS336 systems assignment, and a tiny one for tests */
static const slM_LmSpec presets[] = {
  {"tiny", 10000, 256, 64, 128, 2, 2},
  {"small", 10000, 256, 768, 3072, 12, 12},
  {"medium", 10000, 256, 1024, 4096, 24, 16},
  {"large", 10000, 256, 1280, 5120, 36, 20},
  {"xl", 10000, 256, 1600, 6400, 48, 25},
  {"2.7B", 10000, 256, 2560, 10240, 32, 32},
};

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

static void init_normal(slM_Param *p, slM_Rng *rng, double std) {
  for (size_t i = 0; i < p->value->size; i++) p->value->data[i] = (float)(slM_rng_normal(rng) * std);
}

static int lm_linear(slM_Graph *g, const char *name, int x, int in_f, int out_f, slM_Rng *rng) {
  int i = node(g, name, SLM_CALL_MODULE, OP_LINEAR, x, -1);
  int shape[2] = {out_f, in_f};
  init_normal(param(&g->nodes[i], "weight", 2, shape), rng, 1.0 / sqrt((double)in_f));
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
                    s->heads, s->d_model), -1;
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
    init_normal(param(&g->nodes[h], "weight", 2, shape), &rng, 1.0);
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

/* ---------------------------------------------------------- operators */

static slM_Tensor *in(slM_Graph *g, slM_Node *n, int k) { return g->nodes[n->inputs[k]].out; }

static void embedding_forward(slM_Graph *g, slM_Node *n) {
  slM_Tensor *ids = in(g, n, 0), *w = n->params[0]->value;
  int D = w->shape[1], shape[3] = {ids->shape[0], ids->shape[1], D};
  slM_Tensor *y = slM_ensure(&n->out, 3, shape);
  for (size_t i = 0; i < ids->size; i++)
    memcpy(y->data + i * (size_t)D, w->data + (size_t)ids->data[i] * (size_t)D, (size_t)D * sizeof(float));
}

static void embedding_backward(slM_Graph *g, slM_Node *n) {
  slM_Tensor *ids = in(g, n, 0);
  if (n->params[0]->frozen) return;
  slM_Tensor *dw = slM_param_grad(n->params[0]);
  int D = dw->shape[1];
  for (size_t i = 0; i < ids->size; i++) {
    float *row = dw->data + (size_t)ids->data[i] * (size_t)D;
    const float *gy = n->gout->data + i * (size_t)D;
    for (int j = 0; j < D; j++) row[j] += gy[j];
  }
}

/* y = x / sqrt(mean(x^2) + eps) * gain; saved: 1 / rms per row. Rows run
** on the thread team; the gain's gradient sums rows in order, split by
** columns, so the numbers do not depend on the split. */
typedef struct {
  const float *x, *gain, *dy;
  float *y, *rstd, *dx, *dgain;
  int d;
  size_t rows;
  float eps;
} Rms;

#define ROWS(d) (16384 / (size_t)(d) + 1)

static void rms_rows(void *ctx, size_t r0, size_t r1) {
  const Rms *t = ctx;
  int d = t->d;
  for (size_t r = r0; r < r1; r++) {
    const float *a = t->x + r * d;
    float *b = t->y + r * d;
    double ss = 0;
    for (int j = 0; j < d; j++) ss += (double)a[j] * a[j];
    float rs = (float)(1.0 / sqrt(ss / d + t->eps));
    t->rstd[r] = rs;
    for (int j = 0; j < d; j++) b[j] = a[j] * rs * t->gain[j];
  }
}

static void rmsnorm_forward(slM_Graph *g, slM_Node *n) {
  slM_Tensor *x = in(g, n, 0), *y = slM_ensure(&n->out, x->ndim, x->shape);
  int d = x->shape[x->ndim - 1], rows = (int)(x->size / (size_t)d);
  Rms t = {.x = x->data, .gain = n->params[0]->value->data, .y = y->data,
           .rstd = slM_ensure(&n->saved, 1, &rows)->data, .d = d, .eps = n->p};
  slK_parallel_for((size_t)rows, ROWS(d), rms_rows, &t);
}

static void rms_grad_rows(void *ctx, size_t r0, size_t r1) {
  const Rms *t = ctx;
  int d = t->d;
  for (size_t r = r0; r < r1; r++) {
    const float *a = t->x + r * d, *gy = t->dy + r * d;
    float *gx = t->dx + r * d, rs = t->rstd[r];
    double dot = 0;
    for (int j = 0; j < d; j++) dot += (double)gy[j] * t->gain[j] * (a[j] * rs);
    float m = (float)(dot / d);
    for (int j = 0; j < d; j++) gx[j] += rs * (gy[j] * t->gain[j] - a[j] * rs * m);
  }
}

static void rmsnorm_backward(slM_Graph *g, slM_Node *n) {
  slM_Tensor *x = in(g, n, 0);
  int d = x->shape[x->ndim - 1];
  Rms t = {.x = x->data, .gain = n->params[0]->value->data, .dy = n->gout->data, .rstd = n->saved->data,
           .dx = slM_input_grad(g, n, 0)->data, .d = d, .rows = x->size / (size_t)d,
           .dgain = n->params[0]->frozen ? NULL : slM_param_grad(n->params[0])->data};
  slK_parallel_for(t.rows, ROWS(d), rms_grad_rows, &t);
  slK_norm_param_grads(t.x, t.dy, NULL, t.rstd, 1, t.rows, d, t.dgain, NULL);
}

/* Rotary embeddings: in each head, features (2i, 2i+1) at position t turn by
** t * theta^(-2i / head width). The table of angles is kept in saved. */
static void rope_table(slM_Node *n, int T, int dh) {
  int shape[2] = {T, dh};  /* cos in the first half of a row, sin in the second */
  slM_Tensor *tab = n->saved;
  if (tab && tab->shape[0] == T && tab->shape[1] == dh) return;
  tab = slM_ensure(&n->saved, 2, shape);
  for (int t = 0; t < T; t++)
    for (int i = 0; i < dh / 2; i++) {
      double angle = t * pow((double)n->p, -2.0 * i / dh);
      tab->data[(size_t)t * dh + i] = (float)cos(angle);
      tab->data[(size_t)t * dh + dh / 2 + i] = (float)sin(angle);
    }
}

static void rope_apply(slM_Node *n, const float *x, float *y, int B, int T, int D, float sign, int accumulate) {
  int dh = D / n->heads;
  const float *tab = n->saved->data;
  for (int b = 0; b < B; b++)
    for (int t = 0; t < T; t++) {
      const float *cs = tab + (size_t)t * dh, *sn = cs + dh / 2;
      const float *a = x + ((size_t)b * T + t) * D;
      float *o = y + ((size_t)b * T + t) * D;
      for (int h = 0; h < n->heads; h++)
        for (int i = 0; i < dh / 2; i++) {
          int j = h * dh + 2 * i;
          float x0 = a[j], x1 = a[j + 1], c = cs[i], s = sign * sn[i];
          float y0 = x0 * c - x1 * s, y1 = x0 * s + x1 * c;
          if (accumulate) o[j] += y0, o[j + 1] += y1;
          else o[j] = y0, o[j + 1] = y1;
        }
    }
}

static void rope_forward(slM_Graph *g, slM_Node *n) {
  slM_Tensor *x = in(g, n, 0), *y = slM_ensure(&n->out, x->ndim, x->shape);
  int B = x->shape[0], T = x->shape[1], D = x->shape[2];
  rope_table(n, T, D / n->heads);
  rope_apply(n, x->data, y->data, B, T, D, 1.0f, 0);
}

static void rope_backward(slM_Graph *g, slM_Node *n) {
  slM_Tensor *x = in(g, n, 0), *dx = slM_input_grad(g, n, 0);
  rope_apply(n, n->gout->data, dx->data, x->shape[0], x->shape[1], x->shape[2], -1.0f, 1);  /* the inverse turn */
}

static float sigmoid(float v) { return 1.0f / (1.0f + expf(-v)); }

typedef struct {
  const float *a, *b, *dy;
  float *y, *da, *db;
} Glu;

static void swiglu_range(void *ctx, size_t i0, size_t i1) {
  const Glu *t = ctx;
  for (size_t i = i0; i < i1; i++) t->y[i] = t->a[i] * sigmoid(t->a[i]) * t->b[i];
}

static void swiglu_forward(slM_Graph *g, slM_Node *n) {
  slM_Tensor *a = in(g, n, 0), *b = in(g, n, 1), *y = slM_ensure(&n->out, a->ndim, a->shape);
  Glu t = {.a = a->data, .b = b->data, .y = y->data};
  slK_parallel_for(a->size, 16384, swiglu_range, &t);
}

static void swiglu_grad_range(void *ctx, size_t i0, size_t i1) {
  const Glu *t = ctx;
  for (size_t i = i0; i < i1; i++) {
    float v = t->a[i], s = sigmoid(v), gy = t->dy[i];
    t->da[i] += gy * t->b[i] * s * (1 + v * (1 - s));
    t->db[i] += gy * v * s;
  }
}

static void swiglu_backward(slM_Graph *g, slM_Node *n) {
  slM_Tensor *a = in(g, n, 0), *b = in(g, n, 1);
  Glu t = {.a = a->data, .b = b->data, .dy = n->gout->data, .da = slM_input_grad(g, n, 0)->data,
           .db = slM_input_grad(g, n, 1)->data};
  slK_parallel_for(a->size, 16384, swiglu_grad_range, &t);
}

/* query q keeps key k iff k <= q (numerics.md 7.4) */
static void causal_forward(slM_Graph *g, slM_Node *n) {
  slM_Tensor *s = in(g, n, 0), *y = slM_ensure(&n->out, s->ndim, s->shape);
  int T = s->shape[2];
  size_t mats = s->size / ((size_t)T * T);
  for (size_t m = 0; m < mats; m++)
    for (int i = 0; i < T; i++) {
      const float *a = s->data + (m * T + i) * T;
      float *b = y->data + (m * T + i) * T;
      memcpy(b, a, (size_t)(i + 1) * sizeof *b);
      for (int j = i + 1; j < T; j++) b[j] = -INFINITY;
    }
}

static void causal_backward(slM_Graph *g, slM_Node *n) {
  slM_Tensor *s = in(g, n, 0);
  float *dx = slM_input_grad(g, n, 0)->data;
  int T = s->shape[2];
  size_t mats = s->size / ((size_t)T * T);
  for (size_t m = 0; m < mats; m++)
    for (int i = 0; i < T; i++)
      for (int j = 0; j <= i; j++) dx[(m * T + i) * T + j] += n->gout->data[(m * T + i) * T + j];
}

/* mean cross-entropy over every position; saved: the softmax of the logits */
static void token_ce_forward(slM_Graph *g, slM_Node *n) {
  slM_Tensor *z = in(g, n, 0), *t = in(g, n, 1);
  int V = z->shape[z->ndim - 1], one = 1;
  size_t rows = z->size / (size_t)V;
  slM_Tensor *p = slM_ensure(&n->saved, z->ndim, z->shape);
  slM_softmax_rows(z->data, p->data, rows, V);
  double loss = 0;
  for (size_t r = 0; r < rows; r++) loss -= log((double)p->data[r * V + (size_t)t->data[r]] + 1e-30);
  slM_ensure(&n->out, 1, &one)->data[0] = (float)(loss / (double)rows);
}

typedef struct {
  const float *p, *targets;
  float *dz, scale;
  int V;
} CeGrad;

static void ce_grad_rows(void *ctx, size_t r0, size_t r1) {
  const CeGrad *t = ctx;
  for (size_t r = r0; r < r1; r++) {
    const float *p = t->p + r * t->V;
    float *d = t->dz + r * t->V;
    for (int c = 0; c < t->V; c++) d[c] += t->scale * p[c];
    d[(size_t)t->targets[r]] -= t->scale;
  }
}

static void token_ce_backward(slM_Graph *g, slM_Node *n) {
  slM_Tensor *z = in(g, n, 0);
  int V = z->shape[z->ndim - 1];
  size_t rows = z->size / (size_t)V;
  CeGrad t = {n->saved->data, in(g, n, 1)->data, slM_input_grad(g, n, 0)->data, n->gout->data[0] / (float)rows, V};
  slK_parallel_for(rows, 16384 / (size_t)V + 1, ce_grad_rows, &t);
}

static void ids_forward(slM_Graph *g, slM_Node *n, const int32_t *ids) {
  int shape[2] = {g->batch_rows, g->context_now};
  slM_Tensor *y = slM_ensure(&n->out, 2, shape);
  for (size_t i = 0; i < y->size; i++) y->data[i] = ids ? (float)ids[i] : 0;
}

int slM_lm_node_forward(slM_Graph *g, slM_Node *n) {
  switch (n->op) {
    case OP_TOKENS: ids_forward(g, n, g->tok); return 1;
    case OP_TARGETS: ids_forward(g, n, g->tgt); return 1;
    case OP_EMBEDDING: embedding_forward(g, n); return 1;
    case OP_RMSNORM: rmsnorm_forward(g, n); return 1;
    case OP_ROPE: rope_forward(g, n); return 1;
    case OP_SWIGLU: swiglu_forward(g, n); return 1;
    case OP_CAUSAL_MASK: causal_forward(g, n); return 1;
    case OP_TOKEN_CE: token_ce_forward(g, n); return 1;
    default: return 0;
  }
}

int slM_lm_node_backward(slM_Graph *g, slM_Node *n) {
  switch (n->op) {
    case OP_TOKENS: case OP_TARGETS: return 1;
    case OP_EMBEDDING: embedding_backward(g, n); return 1;
    case OP_RMSNORM: rmsnorm_backward(g, n); return 1;
    case OP_ROPE: rope_backward(g, n); return 1;
    case OP_SWIGLU: swiglu_backward(g, n); return 1;
    case OP_CAUSAL_MASK: causal_backward(g, n); return 1;
    case OP_TOKEN_CE: token_ce_backward(g, n); return 1;
    default: return 0;
  }
}

int slM_lm_propagate(slM_Graph *g, slM_Node *n) {
  slM_Node *a = n->ninputs > 0 ? &g->nodes[n->inputs[0]] : NULL;
  switch (n->op) {
    case OP_TOKENS: case OP_TARGETS:
      n->ndim = 2, n->shape[0] = 1, n->shape[1] = g->context, n->flops = 0;
      return 1;
    case OP_EMBEDDING:
      n->ndim = 3, n->shape[0] = 1, n->shape[1] = a->shape[1], n->shape[2] = n->params[0]->value->shape[1];
      n->flops = 0;
      return 1;
    case OP_TOKEN_CE:
      n->ndim = 1, n->shape[0] = 1, n->flops = 3.0 * a->shape[1] * a->shape[2];
      return 1;
    case OP_ROPE:
      n->ndim = a->ndim, memcpy(n->shape, a->shape, sizeof n->shape), n->flops = 3.0 * a->shape[1] * a->shape[2];
      return 1;
    default: return 0;
  }
}

/* ------------------------------------------------------------ running */

slM_Tensor *slM_lm_forward(slM_Graph *g, const int32_t *tokens, const int32_t *targets, int batch, int T, int training) {
  g->tok = tokens, g->tgt = targets;
  g->batch_rows = batch, g->context_now = T;
  slM_Tensor *logits = slM_forward(g, NULL, NULL, batch, training);
  return logits;
}

double slM_lm_loss(const slM_Graph *g) {
  for (int i = 0; i < g->n; i++)
    if (g->nodes[i].op == OP_TOKEN_CE && g->nodes[i].out) return g->nodes[i].out->data[0];
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
