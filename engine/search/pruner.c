/*
** pruner.c - the median pruner (numerics §6.5: Optuna's PercentilePruner
** at 50), deciding after each intermediate report whether a trial stops.
**
** The percentile is numpy's nanpercentile with linear interpolation,
** including its two-sided lerp, so that decisions at ties equal Optuna's.
*/
#include <math.h>
#include <stdlib.h>

#include "search.h"

static int cmp_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

/* nan-aware linear-interpolation percentile (numpy nanpercentile) of x[0..n) */
static double percentile(double *x, int n, double q) {
  int m = 0;
  for (int i = 0; i < n; i++)
    if (!isnan(x[i])) x[m++] = x[i];
  if (m == 0) return NAN;
  qsort(x, (size_t)m, sizeof *x, cmp_double);
  double quantile = q / 100;
  double virt = (double)m * quantile + (1 + quantile * (1 - 1 - 1)) - 1; /* numpy's method "linear" */
  double lo = floor(virt);
  if (lo < 0) return x[0];
  if (lo >= m - 1) return x[m - 1];
  double t = virt - lo, a = x[(int)lo], b = x[(int)lo + 1], diff = b - a;
  return t >= 0.5 ? b - diff * (1 - t) : a + diff * t;
}

static int has_step(const slS_Trial *t, int step, double *value) {
  for (int i = 0; i < t->ninter; i++)
    if (t->steps[i] == step) {
      if (value) *value = t->inter[i];
      return 1;
    }
  return 0;
}

int slS_should_prune(const slS_Study *st, const slS_Trial *t) {
  if (st->pruner != SLS_MEDIAN || st->nobj != 1) return 0;
  int completed = 0;
  for (int i = 0; i < st->ntrials; i++) completed += st->trials[i].state == SLS_COMPLETE;
  if (completed == 0 || completed < st->prune_startup || t->ninter == 0) return 0;
  int step = t->steps[0];
  for (int i = 1; i < t->ninter; i++)
    if (t->steps[i] > step) step = t->steps[i];
  int warmup = st->prune_warmup, interval = st->prune_interval;
  if (step < warmup) return 0;
  int boundary = (step - warmup) / interval * interval + warmup, second_last = -1;
  for (int i = 0; i < t->ninter; i++)
    if (t->steps[i] > second_last && t->steps[i] != step) second_last = t->steps[i];
  if (second_last >= boundary) return 0;
  int maximize = st->maximize[0];
  double best = NAN;
  for (int i = 0; i < t->ninter; i++)
    if (!isnan(t->inter[i]) && (isnan(best) || (maximize ? t->inter[i] > best : t->inter[i] < best)))
      best = t->inter[i];
  if (isnan(best)) return 1;
  double *at = malloc((size_t)st->ntrials * sizeof *at + 1);
  int n = 0;
  for (int i = 0; i < st->ntrials; i++)
    if (st->trials[i].state == SLS_COMPLETE && has_step(&st->trials[i], step, &at[n])) n++;
  double p = n < st->prune_min_trials ? NAN : percentile(at, n, maximize ? 100 - 50 : 50);
  free(at);
  if (isnan(p)) return 0;
  return maximize ? best < p : best > p;
}
