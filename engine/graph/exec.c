/*
** exec.c - running a graph: the forward and backward pass of every operator.
**
** The forward pass walks the nodes in order, each reading its inputs'
** outputs; the backward pass walks them in reverse, accumulating each
** node's gradient into its inputs' and its parameters'. Dense products go
** through the kernels layer (slK_sgemm, OpenBLAS): a linear layer over rows of any leading
** shape, and attention as one product per (sample, head) with strides that
** pick the head's columns out of the token rows, so heads are never copied
** apart; or, for a fused attention node, FlashAttention-2 in one call. Compression hooks (transform.h) change what a linear layer
** computes with; their gradient is the straight-through estimator.
*/
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kernels/kernels.h"
#include "kernels/parallel.h"
#include "kernels/reduce.h"
#include "kernels/softmax.h"
#include "memory.h"
#include "plan.h"
#include "precision.h"

static slM_Tensor *ensure(slM_Tensor **slot, int ndim, const int *shape) {
  slM_Tensor *t = *slot;
  int same = t && t->ndim == ndim;
  for (int i = 0; same && i < ndim; i++) same = t->shape[i] == shape[i];
  if (!same) {
    slM_tensor_free(t);
    *slot = t = slM_tensor_new(ndim, shape);
  }
  return t;
}

static slM_Tensor *in(slM_Graph *g, slM_Node *n, int k) { return g->nodes[n->inputs[k]].out; }

/* The gradient slot of input k. The first node to touch it in a backward
** pass finds it zeroed, or, through gin_first, not zeroed but marked
** fresh: a loop that writes every item then stores 0.0f + its term, the
** same bits as adding the term to a zeroed slot, in one pass instead of
** two (the zeroing was 4% of the image transformer's step). */
static slM_Tensor *gin_first(slM_Graph *g, slM_Node *n, int k, int *fresh) {
  slM_Node *src = &g->nodes[n->inputs[k]];
  *fresh = !src->gout_live;
  if (!src->gout_live) {
    slM_Tensor *t = src->gout;
    int same = t && t->ndim == src->out->ndim && memcmp(t->shape, src->out->shape, sizeof t->shape) == 0;
    if (!same) {
      slM_tensor_free(t);
      src->gout = slM_tensor_like(src->out);
      slM_mem_retag(src->gout, SLM_MEM_TEMP);
    }
    src->gout_live = 1;
  }
  return src->gout;
}

#define ELEMS 16384   /* fewest items worth a thread */

static void zero_range(void *ctx, size_t i0, size_t i1) { memset((float *)ctx + i0, 0, (i1 - i0) * sizeof(float)); }

static slM_Tensor *gin(slM_Graph *g, slM_Node *n, int k) {
  int fresh;
  slM_Tensor *t = gin_first(g, n, k, &fresh);
  if (fresh) slK_parallel_for(t->size, ELEMS, zero_range, t->data);
  return t;
}

static slM_Tensor *param_grad(slM_Param *p) {
  if (!p->grad) {
    p->grad = slM_tensor_like(p->value);
    slM_mem_retag(p->grad, SLM_MEM_GRAD);
  }
  return p->grad;
}

/* erf as a rational function (the float32 approximation Eigen and XLA
** use): within 4.3e-7 of erf over every float, against erff's 1e-7, with
** no call, so GELU's loops vectorise. GELU is 14% of the image
** transformer's training step with libm's erff. */
static inline float erf_fast(float x) {
  x = x < -4.0f ? -4.0f : x > 4.0f ? 4.0f : x;
  float x2 = x * x;
  float p = -2.72614225801306e-10f;
  p = p * x2 + 2.77068142495902e-08f;
  p = p * x2 - 2.10102402082508e-06f;
  p = p * x2 - 5.69250639462346e-05f;
  p = p * x2 - 7.34990630326855e-04f;
  p = p * x2 - 2.95459980854025e-03f;
  p = p * x2 - 1.60960333262415e-02f;
  float q = -1.45660718464996e-05f;
  q = q * x2 - 2.13374055278905e-04f;
  q = q * x2 - 1.68282697438203e-03f;
  q = q * x2 - 7.37332916720468e-03f;
  q = q * x2 - 1.42647390514189e-02f;
  return x * p / q;
}

static inline float gelu(float x) { return 0.5f * x * (1.0f + erf_fast(x * 0.70710678f)); }
/* e = exp(-x^2 / 2), from the kernels' exp (slK_vexp), which the loops
** below call on whole chunks: one exp for both, so the same numbers */
static inline float gelu_grad_of(float x, float e) {
  return 0.5f * (1.0f + erf_fast(x * 0.70710678f)) + x * e * 0.39894228f;
}
static inline float gelu_grad(float x) {
  float t = -0.5f * x * x, e;
  slK_vexp(&t, &e, 1);
  return gelu_grad_of(x, e);
}

/* GELU and its slope eight floats at a time: the scalar functions above
** operation for operation (multiplies and adds apart, never fused), so an
** item's value does not depend on which loop computes it. GELU was 16% of
** the image transformer's training step as a scalar loop. Each returns
** where the scalar tail starts. */
#if defined(__x86_64__)
#include <immintrin.h>
#define V8 __attribute__((target("avx2"))) static inline
V8 __m256 erf8(__m256 x) {
  x = _mm256_min_ps(_mm256_set1_ps(4.0f), _mm256_max_ps(_mm256_set1_ps(-4.0f), x));   /* NaN stays NaN */
  __m256 x2 = _mm256_mul_ps(x, x);
  static const float pc[] = {2.77068142495902e-08f, -2.10102402082508e-06f, -5.69250639462346e-05f,
                             -7.34990630326855e-04f, -2.95459980854025e-03f, -1.60960333262415e-02f};
  static const float qc[] = {-2.13374055278905e-04f, -1.68282697438203e-03f, -7.37332916720468e-03f,
                             -1.42647390514189e-02f};
  __m256 p = _mm256_set1_ps(-2.72614225801306e-10f), q = _mm256_set1_ps(-1.45660718464996e-05f);
  for (int k = 0; k < 6; k++) p = _mm256_add_ps(_mm256_mul_ps(p, x2), _mm256_set1_ps(pc[k]));
  for (int k = 0; k < 4; k++) q = _mm256_add_ps(_mm256_mul_ps(q, x2), _mm256_set1_ps(qc[k]));
  return _mm256_div_ps(_mm256_mul_ps(x, p), q);
}

