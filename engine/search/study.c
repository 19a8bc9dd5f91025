/*
** study.c - the study object: its trials, the search space their
** suggestions built, and the views a notebook reads (the trials table, the
** best trial, the running best and the Pareto front).
**
** Trials are appended in number order and never reordered, so trial t is
** trials[t]; a trial that was running when a search stopped is dropped
** rather than kept half-done, so a resumed search numbers it the same.
*/
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "search.h"
#include "table/table.h"

slS_Study *slS_study_new(void) {
  slS_Study *st = calloc(1, sizeof *st);
  st->nobj = 1;
  snprintf(st->objnames[0], SLS_NAME_MAX, "value");
  st->sampler = &slS_random_sampler; /* a sampler without state, until search chooses one (samplers.c) */
  st->prune_startup = 5;
  st->prune_interval = 1;
  st->prune_min_trials = 1;
  return st;
}

static void trial_free(slS_Trial *t) {
  free(t->param);
  free(t->internal);
  free(t->steps);
  free(t->inter);
  free(t->message);
}

void slS_dist_free(slS_Dist *d) {
  sl_release(d->choices);
  d->choices = sl_nil();
}

void slS_study_free(slS_Study *st) {
  if (!st) return;
  for (int i = 0; i < st->ntrials; i++) trial_free(&st->trials[i]);
  free(st->trials);
  for (int i = 0; i < st->nspace; i++) slS_dist_free(&st->space[i].dist);
  free(st->space);
  if (st->sampler->free) st->sampler->free(st->state);
  free(st->state);
  free(st->journal);
  free(st);
}

slS_Trial *slS_trial_new(slS_Study *st) {
  if (st->ntrials == st->captrials) {
    st->captrials = st->captrials ? st->captrials * 2 : 16;
    st->trials = realloc(st->trials, (size_t)st->captrials * sizeof *st->trials);
  }
  slS_Trial *t = &st->trials[st->ntrials];
  memset(t, 0, sizeof *t);
  t->number = st->ntrials++;
  t->state = SLS_RUNNING;
  t->grid_id = -1;
  return t;
}

void slS_trial_drop_last(slS_Study *st) {
  if (st->ntrials == 0) return;
  trial_free(&st->trials[--st->ntrials]);
}

const char *slS_state_name(slS_State s) {
  static const char *const names[] = {"running", "complete", "pruned", "failed"};
  return names[s];
}

/* ------------------------------------------------------------- the space */

/* the index of name in the space, or -1 */
static int space_find(const slS_Study *st, const char *name) {
  for (int i = 0; i < st->nspace; i++)
    if (strcmp(st->space[i].name, name) == 0) return i;
  return -1;
}

static int dist_equal(const slS_Dist *a, const slS_Dist *b) {
  if (a->kind != b->kind) return 0;
  if (a->kind == SLS_CATEGORICAL) return sl_equal(a->choices, b->choices);
  return a->low == b->low && a->high == b->high && a->step == b->step && a->log == b->log;
}

int slS_dist_single(const slS_Dist *d) {
  if (d->kind == SLS_CATEGORICAL) return d->nchoices == 1;
  if (d->low == d->high) return 1;
  return !d->log && d->step > 0 && d->high - d->low < d->step;
}

void slS_dist_describe(const slS_Dist *d, char *out, size_t size) {
  char lo[32], hi[32], st[32];
  if (d->kind == SLS_CATEGORICAL) {
    char *s = sl_repr(d->choices);
    snprintf(out, size, "categorical %s", s);
    free(s);
    return;
  }
  sl_format_number(d->low, lo, sizeof lo);
  sl_format_number(d->high, hi, sizeof hi);
  sl_format_number(d->step, st, sizeof st);
  int show_step = d->step > 0 && !(d->kind == SLS_INT && d->step == 1);
  snprintf(out, size, "%s %s..%s%s%s%s", d->kind == SLS_INT ? "int" : "float", lo, hi, show_step ? " step " : "",
           show_step ? st : "", d->log ? " log" : "");
}

