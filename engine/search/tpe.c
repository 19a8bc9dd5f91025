/*
** tpe.c - the tree-structured Parzen estimator, Optuna 4.2's TPESampler
** with its defaults (numerics §6.4): independent sampling per parameter,
** prior weight 1, magic clip, no endpoints, 24 candidates, gamma(n) =
** min(ceil(0.1 n), 25), start-up trials from an inner random sampler.
**
** The code follows Optuna's parzen_estimator.py, probability_distributions.py
** and _truncnorm.py step for step, and draws from TPE's own MT19937 stream
** in the same order (the mixture component of every candidate, then the
** candidate's uniform quantile), so a suggestion usually equals Optuna's to
** the last bit; the error function comes from libm rather than Optuna's own,
** so the last bits of a density may differ (numerics §6.4, decision 10, allows it).
*/
#include <float.h>
#include <math.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "kernels/parallel.h"
#include "search.h"

#define PRIOR_WEIGHT 1.0
#define LOG_SQRT_2PI 0.91893853320467267 /* log(sqrt(2 pi)), as Optuna's _norm_pdf_logC */

/* ------------------------------------------------ the normal distribution */

static double ndtr_single(double a) {
  double x = a / sqrt(2.0);
  if (x < -1 / sqrt(2.0)) return 0.5 * erfc(-x);
  if (x < 1 / sqrt(2.0)) return 0.5 + 0.5 * erf(x);
  return 1.0 - 0.5 * erfc(x);
}

static double ndtr(double a) { return 0.5 + 0.5 * erf(a / sqrt(2.0)); }

static double log_ndtr(double a) {
  if (a > 6) return -ndtr_single(-a);
  if (a > -20) return log(ndtr_single(a));
  double log_lhs = -0.5 * a * a - log(-a) - 0.5 * log(2 * M_PI);
  double last = 0, rhs = 1, numerator = 1, denom_factor = 1, denom_cons = 1 / (a * a);
  int sign = 1;
  for (int i = 1; fabs(last - rhs) > DBL_EPSILON; i++) {
    last = rhs;
    sign = -sign;
    denom_factor *= denom_cons;
    numerator *= 2 * i - 1;
    rhs += sign * numerator * denom_factor;
  }
  return log_lhs + log(rhs);
}

static double log_diff(double p, double q) { return p + log1p(-exp(q - p)); }

static double logaddexp(double x, double y) {
  if (x == y) return x + M_LN2;
  double m = fmax(x, y);
  return m + log1p(exp(-fabs(x - y)));
}

/* log of the normal mass on [a, b] */
static double log_gauss_mass(double a, double b) {
  if (b <= 0) return log_diff(log_ndtr(b), log_ndtr(a));
  if (a > 0) return log_diff(log_ndtr(-a), log_ndtr(-b));
  if (a <= -6 * sqrt(2.0) && b >= 6 * sqrt(2.0))
    return 0.0; /* erf is exactly -1 and 1 there: the formula gives log1p(0) */
  return log1p(-ndtr(a) - ndtr(-b));
}

static double ndtri_exp(double y) { /* bisection of log_ndtr on [-100, 100] */
  double a = -100, b = 100;
  if (log_ndtr(a) > y) a = 100, b = -100;
  for (int i = 0; i < 100; i++) {
    double m = (a + b) / 2;
    if (a == m || b == m) return m;
    if (log_ndtr(m) < y) a = m;
    else b = m;
  }
  return (a + b) / 2;
}

/* the quantile q of the standard normal truncated to [a, b] */
static double truncnorm_ppf(double q, double a, double b) {
  if (a == b) return NAN;
  if (q == 0) return a;
  if (q == 1) return b;
  if (a < 0) return ndtri_exp(logaddexp(log_ndtr(a), log(q) + log_gauss_mass(a, b)));
  return -ndtri_exp(logaddexp(log_ndtr(-b), log1p(-q) + log_gauss_mass(a, b)));
}

/* numpy's pairwise summation (np.sum over a contiguous axis): the same
** grouping gives the same rounding, so exact ties stay ties */
static double pairwise_sum(const double *a, long n) {
  if (n < 8) {
    double res = 0.;
    for (long i = 0; i < n; i++) res += a[i];
    return res;
  }
  if (n <= 128) {
    double r[8], res;
    long i;
    for (int j = 0; j < 8; j++) r[j] = a[j];
    for (i = 8; i < n - (n % 8); i += 8)
      for (int j = 0; j < 8; j++) r[j] += a[i + j];
    res = ((r[0] + r[1]) + (r[2] + r[3])) + ((r[4] + r[5]) + (r[6] + r[7]));
    for (; i < n; i++) res += a[i];
    return res;
  }
  long n2 = n / 2;
  n2 -= n2 % 8;
  return pairwise_sum(a, n2) + pairwise_sum(a + n2, n - n2);
}