V8 __m256 half_one_plus_erf8(__m256 x) {
  return _mm256_add_ps(_mm256_set1_ps(1.0f), erf8(_mm256_mul_ps(x, _mm256_set1_ps(0.70710678f))));
}

__attribute__((target("avx2"))) static size_t gelu_avx2(const float *a, float *y, size_t i0, size_t i1) {
  size_t i = i0;
  for (; i + 8 <= i1; i += 8) {
    __m256 x = _mm256_loadu_ps(a + i);
    _mm256_storeu_ps(y + i, _mm256_mul_ps(_mm256_mul_ps(_mm256_set1_ps(0.5f), x), half_one_plus_erf8(x)));
  }
  return i;
}

/* y += dy * gelu'(a), or y = dy * gelu'(a) when !accumulate; e[i - i0] = exp(-a^2 / 2) */
__attribute__((target("avx2"))) static size_t gelu_grad_avx2(const float *a, const float *e0, const float *dy, float *y,
                                                             size_t i0, size_t i1, int accumulate) {
  size_t i = i0;
  for (; i + 8 <= i1; i += 8) {
    __m256 x = _mm256_loadu_ps(a + i), e = _mm256_loadu_ps(e0 + (i - i0));
    __m256 g = _mm256_add_ps(_mm256_mul_ps(_mm256_set1_ps(0.5f), half_one_plus_erf8(x)),
                             _mm256_mul_ps(_mm256_mul_ps(x, e), _mm256_set1_ps(0.39894228f)));
    g = _mm256_mul_ps(_mm256_loadu_ps(dy + i), g);
    _mm256_storeu_ps(y + i, accumulate ? _mm256_add_ps(_mm256_loadu_ps(y + i), g) : g);
  }
  return i;
}
#endif

static int have_avx2(void) {
#if defined(__x86_64__)
  return __builtin_cpu_supports("avx2");
#else
  return 0;
#endif
}

/* y[i0..i1) = gelu(a); y += dy * gelu'(a) (or y = when !accumulate) */
static void gelu_items(const float *a, float *y, size_t i0, size_t i1) {
#if defined(__x86_64__)
  if (have_avx2()) i0 = gelu_avx2(a, y, i0, i1);
#endif
  for (size_t i = i0; i < i1; i++) y[i] = gelu(a[i]);
}

static void gelu_grad_items(const float *a, const float *dy, float *y, size_t i0, size_t i1, int accumulate) {
  enum { CHUNK = 256 };
  float t[CHUNK], e[CHUNK];
  for (size_t c0 = i0; c0 < i1; c0 += CHUNK) {
    size_t c1 = i1 - c0 < CHUNK ? i1 : c0 + CHUNK, i = c0;
    for (size_t k = c0; k < c1; k++) t[k - c0] = -0.5f * a[k] * a[k];
    slK_vexp(t, e, c1 - c0);
#if defined(__x86_64__)
    if (have_avx2()) i = gelu_grad_avx2(a, e, dy, y, c0, c1, accumulate);
#endif
    for (; i < c1; i++) {
      float g = dy[i] * gelu_grad_of(a[i], e[i - c0]);
      y[i] = accumulate ? y[i] + g : g;
    }
  }
}

/* Loops between the products run over the cores in ranges (kernels/parallel.h).
** A task names its arrays; each range function treats items independently,
** so the numbers do not depend on how the loop is split. */
typedef struct {
  const float *a, *b, *c;
  float *y, *z;
  size_t n;       /* row length, or a count */
  int op;
  int fresh;      /* y is a fresh gradient slot (gin_first): store 0.0f + term */
  float p;
} Task;


static void softmax_range(void *ctx, size_t r0, size_t r1) {
  const Task *t = ctx;
  for (size_t r = r0; r < r1; r++) slK_softmax_row(t->a + r * t->n, t->y + r * t->n, (int)t->n);
}

static void softmax_rows(const float *x, float *y, size_t rows, int n) {
  Task t = {.a = x, .y = y, .n = (size_t)n};
  slK_parallel_for(rows, ELEMS / (size_t)n + 1, softmax_range, &t);
}

/* Each activation has its own loop, without a choice per element, so that
** ReLU's vectorises (GELU's has its own vector form). */
static void activation_range(void *ctx, size_t i0, size_t i1) {
  const Task *t = ctx;
  const float *restrict a = t->a;
  float *restrict y = t->y;
  switch (t->op) {
    case OP_GELU: gelu_items(a, y, i0, i1); break;
    case OP_RELU: for (size_t i = i0; i < i1; i++) y[i] = a[i] > 0 ? a[i] : 0; break;
    case OP_TANH: for (size_t i = i0; i < i1; i++) y[i] = tanhf(a[i]); break;
    default: for (size_t i = i0; i < i1; i++) y[i] = t->p * a[i]; break;
  }
}

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

