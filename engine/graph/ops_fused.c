/*
** ops_fused.c - the operators only the fusion pass makes (passes.c): what
** eager execution runs as separate nodes, one pass over memory each, done
** in one pass.
**
**   linear_act       a linear layer with its bias and activation applied in
**                    the same sweep over the product's output
**   add_layer_norm   the residual sum normalised while it is still in cache
**   masked_softmax   causal mask and softmax: the masked scores are never
**                    written (a B x H x T x T tensor saved)
**
** Each runs the same arithmetic in the same order as the eager nodes, so
** outputs and gradients are equal bit for bit in float32
** (tests/unit/test_lm.c checks it).
*/
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kernels/activation.h"
#include "kernels/kernels.h"
#include "kernels/parallel.h"
#include "kernels/reduce.h"
#include "kernels/round.h"
#include "kernels/softmax.h"
#include "memory.h"
#include "op.h"
#include "ops_core.h"
#include "product.h"
#include "slots.h"

/* ------------------------------------------------------------ linear_act */

/* the sweeps run on the thread team in rows or columns, each item computed
** as the eager nodes compute it, so the numbers stay the same */
typedef struct {
  const float *bias, *a, *b;
  float *y, *pre;
  int act;
  size_t cols, rows;
} Sweep;

static void bias_act_rows(void *ctx, size_t r0, size_t r1) {
  const Sweep *t = ctx;
  for (size_t r = r0; r < r1; r++) {
    float *row = t->y + r * t->cols;
    if (t->act == OP_GELU) { /* the pre-activation is kept: GELU reads it back, eight at a time */
      float *pre = t->pre + r * t->cols;
      for (size_t j = 0; j < t->cols; j++) pre[j] = t->bias ? row[j] + t->bias[j] : row[j];
      slK_gelu_items(pre, row, 0, t->cols);
      continue;
    }
    for (size_t j = 0; j < t->cols; j++) {
      float v = t->bias ? row[j] + t->bias[j] : row[j];
      if (t->pre) t->pre[r * t->cols + j] = v;
      row[j] = t->act == OP_RELU ? (v > 0 ? v : 0) : t->act == OP_GELU ? slK_gelu(v) : v;
    }
  }
}

/* a = output (ReLU) or pre-activation (GELU), b = output gradient, y = pre-activation gradient */
static void act_grad_items(void *ctx, size_t i0, size_t i1) {
  const Sweep *t = ctx;
  if (t->act == OP_GELU) {
    slK_gelu_grad_items(t->a, t->b, t->y, i0, i1, 0);
    return;
  }
  for (size_t i = i0; i < i1; i++)
    t->y[i] = t->act == OP_RELU   ? (t->a[i] > 0 ? t->b[i] : 0)
              : t->act == OP_GELU ? t->b[i] * slK_gelu_grad(t->a[i])
                                  : t->b[i];
}

static void linear_act_forward(slM_Graph *g, slM_Node *n) {
  slM_Tensor *x = slM_input(g, n, 0), *w = n->params[0]->value;
  int out_f = w->shape[0], in_f = w->shape[1], shape[SLM_MAX_DIMS];
  memcpy(shape, x->shape, sizeof shape);
  shape[x->ndim - 1] = out_f;
  slM_Tensor *y = slM_ensure(&n->out, x->ndim, shape);
  size_t rows = x->size / (size_t)in_f;
  slM_product(g, SLK_N, SLK_T, (int)rows, out_f, in_f, 1.0f, slM_mat(x, 0), in_f, n->params[0], slM_f32(w->data), in_f,
              0.0f, NULL, 0, (slM_Dst){y->data, NULL}, out_f);
  Sweep t = {.bias = n->nparams > 1 ? n->params[1]->value->data : NULL,
             .y = y->data,
             .act = n->act,
             .pre = n->act == OP_GELU ? slM_ensure(&n->saved, y->ndim, y->shape)->data : NULL,
             .cols = (size_t)out_f};
  slK_parallel_for(rows, 16384 / (size_t)out_f + 1, bias_act_rows, &t);
}

