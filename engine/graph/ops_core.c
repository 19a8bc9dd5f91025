/*
** ops_core.c - the operators every model family uses: placeholders, the
** linear layer, activations, dropout, residual adds, layer norm, softmax,
** the image models' patches and pooling, the classification loss.
**
** Each operator is a forward and a backward kernel and one record of the
** table at the end of this file (op.h says what a record holds). The
** backward adds each input's gradient into its slot (slots.h) and each
** parameter's into its gradient. Dense products go through slM_product
** (product.c: OpenBLAS, with the inputs rounded to the graph's precision);
** loops between the products run over the cores in ranges
** (kernels/parallel.h), each item computed on its own, so the numbers do
** not depend on how a loop is split. Compression hooks (transform.h) change
** what a linear layer computes with; their gradient is the straight-through
** estimator.
*/
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kernels/activation.h"
#include "kernels/gemm_half.h"
#include "kernels/kernels.h"
#include "kernels/parallel.h"
#include "kernels/reduce.h"
#include "kernels/softmax.h"
#include "memory.h"
#include "op.h"
#include "product.h"
#include "ops_core.h"
#include "ops_cuda.h"
#include "slots.h"

#define ELEMS SLM_ELEMS

/* A loop's arrays: each range function below names what it reads. */
typedef struct {
  const float *a, *b, *c;
  float *y, *z;
  size_t n; /* row length, or a count */
  int op;
  int fresh; /* y is a fresh gradient slot (slM_input_grad_fresh): store 0.0f + term */
  int odd;   /* dropout: the first element's number in the whole batch is odd (a micro-batch) */
  float p;
  size_t base; /* the index in the whole tensor of the arrays' first item (a block's, below) */
} Task;

/* x if keep, else +0: the same as keep ? x : 0, written with a mask of
** bits so that the compiler turns a loop of it into vector operations. As
** a choice it stayed a scalar branch per element: in ReLU's gradient a
** third of the MLP's backward pass, in the pruning mask 9% of a QAT epoch. */
static inline float kept(float x, int keep) {
  uint32_t bits;
  memcpy(&bits, &x, sizeof bits);
  bits &= -(uint32_t)(keep != 0);
  memcpy(&x, &bits, sizeof x);
  return x;
}

/* ---------------------------------------------------------- placeholders */

static void input_forward(slM_Graph *g, slM_Node *n) {
  int shape[2] = {g->feed_batch, g->features};
  slM_Tensor *y = slM_ensure(&n->out, 2, shape);
  if (y->data != g->feed_x) memcpy(y->data, g->feed_x, y->size * sizeof *y->data); /* else filled in place */
}

static void labels_forward(slM_Graph *g, slM_Node *n) {
  slM_Tensor *y = slM_ensure(&n->out, 1, &g->feed_batch);
  for (int i = 0; i < g->feed_batch; i++) y->data[i] = g->feed_labels ? g->feed_labels[i] : 0;
}

static void mask_forward(slM_Graph *g, slM_Node *n) {
  int shape[2] = {g->feed_batch, g->tokens};
  slM_Tensor *y = slM_ensure(&n->out, 2, shape);
  for (size_t i = 0; i < y->size; i++) y->data[i] = 1; /* every patch is a real token */
}

static int input_shape(slM_Graph *g, slM_Node *n, char *err, size_t errlen) {
  n->ndim = 2, n->shape[0] = 1, n->shape[1] = g->features;
  return 0;
}

static int labels_shape(slM_Graph *g, slM_Node *n, char *err, size_t errlen) {
  n->ndim = 1, n->shape[0] = 1;
  return 0;
}

static int mask_shape(slM_Graph *g, slM_Node *n, char *err, size_t errlen) {
  n->ndim = 2, n->shape[0] = 1, n->shape[1] = g->tokens;
  return 0;
}

/* ------------------------------------------------- rounding while writing */

/* An elementwise forward whose output dtype is 16-bit (n->round) rounds
** each piece right after computing it, while the piece is in cache, rather
** than in a pass of its own after the node (precision.c): the same
** roundings of the same values. A piece is `width` floats of y per item. */
typedef struct {
  slK_RangeFn fn;
  void *ctx;
  int format;
  float *y;
  size_t width;
} Rounding;

static void rounding_range(void *ctx, size_t i0, size_t i1) {
  const Rounding *r = ctx;
  r->fn(r->ctx, i0, i1);
  slK_round_values(r->format, r->y + i0 * r->width, r->y + i0 * r->width, (i1 - i0) * r->width);
}

/* slK_parallel_for over a forward's items, rounding as above when the node asks (n->round) */
static void forward_items(slM_Node *n, size_t items, size_t min_chunk, slK_RangeFn fn, void *ctx, float *y,
                          size_t width) {
  if (!n || !n->round) {
    slK_parallel_for(items, min_chunk, fn, ctx);
    return;
  }
  Rounding r = {fn, ctx, n->round, y, width};
  slK_parallel_for(items, min_chunk, rounding_range, &r);
  n->rounded = 1;
}

/* Elementwise kernels over tensors of either storage (slots.h). When one of
** them holds 16 bits, a range function runs block by block: each 16-bit
** array of the block widened into a buffer on the stack, the function run
** on the block (its Task pointing at the block's first item, t.base that
** item's index), the output rounded back into its bits. Otherwise it runs
** over the arrays in place as above. The numbers are the same either way:
** widening is exact and the output is rounded once, as it was after the
** node. */
typedef struct {
  slK_RangeFn fn;
  Task t;                      /* the function's other fields */
  const slM_Tensor *a, *b, *c; /* inputs of Task a, b, c (NULL: unused) */
  slM_Tensor *y, *z;           /* outputs of Task y, z (z NULL: unused) */
  int round;                   /* y's dtype when 16-bit (n->round), else 0 */
  float z_keep;                /* dropout: a 16-bit mask holds 1 where kept; its value is z_keep (else 0) */
  float b_keep;                /* the same for a mask read as b */
} Blocks;

