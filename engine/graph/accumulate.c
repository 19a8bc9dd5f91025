/*
** accumulate.c - a training step made of micro-batches: gradient
** accumulation in one process (accumulate=K), and data parallelism over a
** group of processes with one micro-batch per rank (parallel="data"),
** equal bit for bit to each other.
**
** What makes them equal:
**  - the same micro-batches: the step's batch is cut into K = ranks pieces
**    the same way (slM_micro_rows), from the same data order;
**  - the same numbers drawn: before each micro-batch the dropout stream is
**    rewound to where the step began, and a micro-batch's elements are
**    numbered from its first row (g->feed_row0), so it gets exactly the
**    masks its rows have in the whole batch; after the step the stream
**    stands where one pass over the whole batch leaves it;
**  - the same gradient of each micro-batch, scaled by its share of the
**    rows (w_k = rows_k / rows, so the sum is the mean over the batch);
**  - the same additions in the same order: acc = c_0, acc += c_1, ...,
**    acc += c_{K-1} (slM_grads_add). In one process the accumulator takes
**    each micro-batch as it is done; across ranks rank q sums shard q of
**    every rank's gradient in rank order (parallel.h), whichever arrives
**    first, never in MPI's order;
**  - the same update, parameter by parameter (slM_StepWork's update: the optimizer's), on every
**    rank or, with a sharded optimizer, on the rank that owns the
**    parameter, which then sends the new values to the others.
**
** How gradients travel (reduce=): one collective per parameter, each
** waited for before the next (the naive way), one flat buffer of every
** gradient after the backward pass, or buckets of at most bucket_mb that
** start while the backward pass goes on: a parameter's gradient is
** complete once the backward has passed the first node that uses it
** (g->grad_ready), so a bucket of the last layers travels while the first
** ones are still computed.
*/
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "accumulate.h"
#include "memory.h"
#include "profile.h"
#include "slots.h"

const char *const slM_reduce_names[] = {"param", "flat", "bucket", NULL};

/* a trainable parameter of the step */
typedef struct {
  slM_Param *p;
  int first;       /* the first node that uses it */
  int owner;       /* the rank that keeps its optimizer state (sharded) */
  size_t off;      /* where its gradient sits in its bucket's buffer */
  slM_Tensor *acc; /* one process: the sum of the micro-batches so far */
} Par;

/* parameters [lo, hi) of the graph's order, reduced together */
typedef struct {
  int lo, hi;
  size_t n;
  slM_Tensor *buf; /* NULL: a lone parameter, reduced in its own gradient */
  size_t *bounds;  /* each rank's shard of the buffer: size + 1 offsets */
  slM_Xfer *x;     /* its sum in flight (started, not yet waited for) */
} Bucket;

struct slM_Steps {
  slM_Graph *g;
  slM_StepConfig sc;
  const slM_GroupOps *ops;
  int rank, size, K;
  Par *par;
  int np;
  Bucket *b; /* in the order their gradients become ready: the last parameters first */
  int nb;
  int next;    /* the next bucket to start in this step's backward */
  float w;     /* this rank's micro-batch's share of the rows */
  double comm; /* seconds of this step spent communicating */
  int failed;
  char err[512];
};

/* ------------------------------------------------------------ arithmetic */

void slM_grads_add(float *acc, const float *c, size_t n) {
  for (size_t i = 0; i < n; i++) acc[i] += c[i];
}

/* dst[i] = src[i] * w (dst may be src) */
static void grads_scale(float *dst, const float *src, float w, size_t n) {
  for (size_t i = 0; i < n; i++) dst[i] = src[i] * w;
}

void slM_micro_rows(int rows, int K, int k, int *lo, int *hi) {
  int base = rows / K, extra = rows % K;
  *lo = k * base + (k < extra ? k : extra);
  *hi = *lo + base + (k < extra);
}

void slM_shard_owners(const size_t *sizes, int n, int ranks, int *owner) {
  double total = 0, at = 0;
  for (int i = 0; i < n; i++) total += (double)sizes[i];
  for (int i = 0; i < n; i++) {
    /* by the middle of the parameter: each share ends near k / ranks of the whole */
    int q = total > 0 ? (int)((at + (double)sizes[i] / 2) * ranks / total) : 0;
    owner[i] = q < ranks ? q : ranks - 1;
    at += (double)sizes[i];
  }
}