int slS_space_add(slS_Study *st, const char *name, slS_Dist *d, char *err, size_t errlen) {
  int i = space_find(st, name);
  if (i >= 0) {
    if (dist_equal(&st->space[i].dist, d)) {
      slS_dist_free(d);
      return i;
    }
    char was[256], now[256];
    slS_dist_describe(&st->space[i].dist, was, sizeof was);
    slS_dist_describe(d, now, sizeof now);
    snprintf(err, errlen, "'%s' was suggested as %s and is now suggested as %s: a name keeps one range in a study",
             name, was, now);
    slS_dist_free(d);
    return -1;
  }
  if (st->nspace == st->capspace) {
    st->capspace = st->capspace ? st->capspace * 2 : 8;
    st->space = realloc(st->space, (size_t)st->capspace * sizeof *st->space);
  }
  slS_Param *p = &st->space[st->nspace];
  snprintf(p->name, sizeof p->name, "%s", name);
  p->dist = *d;
  d->choices = sl_nil();
  return st->nspace++;
}

/* --------------------------------------------------------------- trials */

int slS_trial_param(const slS_Trial *t, int p, double *internal) {
  for (int i = 0; i < t->nparams; i++)
    if (t->param[i] == p) {
      *internal = t->internal[i];
      return 1;
    }
  return 0;
}

void slS_trial_set_param(slS_Trial *t, int p, double internal) {
  if (t->nparams == t->capparams) {
    t->capparams = t->capparams ? t->capparams * 2 : 8;
    t->param = realloc(t->param, (size_t)t->capparams * sizeof *t->param);
    t->internal = realloc(t->internal, (size_t)t->capparams * sizeof *t->internal);
  }
  t->param[t->nparams] = p;
  t->internal[t->nparams++] = internal;
}

void slS_trial_report(slS_Trial *t, int step, double value) {
  for (int i = 0; i < t->ninter; i++)
    if (t->steps[i] == step) { /* Optuna keeps the first report of a step */
      return;
    }
  if (t->ninter == t->capinter) {
    t->capinter = t->capinter ? t->capinter * 2 : 8;
    t->steps = realloc(t->steps, (size_t)t->capinter * sizeof *t->steps);
    t->inter = realloc(t->inter, (size_t)t->capinter * sizeof *t->inter);
  }
  t->steps[t->ninter] = step;
  t->inter[t->ninter++] = value;
}

sl_Value slS_external(const slS_Dist *d, double internal) {
  if (d->kind == SLS_CATEGORICAL) {
    sl_Value v = sl_list_get(d->choices, (size_t)internal);
    sl_retain(v);
    return v;
  }
  return sl_number(internal);
}

/* better(a, b) for objective k: strictly better */
static int better(const slS_Study *st, int k, double a, double b) { return st->maximize[k] ? a > b : a < b; }

const slS_Trial *slS_best(const slS_Study *st) {
  const slS_Trial *best = NULL;
  for (int i = 0; i < st->ntrials; i++) {
    const slS_Trial *t = &st->trials[i];
    if (t->state == SLS_COMPLETE && (!best || better(st, 0, t->values[0], best->values[0]))) best = t;
  }
  return best;
}

/* a dominates b (COMPLETE trials, all objectives) */
static int dominates(const slS_Study *st, const double *a, const double *b) {
  int strictly = 0;
  for (int k = 0; k < st->nobj; k++) {
    double x = st->maximize[k] ? -a[k] : a[k], y = st->maximize[k] ? -b[k] : b[k];
    if (x > y) return 0;
    if (x < y) strictly = 1;
  }
  return strictly;
}

/* --------------------------------------------------------------- views */

sl_Value slS_params_record(const slS_Study *st, const slS_Trial *t) {
  sl_Value r = sl_record_new();
  for (int i = 0; i < t->nparams; i++)
    sl_record_set(r, st->space[t->param[i]].name, slS_external(&st->space[t->param[i]].dist, t->internal[i]));
  return r;
}

static int storable(sl_Value v) { return v.type == SL_NUMBER || v.type == SL_STRING || v.type == SL_NIL; }

static sl_Value cell(sl_Value v) {
  if (v.type == SL_BOOL) return sl_number(v.u.b);
  if (!storable(v)) {
    char *s = sl_tostring(v);
    sl_Value out = sl_string(s);
    free(s);
    sl_release(v);
    return out;
  }
  return v;
}