static int halves(const Blocks *B) {
  return (B->a && B->a->half) || (B->b && B->b->half) || (B->c && B->c->half) || B->y->half || (B->z && B->z->half);
}

static void blocks_range(void *ctx, size_t i0, size_t i1) {
  const Blocks *B = ctx;
  float ab[SLM_BLOCK], bb[SLM_BLOCK], cb[SLM_BLOCK], yb[SLM_BLOCK], zb[SLM_BLOCK];
  for (size_t s = i0, m; s < i1; s += m) {
    m = SLM_BLOCK - s % SLM_BLOCK; /* blocks at multiples of SLM_BLOCK after the first */
    if (m > i1 - s) m = i1 - s;
    Task t = B->t;
    if (B->a) t.a = slM_get(B->a, s, m, ab);
    if (B->b) t.b = slM_get(B->b, s, m, bb);
    if (B->c) t.c = slM_get(B->c, s, m, cb);
    if (B->b && B->b->half && B->b_keep != 0) { /* a 16-bit dropout mask: 1 read as the kept scale */
      for (size_t j = 0; j < m; j++) bb[j] = bb[j] != 0 ? B->b_keep : 0.0f;
      t.b = bb;
    }
    t.y = slM_dst(B->y, s, yb);
    if (B->z) t.z = slM_dst(B->z, s, zb);
    t.base = s;
    B->fn(&t, 0, m);
    slM_put(B->y, s, t.y, m, B->round);
    if (B->z && B->z->half) { /* the mask as 1 or 0 */
      for (size_t j = 0; j < m; j++) zb[j] = zb[j] != 0 ? 1.0f : 0.0f;
      slM_put(B->z, s, zb, m, 0);
    }
  }
}

/* B->fn over `items` on the thread team, in blocks when a tensor holds 16 bits; n (may be NULL)
** is the node whose output y is, so that it is marked rounded */
static void run_blocks(Blocks *B, size_t items, size_t min_chunk, slM_Node *n) {
  if (!halves(B)) {
    Task t = B->t;
    if (B->a) t.a = B->a->data;
    if (B->b) t.b = B->b->data;
    if (B->c) t.c = B->c->data;
    t.y = B->y->data;
    if (B->z) t.z = B->z->data;
    forward_items(B->round ? n : NULL, items, min_chunk, B->fn, &t, t.y, 1);
    return;
  }
  slK_parallel_for(items, min_chunk < SLM_BLOCK ? SLM_BLOCK : min_chunk, blocks_range, B);
  if (n) n->rounded = 1;
}

/* ------------------------------------------------------------ activations */

/* Each activation has its own loop, without a choice per element, so that
** ReLU's vectorises (GELU's has its own vector form). */
static void activation_range(void *ctx, size_t i0, size_t i1) {
  const Task *t = ctx;
  const float *restrict a = t->a;
  float *restrict y = t->y;
  switch (t->op) {
    case OP_GELU: slK_gelu_items(a, y, i0, i1); break;
    case OP_RELU:
      for (size_t i = i0; i < i1; i++) y[i] = a[i] > 0 ? a[i] : 0;
      break;
    case OP_TANH:
      for (size_t i = i0; i < i1; i++) y[i] = tanhf(a[i]);
      break;
    default:
      for (size_t i = i0; i < i1; i++) y[i] = t->p * a[i];
      break;
  }
}

/* a = input, b = output gradient, c = output; y += input gradient (or, in a
** fresh slot, y = 0 + input gradient) */
static void activation_grad_range(void *ctx, size_t i0, size_t i1) {
  const Task *t = ctx;
  const float *restrict a = t->a, *restrict gy = t->b, *restrict c = t->c;
  float *restrict y = t->y, p = t->p;
  if (t->op == OP_GELU) {
    slK_gelu_grad_items(a, gy, y, i0, i1, !t->fresh);
    return;
  }
#define GRAD_LOOP(term) \
  do { \
    if (t->fresh) \
      for (size_t i = i0; i < i1; i++) { \
        const float g = gy[i]; \
        y[i] = 0.0f + (term); \
      } \
    else \
      for (size_t i = i0; i < i1; i++) { \
        const float g = gy[i]; \
        y[i] += (term); \
      } \
  } while (0)
  switch (t->op) {
    case OP_RELU: GRAD_LOOP(kept(g, a[i] > 0)); break;
    case OP_TANH: GRAD_LOOP(g * (1 - c[i] * c[i])); break;
    default: GRAD_LOOP(p * g); break;
  }
#undef GRAD_LOOP
}

/* relu, gelu, tanh and scale (y = p * x, LoRA's alpha / rank) */
static void activation_forward(slM_Graph *g, slM_Node *n) {
  slM_Tensor *a = slM_input(g, n, 0), *y = slM_out(n, a->ndim, a->shape);
  Blocks B = {activation_range, {.op = n->op, .p = n->p}, .a = a, .y = y, .round = n->round};
  run_blocks(&B, a->size, ELEMS, n);
}

static void activation_backward(slM_Graph *g, slM_Node *n) {
  slM_Tensor *a = slM_input(g, n, 0);
  Blocks B = {activation_grad_range, {.op = n->op, .p = n->p}, .a = a, .b = n->gout, .c = n->out};
  B.y = slM_input_grad_fresh(g, n, 0, &B.t.fresh);
  run_blocks(&B, a->size, ELEMS, NULL);
}

/* ---------------------------------------------------------------- dropout */

/* the reference: element i is dropped when half (i & 1) of hash(base, i / 2)
** falls below p * 2^32 (numerics §9); i is the element's number in the whole
** tensor (t->base: a block's first) and, in a micro-batch, counts from its
** first row in the whole batch (t->n and t->odd carry that offset) */
static void dropout_scalar(const Task *t, size_t i0, size_t i1, float keep, uint64_t threshold) {
  for (size_t i = i0; i < i1; i++) {
    size_t at = t->base + (size_t)t->odd + i; /* the element's number in the whole batch */
    slM_Rng r = {t->n + (at >> 1) * 0x9E3779B97F4A7C15ull};
    uint64_t h = slM_rng_next(&r);
    t->z[i] = ((h >> (32 * (at & 1))) & 0xFFFFFFFFull) < threshold ? 0.0f : keep;
    t->y[i] = t->a[i] * t->z[i];
  }
}

