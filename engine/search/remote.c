/*
** remote.c - searches spread over processes: rank 0 of an mpirun job (or a
** notebook's kernel with workers=N) owns the study, its sampler and its
** journal; the other processes run the search block for the trials they are
** handed (dist.h carries the processes and the protocol).
**
** Same results as a serial run. A trial's parameters are drawn by the
** coordinator when it hands the trial out, in trial-number order, over the
** space the earlier trials built, exactly as the serial loop draws them; so
** for the random and grid samplers, trial k gets what it gets serially
** whatever worker runs it and whenever it finishes. The first trial runs
** alone, to learn the space; a name that a later trial asks for and no
** earlier one did (a conditional space) is drawn when asked, which keeps
** the search correct but not identical to the serial order. TPE and NSGA-II
** learn from finished trials: to keep a distributed study reproducible for
** a fixed number of workers W, trial k is drawn only once trials 0..k-W are
** finished, and sees exactly those (later ones are shown as running), the
** same view whatever the timing. The median pruner judges a report against
** the reports that reached rank 0 before it, which depends on timing, as in
** Optuna with several workers.
**
** Nothing lost. Finished trials are appended to the journal in trial order
** (a trial that finishes early waits for those before it), so the journal is
** always a prefix of the serial study and resuming from it (journal.c)
** redraws the next trial as the serial run would; a crash re-runs at most the
** trials that were running and those that finished after the oldest of them.
** A dead worker's trial is handed to another worker with its parameters.
**
** Workers started from a notebook (workers=N) do not have the notebook's
** variables: the coordinator ships the search call's source and every
** variable it reads (job.c, through lang/codec.c: numbers, strings, lists,
** tables, data sets by their definition, models with their weights), after
** checking that each can be shipped, before any trial starts. The worker
** runs that call, and its search becomes the worker side of this file.
*/
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dist.h"
#include "lang/eval.h"
#include "search.h"

static int busy; /* a distributed search runs in this process */

/* ------------------------------------------------------------ encodings */

static void put_dist(slU_Text *o, const slS_Dist *d) {
  char err[64];
  slU_Text choices = {0};
  sl_encode(d->kind == SLS_CATEGORICAL ? d->choices : sl_nil(), &choices, err, sizeof err);
  slU_put_u8(o, (unsigned)d->kind);
  slU_put_f64(o, d->low);
  slU_put_f64(o, d->high);
  slU_put_f64(o, d->step);
  slU_put_u8(o, (unsigned)d->log);
  slU_put_bytes(o, choices.s, choices.n);
  free(choices.s);
}

static int get_dist(slU_Reader *r, slS_Dist *d) {
  memset(d, 0, sizeof *d);
  d->kind = (slS_Kind)slU_get_u8(r);
  d->low = slU_get_f64(r);
  d->high = slU_get_f64(r);
  d->step = slU_get_f64(r);
  d->log = (int)slU_get_u8(r);
  size_t n;
  const char *choices = slU_get_bytes(r, &n);
  char err[128];
  if (!choices || sl_decode(choices, n, &d->choices, err, sizeof err) != 0) {
    d->choices = sl_nil();
    return r->bad = 1, -1;
  }
  d->nchoices = d->choices.type == SL_LIST ? (int)sl_list_len(d->choices) : 0;
  return 0;
}

/* a finished trial's outcome, as a worker reports it and the final study holds it */
static void put_trial(slU_Text *o, const slS_Trial *t) {
  slU_put_u32(o, (uint32_t)t->number);
  slU_put_u8(o, (unsigned)t->state);
  slU_put_u32(o, (uint32_t)t->nparams);
  for (int i = 0; i < t->nparams; i++) {
    slU_put_u32(o, (uint32_t)t->param[i]);
    slU_put_f64(o, t->internal[i]);
  }
  slU_put_u32(o, (uint32_t)t->nvalues);
  for (int k = 0; k < t->nvalues; k++) slU_put_f64(o, t->values[k]);
  slU_put_u32(o, (uint32_t)t->ninter);
  for (int i = 0; i < t->ninter; i++) {
    slU_put_u32(o, (uint32_t)t->steps[i]);
    slU_put_f64(o, t->inter[i]);
  }
  slU_put_f64(o, t->seconds);
  slU_put_str(o, t->message ? t->message : "");
  slU_put_u64(o, (uint64_t)t->grid_id);
  slU_put_u64(o, t->draws[0]);
  slU_put_u64(o, t->draws[1]);
}

