/*
** nsga2.c - NSGA-II, Optuna's default sampler for several objectives
** (Deb et al. 2002, as Optuna 4.2's NSGAIISampler runs it).
**
** Trials come in generations of `population` complete trials. The first
** generation is random (the inner RandomSampler(seed), as in Optuna).
** When a generation is complete, the parents of the next are chosen from
** the old parents and the new trials together: fronts by non-dominated
** sorting, the last front that fits cut by crowding distance. A child takes
** two parents, each the winner of a binary tournament (by dominance), mixes
** them by uniform crossover (probability 0.9; each parameter swapped with
** probability 0.5) and mutates: each parameter is dropped with probability
** 1/n and drawn anew at random. Generations are recomputed from the trial
** list, so a resumed study (journal) continues exactly.
**
** Every draw follows Optuna 4.2's NSGAIISampler in its order, on the
** sampler's own RandomState(seed) (the inner random sampler has another):
** one uniform for crossover or not; with crossover, two tournaments (two
** choices each, the second among the parents without the first winner;
** the first candidate wins only if it dominates), one uniform per
** categorical then per numerical parameter of the relative search space
** (the parameters of every complete trial, by name, single-valued ones
** left out), repeated while the child leaves the space; without, one
** choice of a parent; then one uniform per child parameter for mutation.
** The elite keeps Optuna's order: fronts in population order (the new
** generation, then the old parents), the front that does not fit sorted
** by crowding distance as Optuna sorts it (stable sorts per objective,
** then by distance, reversed). So the same seed gives Optuna's trials.
*/
#include <math.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "search.h"

/* Optuna's defaults, which search does not change; the mutation
** probability is 1 / (the parameters of the relative space) */
#define CROSSOVER_PROB 0.9
#define SWAPPING_PROB 0.5

typedef struct {
  int population;
  int child_for; /* the trial the child below was made for */
  int nchild;
  int *child_param; /* its parameters (in the space) and values */
  double *child_value;
} Nsga2;

/* values in minimisation form */
static void loss(const slS_Study *st, const slS_Trial *t, double *v) {
  for (int k = 0; k < st->nobj; k++) v[k] = st->maximize[k] ? -t->values[k] : t->values[k];
}

static int dominates(const slS_Study *st, const slS_Trial *a, const slS_Trial *b) {
  double x[SLS_MAX_OBJECTIVES], y[SLS_MAX_OBJECTIVES];
  loss(st, a, x);
  loss(st, b, y);
  int strictly = 0;
  for (int k = 0; k < st->nobj; k++) {
    if (x[k] > y[k]) return 0;
    if (x[k] < y[k]) strictly = 1;
  }
  return strictly;
}

/* Python's list.sort (stable) by a key, for the few hundred trials of a front */
static void stable_sort(int *ids, int n, const double *key) {
  for (int i = 1; i < n; i++) { /* insertion sort: stable */
    int x = ids[i], j = i - 1;
    while (j >= 0 && key[ids[j]] > key[x]) ids[j + 1] = ids[j], j--;
    ids[j + 1] = x;
  }
}

/* Optuna's _crowding_distance_sort of the front ids[0..m), in place */
static void crowding_sort(const slS_Study *st, int *ids, int m) {
  double *dist = calloc((size_t)st->ntrials, sizeof *dist), *key = malloc((size_t)st->ntrials * sizeof *key);
  for (int k = 0; k < st->nobj; k++) {
    for (int i = 0; i < m; i++) key[ids[i]] = st->trials[ids[i]].values[k];
    stable_sort(ids, m, key); /* each objective sorts the order the previous one left */
    double first = key[ids[0]], last = key[ids[m - 1]];
    if (first == last) continue;
    double vmin = first, vmax = last; /* the extreme finite values */
    for (int i = 0; i < m && vmin == -INFINITY; i++) vmin = key[ids[i]];
    for (int i = m - 1; i >= 0 && vmax == INFINITY; i--) vmax = key[ids[i]];
    double width = vmax - vmin;
    if (!(width > 0)) width = 1.0;
    for (int j = 0; j < m; j++) {
      double lo = j > 0 ? key[ids[j - 1]] : -INFINITY, hi = j < m - 1 ? key[ids[j + 1]] : INFINITY;
      dist[ids[j]] += (lo == hi ? 0.0 : hi - lo) / width;
    }
  }
  stable_sort(ids, m, dist);
  for (int i = 0; i < m / 2; i++) { /* then reversed: the largest distance first, ties in reverse */
    int t = ids[i];
    ids[i] = ids[m - 1 - i], ids[m - 1 - i] = t;
  }
  free(dist);
  free(key);
}

