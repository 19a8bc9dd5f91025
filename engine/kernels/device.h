/*
** device.h - the GPU as the layers above see it (device.c): the table of
** cuda/'s entry points (cuda/gpu.h), loaded from the CUDA module the first
** time a GPU is asked for; whether a device is here and why not; a caching
** allocator of device memory with the bytes counted by category; and the
** two calls that keep something of their own, the fused attention (its
** scratch from the allocator) and the optimiser's step (its records kept
** on the device between steps).
**
** Everything else is the table's: callers write slK_gpu()->upload(...),
** slK_gpu()->softmax_forward(...), on device memory from slK_dev_alloc,
** and cuda/gpu.h says each entry's contract (a backward ADDS into the
** gradients it is given; 0, or -1 with the reason in err). slK_gpu() is
** NULL where there is no module (a build without nvcc, a module that
** cannot be loaded) and slK_dev_why() then says why; device memory is only
** had once slK_dev_available() answered 1, so code that holds a device
** pointer calls through slK_gpu() without testing it.
*/
#ifndef SYSLAB_DEVICE_H
#define SYSLAB_DEVICE_H

#include <stddef.h>
#include <stdint.h>

#include "cuda/gpu.h"

/* The module (syslab_cuda.so) is found at $SYSLAB_CUDA_MODULE, next to an
** installed program (<prefix>/lib/syslab/, from <prefix>/bin/syslab), and
** in the build tree, and loaded at the first call; the table, or NULL when
** there is none (slK_dev_why() says why) */
const slG_Backend *slK_gpu(void);
/* usable CUDA devices: 0 without a module, a driver or a device */
int slK_dev_count(void);
/* 1 when a CUDA device can be used; else 0 */
int slK_dev_available(void);
/* one line: the device, or why there is none ("no GPU: ..."): no module
** built, the reason dlopen gives, or the driver's */
const char *slK_dev_why(void);

/* ---------------------------------------------------------------- memory */

/* the categories a caller counts its bytes under (the graph's: parameter,
** gradient, optimiser state, activation, temporary) */
#define SLK_DEV_CATEGORIES 8

/* bytes of device memory for a category; NULL with err when it cannot be
** had even after the cache is returned to the driver */
void *slK_dev_alloc(size_t bytes, int category, char *err, size_t errlen);
/* back to the cache, under the size and category it was allocated with */
void slK_dev_free(void *dev, size_t bytes, int category);
/* bytes allocated under one category counted under another from now on */
void slK_dev_recount(size_t bytes, int from, int to);

typedef struct slK_DevMemory {
  size_t live[SLK_DEV_CATEGORIES];    /* handed out now, by category */
  size_t at_peak[SLK_DEV_CATEGORIES]; /* by category when the total was highest */
  size_t peak;                        /* the highest total since the last reset */
  size_t cached;                      /* held for reuse, not handed out */
  size_t free_bytes, total_bytes;     /* the driver's figures (0 without a GPU) */
} slK_DevMemory;
void slK_dev_memory(slK_DevMemory *m);
void slK_dev_reset_peak(void);
/* 0 when bytes more can be allocated now (the driver's free memory and
** this allocator's cache); else -1 with both figures in err */
int slK_dev_fits(size_t bytes, char *err, size_t errlen);

/* ------------------------------------------------- calls with state of their own */

/* the graph's fused attention node (the table's attention_graph_*), its scratch device memory counted under
** `category` while the call runs */
int slK_dev_attention_forward(int format, int B, int T, int H, int dh, int causal, const float *q, const float *k,
                              const float *v, float *out, float *lse, int category, char *err, size_t errlen);
int slK_dev_attention_backward(int format, int B, int T, int H, int dh, int causal, const float *q, const float *k,
                               const float *v, const float *out, const float *gout, const float *lse, float *dq,
                               float *dk, float *dv, int category, char *err, size_t errlen);

/* the optimisers over every parameter in one launch (the table's optimizer_step), the parameters' records
** copied to the device once and kept while the same parameters step again */
int slK_dev_optimizer_step(const slG_ParamRef *params, int count, const slG_Optimizer *o, char *err, size_t errlen);

#endif