int slM_trainable_params(const slM_Graph *g, slM_Param ***out) {
  slM_Param **ps = malloc(((size_t)g->n * SLM_MAX_PARAMS + 1) * sizeof *ps);
  int n = 0;
  for (int i = 0; i < g->n; i++)
    for (int k = 0; k < g->nodes[i].nparams; k++) {
      slM_Param *p = g->nodes[i].params[k];
      int j = 0;
      while (j < n && ps[j] != p) j++;
      if (j == n && !p->frozen) ps[n++] = p;
    }
  *out = ps;
  return n;
}

/* ------------------------------------------------------------ the setup */

static int fail(slM_Steps *s, const char *err) {
  if (!s->failed) snprintf(s->err, sizeof s->err, "%s", err);
  s->failed = 1;
  return -1;
}

/* buckets in the order gradients become ready (the graph's end first): each
** at most cap floats, or one parameter when larger; one for everything
** (flat), or one per parameter */
static void make_buckets(slM_Steps *s) {
  double cap = s->sc.reduce == SLM_REDUCE_FLAT    ? INFINITY
               : s->sc.reduce == SLM_REDUCE_PARAM ? 0
                                                  : s->sc.bucket_mb * 1e6 / sizeof(float);
  s->b = calloc((size_t)s->np + 1, sizeof *s->b);
  for (int hi = s->np; hi > 0;) {
    int lo = hi - 1;
    double n = (double)s->par[lo].p->value->size;
    while (lo > 0 && n + (double)s->par[lo - 1].p->value->size <= cap) n += (double)s->par[--lo].p->value->size;
    Bucket *b = &s->b[s->nb++];
    b->lo = lo, b->hi = hi;
    for (int i = lo; i < hi; i++) s->par[i].off = b->n, b->n += s->par[i].p->value->size;
    if (hi - lo > 1 && s->size > 1) {
      int shape[1] = {(int)b->n};
      b->buf = slM_tensor_new(1, shape);
      slM_mem_retag(b->buf, SLM_MEM_TEMP);
    }
    /* shards: equal pieces, or each owner's parameters (owners rise with the graph's order) */
    b->bounds = calloc((size_t)s->size + 1, sizeof *b->bounds);
    for (int q = 0; q <= s->size; q++) {
      if (!s->sc.shard) {
        b->bounds[q] = b->n * (size_t)q / (size_t)s->size;
        continue;
      }
      int i = lo;
      while (i < hi && s->par[i].owner < q) i++;
      b->bounds[q] = i < hi ? s->par[i].off : b->n;
    }
    hi = lo;
  }
}

slM_Steps *slM_steps_new(slM_Graph *g, const slM_StepConfig *sc, char *err, size_t errlen) {
  const slM_GroupOps *ops = NULL;
  if (sc->group && !(ops = slM_group_ops(err, errlen))) return NULL;
  slM_Steps *s = calloc(1, sizeof *s);
  s->g = g, s->sc = *sc, s->ops = ops;
  s->rank = ops ? ops->rank(sc->group) : 0;
  s->size = ops ? ops->size(sc->group) : 1;
  s->K = ops ? s->size : (sc->accumulate > 1 ? sc->accumulate : 1);
  slM_Param **ps;
  s->np = slM_trainable_params(g, &ps);
  s->par = calloc((size_t)s->np + 1, sizeof *s->par);
  size_t *sizes = calloc((size_t)s->np + 1, sizeof *sizes);
  int *owner = malloc(((size_t)s->np + 1) * sizeof *owner);
  for (int j = 0; j < s->np; j++) {
    s->par[j].p = ps[j];
    s->par[j].first = -1;
    sizes[j] = ps[j]->value->size;
    for (int i = 0; i < g->n && s->par[j].first < 0; i++)
      for (int k = 0; k < g->nodes[i].nparams; k++)
        if (g->nodes[i].params[k] == ps[j]) s->par[j].first = i;
  }
  slM_shard_owners(sizes, s->np, s->size, owner);
  for (int j = 0; j < s->np; j++) {
    s->par[j].owner = s->sc.shard ? owner[j] : s->rank;
    if (!ops && s->K > 1) { /* one process: the accumulators */
      s->par[j].acc = slM_tensor_like(ps[j]->value);
      slM_mem_retag(s->par[j].acc, SLM_MEM_GRAD);
    }
  }
  free(ps), free(sizes), free(owner);
  if (ops) make_buckets(s);
  if (s->sc.shard) slM_steps_drop(s);
  return s;
}