static slT_Table *table_of_trials(const slS_Study *st, int pareto_only) {
  slT_Table *t = slT_new();
  slT_add_column(t, "number");
  for (int p = 0; p < st->nspace; p++) slT_add_column(t, st->space[p].name);
  for (int k = 0; k < st->nobj; k++) slT_add_column(t, st->objnames[k]);
  int state = slT_add_column(t, "state");
  int secs = slT_add_column(t, "seconds");
  slT_mark_timing(t, secs);
  int any_failed = 0;
  for (int i = 0; i < st->ntrials; i++) any_failed |= st->trials[i].state == SLS_FAILED;
  int msg = any_failed && !pareto_only ? slT_add_column(t, "message") : -1;
  for (int i = 0; i < st->ntrials; i++) {
    const slS_Trial *tr = &st->trials[i];
    if (pareto_only) {
      if (tr->state != SLS_COMPLETE) continue;
      int dominated = 0;
      for (int j = 0; j < st->ntrials && !dominated; j++)
        dominated = st->trials[j].state == SLS_COMPLETE && dominates(st, st->trials[j].values, tr->values);
      if (dominated) continue;
    }
    size_t r = slT_add_row(t);
    slT_set(t, r, 0, sl_number(tr->number));
    for (int k = 0; k < tr->nparams; k++)
      slT_set(t, r, (size_t)(1 + tr->param[k]), cell(slS_external(&st->space[tr->param[k]].dist, tr->internal[k])));
    for (int k = 0; k < tr->nvalues; k++) slT_set(t, r, (size_t)(1 + st->nspace + k), sl_number(tr->values[k]));
    slT_set(t, r, (size_t)state, sl_string(slS_state_name(tr->state)));
    slT_set(t, r, (size_t)secs, sl_number(tr->seconds));
    if (msg >= 0 && tr->message) slT_set(t, r, (size_t)msg, sl_string(tr->message));
  }
  return t;
}

/* A study's tables hold no objective value until a trial completes: they
** say why, so that a plot of them can (plot.c) */
static slT_Table *noted(const slS_Study *st, slT_Table *t) {
  int counts[4] = {0};
  const char *first = NULL;
  for (int i = 0; i < st->ntrials; i++) {
    counts[st->trials[i].state]++;
    if (!first && st->trials[i].state == SLS_FAILED) first = st->trials[i].message;
  }
  if (counts[SLS_COMPLETE]) return t;
  char note[600];
  snprintf(note, sizeof note, "the study has no complete trial (%d failed, %d pruned, %d running)%s%.400s%s",
           counts[SLS_FAILED], counts[SLS_PRUNED], counts[SLS_RUNNING], first ? "; the first failure: " : "",
           first ? first : "", first ? "" : ": each trial must reach `objective`");
  slT_set_note(t, note);
  return t;
}

sl_Value slS_trials_table(const slS_Study *st) { return slT_value(noted(st, table_of_trials(st, 0))); }
sl_Value slS_pareto_table(const slS_Study *st) { return slT_value(noted(st, table_of_trials(st, 1))); }

/* best value of each objective after each trial: what Lab 2 and 3 plot */
sl_Value slS_running_best(const slS_Study *st) {
  slT_Table *t = slT_new();
  slT_add_column(t, "trial");
  char name[SLS_NAME_MAX + 8];
  for (int k = 0; k < st->nobj; k++) slT_add_column(t, st->objnames[k]);
  for (int k = 0; k < st->nobj; k++) {
    snprintf(name, sizeof name, st->nobj == 1 ? "best" : "best_%s", st->objnames[k]);
    slT_add_column(t, name);
  }
  double best[SLS_MAX_OBJECTIVES];
  int have = 0;
  for (int i = 0; i < st->ntrials; i++) {
    const slS_Trial *tr = &st->trials[i];
    size_t r = slT_add_row(t);
    slT_set(t, r, 0, sl_number(tr->number + 1));
    if (tr->state == SLS_COMPLETE) {
      for (int k = 0; k < st->nobj; k++) {
        slT_set(t, r, (size_t)(1 + k), sl_number(tr->values[k]));
        if (!have || better(st, k, tr->values[k], best[k])) best[k] = tr->values[k];
      }
      have = 1;
    }
    if (have)
      for (int k = 0; k < st->nobj; k++) slT_set(t, r, (size_t)(1 + st->nobj + k), sl_number(best[k]));
  }
  return slT_value(noted(st, t));
}

/* ------------------------------------------------------------ the object */

static void study_free(void *data) { slS_study_free(data); }

static void count_states(const slS_Study *st, int counts[4]) {
  memset(counts, 0, 4 * sizeof *counts);
  for (int i = 0; i < st->ntrials; i++) counts[st->trials[i].state]++;
}

