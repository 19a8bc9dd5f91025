/*
** device.c - the GPU for the layers above: its presence, a caching
** allocator of device memory counted by category, and the graph's
** operators on device arrays (cuda/gpu.h's, passed through).
**
** The allocator follows PyTorch's caching allocator in miniature: a freed
** block goes on a list of its size class instead of back to the driver, so
** a training loop that makes the same tensors every step calls cudaMalloc
** only in its first step (cudaMalloc and cudaFree synchronise the device
** and cost tens of microseconds each). Sizes are rounded up to a class (512
** bytes below 1 MiB, 2 MiB above) so that near sizes share blocks; the
** rounding is counted as the bytes handed out, which is what the device
** really holds. When the driver refuses, the cache goes back to it and the
** request is tried once more; a request that still does not fit is refused
** with the figures. Counters by category are what memory profiles read.
*/
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>

#include "cuda/gpu.h"
#include "device.h"
#include "round.h"

int slK_dev_available(void) { return slG_device_count() > 0; }
const char *slK_dev_why(void) { return slG_describe(); }

/* ---------------------------------------------------------------- memory */

typedef struct Block {
  void *dev;
  size_t bytes;   /* its class */
  struct Block *next;
} Block;

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static Block *cache;   /* freed blocks, newest first */
static size_t live[SLK_DEV_CATEGORIES], at_peak[SLK_DEV_CATEGORIES], peak, cached;

static size_t size_class(size_t bytes) {
  size_t unit = bytes < ((size_t)1 << 20) ? 512 : ((size_t)2 << 20);
  return (bytes + unit - 1) / unit * unit + (bytes == 0 ? unit : 0);
}

static int category_of(int category) { return category >= 0 && category < SLK_DEV_CATEGORIES ? category : 0; }

static size_t total_live(void) {
  size_t t = 0;
  for (int c = 0; c < SLK_DEV_CATEGORIES; c++) t += live[c];
  return t;
}

static void count(int category, size_t bytes, int sign) {
  live[category] = sign > 0 ? live[category] + bytes : live[category] - bytes;
  size_t t = total_live();
  if (t > peak) {
    peak = t;
    for (int c = 0; c < SLK_DEV_CATEGORIES; c++) at_peak[c] = live[c];
  }
}

/* a cached block of exactly this class, unlinked; NULL if none */
static void *from_cache(size_t bytes) {
  for (Block **b = &cache; *b; b = &(*b)->next)
    if ((*b)->bytes == bytes) {
      Block *hit = *b;
      void *dev = hit->dev;
      *b = hit->next;
      cached -= bytes;
      free(hit);
      return dev;
    }
  return NULL;
}

static void trim_locked(void) {
  while (cache) {
    Block *b = cache;
    cache = b->next;
    slG_free(b->dev);
    free(b);
  }
  cached = 0;
}

void *slK_dev_alloc(size_t bytes, int category, char *err, size_t errlen) {
  size_t cls = size_class(bytes);
  category = category_of(category);
  pthread_mutex_lock(&lock);
  void *dev = from_cache(cls);
  if (!dev) {
    char why[200];
    if (slG_alloc(&dev, cls, why, sizeof why) != 0 && cached) {
      trim_locked();   /* blocks of other classes go back to the driver, and once more */
      slG_alloc(&dev, cls, why, sizeof why);
    }
    if (!dev) {
      size_t free_b = 0, total_b = 0;
      slG_mem_info(&free_b, &total_b);
      pthread_mutex_unlock(&lock);
      snprintf(err, errlen, "%zu bytes of device memory could not be had (%zu free of %zu, %zu in use here): %s",
               cls, free_b, total_b, total_live(), why);
      return NULL;
    }
  }
  count(category, cls, 1);
  pthread_mutex_unlock(&lock);
  return dev;
}

void slK_dev_free(void *dev, size_t bytes, int category) {
  if (!dev) return;
  size_t cls = size_class(bytes);
  Block *b = malloc(sizeof *b);
  pthread_mutex_lock(&lock);
  count(category_of(category), cls, -1);
  if (!b) {
    slG_free(dev);
  } else {
    *b = (Block){dev, cls, cache};
    cache = b;
    cached += cls;
  }
  pthread_mutex_unlock(&lock);
}

void slK_dev_recount(size_t bytes, int from, int to) {
  size_t cls = size_class(bytes);
  pthread_mutex_lock(&lock);
  count(category_of(from), cls, -1);
  count(category_of(to), cls, 1);
  pthread_mutex_unlock(&lock);
}

