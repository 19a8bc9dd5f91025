/*
** ddp.c - the groups that data-parallel training runs in (graph/parallel.h),
** over the MPI transport: which processes, the fixed-order collectives,
** and what happens when one of them dies.
**
** Which processes. Under mpirun every rank runs the script and reaches
** the same training call: the group is the job's ranks. From a notebook
** (or a script run without mpirun), workers=N makes this process rank 0
** and starts N - 1 workers that receive the call and what it reads, as a
** search's workers do (remote.c), and run it. Either way the members first
** greet each other within a deadline (a member that failed before
** reaching the call is named instead of waited for), then work in a
** duplicate of the group, so that no message of a search or of another
** call can be taken for theirs.
**
** The collectives (parallel.h) are made of non-blocking sends and receives
** between pairs. A sum over shards: each rank sends shard q of its buffer
** to rank q and receives its own shard from every rank, then adds them in
** rank order (slM_grads_add: acc = c_0, acc += c_1, ...) whatever order
** they arrived in; with gather, each rank then sends its summed shard to
** every other. Each rank moves N - 1 shards out and N - 1 in per half,
** 2 (N - 1) / N of the buffer in all, as a ring all-reduce does, but every
** sum has the order of a serial accumulation. Collectives in flight at
** once are told apart by their slot, which picks their tags.
**
** Dying. A second thread sends every other member a beat every
** timeout / 10 and notes the beats it receives. A member not heard for
** the timeout (SYSLAB_MPI_TIMEOUT, 30 s) is dead or stuck: every wait then
** fails naming it, and the step stops. A member that stops on an error
** of its own tells the others why before it leaves, so that they stop at
** once instead of waiting out the timeout. A failed group is abandoned,
** not disconnected (a disconnect would wait for the dead).
**
** Closing. A call's duplicate is freed only once nothing is on its way in
** it (quiesce: two agreements around the last beat), because Open MPI
** hands a late message to the next call's duplicate.
*/
#define _GNU_SOURCE
#include <pthread.h>
#include <sched.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "dist.h"
#include "graph/accumulate.h"
#include "graph/memory.h"
#include "table/table.h"

enum { TAG_HELLO = 60, TAG_BEAT, TAG_ABORT, TAG_GATHER, TAG_BCAST, TAG_DATA = 1000 };
#define SLOTS 8000 /* tags TAG_DATA .. TAG_DATA + 2 * SLOTS, under MPI's least upper bound of 32767 */

enum { SUM, SHARE };

struct slM_Xfer {
  int kind, gather, root, slot;
  int phase; /* 1: shards to their summing rank, 2: summed shards out, 3: done */
  float *buf;
  float *recv; /* the other ranks' copies of this rank's shard (recv_space) */
  size_t *bounds;
  slD_Request **reqs;
  int nreq;
  slM_Xfer *next; /* the group's collectives in flight */
};

struct slM_Group {
  const slD_Transport *t;
  slD_Group *base; /* the job's world, or the group of a spawn (owned when own_base) */
  slD_Group *comm; /* this call's duplicate */
  int own_base, rank, size;
  double timeout;
  slM_Xfer *flying;
  slM_Tensor **recv; /* per slot: where the other ranks' shards arrive */
  int nrecv;
  pthread_t beat;
  int beating;
  pthread_mutex_t lock; /* heard, stop */
  pthread_cond_t wake;
  double *heard; /* when each rank was last heard */
  int stop;
  int failed;
  char err[1024];
};

/* Between polls of a wait: MPI moves data only inside its calls, so a
** wait first polls as fast as it can, yielding the core (a message of a
** few kB takes microseconds); after 256 polls it sleeps, from 20 us
** doubling to 1 ms, so that a long wait leaves the core to the others. */
static void idle(long *n) {
  if (++*n < 256) {
    sched_yield();
    return;
  }
  long us = *n < 256 + 6 ? 20L << (*n - 256) : 1000;
  struct timespec t = {0, us * 1000};
  nanosleep(&t, NULL);
}

static int fail(slM_Group *g, char *err, size_t errlen, const char *fmt, const char *why, int rank) {
  if (!g->failed) {
    snprintf(g->err, sizeof g->err, fmt, rank, why);
    g->failed = 1;
  }
  snprintf(err, errlen, "%s", g->err);
  return -1;
}

