/*
** ops_attention.c - attention's operators: op by op (scores, the padding
** mask, softmax from ops_core.c, the weighted values) or as one fused
** FlashAttention-2 node.
**
** The op-by-op products run one per (sample, head), with strides that pick
** the head's columns out of the token rows, so heads are never copied apart.
** The fused node hands the whole block to kernels/attention.c, which keeps
** no T x T tensor, only each row's logsumexp for the backward.
*/
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kernels/gemm_half.h"
#include "kernels/kernels.h"
#include "kernels/parallel.h"
#include "memory.h"
#include "op.h"
#include "ops_cuda.h"
#include "product.h"
#include "slots.h"

static void attention_dims(slM_Tensor *q, int heads, int *B, int *T, int *D, int *dh) {
  *B = q->shape[0];
  *T = q->shape[1];
  *D = q->shape[2];
  *dh = *D / heads;
}

/* -------------------------------------------------------- padding mask */

/* scores where the mask is 0 become -1e9 */
static void mask_fill_forward(slM_Graph *g, slM_Node *n) {
  slM_Tensor *a = slM_input(g, n, 0), *mask = slM_input(g, n, 1), *y = slM_ensure(&n->out, a->ndim, a->shape);
  int B = a->shape[0], H = a->shape[1], T = a->shape[2];
  for (int b = 0; b < B; b++)
    for (int h = 0; h < H; h++)
      for (int i = 0; i < T; i++)
        for (int j = 0; j < T; j++) {
          size_t k = (((size_t)b * H + h) * T + i) * T + j;
          y->data[k] = mask->data[(size_t)b * T + j] != 0 ? a->data[k] : -1e9f;
        }
}

static void mask_fill_backward(slM_Graph *g, slM_Node *n) {
  slM_Tensor *a = slM_input(g, n, 0);
  float *dx = slM_input_grad(g, n, 0)->data;
  for (size_t i = 0; i < a->size; i++) dx[i] += n->out->data[i] > -1e8f ? n->gout->data[i] : 0;
}

/* ------------------------------------------------- per-head products */

/* The unfused attention's products, one per sample and head (T x T x dh,
** 16 x 16 x 32 in the image transformer: far too small to split), run as
** ranges of (sample, head) pairs on the thread team; each pair writes only
** its own head's slices, so the numbers do not depend on the split. Where a
** 16-bit precision runs the emulated path, each thread rounds or widens its
** heads' operands into its own tiles (slM_product_head). Operands in 16-bit storage (q, k, v, the scores under a
** 16-bit precision) are read as they are; a 16-bit output is rounded as it
** is stored. */
typedef struct Heads Heads;
typedef void (*HeadFn)(const Heads *t, size_t off, size_t poff);
struct Heads {
  slM_Graph *g;
  int T, D, dh, H;
  float scale;
  slM_Mat q, k;       /* scores: q, k; context: p, v (bits: their storage's, or rounded once, product.h) */
  slM_Dst out;        /* forward */
  float *d0, *d1;     /* backward: the two input gradients */
  float beta0, beta1; /* 0 where that gradient's slot is fresh (each head writes its own slice once), else 1 */
  slM_Mat gout;
  int round; /* a forward's 16-bit output dtype, in float32 storage: each head's block rounded as written */
  HeadFn fn;
};

/* an operand or a destination from element `off` on */
static slM_Mat at(slM_Mat m, size_t off) { return (slM_Mat){m.p ? m.p + off : NULL, m.h ? m.h + off : NULL}; }
static slM_Dst dst_at(slM_Dst d, size_t off) { return (slM_Dst){d.p ? d.p + off : NULL, d.h ? d.h + off : NULL}; }

/* one head's product: from bits alone where both operands are bits and the products are native */
static void head_product(const Heads *t, int ta, int tb, int M, int N, int K, float alpha, slM_Mat A, int lda,
                         slM_Mat B, int ldb, float beta, slM_Dst C, int ldc) {
  if (A.h && B.h && slM_product_operands(t->g))
    slM_gemm_rounded(ta, tb, M, N, K, alpha, A.h, lda, B.h, ldb, beta, C, ldc);
  else
    slM_product_head(t->g, ta, tb, M, N, K, alpha, A, lda, B, ldb, beta, t->g->precision != SLM_FP32 && !!C.h, C, ldc);
}

