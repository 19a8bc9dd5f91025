/*
** commands.c - the search domain: `search` runs its block once per trial,
** the block asks for parameters with `suggest`, reports intermediate
** values with `intermediate` (where the pruner may stop it) and ends with
** `objective`. The result is a study object (study.c). docs/search.md
** gives the exact semantics.
**
** The commands inside the block are ordinary commands: they find their
** trial on run.c's stack of trials being run, which also records each
** trial's outcome. A serial search runs its trials here, one after the
** other; a distributed one hands them to remote.c, whose workers run them
** through run.c too.
*/
#include <ctype.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "dist.h"
#include "search.h"
#include "table/table.h"

static int need_trial(sl_Call *call) {
  if (!slS_active()) return sl_error(call, "works inside a search { } block: it belongs to the trial being run");
  return 0;
}

/* a study-level error: recorded in the cell, and the search stops */
static int fatal(sl_Call *call, const char *fmt, const char *text) {
  slS_active()->fatal = 1;
  return sl_error(call, fmt, text);
}

/* --------------------------------------------------------------- suggest */

static const char *const kinds[] = {"int", "float", "categorical", NULL};

static int integral(double x) { return isfinite(x) && x == floor(x); }

/* Optuna narrows a range that the step does not divide: high = low + k * step */
static double adjust_high(double low, double high, double step) {
  double r = (high - low) / step, k = rint(r);
  if (fabs(r - k) <= 1e-9 * fmax(1, fabs(r))) return high;
  return floor(r) * step + low;
}

static int dist_of(sl_Call *call, slS_Dist *d) {
  const char *kind = sl_arg_string(call, "kind");
  sl_Value low = sl_arg(call, "low");
  memset(d, 0, sizeof *d);
  d->choices = sl_nil();
  if (strcmp(kind, "categorical") == 0) {
    if (low.type != SL_LIST || sl_list_len(low) == 0)
      return sl_arg_error(
          call, "low",
          "a categorical suggestion takes a non-empty list of choices, e.g. suggest \"act\" categorical [\"relu\", \"gelu\"]");
    for (size_t i = 0; i < sl_list_len(low); i++) {
      sl_Type ty = sl_list_get(low, i).type;
      if (ty != SL_NUMBER && ty != SL_STRING && ty != SL_BOOL && ty != SL_NIL)
        return sl_arg_error(call, "low", "choice %zu is a %s: choices are numbers, strings, booleans or nil", i + 1,
                            sl_typename(sl_list_get(low, i)));
    }
    if (sl_arg_given(call, "high") || sl_arg_given(call, "by") || sl_truthy(sl_arg(call, "log")))
      return sl_error(call, "a categorical suggestion takes only its list of choices (no high, step or log)");
    d->kind = SLS_CATEGORICAL;
    d->choices = low;
    sl_retain(low);
    d->nchoices = (int)sl_list_len(low);
    return 0;
  }
  if (low.type != SL_NUMBER) return sl_arg_error(call, "low", "must be a number for an %s suggestion", kind);
  if (!sl_arg_given(call, "high")) return sl_arg_error(call, "high", "an %s suggestion needs low and high", kind);
  d->low = low.u.n;
  d->high = sl_arg_number(call, "high");
  d->log = sl_truthy(sl_arg(call, "log"));
  int has_step = sl_arg_given(call, "by");
  d->step = has_step ? sl_arg_number(call, "by") : 0;
  if (!isfinite(d->low) || !isfinite(d->high) || d->low > d->high)
    return sl_error(call, "low must not be above high, and both finite: got %.9g..%.9g", d->low, d->high);
  if (strcmp(kind, "int") == 0) {
    d->kind = SLS_INT;
    if (!has_step) d->step = 1;
    if (!integral(d->low) || !integral(d->high))
      return sl_error(call, "an int suggestion needs whole numbers for low and high");
    if (!integral(d->step) || d->step < 1) return sl_arg_error(call, "by", "must be a whole number of at least 1");
    if (d->log && d->step != 1) return sl_arg_error(call, "by", "a log-scale int suggestion takes no step (it is 1)");
    if (d->log && d->low < 1) return sl_arg_error(call, "low", "a log-scale int suggestion needs low >= 1");
  } else {
    d->kind = SLS_FLOAT;
    if (has_step && !(d->step > 0)) return sl_arg_error(call, "by", "must be above 0");
    if (d->log && has_step) return sl_arg_error(call, "by", "a log-scale float suggestion takes no step");
    if (d->log && !(d->low > 0)) return sl_arg_error(call, "low", "a log-scale float suggestion needs low > 0");
  }
  if (d->step > 0 && !d->log) d->high = adjust_high(d->low, d->high, d->step);
  return 0;
}