/* reads a trial into t (params only when with_params) */
static int get_trial(slU_Reader *r, slS_Trial *t, int with_params) {
  t->number = (int)slU_get_u32(r);
  t->state = (slS_State)slU_get_u8(r);
  int np = (int)slU_get_u32(r);
  if (np < 0 || (size_t)np > r->n) return r->bad = 1, -1;
  for (int i = 0; i < np; i++) {
    int p = (int)slU_get_u32(r);
    double v = slU_get_f64(r);
    if (with_params) slS_trial_set_param(t, p, v);
  }
  t->nvalues = (int)slU_get_u32(r);
  if (t->nvalues < 0 || t->nvalues > SLS_MAX_OBJECTIVES) return r->bad = 1, -1;
  for (int k = 0; k < t->nvalues; k++) t->values[k] = slU_get_f64(r);
  int ni = (int)slU_get_u32(r);
  if (ni < 0 || (size_t)ni > r->n) return r->bad = 1, -1;
  t->ninter = 0;
  for (int i = 0; i < ni; i++) {
    int step = (int)slU_get_u32(r);
    slS_trial_report(t, step, slU_get_f64(r));
  }
  t->seconds = slU_get_f64(r);
  char msg[2048];
  slU_get_str(r, msg, sizeof msg);
  free(t->message);
  t->message = msg[0] ? strdup(msg) : NULL;
  t->grid_id = (long)slU_get_u64(r);
  t->draws[0] = slU_get_u64(r);
  t->draws[1] = slU_get_u64(r);
  return r->bad ? -1 : 0;
}

/* --------------------------------------------------------------- the mode */

int slS_search_mode(sl_Call *call, char *err, size_t errlen) {
  int workers = (int)sl_arg_number(call, "workers");
  if (busy) return SLS_SERIAL; /* a search inside a trial runs where the trial runs */
  if (slS_spawned()) return SLS_WORKER;
  if (slS_env_size() > 1) {
    slD_Group *g = slS_world(err, errlen);
    if (!g) return -1;
    return slS_transport(err, errlen)->rank(g) == 0 ? SLS_COORDINATOR : SLS_WORKER;
  }
  if (workers < 0 || workers > SLS_MAX_WORKERS)
    return snprintf(err, errlen, "must be between 0 and %d", SLS_MAX_WORKERS), -1;
  if (workers == 0) return SLS_SERIAL;
  if (slS_worker_limit(workers, err, errlen) != 0) return -1; /* before anything starts */
  if (!slS_transport(err, errlen)) return -1;
  return SLS_COORDINATOR;
}

int slS_in_search(void) { return busy; }

/* ---------------------------------------------------------- coordinator */

typedef struct {
  sl_Call *call;
  slS_Study *st;
  int trials, workers;
  int planned;     /* what the progress counts to (a grid: its points) */
  double deadline; /* no new trial after this (0: none) */
  int committed;   /* trials 0..committed-1 are in the journal */
  int finished;
  sl_Progress *bar;
  double start;
  char err[1024];
} Coord;

static int learns(const slS_Study *st) { return (st->sampler->flags & SLS_LEARNS) != 0; }

static int next_trial(void *ud, long *id, slU_Text *task) {
  Coord *c = ud;
  slS_Study *st = c->st;
  int k = st->ntrials;
  if (k >= c->trials || c->err[0]) return -1;
  if (slS_sampler_done(st)) return -1;
  if (c->deadline > 0 && slU_now() >= c->deadline) return -1;
  /* The first trial runs alone: it builds the space, and its draws come
  ** first in the stream. A grid draws nothing: its points are the trial's. */
  if (c->finished == 0 && k > 0 && !st->sampler->points) return 0;
  /* TPE and NSGA-II see trials 0..seen-1, finished, and nothing later */
  int seen = learns(st) ? k - c->workers + 1 : k;
  if (seen < 0) seen = 0;
  for (int i = 0; learns(st) && i < seen; i++)
    if (st->trials[i].state == SLS_RUNNING) return 0;
  slS_Trial *t = slS_trial_new(st);
  slS_before_trial(st, t);
  /* later trials that happened to finish already are shown as running */
  slS_State *hidden = malloc(((size_t)k + 1) * sizeof *hidden);
  for (int i = seen; i < k; i++) hidden[i] = st->trials[i].state, st->trials[i].state = SLS_RUNNING;
  t = &st->trials[k];
  int rc = 0;
  for (int p = 0; p < st->nspace && rc == 0; p++) {
    double v;
    rc = slS_sample(st, t, p, &v, c->err, sizeof c->err);
    if (rc == 0) slS_trial_set_param(t, p, v);
  }
  for (int i = seen; i < k; i++) st->trials[i].state = hidden[i];
  free(hidden);
  t->draws[0] = st->rng.draws;
  t->draws[1] = st->rng2.draws;
  if (rc != 0) {
    slS_trial_drop_last(st);
    return -1;
  }
  /* the task: the trial's number and its parameters by name */
  *id = k;
  slU_put_u32(task, (uint32_t)k);
  slU_put_u32(task, (uint32_t)t->nparams);
  for (int i = 0; i < t->nparams; i++) {
    slU_put_str(task, st->space[t->param[i]].name);
    slU_put_f64(task, t->internal[i]);
  }
  return 1;
}