/* a = input, b = output gradient, c = output; y += input gradient (or, in a
** fresh slot, y = 0 + input gradient) */
static void activation_grad_range(void *ctx, size_t i0, size_t i1) {
  const Task *t = ctx;
  const float *restrict a = t->a, *restrict gy = t->b, *restrict c = t->c;
  float *restrict y = t->y, p = t->p;
  if (t->op == OP_GELU) {
    gelu_grad_items(a, gy, y, i0, i1, 1);
    return;
  }
#define GRAD_LOOP(term)                                                   \
  do {                                                                    \
    if (t->fresh)                                                         \
      for (size_t i = i0; i < i1; i++) {                                  \
        const float g = gy[i];                                            \
        y[i] = 0.0f + (term);                                             \
      }                                                                   \
    else                                                                  \
      for (size_t i = i0; i < i1; i++) {                                  \
        const float g = gy[i];                                            \
        y[i] += (term);                                                   \
      }                                                                   \
  } while (0)
  switch (t->op) {
    case OP_RELU: GRAD_LOOP(kept(g, a[i] > 0)); break;
    case OP_TANH: GRAD_LOOP(g * (1 - c[i] * c[i])); break;
    default: GRAD_LOOP(p * g); break;
  }
#undef GRAD_LOOP
}

/* the reference: element i is dropped when half (i & 1) of hash(base, i / 2)
** falls below p * 2^32 */
static void dropout_scalar(const Task *t, size_t i0, size_t i1, float keep, uint64_t threshold) {
  for (size_t i = i0; i < i1; i++) {
    slM_Rng r = {t->n + (i >> 1) * 0x9E3779B97F4A7C15ull};
    uint64_t h = slM_rng_next(&r);
    t->z[i] = ((h >> (32 * (i & 1))) & 0xFFFFFFFFull) < threshold ? 0.0f : keep;
    t->y[i] = t->a[i] * t->z[i];
  }
}

/* Sixteen elements at a time: eight splitmix64 hashes (slM_rng_next) in
** 64-bit lanes, whose 32-bit halves are, in order, the words of elements
** 2k and 2k + 1; the same integers as the scalar loop, so the same mask. */
#if defined(__x86_64__)
__attribute__((target("avx512f,avx512dq"))) static size_t dropout_avx512(const Task *t, size_t i0, size_t i1,
                                                                       float keep, uint32_t threshold) {
  const uint64_t gold = 0x9E3779B97F4A7C15ull;
  size_t i = i0;
  if (i & 1) return i;   /* the caller's scalar loop reaches an even start first */
  __m512i step = _mm512_set1_epi64((long long)(8 * gold));
  __m512i state = _mm512_set_epi64(7, 6, 5, 4, 3, 2, 1, 0);
  state = _mm512_add_epi64(_mm512_mullo_epi64(_mm512_add_epi64(state, _mm512_set1_epi64((long long)(i >> 1))),
                                              _mm512_set1_epi64((long long)gold)),
                           _mm512_set1_epi64((long long)(t->n + gold)));
  __m512i m1 = _mm512_set1_epi64((long long)0xBF58476D1CE4E5B9ull), m2 = _mm512_set1_epi64((long long)0x94D049BB133111EBull);
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
    size_t start = i0 + (i0 & 1), end = start;
    if (start < i1) end = dropout_avx512(t, start, i1, keep, (uint32_t)threshold);
    if (end > start) {   /* the element before the even start, then the tail */
      dropout_scalar(t, i0, start, keep, threshold);
      i0 = end;
    }
  }
#endif
  dropout_scalar(t, i0, i1, keep, threshold);
}

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

/* a = softmax output, b = its gradient; y += input gradient */
static void softmax_grad_range(void *ctx, size_t r0, size_t r1) {
  const Task *t = ctx;
  for (size_t r = r0; r < r1; r++) slK_softmax_grad_row(t->a + r * t->n, t->b + r * t->n, t->y + r * t->n, (int)t->n);
}

/* ------------------------------------------------------------ linear */

static void bias_range(void *ctx, size_t r0, size_t r1) {
  const Task *t = ctx;
  const float *restrict b = t->a;
  for (size_t r = r0; r < r1; r++) {
    float *restrict y = t->y + r * t->n;
    for (size_t j = 0; j < t->n; j++) y[j] += b[j];
  }
}

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
  slM_Tensor *we = ensure(&n->saved2, w->ndim, w->shape);
  const float *from = w->data;
  if (n->comp.weight_mask) {
    Masked t = {w->data, n->comp.weight_mask, we->data};
    slK_parallel_for(w->size, ELEMS, masked_range, &t);
    from = we->data;
  }
  if (n->comp.weight) n->comp.weight->apply(n->comp.weight, from, we->data, we->size);
  return we->data;
}

static void linear_forward(slM_Graph *g, slM_Node *n) {
  slM_Tensor *x = in(g, n, 0), *w = n->params[0]->value;
  int out_f = w->shape[0], in_f = w->shape[1];
  int shape[SLM_MAX_DIMS];
  memcpy(shape, x->shape, sizeof shape);
  shape[x->ndim - 1] = out_f;
  slM_Tensor *y = ensure(&n->out, x->ndim, shape);
  size_t rows = x->size / (size_t)in_f;
  const float *xe = x->data;
  if (n->comp.data_in || n->comp.data_in_prune) {
    slM_Tensor *q = ensure(&n->saved, x->ndim, x->shape);
    const float *from = x->data;   /* the first transform writes the copy */
    if (n->comp.data_in_prune) n->comp.data_in_prune->apply(n->comp.data_in_prune, from, q->data, q->size), from = q->data;
    if (n->comp.data_in) n->comp.data_in->apply(n->comp.data_in, from, q->data, q->size);
    xe = q->data;
  }
  const float *we = effective_weight(n);
  slM_gemm(g, SLK_N, SLK_T, (int)rows, out_f, in_f, 1.0f, xe, in_f, we, in_f, 0.0f,
              y->data, out_f);
  if (n->nparams > 1) {
    slM_Tensor *b = n->params[1]->value;
    float *bias = b->data, *tmp = NULL;
    if (n->comp.bias) {
      tmp = malloc(b->size * sizeof *tmp);
      n->comp.bias->apply(n->comp.bias, b->data, tmp, b->size);
      bias = tmp;
    }
    Task t = {.a = bias, .y = y->data, .n = (size_t)out_f};
    slK_parallel_for(rows, ELEMS / (size_t)out_f + 1, bias_range, &t);
    free(tmp);
  }
}