static int cmd_suggest(sl_Call *call, sl_Value *result) {
  if (need_trial(call) != 0) return -1;
  const char *name = sl_arg_string(call, "name");
  if (!name[0] || strlen(name) >= SLS_NAME_MAX)
    return sl_arg_error(call, "name", "a parameter name has 1 to %d characters", SLS_NAME_MAX - 1);
  slS_Dist d;
  if (dist_of(call, &d) != 0) return -1;
  slS_Study *st = slS_active()->st;
  slS_Trial *t = slS_active()->t;
  char err[1024];
  int p = slS_space_add(st, name, &d, err, sizeof err);
  if (p < 0) return fatal(call, "%s", err);
  double internal;
  if (!slS_trial_param(t, p, &internal)) { /* asked again in the same trial: the same value */
    int rc = slS_remote_trial(t) ? slS_remote_sample(name, &st->space[p].dist, &internal, err, sizeof err)
                                 : slS_sample(st, t, p, &internal, err, sizeof err);
    if (rc != 0) return fatal(call, "%s", err);
    slS_trial_set_param(t, p, internal);
  }
  *result = slS_external(&st->space[p].dist, internal);
  return 0;
}

/* ---------------------------------------------------------- intermediate */

static int cmd_intermediate(sl_Call *call, sl_Value *result) {
  if (need_trial(call) != 0) return -1;
  slS_Active *a = slS_active();
  slS_Study *st = a->st;
  slS_Trial *t = a->t;
  if (st->nobj > 1) return sl_error(call, "intermediate values prune single-objective studies only (Optuna's rule)");
  double value = sl_arg_number(call, "value");
  int step;
  if (sl_arg_given(call, "at")) {
    double s = sl_arg_number(call, "at");
    if (s < 0 || s > 1e9) return sl_arg_error(call, "at", "must be between 0 and 1e9");
    step = (int)s;
  } else {
    step = 0;
    for (int i = 0; i < t->ninter; i++)
      if (t->steps[i] + 1 > step) step = t->steps[i] + 1;
  }
  slS_trial_report(t, step, value);
  char err[1024];
  int prune = 0;
  if (slS_remote_trial(t)) {
    if (slS_remote_report(step, value, &prune, err, sizeof err) != 0) return fatal(call, "%s", err);
  } else {
    if (st->journal && slS_journal_report(st, t, err, sizeof err) != 0) return fatal(call, "%s", err);
    prune = slS_should_prune(st, t);
  }
  if (prune) {
    a->pruned = 1;
    return sl_error(call, "trial %d pruned at step %d", t->number, step);
  }
  return 0;
}

/* ------------------------------------------------------------- objective */

static int cmd_objective(sl_Call *call, sl_Value *result) {
  if (need_trial(call) != 0) return -1;
  slS_Active *a = slS_active();
  slS_Study *st = a->st;
  slS_Trial *t = a->t;
  sl_Value v = sl_arg(call, "value");
  size_t n = v.type == SL_LIST ? sl_list_len(v) : 1;
  if ((int)n != st->nobj)
    return sl_arg_error(call, "value", "the study has %d objective%s but %zu value%s given", st->nobj,
                        st->nobj == 1 ? "" : "s", n, n == 1 ? " was" : "s were");
  for (size_t k = 0; k < n; k++) {
    sl_Value x = v.type == SL_LIST ? sl_list_get(v, k) : v;
    if (x.type == SL_BOOL) x = sl_number(x.u.b);
    if (x.type != SL_NUMBER)
      return sl_arg_error(call, "value", "objective values are numbers, got a %s", sl_typename(x));
    if (isnan(x.u.n)) return sl_arg_error(call, "value", "the objective is NaN (the trial fails, as in Optuna)");
    t->values[k] = x.u.n;
  }
  t->nvalues = (int)n;
  a->has_objective = 1;
  return 0;
}