static int trial_done(void *ud, long id, const char *result, size_t n, char *err, size_t errlen) {
  Coord *c = ud;
  slS_Study *st = c->st;
  if (id < 0 || id >= st->ntrials) return 0;
  /* 'T' and the trial, or 'X' and the error that stops the search */
  if (n == 0 || result[0] != 'T') {
    snprintf(err, errlen, "%.*s", n > 1 ? (int)(n - 1) : 0, n > 1 ? result + 1 : "");
    if (!err[0]) snprintf(err, errlen, "a worker sent an empty result for trial %ld", id);
    return -1;
  }
  slU_Reader r = {result + 1, n - 1, 0, 0};
  slS_Trial *t = &st->trials[id];
  int number = t->number;
  uint64_t draws[2] = {t->draws[0], t->draws[1]};
  long grid = t->grid_id;
  if (get_trial(&r, t, 0) != 0 || t->number != number) {
    snprintf(err, errlen, "a worker sent a malformed result for trial %ld", id);
    return -1;
  }
  t->draws[0] = draws[0], t->draws[1] = draws[1], t->grid_id = grid; /* the coordinator's, not the worker's */
  c->finished++;
  /* the journal and the progress in trial order */
  while (c->committed < st->ntrials && st->trials[c->committed].state != SLS_RUNNING) {
    slS_Trial *done = &st->trials[c->committed++];
    st->seconds += done->seconds;
    if (st->journal && slS_journal_trial(st, done, err, errlen) != 0) return -1;
    const slS_Trial *b = st->nobj == 1 ? slS_best(st) : NULL;
    char v[32] = "-", detail[160];
    if (b) sl_format_number(b->values[0], v, sizeof v);
    snprintf(detail, sizeof detail, "trial %d/%d  best %s  %.1f s  %d workers", c->committed, c->planned, v,
             slU_now() - c->start, c->workers);
    sl_progress_update(c->bar, c->committed, detail);
  }
  return 0;
}

static void worker_lost(void *ud, int rank, long id) {
  Coord *c = ud;
  sl_eprintf(c->call, "worker %d stopped answering; trial %ld goes to another worker\n", rank, id);
}

/* a worker's question: 'S' name dist -> 'V' value | 'E' error; 'R' step value -> 'P' prune | 'K' keep */
static void answer(void *ud, long id, const char *q, size_t n, slU_Text *out) {
  Coord *c = ud;
  slS_Study *st = c->st;
  char err[1024] = "";
  if (id < 0 || id >= st->ntrials || st->trials[id].state != SLS_RUNNING || n == 0) {
    slU_put_u8(out, 'E');
    slU_put_str(out, "the coordinator has no such running trial");
    return;
  }
  slU_Reader r = {q + 1, n - 1, 0, 0};
  if (q[0] == 'S') {
    char name[SLS_NAME_MAX];
    slS_Dist d;
    slU_get_str(&r, name, sizeof name);
    get_dist(&r, &d);
    int p = slS_space_add(st, name, &d, err, sizeof err);
    double v = 0;
    slS_Trial *t = &st->trials[id];
    if (p >= 0 && !slS_trial_param(t, p, &v)) {
      if (slS_sample(st, t, p, &v, err, sizeof err) == 0) {
        slS_trial_set_param(t, p, v);
        t->draws[0] = st->rng.draws; /* the streams after this trial's draws, for the journal */
        t->draws[1] = st->rng2.draws;
      } else {
        p = -1;
      }
    }
    if (p < 0) {
      slU_put_u8(out, 'E');
      slU_put_str(out, err);
    } else {
      slU_put_u8(out, 'V');
      slU_put_f64(out, v);
    }
  } else if (q[0] == 'R') {
    int step = (int)slU_get_u32(&r);
    double value = slU_get_f64(&r);
    slS_Trial *t = &st->trials[id];
    slS_trial_report(t, step, value);
    if (st->journal && slS_journal_report(st, t, err, sizeof err) != 0) {
      slU_put_u8(out, 'E');
      slU_put_str(out, err);
      return;
    }
    slU_put_u8(out, slS_should_prune(st, t) ? 'P' : 'K');
  }
}

