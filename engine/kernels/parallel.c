/*
** parallel.c - the one thread team of the engine: every threaded kernel
** (GEMM, attention, the machine's triad) and every loop between products
** (activations, norms, softmax, the optimizer) runs on it.
**
** Why a persistent team. Products run for milliseconds, the loops between
** them for tens of microseconds, and a training step starts one every few
** tens of microseconds; starting threads per call (tens of microseconds
** each, more on a loaded machine) would cost as much as the loops. So the
** team's threads are started once, on the first call, and wait between
** jobs: they spin briefly (a step's next loop usually follows within
** microseconds), then sleep on a condition variable. Products run on the
** team too (gemm.c cuts them into pieces for OpenBLAS on one thread), so
** no other thread of the engine competes for the cores, and nothing here
** waits by sched_yield: on a machine with any other runnable process (a
** browser beside the notebook) every yield gave a core away for a whole
** time slice, and the engine's training ran up to 7x slower.
**
** A job is njobs numbered pieces of work. The caller and the team claim
** pieces from a shared counter until none is left; claiming, rather than
** handing each thread a fixed part, matters on a shared machine: a worker
** the scheduler has not run yet simply gets no piece, and the caller does
** the work itself instead of waiting a time slice for it. Results stay
** deterministic because the pieces are fixed by the caller (never by who
** runs them) and a piece writes only its own outputs; the worker number a
** piece is given only says which scratch buffer it may use (the caller is
** worker 0, team thread i is worker i, so no two running pieces share one).
**
** The counter holds the job's generation in its high half, so a worker
** that wakes late can never claim a piece of a newer job by mistake: a
** claim is a compare-and-swap on (generation, next piece). One job at a
** time: a job started while another runs (from inside a piece, or from
** another thread) runs on its caller alone, as worker 0 of that job.
**
** slK_parallel_for (parallel.h) is the range form: it cuts [0, n) into
** chunks that depend only on n, min_chunk and the team size, and runs them
** as the pieces of one job.
*/
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <unistd.h>

#include "kernels.h"
#include "parallel.h"

#define MAX_THREADS 64
#define SPIN_ROUNDS 2000 /* about 100 us: PAUSE takes about 140 cycles on this CPU */
#define CLOSED 0xFFFFFFFFu

#if defined(__x86_64__) || defined(__i386__)
#define PAUSE() __builtin_ia32_pause()
#else
#define PAUSE() ((void)0)
#endif

int slK_threads(void) {
  static int n = 0;
  if (n == 0) {
    const char *env = getenv("SYSLAB_THREADS");
    long cores = sysconf(_SC_NPROCESSORS_ONLN);
    int t = env && atoi(env) > 0 ? atoi(env) : cores > 0 ? (int)cores : 1;
    n = t > MAX_THREADS ? MAX_THREADS : t;
  }
  return n;
}

static pthread_once_t once = PTHREAD_ONCE_INIT;
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t wake = PTHREAD_COND_INITIALIZER;
static pthread_cond_t finished = PTHREAD_COND_INITIALIZER; /* the caller's, for the last piece */
static atomic_int caller_waits;
static int nthreads = 1;       /* the caller and the team's threads */
static _Atomic uint64_t state; /* generation << 32 | next piece */
static atomic_uint done_pieces;
static atomic_int busy, sleepers; /* sleepers: workers asleep on the condition variable */

/* The job. A worker reads njobs and workers before its claim, possibly
** while the next job is being written (its claim then fails), so those two
** are atomics; fn and ctx are read only after a successful claim. */
static struct {
  slK_JobFn fn;
  void *ctx;
  atomic_uint njobs;
  atomic_int workers; /* workers numbered below this take part */
} job;

/* claims and runs pieces of generation gen until none is left */
static void work(uint32_t gen, int worker) {
  if (worker >= atomic_load_explicit(&job.workers, memory_order_relaxed)) return;
  for (;;) {
    uint64_t s = atomic_load_explicit(&state, memory_order_acquire);
    if ((uint32_t)(s >> 32) != gen || (uint32_t)s >= atomic_load_explicit(&job.njobs, memory_order_relaxed)) return;
    if (!atomic_compare_exchange_weak_explicit(&state, &s, s + 1, memory_order_acq_rel, memory_order_relaxed)) continue;
    job.fn(job.ctx, (int)(uint32_t)s, worker);
    unsigned done = atomic_fetch_add_explicit(&done_pieces, 1, memory_order_seq_cst) + 1;
    /* the caller counts itself waiting before it checks the count again
    ** under the lock, so the last piece either sees it or is seen by it */
    if (done == atomic_load_explicit(&job.njobs, memory_order_relaxed) &&
        atomic_load_explicit(&caller_waits, memory_order_seq_cst)) {
      pthread_mutex_lock(&lock);
      pthread_cond_signal(&finished);
      pthread_mutex_unlock(&lock);
    }
  }
}

static uint32_t generation(void) { return (uint32_t)(atomic_load_explicit(&state, memory_order_acquire) >> 32); }