/* the elite of pool[0..n): fronts in pool order while they fit below
** `keep`, then the first front that reaches it by crowding distance */
static int elite(const slS_Study *st, int *pool, int n, int keep) {
  int *rank = malloc((size_t)n * sizeof *rank), *out = malloc((size_t)n * sizeof *out), nout = 0;
  int *members = malloc((size_t)n * sizeof *members);
  for (int i = 0; i < n; i++) rank[i] = -1;
  for (int front = 0; nout < keep; front++) {
    int m = 0;
    for (int i = 0; i < n; i++) {
      if (rank[i] >= 0) continue;
      int dominated = 0;
      for (int j = 0; j < n && !dominated; j++)
        dominated = j != i && rank[j] < 0 && dominates(st, &st->trials[pool[j]], &st->trials[pool[i]]);
      if (!dominated) members[m++] = i;
    }
    if (m == 0) break;
    for (int i = 0; i < m; i++) rank[members[i]] = front, members[i] = pool[members[i]];
    if (nout + m < keep) {
      memcpy(out + nout, members, (size_t)m * sizeof *out);
      nout += m;
    } else {
      crowding_sort(st, members, m);
      for (int i = 0; nout < keep; i++) out[nout++] = members[i];
    }
  }
  memcpy(pool, out, (size_t)nout * sizeof *pool);
  free(rank);
  free(out);
  free(members);
  return nout;
}

/* the parents of the generation trial `number` belongs to; returns their count (0: first generation) */
static int parents_of(const slS_Study *st, int number, int *parents) {
  int np_ = 0, P = ((const Nsga2 *)st->state)->population;
  int *gen = malloc(((size_t)st->ntrials + (size_t)P) * sizeof *gen + 1), ng = 0, complete = 0;
  for (int i = 0; i < number && i < st->ntrials; i++) {
    const slS_Trial *t = &st->trials[i];
    if (t->state != SLS_COMPLETE) continue;
    gen[ng++] = i;
    if (++complete == P) {                                   /* the generation is complete: select the next parents */
      int *pool = malloc((size_t)(np_ + ng) * sizeof *pool); /* the new generation, then the old parents */
      memcpy(pool, gen, (size_t)ng * sizeof *pool);
      memcpy(pool + ng, parents, (size_t)np_ * sizeof *pool);
      np_ = elite(st, pool, np_ + ng, P);
      memcpy(parents, pool, (size_t)np_ * sizeof *parents);
      free(pool);
      ng = complete = 0;
    }
  }
  free(gen);
  return np_;
}

/* Optuna's _select_parent: two choices from pool[0..n); the first wins only if it dominates */
static int tournament(slS_Study *st, const int *pool, int n) {
  int a = pool[slM_mt_interval(&st->rng, (uint32_t)(n - 1))];
  int b = pool[slM_mt_interval(&st->rng, (uint32_t)(n - 1))];
  return dominates(st, &st->trials[a], &st->trials[b]) ? a : b;
}

static int single(const slS_Dist *d) {
  if (d->kind == SLS_CATEGORICAL) return d->nchoices == 1;
  if (d->low == d->high) return 1;
  return d->step > 0 && !(d->kind == SLS_INT && d->log) && d->high - d->low < d->step;
}

static const slS_Study *name_study;
static int by_name(const void *a, const void *b) {
  return strcmp(name_study->space[*(const int *)a].name, name_study->space[*(const int *)b].name);
}

/* Optuna's relative search space: the parameters every complete trial has,
** not single-valued, by name */
static int relative_space(slS_Study *st, int *out) {
  int n = 0;
  for (int p = 0; p < st->nspace; p++) {
    if (single(&st->space[p].dist)) continue;
    int everywhere = 1, any = 0;
    for (int i = 0; i < st->ntrials && everywhere; i++) {
      double v;
      if (st->trials[i].state != SLS_COMPLETE) continue;
      any = 1;
      everywhere = slS_trial_param(&st->trials[i], p, &v);
    }
    if (any && everywhere) out[n++] = p;
  }
  name_study = st;
  qsort(out, (size_t)n, sizeof *out, by_name);
  return n;
}

/* a parent's value through _SearchSpaceTransform and back: log scales pass
** through log and exp, continuous floats stay below high */
static double round_trip(const slS_Dist *d, double v) {
  if (d->kind == SLS_CATEGORICAL) return v;
  if (d->kind == SLS_FLOAT) {
    if (d->log) return fmin(exp(log(v)), nextafter(d->high, -INFINITY));
    if (d->step > 0) {
      double x = rint((v - d->low) / d->step) * d->step + d->low;
      return x < d->low ? d->low : x > d->high ? d->high : x;
    }
    return fmin(v, nextafter(d->high, -INFINITY));
  }
  double x = d->log ? rint(exp(log(v))) : rint((v - d->low) / d->step) * d->step + d->low;
  return x < d->low ? d->low : x > d->high ? d->high : x;
}

