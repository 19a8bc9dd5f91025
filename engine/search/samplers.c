/*
** samplers.c - the grid sampler, the streams every sampler starts from, and
** the dispatch every suggestion goes through (numerics §6.2, §6.3).
**
** The random sampler is one draw per parameter (random.c, which TPE and
** NSGA-II also draw from). The grid is Optuna's: names sorted, the product
** with the last name varying fastest, one legacy shuffle with
** RandomState(seed).
*/
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "search.h"

/* ------------------------------------------------------------------ grid */

void slS_sampler_init(slS_Study *st) {
  slM_mt_seed(&st->rng, st->seed);
  slM_mt_seed(&st->rng2, st->seed);
  if (st->sampler != SLS_GRID) return;
  st->grid_size = 1;
  for (int i = 0; i < st->ngrid; i++) st->grid_size *= sl_list_len(st->grid_values[i]);
  st->grid_order = malloc((st->grid_size ? st->grid_size : 1) * sizeof *st->grid_order);
  for (size_t i = 0; i < st->grid_size; i++) st->grid_order[i] = i;
  slM_mt_shuffle(&st->rng, st->grid_order, st->grid_size);
}

static int visited(const slS_Study *st, long id, const slS_Trial *except) {
  for (int i = 0; i < st->ntrials; i++) {
    const slS_Trial *t = &st->trials[i];
    if (t != except && t->grid_id == id) return 1;  /* finished, or running (one worker: only `except`) */
  }
  return 0;
}

int slS_grid_exhausted(const slS_Study *st) {
  for (size_t id = 0; id < st->grid_size; id++)
    if (!visited(st, (long)id, NULL)) return 0;
  return 1;
}

int slS_trials_planned(const slS_Study *st, int trials) {
  if (st->sampler != SLS_GRID || st->ntrials >= trials) return trials;
  unsigned char *seen = calloc(st->grid_size ? st->grid_size : 1, 1);
  size_t left = st->grid_size;
  for (int i = 0; i < st->ntrials; i++) {
    long id = st->trials[i].grid_id;
    if (id >= 0 && (size_t)id < st->grid_size && !seen[id]) seen[id] = 1, left--;
  }
  free(seen);
  return (size_t)st->ntrials + left < (size_t)trials ? (int)((size_t)st->ntrials + left) : trials;
}

void slS_before_trial(slS_Study *st, slS_Trial *t) {
  if (st->sampler != SLS_GRID) return;
  if ((size_t)t->number < st->grid_size) {
    t->grid_id = t->number;
    return;
  }
  /* a trial past the grid's size (a resumed study): a random unvisited point, in ascending order */
  size_t n = 0;
  long *ids = malloc((st->grid_size ? st->grid_size : 1) * sizeof *ids);
  for (size_t id = 0; id < st->grid_size; id++)
    if (!visited(st, (long)id, t)) ids[n++] = (long)id;
  if (n == 0)
    for (size_t id = 0; id < st->grid_size; id++) ids[n++] = (long)id;  /* all visited: re-evaluate one */
  t->grid_id = n ? ids[slM_mt_interval(&st->rng, (uint32_t)(n - 1))] : 0;
  free(ids);
}

sl_Value slS_grid_value(const slS_Study *st, const slS_Trial *t, const char *name) {
  if (t->grid_id < 0 || st->grid_size == 0) return sl_nil();
  size_t point = st->grid_order[t->grid_id];
  for (int i = st->ngrid; i-- > 0;) {  /* the last name varies fastest */
    size_t len = sl_list_len(st->grid_values[i]);
    if (strcmp(st->grid_names[i], name) == 0) return sl_list_get(st->grid_values[i], point % len);
    point /= len;
  }
  return sl_nil();
}

static int grid_sample(slS_Study *st, slS_Trial *t, int p, double *internal, char *err, size_t errlen) {
  const slS_Param *param = &st->space[p];
  int in_grid = 0;
  for (int i = 0; i < st->ngrid; i++) in_grid |= strcmp(st->grid_names[i], param->name) == 0;
  if (!in_grid) {
    size_t used = (size_t)snprintf(err, errlen, "'%s' is not in the grid; the grid names ", param->name);
    for (int i = 0; i < st->ngrid; i++)
      used += (size_t)snprintf(err + used, used < errlen ? errlen - used : 0, "%s%s", i ? ", " : "", st->grid_names[i]);
    return -1;
  }
  sl_Value v = slS_grid_value(st, t, param->name);
  if (param->dist.kind == SLS_CATEGORICAL) {
    for (int i = 0; i < param->dist.nchoices; i++)
      if (sl_equal(sl_list_get(param->dist.choices, (size_t)i), v)) {
        *internal = i;
        return 0;
      }
    char *s = sl_repr(v);
    snprintf(err, errlen, "the grid gives '%s' the value %s, which is not one of its choices", param->name, s);
    free(s);
    return -1;
  }
  if (v.type != SL_NUMBER) {
    snprintf(err, errlen, "the grid gives '%s' a %s, but it is suggested as a number", param->name, sl_typename(v));
    return -1;
  }
  *internal = v.u.n;
  return 0;
}

/* -------------------------------------------------------------- dispatch */

int slS_sample(slS_Study *st, slS_Trial *t, int p, double *internal, char *err, size_t errlen) {
  const slS_Dist *d = &st->space[p].dist;
  if (slS_dist_single(d)) {  /* Optuna takes a one-value range without asking the sampler */
    *internal = d->kind == SLS_CATEGORICAL ? 0 : d->low;
    return 0;
  }
  if (st->sampler == SLS_GRID) return grid_sample(st, t, p, internal, err, errlen);
  switch (st->sampler) {
    case SLS_TPE: *internal = slS_tpe_sample(st, t, p); break;
    case SLS_NSGA2: *internal = slS_nsga2_sample(st, t, p); break;
    default: *internal = slS_random_draw(&st->rng, d); break;
  }
  return 0;
}