/* Sixteen elements at a time: eight splitmix64 hashes (slM_rng_next) in
** 64-bit lanes, whose 32-bit halves are, in order, the words of elements
** 2k and 2k + 1; the same integers as the scalar loop, so the same mask. */
#if defined(__x86_64__)
#include <immintrin.h>
__attribute__((target("avx512f,avx512dq"))) static size_t dropout_avx512(const Task *t, size_t i0, size_t i1,
                                                                         float keep, uint32_t threshold) {
  const uint64_t gold = 0x9E3779B97F4A7C15ull;
  size_t i = i0;
  size_t at = t->base + (size_t)t->odd + i; /* the first element's number in the whole batch */
  if (at & 1) return i;                     /* the caller's scalar loop reaches an even start first */
  __m512i step = _mm512_set1_epi64((long long)(8 * gold));
  __m512i state = _mm512_set_epi64(7, 6, 5, 4, 3, 2, 1, 0);
  state = _mm512_add_epi64(_mm512_mullo_epi64(_mm512_add_epi64(state, _mm512_set1_epi64((long long)(at >> 1))),
                                              _mm512_set1_epi64((long long)gold)),
                           _mm512_set1_epi64((long long)(t->n + gold)));
  __m512i m1 = _mm512_set1_epi64((long long)0xBF58476D1CE4E5B9ull),
          m2 = _mm512_set1_epi64((long long)0x94D049BB133111EBull);
  __m512i thr = _mm512_set1_epi32((int)threshold);
  __m512 kv = _mm512_set1_ps(keep), zero = _mm512_setzero_ps();
  for (; i + 16 <= i1; i += 16) {
    __m512i z = state;
    z = _mm512_mullo_epi64(_mm512_xor_si512(z, _mm512_srli_epi64(z, 30)), m1);
    z = _mm512_mullo_epi64(_mm512_xor_si512(z, _mm512_srli_epi64(z, 27)), m2);
    z = _mm512_xor_si512(z, _mm512_srli_epi64(z, 31));
    __mmask16 dropped = _mm512_cmplt_epu32_mask(z, thr);
    __m512 scale = _mm512_mask_blend_ps(dropped, kv, zero);
    _mm512_storeu_ps(t->z + i, scale);
    _mm512_storeu_ps(t->y + i, _mm512_mul_ps(_mm512_loadu_ps(t->a + i), scale));
    state = _mm512_add_epi64(state, step);
  }
  return i;
}
#endif

static void dropout_range(void *ctx, size_t i0, size_t i1) {
  const Task *t = ctx;
  float keep = 1.0f / (1.0f - t->p);
  uint64_t threshold = (uint64_t)((double)t->p * 4294967296.0);
#if defined(__x86_64__)
  if (__builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512dq")) {
    size_t start = i0 + ((t->base + (size_t)t->odd + i0) & 1), end = start; /* an even number in the batch */
    if (start < i1) end = dropout_avx512(t, start, i1, keep, (uint32_t)threshold);
    if (end > start) { /* the element before the even start, then the tail */
      dropout_scalar(t, i0, start, keep, threshold);
      i0 = end;
    }
  }
#endif
  dropout_scalar(t, i0, i1, keep, threshold);
}

/* (restrict: without it the compiler must assume y may overlap a and b,
** and these loops stayed scalar) */
static void acc_range(void *ctx, size_t i0, size_t i1) {
  const Task *t = ctx;
  const float *restrict a = t->a;
  float *restrict y = t->y;
  if (t->fresh)
    for (size_t i = i0; i < i1; i++) y[i] = 0.0f + a[i];
  else
    for (size_t i = i0; i < i1; i++) y[i] += a[i];
}

static void mul_acc_range(void *ctx, size_t i0, size_t i1) {
  const Task *t = ctx;
  const float *restrict a = t->a, *restrict b = t->b;
  float *restrict y = t->y;
  if (t->fresh)
    for (size_t i = i0; i < i1; i++) y[i] = 0.0f + a[i] * b[i];
  else
    for (size_t i = i0; i < i1; i++) y[i] += a[i] * b[i];
}

static void copy_range(void *ctx, size_t i0, size_t i1) {
  const Task *t = ctx;
  memcpy(t->y + i0, t->a + i0, (i1 - i0) * sizeof *t->y);
}

/* Under a 16-bit precision the mask is 16-bit, whatever the output's dtype,
** holding 1 where an element is kept (the kept scale 1/(1 - p) is not a
** 16-bit value): the backward reads it back as the scale, so dx = dy z as
** in float32 (slots.h: slM_mask_store). */
static void dropout_forward(slM_Graph *g, slM_Node *n) {
  slM_Tensor *a = slM_input(g, n, 0), *y = slM_out(n, a->ndim, a->shape);
  if (g->training && n->p > 0) {
    /* one draw from the graph's generator, then a counter-based hash per
    ** element: the mask does not depend on how the loop is split. A
    ** micro-batch's elements are numbered from its first row in the whole
    ** batch: an even offset moves the base by half of it, an odd one also
    ** shifts which half of each hash an element reads. */
    uint64_t off = (uint64_t)g->feed_row0 * (a->size / (size_t)a->shape[0]);
    Blocks B = {
        dropout_range,
        {.p = n->p, .n = (size_t)(slM_rng_next(&g->rng) + (off >> 1) * 0x9E3779B97F4A7C15ull), .odd = (int)(off & 1)},
        .a = a,
        .y = y,
        .round = n->round,
        .z = slM_ensure_as(&n->saved, a->ndim, a->shape, slM_mask_store(g))};
    run_blocks(&B, a->size, ELEMS, n);
  } else if (a->dtype == y->dtype) {
    memcpy(y->half ? (void *)y->half : (void *)y->data, a->half ? (void *)a->half : (void *)a->data,
           slM_tensor_bytes(a));
  } else {
    Blocks B = {copy_range, {0}, .a = a, .y = y, .round = n->round};
    run_blocks(&B, a->size, ELEMS, n);
  }
}