/* --------------------------------------------------------------- search */

static const char *const directions[] = {"minimize", "maximize", NULL};
static const char *const pruners[] = {"median", "none", NULL};

static int positive_int(sl_Call *call, const char *arg, double lo, double hi, int *out) {
  double v = sl_arg_number(call, arg);
  if (!(v >= lo && v <= hi)) return sl_arg_error(call, arg, "must be between %.0f and %.0f, got %.9g", lo, hi, v);
  *out = (int)v;
  return 0;
}

static int direction_of(sl_Call *call, const char *text, int *maximize) {
  if (strcmp(text, "maximize") == 0) *maximize = 1;
  else if (strcmp(text, "minimize") == 0) *maximize = 0;
  else return sl_arg_error(call, "directions", "'%s' is not a direction: use \"minimize\" or \"maximize\"", text);
  return 0;
}

/* sampler=NAME, or auto: the sampler for one objective or for several */
static int choose_sampler(sl_Call *call, slS_Study *st) {
  const char *name = sl_arg_string(call, "sampler");
  const slS_Sampler *s = strcmp(name, "auto") == 0 ? slS_sampler_auto(st->nobj) : slS_sampler_find(name);
  if (!s) return sl_arg_error(call, "sampler", "no sampler is named '%s'", name);
  slS_sampler_use(st, s);
  if (!(s->flags & SLS_ONE_OBJECTIVE) || st->nobj == 1) return 0;
  char why[512];
  const slS_Sampler *many = slS_sampler_auto(2);
  size_t used = (size_t)snprintf(why, sizeof why, "%s here optimises one objective; several objectives use %s", s->name,
                                 many->name);
  const char *sep = " (or ";
  for (int i = 0; slS_samplers[i]; i++)
    if (!(slS_samplers[i]->flags & SLS_ONE_OBJECTIVE) && slS_samplers[i] != many) {
      used +=
          (size_t)snprintf(why + used, used < sizeof why ? sizeof why - used : 0, "%s%s", sep, slS_samplers[i]->name);
      sep = ", ";
    }
  if (sep[0] == ',') snprintf(why + used, used < sizeof why ? sizeof why - used : 0, ")");
  return sl_arg_error(call, "sampler", "%s", why);
}

/* the study's options from the call; the sampler's extra settings (the grid) from the extra keywords */
static int configure(sl_Call *call, slS_Study *st) {
  sl_Value dirs = sl_arg(call, "directions");
  if (dirs.type == SL_LIST) {
    size_t n = sl_list_len(dirs);
    if (n < 1 || n > SLS_MAX_OBJECTIVES)
      return sl_arg_error(call, "directions", "give 1 to %d directions", SLS_MAX_OBJECTIVES);
    st->nobj = (int)n;
    for (size_t k = 0; k < n; k++) {
      const char *s = sl_str(sl_list_get(dirs, k));
      if (!s) return sl_arg_error(call, "directions", "must be a list of \"minimize\" or \"maximize\"");
      if (direction_of(call, s, &st->maximize[k]) != 0) return -1;
    }
  } else {
    st->nobj = 1;
    st->maximize[0] = strcmp(sl_arg_string(call, "direction"), "maximize") == 0;
  }
  sl_Value names = sl_arg(call, "objectives");
  if (names.type == SL_LIST) {
    if ((int)sl_list_len(names) != st->nobj)
      return sl_arg_error(call, "objectives", "names %zu objectives but the study has %d", sl_list_len(names),
                          st->nobj);
    for (int k = 0; k < st->nobj; k++) {
      const char *s = sl_str(sl_list_get(names, (size_t)k));
      if (!s || !s[0] || strlen(s) >= SLS_NAME_MAX)
        return sl_arg_error(call, "objectives", "must be a list of short names");
      snprintf(st->objnames[k], SLS_NAME_MAX, "%s", s);
    }
  } else {
    for (int k = 0; k < st->nobj; k++) snprintf(st->objnames[k], SLS_NAME_MAX, st->nobj == 1 ? "value" : "value_%d", k);
  }
  if (choose_sampler(call, st) != 0) return -1;
  double seed = sl_arg_number(call, "seed");
  if (!(seed >= 0 && seed <= 4294967295.0) || seed != floor(seed))
    return sl_arg_error(call, "seed", "must be a whole number between 0 and 2^32 - 1 (numpy's RandomState), got %.9g",
                        seed);
  st->seed = (uint32_t)seed;
  char err[1024];
  for (int i = 0; slS_samplers[i]; i++) /* every sampler's options are checked; the chosen one's are kept */
    for (const slS_Option *o = slS_samplers[i]->options; o && o->name; o++) {
      int v = 0;
      if (positive_int(call, o->name, o->lo, o->hi, &v) != 0) return -1;
      if (slS_samplers[i] == st->sampler && slS_sampler_option(st, o->name, v, err, sizeof err) != 0)
        return sl_arg_error(call, o->name, "%s", err);
    }
  if (positive_int(call, "prune_startup", 0, 1e6, &st->prune_startup) ||
      positive_int(call, "warmup", 0, 1e9, &st->prune_warmup) ||
      positive_int(call, "interval", 1, 1e9, &st->prune_interval) ||
      positive_int(call, "min_trials", 1, 1e6, &st->prune_min_trials))
    return -1;
  st->pruner = strcmp(sl_arg_string(call, "pruner"), "median") == 0 ? SLS_MEDIAN : SLS_NO_PRUNER;
  /* name=[values] keywords: the grid's lists, for a sampler that takes them */
  size_t n = sl_call_extra_count(call);
  const char **keys = malloc((n + 1) * sizeof *keys);
  sl_Value *values = malloc((n + 1) * sizeof *values);
  for (size_t i = 0; i < n; i++) {
    keys[i] = sl_call_extra_name(call, i);
    values[i] = sl_call_extra_value(call, i);
  }
  int rc = slS_sampler_extras(st, n, keys, values, err, sizeof err);
  free(keys);
  free(values);
  if (rc != 0) return sl_error(call, "%s", err);
  return 0;
}