static void linear_act_backward(slM_Graph *g, slM_Node *n) {
  slM_Tensor *x = slM_input(g, n, 0), *w = n->params[0]->value, *dy = n->gout;
  int out_f = w->shape[0], in_f = w->shape[1];
  size_t rows = x->size / (size_t)in_f;
  slM_Tensor *d = slM_ensure(&n->saved2, dy->ndim, dy->shape);
  Sweep t = {.a = n->act == OP_GELU ? n->saved->data : n->out->data, .b = dy->data, .y = d->data, .act = n->act};
  slK_parallel_for(dy->size, 16384, act_grad_items, &t);
  if (slM_linear_grad_to(g, n, 0))
    slM_gemm_w(g, SLK_N, SLK_N, (int)rows, in_f, out_f, 1.0f, d->data, out_f, n->params[0], w->data, in_f, 1.0f,
               slM_input_grad(g, n, 0)->data, in_f);
  if (!n->params[0]->frozen)
    slM_product(g, SLK_T, SLK_N, out_f, in_f, (int)rows, 1.0f, slM_f32(d->data), out_f, NULL, slM_mat(x, 0), in_f, 1.0f,
                NULL, 0, (slM_Dst){slM_param_grad(n->params[0])->data, NULL}, in_f);
  if (n->nparams > 1 && !n->params[1]->frozen) {
    slK_column_sums(d->data, rows, (size_t)out_f, slM_param_grad(n->params[1])->data);
  }
}

/* ---------------------------------------------------------- add_layer_norm */

/* saved: mean and 1/std per row; saved2: the residual sum. Rows on the
** thread team; the gain and shift gradients by columns, rows in order. */
typedef struct {
  const float *a, *b, *gamma, *beta, *dy;
  const slM_Tensor *ta, *tb; /* the forward's inputs, of either storage (a 16-bit product's output) */
  float *sum, *y, *stats, *da, *db, *dgamma, *dbeta;
  int d;
  size_t rows;
  float eps;
} AddNorm;

/* row r of t (d values) as float32: in place, or widened into buf */
static const float *row_of(const slM_Tensor *t, size_t r, int d, float *buf) {
  if (!t->half) return t->data + r * d;
  slK_half_to_f32(t->dtype, t->half + r * d, buf, (size_t)d);
  return buf;
}

static void add_norm_rows(void *ctx, size_t r0, size_t r1) {
  const AddNorm *t = ctx;
  int d = t->d;
  float *buf = t->ta->half || t->tb->half ? malloc(2 * (size_t)d * sizeof *buf) : NULL;
  for (size_t r = r0; r < r1; r++) {
    const float *pa = row_of(t->ta, r, d, buf), *pb = row_of(t->tb, r, d, buf ? buf + d : NULL);
    float *s = t->sum + r * d, *o = t->y + r * d;
    double m, v;
    for (int j = 0; j < d; j++) s[j] = pa[j] + pb[j];
    slK_norm_moments(s, d, &m, &v);
    float rs = (float)(1.0 / sqrt(v + t->eps));
    t->stats[2 * r] = (float)m;
    t->stats[2 * r + 1] = rs;
    for (int j = 0; j < d; j++) o[j] = ((s[j] - (float)m) * rs) * t->gamma[j] + t->beta[j];
  }
  free(buf);
}

static void add_norm_forward(slM_Graph *g, slM_Node *n) {
  slM_Tensor *a = slM_input(g, n, 0), *b = slM_input(g, n, 1);
  slM_Tensor *y = slM_ensure(&n->out, a->ndim, a->shape), *sum = slM_ensure(&n->saved2, a->ndim, a->shape);
  int d = a->shape[a->ndim - 1], rows = (int)(a->size / (size_t)d), two = 2 * rows;
  AddNorm t = {.ta = a,
               .tb = b,
               .gamma = n->params[0]->value->data,
               .beta = n->params[1]->value->data,
               .sum = sum->data,
               .y = y->data,
               .stats = slM_ensure(&n->saved, 1, &two)->data,
               .d = d,
               .eps = n->p};
  slK_parallel_for((size_t)rows, 16384 / (size_t)d + 1, add_norm_rows, &t);
}

static void add_norm_grad_rows(void *ctx, size_t r0, size_t r1) {
  const AddNorm *t = ctx;
  int d = t->d;
  float *row = malloc((size_t)d * sizeof *row);
  for (size_t r = r0; r < r1; r++) {
    const float *s = t->sum + r * d, *gy = t->dy + r * d;
    float m = t->stats[2 * r], rs = t->stats[2 * r + 1], mg, mgx;
    slK_norm_grad_means(s, m, rs, t->gamma, gy, d, &mg, &mgx);
    for (int j = 0; j < d; j++) {
      float xhat = (s[j] - m) * rs;
      row[j] = 0.0f + rs * (gy[j] * t->gamma[j] - mg - xhat * mgx); /* as eager: into a zeroed gradient */
    }
    for (int j = 0; j < d; j++) t->da[r * d + j] += row[j];
    for (int j = 0; j < d; j++) t->db[r * d + j] += row[j];
  }
  free(row);
}