static void heads_range(void *ctx, size_t i0, size_t i1) {
  const Heads *t = ctx;
  for (size_t i = i0; i < i1; i++) {
    size_t b = i / (size_t)t->H, h = i % (size_t)t->H;
    t->fn(t, b * (size_t)t->T * t->D + h * (size_t)t->dh, i * (size_t)t->T * t->T);
  }
}

/* a float32 operand rounded once into slot's buffer where the per-head products read bits (product.h) */
static slM_Mat operand_bits(slM_Graph *g, int slot, slM_Mat m, size_t n) {
  if (m.h || !slM_product_operands(g)) return m;
  const uint16_t *h = slM_product_operand(slot, m.p, n);
  return h ? (slM_Mat){NULL, h} : m;
}

static void per_head(Heads *t, slM_Graph *g, slM_Node *n, slM_Tensor *x, HeadFn fn) {
  int B;
  attention_dims(x, n->heads, &B, &t->T, &t->D, &t->dh);
  t->g = g, t->H = n->heads, t->fn = fn;
  t->scale = 1.0f / sqrtf((float)t->dh);
  size_t pairs = (size_t)B * t->H;
  t->q = operand_bits(g, 0, t->q, slM_input(g, n, 0)->size);
  t->k = operand_bits(g, 1, t->k, slM_input(g, n, 1)->size);
  if (t->gout.p) t->gout = operand_bits(g, 2, t->gout, n->gout->size);
  slK_parallel_for(pairs, 8, heads_range, t);
}

/* the backward's two gradient slots; a fresh one is written (beta 0) rather
** than cleared and added to. When both inputs are one node, the second
** call finds the slot live, so its products add to what the first wrote. */
static void grad_slots(Heads *t, slM_Graph *g, slM_Node *n) {
  int fresh0, fresh1;
  t->d0 = slM_input_grad_fresh(g, n, 0, &fresh0)->data;
  t->d1 = slM_input_grad_fresh(g, n, 1, &fresh1)->data;
  t->beta0 = fresh0 ? 0.0f : 1.0f, t->beta1 = fresh1 ? 0.0f : 1.0f;
}

/* the rounding of a float32-stored 16-bit output (n->round), as written */
static void round_rows(const Heads *t, slM_Dst c, int rows, int cols, int ldc) {
  int f = t->g->precision;
  for (int r = 0; c.p && f != SLM_FP32 && r < rows; r++)
    slK_round_values(f, c.p + (size_t)r * ldc, c.p + (size_t)r * ldc, (size_t)cols);
}

/* scores q k^T / sqrt(d) per head: batch x heads x tokens x tokens */
static void scores_head(const Heads *t, size_t off, size_t poff) {
  slM_Dst c = dst_at(t->out, poff);
  head_product(t, SLK_N, SLK_T, t->T, t->T, t->dh, t->scale, at(t->q, off), t->D, at(t->k, off), t->D, 0.0f, c, t->T);
  if (t->round) round_rows(t, c, t->T, t->T, t->T);
}

static void scores_forward(slM_Graph *g, slM_Node *n) {
  slM_Tensor *q = slM_input(g, n, 0), *k = slM_input(g, n, 1);
  int shape[4] = {q->shape[0], n->heads, q->shape[1], q->shape[1]};
  Heads t = {.q = slM_mat(q, 0), .k = slM_mat(k, 0), .out = slM_dst_of(slM_out(n, 4, shape), 0), .round = n->round};
  per_head(&t, g, n, q, scores_head);
  n->rounded = n->round != 0;
}

static void scores_grad_head(const Heads *t, size_t off, size_t poff) {
  slM_Mat g_s = at(t->gout, poff);
  head_product(t, SLK_N, SLK_N, t->T, t->dh, t->T, t->scale, g_s, t->T, at(t->k, off), t->D, t->beta0,
               (slM_Dst){t->d0 + off, NULL}, t->D);
  head_product(t, SLK_T, SLK_N, t->T, t->dh, t->T, t->scale, g_s, t->T, at(t->q, off), t->D, t->beta1,
               (slM_Dst){t->d1 + off, NULL}, t->D);
}

static void scores_backward(slM_Graph *g, slM_Node *n) {
  Heads t = {.q = slM_mat(slM_input(g, n, 0), 0), .k = slM_mat(slM_input(g, n, 1), 0), .gout = slM_f32(n->gout->data)};
  grad_slots(&t, g, n);
  per_head(&t, g, n, slM_input(g, n, 0), scores_grad_head);
}

