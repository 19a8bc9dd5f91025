/*
** grid.c - the grid sampler, Optuna's GridSampler(grid, seed) (numerics
** §6.2): the names sorted, their product with the last name varying
** fastest, shuffled once with RandomState(seed); trial t takes point t.
**
** The grid comes from search's name=[values] keywords. A trial numbered
** past the grid (a journal holding more trials than the grid) takes a
** random unvisited point, drawn from the unvisited ids in ascending order
** (decision 9: Optuna uses Python-set order), or re-runs a random point
** when none is left. A trial's point is its grid_id, which the journal
** keeps; its values are the grid's at that point, so a grid draws nothing
** per parameter.
*/
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "search.h"

typedef struct {
  int n;
  char (*names)[SLS_NAME_MAX]; /* sorted */
  sl_Value *values;            /* their lists (owned) */
  size_t size;                 /* points */
  size_t *order;               /* the shuffled order of the points */
} Grid;

static void grid_free(void *state) {
  Grid *g = state;
  for (int i = 0; i < g->n; i++) sl_release(g->values[i]);
  free(g->names);
  free(g->values);
  free(g->order);
}

/* the lists by sorted name, each a non-empty list, within the memory budget */
static int take_grid(slS_Study *st, size_t n, const char *const *names, const sl_Value *values, char *err,
                     size_t errlen) {
  Grid *g = st->state;
  if (n == 0)
    return snprintf(err, errlen,
                    "a grid search needs its grid: name=[values] for every suggested name, e.g. width=[64, 128]"),
           -1;
  grid_free(g); /* a grid given before */
  memset(g, 0, sizeof *g);
  g->n = (int)n;
  g->names = calloc(n, sizeof *g->names);
  g->values = calloc(n, sizeof *g->values);
  size_t *order = malloc(n * sizeof *order);
  for (size_t i = 0; i < n; i++) order[i] = i;
  for (size_t i = 1; i < n; i++) /* names sorted, as Optuna sorts them */
    for (size_t j = i; j > 0 && strcmp(names[order[j - 1]], names[order[j]]) > 0; j--) {
      size_t tmp = order[j];
      order[j] = order[j - 1];
      order[j - 1] = tmp;
    }
  for (size_t i = 0; i < n; i++) {
    sl_Value v = values[order[i]];
    snprintf(g->names[i], SLS_NAME_MAX, "%s", names[order[i]]);
    g->values[i] = v;
    sl_retain(v);
    if (v.type != SL_LIST || sl_list_len(v) == 0) {
      snprintf(err, errlen, "the grid's %s must be a non-empty list of values", names[order[i]]);
      free(order);
      return -1;
    }
  }
  free(order);
  /* the sampler keeps every point's index twice (its order and a scratch list) */
  double points = 1;
  for (size_t i = 0; i < n; i++) points *= (double)sl_list_len(g->values[i]);
  char what[160], msg[512];
  snprintf(what, sizeof what, "the grid's %.0f points (x %zu bytes per point)", points, 2 * sizeof(size_t));
  if (sl_memory_exceeds(points * 2 * (double)sizeof(size_t), what, msg, sizeof msg))
    return snprintf(err, errlen, "%s: choose smaller sizes", msg), -1;
  return 0;
}

static void grid_init(slS_Study *st) {
  Grid *g = st->state;
  g->size = 1;
  for (int i = 0; i < g->n; i++) g->size *= sl_list_len(g->values[i]);
  g->order = malloc((g->size ? g->size : 1) * sizeof *g->order);
  for (size_t i = 0; i < g->size; i++) g->order[i] = i;
  slM_mt_shuffle(&st->rng, g->order, g->size);
}

static size_t grid_points(const slS_Study *st) { return ((const Grid *)st->state)->size; }

static int visited(const slS_Study *st, long id, const slS_Trial *except) {
  for (int i = 0; i < st->ntrials; i++) {
    const slS_Trial *t = &st->trials[i];
    if (t != except && t->grid_id == id) return 1; /* finished, or running (one worker: only `except`) */
  }
  return 0;
}

static void grid_before(slS_Study *st, slS_Trial *t) {
  const Grid *g = st->state;
  if ((size_t)t->number < g->size) {
    t->grid_id = t->number;
    return;
  }
  /* a trial past the grid's size (a resumed study): a random unvisited point, in ascending order */
  size_t n = 0;
  long *ids = malloc((g->size ? g->size : 1) * sizeof *ids);
  for (size_t id = 0; id < g->size; id++)
    if (!visited(st, (long)id, t)) ids[n++] = (long)id;
  if (n == 0)
    for (size_t id = 0; id < g->size; id++) ids[n++] = (long)id; /* all visited: re-evaluate one */
  t->grid_id = n ? ids[slM_mt_interval(&st->rng, (uint32_t)(n - 1))] : 0;
  free(ids);
}

/* the grid's value for a name at the trial's point, as the lists hold it (borrowed), or nil */
static sl_Value grid_value(const Grid *g, const slS_Trial *t, const char *name) {
  if (t->grid_id < 0 || g->size == 0) return sl_nil();
  size_t point = g->order[t->grid_id];
  for (int i = g->n; i-- > 0;) { /* the last name varies fastest */
    size_t len = sl_list_len(g->values[i]);
    if (strcmp(g->names[i], name) == 0) return sl_list_get(g->values[i], point % len);
    point /= len;
  }
  return sl_nil();
}

static int grid_sample(slS_Study *st, slS_Trial *t, int p, double *internal, char *err, size_t errlen) {
  const Grid *g = st->state;
  const slS_Param *param = &st->space[p];
  int in_grid = 0;
  for (int i = 0; i < g->n; i++) in_grid |= strcmp(g->names[i], param->name) == 0;
  if (!in_grid) {
    size_t used = (size_t)snprintf(err, errlen, "'%s' is not in the grid; the grid names ", param->name);
    for (int i = 0; i < g->n; i++)
      used += (size_t)snprintf(err + used, used < errlen ? errlen - used : 0, "%s%s", i ? ", " : "", g->names[i]);
    return -1;
  }
  sl_Value v = grid_value(g, t, param->name);
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

/* the journal's "grid": each name's list */
static sl_Value grid_header(const slS_Study *st) {
  const Grid *g = st->state;
  sl_Value r = sl_record_new();
  for (int i = 0; i < g->n; i++) {
    sl_retain(g->values[i]);
    sl_record_set(r, g->names[i], g->values[i]);
  }
  return r;
}

const slS_Sampler slS_grid_sampler = {
    .name = "grid",
    .title = "grid",
    .help = "name=[values] for every suggested name",
    .flags = SLS_EXACT,
    .size = sizeof(Grid),
    .extras = "a grid",
    .take_extras = take_grid,
    .init = grid_init,
    .before = grid_before,
    .sample = grid_sample,
    .points = grid_points,
    .header = grid_header,
    .free = grid_free,
};