/* ------------------------------------------------------------- the beats */

static void *beat_thread(void *arg) {
  slM_Group *g = arg;
  double interval = g->timeout / 10;
  pthread_mutex_lock(&g->lock);
  while (!g->stop) {
    pthread_mutex_unlock(&g->lock);
    for (int q = 0; q < g->size; q++)
      if (q != g->rank) g->t->send(g->comm, q, TAG_BEAT, "", 0, interval);
    int src;
    void *data;
    size_t n;
    while (g->t->poll(g->comm, -1, TAG_BEAT, &src, NULL, &data, &n)) {
      free(data);
      pthread_mutex_lock(&g->lock);
      if (src >= 0 && src < g->size) g->heard[src] = slU_now();
      pthread_mutex_unlock(&g->lock);
    }
    pthread_mutex_lock(&g->lock);
    if (g->stop) break;
    slS_nap(&g->wake, &g->lock, interval);
  }
  pthread_mutex_unlock(&g->lock);
  return NULL;
}

/* a member that said it stops, or one silent for the timeout: -1 with err */
static int check_peers(slM_Group *g, char *err, size_t errlen) {
  if (g->failed) return snprintf(err, errlen, "%s", g->err), -1;
  if (g->size == 1) return 0; /* alone (allreduce_bench): no peers, no MPI */
  int src;
  void *data;
  size_t n;
  if (g->t->poll(g->comm, -1, TAG_ABORT, &src, NULL, &data, &n)) {
    char why[400];
    snprintf(why, sizeof why, "%.*s", (int)(n < 399 ? n : 399), (const char *)data);
    free(data);
    return fail(g, err, errlen, "rank %d stopped: %s", why, src);
  }
  double t = slU_now();
  int dead = -1;
  pthread_mutex_lock(&g->lock);
  for (int q = 0; q < g->size && dead < 0; q++)
    if (q != g->rank && t - g->heard[q] > g->timeout) dead = q;
  pthread_mutex_unlock(&g->lock);
  if (dead < 0) return 0;
  char why[160];
  snprintf(why, sizeof why, "%.0f s (it died, or hangs), so the step stops", g->timeout);
  return fail(g, err, errlen, "rank %d stopped answering: nothing heard from it for %s", why, dead);
}

/* ------------------------------------------------------- the collectives */

static int post(slM_Group *g, slM_Xfer *x, int send, int peer, int tag, float *data, size_t n, char *err,
                size_t errlen) {
  if (n == 0) return 0;
  slD_Request *r = send ? g->t->isend(g->comm, peer, tag, data, n * sizeof *data, err, errlen)
                        : g->t->irecv(g->comm, peer, tag, data, n * sizeof *data, err, errlen);
  if (!r) return -1;
  x->reqs[x->nreq++] = r;
  return 0;
}

static size_t shard(const slM_Xfer *x, int q) { return x->bounds[q + 1] - x->bounds[q]; }

/* where the other ranks' copies of this rank's shard of a sum arrive (N - 1
** shards), kept per slot for the call: buckets in flight at once need their own */
static float *recv_space(slM_Group *g, int slot, size_t n) {
  if (slot >= g->nrecv) {
    g->recv = realloc(g->recv, ((size_t)slot + 1) * sizeof *g->recv);
    memset(g->recv + g->nrecv, 0, ((size_t)slot + 1 - (size_t)g->nrecv) * sizeof *g->recv);
    g->nrecv = slot + 1;
  }
  slM_Tensor **t = &g->recv[slot];
  if (!*t || (*t)->size < n) {
    slM_tensor_free(*t);
    int shape[1] = {(int)(n ? n : 1)};
    *t = slM_tensor_new(1, shape);
    slM_mem_retag(*t, SLM_MEM_TEMP);
  }
  return (*t)->data;
}

static int tag_of(const slM_Xfer *x, int phase) { return TAG_DATA + 2 * (x->slot % SLOTS) + phase - 1; }