/* ----------------------------------------------------------- the estimator */

typedef struct {
  int n;              /* components: observations, then the prior */
  double *w;          /* mixture weights, normalised */
  double *mu, *sigma; /* numeric */
  double *cat;        /* categorical: n x nchoices */
  int nchoices;
  double low, high, step;         /* in the transformed space; step 0: continuous */
  double *logz, *logsigma, *logw; /* per component, what does not depend on x */
  /* stepped: components with the same mean and sigma (repeated integers)
  ** have the same mass at every x; group[c] names the first of them */
  int *group, ngroups, *rep;
} Estimator;

static void estimator_free(Estimator *e) {
  free(e->w);
  free(e->mu);
  free(e->sigma);
  free(e->cat);
  free(e->logz);
  free(e->logsigma);
  free(e->logw);
  free(e->group);
  free(e->rep);
}

static int numeric_log(const slS_Dist *d) { return d->kind != SLS_CATEGORICAL && d->log; }

/* numpy linspace(start, stop, num) */
static void linspace(double start, double stop, int num, double *out) {
  if (num <= 0) return;
  if (num == 1) {
    out[0] = start;
    return;
  }
  double step = (stop - start) / (num - 1);
  for (int i = 0; i < num; i++) out[i] = i * step + start;
  out[num - 1] = stop;
}

/* Sorting by a key, ties in index order: a merge sort of (key, index)
** pairs with the comparison inline, several times faster than qsort through
** a comparator on the thousands of keys each trial sorts. Keys are never
** NaN here (a NaN objective fails its trial), so the order is total and
** equals any correct sort's. Ties keep observation order; numpy's argsort
** (SIMD sorts on modern x86) orders ties in a way that depends on the
** machine, so with repeated values (ints, steps) the sigmas of tied
** kernels, and then the suggestions, may differ from Optuna's. */
typedef struct {
  double key;
  int idx;
} Keyed;

static int keyed_before(const Keyed *a, const Keyed *b) {
  return a->key < b->key || (a->key == b->key && a->idx < b->idx);
}

static void sort_keyed(Keyed *a, int n) {
  if (n < 2) return;
  Keyed *tmp = malloc((size_t)n * sizeof *tmp), *src = a, *dst = tmp;
  for (int i = 1; i < n; i += 2) /* runs of two, then merges of doubling width */
    if (keyed_before(&a[i], &a[i - 1])) {
      Keyed t = a[i];
      a[i] = a[i - 1], a[i - 1] = t;
    }
  for (int width = 2; width < n; width *= 2) {
    for (int lo = 0; lo < n; lo += 2 * width) {
      int mid = lo + width < n ? lo + width : n, hi = lo + 2 * width < n ? lo + 2 * width : n, i = lo, j = mid, k = lo;
      while (i < mid && j < hi) dst[k++] = keyed_before(&src[j], &src[i]) ? src[j++] : src[i++];
      while (i < mid) dst[k++] = src[i++];
      while (j < hi) dst[k++] = src[j++];
    }
    Keyed *t = src;
    src = dst, dst = t;
  }
  if (src != a) memcpy(a, src, (size_t)n * sizeof *a);
  free(tmp);
}

/* order[i]: the index of the i-th smallest of keys[0..n) */
static void argsort(const double *keys, int n, int *order) {
  Keyed *k = malloc((size_t)(n ? n : 1) * sizeof *k);
  for (int i = 0; i < n; i++) k[i].key = keys[i], k[i].idx = i;
  sort_keyed(k, n);
  for (int i = 0; i < n; i++) order[i] = k[i].idx;
  free(k);
}