static void dropout_backward(slM_Graph *g, slM_Node *n) {
  slM_Tensor *a = slM_input(g, n, 0);
  int active = g->training && n->p > 0;
  Blocks B = {active ? mul_acc_range : acc_range,
              {0},
              .a = n->gout,
              .b = active ? n->saved : NULL,
              .b_keep = 1.0f / (1.0f - n->p)};
  B.y = slM_input_grad_fresh(g, n, 0, &B.t.fresh);
  run_blocks(&B, a->size, ELEMS, NULL);
}

static double dropout_saves(const slM_Graph *g, const slM_Node *n, int batch, int training) {
  return training && n->p > 0 ? slM_items(n, batch) : 0;
}

/* -------------------------------------------------------------------- add */

static void add_range(void *ctx, size_t i0, size_t i1) {
  const Task *t = ctx;
  const float *restrict a = t->a, *restrict b = t->b;
  float *restrict y = t->y;
  for (size_t i = i0; i < i1; i++) y[i] = a[i] + b[i];
}

/* rows of n items: y[r] = a[r] + b, one parameter row b added to every row */
static void add_row_range(void *ctx, size_t r0, size_t r1) {
  const Task *t = ctx;
  const float *restrict b = t->b;
  for (size_t r = r0; r < r1; r++) {
    const float *restrict a = t->a + r * t->n;
    float *restrict y = t->y + r * t->n;
    for (size_t j = 0; j < t->n; j++) y[j] = a[j] + b[j];
  }
}

/* the same by items (a block of a 16-bit input): item i adds the parameter's element (base + i) mod n */
static void add_row_items(void *ctx, size_t i0, size_t i1) {
  const Task *t = ctx;
  for (size_t i = i0; i < i1; i++) t->y[i] = t->a[i] + t->b[(t->base + i) % t->n];
}

/* two inputs, or one input plus a parameter broadcast over the batch */
static void add_forward(slM_Graph *g, slM_Node *n) {
  slM_Tensor *a = slM_input(g, n, 0), *y = slM_out(n, a->ndim, a->shape);
  if (n->ninputs == 2) {
    Blocks B = {add_range, {0}, .a = a, .b = slM_input(g, n, 1), .y = y, .round = n->round};
    run_blocks(&B, a->size, ELEMS, n);
  } else if (a->half) { /* a parameter takes part: the output is float32 (precision.c) */
    Blocks B = {add_row_items, {.b = n->params[0]->value->data, .n = n->params[0]->value->size}, .a = a, .y = y};
    run_blocks(&B, a->size, ELEMS, n);
  } else {
    slM_Tensor *p = n->params[0]->value; /* e.g. position embeddings, one row per sample */
    Task t = {.a = a->data, .b = p->data, .y = y->data, .n = p->size};
    forward_items(n, a->size / p->size, ELEMS / p->size + 1, add_row_range, &t, y->data, p->size);
  }
}

static void add_backward(slM_Graph *g, slM_Node *n) {
  slM_Tensor *a = slM_input(g, n, 0), *dy = n->gout;
  Task t = {.a = dy->data};
  t.y = slM_input_grad_fresh(g, n, 0, &t.fresh)->data;
  slK_parallel_for(a->size, ELEMS, acc_range, &t);
  if (n->ninputs == 2) {
    t.y = slM_input_grad_fresh(g, n, 1, &t.fresh)->data;
    slK_parallel_for(a->size, ELEMS, acc_range, &t);
  } else if (!n->params[0]->frozen) {
    slM_Tensor *dp = slM_param_grad(n->params[0]);
    slK_column_sums(dy->data, a->size / dp->size, dp->size, dp->data);
  }
}

static int add_check(const slM_Graph *g, const slM_Node *n, char *err, size_t errlen) {
  if (n->ninputs + n->nparams == 2) return 0;
  return snprintf(err, errlen, "node %s (add) has %d inputs", n->name, n->ninputs), -1;
}

static int add_shape(slM_Graph *g, slM_Node *n, char *err, size_t errlen) {
  const slM_Node *a = &g->nodes[n->inputs[0]];
  if (n->ninputs == 2 && memcmp(a->shape, g->nodes[n->inputs[1]].shape, sizeof a->shape) != 0)
    return snprintf(err, errlen, "%s: the two inputs have different shapes", n->name), -1;
  n->ndim = a->ndim;
  memcpy(n->shape, a->shape, sizeof n->shape);
  size_t elems = 1;
  for (int d = 0; d < n->ndim; d++) elems *= (size_t)n->shape[d];
  n->flops = (double)elems;
  return 0;
}

/* ----------------------------------------------------------------- linear */

/* y = x where the pruning mask keeps the weight, else +0 */
typedef struct {
  const float *x;
  const unsigned char *keep;
  float *y;
} Masked;

static void masked_range(void *ctx, size_t i0, size_t i1) {
  const Masked *t = ctx;
  const float *restrict x = t->x;
  const unsigned char *restrict keep = t->keep;
  float *restrict y = t->y;
  for (size_t i = i0; i < i1; i++) y[i] = kept(x[i], keep[i]);
}

/* The weight the product uses: pruned by the mask, then fake-quantised. A
** quantiser reads the raw weight and writes the copy itself when there is
** no mask, so the weight is not copied first. */
static const float *effective_weight(slM_Node *n) {
  slM_Tensor *w = n->params[0]->value;
  if (!n->comp.weight && !n->comp.weight_mask) return w->data;
  slM_Tensor *we = slM_ensure(&n->saved2, w->ndim, w->shape);
  const float *from = w->data;
  if (n->comp.weight_mask) {
    Masked t = {w->data, n->comp.weight_mask, we->data};
    slK_parallel_for(w->size, ELEMS, masked_range, &t);
    from = we->data;
  }
  if (n->comp.weight) n->comp.weight->apply(n->comp.weight, from, we->data, we->size);
  return we->data;
}