/* the summed shards (or the owners' shards) out: to every rank, or to root */
static int start_out(slM_Group *g, slM_Xfer *x, char *err, size_t errlen) {
  int me = g->rank, tag = tag_of(x, 2), rc = 0;
  x->phase = 2;
  x->nreq = 0;
  for (int q = 0; q < g->size && rc == 0; q++) {
    if (q == me) continue;
    if (x->root < 0 || me == x->root) rc = post(g, x, 0, q, tag, x->buf + x->bounds[q], shard(x, q), err, errlen);
    if (rc == 0 && (x->root < 0 || q == x->root))
      rc = post(g, x, 1, q, tag, x->buf + x->bounds[me], shard(x, me), err, errlen);
  }
  return rc;
}

/* where rank q's copy of this rank's shard arrives: the others in rank order */
static float *arrived(const slM_Group *g, const slM_Xfer *x, int q, size_t n) {
  return x->recv + (size_t)(q < g->rank ? q : q - 1) * n;
}

/* rank order: acc = c_0, acc += c_1, ... (own shard at q = me) */
static void sum_shards(slM_Group *g, slM_Xfer *x) {
  int me = g->rank;
  size_t n = shard(x, me);
  if (n == 0) return;
  float *own = x->buf + x->bounds[me];
  float *acc = me == 0 ? own : arrived(g, x, 0, n);
  for (int q = 1; q < g->size; q++) slM_grads_add(acc, q == me ? own : arrived(g, x, q, n), n);
  if (me != 0) memcpy(own, acc, n * sizeof *own);
}

static slM_Xfer *start(slM_Group *g, int kind, float *buf, const size_t *bounds, int gather, int root, int slot,
                       char *err, size_t errlen) {
  if (check_peers(g, err, errlen) != 0) return NULL;
  slM_Xfer *x = calloc(1, sizeof *x);
  x->kind = kind, x->gather = gather, x->root = root, x->slot = slot, x->buf = buf;
  x->bounds = malloc(((size_t)g->size + 1) * sizeof *x->bounds);
  memcpy(x->bounds, bounds, ((size_t)g->size + 1) * sizeof *bounds);
  x->reqs = calloc(2 * (size_t)g->size, sizeof *x->reqs);
  int rc;
  if (kind == SUM) {
    int me = g->rank, tag = tag_of(x, 1);
    size_t n = shard(x, me);
    x->recv = n && g->size > 1 ? recv_space(g, slot, n * (size_t)(g->size - 1)) : NULL;
    x->phase = 1;
    rc = 0;
    for (int q = 0; q < g->size && rc == 0; q++) {
      if (q == me) continue;
      rc = post(g, x, 0, q, tag, n ? arrived(g, x, q, n) : NULL, n, err, errlen);
      if (rc == 0) rc = post(g, x, 1, q, tag, buf + x->bounds[q], shard(x, q), err, errlen);
    }
  } else {
    rc = start_out(g, x, err, errlen);
  }
  x->next = g->flying;
  g->flying = x; /* kept even when a post failed: its other requests are in flight */
  if (rc != 0) {
    char why[300];
    snprintf(why, sizeof why, "%s", err);
    fail(g, err, errlen, "rank %d could not start a transfer: %s", why, g->rank);
    return NULL;
  }
  return x;
}

/* tests x's requests; when all are done, its next phase: 1 when x is done */
static int advance(slM_Group *g, slM_Xfer *x, char *err, size_t errlen) {
  char why[300];
  while (x->phase < 3) {
    for (int i = 0; i < x->nreq;) {
      int done = g->t->test(x->reqs[i], why, sizeof why);
      if (done < 0) {
        x->reqs[i] = x->reqs[--x->nreq];
        return fail(g, err, errlen, "rank %d lost a transfer: %s", why, g->rank);
      }
      if (done) x->reqs[i] = x->reqs[--x->nreq];
      else i++;
    }
    if (x->nreq > 0) return 0;
    if (x->phase == 1) {
      sum_shards(g, x);
      if (!x->gather) x->phase = 3;
      else if (start_out(g, x, why, sizeof why) != 0)
        return fail(g, err, errlen, "rank %d could not start a transfer: %s", why, g->rank);
    } else {
      x->phase = 3;
    }
  }
  return 1;
}