static void show_partial(sl_Call *call, sl_Value study, const char *why) {
  slS_Study *st = sl_object_data(study);
  sl_Bundle b;
  sl_bundle_init(&b);
  sl_show(study, &b);
  sl_display(call, &b);
  sl_bundle_free(&b);
  sl_eprintf(call, "search %s after %d finished trial%s; the study is kept in the variable search_partial\n", why,
             st->ntrials, st->ntrials == 1 ? "" : "s");
  sl_setvar(call, "search_partial", study);
}

static void progress_detail(const slS_Study *st, int done, int total, double elapsed, char *out, size_t size) {
  const slS_Trial *b = st->nobj == 1 ? slS_best(st) : NULL;
  char v[32] = "-";
  if (b) sl_format_number(b->values[0], v, sizeof v);
  snprintf(out, size, "trial %d/%d  best %s  %.1f s", done, total, v, elapsed);
}

static int cmd_search(sl_Call *call, sl_Value *result) {
  int trials = 0;
  if (positive_int(call, "trials", 1, 1e7, &trials) != 0) return -1;
  double timeout = sl_arg_number(call, "timeout");
  if (!(timeout >= 0)) return sl_arg_error(call, "timeout", "must be 0 (none) or a number of seconds");
  slS_Study *st = slS_study_new();
  sl_Value study = sl_object_new(&slS_study_class, st);
  if (configure(call, st) != 0) {
    sl_release(study);
    return -1;
  }
  slS_sampler_init(st);
  /* Under mpirun, ranks above 0 evaluate the trials of rank 0's study
  ** (dist.h, remote.c); with workers=N, this process coordinates N workers
  ** it starts. Either way the result is the serial study's. */
  char derr[1024];
  int mode = slS_search_mode(call, derr, sizeof derr);
  if (mode < 0) {
    sl_release(study);
    return sl_arg_error(call, "workers", "%s", derr);
  }
  if (mode == SLS_WORKER) {
    if (slS_search_work(call, st) != 0) return sl_release(study), -1;
    *result = study;
    return 0;
  }
  if (sl_arg_given(call, "journal")) {
    char err[1024], *warning = NULL;
    if (slS_journal_open(st, sl_arg_string(call, "journal"), &warning, err, sizeof err) != 0) {
      sl_release(study);
      if (sl_interrupted()) return sl_interrupted_error(call);
      return sl_arg_error(call, "journal", "%s", err);
    }
    if (warning) sl_eprintf(call, "%s\n", warning);
    free(warning);
    if (st->ntrials > 0)
      sl_printf(call, "resuming from %s: %d finished trial%s\n", st->journal, st->ntrials, st->ntrials == 1 ? "" : "s");
  }
  sl_Value saved = sl_getvar(call, "trial"); /* the block sees its trial's number as `trial` */
  sl_retain(saved);
  int planned = slS_trials_planned(st, trials);
  sl_Progress *bar = sl_progress_begin(call, "search", planned);
  if (st->ntrials > 0) sl_progress_update(bar, st->ntrials, NULL); /* resumed: the journal's trials are done */
  double start = slU_now();
  int rc = 0, stopped = 0;
  if (mode == SLS_COORDINATOR) {
    rc = slS_search_coordinate(call, st, trials, timeout, bar);
    stopped = rc != 0;
  }
  while (mode == SLS_SERIAL && st->ntrials < trials) {
    if (slS_sampler_done(st)) break;
    if (timeout > 0 && slU_now() - start >= timeout) break;
    if (sl_interrupted()) {
      rc = sl_interrupted_error(call);
      stopped = 1;
      break;
    }
    slS_Trial *t = slS_trial_new(st);
    slS_before_trial(st, t);
    if (slS_run_trial(call, st, t) != 0) {
      rc = -1;
      stopped = 1;
      break;
    }
    t = &st->trials[st->ntrials - 1];
    t->draws[0] = st->rng.draws;
    t->draws[1] = st->rng2.draws;
    st->seconds += t->seconds;
    if (st->journal) {
      char err[1024];
      if (slS_journal_trial(st, t, err, sizeof err) != 0) {
        rc = sl_error(call, "%s", err);
        stopped = 1;
        break;
      }
    }
    char detail[160];
    progress_detail(st, st->ntrials, planned, slU_now() - start, detail, sizeof detail);
    sl_progress_update(bar, st->ntrials, detail);
  }
  sl_progress_end(bar);
  st->elapsed = slU_now() - start;
  if (saved.type != SL_NIL) sl_setvar(call, "trial", saved);
  else sl_unsetvar(call, "trial");
  if (stopped) {
    show_partial(call, study, sl_interrupted() ? "interrupted" : "stopped by an error");
    return rc;
  }
  *result = study;
  return 0;
}