/* the input the product uses: activation-pruned, then fake-quantised (the transforms read float32: a
** 16-bit input is widened for them first) */
static slM_Mat effective_input(slM_Node *n, slM_Tensor *x) {
  if (!n->comp.data_in && !n->comp.data_in_prune) return slM_mat(x, 0);
  slM_Tensor *q = slM_ensure(&n->saved, x->ndim, x->shape);
  const float *from = x->half ? slM_product_widened(0, x) : x->data; /* the first transform writes the copy */
  if (n->comp.data_in_prune)
    n->comp.data_in_prune->apply(n->comp.data_in_prune, from, q->data, q->size), from = q->data;
  if (n->comp.data_in) n->comp.data_in->apply(n->comp.data_in, from, q->data, q->size);
  return slM_f32(q->data);
}

/* y = x W^T + b over the last dimension; under a 16-bit precision the bias and the output's rounding in
** the product's store (slM_product), into 16-bit storage where the node keeps it */
static void linear_forward(slM_Graph *g, slM_Node *n) {
  slM_Tensor *x = slM_input(g, n, 0), *w = n->params[0]->value;
  int out_f = w->shape[0], in_f = w->shape[1];
  int shape[SLM_MAX_DIMS];
  memcpy(shape, x->shape, sizeof shape);
  shape[x->ndim - 1] = out_f;
  slM_Tensor *y = slM_out(n, x->ndim, shape);
  size_t rows = x->size / (size_t)in_f;
  slM_Mat xe = effective_input(n, x);
  const float *we = effective_weight(n);
  float *bias = NULL, *tmp = NULL;
  if (n->nparams > 1) {
    slM_Tensor *b = n->params[1]->value;
    bias = b->data;
    if (n->comp.bias) {
      tmp = malloc(b->size * sizeof *tmp);
      n->comp.bias->apply(n->comp.bias, b->data, tmp, b->size);
      bias = tmp;
    }
  }
  slM_product(g, SLK_N, SLK_T, (int)rows, out_f, in_f, 1.0f, xe, in_f, n->params[0], slM_f32(we), in_f, 0.0f, bias,
              n->round, slM_dst_of(y, 0), out_f);
  n->rounded = n->round != 0;
  free(tmp);
}

/* the copies its compression keeps for the backward: the transformed input (activation pruning, a
** quantiser) and the masked or quantised weight */
static double linear_saves(const slM_Graph *g, const slM_Node *n, int batch, int training) {
  double floats = 0;
  if (n->comp.data_in || n->comp.data_in_prune) floats += slM_items(&g->nodes[n->inputs[0]], batch);
  if (n->comp.weight || n->comp.weight_mask) floats += (double)n->params[0]->value->size;
  return floats;
}

static void linear_backward(slM_Graph *g, slM_Node *n) {
  slM_Tensor *x = slM_input(g, n, 0), *w = n->params[0]->value, *dy = n->gout;
  int out_f = w->shape[0], in_f = w->shape[1];
  size_t rows = x->size / (size_t)in_f;
  slM_Mat xe = (n->comp.data_in || n->comp.data_in_prune) ? slM_f32(n->saved->data) : slM_mat(x, 0);
  const float *we = (n->comp.weight || n->comp.weight_mask) ? n->saved2->data : w->data;
  /* straight through: the gradient reaches the raw input and weight unchanged */
  if (slM_linear_grad_to(g, n, 0)) {
    int fresh; /* a fresh slot is written, not cleared and added to */
    slM_Tensor *dx = slM_input_grad_fresh(g, n, 0, &fresh);
    slM_gemm_w(g, SLK_N, SLK_N, (int)rows, in_f, out_f, 1.0f, dy->data, out_f, n->params[0], we, in_f,
               fresh ? 0.0f : 1.0f, dx->data, in_f);
  }
  if (!n->params[0]->frozen) {
    slM_Tensor *dw = slM_param_grad(n->params[0]);
    slM_product(g, SLK_T, SLK_N, out_f, in_f, (int)rows, 1.0f, slM_f32(dy->data), out_f, NULL, xe, in_f, 1.0f, NULL, 0,
                (slM_Dst){dw->data, NULL}, in_f);
    if (n->comp.weight_mask) /* pruned weights stay exactly zero */
      for (size_t i = 0; i < dw->size; i++)
        if (!n->comp.weight_mask[i]) dw->data[i] = 0;
  }
  if (n->nparams > 1 && !n->params[1]->frozen)
    slK_column_sums(dy->data, rows, (size_t)out_f, slM_param_grad(n->params[1])->data);
}

int slM_linear_shape(slM_Graph *g, slM_Node *n, char *err, size_t errlen) {
  const slM_Node *a = &g->nodes[n->inputs[0]];
  const slM_Tensor *w = n->params[0]->value;
  if (a->shape[a->ndim - 1] != w->shape[1])
    return snprintf(err, errlen, "%s: input has %d features but the weight expects %d", n->name, a->shape[a->ndim - 1],
                    w->shape[1]),
           -1;
  n->ndim = a->ndim;
  memcpy(n->shape, a->shape, sizeof n->shape);
  n->shape[n->ndim - 1] = w->shape[0];
  size_t rows = 1;
  for (int d = 1; d < a->ndim - 1; d++) rows *= (size_t)a->shape[d];
  n->flops = 2.0 * (double)rows * w->shape[0] * w->shape[1];
  return 0;
}