/* stepped estimators: group the components by (mean, sigma), walking them
** in order of the mean; within a run of equal means the few sigmas are
** compared one by one. rep[g] is the first component of group g. */
static void group_components(Estimator *e, const int *order, int m) {
  if (e->step == 0) return;
  e->group = malloc((size_t)m * sizeof *e->group);
  e->rep = malloc((size_t)m * sizeof *e->rep);
  e->ngroups = 0;
  int run = 0; /* the first group of the current run of equal means */
  for (int i = 0; i < m; i++) {
    int c = order[i], g = -1;
    if (i == 0 || e->mu[c] != e->mu[order[i - 1]]) run = e->ngroups;
    for (int h = run; h < e->ngroups && g < 0; h++)
      if (e->sigma[e->rep[h]] == e->sigma[c]) g = h;
    if (g < 0) {
      g = e->ngroups++;
      e->rep[g] = c;
    }
    e->group[c] = g;
  }
}

static void build(Estimator *e, const slS_Dist *d, const double *obs, int k) {
  memset(e, 0, sizeof *e);
  e->n = k + 1; /* consider_prior: always one prior component */
  e->w = malloc((size_t)e->n * sizeof *e->w);
  if (k == 0) {
    e->w[0] = 1;
  } else {
    if (k < 25) {
      for (int i = 0; i < k; i++) e->w[i] = 1;
    } else {
      linspace(1.0 / k, 1.0, k - 25, e->w);
      for (int i = k - 25; i < k; i++) e->w[i] = 1;
    }
    e->w[k] = PRIOR_WEIGHT;
    double sum = pairwise_sum(e->w, k + 1);
    for (int i = 0; i <= k; i++) e->w[i] /= sum;
  }
  if (d->kind == SLS_CATEGORICAL) {
    int c = e->nchoices = d->nchoices;
    e->cat = malloc((size_t)e->n * (size_t)c * sizeof *e->cat);
    if (k == 0) {
      for (int j = 0; j < c; j++) e->cat[j] = 1.0 / c;
      return;
    }
    for (int i = 0; i < e->n; i++) {
      double *row = e->cat + (size_t)i * (size_t)c;
      for (int j = 0; j < c; j++) row[j] = PRIOR_WEIGHT / e->n;
      if (i < k) row[(int)obs[i]] += 1;
      double sum = pairwise_sum(row, c);
      for (int j = 0; j < c; j++) row[j] /= sum;
    }
    return;
  }
  double low = d->low, high = d->high, step = d->step;
  if (d->log) {
    low = d->kind == SLS_INT ? log(d->low - step / 2) : log(d->low);
    high = d->kind == SLS_INT ? log(d->high + step / 2) : log(d->high);
    step = 0;
  }
  e->low = low, e->high = high, e->step = step;
  int m = k + 1; /* observations and the prior */
  e->mu = malloc((size_t)m * sizeof *e->mu);
  e->sigma = malloc((size_t)m * sizeof *e->sigma);
  for (int i = 0; i < k; i++) e->mu[i] = obs[i];
  double prior_mu = 0.5 * (low + high);
  e->mu[k] = prior_mu;
  int *order = malloc((size_t)m * sizeof *order);
  double *ends = malloc((size_t)(m + 2) * sizeof *ends), *sorted_sigma = malloc((size_t)m * sizeof *sorted_sigma);
  argsort(e->mu, m, order);
  ends[0] = low - step / 2;
  for (int i = 0; i < m; i++) ends[i + 1] = e->mu[order[i]];
  ends[m + 1] = high + step / 2;
  for (int i = 0; i < m; i++) sorted_sigma[i] = fmax(ends[i + 1] - ends[i], ends[i + 2] - ends[i + 1]);
  if (m + 2 >= 4) { /* consider_endpoints is false */
    sorted_sigma[0] = ends[2] - ends[1];
    sorted_sigma[m - 1] = ends[m] - ends[m - 1];
  }
  double maxsigma = 1.0 * (high - low + step);
  double minsigma = 1.0 * (high - low + step) / fmin(100.0, 1.0 + k + 1);
  for (int i = 0; i < m; i++) {
    double s = sorted_sigma[i];
    e->sigma[order[i]] = s < minsigma ? minsigma : s > maxsigma ? maxsigma : s;
  }
  e->sigma[k] = 1.0 * (high - low + step); /* the prior is not clipped */
  e->logz = malloc((size_t)m * sizeof *e->logz);
  e->logsigma = malloc((size_t)m * sizeof *e->logsigma);
  e->logw = malloc((size_t)m * sizeof *e->logw);
  group_components(e, order, m);
  for (int c = 0; c < m; c++) { /* many components share a sigma or a weight: reuse the logarithm */
    int r = e->group ? e->rep[e->group[c]] : c;
    if (r != c) e->logz[c] = e->logz[r]; /* the same mean and sigma: the same function of the same numbers */
    else
      e->logz[c] =
          log_gauss_mass((low - step / 2 - e->mu[c]) / e->sigma[c], (high + step / 2 - e->mu[c]) / e->sigma[c]);
    e->logsigma[c] = c > 0 && e->sigma[c] == e->sigma[c - 1] ? e->logsigma[c - 1] : log(e->sigma[c]);
    e->logw[c] = c > 0 && e->w[c] == e->w[c - 1] ? e->logw[c - 1] : log(e->w[c]);
  }
  free(order);
  free(ends);
  free(sorted_sigma);
}