static void linear_backward(slM_Graph *g, slM_Node *n) {
  slM_Tensor *x = in(g, n, 0), *w = n->params[0]->value, *dy = n->gout;
  int out_f = w->shape[0], in_f = w->shape[1];
  size_t rows = x->size / (size_t)in_f;
  const float *xe = (n->comp.data_in || n->comp.data_in_prune) ? n->saved->data : x->data;
  const float *we = (n->comp.weight || n->comp.weight_mask) ? n->saved2->data : w->data;
  /* straight through: the gradient reaches the raw input and weight unchanged.
  ** Images and their patches have nothing upstream to learn, so the first
  ** layer skips its input gradient, a third of its backward work. */
  slM_Op from = g->nodes[n->inputs[0]].op;
  if (from != OP_INPUT && from != OP_PATCHIFY) {
    slM_Tensor *dx = gin(g, n, 0);
    slM_gemm(g, SLK_N, SLK_N, (int)rows, in_f, out_f, 1.0f, dy->data, out_f, we, in_f,
                1.0f, dx->data, in_f);
  }
  if (!n->params[0]->frozen) {
    slM_Tensor *dw = param_grad(n->params[0]);
    slM_gemm(g, SLK_T, SLK_N, out_f, in_f, (int)rows, 1.0f, dy->data, out_f, xe, in_f,
                1.0f, dw->data, in_f);
    if (n->comp.weight_mask)  /* pruned weights stay exactly zero */
      for (size_t i = 0; i < dw->size; i++)
        if (!n->comp.weight_mask[i]) dw->data[i] = 0;
  }
  if (n->nparams > 1 && !n->params[1]->frozen) {
    slK_column_sums(dy->data, rows, (size_t)out_f, param_grad(n->params[1])->data);
  }
}

/* --------------------------------------------------------- layer norm */

/* The row sums of layer norm (here and in the fused add + layer norm,
** fuse.c, so the two give the same numbers) are in double, in four
** interleaved partial sums: one running sum is a chain of dependent adds,
** four times slower, and it was most of layer norm's time. */
static void norm_moments(const float *x, int d, double *mean, double *var) {
  double s[4] = {0, 0, 0, 0}, v[4] = {0, 0, 0, 0};
  int j = 0;
  for (; j + 4 <= d; j += 4)
    for (int k = 0; k < 4; k++) s[k] += x[j + k];
  for (; j < d; j++) s[0] += x[j];
  double m = ((s[0] + s[1]) + (s[2] + s[3])) / d;
  for (j = 0; j + 4 <= d; j += 4)
    for (int k = 0; k < 4; k++) v[k] += (x[j + k] - m) * (x[j + k] - m);
  for (; j < d; j++) v[0] += (x[j] - m) * (x[j] - m);
  *mean = m;
  *var = ((v[0] + v[1]) + (v[2] + v[3])) / d;
}

/* the means over the row of g = gy * gamma and of g * xhat */
static void norm_grad_means(const float *x, float m, float rs, const float *gamma, const float *gy, int d, float *mg,
                            float *mgx) {
  double s[4] = {0, 0, 0, 0}, sx[4] = {0, 0, 0, 0};
  int j = 0;
  for (; j + 4 <= d; j += 4)
    for (int k = 0; k < 4; k++) {
      float xhat = (x[j + k] - m) * rs, gxhat = gy[j + k] * gamma[j + k];
      s[k] += gxhat;
      sx[k] += gxhat * xhat;
    }
  for (; j < d; j++) {
    float xhat = (x[j] - m) * rs, gxhat = gy[j] * gamma[j];
    s[0] += gxhat;
    sx[0] += gxhat * xhat;
  }
  *mg = (float)(((s[0] + s[1]) + (s[2] + s[3])) / d);
  *mgx = (float)(((sx[0] + sx[1]) + (sx[2] + sx[3])) / d);
}

/* forward rows: a = x, b = gamma, c = beta, y = out, z = saved (mean), and saved2 (1/std) in d */
typedef struct {
  const float *x, *gamma, *beta, *dy;
  float *y, *mean, *rstd, *dx, *dgamma, *dbeta;
  int d;
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
    norm_moments(a, d, &m, &v);
    float rs = (float)(1.0 / sqrt(v + t->eps));
    t->mean[r] = (float)m;
    t->rstd[r] = rs;
    for (int j = 0; j < d; j++) b[j] = ((a[j] - (float)m) * rs) * t->gamma[j] + t->beta[j];
  }
}

static void layernorm_forward(slM_Graph *g, slM_Node *n) {
  slM_Tensor *x = in(g, n, 0);
  slM_Tensor *y = ensure(&n->out, x->ndim, x->shape);
  int d = x->shape[x->ndim - 1];
  int rows = (int)(x->size / (size_t)d);
  slM_Tensor *mean = ensure(&n->saved, 1, &rows), *rstd = ensure(&n->saved2, 1, &rows);
  NormTask t = {.x = x->data, .gamma = n->params[0]->value->data, .beta = n->params[1]->value->data, .y = y->data,
                .mean = mean->data, .rstd = rstd->data, .d = d, .eps = n->p};
  slK_parallel_for((size_t)rows, ELEMS / (size_t)d + 1, layernorm_rows, &t);
}