static void add_norm_backward(slM_Graph *g, slM_Node *n) {
  slM_Tensor *x = n->saved2;
  int d = x->shape[x->ndim - 1];
  AddNorm t = {.gamma = n->params[0]->value->data,
               .dy = n->gout->data,
               .sum = x->data,
               .stats = n->saved->data,
               .da = slM_input_grad(g, n, 0)->data,
               .db = slM_input_grad(g, n, 1)->data,
               .d = d,
               .rows = x->size / (size_t)d,
               .dgamma = n->params[0]->frozen ? NULL : slM_param_grad(n->params[0])->data,
               .dbeta = n->params[1]->frozen ? NULL : slM_param_grad(n->params[1])->data};
  slK_parallel_for(t.rows, 16384 / (size_t)d + 1, add_norm_grad_rows, &t);
  slK_norm_param_grads(t.sum, t.dy, t.stats, t.stats + 1, 2, t.rows, d, t.dgamma, t.dbeta);
}

/* ---------------------------------------------------------- masked_softmax */

/* the scores may be 16-bit (a 16-bit product's output): each row widened first; the output is float32 */
static void masked_softmax_forward(slM_Graph *g, slM_Node *n) {
  slM_Tensor *s = slM_input(g, n, 0), *y = slM_ensure(&n->out, s->ndim, s->shape);
  int T = s->shape[2];
  size_t mats = s->size / ((size_t)T * T);
  float *buf = s->half ? malloc((size_t)T * sizeof *buf) : NULL;
  for (size_t m = 0; m < mats; m++)
    for (int i = 0; i < T; i++) {
      size_t off = (m * T + i) * T;
      slK_softmax_row(row_of(s, m * T + i, T, buf), y->data + off, i + 1);
      for (int j = i + 1; j < T; j++) y->data[off + j] = 0;
    }
  free(buf);
}

static void masked_softmax_backward(slM_Graph *g, slM_Node *n) {
  float *dx = slM_input_grad(g, n, 0)->data;
  int T = n->out->shape[2];
  size_t mats = n->out->size / ((size_t)T * T);
  for (size_t m = 0; m < mats; m++)
    for (int i = 0; i < T; i++) {
      size_t off = (m * T + i) * T;
      slK_softmax_grad_row(n->out->data + off, n->gout->data + off, dx + off, i + 1, 1);
    }
}

/* ------------------------------------------------------------ rules */

/* the activation folded in is one the sweep runs: ReLU, GELU, or none (OP_OUTPUT) */
static int linear_act_check(const slM_Graph *g, const slM_Node *n, char *err, size_t errlen) {
  if (n->act == OP_RELU || n->act == OP_GELU || n->act == OP_OUTPUT) return 0;
  return snprintf(err, errlen, "node %s (linear_act) folds in operator %d, which is not relu, gelu or none", n->name,
                  n->act),
         -1;
}

/* the pre-activation, kept for GELU's slope */
static double linear_act_saves(const slM_Graph *g, const slM_Node *n, int batch, int training) {
  return n->act == OP_GELU ? slM_items(n, batch) : 0;
}

/* statistics per row and the residual sum */
static double add_norm_saves(const slM_Graph *g, const slM_Node *n, int batch, int training) {
  return 2 * slM_rows(n, batch) + slM_items(n, batch);
}

/* ------------------------------------------------------------------ table */

/* clang-format off */
const slM_OpDef slM_ops_fused[] = {
    {OP_LINEAR_ACT, "linear_act", 1, 1, .min_params = 1, .check = linear_act_check, .shape = slM_linear_shape,
     CPU(linear_act_forward, linear_act_backward), .saves = linear_act_saves, .grad_to = slM_linear_grad_to,
     .backward_temps = 1, .rounded = slM_linear_rounded, .makes = SLM_MEM_ACT, .autocast = SLM_AUTOCAST_LOW,
     .flags = SLM_OP_PRODUCT | SLM_OP_HALF_IN, .kernel = "cblas_sgemm"},
    {OP_ADD_NORM, "add_layer_norm", 2, 2, .min_params = 2, .flops_per_item = 5, .p = SLM_RANGE_EPS,
     CPU(add_norm_forward, add_norm_backward), .saves = add_norm_saves, .makes = SLM_MEM_ACT,
     .autocast = SLM_AUTOCAST_FP32, .flags = SLM_OP_HALF, .kernel = "loop"},
    {OP_MASKED_SOFTMAX, "masked_softmax", 1, 1, .flops_per_item = 5, CPU(masked_softmax_forward, masked_softmax_backward),
     .makes = SLM_MEM_ACT, .autocast = SLM_AUTOCAST_FP32, .flags = SLM_OP_QUADRATIC | SLM_OP_HALF, .kernel = "loop"},
    {0},
};
/* clang-format on */