/* the rounded copies of x (rows x in) and W (out x in); in training also
** dy (rows x out) and x again for the weight gradient; the output before it is stored in 16 bits */
void slM_linear_rounded(const slM_Graph *g, const slM_Node *n, double items, int training, double *a, double *b,
                        double *c) {
  double in_f = n->params[0]->value->shape[1], out_f = n->params[0]->value->shape[0], rows = items / out_f;
  *a = rows * fmax(in_f, training ? out_f : 0);
  *b = fmax(out_f * in_f, training ? rows * in_f : 0);
  *c = items;
}

/* ------------------------------------------------------------- layer norm */

typedef struct {
  const float *x, *gamma, *beta, *dy;
  float *y, *mean, *rstd, *dx, *dgamma, *dbeta;
  int d, fresh; /* fresh: dx is a fresh gradient slot, stored 0.0f + term */
  size_t rows;
  float eps;
} NormTask;

static void layernorm_rows(void *ctx, size_t r0, size_t r1) {
  const NormTask *t = ctx;
  int d = t->d;
  for (size_t r = r0; r < r1; r++) {
    const float *a = t->x + r * (size_t)d;
    float *b = t->y + r * (size_t)d;
    double m, v;
    slK_norm_moments(a, d, &m, &v);
    float rs = (float)(1.0 / sqrt(v + t->eps));
    t->mean[r] = (float)m;
    t->rstd[r] = rs;
    for (int j = 0; j < d; j++) b[j] = ((a[j] - (float)m) * rs) * t->gamma[j] + t->beta[j];
  }
}

/* over the last dimension; saved: the mean, saved2: 1 / std, per row */
static void layernorm_forward(slM_Graph *g, slM_Node *n) {
  slM_Tensor *x = slM_input(g, n, 0);
  slM_Tensor *y = slM_ensure(&n->out, x->ndim, x->shape);
  int d = x->shape[x->ndim - 1];
  int rows = (int)(x->size / (size_t)d);
  slM_Tensor *mean = slM_ensure(&n->saved, 1, &rows), *rstd = slM_ensure(&n->saved2, 1, &rows);
  NormTask t = {.x = x->data,
                .gamma = n->params[0]->value->data,
                .beta = n->params[1]->value->data,
                .y = y->data,
                .mean = mean->data,
                .rstd = rstd->data,
                .d = d,
                .eps = n->p};
  slK_parallel_for((size_t)rows, ELEMS / (size_t)d + 1, layernorm_rows, &t);
}

static void layernorm_grad_rows(void *ctx, size_t r0, size_t r1) {
  const NormTask *t = ctx;
  int d = t->d;
  for (size_t r = r0; r < r1; r++) {
    const float *a = t->x + r * (size_t)d, *gy = t->dy + r * (size_t)d;
    float *gx = t->dx + r * (size_t)d;
    float m = t->mean[r], rs = t->rstd[r], mg, mgx;
    slK_norm_grad_means(a, m, rs, t->gamma, gy, d, &mg, &mgx);
    if (t->fresh)
      for (int j = 0; j < d; j++) gx[j] = 0.0f + rs * (gy[j] * t->gamma[j] - mg - (a[j] - m) * rs * mgx);
    else
      for (int j = 0; j < d; j++) gx[j] += rs * (gy[j] * t->gamma[j] - mg - (a[j] - m) * rs * mgx);
  }
}

static void layernorm_backward(slM_Graph *g, slM_Node *n) {
  int fresh;
  slM_Tensor *x = slM_input(g, n, 0), *dy = n->gout, *dx = slM_input_grad_fresh(g, n, 0, &fresh);
  int d = x->shape[x->ndim - 1];
  size_t rows = x->size / (size_t)d;
  NormTask t = {.x = x->data,
                .gamma = n->params[0]->value->data,
                .dy = dy->data,
                .mean = n->saved->data,
                .rstd = n->saved2->data,
                .dx = dx->data,
                .d = d,
                .fresh = fresh,
                .rows = rows,
                .dgamma = n->params[0]->frozen ? NULL : slM_param_grad(n->params[0])->data,
                .dbeta = n->params[1]->frozen ? NULL : slM_param_grad(n->params[1])->data};
  slK_parallel_for(rows, ELEMS / (size_t)d + 1, layernorm_grad_rows, &t);
  slK_norm_param_grads(t.x, t.dy, t.mean, t.rstd, 1, rows, d, t.dgamma, t.dbeta);
}

static double layernorm_saves(const slM_Graph *g, const slM_Node *n, int batch, int training) {
  return 2 * slM_rows(n, batch);
}

/* ---------------------------------------------------------------- softmax */

/* a = softmax output, b = its gradient; y += input gradient */
static void softmax_grad_range(void *ctx, size_t r0, size_t r1) {
  const Task *t = ctx;
  for (size_t r = r0; r < r1; r++)
    slK_softmax_grad_row(t->a + r * t->n, t->b + r * t->n, t->y + r * t->n, (int)t->n, !t->fresh);
}

/* rows of a 16-bit input, each widened into a row buffer first (float32 output) */
typedef struct {
  const slM_Tensor *a;
  float *y;
  int d;
} SoftRows;

static void softmax_half_rows(void *ctx, size_t r0, size_t r1) {
  const SoftRows *t = ctx;
  float *row = malloc((size_t)t->d * sizeof *row);
  for (size_t r = r0; r < r1 && row; r++) {
    slK_half_to_f32(t->a->dtype, t->a->half + r * t->d, row, (size_t)t->d);
    slK_softmax_row(row, t->y + r * t->d, t->d);
  }
  free(row);
}

/* over the last dimension; its output is float32 (autocast keeps softmax in float32) */
static void softmax_forward(slM_Graph *g, slM_Node *n) {
  slM_Tensor *a = slM_input(g, n, 0), *y = slM_ensure(&n->out, a->ndim, a->shape);
  int d = a->shape[a->ndim - 1];
  if (!a->half) {
    slK_softmax_rows(a->data, y->data, a->size / (size_t)d, d);
    return;
  }
  SoftRows t = {a, y->data, d};
  slK_parallel_for(a->size / (size_t)d, ELEMS / (size_t)d + 1, softmax_half_rows, &t);
}

