/*
** fuzz_journal.c - libFuzzer target: the study journal reader on any bytes.
**
** The first byte picks one of four searches (random, TPE, grid, NSGA-II
** with two objectives), set up as `search` sets them up for the options
** below; the rest is the journal. The seeds in corpus/journal are real
** journals of those searches (docs/reliability.md says how they were
** made), one with a torn last line. What the
** reader accepts must then be safe to use: the streams are restored (when
** that is quick), the study's tables are built as a notebook shows them,
** and the sampler proposes the next trial.
*/
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "search/search.h"

/* the study `search` makes for preset k (search/commands.c, configure) */
static slS_Study *preset(int k) {
  slS_Study *st = slS_study_new();
  char err[256];
  switch (k) {
    case 0: /* search trials=.. sampler=random seed=3 */
      slS_sampler_use(st, slS_sampler_find("random"));
      st->seed = 3;
      st->pruner = SLS_MEDIAN;
      break;
    case 1: /* search sampler=tpe seed=1 startup=4 direction=maximize */
      slS_sampler_use(st, slS_sampler_find("tpe"));
      st->seed = 1;
      if (slS_sampler_option(st, "startup", 4, err, sizeof err) != 0) abort();
      st->maximize[0] = 1;
      st->pruner = SLS_MEDIAN;
      break;
    case 2: { /* search sampler=grid a=[1, 2, 3] b=["x", "y"] */
      slS_sampler_use(st, slS_sampler_find("grid"));
      st->pruner = SLS_MEDIAN;
      const char *names[] = {"a", "b"};
      sl_Value lists[] = {sl_list_new(), sl_list_new()};
      for (int i = 1; i <= 3; i++) sl_list_push(lists[0], sl_number(i));
      sl_list_push(lists[1], sl_string("x"));
      sl_list_push(lists[1], sl_string("y"));
      if (slS_sampler_extras(st, 2, names, lists, err, sizeof err) != 0) abort();
      sl_release(lists[0]);
      sl_release(lists[1]);
      break;
    }
    default: /* search sampler=nsga2 seed=2 population=4 pruner=none directions=["minimize", "maximize"] */
      slS_sampler_use(st, slS_sampler_find("nsga2"));
      st->seed = 2;
      if (slS_sampler_option(st, "population", 4, err, sizeof err) != 0) abort();
      st->pruner = SLS_NO_PRUNER;
      st->nobj = 2;
      st->maximize[1] = 1;
      strcpy(st->objnames[0], "value_0");
      strcpy(st->objnames[1], "value_1");
      break;
  }
  slS_sampler_init(st);
  return st;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  sl_init();
  if (size < 1) return 0;
  slS_Study *st = preset(data[0] % 4);
  const char *text = (const char *)data + 1;
  size_t len = size - 1, good_end = 0;
  char err[2048], *warning = NULL;
  if (slS_journal_load(st, text, len, "fuzz.jsonl", &good_end, &warning, err, sizeof err) != 0) {
    if (!strstr(err, "fuzz.jsonl") || warning) abort(); /* every refusal names the file; no warning with it */
    slS_study_free(st);
    return 0;
  }
  free(warning);
  if (good_end > len) abort();
  /* what was accepted fits the space */
  for (int i = 0; i < st->ntrials; i++) {
    const slS_Trial *t = &st->trials[i];
    if (t->number != i || t->state == SLS_RUNNING || t->nvalues < 0 || t->nvalues > st->nobj) abort();
    for (int k = 0; k < t->nparams; k++) {
      const slS_Dist *d = &st->space[t->param[k]].dist;
      double v = t->internal[k];
      if (d->kind == SLS_CATEGORICAL && !(v >= 0 && v < d->nchoices && v == floor(v))) abort();
      if (d->kind != SLS_CATEGORICAL && !isfinite(v)) abort();
    }
  }
  /* the streams, when the replay is short (its bound and interrupt are unit-tested) */
  const slS_Trial *last = st->ntrials ? &st->trials[st->ntrials - 1] : NULL;
  if (!last || (last->draws[0] - st->rng.draws < 10000000 && last->draws[1] - st->rng2.draws < 10000000)) {
    if (slS_journal_restore(st) != 0) abort();
  }
  /* the views a notebook reads */
  sl_Value v = slS_trials_table(st);
  sl_release(v);
  v = slS_running_best(st);
  sl_release(v);
  v = slS_pareto_table(st);
  sl_release(v);
  for (int i = 0; i < st->ntrials; i++) {
    v = slS_params_record(st, &st->trials[i]);
    sl_release(v);
  }
  /* the next trial, as the search would run it */
  if (st->ntrials < 200) {
    slS_Trial *t = slS_trial_new(st);
    slS_before_trial(st, t);
    for (int p = 0; p < st->nspace; p++) {
      double x;
      if (slS_sample(st, t, p, &x, err, sizeof err) == 0) {
        slS_trial_set_param(t, p, x);
        v = slS_external(&st->space[p].dist, x);
        sl_release(v);
      }
    }
  }
  /* shown as a notebook shows it (the object frees the study) */
  v = sl_object_new(&slS_study_class, st);
  sl_Bundle b;
  sl_bundle_init(&b);
  sl_show(v, &b);
  sl_bundle_free(&b);
  sl_release(v);
  return 0;
}