static int poll_all(slM_Group *g, char *err, size_t errlen) {
  if (check_peers(g, err, errlen) != 0) return -1;
  for (slM_Xfer *x = g->flying; x; x = x->next)
    if (x->phase < 3 && advance(g, x, err, errlen) < 0) return -1;
  return 0;
}

static void unlink_xfer(slM_Group *g, slM_Xfer *x) {
  for (slM_Xfer **p = &g->flying; *p; p = &(*p)->next)
    if (*p == x) {
      *p = x->next;
      break;
    }
  free(x->bounds), free(x->reqs), free(x);
}

static int wait_xfer(slM_Group *g, slM_Xfer *x, char *err, size_t errlen) {
  for (long polls = 0;;) {
    if (poll_all(g, err, errlen) != 0) return -1; /* x stays in flight, given up when the group closes */
    if (x->phase == 3) break;
    idle(&polls);
  }
  unlink_xfer(g, x);
  return 0;
}

static slM_Xfer *sum(slM_Group *g, float *buf, const size_t *bounds, int gather, int slot, char *err, size_t errlen) {
  return start(g, SUM, buf, bounds, gather, -1, slot, err, errlen);
}

static slM_Xfer *share(slM_Group *g, float *buf, const size_t *bounds, int root, int slot, char *err, size_t errlen) {
  return start(g, SHARE, buf, bounds, 0, root, slot, err, errlen);
}

/* -------------------------------------------------- small messages, in order */

/* sends and receives of one exchange, waited for with the peers watched */
static int exchange(slM_Group *g, slD_Request **reqs, int n, char *err, size_t errlen) {
  char why[300];
  for (long polls = 0;;) {
    for (int i = 0; i < n;) {
      int done = g->t->test(reqs[i], why, sizeof why);
      if (done < 0) {
        reqs[i] = reqs[--n];
        for (int j = 0; j < n; j++) g->t->cancel(reqs[j]);
        return fail(g, err, errlen, "rank %d lost a message: %s", why, g->rank);
      }
      if (done) reqs[i] = reqs[--n];
      else i++;
    }
    if (n == 0) return 0;
    if (check_peers(g, err, errlen) != 0) {
      for (int i = 0; i < n; i++) g->t->cancel(reqs[i]);
      return -1;
    }
    idle(&polls);
  }
}

static int allgather(slM_Group *g, const void *mine, size_t n, void *all, char *err, size_t errlen) {
  if (check_peers(g, err, errlen) != 0) return -1;
  memcpy((char *)all + (size_t)g->rank * n, mine, n);
  slD_Request **reqs = calloc(2 * (size_t)g->size, sizeof *reqs);
  int k = 0, rc = 0;
  for (int q = 0; q < g->size && rc == 0; q++) {
    if (q == g->rank) continue;
    slD_Request *r = g->t->irecv(g->comm, q, TAG_GATHER, (char *)all + (size_t)q * n, n, err, errlen);
    slD_Request *s = r ? g->t->isend(g->comm, q, TAG_GATHER, mine, n, err, errlen) : NULL;
    if (r) reqs[k++] = r;
    if (s) reqs[k++] = s;
    if (!r || !s) rc = -1;
  }
  if (rc == 0) rc = exchange(g, reqs, k, err, errlen);
  else
    for (int i = 0; i < k; i++) g->t->cancel(reqs[i]);
  free(reqs);
  return rc;
}

/* Every member has reached this point: an allgather of one byte that nobody
** reads, so that it fails, like every wait, when a member is lost. */
static int barrier(slM_Group *g, char *err, size_t errlen) {
  char here = 1, *all = calloc((size_t)g->size, 1);
  int rc = allgather(g, &here, 1, all, err, errlen);
  free(all);
  return rc;
}