/* ---------------------------------------------------------------- compare */

/* the running-best curves of several studies in one table, for one plot */
static int cmd_curves(sl_Call *call, sl_Value *result) {
  size_t n = sl_call_extra_count(call);
  if (n == 0) return sl_error(call, "name the studies: curves random=s1 tpe=s2");
  slT_Table *out = slT_new();
  slT_add_column(out, "study");
  slT_add_column(out, "trial");
  slT_add_column(out, "best");
  int k = 0;
  if (sl_arg_given(call, "objective")) {
    k = (int)sl_arg_number(call, "objective");
  }
  for (size_t i = 0; i < n; i++) {
    slS_Study *st = sl_object_as(sl_call_extra_value(call, i), &slS_study_class);
    if (!st) {
      slT_free(out);
      return sl_error(call, "%s is a %s, not a study", sl_call_extra_name(call, i),
                      sl_typename(sl_call_extra_value(call, i)));
    }
    if (k < 0 || k >= st->nobj) {
      slT_free(out);
      return sl_arg_error(call, "objective", "the study %s has objectives 0 to %d", sl_call_extra_name(call, i),
                          st->nobj - 1);
    }
    sl_Value rb = slS_running_best(st);
    slT_Table *t = slT_from(rb);
    for (size_t r = 0; r < t->nrows; r++) {
      sl_Value best = slT_get(t, r, (size_t)(1 + st->nobj + k));
      if (best.type != SL_NUMBER) continue; /* no complete trial yet */
      size_t o = slT_add_row(out);
      slT_set(out, o, 0, sl_string(sl_call_extra_name(call, i)));
      slT_set(out, o, 1, sl_number(slT_get(t, r, 0).u.n));
      slT_set(out, o, 2, sl_number(best.u.n));
    }
    sl_release(rb);
  }
  *result = slT_value(out);
  return 0;
}

/* --------------------------------------------------------------- registry */