/* attention-weighted values, heads merged: batch x tokens x width */
static void context_head(const Heads *t, size_t off, size_t poff) {
  slM_Dst c = dst_at(t->out, off);
  head_product(t, SLK_N, SLK_N, t->T, t->dh, t->T, 1.0f, at(t->q, poff), t->T, at(t->k, off), t->D, 0.0f, c, t->D);
  if (t->round) round_rows(t, c, t->T, t->dh, t->D); /* the head's columns of each token's row */
}

static void context_forward(slM_Graph *g, slM_Node *n) {
  slM_Tensor *v = slM_input(g, n, 1);
  Heads t = {.q = slM_mat(slM_input(g, n, 0), 0),
             .k = slM_mat(v, 0),
             .out = slM_dst_of(slM_out(n, 3, v->shape), 0),
             .round = n->round};
  per_head(&t, g, n, v, context_head);
  n->rounded = n->round != 0;
}

static void context_grad_head(const Heads *t, size_t off, size_t poff) {
  head_product(t, SLK_N, SLK_T, t->T, t->T, t->dh, 1.0f, at(t->gout, off), t->D, at(t->k, off), t->D, t->beta0,
               (slM_Dst){t->d0 + poff, NULL}, t->T);
  head_product(t, SLK_T, SLK_N, t->T, t->dh, t->T, 1.0f, at(t->q, poff), t->T, at(t->gout, off), t->D, t->beta1,
               (slM_Dst){t->d1 + off, NULL}, t->D);
}

static void context_backward(slM_Graph *g, slM_Node *n) {
  slM_Tensor *v = slM_input(g, n, 1);
  Heads t = {.q = slM_mat(slM_input(g, n, 0), 0), .k = slM_mat(v, 0), .gout = slM_f32(n->gout->data)};
  grad_slots(&t, g, n);
  per_head(&t, g, n, v, context_grad_head);
}

static int heads_shape(slM_Graph *g, slM_Node *n, char *err, size_t errlen) {
  slM_Node *a = &g->nodes[n->inputs[0]], *b = &g->nodes[n->inputs[1]];
  int T = b->shape[1], D = b->shape[2];
  if (n->op == OP_SCORES && (a->ndim != 3 || memcmp(a->shape, b->shape, sizeof a->shape) != 0))
    return snprintf(err, errlen, "%s: query and key shapes differ", n->name), -1;
  if (n->op == OP_SCORES) n->ndim = 4, n->shape[0] = 1, n->shape[1] = n->heads, n->shape[2] = T, n->shape[3] = T;
  else n->ndim = 3, memcpy(n->shape, b->shape, sizeof n->shape);
  n->flops = 2.0 * T * T * D;
  return 0;
}

/* the rounded copies of one head's operands (the pairs share one scratch), and the float32 result of
** one head's forward product before it is stored in 16 bits */
static void heads_rounded(const slM_Graph *g, const slM_Node *n, double items, int training, double *a, double *b,
                          double *c) {
  const slM_Node *v = &g->nodes[n->inputs[1]];
  double Tk = v->shape[1], dh = (double)v->shape[2] / n->heads;
  *a = Tk * fmax(Tk, dh);
  *b = Tk * dh;
  *c = n->op == OP_SCORES ? Tk * Tk : Tk * dh;
}

/* --------------------------------------------------- FlashAttention-2 */

/* FlashAttention-2 (kernels/attention.c) of q, k, v [, mask] reads the
** heads straight out of the token rows (strides), writes the merged
** context, and keeps only the row logsumexp (batch x heads x tokens). */
static slK_Attn fused_shape(slM_Graph *g, slM_Node *n) {
  slM_Tensor *q = slM_input(g, n, 0);
  int B, T, D, dh;
  attention_dims(q, n->heads, &B, &T, &D, &dh);
  slK_Attn a;
  slK_attention_contiguous(&a, B, n->heads, T, T, dh, 0);
  a.q_row = a.k_row = D;
  a.q_head = a.k_head = dh;
  a.q_batch = a.k_batch = (long)T * D;
  a.key_mask = n->ninputs > 3 ? slM_input(g, n, 3)->data : NULL;
  a.causal = n->causal;
  a.format = g->precision; /* under a 16-bit precision, bf16/fp16 products with a float32 softmax */
  return a;
}

static void attention_failed(const slM_Node *n) {
  fprintf(stderr, "syslab: out of memory for the attention workspace of %s\n", n->name);
  abort();
}

