/*
** bench_scale.c - what a distributed search costs its coordinator per
** trial: the ask (a new trial and its parameters drawn by the sampler), the
** tell (its result recorded) and the journal write (one JSON line, synced to
** disk), for the random and TPE samplers with 100, 1,000 and 10,000
** finished trials already in the study.
**
**   cmake --build build --target bench_scale && build/bench_scale [JOURNAL_DIR=$TMPDIR, else .]
**
** The history is made of random trials (TPE's own asks would take minutes
** to build 10,000), then K more trials are asked, told and journalled one
** by one as the coordinator does (engine/search/remote.c), and the median
** of each part is printed. Three parameters: a float, a log-scale int and a
** categorical, as in the labs. docs/scaling.md turns these figures into the
** number of workers one coordinator keeps busy.
*/
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "search/search.h"

static double now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

static int cmp(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return x < y ? -1 : x > y;
}

static double median(double *v, int n) {
  qsort(v, (size_t)n, sizeof *v, cmp);
  return v[n / 2];
}

static slS_Study *study(const char *sampler) {
  slS_Study *st = slS_study_new();
  slS_sampler_use(st, slS_sampler_find(sampler));
  st->seed = 1;
  st->pruner = SLS_NO_PRUNER;
  slS_sampler_init(st);
  char err[256];
  slS_Dist x = {SLS_FLOAT, -5, 5, 0, 0, {0}, 0};
  slS_Dist w = {SLS_INT, 1, 1024, 1, 1, {0}, 0};
  slS_Dist c = {SLS_CATEGORICAL, 0, 0, 0, 0, sl_list_new(), 3};
  x.choices = w.choices = sl_nil();
  sl_list_push(c.choices, sl_string("relu"));
  sl_list_push(c.choices, sl_string("gelu"));
  sl_list_push(c.choices, sl_string("tanh"));
  slS_space_add(st, "x", &x, err, sizeof err);
  slS_space_add(st, "width", &w, err, sizeof err);
  slS_space_add(st, "act", &c, err, sizeof err);
  return st;
}

static double objective(const slS_Trial *t) {
  double x = t->internal[0], w = t->internal[1];
  return (x - 1) * (x - 1) + fabs(log(w) - 4) + t->internal[2];
}

/* a finished random trial, for the history */
static void history(slS_Study *st, slM_Mt *rng) {
  slS_Trial *t = slS_trial_new(st);
  for (int p = 0; p < st->nspace; p++) slS_trial_set_param(t, p, slS_random_draw(rng, &st->space[p].dist));
  t->values[0] = objective(t);
  t->nvalues = 1;
  t->state = SLS_COMPLETE;
}

static void run(const char *sampler, int finished, int k, const char *dir) {
  slS_Study *st = study(sampler);
  slM_Mt rng;
  slM_mt_seed(&rng, 7);
  for (int i = 0; i < finished; i++) history(st, &rng);
  char path[512], err[512], *warning = NULL;
  snprintf(path, sizeof path, "%s/bench-scale-%d.jsonl", dir, (int)getpid());
  unlink(path);
  if (slS_journal_open(st, path, &warning, err, sizeof err) != 0) {
    fprintf(stderr, "%s\n", err);
    exit(1);
  }
  free(warning);
  double *ask = malloc((size_t)k * sizeof *ask), *tell = malloc((size_t)k * sizeof *tell),
         *journal = malloc((size_t)k * sizeof *journal), *total = malloc((size_t)k * sizeof *total);
  for (int i = 0; i < k; i++) {
    double t0 = now();
    slS_Trial *t = slS_trial_new(st);
    slS_before_trial(st, t);
    for (int p = 0; p < st->nspace; p++) {
      double v;
      if (slS_sample(st, t, p, &v, err, sizeof err) != 0) {
        fprintf(stderr, "%s\n", err);
        exit(1);
      }
      slS_trial_set_param(t, p, v);
    }
    double t1 = now();
    t->values[0] = objective(t);
    t->nvalues = 1;
    t->state = SLS_COMPLETE;
    t->draws[0] = st->rng.draws;
    t->draws[1] = st->rng2.draws;
    double t2 = now();
    if (slS_journal_trial(st, t, err, sizeof err) != 0) {
      fprintf(stderr, "%s\n", err);
      exit(1);
    }
    double t3 = now();
    ask[i] = t1 - t0, tell[i] = t2 - t1, journal[i] = t3 - t2, total[i] = t3 - t0;
  }
  printf("| %s | %d | %d | %.3f | %.4f | %.3f | %.3f |\n", sampler, finished, k, median(ask, k) * 1e3,
         median(tell, k) * 1e3, median(journal, k) * 1e3, median(total, k) * 1e3);
  fflush(stdout);
  unlink(path);
  free(ask), free(tell), free(journal), free(total);
  slS_study_free(st);
}

int main(int argc, char **argv) {
  const char *dir = argc > 1 ? argv[1] : getenv("TMPDIR") ? getenv("TMPDIR") : ".";
  printf("| sampler | finished trials | trials timed | ask (ms) | tell (ms) | journal write (ms) | total (ms) |\n");
  printf("|---|---:|---:|---:|---:|---:|---:|\n");
  run("random", 100, 200, dir);
  run("random", 1000, 200, dir);
  run("random", 10000, 200, dir);
  run("tpe", 100, 100, dir);
  run("tpe", 1000, 50, dir);
  run("tpe", 10000, 11, dir);
  return 0;
}