/* log l(x): the log-sum-exp over components of log w + log p(x); the
** terms that do not depend on x were computed once (build) */
static double log_pdf(const Estimator *e, const slS_Dist *d, double x) {
  double *terms = malloc((size_t)e->n * sizeof *terms), top = -INFINITY, *mass = NULL;
  if (d->kind != SLS_CATEGORICAL && e->step != 0) { /* the mass of x's step, once per group */
    double lo = e->low - e->step / 2, hi = e->high + e->step / 2;
    double xl = fmax(x - e->step / 2, lo), xu = fmin(x + e->step / 2, hi);
    mass = malloc((size_t)e->ngroups * sizeof *mass);
    for (int g = 0; g < e->ngroups; g++) {
      int c = e->rep[g];
      mass[g] = log_gauss_mass((xl - e->mu[c]) / e->sigma[c], (xu - e->mu[c]) / e->sigma[c]);
    }
  }
  for (int c = 0; c < e->n; c++) {
    double t;
    if (d->kind == SLS_CATEGORICAL) {
      t = log(e->cat[(size_t)c * (size_t)e->nchoices + (size_t)x]) + log(e->w[c]);
    } else if (e->step == 0) {
      double z = (x - e->mu[c]) / e->sigma[c];
      t = x < e->low || x > e->high ? -INFINITY
                                    : -(z * z) / 2.0 - LOG_SQRT_2PI - e->logz[c] - e->logsigma[c] + e->logw[c];
    } else {
      t = mass[e->group[c]] - e->logz[c] + e->logw[c];
    }
    terms[c] = t;
    if (t > top) top = t;
  }
  if (isinf(top) && top < 0) top = 0;
  for (int c = 0; c < e->n; c++) /* exp underflows to exactly 0 below -745.2: skip the call */
    terms[c] = terms[c] - top < -746 ? 0.0 : exp(terms[c] - top);
  double sum = pairwise_sum(terms, e->n);
  free(terms);
  free(mass);
  return log(sum) + top;
}

/* numpy choice(n, p=w, size): cumulative weights, then searchsorted right */
static int pick_component(const Estimator *e, double u, const double *cdf) {
  int lo = 0, hi = e->n;
  while (lo < hi) {
    int mid = (lo + hi) / 2;
    if (cdf[mid] <= u) lo = mid + 1;
    else hi = mid;
  }
  return lo < e->n ? lo : e->n - 1;
}

static void sample(const Estimator *e, const slS_Dist *d, slM_Mt *rng, int count, double *out) {
  double *cdf = malloc((size_t)e->n * sizeof *cdf), acc = 0;
  for (int c = 0; c < e->n; c++) cdf[c] = acc += e->w[c];
  for (int c = 0; c < e->n; c++) cdf[c] /= cdf[e->n - 1];
  int *active = malloc((size_t)count * sizeof *active);
  for (int i = 0; i < count; i++) active[i] = pick_component(e, slM_mt_double(rng), cdf);
  for (int i = 0; i < count; i++) {
    double u = slM_mt_double(rng);
    int c = active[i];
    if (d->kind == SLS_CATEGORICAL) {
      const double *row = e->cat + (size_t)(e->n == 1 ? 0 : c) * (size_t)e->nchoices;
      double cum = 0;
      int idx = 0;
      for (int j = 0; j < e->nchoices; j++) {
        cum = j == e->nchoices - 1 ? 1 : cum + row[j];
        idx += cum < u;
      }
      out[i] = idx;
    } else if (e->step == 0) {
      double a = (e->low - e->mu[c]) / e->sigma[c], b = (e->high - e->mu[c]) / e->sigma[c];
      out[i] = truncnorm_ppf(u, a, b) * e->sigma[c] + e->mu[c];
    } else {
      double a = (e->low - e->step / 2 - e->mu[c]) / e->sigma[c], b = (e->high + e->step / 2 - e->mu[c]) / e->sigma[c];
      double x = truncnorm_ppf(u, a, b) * e->sigma[c] + e->mu[c];
      x = e->low + rint((x - e->low) / e->step) * e->step;
      out[i] = x < e->low ? e->low : x > e->high ? e->high : x;
    }
  }
  free(cdf);
  free(active);
}

