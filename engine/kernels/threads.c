/*
** threads.c - the one parallel loop of the kernels: pthreads, jobs handed
** out in order through an atomic counter, the caller working as worker 0.
**
** Threads are started per call rather than kept in a pool: a call that is
** worth threading runs for milliseconds, against tens of microseconds to
** start a thread, and nothing is left running between calls (the kernel
** process stays single-threaded while idle, and fork-safe).
*/
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <unistd.h>

#include "kernels.h"

#define MAX_THREADS 64

int slK_threads(void) {
  static int n = 0;
  if (n == 0) {
    const char *env = getenv("SYSLAB_THREADS");
    long cores = sysconf(_SC_NPROCESSORS_ONLN);
    n = env && atoi(env) > 0 ? atoi(env) : cores > 0 ? (int)cores : 1;
    if (n > MAX_THREADS) n = MAX_THREADS;
  }
  return n;
}

typedef struct {
  atomic_int next;
  int njobs;
  void (*fn)(void *ctx, int job, int worker);
  void *ctx;
} Loop;

typedef struct {
  Loop *loop;
  int worker;
} Worker;

static void work(Loop *l, int worker) {
  for (int j; (j = atomic_fetch_add(&l->next, 1)) < l->njobs;) l->fn(l->ctx, j, worker);
}

static void *thread_main(void *arg) {
  Worker *w = arg;
  work(w->loop, w->worker);
  return NULL;
}

void slK_parallel(int njobs, int threads, void (*fn)(void *ctx, int job, int worker), void *ctx) {
  if (threads > njobs) threads = njobs;
  if (threads > MAX_THREADS) threads = MAX_THREADS;
  Loop l = {0, njobs, fn, ctx};
  pthread_t tid[MAX_THREADS];
  Worker w[MAX_THREADS];
  int started = 0;
  for (int t = 1; t < threads; t++) {
    w[t] = (Worker){&l, t};
    if (pthread_create(&tid[t], NULL, thread_main, &w[t]) != 0) break;  /* fewer threads still finish every job */
    started = t;
  }
  work(&l, 0);
  for (int t = 1; t <= started; t++) pthread_join(tid[t], NULL);
}
