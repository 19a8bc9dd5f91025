/*
** ops_train.cu - the optimisers of engine/graph/train.c on the GPU: SGD with
** momentum and weight decay, and AdamW, each one launch over every
** parameter of a model.
**
** Build and tests: as ops.cu (tests/unit/test_gpu_ops.c runs train.c's
** slM_optimizer_step on a model's parameters and this on copies of them,
** and compares them bit for bit).
**
** The parameters stay where the graph keeps them, each its own allocation:
** the launch reads a device array of records {w, g, m, v, n, start, weight
** decay}, start being the parameter's offset in the concatenation of all of
** them. slG_params_new fills the starts and copies the records to the
** device once (a model's parameters do not move between steps), so a step
** is one launch with no copy. Thread i of the flat index space finds its
** record by binary search over the starts (a few dozen records: a handful
** of cached loads) and updates element i - start of it. One flat buffer
** holding every parameter would spare the search, but would make the graph
** allocate its parameters as slices of one buffer; records leave that free.
**
** The arithmetic is train.c's update_scalar, operation for operation, with
** ops.h's never-fused float operations, IEEE division and square root, and
** the same float32 constants (the bias corrections made in binary64 on the
** host as train.c makes them): the CPU's bits.
*/
#include "module.h"
#include "ops.h"

#include <math.h>
#include <stdlib.h>

typedef struct {
  float *w, *g, *m, *v;
  size_t n, start;
  float wd;
} Record;

typedef struct {
  int count, all_v; /* all_v: every record has a v (AdamW may run) */
  size_t total;
  Record *dev;
} Table;

/* train.c's Update, as float32 */
typedef struct {
  float lr, b1, nb1, b2, nb2, ic1, rsc2, eps, momentum;
  int adam;
} Hyper;

__device__ __forceinline__ int record_of(const Record *r, int count, size_t i) {
  int lo = 0, hi = count - 1; /* the last record whose start is <= i */
  while (lo < hi) {
    int mid = (lo + hi + 1) / 2;
    if (r[mid].start <= i) lo = mid;
    else hi = mid - 1;
  }
  return lo;
}

__global__ void optimizer_step(const Record *recs, int count, size_t total, Hyper h) {
  EACH_ITEM(i, total) {
    const Record *p = recs + record_of(recs, count, i);
    size_t j = i - p->start;
    if (j >= p->n) continue;
    float w = p->w[j], g = p->g[j], m = p->m[j];
    if (!h.adam) {
      m = add_rn(add_rn(mul_rn(h.momentum, m), g), mul_rn(p->wd, w));
      p->m[j] = m;
      p->w[j] = sub_rn(w, mul_rn(h.lr, m));
      continue;
    }
    float v = p->v[j];
    m = add_rn(mul_rn(h.b1, m), mul_rn(h.nb1, g));
    v = add_rn(mul_rn(h.b2, v), mul_rn(mul_rn(h.nb2, g), g));
    float step = div_rn(mul_rn(m, h.ic1), add_rn(mul_rn(__fsqrt_rn(v), h.rsc2), h.eps));
    p->m[j] = m;
    p->v[j] = v;
    p->w[j] = sub_rn(w, mul_rn(h.lr, add_rn(step, mul_rn(p->wd, w))));
  }
}

extern "C" void slG_params_free(void *params) {
  Table *t = (Table *)params;
  if (!t) return;
  cudaFree(t->dev);
  free(t);
}

extern "C" void *slG_params_new(const slG_ParamRef *refs, int count, char *err, size_t errlen) {
  Table *t = (Table *)calloc(1, sizeof *t);
  Record *host = (Record *)calloc(count > 0 ? (size_t)count : 1, sizeof *host);
  cudaError_t e = cudaSuccess;
  if (!t || !host || count < 0) {
    snprintf(err, errlen, "%s", count < 0 ? "negative parameter count" : "out of memory");
    goto fail;
  }
  t->all_v = 1;
  for (int k = 0; k < count; k++) {
    if (refs[k].n == 0) continue; /* nothing to update: no record, so every record is searched to */
    if (!refs[k].w || !refs[k].g || !refs[k].m) {
      snprintf(err, errlen, "parameter %d: value, gradient and state must be device pointers", k);
      goto fail;
    }
    Record r = {refs[k].w, refs[k].g, refs[k].m, refs[k].v, refs[k].n, t->total, refs[k].weight_decay};
    host[t->count++] = r;
    t->all_v = t->all_v && refs[k].v;
    t->total += refs[k].n;
  }
  if (t->count) {
    e = cudaMalloc(&t->dev, (size_t)t->count * sizeof *host);
    if (e == cudaSuccess) e = cudaMemcpy(t->dev, host, (size_t)t->count * sizeof *host, cudaMemcpyHostToDevice);
  }
  if (e != cudaSuccess) {
    snprintf(err, errlen, "parameter records: %s", cudaGetErrorString(e));
    cudaGetLastError();
    goto fail;
  }
  free(host);
  return t;
fail:
  free(host);
  slG_params_free(t);
  return NULL;
}

/* the float32 constants of train.c's slM_optimizer_step */
static Hyper hyper_of(const slG_Optimizer *o) {
  Hyper h;
  h.lr = (float)o->lr, h.momentum = (float)o->momentum, h.eps = o->eps, h.adam = o->adamw != 0;
  h.b1 = (float)o->beta1, h.b2 = (float)o->beta2;
  h.nb1 = 1 - h.b1, h.nb2 = 1 - h.b2;
  h.ic1 = (float)(1.0 / (1 - pow(o->beta1, (double)o->step + 1)));
  h.rsc2 = (float)(1.0 / sqrt(1 - pow(o->beta2, (double)o->step + 1)));
  return h;
}

extern "C" int slG_optimizer_step(void *params, const slG_Optimizer *o, char *err, size_t errlen) {
  const Table *t = (const Table *)params;
  if (!t || !o) return refuse(err, errlen, "optimizer step: no parameters or no settings");
  if (t->total == 0) return 0;
  if (o->adamw && !t->all_v) return refuse(err, errlen, "AdamW: a parameter has no second moment v");
  optimizer_step<<<grid_for(t->total), THREADS>>>(t->dev, t->count, t->total, hyper_of(o));
  return launched(o->adamw ? "AdamW step" : "SGD step", err, errlen);
}

void slG_fill_ops_train(slG_Backend *b) {
  b->params_new = slG_params_new;
  b->params_free = slG_params_free;
  b->optimizer_step = slG_optimizer_step;
}