static void layernorm_grad_rows(void *ctx, size_t r0, size_t r1) {
  const NormTask *t = ctx;
  int d = t->d;
  for (size_t r = r0; r < r1; r++) {
    const float *a = t->x + r * (size_t)d, *gy = t->dy + r * (size_t)d;
    float *gx = t->dx + r * (size_t)d;
    float m = t->mean[r], rs = t->rstd[r], mg, mgx;
    norm_grad_means(a, m, rs, t->gamma, gy, d, &mg, &mgx);
    for (int j = 0; j < d; j++) {
      float xhat = (a[j] - m) * rs;
      gx[j] += rs * (gy[j] * t->gamma[j] - mg - xhat * mgx);
    }
  }
}

static void layernorm_backward(slM_Graph *g, slM_Node *n) {
  slM_Tensor *x = in(g, n, 0), *dy = n->gout, *dx = gin(g, n, 0);
  int d = x->shape[x->ndim - 1];
  size_t rows = x->size / (size_t)d;
  NormTask t = {.x = x->data, .gamma = n->params[0]->value->data, .dy = dy->data, .mean = n->saved->data,
                .rstd = n->saved2->data, .dx = dx->data, .d = d, .rows = rows,
                .dgamma = n->params[0]->frozen ? NULL : param_grad(n->params[0])->data,
                .dbeta = n->params[1]->frozen ? NULL : param_grad(n->params[1])->data};
  slK_parallel_for(rows, ELEMS / (size_t)d + 1, layernorm_grad_rows, &t);
  slK_norm_param_grads(t.x, t.dy, t.mean, t.rstd, 1, rows, d, t.dgamma, t.dbeta);
}

/* ---------------------------------------------------------- attention */

static void attention_dims(slM_Tensor *q, int heads, int *B, int *T, int *D, int *dh) {
  *B = q->shape[0];
  *T = q->shape[1];
  *D = q->shape[2];
  *dh = *D / heads;
}

/* The unfused attention's products, one per sample and head (T x T x dh,
** 16 x 16 x 32 in the image transformer: far too small to split), run as
** ranges of (sample, head) pairs on the thread team; each pair writes only
** its own head's slices, so the numbers do not depend on the split. Under a
** precision mode slM_gemm rounds its operands into one shared scratch
** buffer, so the pairs then run in order on the calling thread. */
typedef struct Heads Heads;
typedef void (*HeadFn)(const Heads *t, size_t off, size_t poff);
struct Heads {
  slM_Graph *g;
  int T, D, dh, H;
  float scale;
  const float *q, *k;   /* scores: q, k; context: p, v */
  float *out, *d0, *d1; /* forward: out; backward: the two input gradients */
  const float *gout;
  HeadFn fn;
};

static void heads_range(void *ctx, size_t i0, size_t i1) {
  const Heads *t = ctx;
  for (size_t i = i0; i < i1; i++) {
    size_t b = i / (size_t)t->H, h = i % (size_t)t->H;
    t->fn(t, b * (size_t)t->T * t->D + h * (size_t)t->dh, i * (size_t)t->T * t->T);
  }
}

static void per_head(Heads *t, slM_Graph *g, slM_Node *n, slM_Tensor *x, HeadFn fn) {
  int B;
  attention_dims(x, n->heads, &B, &t->T, &t->D, &t->dh);
  t->g = g, t->H = n->heads, t->fn = fn;
  t->scale = 1.0f / sqrtf((float)t->dh);
  size_t pairs = (size_t)B * t->H;
  if (g->precision != SLM_FP32) heads_range(t, 0, pairs);
  else slK_parallel_for(pairs, 8, heads_range, t);
}

static void scores_head(const Heads *t, size_t off, size_t poff) {
  slM_gemm(t->g, SLK_N, SLK_T, t->T, t->T, t->dh, t->scale, t->q + off, t->D, t->k + off, t->D, 0.0f, t->out + poff,
           t->T);
}

static void scores_forward(slM_Graph *g, slM_Node *n) {
  slM_Tensor *q = in(g, n, 0), *k = in(g, n, 1);
  int shape[4] = {q->shape[0], n->heads, q->shape[1], q->shape[1]};
  Heads t = {.q = q->data, .k = k->data, .out = ensure(&n->out, 4, shape)->data};
  per_head(&t, g, n, q, scores_head);
}

static void scores_grad_head(const Heads *t, size_t off, size_t poff) {
  const float *g_s = t->gout + poff;
  slM_gemm(t->g, SLK_N, SLK_N, t->T, t->dh, t->T, t->scale, g_s, t->T, t->k + off, t->D, 1.0f, t->d0 + off, t->D);
  slM_gemm(t->g, SLK_T, SLK_N, t->T, t->dh, t->T, t->scale, g_s, t->T, t->q + off, t->D, 1.0f, t->d1 + off, t->D);
}

static void scores_backward(slM_Graph *g, slM_Node *n) {
  slM_Tensor *q = in(g, n, 0);
  Heads t = {.q = q->data, .k = in(g, n, 1)->data, .gout = n->gout->data, .d0 = gin(g, n, 0)->data,
             .d1 = gin(g, n, 1)->data};
  per_head(&t, g, n, q, scores_grad_head);
}

static void context_head(const Heads *t, size_t off, size_t poff) {
  slM_gemm(t->g, SLK_N, SLK_N, t->T, t->dh, t->T, 1.0f, t->q + poff, t->T, t->k + off, t->D, 0.0f, t->out + off,
           t->D);
}

static void context_forward(slM_Graph *g, slM_Node *n) {
  slM_Tensor *v = in(g, n, 1);
  Heads t = {.q = in(g, n, 0)->data, .k = v->data, .out = ensure(&n->out, 3, v->shape)->data};
  per_head(&t, g, n, v, context_head);
}

static void context_grad_head(const Heads *t, size_t off, size_t poff) {
  slM_gemm(t->g, SLK_N, SLK_T, t->T, t->T, t->dh, 1.0f, t->gout + off, t->D, t->k + off, t->D, 1.0f, t->d0 + poff,
           t->T);
  slM_gemm(t->g, SLK_T, SLK_N, t->T, t->dh, t->T, 1.0f, t->q + poff, t->T, t->gout + off, t->D, 1.0f, t->d1 + off,
           t->D);
}