static void softmax_backward(slM_Graph *g, slM_Node *n) {
  slM_Tensor *a = slM_input(g, n, 0);
  int d = a->shape[a->ndim - 1];
  Task t = {.a = n->out->data, .b = n->gout->data, .n = (size_t)d};
  t.y = slM_input_grad_fresh(g, n, 0, &t.fresh)->data;
  slK_parallel_for(a->size / (size_t)d, ELEMS / (size_t)d + 1, softmax_grad_range, &t);
}

/* ---------------------------------------------- patches, pooling, the loss */

/* images -> tokens of patch x patch pixels */
static void patchify_forward(slM_Graph *g, slM_Node *n) {
  slM_Tensor *a = slM_input(g, n, 0);
  int batch = a->shape[0];
  int side = g->features == 784 ? 28 : (int)sqrt((double)g->features), P = n->patch, per = side / P;
  int shape[3] = {batch, per * per, P * P};
  slM_Tensor *y = slM_ensure(&n->out, 3, shape);
  for (int b = 0; b < batch; b++)
    for (int t = 0; t < per * per; t++)
      for (int i = 0; i < P; i++)
        for (int j = 0; j < P; j++)
          y->data[((size_t)b * per * per + t) * P * P + i * P + j] =
              a->data[(size_t)b * g->features + ((t / per) * P + i) * side + (t % per) * P + j];
}

static int patchify_shape(slM_Graph *g, slM_Node *n, char *err, size_t errlen) {
  int side = (int)lround(sqrt((double)g->features)), per = side / n->patch;
  n->ndim = 3, n->shape[0] = 1, n->shape[1] = per * per, n->shape[2] = n->patch * n->patch;
  return 0;
}

/* batch x tokens x width -> batch x width */
static void mean_tokens_forward(slM_Graph *g, slM_Node *n) {
  slM_Tensor *a = slM_input(g, n, 0);
  int B = a->shape[0], T = a->shape[1], D = a->shape[2];
  int shape[2] = {B, D};
  slM_Tensor *y = slM_ensure(&n->out, 2, shape);
  memset(y->data, 0, y->size * sizeof *y->data);
  for (int b = 0; b < B; b++)
    for (int t = 0; t < T; t++)
      for (int d = 0; d < D; d++) y->data[(size_t)b * D + d] += a->data[((size_t)b * T + t) * D + d] / (float)T;
}

static void mean_tokens_backward(slM_Graph *g, slM_Node *n) {
  slM_Tensor *a = slM_input(g, n, 0);
  float *dx = slM_input_grad(g, n, 0)->data;
  int B = a->shape[0], T = a->shape[1], D = a->shape[2];
  for (int b = 0; b < B; b++)
    for (int t = 0; t < T; t++)
      for (int d = 0; d < D; d++) dx[((size_t)b * T + t) * D + d] += n->gout->data[(size_t)b * D + d] / (float)T;
}

static int mean_tokens_shape(slM_Graph *g, slM_Node *n, char *err, size_t errlen) {
  n->ndim = 2, n->shape[0] = 1, n->shape[1] = g->nodes[n->inputs[0]].shape[2];
  return 0;
}

/* the mean loss of the logits against the labels; saved: the softmax */
static void cross_entropy_forward(slM_Graph *g, slM_Node *n) {
  slM_Tensor *a = slM_input(g, n, 0), *lab = slM_input(g, n, 1);
  int B = a->shape[0], C = a->shape[1], one = 1;
  slM_Tensor *p = slM_ensure(&n->saved, 2, a->shape);
  slK_softmax_rows(a->data, p->data, (size_t)B, C);
  double loss = 0;
  for (int b = 0; b < B; b++) loss -= log(p->data[(size_t)b * C + (int)lab->data[b]] + 1e-12);
  slM_ensure(&n->out, 1, &one)->data[0] = (float)(loss / B);
}

static void cross_entropy_backward(slM_Graph *g, slM_Node *n) {
  slM_Tensor *a = slM_input(g, n, 0), *lab = slM_input(g, n, 1);
  float *dx = slM_input_grad(g, n, 0)->data;
  int B = a->shape[0], C = a->shape[1];
  for (int b = 0; b < B; b++)
    for (int c = 0; c < C; c++)
      dx[(size_t)b * C + c] += n->gout->data[0] * (n->saved->data[(size_t)b * C + c] - (c == (int)lab->data[b])) / B;
}

static int loss_shape(slM_Graph *g, slM_Node *n, char *err, size_t errlen) {
  n->ndim = 1, n->shape[0] = 1;
  return 0;
}

/* the softmax of the logits, kept for the backward */
double slM_logits_saves(const slM_Graph *g, const slM_Node *n, int batch, int training) {
  return slM_items(&g->nodes[n->inputs[0]], batch);
}

/* ------------------------------------------------------------------ table */

