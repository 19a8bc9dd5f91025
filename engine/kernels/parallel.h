/*
** parallel.h - a loop split over the machine's cores (parallel.c) by a
** persistent thread team, for the short passes between products:
** elementwise operations, norms, softmax, the optimizer update. The team
** has slK_threads() threads (kernels.h).
*/
#ifndef SYSLAB_PARALLEL_H
#define SYSLAB_PARALLEL_H

#include <stddef.h>

/* fn(ctx, begin, end) runs on disjoint ranges covering [0, n); with fewer
** than 2 * min_chunk items, or one core, it runs once on the calling thread.
** The ranges depend only on n, min_chunk and the thread count, so a loop
** whose items are independent gives the same numbers however it is split. */
typedef void (*slK_RangeFn)(void *ctx, size_t begin, size_t end);
void slK_parallel_for(size_t n, size_t min_chunk, slK_RangeFn fn, void *ctx);

#endif