static void *team_thread(void *arg) {
  int worker = (int)(intptr_t)arg;
  uint32_t seen = 0;
  for (;;) {
    for (int spins = 0; generation() == seen && spins < SPIN_ROUNDS; spins++) PAUSE();
    if (generation() == seen) {
      pthread_mutex_lock(&lock);
      atomic_fetch_add(&sleepers, 1);
      while (generation() == seen) pthread_cond_wait(&wake, &lock);
      atomic_fetch_sub(&sleepers, 1);
      pthread_mutex_unlock(&lock);
    }
    seen = generation();
    work(seen, worker);
  }
  return NULL;
}

static void start(void) {
  nthreads = slK_threads();
  for (int i = 1; i < nthreads; i++) {
    pthread_t t;
    pthread_attr_t attr;
    pthread_attr_init(&attr);
    pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
    int rc = pthread_create(&t, &attr, team_thread, (void *)(intptr_t)i);
    pthread_attr_destroy(&attr);
    if (rc != 0) { /* a smaller team still finishes every job */
      nthreads = i;
      break;
    }
  }
}

int slK_team_size(void) {
  pthread_once(&once, start);
  return nthreads;
}

static void run_alone(int njobs, slK_JobFn fn, void *ctx) {
  for (int j = 0; j < njobs; j++) fn(ctx, j, 0);
}

void slK_parallel(int njobs, int threads, slK_JobFn fn, void *ctx) {
  pthread_once(&once, start);
  if (threads > nthreads) threads = nthreads;
  if (threads > njobs) threads = njobs;
  int expected = 0;
  if (threads < 2 || !atomic_compare_exchange_strong(&busy, &expected, 1)) {
    run_alone(njobs, fn, ctx);
    return;
  }
  /* Close the claims before the job changes: a worker still holding the
  ** previous generation's exhausted state must not read the new job's
  ** piece count and claim a piece under the old generation (it would run
  ** the new job with a half-written ctx, and count a piece twice so that
  ** this call could return while a piece still runs). A closed state has
  ** its own generation and a piece index no job reaches. */
  uint32_t gen = generation() + 2;
  atomic_store_explicit(&state, (uint64_t)(gen - 1) << 32 | CLOSED, memory_order_seq_cst);
  job.fn = fn, job.ctx = ctx;
  atomic_store_explicit(&job.njobs, (unsigned)njobs, memory_order_relaxed);
  atomic_store_explicit(&job.workers, threads, memory_order_relaxed);
  atomic_store_explicit(&done_pieces, 0, memory_order_relaxed);
  atomic_store_explicit(&state, (uint64_t)gen << 32, memory_order_seq_cst);
  /* a spinning worker sees the new generation by itself; only sleepers need
  ** the system call. A worker counts itself a sleeper under the lock before
  ** it checks the generation again, so none is missed. */
  if (atomic_load_explicit(&sleepers, memory_order_seq_cst) > 0) {
    pthread_mutex_lock(&lock);
    pthread_cond_broadcast(&wake);
    pthread_mutex_unlock(&lock);
  }
  work(gen, 0);
  /* the last pieces run elsewhere: spin a little, then sleep until the last
  ** one ends. Never sched_yield: on a machine where anything else is
  ** runnable, a yield hands the core away for a whole time slice. */
  for (int spins = 0; atomic_load_explicit(&done_pieces, memory_order_acquire) < (unsigned)njobs && spins < SPIN_ROUNDS;
       spins++)
    PAUSE();
  if (atomic_load_explicit(&done_pieces, memory_order_acquire) < (unsigned)njobs) {
    pthread_mutex_lock(&lock);
    atomic_store_explicit(&caller_waits, 1, memory_order_seq_cst);
    while (atomic_load_explicit(&done_pieces, memory_order_seq_cst) < (unsigned)njobs)
      pthread_cond_wait(&finished, &lock);
    atomic_store_explicit(&caller_waits, 0, memory_order_relaxed);
    pthread_mutex_unlock(&lock);
  }
  atomic_store(&busy, 0);
}

/* ------------------------------------------------------------ ranges */

typedef struct {
  slK_RangeFn fn;
  void *ctx;
  size_t n, chunk;
} Ranges;

static void range_piece(void *ctx, int piece, int worker) {
  Ranges *r = ctx;
  size_t begin = (size_t)piece * r->chunk, end = begin + r->chunk;
  r->fn(r->ctx, begin, end < r->n ? end : r->n);
  (void)worker;
}

void slK_parallel_for(size_t n, size_t min_chunk, slK_RangeFn fn, void *ctx) {
  int t = slK_team_size();
  if (min_chunk < 1) min_chunk = 1;
  if (t < 2 || n < 2 * min_chunk) {
    if (n) fn(ctx, 0, n);
    return;
  }
  /* four chunks a thread, none below min_chunk: late workers leave less to wait for */
  size_t chunk = n / ((size_t)t * 4);
  if (chunk < min_chunk) chunk = min_chunk;
  Ranges r = {fn, ctx, n, chunk};
  slK_parallel((int)((n + chunk - 1) / chunk), t, range_piece, &r);
}
