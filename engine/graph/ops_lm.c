/*
** ops_lm.c - the language model's operators (the CS336 basics model, lm.c
** builds it): token ids in, the embedding table, RMSNorm, rotary position
** embeddings, SwiGLU, the causal mask and the mean cross-entropy of every
** position. Its products are the core's linear layer and attention's.
**
** Token ids enter through two placeholders that read the batch given to
** slM_lm_forward, because the image path's inputs are float pixels and byte
** labels while a vocabulary of 10,000 needs wider ids.
*/
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kernels/parallel.h"
#include "kernels/round.h"
#include "kernels/reduce.h"
#include "kernels/softmax.h"
#include "memory.h"
#include "op.h"
#include "ops_core.h"
#include "ops_cuda.h"
#include "slots.h"

static void embedding_forward(slM_Graph *g, slM_Node *n) {
  slM_Tensor *ids = slM_input(g, n, 0), *w = n->params[0]->value;
  int D = w->shape[1], shape[3] = {ids->shape[0], ids->shape[1], D};
  slM_Tensor *y = slM_ensure(&n->out, 3, shape);
  for (size_t i = 0; i < ids->size; i++)
    memcpy(y->data + i * (size_t)D, w->data + (size_t)ids->data[i] * (size_t)D, (size_t)D * sizeof(float));
}

static void embedding_backward(slM_Graph *g, slM_Node *n) {
  slM_Tensor *ids = slM_input(g, n, 0);
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
  slM_Tensor *x = slM_input(g, n, 0), *y = slM_ensure(&n->out, x->ndim, x->shape);
  int d = x->shape[x->ndim - 1], rows = (int)(x->size / (size_t)d);
  Rms t = {.x = x->data,
           .gain = n->params[0]->value->data,
           .y = y->data,
           .rstd = slM_ensure(&n->saved, 1, &rows)->data,
           .d = d,
           .eps = n->p};
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
  slM_Tensor *x = slM_input(g, n, 0);
  int d = x->shape[x->ndim - 1];
  Rms t = {.x = x->data,
           .gain = n->params[0]->value->data,
           .dy = n->gout->data,
           .rstd = n->saved->data,
           .dx = slM_input_grad(g, n, 0)->data,
           .d = d,
           .rows = x->size / (size_t)d,
           .dgain = n->params[0]->frozen ? NULL : slM_param_grad(n->params[0])->data};
  slK_parallel_for(t.rows, ROWS(d), rms_grad_rows, &t);
  slK_norm_param_grads(t.x, t.dy, NULL, t.rstd, 1, t.rows, d, t.dgain, NULL);
}