void slK_dev_trim(void) {
  pthread_mutex_lock(&lock);
  trim_locked();
  pthread_mutex_unlock(&lock);
}

void slK_dev_memory(slK_DevMemory *m) {
  pthread_mutex_lock(&lock);
  for (int c = 0; c < SLK_DEV_CATEGORIES; c++) m->live[c] = live[c], m->at_peak[c] = at_peak[c];
  m->peak = peak;
  m->cached = cached;
  pthread_mutex_unlock(&lock);
  slG_mem_info(&m->free_bytes, &m->total_bytes);
}

void slK_dev_reset_peak(void) {
  pthread_mutex_lock(&lock);
  peak = total_live();
  for (int c = 0; c < SLK_DEV_CATEGORIES; c++) at_peak[c] = live[c];
  pthread_mutex_unlock(&lock);
}

int slK_dev_fits(size_t bytes, char *err, size_t errlen) {
  if (!slK_dev_available()) return snprintf(err, errlen, "%s", slK_dev_why()), -1;
  size_t free_b = 0, total_b = 0;
  slG_mem_info(&free_b, &total_b);
  pthread_mutex_lock(&lock);
  size_t room = free_b + cached;
  pthread_mutex_unlock(&lock);
  if (bytes <= room) return 0;
  return snprintf(err, errlen, "needs %.3f GiB of device memory, and %.3f GiB can be had (%.3f GiB free of %.3f GiB, "
                  "with this program's cache)", bytes / 1073741824.0, room / 1073741824.0, free_b / 1073741824.0,
                  total_b / 1073741824.0), -1;
}

int slK_dev_upload(void *dev, const void *host, size_t bytes, char *err, size_t errlen) {
  return slG_upload(dev, host, bytes, err, errlen);
}
int slK_dev_download(void *host, const void *dev, size_t bytes, char *err, size_t errlen) {
  return slG_download(host, dev, bytes, err, errlen);
}
int slK_dev_copy(void *dst, const void *src, size_t bytes, char *err, size_t errlen) {
  return slG_copy(dst, src, bytes, err, errlen);
}
int slK_dev_zero(void *dev, size_t bytes, char *err, size_t errlen) { return slG_zero(dev, bytes, err, errlen); }
int slK_dev_sync(char *err, size_t errlen) { return slG_sync(err, errlen); }

/* ------------------------------------------------------------- operators */

int slK_dev_gemm_batched(int format, int trans_a, int trans_b, int M, int N, int K, float alpha, const void *A, int lda,
                         long long stride_a, const void *B, int ldb, long long stride_b, float beta, float *C, int ldc,
                         long long stride_c, int batch, char *err, size_t errlen) {
  return slG_gemm_batched(format, trans_a, trans_b, M, N, K, alpha, A, lda, stride_a, B, ldb, stride_b, beta, C, ldc,
                          stride_c, batch, err, errlen);
}
int slK_dev_attention_forward(int format, int B, int T, int H, int dh, int causal, const float *q, const float *k,
                              const float *v, float *out, float *lse, int category, char *err, size_t errlen) {
  size_t bytes = slG_attention_graph_scratch(format, B, T, H, dh, 0);
  void *scratch = slK_dev_alloc(bytes ? bytes : 1, category, err, errlen);
  if (!scratch) return -1;
  int rc = slG_attention_graph_forward(format, B, T, H, dh, causal, q, k, v, out, lse, scratch, err, errlen);
  slK_dev_free(scratch, bytes ? bytes : 1, category);
  return rc;
}
int slK_dev_attention_backward(int format, int B, int T, int H, int dh, int causal, const float *q, const float *k,
                               const float *v, const float *out, const float *gout, const float *lse, float *dq,
                               float *dk, float *dv, int category, char *err, size_t errlen) {
  size_t bytes = slG_attention_graph_scratch(format, B, T, H, dh, 1);
  void *scratch = slK_dev_alloc(bytes ? bytes : 1, category, err, errlen);
  if (!scratch) return -1;
  int rc = slG_attention_graph_backward(format, B, T, H, dh, causal, q, k, v, out, gout, lse, dq, dk, dv, scratch, err,
                                        errlen);
  slK_dev_free(scratch, bytes ? bytes : 1, category);
  return rc;
}
int slK_dev_to_half(int format, const float *x, uint16_t *y, size_t n, char *err, size_t errlen) {
  return slG_to_half(format, x, y, n, err, errlen);
}
int slK_dev_round(int format, const float *x, float *y, size_t n, char *err, size_t errlen) {
  return slG_round_half(format, x, y, n, err, errlen);
}
int slK_dev_linear_forward(int format, const void *x, const void *w, const float *b, float *y, size_t rows, int in_f,
                           int out_f, char *err, size_t errlen) {
  return slG_linear_forward(format, x, w, b, y, rows, in_f, out_f, err, errlen);
}
int slK_dev_linear_backward(int format, const void *x, const void *w, const void *dy, const float *dy32, float *dx,
                            float *dw, float *db, size_t rows, int in_f, int out_f, char *err, size_t errlen) {
  return slG_linear_backward(format, x, w, dy, dy32, dx, dw, db, rows, in_f, out_f, err, errlen);
}