static int bcast(slM_Group *g, int root, void **data, size_t *n, char *err, size_t errlen) {
  if (check_peers(g, err, errlen) != 0) return -1;
  uint64_t len = *n;
  slD_Request **reqs = calloc(2 * (size_t)g->size, sizeof *reqs);
  int k = 0, rc = 0;
  if (g->rank == root) {
    for (int q = 0; q < g->size && rc == 0; q++) {
      if (q == root) continue;
      slD_Request *a = g->t->isend(g->comm, q, TAG_BCAST, &len, sizeof len, err, errlen);
      slD_Request *b = a ? g->t->isend(g->comm, q, TAG_BCAST, *data, *n, err, errlen) : NULL;
      if (a) reqs[k++] = a;
      if (b) reqs[k++] = b;
      if (!a || !b) rc = -1;
    }
    rc = rc == 0 ? exchange(g, reqs, k, err, errlen) : -1;
  } else {
    slD_Request *a = g->t->irecv(g->comm, root, TAG_BCAST, &len, sizeof len, err, errlen);
    rc = a ? exchange(g, &a, 1, err, errlen) : -1;
    if (rc == 0) {
      *n = (size_t)len;
      *data = malloc(*n ? *n : 1);
      slD_Request *b = g->t->irecv(g->comm, root, TAG_BCAST, *data, *n, err, errlen);
      rc = b ? exchange(g, &b, 1, err, errlen) : -1;
    }
  }
  free(reqs);
  return rc;
}

/* ----------------------------------------------------------- open, close */

static int rank_of(const slM_Group *g) { return g->rank; }
static int size_of(const slM_Group *g) { return g->size; }

/* every member says hello to every other, within a deadline: a member that
** failed before it reached the call is named instead of waited for */
static int greet(slM_Group *g, char *err, size_t errlen) {
  double deadline = slU_now() + 3 * g->timeout;
  for (int q = 0; q < g->size; q++)
    if (q != g->rank && g->t->send(g->base, q, TAG_HELLO, "", 0, g->timeout) != 0)
      return snprintf(err, errlen, "rank %d did not take this rank's greeting within %.0f s", q, g->timeout), -1;
  char *seen = calloc((size_t)g->size + 1, 1);
  int missing = g->size - 1;
  for (long polls = 0; missing > 0;) {
    int src;
    void *data;
    size_t n;
    while (missing > 0 && g->t->poll(g->base, -1, TAG_HELLO, &src, NULL, &data, &n)) {
      free(data);
      if (src >= 0 && src < g->size && !seen[src]) seen[src] = 1, missing--;
    }
    if (missing == 0) break;
    if (slU_now() > deadline) {
      int q = 0;
      while (q < g->size && (q == g->rank || seen[q])) q++;
      snprintf(err, errlen,
               "rank %d did not reach this training call within %.0f s (it failed before it, or is "
               "running another command)",
               q, 3 * g->timeout);
      free(seen);
      return -1;
    }
    idle(&polls);
  }
  free(seen);
  return 0;
}

static void close_group(slM_Group *g, const char *why);

static slM_Group *open_group(sl_Call *call, int workers, char *err, size_t errlen) {
  if (slS_in_search())
    return snprintf(err, errlen,
                    "parallel training inside a distributed search's trial is not supported: the "
                    "search already spreads its trials over the processes"),
           NULL;
  if (!slS_spawned() && slS_env_size() <= 1 && workers <= 1) {
    if (workers == 0)
      snprintf(err, errlen,
               "parallel=\"data\" trains on several processes: run the script under mpirun -n N, or "
               "give workers=N to start them from here");
    return NULL; /* workers=1: this process alone, the serial run (err stays empty) */
  }
  const slD_Transport *t = slS_transport(err, errlen);
  if (!t) return NULL;
  slM_Group *g = calloc(1, sizeof *g);
  g->t = t;
  g->timeout = slS_timeout();
  pthread_mutex_init(&g->lock, NULL);
  pthread_cond_init(&g->wake, NULL);
  if (slS_spawned()) { /* first: a spawned worker has a launcher's environment of its own */
    g->base = slS_spawned();
  } else if (slS_env_size() > 1) {
    g->base = slS_world(err, errlen);
  } else if (slS_worker_limit(workers, err, errlen) == 0) {
    g->base = slS_spawn_call(call, workers - 1, err, errlen);
    g->own_base = 1;
  }
  if (!g->base) {
    free(g);
    return NULL;
  }
  g->rank = t->rank(g->base);
  g->size = t->size(g->base);
  g->heard = calloc((size_t)g->size, sizeof *g->heard);
  if (greet(g, err, errlen) != 0 || !(g->comm = t->dup(g->base, err, errlen))) {
    g->failed = 1;
    close_group(g, NULL);
    return NULL;
  }
  for (int q = 0; q < g->size; q++) g->heard[q] = slU_now();
  g->beating = pthread_create(&g->beat, NULL, beat_thread, g) == 0;
  return g;
}

