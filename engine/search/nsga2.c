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
** list, so a resumed study (journal) continues exactly. The draws are not
** numpy's in Optuna's order, so the trials are NSGA-II's but not Optuna's.
*/
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "search.h"

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

static const slS_Study *cmp_study;
static int cmp_obj;
static const double *cmp_dist;
static int by_objective(const void *a, const void *b) {
  const slS_Trial *x = &cmp_study->trials[*(const int *)a], *y = &cmp_study->trials[*(const int *)b];
  double u = x->values[cmp_obj], v = y->values[cmp_obj];
  if (u != v) return u < v ? -1 : 1;
  return (x->number > y->number) - (x->number < y->number);
}
static int by_crowding(const void *a, const void *b) {  /* larger distance first */
  int i = *(const int *)a, j = *(const int *)b;
  if (cmp_dist[i] != cmp_dist[j]) return cmp_dist[i] > cmp_dist[j] ? -1 : 1;
  return (i > j) - (i < j);
}

/* the elite of pool[0..n): the best `keep` by front, then crowding distance */
static int elite(const slS_Study *st, int *pool, int n, int keep) {
  int *rank = malloc((size_t)n * sizeof *rank), *out = malloc((size_t)n * sizeof *out), nout = 0;
  for (int i = 0; i < n; i++) rank[i] = -1;
  for (int front = 0; nout < keep && nout < n; front++) {
    int *members = malloc((size_t)n * sizeof *members), m = 0;
    for (int i = 0; i < n; i++) {
      if (rank[i] >= 0) continue;
      int dominated = 0;
      for (int j = 0; j < n && !dominated; j++)
        dominated = j != i && rank[j] < 0 && dominates(st, &st->trials[pool[j]], &st->trials[pool[i]]);
      if (!dominated) members[m++] = i;
    }
    for (int i = 0; i < m; i++) rank[members[i]] = front;
    if (nout + m > keep) {  /* the front that does not fit: by crowding distance */
      double *dist = calloc((size_t)st->ntrials, sizeof *dist);
      int *ids = malloc((size_t)m * sizeof *ids);
      for (int i = 0; i < m; i++) ids[i] = pool[members[i]];
      cmp_study = st;
      for (int k = 0; k < st->nobj; k++) {
        cmp_obj = k;
        qsort(ids, (size_t)m, sizeof *ids, by_objective);
        double width = st->trials[ids[m - 1]].values[k] - st->trials[ids[0]].values[k];
        if (width == 0) continue;
        dist[ids[0]] = dist[ids[m - 1]] = INFINITY;
        for (int j = 1; j < m - 1; j++)
          dist[ids[j]] += (st->trials[ids[j + 1]].values[k] - st->trials[ids[j - 1]].values[k]) / width;
      }
      cmp_dist = dist;
      qsort(ids, (size_t)m, sizeof *ids, by_crowding);
      for (int i = 0; nout < keep; i++) out[nout++] = ids[i];
      free(dist);
      free(ids);
    } else {
      for (int i = 0; i < m; i++) out[nout++] = pool[members[i]];
    }
    free(members);
    if (m == 0) break;
  }
  memcpy(pool, out, (size_t)nout * sizeof *pool);
  free(rank);
  free(out);
  return nout;
}

/* the parents of the generation trial `number` belongs to; returns their count (0: first generation) */
static int parents_of(const slS_Study *st, int number, int *parents) {
  int np_ = 0, P = st->population;
  int *gen = malloc(((size_t)st->ntrials + (size_t)P) * sizeof *gen + 1), ng = 0, complete = 0;
  for (int i = 0; i < number && i < st->ntrials; i++) {
    const slS_Trial *t = &st->trials[i];
    if (t->state != SLS_COMPLETE) continue;
    gen[ng++] = i;
    if (++complete == P) {  /* the generation is complete: select the next parents */
      int *pool = malloc((size_t)(np_ + ng) * sizeof *pool);
      memcpy(pool, parents, (size_t)np_ * sizeof *pool);
      memcpy(pool + np_, gen, (size_t)ng * sizeof *pool);
      np_ = elite(st, pool, np_ + ng, P);
      memcpy(parents, pool, (size_t)np_ * sizeof *parents);
      free(pool);
      ng = complete = 0;
    }
  }
  free(gen);
  return np_;
}

static int tournament(const slS_Study *st, const int *parents, int n) {
  int a = parents[slM_mt_interval((slM_Mt *)&st->rng, (uint32_t)(n - 1))];
  int b = parents[slM_mt_interval((slM_Mt *)&st->rng, (uint32_t)(n - 1))];
  if (dominates(st, &st->trials[b], &st->trials[a])) return b;
  return a;
}

static void make_child(slS_Study *st, int number) {
  st->child_for = number;
  st->nchild = 0;
  int *parents = malloc(((size_t)st->ntrials + 1) * sizeof *parents + (size_t)st->population * sizeof *parents);
  int n = parents_of(st, number, parents);
  if (n == 0 || st->nspace == 0) {
    free(parents);
    return;
  }
  free(st->child_param);
  free(st->child_value);
  st->child_param = malloc((size_t)st->nspace * sizeof *st->child_param);
  st->child_value = malloc((size_t)st->nspace * sizeof *st->child_value);
  int p0 = tournament(st, parents, n), p1 = p0;
  int crossover = slM_mt_double(&st->rng) < st->crossover_prob;
  if (crossover && n > 1)
    for (int tries = 0; tries < 8 && p1 == p0; tries++) p1 = tournament(st, parents, n);
  const slS_Trial *a = &st->trials[p0], *b = &st->trials[p1];
  for (int p = 0; p < st->nspace; p++) {  /* the parameters both parents have */
    double va, vb;
    if (!slS_trial_param(a, p, &va) || !slS_trial_param(b, p, &vb)) continue;
    double v = crossover && slM_mt_double(&st->rng) < st->swapping_prob ? vb : va;
    st->child_param[st->nchild] = p;
    st->child_value[st->nchild++] = v;
  }
  double mutation = st->mutation_prob >= 0 ? st->mutation_prob : 1.0 / fmax(1.0, st->nchild);
  int kept = 0;
  for (int i = 0; i < st->nchild; i++)
    if (slM_mt_double(&st->rng) >= mutation) {
      st->child_param[kept] = st->child_param[i];
      st->child_value[kept++] = st->child_value[i];
    }
  st->nchild = kept;
  free(parents);
}

double slS_nsga2_sample(slS_Study *st, slS_Trial *t, int p) {
  if (st->child_for != t->number) make_child(st, t->number);
  for (int i = 0; i < st->nchild; i++)
    if (st->child_param[i] == p) return st->child_value[i];
  return slS_random_draw(&st->rng2, &st->space[p].dist);  /* first generation, mutated, or new */
}
