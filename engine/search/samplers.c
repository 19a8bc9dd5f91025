/*
** samplers.c - the table of samplers, and what every sampler goes through:
** its options, the streams it starts from, and the dispatch of every trial
** and every suggestion (numerics §6.2, §6.3).
**
** A sampler is its record (search.h) and its file: random.c, grid.c,
** tpe.c, nsga2.c. Nothing outside its file reads its state; the study
** holds it as st->state, made here with its options at their defaults.
** Both MT19937 streams are seeded with the study's seed (numpy's
** RandomState(seed), as Optuna seeds its sampler and the inner random
** sampler of TPE and NSGA-II), and a parameter with one possible value is
** returned without asking the sampler, as Optuna does.
*/
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "search.h"

const slS_Sampler *const slS_samplers[] = {&slS_random_sampler, &slS_grid_sampler, &slS_tpe_sampler, &slS_nsga2_sampler,
                                           NULL};

const slS_Sampler *slS_sampler_find(const char *name) {
  for (int i = 0; slS_samplers[i]; i++)
    if (strcmp(slS_samplers[i]->name, name) == 0) return slS_samplers[i];
  return NULL;
}

const slS_Sampler *slS_sampler_auto(int nobj) {
  unsigned want = nobj > 1 ? SLS_AUTO_MANY : SLS_AUTO_ONE;
  for (int i = 0; slS_samplers[i]; i++)
    if (slS_samplers[i]->flags & want) return slS_samplers[i];
  return &slS_random_sampler;
}

/* ---------------------------------------------------------------- options */

static int *option_at(void *state, const slS_Option *o) { return (int *)((char *)state + o->offset); }

int slS_sampler_option_value(const slS_Study *st, const slS_Option *o) { return *option_at(st->state, o); }

void slS_sampler_use(slS_Study *st, const slS_Sampler *s) {
  if (st->sampler && st->sampler->free) st->sampler->free(st->state);
  free(st->state);
  st->sampler = s;
  st->state = s->size ? calloc(1, s->size) : NULL;
  for (const slS_Option *o = s->options; o && o->name; o++) *option_at(st->state, o) = atoi(o->defval);
}

int slS_sampler_option(slS_Study *st, const char *name, double v, char *err, size_t errlen) {
  for (const slS_Option *o = st->sampler->options; o && o->name; o++) {
    if (strcmp(o->name, name) != 0) continue;
    if (!(v >= o->lo && v <= o->hi) || v != floor(v))
      return snprintf(err, errlen, "%s must be a whole number between %.0f and %.0f, got %.9g", name, o->lo, o->hi, v),
             -1;
    *option_at(st->state, o) = (int)v;
    return 0;
  }
  return snprintf(err, errlen, "the %s sampler has no option %s", st->sampler->name, name), -1;
}

int slS_sampler_extras(slS_Study *st, size_t n, const char *const *names, const sl_Value *values, char *err,
                       size_t errlen) {
  if (st->sampler->take_extras) return st->sampler->take_extras(st, n, names, values, err, errlen);
  if (n == 0) return 0;
  const slS_Sampler *taker = NULL;
  for (int i = 0; slS_samplers[i] && !taker; i++)
    if (slS_samplers[i]->take_extras) taker = slS_samplers[i];
  if (taker)
    snprintf(err, errlen, "%s=[...] names %s, which only sampler=%s takes", names[0], taker->extras, taker->name);
  else snprintf(err, errlen, "%s=[...] is not an option of search", names[0]);
  return -1;
}

/* --------------------------------------------------------------- dispatch */

void slS_sampler_init(slS_Study *st) {
  slM_mt_seed(&st->rng, st->seed);
  slM_mt_seed(&st->rng2, st->seed);
  if (st->sampler->init) st->sampler->init(st);
}

void slS_before_trial(slS_Study *st, slS_Trial *t) {
  if (st->sampler->before) st->sampler->before(st, t);
}

int slS_sample(slS_Study *st, slS_Trial *t, int p, double *internal, char *err, size_t errlen) {
  const slS_Dist *d = &st->space[p].dist;
  if (slS_dist_single(d)) { /* Optuna takes a one-value range without asking the sampler */
    *internal = d->kind == SLS_CATEGORICAL ? 0 : d->low;
    return 0;
  }
  return st->sampler->sample(st, t, p, internal, err, errlen);
}

/* ----------------------------------------------------------------- points */

/* the points of a sampler of points that no trial has taken (finished or running) */
static size_t unvisited(const slS_Study *st) {
  size_t points = st->sampler->points(st);
  unsigned char *seen = calloc(points ? points : 1, 1);
  size_t left = points;
  for (int i = 0; i < st->ntrials; i++) {
    long id = st->trials[i].grid_id;
    if (id >= 0 && (size_t)id < points && !seen[id]) seen[id] = 1, left--;
  }
  free(seen);
  return left;
}

int slS_sampler_done(const slS_Study *st) { return st->sampler->points && unvisited(st) == 0; }

int slS_trials_planned(const slS_Study *st, int trials) {
  if (!st->sampler->points || st->ntrials >= trials) return trials;
  size_t left = unvisited(st);
  return (size_t)st->ntrials + left < (size_t)trials ? (int)((size_t)st->ntrials + left) : trials;
}