static void context_backward(slM_Graph *g, slM_Node *n) {
  slM_Tensor *v = in(g, n, 1);
  Heads t = {.q = in(g, n, 0)->data, .k = v->data, .gout = n->gout->data, .d0 = gin(g, n, 0)->data,
             .d1 = gin(g, n, 1)->data};
  per_head(&t, g, n, v, context_grad_head);
}

/* The fused node: FlashAttention-2 (kernels/attention.c) reads the heads
** straight out of the token rows (strides), writes the merged context, and
** keeps only the row logsumexp (batch x heads x tokens) for the backward. */
static slK_Attn fused_shape(slM_Graph *g, slM_Node *n) {
  slM_Tensor *q = in(g, n, 0);
  int B, T, D, dh;
  attention_dims(q, n->heads, &B, &T, &D, &dh);
  slK_Attn a;
  slK_attention_contiguous(&a, B, n->heads, T, T, dh, 0);
  a.q_row = a.k_row = D;
  a.q_head = a.k_head = dh;
  a.q_batch = a.k_batch = (long)T * D;
  a.key_mask = n->ninputs > 3 ? in(g, n, 3)->data : NULL;
  a.causal = n->causal;
  return a;
}

static void attention_failed(const slM_Node *n) {
  fprintf(stderr, "syslab: out of memory for the attention workspace of %s\n", n->name);
  abort();
}

static void fused_forward(slM_Graph *g, slM_Node *n) {
  slM_Tensor *q = in(g, n, 0);
  slK_Attn a = fused_shape(g, n);
  int lshape[3] = {a.batch, a.heads, a.nq};
  slM_Tensor *o = ensure(&n->out, 3, q->shape), *lse = ensure(&n->saved, 3, lshape);
  if (slK_attention_forward(SLK_ATTN_FUSED, &a, q->data, in(g, n, 1)->data, in(g, n, 2)->data, o->data, lse->data) != 0)
    attention_failed(n);
}

static void fused_backward(slM_Graph *g, slM_Node *n) {
  slK_Attn a = fused_shape(g, n);
  slM_Tensor *dq = gin(g, n, 0), *dk = gin(g, n, 1), *dv = gin(g, n, 2);
  if (slK_attention_backward(SLK_ATTN_FUSED, &a, in(g, n, 0)->data, in(g, n, 1)->data, in(g, n, 2)->data, n->out->data,
                             n->gout->data, n->saved->data, dq->data, dk->data, dv->data) != 0)
    attention_failed(n);
}

/* --------------------------------------------------------------- forward */

static void node_forward(slM_Graph *g, slM_Node *n, const float *x, const uint8_t *labels, int batch) {
  slM_Tensor *a = n->ninputs > 0 ? in(g, n, 0) : NULL, *y;
  switch (n->op) {
    case OP_INPUT: {
      int shape[2] = {batch, g->features};
      y = ensure(&n->out, 2, shape);
      if (y->data != x) memcpy(y->data, x, y->size * sizeof *y->data);   /* else filled in place */
      break;
    }
    case OP_LABELS: {
      y = ensure(&n->out, 1, &batch);
      for (int i = 0; i < batch; i++) y->data[i] = labels ? labels[i] : 0;
      break;
    }
    case OP_MASK: {
      int shape[2] = {batch, g->tokens};
      y = ensure(&n->out, 2, shape);
      for (size_t i = 0; i < y->size; i++) y->data[i] = 1;  /* every patch is a real token */
      break;
    }
    case OP_LINEAR: linear_forward(g, n); break;
    case OP_RELU: case OP_GELU: case OP_TANH: case OP_SCALE: {
      y = ensure(&n->out, a->ndim, a->shape);
      Task t = {.a = a->data, .y = y->data, .op = n->op, .p = n->p};
      slK_parallel_for(a->size, ELEMS, activation_range, &t);
      break;
    }
    case OP_DROPOUT:
      y = ensure(&n->out, a->ndim, a->shape);
      if (g->training && n->p > 0) {
        /* one draw from the graph's generator, then a counter-based hash per
        ** element: the mask does not depend on how the loop is split */
        Task t = {.a = a->data, .y = y->data, .z = ensure(&n->saved, a->ndim, a->shape)->data, .p = n->p,
                  .n = (size_t)slM_rng_next(&g->rng)};
        slK_parallel_for(a->size, ELEMS, dropout_range, &t);
      } else {
        memcpy(y->data, a->data, a->size * sizeof *a->data);
      }
      break;
    case OP_LAYERNORM: layernorm_forward(g, n); break;
    case OP_PATCHIFY: {
      int side = g->features == 784 ? 28 : (int)sqrt((double)g->features), P = n->patch, per = side / P;
      int shape[3] = {batch, per * per, P * P};
      y = ensure(&n->out, 3, shape);
      for (int b = 0; b < batch; b++)
        for (int t = 0; t < per * per; t++)
          for (int i = 0; i < P; i++)
            for (int j = 0; j < P; j++)
              y->data[((size_t)b * per * per + t) * P * P + i * P + j] =
                  a->data[(size_t)b * g->features + ((t / per) * P + i) * side + (t % per) * P + j];
      break;
    }
    case OP_ADD: {
      y = ensure(&n->out, a->ndim, a->shape);
      if (n->ninputs == 2) {
        Task t = {.a = a->data, .b = in(g, n, 1)->data, .y = y->data};
        slK_parallel_for(a->size, ELEMS, add_range, &t);
      } else {
        slM_Tensor *p = n->params[0]->value;   /* e.g. position embeddings, one row per sample */
        Task t = {.a = a->data, .b = p->data, .y = y->data, .n = p->size};
        slK_parallel_for(a->size / p->size, ELEMS / p->size + 1, add_row_range, &t);
      }
      break;
    }
    case OP_SCORES: scores_forward(g, n); break;
    case OP_MASK_FILL: {
      slM_Tensor *mask = in(g, n, 1);
      y = ensure(&n->out, a->ndim, a->shape);
      int B = a->shape[0], H = a->shape[1], T = a->shape[2];
      for (int b = 0; b < B; b++)
        for (int h = 0; h < H; h++)
          for (int i = 0; i < T; i++)
            for (int j = 0; j < T; j++) {
              size_t k = (((size_t)b * H + h) * T + i) * T + j;
              y->data[k] = mask->data[(size_t)b * T + j] != 0 ? a->data[k] : -1e9f;
            }
      break;
    }
    case OP_SOFTMAX: {
      y = ensure(&n->out, a->ndim, a->shape);
      int d = a->shape[a->ndim - 1];
      softmax_rows(a->data, y->data, a->size / (size_t)d, d);
      break;
    }
    case OP_CONTEXT: context_forward(g, n); break;
    case OP_ATTENTION: fused_forward(g, n); break;
    case OP_MEAN_TOKENS: {
      int B = a->shape[0], T = a->shape[1], D = a->shape[2];
      int shape[2] = {B, D};
      y = ensure(&n->out, 2, shape);
      memset(y->data, 0, y->size * sizeof *y->data);
      for (int b = 0; b < B; b++)
        for (int t = 0; t < T; t++)
          for (int d = 0; d < D; d++) y->data[(size_t)b * D + d] += a->data[((size_t)b * T + t) * D + d] / (float)T;
      break;
    }
    case OP_CROSS_ENTROPY: {
      slM_Tensor *lab = in(g, n, 1);
      int B = a->shape[0], C = a->shape[1], one = 1;
      slM_Tensor *p = ensure(&n->saved, 2, a->shape);
      softmax_rows(a->data, p->data, (size_t)B, C);
      double loss = 0;
      for (int b = 0; b < B; b++) loss -= log(p->data[(size_t)b * C + (int)lab->data[b]] + 1e-12);
      y = ensure(&n->out, 1, &one);
      y->data[0] = (float)(loss / B);
      break;
    }
    case OP_OUTPUT:
      break;
    default:
      if (!slM_lm_node_forward(g, n)) slM_fused_node_forward(g, n);
      break;
  }
}