static void headline(const slS_Study *st, char *out, size_t size) {
  int c[4];
  count_states(st, c);
  size_t used = (size_t)snprintf(
      out, size, "study: %d trial%s (%d complete, %d pruned, %d failed), sampler %s, seed %u, ", st->ntrials,
      st->ntrials == 1 ? "" : "s", c[SLS_COMPLETE], c[SLS_PRUNED], c[SLS_FAILED], st->sampler->name, st->seed);
  for (int k = 0; k < st->nobj; k++)
    used += (size_t)snprintf(out + used, used < size ? size - used : 0, "%s%s %s", k ? ", " : "",
                             st->maximize[k] ? "maximize" : "minimize", st->objnames[k]);
  const slS_Trial *b = st->nobj == 1 ? slS_best(st) : NULL;
  if (b) {
    char v[32];
    sl_format_number(b->values[0], v, sizeof v);
    sl_Value params = slS_params_record(st, b);
    char *ps = sl_tostring(params);
    sl_release(params);
    snprintf(out + used, used < size ? size - used : 0, "; best: trial %d, %s %s, %s", b->number, st->objnames[0], v,
             ps);
    free(ps);
  }
}

static int study_show(void *data, sl_Bundle *out) {
  slS_Study *st = data;
  char head[1024];
  headline(st, head, sizeof head);
  sl_Value tv = slS_trials_table(st);
  slT_Table *t = slT_from(tv);
  char *text = slT_to_text(t), *md = slT_to_markdown(t), *html = slT_to_html(t);
  sl_bundle_addf(out, "text/plain", "%s\n%s", head, text);
  sl_bundle_addf(out, "text/markdown", "**%s**\n\n%s", head, md);
  sl_bundle_addf(out, "text/html", "<p><b>%s</b></p>\n%s", head, html);
  free(text), free(md), free(html);
  sl_release(tv);
  return 0;
}

static int study_field(void *data, const char *name, sl_Value *out) {
  slS_Study *st = data;
  int c[4];
  count_states(st, c);
  const slS_Trial *b = st->nobj == 1 ? slS_best(st) : NULL;
  if (strcmp(name, "trials") == 0) return *out = slS_trials_table(st), 0;
  if (strcmp(name, "running_best") == 0) return *out = slS_running_best(st), 0;
  if (strcmp(name, "pareto") == 0) return *out = slS_pareto_table(st), 0;
  if (strcmp(name, "best_value") == 0) return *out = b ? sl_number(b->values[0]) : sl_nil(), 0;
  if (strcmp(name, "best_params") == 0) return *out = b ? slS_params_record(st, b) : sl_nil(), 0;
  if (strcmp(name, "best_trial") == 0) return *out = b ? sl_number(b->number) : sl_nil(), 0;
  if (strcmp(name, "best") == 0) {
    if (!b) return *out = sl_nil(), 0;
    *out = sl_record_new();
    sl_record_set(*out, "number", sl_number(b->number));
    sl_record_set(*out, "value", sl_number(b->values[0]));
    sl_record_set(*out, "params", slS_params_record(st, b));
    sl_record_set(*out, "seconds", sl_number(b->seconds));
    return 0;
  }
  if (strcmp(name, "n") == 0) return *out = sl_number(st->ntrials), 0;
  if (strcmp(name, "complete") == 0) return *out = sl_number(c[SLS_COMPLETE]), 0;
  if (strcmp(name, "pruned") == 0) return *out = sl_number(c[SLS_PRUNED]), 0;
  if (strcmp(name, "failed") == 0) return *out = sl_number(c[SLS_FAILED]), 0;
  if (strcmp(name, "sampler") == 0) return *out = sl_string(st->sampler->name), 0;
  if (strcmp(name, "seconds") == 0) return *out = sl_number(st->seconds), 0;
  if (strcmp(name, "elapsed") == 0) return *out = sl_number(st->elapsed), 0;
  if (strcmp(name, "space") == 0) {
    *out = sl_record_new();
    for (int p = 0; p < st->nspace; p++) {
      char d[512];
      slS_dist_describe(&st->space[p].dist, d, sizeof d);
      sl_record_set(*out, st->space[p].name, sl_string(d));
    }
    return 0;
  }
  return -1;
}

static const char *const study_fields[] = {
    "trials",   "running_best", "pareto", "best",    "best_value", "best_params", "best_trial", "n",
    "complete", "pruned",       "failed", "sampler", "seconds",    "elapsed",     "space",      NULL};

const sl_Class slS_study_class = {
    .name = "study", .free = study_free, .show = study_show, .field = study_field, .fields = study_fields};