static void stop_beats(slM_Group *g) {
  if (!g->beating) return;
  pthread_mutex_lock(&g->lock);
  g->stop = 1;
  pthread_cond_signal(&g->wake);
  pthread_mutex_unlock(&g->lock);
  pthread_join(g->beat, NULL);
  g->beating = 0;
}

/* A duplicate is freed only when nothing is on its way to this process in
** it. Open MPI gives the next duplicate the context id of the one freed,
** and a message that reaches a process after it freed the communicator
** (a beat its peer sent just before closing) is handed to that next
** duplicate with the old one's sequence number. There it takes the place
** of a message of the next call, which then never matches: every rank
** waits for ever, beating (seen as a rare hang with three ranks on a
** loaded machine). So the members first agree that all have reached the
** close, still beating (one may still be finishing its step), then stop
** beating, agree again, and take the beats that came before the second
** agreement: Open MPI matches one sender's messages in a communicator in
** the order they were sent, whatever their tags, so once a member's second
** message is in, nothing it sent before is still on its way. 0, or -1
** when a member failed or did not come (the group is then abandoned). */
static int quiesce(slM_Group *g) {
  char err[512];
  int rc = barrier(g, err, sizeof err);
  stop_beats(g);
  if (rc == 0) rc = barrier(g, err, sizeof err);
  for (int q = 0; q < g->size && rc == 0; q++) {
    int src;
    void *data;
    size_t n;
    while (q != g->rank && g->t->poll(g->comm, q, TAG_BEAT, &src, NULL, &data, &n)) free(data);
  }
  return rc;
}

static void close_group(slM_Group *g, const char *why) {
  if (!g) return;
  if (!why && !g->failed && !g->flying && g->comm && quiesce(g) != 0) g->failed = 1;
  stop_beats(g);
  if (why && g->comm) /* the others stop now instead of waiting out the timeout */
    for (int q = 0; q < g->size; q++)
      if (q != g->rank) g->t->send(g->comm, q, TAG_ABORT, why, strlen(why), 1.0);
  int broken = g->failed || why || g->flying;
  /* collectives still in flight are given up; their buffers stay allocated (MPI may still use them) */
  for (slM_Xfer *x = g->flying, *next; x; x = next) {
    next = x->next;
    for (int i = 0; i < x->nreq; i++) g->t->cancel(x->reqs[i]);
    free(x->bounds), free(x->reqs), free(x);
  }
  for (int i = 0; i < g->nrecv; i++)
    if (!broken) slM_tensor_free(g->recv[i]);
  if (g->comm) (broken ? g->t->abandon : g->t->close)(g->comm);
  if (g->own_base) (broken ? g->t->abandon : g->t->close)(g->base);
  pthread_mutex_destroy(&g->lock);
  pthread_cond_destroy(&g->wake);
  free(g->recv), free(g->heard), free(g);
}

static const slM_GroupOps ops = {open_group, rank_of,   size_of,   sum,   share,
                                 poll_all,   wait_xfer, allgather, bcast, close_group};

void slS_ddp_open(void) { slM_set_group_ops(&ops); }

/* ---------------------------------------------------------- the benchmark */

/* One timed sum of n floats, started together: a small exchange first, so
** that every rank starts within the exchange's latency of the others. In it
** every rank says whether it was interrupted: if any was, none starts the
** sum and all stop together (-2), so no rank waits for a peer that left. */
static double time_sum(slM_Group *g, float *buf, size_t n, int slot, char *err, size_t errlen) {
  size_t *bounds = malloc(((size_t)g->size + 1) * sizeof *bounds);
  for (int q = 0; q <= g->size; q++) bounds[q] = n * (size_t)q / (size_t)g->size;
  char mine = (char)(sl_interrupted() != 0), *all = calloc((size_t)g->size, 1);
  double t = -1;
  if (allgather(g, &mine, 1, all, err, errlen) == 0) {
    int stop = 0;
    for (int q = 0; q < g->size; q++) stop |= all[q];
    double t0 = slU_now();
    slM_Xfer *x = stop ? NULL : sum(g, buf, bounds, 1, slot, err, errlen);
    if (stop) t = -2;
    else if (x && wait_xfer(g, x, err, errlen) == 0) t = slU_now() - t0;
  }
  free(bounds), free(all);
  return t;
}