/* search's help after what it says of the samplers (sampler_words) */
#define SEARCH_HELP \
  "A trial whose block fails is recorded as failed with its message and the search goes on. With pruner=median, " \
  "`intermediate` may stop a trial early (pruned). With journal=PATH every finished trial is appended to a " \
  "JSON-lines file and synced to disk; running the same search again resumes it. An interrupt keeps the " \
  "finished trials in the variable search_partial. See docs/search.md."

/* the domain's paragraph, around the samplers' titles (sampler_words) */
#define SEARCH_INTRO \
  "Studies of trials in the manner of Optuna: a search block runs once per trial, asking for parameters as it goes " \
  "(define-by-run), and ends with its objective. %s samplers draw from numpy's MT19937 so that the same seed " \
  "proposes the same trials as Optuna 4.2; the median pruner stops weak trials early; a journal makes a study " \
  "survive a crash."

/* search's help, the sampler= argument and the samplers' options are
** completed from the samplers' records (sampler_words) */
/* clang-format off */
static sl_Command slS_commands[] = {
  {"search", "search",
   "Run a study: the block runs once per trial, asks for parameters with suggest and ends with objective.",
   NULL,
   "s = search trials=20 sampler=tpe seed=1 direction=maximize {\n  w = suggest \"width\" int 16 256 by=16\n"
   "  lr = suggest \"lr\" float 1e-4 1e-1 log=true\n  objective -(lr - 0.01) ** 2 - (w - 128) ** 2 / 1e4\n}\n"
   "plot s.running_best x=trial y=best",
   cmd_search, SL_CMD_EXTRA_KEYWORDS | SL_CMD_LONG,
   {{"trials", SL_ARG_INT, 0, "10", "number of trials (a grid stops when every point is done)"},
    {"sampler", SL_ARG_ENUM, 0, "auto", NULL, NULL},
    {"seed", SL_ARG_INT, 0, "0", "seed of the sampler's MT19937 streams, 0 to 2^32 - 1"},
    {"direction", SL_ARG_ENUM, 0, "minimize", "one objective: minimize or maximize", directions},
    {"directions", SL_ARG_LIST, 0, NULL, "several objectives: a direction for each"},
    {"objectives", SL_ARG_LIST, 0, NULL, "names of the objectives (columns of the trials table)"},
    {"timeout", SL_ARG_NUMBER, 0, "0", "no new trial starts after this many seconds (0: no limit)"},
    {"pruner", SL_ARG_ENUM, 0, "median", "stop trials whose intermediate values fall below the median", pruners},
    {"prune_startup", SL_ARG_INT, 0, "5", "median pruner: complete trials before pruning starts"},
    {"warmup", SL_ARG_INT, 0, "0", "median pruner: steps before a trial can be pruned"},
    {"interval", SL_ARG_INT, 0, "1", "median pruner: steps between checks"},
    {"min_trials", SL_ARG_INT, 0, "1", "median pruner: trials that reported the step, at least"},
    {"journal", SL_ARG_STRING, 0, NULL, "append finished trials to this JSON-lines file; resume from it"},
    {"workers", SL_ARG_INT, 0, "0", "start this many worker processes (MPI) to run trials in parallel; 0: none, or mpirun's ranks"},
    {"body", SL_ARG_BLOCK, SL_REQUIRED, NULL, "the trial: suggest, train, evaluate, objective"},
    {NULL}}},
  {"suggest", "search", "Inside a search: a parameter value for this trial (int, float or one of a list).",
   "int and float take low and high (both included), an optional step by=, and log=true for a log scale; categorical "
   "takes the list of choices. Asking again for a name in the same trial gives the same value; a name keeps one "
   "range in a study (a different one is an error naming both).",
   "s = search trials=3 sampler=random seed=1 {\n  w = suggest \"width\" int 16 256 by=16\n"
   "  lr = suggest \"lr\" float 1e-5 1e-1 log=true\n  act = suggest \"activation\" categorical [\"relu\", \"gelu\", \"tanh\"]\n"
   "  objective w * lr\n}",
   cmd_suggest, 0,
   {{"name", SL_ARG_STRING, SL_POSITIONAL | SL_REQUIRED, NULL, "the parameter's name"},
    {"kind", SL_ARG_ENUM, SL_POSITIONAL | SL_REQUIRED, NULL, "int, float, or categorical", kinds},
    {"low", SL_ARG_ANY, SL_POSITIONAL | SL_REQUIRED, NULL, "lower bound, or the list of choices (categorical)"},
    {"high", SL_ARG_NUMBER, SL_POSITIONAL, NULL, "upper bound (included)"},
    {"by", SL_ARG_NUMBER, 0, NULL, "the step between values (int: 1), Optuna's step"},
    {"log", SL_ARG_BOOL, 0, "false", "sample on a log scale"},
    {NULL}}},
  {"intermediate", "search", "Inside a search: report an intermediate value (e.g. per epoch); the pruner may stop the trial.",
   "The step defaults to one after the last reported step (0 first). When the median pruner decides the trial is "
   "below the median of earlier trials at this step, the block stops and the trial is recorded as pruned.",
   "s = search trials=4 seed=1 pruner=median {\n  x = suggest \"x\" float 0 1\n  for epoch in 0..3 {\n    intermediate x * epoch at=epoch\n  }\n  objective x\n}", cmd_intermediate, 0,
   {{"value", SL_ARG_NUMBER, SL_POSITIONAL | SL_REQUIRED, NULL, "the value at this step"},
    {"at", SL_ARG_INT, SL_POSITIONAL, NULL, "the step (epoch) it was measured at"},
    {NULL}}},
  {"objective", "search", "Inside a search: the trial's result, one number (or a list, one per objective).", "",
   "s = search trials=3 seed=1 {\n  x = suggest \"x\" float -2 2\n  objective x * x\n}\nfront = search trials=3 seed=1 directions=[\"minimize\", \"minimize\"] {\n  x = suggest \"x\" float 0 1\n  objective [x, 1 - x]\n}", cmd_objective, 0,
   {{"value", SL_ARG_ANY, SL_POSITIONAL | SL_REQUIRED, NULL, "a number, or a list of numbers"}, {NULL}}},
  {"allreduce_bench", "distributed", "The all-reduce of data-parallel training timed over buffer sizes: latency and bandwidth.",
   "The sum that train ... parallel=\"data\" runs: every rank's shard summed in rank order, then handed out. Run it "
   "under mpirun -n N, or give workers=N (alone, the group of one moves nothing: its times are the calls' own). Per "
   "size: the median and least time of `repeats` runs, the algorithm bandwidth (bytes / time) and the bus bandwidth "
   "(x 2 (N - 1) / N, what each link carries), as nccl-tests reports.",
   "allreduce_bench sizes=[0.001, 1] repeats=3", slS_cmd_allreduce_bench, SL_CMD_LONG,
   {{"sizes", SL_ARG_LIST, 0, "[0.001, 0.01, 0.1, 1, 10, 100]", "buffer sizes in MB (10^6 bytes)"},
    {"repeats", SL_ARG_INT, 0, "10", "timed runs per size"},
    {"workers", SL_ARG_INT, 0, "0", "without mpirun: processes (this one and workers - 1 started)"}, {NULL}}},
  {"curves", "search", "The running-best curves of several studies in one table (study, trial, best), for one plot.", "",
   "s1 = search trials=4 sampler=random seed=1 {\n  objective (suggest \"x\" float 0 1)\n}\ns2 = search trials=4 sampler=tpe seed=1 {\n  objective (suggest \"x\" float 0 1)\n}\nc = curves random=s1 tpe=s2\nplot c x=trial y=best series=study", cmd_curves, SL_CMD_EXTRA_KEYWORDS,
   {{"objective", SL_ARG_INT, 0, "0", "which objective, for studies with several"}, {NULL}}},
  {NULL},
};
/* clang-format on */