/* the finished study, for the workers of an mpirun job: they go on with the
** script holding the same value as rank 0 */
static void final_study(void *ud, int rc, slU_Text *out) {
  Coord *c = ud;
  slS_Study *st = c->st;
  slU_put_u32(out, (uint32_t)st->nspace);
  for (int p = 0; p < st->nspace; p++) {
    slU_put_str(out, st->space[p].name);
    put_dist(out, &st->space[p].dist);
  }
  slU_put_u32(out, (uint32_t)st->ntrials);
  for (int i = 0; i < st->ntrials; i++) put_trial(out, &st->trials[i]);
  slU_put_f64(out, st->seconds);
}

int slS_search_coordinate(sl_Call *call, slS_Study *st, int trials, double timeout, sl_Progress *bar) {
  char err[1024];
  const slD_Transport *t = slS_transport(err, sizeof err);
  if (!t) return sl_error(call, "%s", err);
  slD_Group *g;
  int farm, own = 0;
  if (slS_env_size() > 1) {
    g = slS_world(err, sizeof err);
    farm = slS_farm_next();
  } else {
    g = slS_spawn_call(call, (int)sl_arg_number(call, "workers"), err, sizeof err);
    if (!g) return sl_error(call, "%s", err);
    own = 1;
    farm = 1;
  }
  if (!g) return sl_error(call, "%s", err);
  Coord c = {call,
             st,
             trials,
             t->size(g) - 1,
             slS_trials_planned(st, trials),
             timeout > 0 ? slU_now() + timeout : 0,
             st->ntrials,
             0,
             bar,
             slU_now(),
             ""};
  c.finished = st->ntrials; /* resumed trials count as finished: the space is known */
  slS_FarmSource src = {&c, next_trial, trial_done, worker_lost, answer, final_study};
  slS_FarmStats stats;
  busy = 1;
  int rc = slS_farm_coordinate(g, farm, &src, &stats, err, sizeof err);
  busy = 0;
  if (own) t->close(g);
  if (rc == 0 && c.err[0]) {
    snprintf(err, sizeof err, "%s", c.err);
    rc = -1;
  }
  /* trials still running when the farm stopped are not part of the study */
  while (st->ntrials > 0 && st->trials[st->ntrials - 1].state == SLS_RUNNING) slS_trial_drop_last(st);
  if (rc != 0) return strcmp(err, "interrupted") == 0 ? sl_interrupted_error(call) : sl_error(call, "%s", err);
  return 0;
}

/* --------------------------------------------------------------- worker */

typedef struct {
  sl_Call *call;
  slS_Study *st;
  int number; /* the trial running remotely, or -1 */
  int nknown;
  char (*names)[SLS_NAME_MAX];
  double *values; /* the parameters drawn for it by the coordinator */
} Work;

static Work *work;

/* the trial this worker runs for the coordinator: the last of its study (a
** search nested in the block has trials of its own, run here) */
int slS_remote_trial(const slS_Trial *t) {
  return work && work->number >= 0 && work->st->ntrials > 0 && t == &work->st->trials[work->st->ntrials - 1];
}

int slS_remote_sample(const char *name, const slS_Dist *d, double *internal, char *err, size_t errlen) {
  for (int i = 0; i < work->nknown; i++)
    if (strcmp(work->names[i], name) == 0) return *internal = work->values[i], 0;
  slU_Text q = {0};
  slU_put_u8(&q, 'S');
  slU_put_str(&q, name);
  put_dist(&q, d);
  char *a;
  size_t n;
  int rc = slS_farm_ask(q.s, q.n, &a, &n, err, errlen);
  free(q.s);
  if (rc != 0) return -1;
  slU_Reader r = {a + 1, n ? n - 1 : 0, 0, 0};
  if (n > 0 && a[0] == 'V') *internal = slU_get_f64(&r);
  else slU_get_str(&r, err, errlen), rc = -1;
  free(a);
  return rc;
}