/* clang-format off */
const slM_OpDef slM_ops_core[] = {
    {OP_INPUT, "x", 0, 0, .shape = input_shape, CPU(input_forward, slM_op_nothing), .makes = SLM_MEM_ACT,
     SLM_CUDA_SLOT(slM_cuda_input_forward, slM_cuda_input_backward),
     .autocast = SLM_AUTOCAST_FP32, .kernel = "loop"},
    {OP_LABELS, "labels", 0, 0, .shape = labels_shape, CPU(labels_forward, slM_op_nothing), .makes = SLM_MEM_ACT,
     SLM_CUDA_SLOT(slM_cuda_labels_forward, slM_cuda_labels_backward),
     .autocast = SLM_AUTOCAST_INT, .kernel = "loop"},
    {OP_MASK, "attention_mask", 0, 0, .shape = mask_shape, CPU(mask_forward, slM_op_nothing), .makes = SLM_MEM_ACT,
     SLM_CUDA_SLOT(slM_cuda_mask_forward, slM_cuda_mask_backward),
     .autocast = SLM_AUTOCAST_FP32, .kernel = "loop"},
    {OP_LINEAR, "linear", 1, 1, .min_params = 1, .shape = slM_linear_shape,
     CPU(linear_forward, linear_backward), .saves = linear_saves, .grad_to = slM_linear_grad_to,
     .rounded = slM_linear_rounded,
     SLM_CUDA_SLOT(slM_cuda_linear_forward, slM_cuda_linear_backward),
     .makes = SLM_MEM_ACT, .autocast = SLM_AUTOCAST_LOW, .flags = SLM_OP_PRODUCT | SLM_OP_HALF,
     .kernel = "cblas_sgemm"},
    {OP_RELU, "relu", 1, 1, .flops_per_item = 1, CPU(activation_forward, activation_backward), .makes = SLM_MEM_ACT,
     SLM_CUDA_SLOT(slM_cuda_activation_forward, slM_cuda_activation_backward),
     .autocast = SLM_AUTOCAST_WIDEST, .flags = SLM_OP_HALF, .kernel = "loop"},
    {OP_GELU, "gelu", 1, 1, .flops_per_item = 1, CPU(activation_forward, activation_backward), .makes = SLM_MEM_ACT,
     SLM_CUDA_SLOT(slM_cuda_activation_forward, slM_cuda_activation_backward),
     .autocast = SLM_AUTOCAST_WIDEST, .flags = SLM_OP_HALF, .kernel = "loop"},
    {OP_TANH, "tanh", 1, 1, .flops_per_item = 1, CPU(activation_forward, activation_backward), .makes = SLM_MEM_ACT,
     SLM_CUDA_SLOT(slM_cuda_activation_forward, slM_cuda_activation_backward),
     .autocast = SLM_AUTOCAST_WIDEST, .flags = SLM_OP_HALF, .kernel = "loop"},
    {OP_SCALE, "mul", 1, 1, .flops_per_item = 1, .p = {-1e6, 1e6}, CPU(activation_forward, activation_backward), .makes = SLM_MEM_ACT,
     SLM_CUDA_SLOT(slM_cuda_activation_forward, slM_cuda_activation_backward),
     .autocast = SLM_AUTOCAST_WIDEST, .flags = SLM_OP_HALF, .kernel = "loop"},
    {OP_DROPOUT, "dropout", 1, 1, .flops_per_item = 0, .p = {0, 1, 1}, CPU(dropout_forward, dropout_backward),
     SLM_CUDA_SLOT(slM_cuda_dropout_forward, slM_cuda_dropout_backward),
     .saves = dropout_saves, .makes = SLM_MEM_ACT, .autocast = SLM_AUTOCAST_WIDEST,
     .flags = SLM_OP_HALF | SLM_OP_SAVES_HALF, .kernel = "loop"},
    {OP_LAYERNORM, "layer_norm", 1, 1, .min_params = 2, .flops_per_item = 5, .p = SLM_RANGE_EPS,
     CPU(layernorm_forward, layernorm_backward), .saves = layernorm_saves, .makes = SLM_MEM_ACT,
     SLM_CUDA_SLOT(slM_cuda_norm_forward, slM_cuda_norm_backward),
     .autocast = SLM_AUTOCAST_FP32, .flags = SLM_OP_RESIDUAL, .kernel = "loop"},
    {OP_PATCHIFY, "patchify", 1, 1, .shape = patchify_shape, .patch = {1, 1 << 15}, CPU(patchify_forward, slM_op_nothing),
     SLM_CUDA_SLOT(slM_cuda_patchify_forward, slM_cuda_patchify_backward),
     .grad_to = slM_grad_to_none, .makes = SLM_MEM_ACT, .autocast = SLM_AUTOCAST_FP32, .kernel = "loop"},
    {OP_ADD, "add", 1, 2, .check = add_check, .shape = add_shape, CPU(add_forward, add_backward),
     SLM_CUDA_SLOT(slM_cuda_add_forward, slM_cuda_add_backward),
     .makes = SLM_MEM_ACT, .autocast = SLM_AUTOCAST_WIDEST, .flags = SLM_OP_HALF, .kernel = "loop"},
    {OP_SOFTMAX, "softmax", 1, 1, .flops_per_item = 5, CPU(softmax_forward, softmax_backward), .makes = SLM_MEM_ACT,
     SLM_CUDA_SLOT(slM_cuda_softmax_forward, slM_cuda_softmax_backward),
     .autocast = SLM_AUTOCAST_FP32, .flags = SLM_OP_QUADRATIC | SLM_OP_HALF, .kernel = "loop"},
    {OP_MEAN_TOKENS, "mean", 1, 1, .shape = mean_tokens_shape, CPU(mean_tokens_forward, mean_tokens_backward),
     SLM_CUDA_SLOT(slM_cuda_mean_tokens_forward, slM_cuda_mean_tokens_backward),
     .makes = SLM_MEM_ACT, .autocast = SLM_AUTOCAST_FP32, .kernel = "loop"},
    {OP_CROSS_ENTROPY, "cross_entropy", 2, 2, .shape = loss_shape, CPU(cross_entropy_forward, cross_entropy_backward),
     SLM_CUDA_SLOT(slM_cuda_cross_entropy_forward, slM_cuda_cross_entropy_backward),
     .saves = slM_logits_saves, .grad_to = slM_grad_to_first, .makes = SLM_MEM_ACT, .autocast = SLM_AUTOCAST_FP32,
     .flags = SLM_OP_LOSS, .kernel = "loop"},
    {OP_OUTPUT, "output", 1, SLM_MAX_INPUTS, .flops_per_item = 0, CPU(slM_op_nothing, slM_op_nothing),
     SLM_CUDA_SLOT(slM_cuda_output_forward, slM_cuda_output_backward),
     .grad_to = slM_grad_to_none, .makes = SLM_MEM_ACT, .autocast = SLM_AUTOCAST_FIRST, .kernel = "loop"},
    {0},
};
/* clang-format on */