/* A pass polls the stop hook between nodes: the longest wait is one node,
** not one batch (a transformer batch of 65536 images runs for seconds). The
** pass only computes activations and gradients; the weights change in the
** optimizer step alone, which a stopped step skips, so an interrupted step
** leaves every weight as it was. */
static int stop_now(slM_Graph *g) { return g->stop && (g->stopped = g->stop(g->stop_ud) != 0); }

/* With buffer planning (a graph after the fusion pass), a pass writes
** every output into its place in one arena (plan.c): the peak is the arena
** rather than the sum of the nodes, and nothing is allocated. */
slM_Tensor *slM_forward(slM_Graph *g, const float *x, const uint8_t *labels, int batch, int training) {
  g->training = training;
  g->stopped = 0;
  int logits = slM_logits_node(g);
  slM_Plan *plan = g->plan ? slM_plan_begin(g, batch, training) : NULL;
  for (int i = 0; i < g->n && !stop_now(g); i++) {
    slM_node_begin(g, i, 0);
    node_forward(g, &g->nodes[i], x, labels, batch);
    if (g->precision != SLM_FP32) slM_precision_after(g, i);
    slM_node_end(g, i, 0);
    if (plan) slM_plan_after_node(g, plan, i);
  }
  if (plan) slM_plan_end(g, plan);
  return g->nodes[logits].out;
}

float *slM_input_rows(slM_Graph *g, int batch) {
  if (g->plan) return NULL;   /* a planned graph places its input in its arena when the pass starts */
  for (int i = 0; i < g->n; i++)
    if (g->nodes[i].op == OP_INPUT) {
      int shape[2] = {batch, g->features};
      return ensure(&g->nodes[i].out, 2, shape)->data;
    }
  return NULL;
}

/* -------------------------------------------------------------- backward */