void slM_steps_free(slM_Steps *s) {
  if (!s) return;
  for (int j = 0; j < s->np; j++) slM_tensor_free(s->par[j].acc);
  for (int i = 0; i < s->nb; i++) {
    /* a collective still in flight after a failure may be written by MPI:
    ** its buffer is left allocated rather than freed under it */
    if (!s->b[i].x) slM_tensor_free(s->b[i].buf);
    free(s->b[i].bounds);
  }
  free(s->b), free(s->par), free(s);
}

int slM_steps_rank(const slM_Steps *s) { return s->rank; }
int slM_steps_size(const slM_Steps *s) { return s->size; }
slM_Group *slM_steps_group(const slM_Steps *s) { return s ? s->sc.group : NULL; }

/* --------------------------------------------------------- communication */

static float *bucket_data(Bucket *b, const Par *par) { return b->buf ? b->buf->data : par[b->lo].p->grad->data; }

/* a bucket's gradients, scaled by this rank's share, start their sum */
static int start_bucket(slM_Steps *s, int i) {
  Bucket *b = &s->b[i];
  for (int j = b->lo; j < b->hi; j++) {
    slM_Tensor *gr = s->par[j].p->grad;
    grads_scale(b->buf ? b->buf->data + s->par[j].off : gr->data, gr->data, s->w, gr->size);
  }
  char err[512];
  b->x = s->ops->sum(s->sc.group, bucket_data(b, s->par), b->bounds, !s->sc.shard, i, err, sizeof err);
  return b->x ? 0 : fail(s, err);
}

/* the summed shards back into the gradients: all of them, or the owned ones */
static void finish_bucket(slM_Steps *s, Bucket *b) {
  if (!b->buf) return;
  for (int j = b->lo; j < b->hi; j++)
    if (!s->sc.shard || s->par[j].owner == s->rank) {
      slM_Tensor *gr = s->par[j].p->grad;
      memcpy(gr->data, b->buf->data + s->par[j].off, gr->size * sizeof *gr->data);
    }
}

static int wait_bucket(slM_Steps *s, Bucket *b) {
  char err[512];
  slM_Xfer *x = b->x;
  if (!x) return 0;
  if (s->ops->wait(s->sc.group, x, err, sizeof err) != 0) return fail(s, err); /* b->x stays: still MPI's */
  b->x = NULL;
  finish_bucket(s, b);
  return 0;
}

/* the backward's hook: buckets whose parameters are all complete start */
static void on_grad_ready(void *ud, int node) {
  slM_Steps *s = ud;
  double t0 = slU_now();
  while (!s->failed && s->next < s->nb && s->par[s->b[s->next].lo].first >= node) start_bucket(s, s->next++);
  char err[512];
  if (!s->failed && s->ops->poll(s->sc.group, err, sizeof err) != 0) fail(s, err);
  s->comm += slU_now() - t0;
}

/* after the backward: what has not started starts (the per-parameter way:
** each waited for before the next) */
static int send_rest(slM_Steps *s) {
  for (; !s->failed && s->next < s->nb; s->next++) {
    if (start_bucket(s, s->next) != 0) return -1;
    if (s->sc.reduce == SLM_REDUCE_PARAM && wait_bucket(s, &s->b[s->next]) != 0) return -1;
  }
  return s->failed ? -1 : 0;
}

/* With a sharded optimizer: the owners' new values to every rank, bucket by bucket. */
static int share_values(slM_Steps *s) {
  char err[512];
  for (int i = 0; i < s->nb && !s->failed; i++) {
    Bucket *b = &s->b[i];
    float *data = b->buf ? b->buf->data : s->par[b->lo].p->value->data;
    for (int j = b->lo; j < b->hi && b->buf; j++)
      if (s->par[j].owner == s->rank) {
        slM_Tensor *v = s->par[j].p->value;
        memcpy(data + s->par[j].off, v->data, v->size * sizeof *v->data);
      }
    slM_Xfer *x = s->ops->share(s->sc.group, data, b->bounds, -1, s->nb + i, err, sizeof err);
    if (!x || s->ops->wait(s->sc.group, x, err, sizeof err) != 0) return fail(s, err);
    for (int j = b->lo; j < b->hi && b->buf; j++)
      if (s->par[j].owner != s->rank) {
        slM_Tensor *v = s->par[j].p->value;
        memcpy(v->data, data + s->par[j].off, v->size * sizeof *v->data);
      }
  }
  return s->failed ? -1 : 0;
}