/* this header's activation numbers are cuda/gpu.h's, named for the layers above */
_Static_assert((int)SLK_DEV_RELU == (int)SLG_RELU && (int)SLK_DEV_GELU == (int)SLG_GELU &&
                   (int)SLK_DEV_SILU == (int)SLG_SILU, "activations");
_Static_assert((int)SLK_BF16 == (int)SLG_BF16 && (int)SLK_FP16 == (int)SLG_FP16 && SLK_FP32 == 0, "formats");
_Static_assert((int)SLK_DEV_LOSS_CLASSES == (int)SLG_LOSS_CLASSES && (int)SLK_DEV_LOSS_TOKENS == (int)SLG_LOSS_TOKENS,
               "losses");

int slK_dev_activation_forward(int act, const float *x, float *y, size_t n, char *err, size_t errlen) {
  return slG_activation_forward(act, x, y, n, err, errlen);
}
int slK_dev_activation_backward(int act, const float *x, const float *dy, float *dx, size_t n, char *err,
                                size_t errlen) {
  return slG_activation_backward(act, x, dy, dx, n, err, errlen);
}
int slK_dev_tanh_forward(const float *x, float *y, size_t n, char *err, size_t errlen) {
  return slG_tanh_forward(x, y, n, err, errlen);
}
int slK_dev_tanh_backward(const float *y, const float *dy, float *dx, size_t n, char *err, size_t errlen) {
  return slG_tanh_backward(y, dy, dx, n, err, errlen);
}
int slK_dev_scale_forward(const float *x, float *y, size_t n, float a, char *err, size_t errlen) {
  return slG_scale_forward(x, y, n, a, err, errlen);
}
int slK_dev_scale_backward(const float *dy, float *dx, size_t n, float a, char *err, size_t errlen) {
  return slG_scale_backward(dy, dx, n, a, err, errlen);
}
int slK_dev_swiglu_forward(const float *a, const float *b, float *y, size_t n, char *err, size_t errlen) {
  return slG_swiglu_forward(a, b, y, n, err, errlen);
}
int slK_dev_swiglu_backward(const float *a, const float *b, const float *dy, float *da, float *db, size_t n,
                            char *err, size_t errlen) {
  return slG_swiglu_backward(a, b, dy, da, db, n, err, errlen);
}
int slK_dev_add_forward(const float *a, const float *b, float *y, size_t n, size_t bn, char *err, size_t errlen) {
  return slG_add_forward(a, b, y, n, bn, err, errlen);
}
int slK_dev_add_backward(const float *dy, float *da, float *db, size_t n, size_t bn, char *err, size_t errlen) {
  return slG_add_backward(dy, da, db, n, bn, err, errlen);
}
int slK_dev_dropout_forward(const float *x, float *y, float *mask, size_t n, float p, uint64_t base, char *err,
                            size_t errlen) {
  return slG_dropout_forward(x, y, mask, n, p, base, err, errlen);
}
int slK_dev_dropout_backward(const float *dy, const float *mask, float *dx, size_t n, char *err, size_t errlen) {
  return slG_dropout_backward(dy, mask, dx, n, err, errlen);
}
int slK_dev_embedding_forward(const float *ids, const float *table, float *y, size_t n, int vocab, int width,
                              char *err, size_t errlen) {
  return slG_embedding_forward(ids, table, y, n, vocab, width, err, errlen);
}
int slK_dev_embedding_backward(const float *ids, const float *dy, float *dtable, size_t n, int vocab, int width,
                               char *err, size_t errlen) {
  return slG_embedding_backward(ids, dy, dtable, n, vocab, width, err, errlen);
}
int slK_dev_rope_table(float *table, int T, int dh, float theta, char *err, size_t errlen) {
  return slG_rope_table(table, T, dh, theta, err, errlen);
}
int slK_dev_rope_forward(const float *x, float *y, const float *table, size_t B, int T, int D, int heads, char *err,
                         size_t errlen) {
  return slG_rope_forward(x, y, table, B, T, D, heads, err, errlen);
}
int slK_dev_rope_backward(const float *dy, float *dx, const float *table, size_t B, int T, int D, int heads,
                          char *err, size_t errlen) {
  return slG_rope_backward(dy, dx, table, B, T, D, heads, err, errlen);
}
int slK_dev_norm_forward(const float *x, const float *gain, const float *shift, float *y, float *mean, float *rstd,
                         size_t rows, int d, float eps, char *err, size_t errlen) {
  if (shift) return slG_layernorm_forward(x, gain, shift, y, mean, rstd, rows, d, eps, err, errlen);
  return slG_rmsnorm_forward(x, gain, y, rstd, rows, d, eps, err, errlen);
}
int slK_dev_norm_backward(const float *x, const float *gain, const float *dy, const float *mean, const float *rstd,
                          float *dx, float *dgain, float *dshift, size_t rows, int d, char *err, size_t errlen) {
  if (mean) return slG_layernorm_backward(x, gain, dy, mean, rstd, dx, dgain, dshift, rows, d, err, errlen);
  return slG_rmsnorm_backward(x, gain, dy, rstd, dx, dgain, rows, d, err, errlen);
}
int slK_dev_softmax_forward(const float *x, float *y, size_t rows, int n, int causal, char *err, size_t errlen) {
  return slG_softmax_forward(x, y, rows, n, causal, err, errlen);
}
int slK_dev_softmax_backward(const float *y, const float *dy, float *dx, size_t rows, int n, int causal, char *err,
                             size_t errlen) {
  return slG_softmax_backward(y, dy, dx, rows, n, causal, err, errlen);
}
int slK_dev_cross_entropy_forward(int kind, const float *logits, const float *labels, float *probs, float *loss,
                                  size_t rows, int C, char *err, size_t errlen) {
  return slG_cross_entropy_forward(kind, logits, labels, probs, loss, rows, C, err, errlen);
}
int slK_dev_cross_entropy_backward(int kind, const float *probs, const float *labels, const float *dloss, float *dx,
                                   size_t rows, int C, char *err, size_t errlen) {
  return slG_cross_entropy_backward(kind, probs, labels, dloss, dx, rows, C, err, errlen);
}