/* ------------------------------------------------- words about samplers */

/* Where search's words name samplers they are made from the records
** (slS_samplers) when the domain opens: the domain's paragraph, search's
** help, the choices and help of sampler=, and the options of each sampler,
** which go before journal=. So help, completion, argument checks and
** docs/commands.md list the samplers the table holds. */

static char search_intro[1024], search_help[2048], sampler_help[256];
static const char *sampler_choices[SLS_MAX_SAMPLERS + 2] = {"auto"};
static char option_help[SL_MAX_ARGS][160];

/* a mistake in the source that every run finds at its start */
static void outgrown(const char *what) {
  fprintf(stderr, "syslab: %s\n", what);
  abort();
}

static void add(char *out, size_t size, const char *text) {
  size_t used = strlen(out);
  snprintf(out + used, used < size ? size - used : 0, "%s", text);
}

/* the samplers with all of `flags`, "a, b and c", by name or by title */
static void names_with(unsigned flags, int titles, char *out, size_t size) {
  int n = 0, k = 0;
  for (int i = 0; slS_samplers[i]; i++) n += (slS_samplers[i]->flags & flags) == flags;
  for (int i = 0; slS_samplers[i]; i++) {
    if ((slS_samplers[i]->flags & flags) != flags) continue;
    add(out, size, k == 0 ? "" : k == n - 1 ? " and " : ", ");
    add(out, size, titles ? slS_samplers[i]->title : slS_samplers[i]->name);
    k++;
  }
}

