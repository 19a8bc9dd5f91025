/*
** parallel.c - a small persistent thread team for loops between products.
**
** OpenBLAS already runs the products on every core; the passes between
** them (activations, norms, softmax, dropout, the optimizer) ran on one.
** A team of (threads - 1) workers waits for a job; the caller takes the
** first range itself and then waits for the others. Workers spin briefly
** before sleeping on a condition variable, because a training step hands
** them a new loop every few tens of microseconds and a futex wake-up costs
** about as much as a small loop; the spin is short so that OpenBLAS's own
** threads get the cores back during the next product.
**
** One job at a time: a loop started from inside a job, or while another
** thread runs one, runs on its caller alone.
*/
#include <pthread.h>
#include <stdatomic.h>
#include <unistd.h>

#include "parallel.h"

#define MAX_THREADS 8
#define SPIN_ROUNDS 20000

int openblas_get_num_threads(void);

static pthread_once_t once = PTHREAD_ONCE_INIT;
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t wake = PTHREAD_COND_INITIALIZER, done_cond = PTHREAD_COND_INITIALIZER;
static int nthreads = 1;
static atomic_uint generation;
static atomic_int pending, busy;

static struct {
  slK_RangeFn fn;
  void *ctx;
  size_t n, chunk;
} job;

static void run_part(int part) {
  size_t begin = (size_t)part * job.chunk, end = begin + job.chunk;
  if (end > job.n) end = job.n;
  if (begin < end) job.fn(job.ctx, begin, end);
}

static void *worker(void *arg) {
  int part = (int)(size_t)arg;
  unsigned seen = 0;
  for (;;) {
    int spins = 0;
    while (atomic_load_explicit(&generation, memory_order_acquire) == seen && spins < SPIN_ROUNDS) {
      __builtin_ia32_pause();
      spins++;
    }
    if (atomic_load_explicit(&generation, memory_order_acquire) == seen) {
      pthread_mutex_lock(&lock);
      while (atomic_load(&generation) == seen) pthread_cond_wait(&wake, &lock);
      pthread_mutex_unlock(&lock);
    }
    seen = atomic_load(&generation);
    run_part(part);
    if (atomic_fetch_sub(&pending, 1) == 1) {
      pthread_mutex_lock(&lock);
      pthread_cond_signal(&done_cond);
      pthread_mutex_unlock(&lock);
    }
  }
  return NULL;
}

static void start(void) {
  long cores = sysconf(_SC_NPROCESSORS_ONLN);
  int blas = openblas_get_num_threads();
  nthreads = (int)(blas > 0 && blas < cores ? blas : cores);
  if (nthreads > MAX_THREADS) nthreads = MAX_THREADS;
  if (nthreads < 1) nthreads = 1;
  for (int i = 1; i < nthreads; i++) {
    pthread_t t;
    pthread_attr_t attr;
    pthread_attr_init(&attr);
    pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
    if (pthread_create(&t, &attr, worker, (void *)(size_t)i) != 0) nthreads = i;
    pthread_attr_destroy(&attr);
  }
}

int slK_threads(void) {
  pthread_once(&once, start);
  return nthreads;
}

void slK_parallel_for(size_t n, size_t min_chunk, slK_RangeFn fn, void *ctx) {
  int t = slK_threads();
  if (min_chunk < 1) min_chunk = 1;
  int expected = 0;
  if (t < 2 || n < 2 * min_chunk || !atomic_compare_exchange_strong(&busy, &expected, 1)) {
    if (n) fn(ctx, 0, n);
    return;
  }
  size_t parts = n / min_chunk < (size_t)t ? n / min_chunk : (size_t)t;
  job.fn = fn, job.ctx = ctx, job.n = n, job.chunk = (n + parts - 1) / parts;
  atomic_store(&pending, t - 1);
  pthread_mutex_lock(&lock);
  atomic_fetch_add_explicit(&generation, 1, memory_order_release);
  pthread_cond_broadcast(&wake);
  pthread_mutex_unlock(&lock);
  run_part(0);
  while (atomic_load_explicit(&pending, memory_order_acquire) > 0) {
    int spins = 0;
    while (atomic_load_explicit(&pending, memory_order_acquire) > 0 && spins < SPIN_ROUNDS) {
      __builtin_ia32_pause();
      spins++;
    }
    pthread_mutex_lock(&lock);
    while (atomic_load(&pending) > 0) pthread_cond_wait(&done_cond, &lock);
    pthread_mutex_unlock(&lock);
  }
  atomic_store(&busy, 0);
}