/* ----------------------------------------------------------------- split */

static const slS_Study *split_study;
static void pruned_score(const slS_Study *st, const slS_Trial *t, double *s0, double *s1) {
  if (t->ninter == 0) {
    *s0 = 1, *s1 = 0;
    return;
  }
  int last = 0;
  for (int i = 1; i < t->ninter; i++)
    if (t->steps[i] > t->steps[last]) last = i;
  double v = t->inter[last];
  *s0 = -t->steps[last];
  *s1 = isnan(v) ? INFINITY : st->maximize[0] ? -v : v;
}

static int by_pruned_score(const void *a, const void *b) {
  const slS_Trial *x = &split_study->trials[*(const int *)a], *y = &split_study->trials[*(const int *)b];
  double x0, x1, y0, y1;
  pruned_score(split_study, x, &x0, &x1);
  pruned_score(split_study, y, &y0, &y1);
  if (x0 != y0) return x0 < y0 ? -1 : 1;
  if (x1 != y1) return x1 < y1 ? -1 : 1;
  return (x->number > y->number) - (x->number < y->number);
}

/* marks below[i] = 1 for the trials in the "good" group */
static void split(const slS_Study *st, int n, unsigned char *below) {
  int n_below = (int)ceil(0.1 * n);
  if (n_below > 25) n_below = 25;
  int *complete = malloc((size_t)st->ntrials * sizeof *complete + 1), nc = 0;
  int *pruned = malloc((size_t)st->ntrials * sizeof *pruned + 1), np_ = 0;
  for (int i = 0; i < st->ntrials; i++) {
    if (st->trials[i].state == SLS_COMPLETE) complete[nc++] = i;
    else if (st->trials[i].state == SLS_PRUNED) pruned[np_++] = i;
  }
  split_study = st;
  /* by value (the better first), ties in trial order as Python's stable sort;
  ** trials are stored in number order */
  Keyed *byv = malloc((size_t)(nc ? nc : 1) * sizeof *byv);
  for (int i = 0; i < nc; i++) {
    double v = st->trials[complete[i]].values[0];
    byv[i].key = st->maximize[0] ? -v : v, byv[i].idx = complete[i];
  }
  sort_keyed(byv, nc);
  for (int i = 0; i < nc; i++) complete[i] = byv[i].idx;
  free(byv);
  for (int i = 0; i < nc && i < n_below; i++) below[complete[i]] = 1;
  n_below -= nc < n_below ? nc : n_below;
  qsort(pruned, (size_t)np_, sizeof *pruned, by_pruned_score);
  for (int i = 0; i < np_ && i < n_below; i++) below[pruned[i]] = 1;
  free(complete);
  free(pruned);
}

/* the densities of the candidates to score: item 2j is l(x), 2j + 1 is g(x)
** of candidate todo[j], scored where it lands (log of a log-scale value) */
typedef struct {
  const Estimator *below, *above;
  const slS_Dist *d;
  const double *ext;
  const int *todo;
  double *dens;
} Scoring;

static void score_range(void *ctx, size_t i0, size_t i1) {
  const Scoring *s = ctx;
  for (size_t i = i0; i < i1; i++) {
    int c = s->todo[i / 2];
    double at = numeric_log(s->d) ? log(s->ext[c]) : s->ext[c];
    s->dens[2 * c + i % 2] = log_pdf(i % 2 ? s->above : s->below, s->d, at);
  }
}

/* ----------------------------------------------------------- the sampler */

typedef struct {
  int startup;          /* n_startup_trials: random trials first */
  int candidates;       /* n_ei_candidates */
  unsigned char *below; /* the good group (1 per trial) of the split made for trial below_for */
  int below_for;
} Tpe;