/* The records go to the device once per set of parameters (slG_params_new)
** and are kept while the same parameters step again, so that a step is one
** launch: no allocation outside the caching allocator (cudaMalloc and
** cudaFree wait for the device) and no copy. A different set (another
** model, or the same after `to`) replaces them. */
static struct {
  slG_ParamRef *refs;
  int count;
  void *table;
} records;

static int same_records(const slG_ParamRef *refs, int count) {
  if (!records.table || count != records.count) return 0;
  for (int i = 0; i < count; i++) {
    const slG_ParamRef *a = &refs[i], *b = &records.refs[i];
    if (a->w != b->w || a->g != b->g || a->m != b->m || a->v != b->v || a->n != b->n ||
        a->weight_decay != b->weight_decay)
      return 0;
  }
  return 1;
}

int slK_dev_optimizer_step(const slK_DevParam *params, int count, const slK_DevOptimizer *o, char *err,
                           size_t errlen) {
  if (count <= 0) return 0;
  slG_ParamRef *refs = malloc((size_t)count * sizeof *refs);
  if (!refs) return snprintf(err, errlen, "out of host memory for %d parameter records", count), -1;
  for (int i = 0; i < count; i++)
    refs[i] = (slG_ParamRef){params[i].w, params[i].g, params[i].m, params[i].v, params[i].n, params[i].weight_decay};
  if (same_records(refs, count)) {
    free(refs);
  } else {
    slG_params_free(records.table);
    free(records.refs);
    records.refs = refs, records.count = count;
    if (!(records.table = slG_params_new(refs, count, err, errlen))) return -1;
  }
  slG_Optimizer opt = {o->adamw, o->lr, o->momentum, o->beta1, o->beta2, o->eps, o->step};
  return slG_optimizer_step(records.table, &opt, err, errlen);
}