/* ------------------------------------------------------------- the steps */

/* every trainable parameter's gradient zeroed (made if it has none yet: a
** rank whose micro-batch is empty still sends zeros) */
static void zero_grads(slM_Steps *s) {
  slM_zero_grads(s->g);
  for (int j = 0; j < s->np; j++) slM_param_grad(s->par[j].p);
}

/* one micro-batch's statistics, as each rank reports them */
typedef struct {
  double loss;
  int64_t correct;
  uint64_t rng; /* the dropout stream after its forward pass */
  int32_t rows, stop;
} Stat;

static void run_micro(slM_Steps *s, int rows, int k, int stop, const slM_StepWork *w, Stat *st) {
  slM_Graph *g = s->g;
  int lo, hi;
  slM_micro_rows(rows, s->K, k, &lo, &hi);
  memset(st, 0, sizeof *st);
  st->stop = stop;
  st->rng = g->rng.state;
  zero_grads(s);
  s->w = (float)((double)(hi - lo) / (double)rows);
  if (stop || hi == lo) return;
  long correct = 0;
  g->feed_row0 = lo;
  st->loss = w->micro(w->micro_ud, g, lo, hi, &correct);
  g->feed_row0 = 0;
  st->rows = hi - lo;
  st->correct = correct;
  st->rng = g->rng.state;
  if (g->stopped) st->stop = 1;
}

/* the micro-batches' statistics, in micro-batch order, into the step's */
static void combine(slM_Steps *s, const Stat *all, int n, slM_StepStats *out) {
  int have_rng = 0;
  for (int k = 0; k < n; k++) {
    if (all[k].stop) out->stopped = 1;
    if (all[k].rows == 0) continue;
    out->loss_sum += all[k].loss * all[k].rows;
    out->correct += all[k].correct;
    out->rows += all[k].rows;
    if (!isfinite(all[k].loss)) out->nonfinite = 1;
    if (!have_rng) s->g->rng.state = all[k].rng, have_rng = 1;
  }
}

static void update(slM_Steps *s, const slM_StepWork *w) {
  for (int j = 0; j < s->np; j++)
    if (s->par[j].owner == s->rank) w->update(w->update_ud, s->par[j].p);
}

/* one process: the micro-batches one after another into the accumulators */
static int run_serial(slM_Steps *s, int rows, int stop, const slM_StepWork *w, slM_StepStats *out) {
  slM_Rng at = s->g->rng;
  Stat *all = calloc((size_t)s->K, sizeof *all);
  for (int k = 0; k < s->K && !stop; k++) {
    s->g->rng = at;
    run_micro(s, rows, k, 0, w, &all[k]);
    if (all[k].stop) break; /* cut inside a pass: the step is given up */
    for (int j = 0; j < s->np; j++) {
      slM_Tensor *gr = s->par[j].p->grad, *acc = s->par[j].acc;
      grads_scale(gr->data, gr->data, s->w, gr->size);
      if (k == 0) memcpy(acc->data, gr->data, gr->size * sizeof *gr->data);
      else slM_grads_add(acc->data, gr->data, gr->size);
    }
  }
  if (stop) all[0].stop = 1;
  s->g->rng = at;
  combine(s, all, s->K, out);
  free(all);
  if (out->stopped || out->nonfinite) return 0;
  for (int j = 0; j < s->np; j++) {
    slM_Tensor *gr = s->par[j].p->grad;
    memcpy(gr->data, s->par[j].acc->data, gr->size * sizeof *gr->data);
  }
  update(s, w);
  return 0;
}