static void node_backward(slM_Graph *g, slM_Node *n) {
  slM_Tensor *dy = n->gout, *a = n->ninputs > 0 ? in(g, n, 0) : NULL;
  switch (n->op) {
    case OP_LINEAR: linear_backward(g, n); break;
    case OP_RELU: case OP_GELU: case OP_TANH: case OP_SCALE: {
      Task t = {.a = a->data, .b = dy->data, .c = n->out->data, .op = n->op, .p = n->p};
      t.y = (n->op == OP_GELU ? gin(g, n, 0) : gin_first(g, n, 0, &t.fresh))->data;
      slK_parallel_for(a->size, ELEMS, activation_grad_range, &t);
      break;
    }
    case OP_DROPOUT: {
      int active = g->training && n->p > 0;
      Task t = {.a = dy->data, .b = active ? n->saved->data : NULL};
      t.y = gin_first(g, n, 0, &t.fresh)->data;
      slK_parallel_for(a->size, ELEMS, active ? mul_acc_range : acc_range, &t);
      break;
    }
    case OP_LAYERNORM: layernorm_backward(g, n); break;
    case OP_PATCHIFY: break;  /* images are inputs: nothing upstream learns */
    case OP_ADD: {
      Task t = {.a = dy->data};
      t.y = gin_first(g, n, 0, &t.fresh)->data;
      slK_parallel_for(a->size, ELEMS, acc_range, &t);
      if (n->ninputs == 2) {
        t.y = gin_first(g, n, 1, &t.fresh)->data;
        slK_parallel_for(a->size, ELEMS, acc_range, &t);
      } else if (!n->params[0]->frozen) {
        slM_Tensor *dp = param_grad(n->params[0]);
        slK_column_sums(dy->data, a->size / dp->size, dp->size, dp->data);
      }
      break;
    }
    case OP_SCORES: scores_backward(g, n); break;
    case OP_MASK_FILL: {
      float *dx = gin(g, n, 0)->data;
      for (size_t i = 0; i < a->size; i++) dx[i] += n->out->data[i] > -1e8f ? dy->data[i] : 0;
      break;
    }
    case OP_SOFTMAX: {
      int d = a->shape[a->ndim - 1];
      Task t = {.a = n->out->data, .b = dy->data, .y = gin(g, n, 0)->data, .n = (size_t)d};
      slK_parallel_for(a->size / (size_t)d, ELEMS / (size_t)d + 1, softmax_grad_range, &t);
      break;
    }
    case OP_CONTEXT: context_backward(g, n); break;
    case OP_ATTENTION: fused_backward(g, n); break;
    case OP_MEAN_TOKENS: {
      float *dx = gin(g, n, 0)->data;
      int B = a->shape[0], T = a->shape[1], D = a->shape[2];
      for (int b = 0; b < B; b++)
        for (int t = 0; t < T; t++)
          for (int d = 0; d < D; d++) dx[((size_t)b * T + t) * D + d] += dy->data[(size_t)b * D + d] / (float)T;
      break;
    }
    case OP_CROSS_ENTROPY: {
      slM_Tensor *lab = in(g, n, 1);
      float *dx = gin(g, n, 0)->data;
      int B = a->shape[0], C = a->shape[1];
      for (int b = 0; b < B; b++)
        for (int c = 0; c < C; c++)
          dx[(size_t)b * C + c] += dy->data[0] * (n->saved->data[(size_t)b * C + c] - (c == (int)lab->data[b])) / B;
      break;
    }
    default:
      if (!slM_lm_node_backward(g, n)) slM_fused_node_backward(g, n);
      break;
  }
}

double slM_backward(slM_Graph *g, const uint8_t *labels, int batch) {
  g->stopped = 0;
  for (int i = 0; i < g->n; i++) g->nodes[i].gout_live = 0;
  int loss_node = -1;
  for (int i = 0; i < g->n; i++)
    if (g->nodes[i].op == OP_CROSS_ENTROPY || g->nodes[i].op == OP_TOKEN_CE) loss_node = i;
  double loss;
  slM_node_begin(g, loss_node >= 0 ? loss_node : slM_logits_node(g), 1);
  if (loss_node >= 0) {
    slM_Node *n = &g->nodes[loss_node];
    slM_tensor_free(n->gout);
    n->gout = slM_tensor_like(n->out);
    n->gout_live = 1;
    n->gout->data[0] = 1;
    loss = n->out->data[0];
  } else {
    /* an inference graph: the loss is computed outside it, as a training loop would */
    slM_Node *n = &g->nodes[slM_logits_node(g)];
    int C = n->out->shape[1];
    slM_tensor_free(n->gout);
    n->gout = slM_tensor_like(n->out);
    n->gout_live = 1;
    softmax_rows(n->out->data, n->gout->data, (size_t)batch, C);
    loss = 0;
    for (int b = 0; b < batch; b++) {
      float *row = n->gout->data + (size_t)b * C;
      loss -= log(row[labels[b]] + 1e-12);
      row[labels[b]] -= 1;
      for (int c = 0; c < C; c++) row[c] /= (float)batch;
    }
    loss /= batch;
  }
  slM_node_end(g, loss_node >= 0 ? loss_node : slM_logits_node(g), 1);
  for (int i = g->n - 1; i >= 0 && !stop_now(g); i--)
    if (g->nodes[i].gout_live) {
      slM_node_begin(g, i, 1);
      node_backward(g, &g->nodes[i]);
      slM_node_end(g, i, 1);
    }
  return loss;
}

void slM_zero_grads(slM_Graph *g) {
  for (int i = 0; i < g->n; i++)
    for (int k = 0; k < g->nodes[i].nparams; k++) {
      slM_Param *p = g->nodes[i].params[k];
      if (p->grad) slK_parallel_for(p->grad->size, ELEMS, zero_range, p->grad->data);
    }
}

void slM_release_activations(slM_Graph *g) {
  slM_plan_release(g);   /* the arena and its views */
  for (int i = 0; i < g->n; i++) {
    slM_Node *n = &g->nodes[i];
    slM_tensor_free(n->out);
    slM_tensor_free(n->gout);
    slM_tensor_free(n->saved);
    slM_tensor_free(n->saved2);
    n->out = n->gout = n->saved = n->saved2 = NULL;
    n->gout_live = 0;
  }
}

/* ------------------------------------------- shared with the other operator files */

slM_Tensor *slM_ensure(slM_Tensor **slot, int ndim, const int *shape) { return ensure(slot, ndim, shape); }
slM_Tensor *slM_input_grad(slM_Graph *g, slM_Node *n, int k) { return gin(g, n, k); }
slM_Tensor *slM_param_grad(slM_Param *p) { return param_grad(p); }
void slM_softmax_rows(const float *x, float *y, size_t rows, int n) { softmax_rows(x, y, rows, n); }
void slM_norm_moments(const float *x, int d, double *mean, double *var) { norm_moments(x, d, mean, var); }
void slM_norm_grad_means(const float *x, float m, float rs, const float *gamma, const float *gy, int d, float *mg,
                         float *mgx) {
  norm_grad_means(x, m, rs, gamma, gy, d, mg, mgx);
}
float slM_gelu(float x) { return gelu(x); }
float slM_gelu_grad(float x) { return gelu_grad(x); }
void slM_gelu_items(const float *x, float *y, size_t i0, size_t i1) { gelu_items(x, y, i0, i1); }
void slM_gelu_grad_items(const float *x, const float *dy, float *dx, size_t i0, size_t i1, int accumulate) {
  gelu_grad_items(x, dy, dx, i0, i1, accumulate);
}
