/*
** tensor.c - tensors with a memory counter, and the random numbers every
** model and data set draws from.
**
** A tensor holds float32 values, or under a 16-bit precision mode bfloat16
** or IEEE half bits (model.h), half the bytes. Tensor data is counted as it
** is allocated and freed (memory.c), so a lab can report the live and peak
** bytes a model needed. Random numbers come from splitmix64, which gives the
** same sequence on every machine and compiler.
*/
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kernels/device.h"
#include "kernels/kernels.h"
#include "kernels/round.h"
#include "memory.h"

static slM_Tensor *header(int ndim, const int *shape) {
  slM_Tensor *t = calloc(1, sizeof *t);
  t->ndim = ndim;
  t->size = 1;
  for (int i = 0; i < ndim; i++) {
    t->shape[i] = shape[i];
    t->size *= (size_t)shape[i];
  }
  return t;
}

static size_t element_bytes(int dtype) { return dtype == SLM_FP32 ? sizeof(float) : sizeof(uint16_t); }

/* the storage of a tensor's values: data for float32, half for 16 bits */
static void set_storage(slM_Tensor *t, void *mem, int dtype) {
  t->dtype = dtype;
  if (dtype == SLM_FP32) t->data = mem;
  else t->half = mem;
}

/* align: 0 for calloc's alignment, else a power of two (the arena's 64 bytes) */
static slM_Tensor *tensor_new(int ndim, const int *shape, size_t align, int dtype) {
  slM_Tensor *t = header(ndim, shape);
  size_t bytes = (t->size ? t->size : 1) * element_bytes(dtype);
  void *mem = NULL;
  if (!align) mem = calloc(1, bytes);
  else if (posix_memalign(&mem, align, bytes) == 0) memset(mem, 0, bytes);
  else mem = NULL;
  if (!mem) {
    fprintf(stderr, "syslab: out of memory for a tensor of %zu values\n", t->size);
    abort();
  }
  set_storage(t, mem, dtype);
  slM_mem_on_alloc(t);
  return t;
}

slM_Tensor *slM_tensor_new(int ndim, const int *shape) { return tensor_new(ndim, shape, 0, SLM_FP32); }
slM_Tensor *slM_tensor_new_as(int ndim, const int *shape, int dtype) { return tensor_new(ndim, shape, 0, dtype); }
slM_Tensor *slM_tensor_aligned(int ndim, const int *shape, size_t align) {
  return tensor_new(ndim, shape, align, SLM_FP32);
}

slM_Tensor *slM_tensor_like(const slM_Tensor *t) { return slM_tensor_new(t->ndim, t->shape); }

slM_Tensor *slM_tensor_copy(const slM_Tensor *t) {
  slM_Tensor *c = slM_tensor_new_as(t->ndim, t->shape, t->dtype);
  memcpy(t->dtype == SLM_FP32 ? (void *)c->data : (void *)c->half,
         t->dtype == SLM_FP32 ? (const void *)t->data : (const void *)t->half, slM_tensor_bytes(t));
  return c;
}

float slM_tensor_at(const slM_Tensor *t, size_t i) {
  if (t->dtype == SLM_FP32) return t->data[i];
  return t->dtype == SLM_BF16 ? slK_bf16_to_f32(t->half[i]) : slK_fp16_value(t->half[i]);
}

/* Views are how planned buffers reach the nodes (plan.c): the arena is one
** counted allocation, so a view adds nothing to the live bytes. */
slM_Tensor *slM_tensor_view_as(void *mem, int ndim, const int *shape, int dtype) {
  slM_Tensor *t = header(ndim, shape);
  set_storage(t, mem, dtype);
  t->view = 1;
  t->category = SLM_MEM_ACT;
  t->node = -1;
  return t;
}

slM_Tensor *slM_tensor_view(float *data, int ndim, const int *shape) {
  return slM_tensor_view_as(data, ndim, shape, SLM_FP32);
}

void slM_tensor_free(slM_Tensor *t) {
  if (!t) return;
  if (t->dev) slK_dev_free(t->dev, t->size * sizeof(float), t->category);
  if (t->view || (t->dev && !t->data)) { /* nothing on the host to count or free */
    free(t);
    return;
  }
  slM_mem_on_free(t);
  free(t->data);
  free(t->half);
  free(t);
}

void slM_rng_seed(slM_Rng *r, uint64_t seed) { r->state = seed * 0x9E3779B97F4A7C15ull + 0x2545F4914F6CDD1Dull; }

/* splitmix64 is counter-based: each draw adds the same step to the state
** before hashing it, so the stream after k draws starts from state + k steps */
void slM_rng_skip(slM_Rng *r, uint64_t draws) { r->state += draws * 0x9E3779B97F4A7C15ull; }

uint64_t slM_rng_next(slM_Rng *r) {
  uint64_t z = (r->state += 0x9E3779B97F4A7C15ull);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

double slM_rng_uniform(slM_Rng *r) { return (double)(slM_rng_next(r) >> 11) * (1.0 / 9007199254740992.0); }

double slM_rng_normal(slM_Rng *r) {
  /* Box-Muller; 1 - u keeps the logarithm finite */
  double u = 1.0 - slM_rng_uniform(r), v = slM_rng_uniform(r);
  return sqrt(-2.0 * log(u)) * cos(6.283185307179586 * v);
}