int slS_remote_report(int step, double value, int *prune, char *err, size_t errlen) {
  slU_Text q = {0};
  slU_put_u8(&q, 'R');
  slU_put_u32(&q, (uint32_t)step);
  slU_put_f64(&q, value);
  char *a;
  size_t n;
  int rc = slS_farm_ask(q.s, q.n, &a, &n, err, errlen);
  free(q.s);
  if (rc != 0) return -1;
  if (n > 0 && a[0] == 'E') {
    slU_Reader r = {a + 1, n - 1, 0, 0};
    slU_get_str(&r, err, errlen);
    rc = -1;
  }
  *prune = n > 0 && a[0] == 'P';
  free(a);
  return rc;
}

static void run_task(void *ud, long id, const char *task, size_t n, slU_Text *result) {
  Work *w = ud;
  slU_Reader r = {task, n, 0, 0};
  int number = (int)slU_get_u32(&r);
  w->nknown = (int)slU_get_u32(&r);
  if (r.bad || w->nknown < 0 || (size_t)w->nknown > n) {
    slU_add(result, "Xa malformed task reached a worker");
    return;
  }
  w->names = realloc(w->names, ((size_t)w->nknown + 1) * sizeof *w->names);
  w->values = realloc(w->values, ((size_t)w->nknown + 1) * sizeof *w->values);
  for (int i = 0; i < w->nknown; i++) {
    slU_get_str(&r, w->names[i], SLS_NAME_MAX);
    w->values[i] = slU_get_f64(&r);
  }
  slS_Trial *t = slS_trial_new(w->st);
  t->number = number;
  w->number = number;
  int rc = slS_run_trial(w->call, w->st, t);
  w->number = -1;
  if (rc != 0) {
    const sl_Error *e = sl_call_error(w->call);
    slU_add(result, "Xtrial %d stopped the search: %s: %s", number, e->ename, e->evalue ? e->evalue : "");
    return;
  }
  slU_put_u8(result, 'T');
  put_trial(result, &w->st->trials[w->st->ntrials - 1]);
  slS_trial_drop_last(w->st);
}

/* replaces the worker's (empty) study by the coordinator's finished one */
static int take_final(slS_Study *st, const char *data, size_t n) {
  slU_Reader r = {data, n, 0, 0};
  while (st->ntrials > 0) slS_trial_drop_last(st);
  int nspace = (int)slU_get_u32(&r);
  if (nspace < 0 || (size_t)nspace > n) return -1;
  for (int p = 0; p < nspace; p++) {
    char name[SLS_NAME_MAX], err[256];
    slS_Dist d;
    slU_get_str(&r, name, sizeof name);
    if (get_dist(&r, &d) != 0) return -1;
    if (p < st->nspace) slS_dist_free(&d); /* already known, in the same order */
    else if (slS_space_add(st, name, &d, err, sizeof err) < 0) return -1;
  }
  int ntrials = (int)slU_get_u32(&r);
  if (ntrials < 0 || (size_t)ntrials > n) return -1;
  for (int i = 0; i < ntrials; i++)
    if (get_trial(&r, slS_trial_new(st), 1) != 0) return -1;
  st->seconds = slU_get_f64(&r);
  return r.bad ? -1 : 0;
}

int slS_search_work(sl_Call *call, slS_Study *st) {
  char err[1024];
  slD_Group *g = slS_spawned() ? slS_spawned() : slS_world(err, sizeof err);
  if (!g) return sl_error(call, "%s", err);
  Work w = {call, st, -1, 0, NULL, NULL};
  work = &w;
  busy = 1;
  char *final;
  size_t n;
  int rc = slS_farm_work(g, slS_spawned() ? 1 : slS_farm_next(), run_task, &w, &final, &n, err, sizeof err);
  busy = 0;
  work = NULL;
  free(w.names);
  free(w.values);
  if (rc == 0 && take_final(st, final, n) != 0) {
    snprintf(err, sizeof err, "the coordinator's final study did not decode");
    rc = -1;
  }
  free(final);
  return rc == 0 ? 0 : sl_error(call, "%s", err);
}
