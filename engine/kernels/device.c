/*
** device.c - the GPU for the layers above: the CUDA module loaded and its
** table checked, the device's presence, a caching allocator of device
** memory counted by category, and the two calls that keep state of their
** own (the fused attention's scratch, the optimiser's records).
**
** The module is found, in order, at $SYSLAB_CUDA_MODULE, next to an
** installed program (<prefix>/lib/syslab/syslab_cuda.so, from
** <prefix>/bin/syslab), and in the build tree (lang/layout.c), as the MPI
** module is (search/dist.c). It is opened once, by the first question
** about the GPU; a module that cannot be opened, lacks slG_backend, is of
** another version or leaves an entry empty is refused, and the reason is
** what every later question gets (slK_dev_why).
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
#include <dlfcn.h>
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "device.h"
#include "round.h"
#include "slutil.h"

/* ---------------------------------------------------------- the module */

/* the engine's format numbers are the table's */
_Static_assert((int)SLK_BF16 == (int)SLG_BF16 && (int)SLK_FP16 == (int)SLG_FP16 && SLK_FP32 == 0, "formats");
/* after its version, the table is entry points only: each is checked to be filled */
typedef void (*Entry)(void);
_Static_assert((sizeof(slG_Backend) - offsetof(slG_Backend, device_count)) % sizeof(Entry) == 0, "entries");

#ifdef SYSLAB_CUDA_MODULE
#define BUILD_TREE_MODULE SYSLAB_CUDA_MODULE
#else
#define BUILD_TREE_MODULE NULL
#endif

static const slG_Backend *gpu;
static char gpu_why[PATH_MAX + 512];
static pthread_once_t gpu_once = PTHREAD_ONCE_INIT;

/* the first entry left empty (NULL bytes), or -1 */
static int empty_entry(const slG_Backend *t) {
  static const unsigned char none[sizeof(Entry)];
  const unsigned char *at = (const unsigned char *)t + offsetof(slG_Backend, device_count);
  size_t n = (sizeof *t - offsetof(slG_Backend, device_count)) / sizeof(Entry);
  for (size_t i = 0; i < n; i++)
    if (memcmp(at + i * sizeof(Entry), none, sizeof(Entry)) == 0) return (int)i;
  return -1;
}

static void load(void) {
  char path[PATH_MAX + 64];
  const char *env = getenv("SYSLAB_CUDA_MODULE");
  if (env && *env) {
    snprintf(path, sizeof path, "%s", env);
  } else {
#ifdef SYSLAB_HAVE_CUDA
    sl_program_file("lib/syslab/syslab_cuda.so", BUILD_TREE_MODULE, path, sizeof path);
#else
    snprintf(gpu_why, sizeof gpu_why, "no GPU: this syslab was built without CUDA");
    return;
#endif
  }
  void *h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
  const slG_Backend *(*get)(void) = h ? (const slG_Backend *(*)(void))dlsym(h, "slG_backend") : NULL;
  const slG_Backend *t = get ? get() : NULL;
  int empty = t && t->version == SLG_BACKEND_VERSION ? empty_entry(t) : -1;
  if (!get)
    snprintf(gpu_why, sizeof gpu_why,
             "no GPU: the CUDA module %s cannot be loaded: %s (a build with nvcc makes it; "
             "SYSLAB_CUDA_MODULE names another)",
             path, dlerror());
  else if (!t || t->version != SLG_BACKEND_VERSION)
    snprintf(gpu_why, sizeof gpu_why, "no GPU: the CUDA module %s is version %d, this program needs %d", path,
             t ? t->version : -1, SLG_BACKEND_VERSION);
  else if (empty >= 0)
    snprintf(gpu_why, sizeof gpu_why, "no GPU: the CUDA module %s leaves entry %d of its table empty", path, empty);
  else gpu = t;
}

const slG_Backend *slK_gpu(void) {
  pthread_once(&gpu_once, load);
  return gpu;
}

int slK_dev_count(void) { return slK_gpu() ? gpu->device_count() : 0; }
int slK_dev_available(void) { return slK_dev_count() > 0; }
const char *slK_dev_why(void) { return slK_gpu() ? gpu->describe() : gpu_why; }

/* ---------------------------------------------------------------- memory */

typedef struct Block {
  void *dev;
  size_t bytes; /* its class */
  struct Block *next;
} Block;

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static Block *cache; /* freed blocks, newest first */
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

/* the driver's calls, answered as a device that has no memory where there is no module */
static int driver_alloc(void **dev, size_t bytes, char *why, size_t size) {
  *dev = NULL;
  if (!slK_gpu()) return snprintf(why, size, "%s", gpu_why), -1;
  return gpu->alloc(dev, bytes, why, size);
}

