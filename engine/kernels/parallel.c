/*
** parallel.c - a small persistent thread team for loops between products.
**
** OpenBLAS already runs the products on every core; the passes between
** them (activations, norms, softmax, dropout, the optimizer) ran on one.
** The kernels' own slK_parallel starts threads per call, right for
** products that run for milliseconds; these loops run for tens of
** microseconds, so the team is kept. A loop is cut into chunks; the caller and (threads - 1) workers claim
** chunks from a shared counter until none is left. Claiming, rather than
** handing each thread a fixed part, matters on a shared machine: a worker
** that the scheduler has not run yet simply gets no chunk, and the caller
** does the work itself instead of waiting a time slice for it.
**
** The counter holds the job's generation in its high half, so a worker that
** wakes late can never claim a chunk of a newer job by mistake: a claim is
** a compare-and-swap on (generation, next chunk). Workers spin briefly
** before sleeping, because a training step starts a loop every few tens of
** microseconds; the spin is short so that OpenBLAS's own threads get the
** cores back for the next product. One job at a time: a loop started while
** another runs (from a job, or another thread) runs on its caller alone.
*/
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>

#include "kernels.h"
#include "parallel.h"

#define MAX_THREADS 8
#define SPIN_ROUNDS 200   /* about 10 us: PAUSE takes about 140 cycles on this CPU */

#if defined(__x86_64__) || defined(__i386__)
#define PAUSE() __builtin_ia32_pause()
#else
#define PAUSE() ((void)0)
#endif

static pthread_once_t once = PTHREAD_ONCE_INIT;
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t wake = PTHREAD_COND_INITIALIZER;
static int nthreads = 1;
static _Atomic uint64_t state;      /* generation << 32 | next chunk */
static atomic_uint done_chunks;
static atomic_int busy, sleepers;   /* workers asleep on the condition variable */

static struct {
  slK_RangeFn fn;
  void *ctx;
  size_t n, chunk;
  unsigned nchunks;
} job;

/* claims and runs chunks of generation gen until none is left */
static void work(uint32_t gen) {
  for (;;) {
    uint64_t s = atomic_load_explicit(&state, memory_order_acquire);
    if ((uint32_t)(s >> 32) != gen || (uint32_t)s >= job.nchunks) return;
    if (!atomic_compare_exchange_weak_explicit(&state, &s, s + 1, memory_order_acq_rel, memory_order_relaxed)) continue;
    size_t begin = (size_t)(uint32_t)s * job.chunk, end = begin + job.chunk;
    if (end > job.n) end = job.n;
    job.fn(job.ctx, begin, end);
    atomic_fetch_add_explicit(&done_chunks, 1, memory_order_acq_rel);
  }
}

static void *worker(void *arg) {
  (void)arg;
  uint32_t seen = 0;
  for (;;) {
    int spins = 0;
    while ((uint32_t)(atomic_load_explicit(&state, memory_order_acquire) >> 32) == seen && spins < SPIN_ROUNDS) {
      PAUSE();
      spins++;
    }
    if ((uint32_t)(atomic_load(&state) >> 32) == seen) {
      pthread_mutex_lock(&lock);
      atomic_fetch_add(&sleepers, 1);
      while ((uint32_t)(atomic_load(&state) >> 32) == seen) pthread_cond_wait(&wake, &lock);
      atomic_fetch_sub(&sleepers, 1);
      pthread_mutex_unlock(&lock);
    }
    seen = (uint32_t)(atomic_load(&state) >> 32);
    work(seen);
  }
  return NULL;
}

static void start(void) {
  nthreads = slK_threads();   /* the cores, or SYSLAB_THREADS (threads.c) */
  if (nthreads > MAX_THREADS) nthreads = MAX_THREADS;
  if (nthreads < 1) nthreads = 1;
  for (int i = 1; i < nthreads; i++) {
    pthread_t t;
    pthread_attr_t attr;
    pthread_attr_init(&attr);
    pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
    if (pthread_create(&t, &attr, worker, NULL) != 0) nthreads = i;
    pthread_attr_destroy(&attr);
  }
}

void slK_parallel_for(size_t n, size_t min_chunk, slK_RangeFn fn, void *ctx) {
  pthread_once(&once, start);
  int t = nthreads, expected = 0;
  if (min_chunk < 1) min_chunk = 1;
  if (t < 2 || n < 2 * min_chunk || !atomic_compare_exchange_strong(&busy, &expected, 1)) {
    if (n) fn(ctx, 0, n);
    return;
  }
  /* four chunks a thread, none below min_chunk: late workers leave less to wait for */
  size_t chunk = n / ((size_t)t * 4);
  if (chunk < min_chunk) chunk = min_chunk;
  /* Close the claims before the job changes: a worker still holding the
  ** previous generation's exhausted state must not read the new job's
  ** chunk count and claim a chunk under the old generation (it would run
  ** the new job with a half-written ctx, and count a chunk twice so that
  ** this call could return while a chunk still runs). A closed state has
  ** its own generation and a chunk index no job reaches. */
  uint32_t gen = (uint32_t)(atomic_load(&state) >> 32) + 2;
  atomic_store_explicit(&state, (uint64_t)(gen - 1) << 32 | 0xFFFFFFFFu, memory_order_seq_cst);
  job.fn = fn, job.ctx = ctx, job.n = n, job.chunk = chunk;
  job.nchunks = (unsigned)((n + chunk - 1) / chunk);
  atomic_store_explicit(&done_chunks, 0, memory_order_relaxed);
  atomic_store_explicit(&state, (uint64_t)gen << 32, memory_order_seq_cst);
  /* a spinning worker sees the new generation by itself; only sleepers need
  ** the system call. A worker counts itself a sleeper under the lock before
  ** it checks the generation again, so none is missed. */
  if (atomic_load_explicit(&sleepers, memory_order_seq_cst) > 0) {
    pthread_mutex_lock(&lock);
    pthread_cond_broadcast(&wake);
    pthread_mutex_unlock(&lock);
  }
  work(gen);
  while (atomic_load_explicit(&done_chunks, memory_order_acquire) < job.nchunks) PAUSE();
  atomic_store(&busy, 0);
}