/* Rotary embeddings: in each head, features (2i, 2i+1) at position t turn by
** t * theta^(-2i / head width). The table of angles is kept in saved. */
static void rope_table(slM_Node *n, int T, int dh) {
  int shape[2] = {T, dh}; /* cos in the first half of a row, sin in the second */
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

/* one token's row of D features at position t, turned by sign * its angles */
static void rope_row(const slM_Node *n, int t, const float *a, float *o, int D, float sign, int accumulate) {
  int dh = D / n->heads;
  const float *cs = n->saved->data + (size_t)t * dh, *sn = cs + dh / 2;
  for (int h = 0; h < n->heads; h++)
    for (int i = 0; i < dh / 2; i++) {
      int j = h * dh + 2 * i;
      float x0 = a[j], x1 = a[j + 1], c = cs[i], s = sign * sn[i];
      float y0 = x0 * c - x1 * s, y1 = x0 * s + x1 * c;
      if (accumulate) o[j] += y0, o[j + 1] += y1;
      else o[j] = y0, o[j + 1] = y1;
    }
}

static void rope_apply(slM_Node *n, const float *x, float *y, int B, int T, int D, float sign, int accumulate) {
  for (int b = 0; b < B; b++)
    for (int t = 0; t < T; t++)
      rope_row(n, t, x + ((size_t)b * T + t) * D, y + ((size_t)b * T + t) * D, D, sign, accumulate);
}

/* with 16-bit storage on either side: row by row, each widened and the turned row rounded as stored */
static void rope_forward(slM_Graph *g, slM_Node *n) {
  slM_Tensor *x = slM_input(g, n, 0), *y = slM_out(n, x->ndim, x->shape);
  int B = x->shape[0], T = x->shape[1], D = x->shape[2];
  rope_table(n, T, D / n->heads);
  if (!x->half && !y->half) {
    rope_apply(n, x->data, y->data, B, T, D, 1.0f, 0);
    return;
  }
  float *a = malloc(2 * (size_t)D * sizeof *a), *o = a + D;
  for (int r = 0; a && r < B * T; r++) {
    size_t off = (size_t)r * D;
    float *to = slM_dst(y, off, o);
    rope_row(n, r % T, x->half ? (slK_half_to_f32(x->dtype, x->half + off, a, (size_t)D), a) : x->data + off, to, D,
             1.0f, 0);
    slM_put(y, off, to, (size_t)D, n->round);
  }
  n->rounded = n->round != 0;
  free(a);
}

static void rope_backward(slM_Graph *g, slM_Node *n) {
  slM_Tensor *x = slM_input(g, n, 0), *dx = slM_input_grad(g, n, 0);
  rope_apply(n, n->gout->data, dx->data, x->shape[0], x->shape[1], x->shape[2], -1.0f, 1); /* the inverse turn */
}

static float sigmoid(float v) { return 1.0f / (1.0f + expf(-v)); }

/* silu(a) * b, in blocks of either storage (slots.h): the inputs a, b are
** w1 x and w3 x, 16-bit under a 16-bit precision, as is the output */
typedef struct {
  const slM_Tensor *a, *b;
  slM_Tensor *y;
  const float *dy;
  float *da, *db;
  int round;
} Glu;

static void swiglu_range(void *ctx, size_t i0, size_t i1) {
  const Glu *t = ctx;
  float ab[SLM_BLOCK], bb[SLM_BLOCK], yb[SLM_BLOCK];
  for (size_t s = i0, m; s < i1; s += m) {
    m = i1 - s < SLM_BLOCK ? i1 - s : SLM_BLOCK;
    const float *a = slM_get(t->a, s, m, ab), *b = slM_get(t->b, s, m, bb);
    float *y = slM_dst(t->y, s, yb);
    for (size_t i = 0; i < m; i++) y[i] = a[i] * sigmoid(a[i]) * b[i];
    slM_put(t->y, s, y, m, t->round);
  }
}

static void swiglu_forward(slM_Graph *g, slM_Node *n) {
  slM_Tensor *a = slM_input(g, n, 0), *b = slM_input(g, n, 1), *y = slM_out(n, a->ndim, a->shape);
  Glu t = {.a = a, .b = b, .y = y, .round = n->round};
  slK_parallel_for(a->size, 16384, swiglu_range, &t);
  n->rounded = n->round != 0;
}

static void swiglu_grad_range(void *ctx, size_t i0, size_t i1) {
  const Glu *t = ctx;
  float ab[SLM_BLOCK], bb[SLM_BLOCK];
  for (size_t s = i0, m; s < i1; s += m) {
    m = i1 - s < SLM_BLOCK ? i1 - s : SLM_BLOCK;
    const float *pa = slM_get(t->a, s, m, ab), *pb = slM_get(t->b, s, m, bb);
    for (size_t i = 0; i < m; i++) {
      float v = pa[i], sg = sigmoid(v), gy = t->dy[s + i];
      t->da[s + i] += gy * pb[i] * sg * (1 + v * (1 - sg));
      t->db[s + i] += gy * v * sg;
    }
  }
}

static void swiglu_backward(slM_Graph *g, slM_Node *n) {
  slM_Tensor *a = slM_input(g, n, 0), *b = slM_input(g, n, 1);
  Glu t = {
      .a = a, .b = b, .dy = n->gout->data, .da = slM_input_grad(g, n, 0)->data, .db = slM_input_grad(g, n, 1)->data};
  slK_parallel_for(a->size, 16384, swiglu_grad_range, &t);
}

/* scores of later keys become -inf: query q keeps key k iff k <= q (numerics §7.4) */
static void causal_forward(slM_Graph *g, slM_Node *n) {
  slM_Tensor *s = slM_input(g, n, 0), *y = slM_out(n, s->ndim, s->shape);
  int T = s->shape[2];
  size_t mats = s->size / ((size_t)T * T);
  float *rows = malloc(2 * (size_t)T * sizeof *rows); /* a row of either storage, widened (slots.h) */
  for (size_t m = 0; m < mats && rows; m++)
    for (int i = 0; i < T; i++) {
      size_t off = (m * T + i) * T;
      const float *a = s->half ? (slK_half_to_f32(s->dtype, s->half + off, rows, (size_t)T), rows) : s->data + off;
      float *b = slM_dst(y, off, rows + T);
      memcpy(b, a, (size_t)(i + 1) * sizeof *b);
      for (int j = i + 1; j < T; j++) b[j] = -INFINITY;
      slM_put(y, off, b, (size_t)T, n->round);
    }
  n->rounded = n->round != 0;
  free(rows);
}

static void causal_backward(slM_Graph *g, slM_Node *n) {
  slM_Tensor *s = slM_input(g, n, 0);
  float *dx = slM_input_grad(g, n, 0)->data;
  int T = s->shape[2];
  size_t mats = s->size / ((size_t)T * T);
  for (size_t m = 0; m < mats; m++)
    for (int i = 0; i < T; i++)
      for (int j = 0; j <= i; j++) dx[(m * T + i) * T + j] += n->gout->data[(m * T + i) * T + j];
}

/* mean cross-entropy over every position; saved: the softmax of the logits */
static void token_ce_forward(slM_Graph *g, slM_Node *n) {
  slM_Tensor *z = slM_input(g, n, 0), *t = slM_input(g, n, 1);
  int V = z->shape[z->ndim - 1], one = 1;
  size_t rows = z->size / (size_t)V;
  slM_Tensor *p = slM_ensure(&n->saved, z->ndim, z->shape);
  slK_softmax_rows(z->data, p->data, rows, V);
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
  slM_Tensor *z = slM_input(g, n, 0);
  int V = z->shape[z->ndim - 1];
  size_t rows = z->size / (size_t)V;
  CeGrad t = {n->saved->data, slM_input(g, n, 1)->data, slM_input_grad(g, n, 0)->data, n->gout->data[0] / (float)rows,
              V};
  slK_parallel_for(rows, 16384 / (size_t)V + 1, ce_grad_rows, &t);
}

static void ids_forward(slM_Graph *g, slM_Node *n, const int32_t *ids) {
  int shape[2] = {g->batch_rows, g->context_now};
  slM_Tensor *y = slM_ensure(&n->out, 2, shape);
  for (size_t i = 0; i < y->size; i++) y->data[i] = ids ? (float)ids[i] : 0;
}

/* --------------------------------------------------------- shape rules */

static int ids_shape(slM_Graph *g, slM_Node *n, char *err, size_t errlen) {
  n->ndim = 2, n->shape[0] = 1, n->shape[1] = g->context;
  return 0;
}

static int embedding_shape(slM_Graph *g, slM_Node *n, char *err, size_t errlen) {
  const slM_Node *a = &g->nodes[n->inputs[0]];
  n->ndim = 3, n->shape[0] = 1, n->shape[1] = a->shape[1], n->shape[2] = n->params[0]->value->shape[1];
  return 0;
}

static int token_ce_shape(slM_Graph *g, slM_Node *n, char *err, size_t errlen) {
  const slM_Node *a = &g->nodes[n->inputs[0]];
  n->ndim = 1, n->shape[0] = 1, n->flops = 3.0 * a->shape[1] * a->shape[2];
  return 0;
}

static int rope_shape(slM_Graph *g, slM_Node *n, char *err, size_t errlen) {
  const slM_Node *a = &g->nodes[n->inputs[0]];
  n->ndim = a->ndim, memcpy(n->shape, a->shape, sizeof n->shape), n->flops = 3.0 * a->shape[1] * a->shape[2];
  return 0;
}

static void tokens_forward(slM_Graph *g, slM_Node *n) { ids_forward(g, n, g->tok); }
static void targets_forward(slM_Graph *g, slM_Node *n) { ids_forward(g, n, g->tgt); }
static double rmsnorm_saves(const slM_Graph *g, const slM_Node *n, int batch, int training) {
  return slM_rows(n, batch);
}

/* the table of angles, one per position and feature pair */
static double rope_saves(const slM_Graph *g, const slM_Node *n, int batch, int training) {
  return (double)n->shape[1] * n->shape[2] / n->heads;
}

/* ------------------------------------------------------------------ table */

/* clang-format off */
const slM_OpDef slM_ops_lm[] = {
    {OP_TOKENS, "tokens", 0, 0, .shape = ids_shape, CPU(tokens_forward, slM_op_nothing), .makes = SLM_MEM_ACT,
     SLM_CUDA_SLOT(slM_cuda_ids_forward, slM_cuda_ids_backward),
     .autocast = SLM_AUTOCAST_INT, .kernel = "loop"},
    {OP_TARGETS, "targets", 0, 0, .shape = ids_shape, CPU(targets_forward, slM_op_nothing), .makes = SLM_MEM_ACT,
     SLM_CUDA_SLOT(slM_cuda_ids_forward, slM_cuda_ids_backward),
     .autocast = SLM_AUTOCAST_INT, .kernel = "loop"},
    {OP_EMBEDDING, "embedding", 1, 1, .min_params = 1, .shape = embedding_shape, CPU(embedding_forward, embedding_backward),
     SLM_CUDA_SLOT(slM_cuda_embedding_forward, slM_cuda_embedding_backward),
     .grad_to = slM_grad_to_none, .makes = SLM_MEM_ACT, .autocast = SLM_AUTOCAST_FP32, .flags = SLM_OP_RESIDUAL,
     .kernel = "loop"},
    {OP_RMSNORM, "rms_norm", 1, 1, .min_params = 1, .flops_per_item = 5, .p = SLM_RANGE_EPS, CPU(rmsnorm_forward, rmsnorm_backward),
     SLM_CUDA_SLOT(slM_cuda_norm_forward, slM_cuda_norm_backward),
     .saves = rmsnorm_saves, .makes = SLM_MEM_ACT, .autocast = SLM_AUTOCAST_FP32, .kernel = "loop"},
    {OP_ROPE, "rope", 1, 1, .shape = rope_shape, .heads = SLM_RANGE_HEADS, .p = {1, 1e9}, CPU(rope_forward, rope_backward), .saves = rope_saves,
     SLM_CUDA_SLOT(slM_cuda_rope_forward, slM_cuda_rope_backward),
     .makes = SLM_MEM_ACT, .autocast = SLM_AUTOCAST_WIDEST, .flags = SLM_OP_CACHES | SLM_OP_HALF, .kernel = "loop"},
    {OP_SWIGLU, "swiglu", 2, 2, .flops_per_item = 1, CPU(swiglu_forward, swiglu_backward), .makes = SLM_MEM_ACT,
     SLM_CUDA_SLOT(slM_cuda_swiglu_forward, slM_cuda_swiglu_backward),
     .autocast = SLM_AUTOCAST_WIDEST, .flags = SLM_OP_HALF, .kernel = "loop"},
    {OP_CAUSAL_MASK, "causal_mask", 1, 1, .flops_per_item = 1, CPU(causal_forward, causal_backward),
     SLM_CUDA_SLOT(slM_cuda_causal_mask_forward, slM_cuda_causal_mask_backward),
     .makes = SLM_MEM_ACT, .autocast = SLM_AUTOCAST_WIDEST, .flags = SLM_OP_QUADRATIC | SLM_OP_HALF, .kernel = "loop"},
    {OP_TOKEN_CE, "token_cross_entropy", 2, 2, .shape = token_ce_shape, CPU(token_ce_forward, token_ce_backward),
     SLM_CUDA_SLOT(slM_cuda_token_ce_forward, slM_cuda_token_ce_backward),
     .saves = slM_logits_saves, .grad_to = slM_grad_to_first, .makes = SLM_MEM_ACT, .autocast = SLM_AUTOCAST_FP32,
     .flags = SLM_OP_LOSS, .kernel = "loop"},
    {0},
};
/* clang-format on */