/* Optuna's distribution _contains */
static int contains(const slS_Dist *d, double v) {
  if (d->kind == SLS_CATEGORICAL) return 1;
  if (!(d->low <= v && v <= d->high)) return 0;
  if (d->step <= 0 || (d->kind == SLS_INT && d->log)) return 1;
  double k = (v - d->low) / d->step;
  return fabs(k - rint(k)) < 1.0e-8;
}

static void make_child(slS_Study *st, int number) {
  Nsga2 *nsga = st->state;
  nsga->child_for = number;
  nsga->nchild = 0;
  int *parents = malloc(((size_t)st->ntrials + 1) * sizeof *parents + (size_t)nsga->population * sizeof *parents);
  int n = parents_of(st, number, parents);
  int *space = malloc(((size_t)st->nspace + 1) * sizeof *space), ns = relative_space(st, space);
  if (n == 0 || ns == 0) {
    free(parents);
    free(space);
    return;
  }
  free(nsga->child_param);
  free(nsga->child_value);
  nsga->child_param = malloc((size_t)ns * sizeof *nsga->child_param);
  nsga->child_value = malloc((size_t)ns * sizeof *nsga->child_value);
  /* categorical parameters first, then numerical, as the child's dict is built */
  int *order = malloc((size_t)ns * sizeof *order), no = 0;
  for (int pass = 0; pass < 2; pass++)
    for (int i = 0; i < ns; i++)
      if ((st->space[space[i]].dist.kind == SLS_CATEGORICAL) == (pass == 0)) order[no++] = space[i];
  if (slM_mt_double(&st->rng) < CROSSOVER_PROB) {
    int *rest = malloc((size_t)n * sizeof *rest);
    for (int ok = 0; !ok;) { /* again while the child leaves the space */
      int p0 = tournament(st, parents, n), m = 0;
      for (int i = 0; i < n; i++)
        if (parents[i] != p0) rest[m++] = parents[i];
      int p1 = m > 0 ? tournament(st, rest, m) : p0;
      ok = 1;
      for (int i = 0; i < no; i++) { /* one uniform per categorical, then per numerical */
        const slS_Dist *d = &st->space[order[i]].dist;
        double v;
        slS_trial_param(&st->trials[slM_mt_double(&st->rng) >= SWAPPING_PROB ? p1 : p0], order[i], &v);
        v = round_trip(d, v);
        ok &= contains(d, v);
        nsga->child_param[i] = order[i];
        nsga->child_value[i] = v;
      }
    }
    free(rest);
  } else {
    int parent = parents[slM_mt_interval(&st->rng, (uint32_t)(n - 1))];
    for (int i = 0; i < ns; i++) { /* the parent's own values, by name */
      nsga->child_param[i] = space[i];
      slS_trial_param(&st->trials[parent], space[i], &nsga->child_value[i]);
    }
  }
  nsga->nchild = ns;
  double mutation = 1.0 / fmax(1.0, ns);
  int kept = 0;
  for (int i = 0; i < nsga->nchild; i++)
    if (slM_mt_double(&st->rng) >= mutation) {
      nsga->child_param[kept] = nsga->child_param[i];
      nsga->child_value[kept++] = nsga->child_value[i];
    }
  nsga->nchild = kept;
  free(order);
  free(space);
  free(parents);
}

/* ----------------------------------------------------------- the sampler */

static int nsga2_sample(slS_Study *st, slS_Trial *t, int p, double *internal, char *err, size_t errlen) {
  Nsga2 *nsga = st->state;
  if (nsga->child_for != t->number) make_child(st, t->number);
  for (int i = 0; i < nsga->nchild; i++)
    if (nsga->child_param[i] == p) return *internal = nsga->child_value[i], 0;
  *internal = slS_random_draw(&st->rng2, &st->space[p].dist); /* first generation, mutated, or new */
  return 0;
}

static void nsga2_init(slS_Study *st) { ((Nsga2 *)st->state)->child_for = -1; }

static void nsga2_free(void *state) {
  Nsga2 *nsga = state;
  free(nsga->child_param);
  free(nsga->child_value);
}

static const slS_Option nsga2_options[] = {
    {"population", "50", 2, 1e5, "population size", offsetof(Nsga2, population)},
    {NULL},
};

const slS_Sampler slS_nsga2_sampler = {
    .name = "nsga2",
    .title = "NSGA-II",
    .flags = SLS_LEARNS | SLS_AUTO_MANY,
    .options = nsga2_options,
    .size = sizeof(Nsga2),
    .init = nsga2_init,
    .sample = nsga2_sample,
    .free = nsga2_free,
};