/* "random, grid (name=[values] for every suggested name), tpe (the default
** for one objective) and nsga2 (the default for several)" */
static void sampler_list(char *out, size_t size) {
  int n = 0;
  while (slS_samplers[n]) n++;
  for (int i = 0; i < n; i++) {
    const slS_Sampler *s = slS_samplers[i];
    const char *notes[3];
    int k = 0;
    if (s->help) notes[k++] = s->help;
    if (s->flags & SLS_AUTO_ONE) notes[k++] = "the default for one objective";
    if (s->flags & SLS_AUTO_MANY) notes[k++] = "the default for several";
    add(out, size, i == 0 ? "" : i == n - 1 ? " and " : ", ");
    add(out, size, s->name);
    for (int j = 0; j < k; j++) {
      add(out, size, j ? "; " : " (");
      add(out, size, notes[j]);
    }
    if (k) add(out, size, ")");
  }
}

/* each sampler's options go into search's arguments before journal= */
static void add_options(sl_Command *search) {
  int nargs = 0, at = -1, k = 0;
  for (; search->args[nargs].name; nargs++)
    if (strcmp(search->args[nargs].name, "journal") == 0) at = nargs;
  for (int i = 0; slS_samplers[i]; i++)
    for (const slS_Option *o = slS_samplers[i]->options; o && o->name; o++, k++) {
      if (nargs + 1 >= SL_MAX_ARGS || at < 0) outgrown("the samplers' options do not fit search's arguments");
      snprintf(option_help[k], sizeof option_help[k], "%s: %s", slS_samplers[i]->name, o->help);
      memmove(&search->args[at + k + 1], &search->args[at + k], (size_t)(nargs - at - k + 1) * sizeof *search->args);
      search->args[at + k] = (sl_Arg){o->name, SL_ARG_INT, 0, o->defval, option_help[k], NULL, NULL};
      nargs++;
    }
}

static void sampler_words(sl_Command *search) {
  char list[1024] = "", exact[256] = "", titles[256] = "";
  sampler_list(list, sizeof list);
  names_with(SLS_EXACT, 0, exact, sizeof exact);
  snprintf(search_help, sizeof search_help,
           "Samplers: %s, all drawing from MT19937 as Optuna 4.2 does, so %s propose exactly Optuna's trials for the "
           "same seed. " SEARCH_HELP,
           list, exact);
  search->help = search_help;
  names_with(0, 1, titles, sizeof titles);
  titles[0] = (char)toupper((unsigned char)titles[0]);
  snprintf(search_intro, sizeof search_intro, SEARCH_INTRO, titles);
  snprintf(sampler_help, sizeof sampler_help, "how parameters are chosen (auto: %s, or %s for several objectives)",
           slS_sampler_auto(1)->name, slS_sampler_auto(2)->name);
  for (int i = 0; slS_samplers[i]; i++) {
    if (i >= SLS_MAX_SAMPLERS) outgrown("more samplers than SLS_MAX_SAMPLERS");
    sampler_choices[i + 1] = slS_samplers[i]->name;
  }
  for (sl_Arg *a = search->args; a->name; a++)
    if (strcmp(a->name, "sampler") == 0) a->help = sampler_help, a->choices = sampler_choices;
  add_options(search);
}

static void search_open(void) {
  sampler_words(&slS_commands[0]);
  slS_ddp_open(); /* the graph's training loops reach the processes of a data-parallel call through ddp.c */
}

const sl_Domain slS_domain = {
    "Search",
    search_intro,
    slS_commands,
    .open = search_open,
};