static void fused_forward(slM_Graph *g, slM_Node *n) {
  slM_Tensor *q = slM_input(g, n, 0);
  slK_Attn a = fused_shape(g, n);
  int lshape[3] = {a.batch, a.heads, a.nq};
  slM_Tensor *o = slM_ensure(&n->out, 3, q->shape), *lse = slM_ensure(&n->saved, 3, lshape);
  if (slK_attention_forward(SLK_ATTN_FUSED, &a, q->data, slM_input(g, n, 1)->data, slM_input(g, n, 2)->data, o->data,
                            lse->data) != 0)
    attention_failed(n);
}

static void fused_backward(slM_Graph *g, slM_Node *n) {
  slK_Attn a = fused_shape(g, n);
  slM_Tensor *dq = slM_input_grad(g, n, 0), *dk = slM_input_grad(g, n, 1), *dv = slM_input_grad(g, n, 2);
  if (slK_attention_backward(SLK_ATTN_FUSED, &a, slM_input(g, n, 0)->data, slM_input(g, n, 1)->data,
                             slM_input(g, n, 2)->data, n->out->data, n->gout->data, n->saved->data, dq->data, dk->data,
                             dv->data) != 0)
    attention_failed(n);
}

static int fused_shape_rule(slM_Graph *g, slM_Node *n, char *err, size_t errlen) {
  slM_Node *a = &g->nodes[n->inputs[0]], *k = &g->nodes[n->inputs[1]], *v = &g->nodes[n->inputs[2]];
  if (a->ndim != 3 || memcmp(a->shape, k->shape, sizeof a->shape) != 0 ||
      memcmp(a->shape, v->shape, sizeof a->shape) != 0)
    return snprintf(err, errlen, "%s: query, key and value shapes differ", n->name), -1;
  if (n->heads < 1 || a->shape[2] % n->heads != 0)
    return snprintf(err, errlen, "%s: %d heads do not divide width %d", n->name, n->heads, a->shape[2]), -1;
  n->ndim = 3, memcpy(n->shape, a->shape, sizeof n->shape);
  n->flops = 4.0 * a->shape[1] * a->shape[1] * a->shape[2]; /* QK^T and PV */
  return 0;
}

/* the row logsumexp: batch x heads x tokens */
static double fused_saves(const slM_Graph *g, const slM_Node *n, int batch, int training) {
  return slM_rows(n, batch) * n->heads;
}

/* ------------------------------------------------------------------ table */

/* clang-format off */
const slM_OpDef slM_ops_attention[] = {
    {OP_SCORES, "matmul_qk", 2, 2, .shape = heads_shape, .heads = SLM_RANGE_HEADS, CPU(scores_forward, scores_backward),
     SLM_CUDA_SLOT(slM_cuda_scores_forward, slM_cuda_scores_backward),
     .rounded = heads_rounded, .makes = SLM_MEM_ACT, .autocast = SLM_AUTOCAST_LOW,
     .flags = SLM_OP_PRODUCT | SLM_OP_QUADRATIC | SLM_OP_HALF, .kernel = "cblas_sgemm"},
    {OP_MASK_FILL, "masked_fill", 2, 2, .flops_per_item = 1, CPU(mask_fill_forward, mask_fill_backward),
     SLM_CUDA_SLOT(slM_cuda_mask_fill_forward, slM_cuda_mask_fill_backward),
     .grad_to = slM_grad_to_first, .makes = SLM_MEM_ACT, .autocast = SLM_AUTOCAST_WIDEST, .flags = SLM_OP_QUADRATIC,
     .kernel = "loop"},
    {OP_CONTEXT, "matmul_pv", 2, 2, .shape = heads_shape, .heads = SLM_RANGE_HEADS, CPU(context_forward, context_backward),
     SLM_CUDA_SLOT(slM_cuda_context_forward, slM_cuda_context_backward),
     .rounded = heads_rounded, .makes = SLM_MEM_ACT, .autocast = SLM_AUTOCAST_LOW,
     .flags = SLM_OP_PRODUCT | SLM_OP_HALF, .kernel = "cblas_sgemm"},
    {OP_ATTENTION, "scaled_dot_product_attention", 3, 4, .shape = fused_shape_rule, .heads = SLM_RANGE_HEADS, CPU(fused_forward, fused_backward),
     SLM_CUDA_SLOT(slM_cuda_attention_forward, slM_cuda_attention_backward), .saves = fused_saves, .makes = SLM_MEM_ACT, .autocast = SLM_AUTOCAST_LOW, .flags = SLM_OP_PRODUCT,
     .kernel = "flash_attention_2"},
    {0},
};
/* clang-format on */
