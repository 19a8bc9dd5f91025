/*
** parallel.h - a loop split over the machine's cores by the engine's one
** thread team (parallel.c), for the short passes between products:
** elementwise operations, norms, softmax, the optimizer update. The team
** has slK_threads() threads (kernels.h), which also run the kernels' own
** numbered jobs (slK_parallel, kernels.h).
*/
#ifndef SYSLAB_PARALLEL_H
#define SYSLAB_PARALLEL_H

#include <stddef.h>

/* fn(ctx, begin, end) runs on disjoint ranges covering [0, n); with fewer
** than 2 * min_chunk items, or one core, it runs once on the calling thread.
** The ranges depend only on n, min_chunk and the thread count, so a loop
** whose items are independent gives the same numbers however it is split.
** Called from inside a job of the team (or while another thread's job
** runs), the ranges run one after another on the calling thread. */
typedef void (*slK_RangeFn)(void *ctx, size_t begin, size_t end);
void slK_parallel_for(size_t n, size_t min_chunk, slK_RangeFn fn, void *ctx);

#endif