static int by_value(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return x < y ? -1 : x > y;
}

int slS_cmd_allreduce_bench(sl_Call *call, sl_Value *result) {
  sl_Value sizes = sl_arg(call, "sizes");
  int repeats = (int)sl_arg_number(call, "repeats");
  if (repeats < 1 || repeats > 1000) return sl_arg_error(call, "repeats", "must be between 1 and 1000");
  size_t ns = sl_list_len(sizes);
  if (ns < 1 || ns > 64) return sl_arg_error(call, "sizes", "give 1 to 64 sizes in MB");
  double biggest = 0;
  for (size_t i = 0; i < ns; i++) {
    sl_Value v = sl_list_get(sizes, i);
    if (v.type != SL_NUMBER || !(v.u.n > 0) || v.u.n > 4096)
      return sl_arg_error(call, "sizes", "each size is a number of MB above 0 and at most 4096");
    biggest = v.u.n > biggest ? v.u.n : biggest;
  }
  if (sl_memory_check(call, "sizes", biggest * 1e6 * 2, "the benchmark's buffers") != 0) return -1;
  char err[1024] = "";
  int workers = (int)sl_arg_number(call, "workers");
  slM_Group *g = open_group(call, workers ? workers : 1, err, sizeof err);
  if (!g && err[0]) return sl_arg_error(call, "workers", "%s", err);
  if (!g) { /* one process: a group of one, which moves nothing (the times are the calls' own) */
    g = calloc(1, sizeof *g);
    g->size = 1;
    pthread_mutex_init(&g->lock, NULL);
    pthread_cond_init(&g->wake, NULL);
  }
  slT_Table *t = slT_new();
  const char *cols[] = {"mb", "ranks", "median_ms", "min_ms", "algbw_gbs", "busbw_gbs"};
  for (int c = 0; c < 6; c++) slT_add_column(t, cols[c]);
  double *times = malloc((size_t)repeats * sizeof *times);
  int rc = 0;
  int stopped = 0;
  for (size_t i = 0; i < ns && rc == 0 && !stopped; i++) {
    double mb = sl_list_get(sizes, i).u.n;
    size_t n = (size_t)(mb * 1e6 / sizeof(float));
    float *buf = calloc(n ? n : 1, sizeof *buf);
    for (int k = -2; k < repeats && rc == 0 && !stopped; k++) { /* two untimed: buffers made, connections warm */
      double s = time_sum(g, buf, n, (int)i, err, sizeof err);
      if (s == -2) stopped = 1; /* a rank was interrupted: every rank stops here */
      else if (s < 0) rc = -1;
      else if (k >= 0) times[k] = s;
    }
    free(buf);
    if (rc != 0 || stopped) break;
    qsort(times, (size_t)repeats, sizeof *times, by_value);
    double median = repeats % 2 ? times[repeats / 2] : (times[repeats / 2 - 1] + times[repeats / 2]) / 2;
    double algbw = (double)n * sizeof(float) / median / 1e9;
    size_t r = slT_add_row(t);
    const double v[6] = {mb, g->size, median * 1e3, times[0] * 1e3, algbw, algbw * 2 * (g->size - 1) / g->size};
    for (int c = 0; c < 6; c++) slT_set(t, r, (size_t)c, c >= 4 && g->size == 1 ? sl_nil() : sl_number(v[c]));
  }
  free(times);
  close_group(g, rc ? err : NULL);
  if (rc != 0 || stopped) {
    slT_free(t);
    return rc != 0 ? sl_error(call, "%s", err) : sl_interrupted_error(call);
  }
  for (int c = 2; c < 6; c++) slT_mark_timing(t, c);
  *result = slT_value(t);
  return 0;
}