static void driver_mem_info(size_t *free_bytes, size_t *total_bytes) {
  *free_bytes = *total_bytes = 0;
  if (slK_gpu()) gpu->mem_info(free_bytes, total_bytes);
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
    gpu->free(b->dev); /* a cached block came from the table */
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
    char why[sizeof gpu_why]; /* the driver's reason, or why there is no module */
    if (driver_alloc(&dev, cls, why, sizeof why) != 0 && cached) {
      trim_locked(); /* blocks of other classes go back to the driver, and once more */
      driver_alloc(&dev, cls, why, sizeof why);
    }
    if (!dev) {
      size_t free_b, total_b;
      driver_mem_info(&free_b, &total_b);
      pthread_mutex_unlock(&lock);
      snprintf(err, errlen, "%zu bytes of device memory could not be had (%zu free of %zu, %zu in use here): %s", cls,
               free_b, total_b, total_live(), why);
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
    gpu->free(dev); /* device memory came from the table */
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

void slK_dev_memory(slK_DevMemory *m) {
  pthread_mutex_lock(&lock);
  for (int c = 0; c < SLK_DEV_CATEGORIES; c++) m->live[c] = live[c], m->at_peak[c] = at_peak[c];
  m->peak = peak;
  m->cached = cached;
  pthread_mutex_unlock(&lock);
  driver_mem_info(&m->free_bytes, &m->total_bytes);
}

void slK_dev_reset_peak(void) {
  pthread_mutex_lock(&lock);
  peak = total_live();
  for (int c = 0; c < SLK_DEV_CATEGORIES; c++) at_peak[c] = live[c];
  pthread_mutex_unlock(&lock);
}

int slK_dev_fits(size_t bytes, char *err, size_t errlen) {
  if (!slK_dev_available()) return snprintf(err, errlen, "%s", slK_dev_why()), -1;
  size_t free_b, total_b;
  driver_mem_info(&free_b, &total_b);
  pthread_mutex_lock(&lock);
  size_t room = free_b + cached;
  pthread_mutex_unlock(&lock);
  if (bytes <= room) return 0;
  return snprintf(err, errlen,
                  "needs %.3f GiB of device memory, and %.3f GiB can be had (%.3f GiB free of %.3f GiB, "
                  "with this program's cache)",
                  bytes / 1073741824.0, room / 1073741824.0, free_b / 1073741824.0, total_b / 1073741824.0),
         -1;
}

/* ------------------------------------------------- calls with state of their own */

static int no_module(char *err, size_t errlen) { return snprintf(err, errlen, "%s", slK_dev_why()), -1; }

/* the scratch of the fused attention from the caching allocator, for the call alone */
int slK_dev_attention_forward(int format, int B, int T, int H, int dh, int causal, const float *q, const float *k,
                              const float *v, float *out, float *lse, int category, char *err, size_t errlen) {
  if (!slK_gpu()) return no_module(err, errlen);
  size_t bytes = gpu->attention_graph_scratch(format, B, T, H, dh, 0);
  void *scratch = slK_dev_alloc(bytes ? bytes : 1, category, err, errlen);
  if (!scratch) return -1;
  int rc = gpu->attention_graph_forward(format, B, T, H, dh, causal, q, k, v, out, lse, scratch, err, errlen);
  slK_dev_free(scratch, bytes ? bytes : 1, category);
  return rc;
}

int slK_dev_attention_backward(int format, int B, int T, int H, int dh, int causal, const float *q, const float *k,
                               const float *v, const float *out, const float *gout, const float *lse, float *dq,
                               float *dk, float *dv, int category, char *err, size_t errlen) {
  if (!slK_gpu()) return no_module(err, errlen);
  size_t bytes = gpu->attention_graph_scratch(format, B, T, H, dh, 1);
  void *scratch = slK_dev_alloc(bytes ? bytes : 1, category, err, errlen);
  if (!scratch) return -1;
  int rc = gpu->attention_graph_backward(format, B, T, H, dh, causal, q, k, v, out, gout, lse, dq, dk, dv, scratch, err,
                                         errlen);
  slK_dev_free(scratch, bytes ? bytes : 1, category);
  return rc;
}

/* The records go to the device once per set of parameters (params_new)
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

int slK_dev_optimizer_step(const slG_ParamRef *params, int count, const slG_Optimizer *o, char *err, size_t errlen) {
  if (count <= 0) return 0;
  if (!slK_gpu()) return no_module(err, errlen);
  slG_ParamRef *refs = malloc((size_t)count * sizeof *refs);
  if (!refs) return snprintf(err, errlen, "out of host memory for %d parameter records", count), -1;
  memcpy(refs, params, (size_t)count * sizeof *refs);
  if (same_records(refs, count)) {
    free(refs);
  } else {
    gpu->params_free(records.table);
    free(records.refs);
    records.refs = refs, records.count = count;
    if (!(records.table = gpu->params_new(refs, count, err, errlen))) return -1;
  }
  return gpu->optimizer_step(records.table, o, err, errlen);
}
