/*
** random.c - Optuna's RandomSampler draw for one parameter (numerics
** §6.3): what the random sampler proposes, and what TPE's start-up trials
** and NSGA-II's first generation and mutations draw from their inner
** random sampler's stream.
**
** The draw goes through Optuna's search-space transform: one uniform
** double per numeric parameter on the transformed bounds (log, half-step
** padding), one per choice for a categorical (the largest wins). The
** arithmetic is written in the same order as Optuna's so the binary64
** results agree bit for bit.
**
** The random sampler's record is here too: one draw per parameter from the
** study's first stream. TPE's start-up trials and NSGA-II's first
** generation and mutations draw the same way from the second.
*/
#include <math.h>

#include "search.h"

static double clampd(double v, double lo, double hi) { return v < lo ? lo : v > hi ? hi : v; }

double slS_random_draw(slM_Mt *rng, const slS_Dist *d) {
  if (d->kind == SLS_CATEGORICAL) {
    int best = 0;
    double top = -1;
    for (int i = 0; i < d->nchoices; i++) {
      double u = slM_mt_double(rng);
      if (u > top) top = u, best = i;
    }
    return best;
  }
  double lo, hi;
  if (d->log && d->kind == SLS_INT) {
    double half = 0.5 * d->step;
    lo = log(d->low - half), hi = log(d->high + half);
  } else if (d->log) {
    lo = log(d->low), hi = log(d->high);
  } else if (d->step > 0) {
    double half = 0.5 * d->step;
    lo = d->low - half, hi = d->high + half;
  } else {
    lo = d->low, hi = d->high;
  }
  double u = lo + (hi - lo) * slM_mt_double(rng);
  if (d->kind == SLS_INT) {
    if (d->log) return clampd(rint(exp(u)), d->low, d->high);
    return clampd(rint((u - d->low) / d->step) * d->step + d->low, d->low, d->high);
  }
  if (d->log) return fmin(exp(u), nextafter(d->high, -INFINITY));
  if (d->step > 0) return clampd(rint((u - d->low) / d->step) * d->step + d->low, d->low, d->high);
  return fmin(u, nextafter(d->high, -INFINITY));
}

static int random_sample(slS_Study *st, slS_Trial *t, int p, double *internal, char *err, size_t errlen) {
  *internal = slS_random_draw(&st->rng, &st->space[p].dist);
  return 0;
}

const slS_Sampler slS_random_sampler = {
    .name = "random", .title = "random", .flags = SLS_EXACT, .sample = random_sample};