static double tpe_draw(slS_Study *st, const slS_Trial *t, int p) {
  Tpe *tpe = st->state;
  const slS_Dist *d = &st->space[p].dist;
  int n = 0;
  for (int i = 0; i < st->ntrials; i++) n += st->trials[i].state == SLS_COMPLETE || st->trials[i].state == SLS_PRUNED;
  if (n < tpe->startup) return slS_random_draw(&st->rng2, d);
  /* the split depends only on the finished trials: once per trial, not per parameter */
  if (tpe->below_for != t->number || !tpe->below) {
    free(tpe->below);
    tpe->below = calloc((size_t)st->ntrials, 1);
    split(st, n, tpe->below);
    tpe->below_for = t->number;
  }
  const unsigned char *below = tpe->below;
  double *obs_b = malloc((size_t)st->ntrials * sizeof *obs_b), *obs_a = malloc((size_t)st->ntrials * sizeof *obs_a);
  int kb = 0, ka = 0;
  for (int i = 0; i < st->ntrials; i++) { /* both groups in trial order */
    const slS_Trial *tr = &st->trials[i];
    double v;
    if ((tr->state != SLS_COMPLETE && tr->state != SLS_PRUNED) || !slS_trial_param(tr, p, &v)) continue;
    if (numeric_log(d)) v = log(v);
    if (below[i]) obs_b[kb++] = v;
    else obs_a[ka++] = v;
  }
  Estimator lb, la;
  build(&lb, d, obs_b, kb);
  build(&la, d, obs_a, ka);
  /* candidates as Optuna returns them (exp for log scales, ints snapped),
  ** then scored where they land: log of the snapped value */
  int count = tpe->candidates;
  double *cand = malloc((size_t)count * sizeof *cand), *ext = malloc((size_t)count * sizeof *ext);
  double *scores = malloc((size_t)count * sizeof *scores);
  sample(&lb, d, &st->rng, count, cand);
  /* snapped candidates repeat, and a repeated value has the same score:
  ** the distinct ones are scored, both densities of each on the thread
  ** team (independent, so the split changes no number), then the argmax
  ** runs in order */
  int *first = malloc((size_t)count * sizeof *first), *todo = malloc((size_t)count * sizeof *todo), ntodo = 0;
  for (int i = 0; i < count; i++) {
    double x = cand[i];
    if (d->kind != SLS_CATEGORICAL && d->log) x = exp(x);
    if (d->kind == SLS_INT) {
      x = d->low + rint((x - d->low) / d->step) * d->step;
      x = x < d->low ? d->low : x > d->high ? d->high : x;
    }
    ext[i] = x;
    first[i] = i;
    for (int j = 0; j < i && first[i] == i; j++)
      if (ext[j] == x) first[i] = j;
    if (first[i] == i) todo[ntodo++] = i;
  }
  double *dens = malloc(2 * (size_t)count * sizeof *dens);
  Scoring job = {&lb, &la, d, ext, todo, dens};
  slK_parallel_for(2 * (size_t)ntodo, 1, score_range, &job);
  int best = 0;
  double best_score = -INFINITY;
  for (int i = 0; i < count; i++) {
    double score = scores[i] = first[i] == i ? dens[2 * i] - dens[2 * i + 1] : scores[first[i]];
    if (i == 0 || score > best_score) best_score = score, best = i; /* argmax: the first of equals */
  }
  free(first), free(todo), free(dens);
  double x = ext[best];
  estimator_free(&lb);
  estimator_free(&la);
  free(cand), free(ext), free(scores), free(obs_b), free(obs_a);
  return x;
}

static int tpe_sample(slS_Study *st, slS_Trial *t, int p, double *internal, char *err, size_t errlen) {
  *internal = tpe_draw(st, t, p);
  return 0;
}

static void tpe_init(slS_Study *st) { ((Tpe *)st->state)->below_for = -1; }

static void tpe_free(void *state) { free(((Tpe *)state)->below); }

/* four outputs per candidate, each drawn for every parameter */
static double tpe_extra_draws(const slS_Study *st) { return 4.0 * ((const Tpe *)st->state)->candidates; }

static const slS_Option tpe_options[] = {
    {"startup", "10", 0, 1e6, "random trials before the model is used", offsetof(Tpe, startup)},
    {"candidates", "24", 1, 1e5, "candidates drawn per suggestion", offsetof(Tpe, candidates)},
    {NULL},
};

const slS_Sampler slS_tpe_sampler = {
    .name = "tpe",
    .title = "TPE",
    .flags = SLS_LEARNS | SLS_ONE_OBJECTIVE | SLS_AUTO_ONE,
    .options = tpe_options,
    .size = sizeof(Tpe),
    .init = tpe_init,
    .sample = tpe_sample,
    .extra_draws = tpe_extra_draws,
    .free = tpe_free,
};