/* a rank of a group: its micro-batch, the gradients' sums, the update */
static int run_group(slM_Steps *s, int rows, int stop, const slM_StepWork *w, slM_StepStats *out) {
  slM_Graph *g = s->g;
  slM_Rng at = g->rng;
  int (*cut)(void *) = g->stop;
  Stat mine, *all = calloc((size_t)s->size, sizeof *all);
  s->next = 0;
  g->stop = NULL; /* every rank finishes its pass: the others wait for its gradients */
  if (s->sc.reduce == SLM_REDUCE_BUCKET) g->grad_ready = on_grad_ready, g->grad_ready_ud = s;
  run_micro(s, rows, s->rank, stop, w, &mine);
  g->grad_ready = NULL, g->grad_ready_ud = NULL;
  g->stop = cut;
  double t0 = slU_now();
  char err[512];
  int rc = send_rest(s);
  if (rc == 0 && s->ops->allgather(s->sc.group, &mine, sizeof mine, all, err, sizeof err) != 0) rc = fail(s, err);
  for (int i = 0; i < s->nb && rc == 0; i++) rc = wait_bucket(s, &s->b[i]);
  g->rng = at;
  if (rc == 0) combine(s, all, s->size, out);
  free(all);
  if (rc == 0 && !out->stopped && !out->nonfinite) {
    update(s, w);
    if (s->sc.shard) rc = share_values(s);
  }
  s->comm += slU_now() - t0;
  return rc;
}

int slM_steps_run(slM_Steps *s, int rows, int stop, const slM_StepWork *w, slM_StepStats *out, char *err,
                  size_t errlen) {
  memset(out, 0, sizeof *out);
  s->comm = 0;
  int rc = s->failed ? -1 : s->ops ? run_group(s, rows, stop, w, out) : run_serial(s, rows, stop, w, out);
  out->comm_seconds = s->comm;
  if (rc != 0) snprintf(err, errlen, "%s", s->err);
  return rc;
}

/* --------------------------------------------------- the sharded state */

void slM_steps_drop(slM_Steps *s) {
  for (int j = 0; j < s->np; j++) {
    slM_Param *p = s->par[j].p;
    if (s->par[j].owner == s->rank) continue;
    slM_tensor_free(p->m), slM_tensor_free(p->v);
    p->m = p->v = NULL;
  }
}

/* the owner's m or v of parameter j to root (or to every rank), made where
** missing; has: whether its owner holds it */
static int share_state(slM_Steps *s, int j, int which, int has, int root, char *err, size_t errlen) {
  slM_Param *p = s->par[j].p;
  slM_Tensor **t = which ? &p->v : &p->m;
  if (!has) return 0;
  if (!*t && (root < 0 || root == s->rank)) {
    *t = slM_tensor_like(p->value);
    slM_mem_retag(*t, SLM_MEM_OPTIM);
  }
  size_t n = p->value->size, *bounds = calloc((size_t)s->size + 1, sizeof *bounds);
  for (int q = 0; q <= s->size; q++) bounds[q] = q > s->par[j].owner ? n : 0;
  slM_Xfer *x = s->ops->share(s->sc.group, *t ? (*t)->data : NULL, bounds, root, 2 * s->nb + which, err, errlen);
  free(bounds);
  return x ? s->ops->wait(s->sc.group, x, err, errlen) : -1;
}

int slM_steps_collect(slM_Steps *s, int root, char *err, size_t errlen) {
  if (!s->ops || !s->sc.shard) return 0;
  /* which states each owner holds (none before the first update): every rank learns it first */
  size_t n = 2 * (size_t)s->np + 1;
  unsigned char *mine = calloc(n, 1), *all = calloc(n * (size_t)s->size, 1);
  for (int j = 0; j < s->np; j++) mine[2 * j] = s->par[j].p->m != NULL, mine[2 * j + 1] = s->par[j].p->v != NULL;
  int rc = s->ops->allgather(s->sc.group, mine, n, all, err, errlen);
  for (int j = 0; j < s->np && rc == 0; j++)
    for (int which = 0; which < 2 && rc == 0; which++)
      rc =
          share_state(s, j, which, all[(size_t)s->par[j].owner * n + 2 * (size_t)j + (size_t)which], root, err, errlen);
  free(mine), free(all);
  return rc == 0 ? 0 : fail(s, err);
}

/* ------------------------------------------------------------ the group */

static const slM_GroupOps *group_ops;

void slM_set_group_ops(const slM_GroupOps *ops) { group_ops = ops; }

const slM_GroupOps *slM_group_ops(char *err, size_t errlen) {
  if (!group_ops) snprintf(err, errlen, "this program has no distributed layer, so it cannot train in parallel");
  return group_ops;
}
