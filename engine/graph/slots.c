/*
** slots.c - the tensors an operator's kernels read and write: output and
** saved slots reused from pass to pass, and gradient slots made or marked
** fresh when a backward pass first reaches them.
**
** Slots are reused while the shape holds, so a steady training loop
** allocates nothing; with buffer planning (plan.c) they already hold views
** of the arena, which the shape test finds and keeps.
*/
#include <string.h>

#include "kernels/gemm_half.h"
#include "kernels/parallel.h"
#include "kernels/round.h"
#include "memory.h"
#include "op.h"
#include "slots.h"

slM_Tensor *slM_ensure_as(slM_Tensor **slot, int ndim, const int *shape, int dtype) {
  slM_Tensor *t = *slot;
  int same = t && t->ndim == ndim && t->dtype == dtype;
  for (int i = 0; same && i < ndim; i++) same = t->shape[i] == shape[i];
  if (!same) {
    slM_tensor_free(t);
    *slot = t = slM_tensor_new_as(ndim, shape, dtype);
  }
  return t;
}

slM_Tensor *slM_ensure(slM_Tensor **slot, int ndim, const int *shape) {
  return slM_ensure_as(slot, ndim, shape, SLM_FP32);
}

const float *slM_get(const slM_Tensor *t, size_t i, size_t n, float *buf) {
  if (!t->half) return t->data + i;
  slK_half_to_f32(t->dtype, t->half + i, buf, n);
  return buf;
}

void slM_put(slM_Tensor *t, size_t i, float *vals, size_t n, int round) {
  if (t->half) slK_f32_to_half(t->dtype, vals, t->half + i, n);
  else if (round) slK_round_values(round, vals, vals, n);
}

/* The zeroing this saves was 4% of the image transformer's step. */
slM_Tensor *slM_input_grad_fresh(slM_Graph *g, slM_Node *n, int k, int *fresh) {
  slM_Node *src = &g->nodes[n->inputs[k]];
  *fresh = !src->gout_live;
  if (!src->gout_live) {
    slM_Tensor *t = src->gout;
    int same = t && t->ndim == src->out->ndim && memcmp(t->shape, src->out->shape, sizeof t->shape) == 0;
    if (!same) {
      slM_tensor_free(t);
      src->gout = slM_tensor_like(src->out); /* float32 */
      slM_mem_retag(src->gout, SLM_MEM_TEMP);
    }
    src->gout_live = 1;
  }
  return src->gout;
}

static void zero_range(void *ctx, size_t i0, size_t i1) { memset((float *)ctx + i0, 0, (i1 - i0) * sizeof(float)); }

void slM_zero(float *x, size_t n) { slK_parallel_for(n, SLM_ELEMS, zero_range, x); }

slM_Tensor *slM_input_grad(slM_Graph *g, slM_Node *n, int k) {
  int fresh;
  slM_Tensor *t = slM_input_grad_fresh(g, n, k, &fresh);
  if (fresh) slM_zero(t->data, t->size);
  return t;
}

slM_Tensor *slM_param_grad(slM_Param *p) {
  if (!p->grad) {
    p->grad = slM_tensor_like(p->value);
    slM_mem_retag(p->grad, SLM_MEM_GRAD);
  }
  return p->grad;
}

double slM_items(const slM_Node *n, int batch) {
  double e = batch;
  for (int d = 1; d < n->ndim; d++) e *= n->shape[d];
  return e;
}

double slM_rows(const slM_Node *n, int batch) { return slM_items(n, batch) / (n->ndim ? n->shape[n->ndim - 1] : 1); }

static int half_storage = 1;

int slM_half_storage(int on) {
  int was = half_storage;
  half_storage = on;
  return was;
}

int slM_half_storage_on(void) { return half_storage; }

int slM_mask_store(const slM_Graph *g) {
  return half_storage && g->device == SLM_CPU && g->precision != SLM_FP32 ? g->precision : SLM_FP32;
}
