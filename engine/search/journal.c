/*
** journal.c - the study journal: one JSON object per line, appended and
** synced to disk (fsync) after every finished trial and every intermediate
** report, so a crash loses at most the trial that was running.
**
** The first line describes the search (sampler, seed, directions, pruner,
** grid). Each finished trial is a line with its parameters and their
** distributions in suggestion order, its values, intermediate values,
** state, time, and the positions of the sampler's MT19937 streams after it
** (32-bit outputs taken since seeding). Resuming reloads the finished
** trials and restores the streams by reseeding and skipping that many
** outputs, so the next trial draws what it would have drawn had the search
** never stopped. Report lines are for readers of the file; resuming needs
** only the trial lines. A last line cut short by a crash is dropped (and
** cut from the file) with a warning; a journal whose first line describes
** another search is refused, naming the first difference.
**
** The file is untrusted: it is read by the reader `load` uses (lang/file.c:
** a regular file only, within the memory budget), and every field of every
** line is checked against the header and the search space before the study
** holds it (an index outside the choices, a value outside its range, a
** stream position no trial could have reached), so that a damaged or
** hostile journal is an error naming its line and field, never a crash or
** a search that spins. Replaying the streams stops when interrupted.
*/
#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <limits.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "search.h"

/* ------------------------------------------------------ values to JSON */

/* JSON has no NaN or infinities: they are written as strings */
static json_t *number(double x) {
  if (isnan(x)) return json_string("nan");
  if (isinf(x)) return json_string(x > 0 ? "inf" : "-inf");
  return json_real(x);
}

static int number_of(const json_t *j, double *x) {
  if (json_is_number(j)) return *x = json_number_value(j), 0;
  const char *s = json_string_value(j);
  if (!s) return -1;
  if (strcmp(s, "nan") == 0) return *x = NAN, 0;
  if (strcmp(s, "inf") == 0) return *x = INFINITY, 0;
  if (strcmp(s, "-inf") == 0) return *x = -INFINITY, 0;
  return -1;
}

static json_t *value_json(sl_Value v) {
  switch (v.type) {
    case SL_NUMBER: return number(v.u.n);
    case SL_STRING: return json_string(sl_str(v));
    case SL_BOOL: return json_boolean(v.u.b);
    case SL_LIST: {
      json_t *a = json_array();
      for (size_t i = 0; i < sl_list_len(v); i++) json_array_append_new(a, value_json(sl_list_get(v, i)));
      return a;
    }
    default: return json_null();
  }
}

static sl_Value json_value(const json_t *j) {
  if (json_is_string(j)) return sl_string(json_string_value(j));
  if (json_is_number(j)) return sl_number(json_number_value(j));
  if (json_is_boolean(j)) return sl_bool(json_is_true(j));
  if (json_is_array(j)) {
    sl_Value l = sl_list_new();
    for (size_t i = 0; i < json_array_size(j); i++) sl_list_push(l, json_value(json_array_get(j, i)));
    return l;
  }
  return sl_nil();
}

/* --------------------------------------------------------------- header */

/* the sampler's part, under its name: its options, then what its header
** hook gives (the grid's lists); none for a sampler without either */
static void sampler_header(json_t *h, const slS_Study *st) {
  const slS_Sampler *s = st->sampler;
  if (!(s->options && s->options[0].name) && !s->header) return;
  json_t *part = json_object();
  for (const slS_Option *o = s->options; o && o->name; o++)
    json_object_set_new(part, o->name, json_integer(slS_sampler_option_value(st, o)));
  if (s->header) {
    sl_Value r = s->header(st);
    for (size_t i = 0; i < sl_record_len(r); i++)
      json_object_set_new(part, sl_record_key(r, i), value_json(sl_record_value(r, i)));
    sl_release(r);
  }
  json_object_set_new(h, s->name, part);
}

static json_t *header(const slS_Study *st) {
  json_t *h = json_object(), *dirs = json_array(), *names = json_array();
  json_object_set_new(h, "syslab_study", json_integer(1));
  json_object_set_new(h, "sampler", json_string(st->sampler->name));
  json_object_set_new(h, "seed", json_integer(st->seed));
  for (int k = 0; k < st->nobj; k++) {
    json_array_append_new(dirs, json_string(st->maximize[k] ? "maximize" : "minimize"));
    json_array_append_new(names, json_string(st->objnames[k]));
  }
  json_object_set_new(h, "directions", dirs);
  json_object_set_new(h, "objectives", names);
  json_object_set_new(h, "pruner", json_string(st->pruner == SLS_MEDIAN ? "median" : "none"));
  if (st->pruner == SLS_MEDIAN)
    json_object_set_new(h, "pruner_settings",
                        json_pack("{s:i, s:i, s:i, s:i}", "startup", st->prune_startup, "warmup", st->prune_warmup,
                                  "interval", st->prune_interval, "min_trials", st->prune_min_trials));
  sampler_header(h, st);
  return h;
}

/* the first key whose values differ, described for the user */
static int compare_headers(json_t *file, json_t *mine, const char *path, char *err, size_t errlen) {
  const char *key;
  json_t *v;
  json_object_foreach(mine, key, v) {
    json_t *w = json_object_get(file, key);
    if (w && json_equal(v, w)) continue;
    char *a = json_dumps(v, JSON_COMPACT | JSON_ENCODE_ANY),
         *b = w ? json_dumps(w, JSON_COMPACT | JSON_ENCODE_ANY) : NULL;
    snprintf(err, errlen, "the journal %s was written by another search: its %s is %s, this search's is %s", path, key,
             b ? b : "not set", a);
    free(a);
    free(b);
    return -1;
  }
  json_object_foreach(file, key, v) {
    if (json_object_get(mine, key)) continue;
    char *b = json_dumps(v, JSON_COMPACT | JSON_ENCODE_ANY);
    snprintf(err, errlen, "the journal %s was written by another search: its %s is %s, this search has none", path, key,
             b);
    free(b);
    return -1;
  }
  return 0;
}

/* ---------------------------------------------------------------- trials */

static json_t *dist_json(const slS_Dist *d) {
  if (d->kind == SLS_CATEGORICAL)
    return json_pack("{s:s, s:o}", "kind", "categorical", "choices", value_json(d->choices));
  return json_pack("{s:s, s:o, s:o, s:o, s:b}", "kind", d->kind == SLS_INT ? "int" : "float", "low", number(d->low),
                   "high", number(d->high), "step", number(d->step), "log", d->log);
}

static json_t *trial_json(const slS_Study *st, const slS_Trial *t) {
  json_t *o = json_object(), *params = json_array(), *values = json_array(), *inter = json_array();
  json_object_set_new(o, "trial", json_integer(t->number));
  json_object_set_new(o, "state", json_string(slS_state_name(t->state)));
  for (int i = 0; i < t->nparams; i++) {
    const slS_Param *p = &st->space[t->param[i]];
    json_array_append_new(params, json_pack("{s:s, s:o, s:o}", "name", p->name, "distribution", dist_json(&p->dist),
                                            "internal", number(t->internal[i])));
  }
  json_object_set_new(o, "params", params);
  for (int k = 0; k < t->nvalues; k++) json_array_append_new(values, number(t->values[k]));
  json_object_set_new(o, "values", values);
  for (int i = 0; i < t->ninter; i++)
    json_array_append_new(inter, json_pack("[i, o]", t->steps[i], number(t->inter[i])));
  json_object_set_new(o, "intermediate", inter);
  json_object_set_new(o, "seconds", number(t->seconds));
  if (t->message) json_object_set_new(o, "message", json_string(t->message));
  if (t->grid_id >= 0) json_object_set_new(o, "grid_id", json_integer(t->grid_id));
  json_object_set_new(o, "draws", json_pack("[I, I]", (json_int_t)t->draws[0], (json_int_t)t->draws[1]));
  return o;
}

/* -------------------------------------------------------------- checking */

/* A journal is read as untrusted input: a file edited by hand, damaged,
** or written by someone else. Every field of every line is checked
** against the header and the search space before the study uses it, and a
** bad one is an error naming its line and field and what is allowed. */

typedef struct {
  const char *path;
  int line;
  char *err;
  size_t errlen;
} Where;

static int bad(const Where *w, const char *field, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

static int bad(const Where *w, const char *field, const char *fmt, ...) {
  char why[1024];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(why, sizeof why, fmt, ap);
  va_end(ap);
  if (field) snprintf(w->err, w->errlen, "line %d of the journal %s, field \"%s\": %s", w->line, w->path, field, why);
  else snprintf(w->err, w->errlen, "line %d of the journal %s: %s", w->line, w->path, why);
  return -1;
}

/* a JSON value as the file holds it, shortened for a message */
static const char *shown(const json_t *j, char *out, size_t size) {
  char *s = j ? json_dumps(j, JSON_COMPACT | JSON_ENCODE_ANY) : NULL;
  if (!s) snprintf(out, size, "nothing");
  else if (strlen(s) > 60) snprintf(out, size, "%.57s...", s);
  else snprintf(out, size, "%s", s);
  free(s);
  return out;
}

static int missing_or(const Where *w, const char *field, const json_t *j, const char *what) {
  char s[80];
  if (!j) return bad(w, field, "is missing: it must be %s", what);
  return bad(w, field, "%s is not %s", shown(j, s, sizeof s), what);
}

/* the keys of o are among `allowed`; `prefix` names o ("params[0].") */
static int only_keys(const Where *w, const json_t *o, const char *const *allowed, const char *what,
                     const char *prefix) {
  const char *key;
  json_t *v;
  json_object_foreach((json_t *)o, key, v) {
    int known = 0;
    for (int i = 0; allowed[i] && !known; i++) known = strcmp(key, allowed[i]) == 0;
    if (known) continue;
    char field[160], list[256] = "";
    size_t used = 0;
    for (int i = 0; allowed[i]; i++)
      used +=
          (size_t)snprintf(list + used, used < sizeof list ? sizeof list - used : 0, "%s%s", i ? ", " : "", allowed[i]);
    snprintf(field, sizeof field, "%s%.100s", prefix, key);
    return bad(w, field, "is not a field of %s (its fields: %s)", what, list);
  }
  return 0;
}

/* a number: JSON numbers, and the strings "nan", "inf", "-inf" */
static int number_field(const Where *w, const char *field, const json_t *j, double *x) {
  if (number_of(j, x) == 0) return 0;
  return missing_or(w, field, j, "a number");
}

static int finite_field(const Where *w, const char *field, const json_t *j, double *x) {
  if (number_of(j, x) == 0 && isfinite(*x)) return 0;
  return missing_or(w, field, j, "a finite number");
}

/* a JSON integer in lo..hi */
static int whole_field(const Where *w, const char *field, const json_t *j, json_int_t lo, json_int_t hi,
                       const char *what, json_int_t *out) {
  if (json_is_integer(j) && json_integer_value(j) >= lo && json_integer_value(j) <= hi) {
    *out = json_integer_value(j);
    return 0;
  }
  return missing_or(w, field, j, what);
}

static int integral(double x) { return isfinite(x) && x == floor(x); }

/* a distribution, by suggest's rules (search/commands.c) */
static int dist_from(const Where *w, const char *field, const json_t *j, slS_Dist *d) {
  static const char *const categorical[] = {"kind", "choices", NULL};
  static const char *const numeric[] = {"kind", "low", "high", "step", "log", NULL};
  char f[200], s[80], prefix[200];
  memset(d, 0, sizeof *d);
  d->choices = sl_nil();
  if (!json_is_object(j)) return missing_or(w, field, j, "a distribution (its kind, and its range or its choices)");
  const json_t *kj = json_object_get(j, "kind");
  const char *kind = json_string_value(kj);
  snprintf(f, sizeof f, "%s.kind", field);
  snprintf(prefix, sizeof prefix, "%s.", field);
  if (!kind || (strcmp(kind, "int") && strcmp(kind, "float") && strcmp(kind, "categorical")))
    return missing_or(w, f, kj, "a kind of distribution: int, float or categorical");
  if (strcmp(kind, "categorical") == 0) {
    if (only_keys(w, j, categorical, "a categorical distribution", prefix)) return -1;
    const json_t *c = json_object_get(j, "choices");
    snprintf(f, sizeof f, "%s.choices", field);
    if (!json_is_array(c) || json_array_size(c) == 0 || json_array_size(c) > INT_MAX)
      return missing_or(w, f, c, "a non-empty list of choices");
    for (size_t i = 0; i < json_array_size(c); i++) {
      const json_t *x = json_array_get(c, i);
      if (json_is_string(x) || json_is_number(x) || json_is_boolean(x) || json_is_null(x)) continue;
      snprintf(f, sizeof f, "%s.choices[%zu]", field, i);
      return bad(w, f, "%s is not a choice: choices are numbers, strings, booleans or null", shown(x, s, sizeof s));
    }
    d->kind = SLS_CATEGORICAL;
    d->choices = json_value(c);
    d->nchoices = (int)json_array_size(c);
    return 0;
  }
  if (only_keys(w, j, numeric, "a numeric distribution", prefix)) return -1;
  d->kind = strcmp(kind, "int") == 0 ? SLS_INT : SLS_FLOAT;
  static const char *const names[] = {"low", "high", "step"};
  double *xs[] = {&d->low, &d->high, &d->step};
  for (int i = 0; i < 3; i++) {
    snprintf(f, sizeof f, "%s.%s", field, names[i]);
    if (finite_field(w, f, json_object_get(j, names[i]), xs[i])) return -1;
  }
  const json_t *lj = json_object_get(j, "log");
  snprintf(f, sizeof f, "%s.log", field);
  if (!json_is_boolean(lj)) return missing_or(w, f, lj, "true or false");
  d->log = json_is_true(lj);
  char lo[32], hi[32];
  sl_format_number(d->low, lo, sizeof lo);
  sl_format_number(d->high, hi, sizeof hi);
  if (d->low > d->high) return bad(w, field, "low must not be above high: %s..%s", lo, hi);
  snprintf(f, sizeof f, "%s.step", field);
  if (d->kind == SLS_INT) {
    if (!integral(d->low) || !integral(d->high))
      return bad(w, field, "an int distribution has whole numbers for low and high: %s..%s", lo, hi);
    if (!integral(d->step) || d->step < 1)
      return bad(w, f, "an int distribution's step is a whole number of at least 1");
    if (d->log && d->step != 1) return bad(w, f, "a log-scale int distribution has step 1");
    if (d->log && d->low < 1) return bad(w, field, "a log-scale int distribution has low >= 1");
  } else {
    if (d->step < 0) return bad(w, f, "a float distribution's step is 0 (none) or more");
    if (d->log && d->step > 0) return bad(w, f, "a log-scale float distribution has no step (0)");
    if (d->log && !(d->low > 0)) return bad(w, field, "a log-scale float distribution has low > 0");
  }
  if (d->step > 0 && !d->log) { /* suggest narrows high to low plus a whole number of steps */
    double r = (d->high - d->low) / d->step;
    if (!(fabs(r - rint(r)) <= 1e-9 * fmax(1, fabs(r))))
      return bad(w, field, "high must be low plus a whole number of steps");
  }
  return 0;
}

/* a parameter's internal value fits its distribution (grid searches: the
** grid's value, checked by the caller) */
static int internal_fits(const Where *w, const char *field, const json_t *j, const slS_Dist *d, double v) {
  char s[80], desc[256];
  slS_dist_describe(d, desc, sizeof desc);
  if (desc[0] && strlen(desc) > 120) snprintf(desc + 117, sizeof desc - 117, "...");
  if (d->kind == SLS_CATEGORICAL) {
    if (integral(v) && v >= 0 && v < d->nchoices) return 0;
    return bad(w, field, "%s is not the index of a choice of %s (0 to %d)", shown(j, s, sizeof s), desc,
               d->nchoices - 1);
  }
  if (d->kind == SLS_INT) {
    if (!(integral(v) && v >= d->low && v <= d->high))
      return bad(w, field, "%s is outside %s", shown(j, s, sizeof s), desc);
    if (fmod(v - d->low, d->step) != 0)
      return bad(w, field, "%s is not on the steps of %s", shown(j, s, sizeof s), desc);
    return 0;
  }
  /* TPE's truncated normal may land within rounding of a bound */
  double tol = 1e-9 * (d->high - d->low);
  if (!(v >= d->low - tol && v <= d->high + tol)) return bad(w, field, "%s is outside %s", shown(j, s, sizeof s), desc);
  if (d->step > 0) {
    double k = (v - d->low) / d->step;
    if (!(fabs(k - rint(k)) < 1e-8)) return bad(w, field, "%s is not on the steps of %s", shown(j, s, sizeof s), desc);
  }
  return 0;
}

static int same_number(double a, double b) { return a == b || (isnan(a) && isnan(b)); }

/* the parameters of trial t from params (names, distributions, values) */
static int params_from(const Where *w, slS_Study *st, slS_Trial *t, const json_t *params) {
  static const char *const keys[] = {"name", "distribution", "internal", NULL};
  char f[160], prefix[64], s[80];
  if (!json_is_array(params)) return missing_or(w, "params", params, "a list of parameters");
  for (size_t i = 0; i < json_array_size(params); i++) {
    const json_t *p = json_array_get(params, i);
    snprintf(prefix, sizeof prefix, "params[%zu]", i);
    if (!json_is_object(p)) return missing_or(w, prefix, p, "a parameter: its name, distribution and internal value");
    snprintf(prefix, sizeof prefix, "params[%zu].", i);
    if (only_keys(w, p, keys, "a parameter", prefix)) return -1;
    const json_t *nj = json_object_get(p, "name");
    const char *name = json_string_value(nj);
    snprintf(f, sizeof f, "params[%zu].name", i);
    if (!name || !name[0] || strlen(name) >= SLS_NAME_MAX) {
      snprintf(s, sizeof s, "a parameter name of 1 to %d characters", SLS_NAME_MAX - 1);
      return missing_or(w, f, nj, s);
    }
    for (int k = 0; k < t->nparams; k++)
      if (strcmp(st->space[t->param[k]].name, name) == 0) return bad(w, f, "'%s' is given twice in one trial", name);
    slS_Dist d;
    snprintf(f, sizeof f, "params[%zu].distribution", i);
    if (dist_from(w, f, json_object_get(p, "distribution"), &d) != 0) {
      slS_dist_free(&d);
      return -1;
    }
    char err[1024];
    int k = slS_space_add(st, name, &d, err, sizeof err);
    if (k < 0) return bad(w, f, "%s", err);
    const json_t *ij = json_object_get(p, "internal");
    double v;
    snprintf(f, sizeof f, "params[%zu].internal", i);
    if (number_field(w, f, ij, &v) != 0) return -1;
    if (st->sampler->points) { /* the grid's value at the trial's point */
      double want;
      if (slS_sample(st, t, k, &want, err, sizeof err) != 0) return bad(w, f, "%s", err);
      if (!same_number(v, want)) {
        char g[32];
        sl_format_number(want, g, sizeof g);
        return bad(w, f, "%s is not the grid's value for '%s' at grid point %ld (%s)", shown(ij, s, sizeof s), name,
                   t->grid_id, g);
      }
    } else if (internal_fits(w, f, ij, &st->space[k].dist, v) != 0) {
      return -1;
    }
    slS_trial_set_param(t, k, v);
  }
  return 0;
}

static int values_from(const Where *w, const slS_Study *st, slS_Trial *t, const json_t *values) {
  char f[64];
  if (!json_is_array(values)) return missing_or(w, "values", values, "a list of numbers");
  size_t n = json_array_size(values);
  if (t->state == SLS_COMPLETE && n != (size_t)st->nobj)
    return bad(w, "values", "a complete trial has %d value%s (one per objective), this one has %zu", st->nobj,
               st->nobj == 1 ? "" : "s", n);
  if (t->state == SLS_PRUNED && n > 1)
    return bad(w, "values", "a pruned trial has at most 1 value (its last intermediate value), this one has %zu", n);
  if (t->state == SLS_FAILED && n != 0) return bad(w, "values", "a failed trial has no values, this one has %zu", n);
  for (size_t k = 0; k < n; k++) {
    snprintf(f, sizeof f, "values[%zu]", k);
    if (number_field(w, f, json_array_get(values, k), &t->values[k]) != 0) return -1;
    if (isnan(t->values[k])) return bad(w, f, "a %s trial's value is a number, not NaN", slS_state_name(t->state));
  }
  t->nvalues = (int)n;
  return 0;
}

static int intermediate_from(const Where *w, const slS_Study *st, slS_Trial *t, const json_t *inter) {
  char f[64];
  if (!json_is_array(inter)) return missing_or(w, "intermediate", inter, "a list of [step, value] pairs");
  if (st->nobj > 1 && json_array_size(inter) > 0)
    return bad(w, "intermediate", "a study of several objectives has no intermediate values");
  for (size_t i = 0; i < json_array_size(inter); i++) {
    const json_t *e = json_array_get(inter, i);
    snprintf(f, sizeof f, "intermediate[%zu]", i);
    if (!json_is_array(e) || json_array_size(e) != 2) return missing_or(w, f, e, "a [step, value] pair");
    json_int_t step;
    double v;
    snprintf(f, sizeof f, "intermediate[%zu][0]", i);
    if (whole_field(w, f, json_array_get(e, 0), 0, 1000000000, "a step from 0 to 1e9", &step) != 0) return -1;
    for (int k = 0; k < t->ninter; k++)
      if (t->steps[k] == (int)step) return bad(w, f, "step %d is reported twice", (int)step);
    snprintf(f, sizeof f, "intermediate[%zu][1]", i);
    if (number_field(w, f, json_array_get(e, 1), &v) != 0) return -1;
    slS_trial_report(t, (int)step, v);
  }
  return 0;
}

/* a pruned trial stopped at an intermediate report and keeps the last
** step's value, unless that is NaN (run.c) */
static int pruned_fits(const Where *w, const slS_Study *st, const slS_Trial *t) {
  if (st->pruner != SLS_MEDIAN)
    return bad(w, "state", "a trial is pruned by the median pruner, and this study has none");
  if (t->ninter == 0)
    return bad(w, "state", "a pruned trial stopped at an intermediate value, and this one has no intermediate value");
  int last = 0;
  for (int i = 1; i < t->ninter; i++)
    if (t->steps[i] > t->steps[last]) last = i;
  double v = t->inter[last];
  if (isnan(v) ? t->nvalues == 0 : t->nvalues == 1 && t->values[0] == v) return 0;
  char s[32];
  sl_format_number(v, s, sizeof s);
  return bad(w, "values", "a pruned trial's value is its last intermediate value (%s at step %d)%s", s, t->steps[last],
             isnan(v) ? ", or none when that is NaN" : "");
}

static int trial_from(const Where *w, slS_Study *st, const json_t *o) {
  static const char *const keys[] = {"trial",   "state",   "params",  "values", "intermediate",
                                     "seconds", "message", "grid_id", "draws",  NULL};
  char s[80];
  if (only_keys(w, o, keys, "a trial line", "")) return -1;
  json_int_t number;
  const json_t *nj = json_object_get(o, "trial");
  if (!json_is_integer(nj) || json_integer_value(nj) != st->ntrials) {
    if (st->ntrials == 0) return bad(w, "trial", "%s must be 0 (the first trial)", shown(nj, s, sizeof s));
    return bad(w, "trial", "%s must be %d (trials are numbered in order)", shown(nj, s, sizeof s), st->ntrials);
  }
  number = json_integer_value(nj);
  slS_Trial *t = slS_trial_new(st);
  t->number = (int)number;
  const json_t *sj = json_object_get(o, "state");
  const char *state = json_string_value(sj);
  t->state = SLS_RUNNING;
  for (slS_State k = SLS_COMPLETE; state && k <= SLS_FAILED; k++)
    if (strcmp(state, slS_state_name(k)) == 0) t->state = k;
  if (t->state == SLS_RUNNING)
    return missing_or(w, "state", sj, "the state of a finished trial (complete, pruned or failed)");
  const json_t *gj = json_object_get(o, "grid_id");
  json_int_t grid_id;
  if (st->sampler->points) { /* a trial is a point of the grid */
    size_t points = st->sampler->points(st);
    snprintf(s, sizeof s, "a grid point, 0 to %zu", points ? points - 1 : 0);
    if (whole_field(w, "grid_id", gj, 0, (json_int_t)points - 1, s, &grid_id) != 0) return -1;
    t->grid_id = (long)grid_id;
  } else if (gj) {
    return bad(w, "grid_id", "only a grid search's trials have a grid point");
  }
  if (params_from(w, st, t, json_object_get(o, "params")) != 0 ||
      values_from(w, st, t, json_object_get(o, "values")) != 0 ||
      intermediate_from(w, st, t, json_object_get(o, "intermediate")) != 0)
    return -1;
  if (t->state == SLS_PRUNED && pruned_fits(w, st, t) != 0) return -1;
  const json_t *secj = json_object_get(o, "seconds");
  if (number_of(secj, &t->seconds) != 0 || !isfinite(t->seconds) || t->seconds < 0)
    return missing_or(w, "seconds", secj, "a number of seconds, at least 0");
  const json_t *mj = json_object_get(o, "message");
  if (mj && !json_is_string(mj)) return missing_or(w, "message", mj, "a string");
  if (mj && t->state != SLS_FAILED) return bad(w, "message", "only a failed trial has a message");
  if (mj) t->message = strdup(json_string_value(mj));
  const json_t *dj = json_object_get(o, "draws");
  if (!json_is_array(dj) || json_array_size(dj) != 2)
    return missing_or(w, "draws", dj, "two whole numbers (the positions of the sampler's two streams)");
  const slM_Mt *rng[2] = {&st->rng, &st->rng2};
  for (int k = 0; k < 2; k++) {
    char f[24];
    json_int_t x;
    snprintf(f, sizeof f, "draws[%d]", k);
    if (whole_field(w, f, json_array_get(dj, (size_t)k), 0, INT64_MAX, "a whole number of at least 0", &x) != 0)
      return -1;
    if ((uint64_t)x < rng[k]->draws) /* the grid's shuffle draws before any trial */
      return bad(w, f, "%lld is before the stream's position after seeding (%llu)", (long long)x,
                 (unsigned long long)rng[k]->draws);
    t->draws[k] = (uint64_t)x;
  }
  st->seconds += t->seconds;
  return 0;
}

/* an intermediate report, for readers of the file: checked, not kept */
static int report_fits(const Where *w, const slS_Study *st, const json_t *o) {
  static const char *const keys[] = {"report", "step", "value", NULL};
  char what[96];
  json_int_t x;
  double v;
  if (only_keys(w, o, keys, "a report line", "")) return -1;
  snprintf(what, sizeof what, "the number of a trial not yet finished (%d or more)", st->ntrials);
  if (whole_field(w, "report", json_object_get(o, "report"), st->ntrials, INT_MAX, what, &x) != 0) return -1;
  if (st->nobj > 1) return bad(w, "report", "a study of several objectives reports no intermediate values");
  if (whole_field(w, "step", json_object_get(o, "step"), 0, 1000000000, "a step from 0 to 1e9", &x) != 0) return -1;
  return number_field(w, "value", json_object_get(o, "value"), &v);
}

/* What one trial can take from either stream, at most: per parameter of
** the space, a random draw (two outputs per choice of a categorical, two
** for a number), TPE's candidates (four outputs each) and NSGA-II's swap
** and mutation (four); 64 times that for the rejection loops (random
** intervals, NSGA-II's crossover retries), plus 1024 for the draws that
** do not depend on the parameters (tournaments, a resumed grid's point). */
static double trial_draws_max(const slS_Study *st) {
  double per = 0;
  for (int p = 0; p < st->nspace; p++) {
    const slS_Dist *d = &st->space[p].dist;
    per += 2.0 * (d->kind == SLS_CATEGORICAL ? d->nchoices : 1) + 4;
    if (st->sampler->extra_draws) per += st->sampler->extra_draws(st);
  }
  return 1024 + 64 * per;
}

/* ---------------------------------------------------------------- files */

/* One line, one write, then fsync. The file must be a regular one (a FIFO
** put in the journal's place would block the search); `fresh` creates it,
** and refuses a name that exists. */
static int append_line(const char *path, json_t *o, int fresh, char *err, size_t errlen) {
  char *line = json_dumps(o, JSON_COMPACT | JSON_REAL_PRECISION(17));
  json_decref(o);
  if (!line) {
    snprintf(err, errlen, "could not encode a journal line");
    return -1;
  }
  size_t n = strlen(line);
  line[n] = '\n'; /* json_dumps leaves room for its terminator: reuse it */
  char why[512];
  int fd = slF_open(path, O_WRONLY | O_APPEND | (fresh ? O_CREAT | O_EXCL | O_NOFOLLOW : 0), "a syslab study journal",
                    NULL, why, sizeof why),
      rc = 0;
  if (fd < 0) {
    snprintf(err, errlen, "could not append to the journal: %s", why);
    rc = -1;
  } else if (write(fd, line, n + 1) != (ssize_t)(n + 1) || fsync(fd) != 0) {
    snprintf(err, errlen, "could not append to the journal %s: %s", path, strerror(errno));
    rc = -1;
  }
  if (fd >= 0) close(fd);
  free(line);
  return rc;
}

/* a new journal: the header written to a temporary name, synced, renamed */
static int create(const char *path, json_t *h, char *err, size_t errlen) {
  size_t len = strlen(path) + 16;
  char *tmp = malloc(len);
  snprintf(tmp, len, "%s.tmp", path);
  unlink(tmp);
  int rc = append_line(tmp, json_incref(h), 1, err, errlen);
  if (rc == 0 && rename(tmp, path) != 0) {
    snprintf(err, errlen, "could not create the journal %s: %s", path, strerror(errno));
    rc = -1;
  }
  if (rc != 0) unlink(tmp);
  free(tmp);
  return rc;
}

int slS_journal_load(slS_Study *st, const char *text, size_t len, const char *path, size_t *good_end, char **warning,
                     char *err, size_t errlen) {
  *warning = NULL;
  *good_end = 0;
  json_t *mine = header(st);
  int rc = 0, lineno = 0, *lines = NULL; /* the line of each trial, for the bound on its draws */
  Where w = {path, 0, err, errlen};
  for (size_t at = 0; at < len && rc == 0;) {
    const char *nl = memchr(text + at, '\n', len - at);
    size_t end = nl ? (size_t)(nl - text) : len;
    w.line = ++lineno;
    json_error_t jerr;
    json_t *o = nl ? json_loadb(text + at, end - at, JSON_REJECT_DUPLICATES, &jerr) : NULL;
    if (!json_is_object(o)) {
      json_decref(o);
      if (lineno > 1 && (!nl || end + 1 >= len)) { /* the last line, cut short by a crash */
        char buf[256];
        snprintf(buf, sizeof buf,
                 "warning: the last line of the journal %s is incomplete (a crash while writing); it is ignored", path);
        *warning = strdup(buf);
        break;
      }
      if (lineno == 1)
        snprintf(err, errlen, "%s is not a syslab study journal (its first line is not a JSON object)", path);
      else
        bad(&w, NULL, "not a JSON object%s%s%s: the file is damaged", o ? "" : " (", o ? "" : jerr.text, o ? "" : ")");
      rc = -1;
      break;
    }
    if (lineno == 1) {
      if (!json_object_get(o, "syslab_study")) {
        snprintf(err, errlen, "%s is not a syslab study journal (its first line has no \"syslab_study\")", path);
        rc = -1;
      } else {
        rc = compare_headers(o, mine, path, err, errlen);
      }
    } else if (json_object_get(o, "trial")) {
      int before = st->ntrials;
      rc = trial_from(&w, st, o);
      if (rc != 0 && st->ntrials > before) slS_trial_drop_last(st);
      if (rc == 0) {
        lines = realloc(lines, (size_t)st->ntrials * sizeof *lines);
        lines[st->ntrials - 1] = lineno;
      }
    } else if (json_object_get(o, "report")) {
      rc = report_fits(&w, st, o);
    } else if (json_object_get(o, "syslab_study")) {
      rc = bad(&w, "syslab_study", "only the first line is a header: this line repeats it");
    } else {
      void *it = json_object_iter(o);
      rc = bad(&w, it ? json_object_iter_key(it) : NULL,
               "this line is neither a trial nor a report (it has no \"trial\" or \"report\")");
    }
    json_decref(o);
    *good_end = end + 1;
    at = end + 1;
  }
  json_decref(mine);
  if (rc == 0 && lineno == 0) {
    snprintf(err, errlen, "the journal %s is empty: delete it to start a new search", path);
    rc = -1;
  }
  /* the streams' positions: no further than the trials could have drawn,
  ** with as many more trials as a distributed search may have had running */
  double limit = ((double)st->ntrials + SLS_MAX_WORKERS) * trial_draws_max(st);
  const slM_Mt *rng[2] = {&st->rng, &st->rng2};
  for (int i = 0; rc == 0 && i < st->ntrials; i++)
    for (int k = 0; rc == 0 && k < 2; k++)
      if ((double)(st->trials[i].draws[k] - rng[k]->draws) > limit) {
        w.line = lines[i];
        rc = bad(&w, k ? "draws[1]" : "draws[0]",
                 "%llu is more than the trials could have drawn (at most %.0f outputs after seeding, for this space)",
                 (unsigned long long)st->trials[i].draws[k], limit);
      }
  free(lines);
  if (rc != 0) {
    free(*warning);
    *warning = NULL;
  }
  return rc;
}

/* Advances a stream to `to`, a few million outputs at a time, so that an
** interrupt stops a long replay within milliseconds. */
static int advance(slM_Mt *m, uint64_t to) {
  while (m->draws < to) {
    if (sl_interrupted()) return -1;
    uint64_t n = to - m->draws;
    slM_mt_skip(m, n < (1u << 22) ? n : (1u << 22));
  }
  return 0;
}

int slS_journal_restore(slS_Study *st) {
  if (st->ntrials == 0) return 0;
  const slS_Trial *last = &st->trials[st->ntrials - 1]; /* the streams as they stood after it */
  return advance(&st->rng, last->draws[0]) != 0 || advance(&st->rng2, last->draws[1]) != 0 ? -1 : 0;
}

int slS_journal_open(slS_Study *st, const char *path, char **warning, char *err, size_t errlen) {
  *warning = NULL;
  struct stat sb;
  if (stat(path, &sb) != 0 && errno == ENOENT) {
    json_t *mine = header(st);
    int rc = create(path, mine, err, errlen);
    json_decref(mine);
    if (rc == 0) st->journal = strdup(path);
    return rc;
  }
  /* the reader `load` uses: a regular file, read whole, within the memory budget */
  size_t len, good_end;
  char *text = slF_read_file(path, "a syslab study journal", 1, &len, err, errlen);
  if (!text) return -1;
  int rc = slS_journal_load(st, text, len, path, &good_end, warning, err, errlen);
  free(text);
  if (rc == 0 && *warning && truncate(path, (off_t)good_end) != 0) {
    snprintf(err, errlen, "could not cut the incomplete last line from %s: %s", path, strerror(errno));
    rc = -1;
  }
  if (rc == 0 && slS_journal_restore(st) != 0) {
    snprintf(err, errlen, "interrupted while restoring the sampler's streams from %s", path);
    rc = -1;
  }
  if (rc != 0) {
    free(*warning);
    *warning = NULL;
    return -1;
  }
  st->journal = strdup(path);
  return 0;
}

int slS_journal_trial(const slS_Study *st, const slS_Trial *t, char *err, size_t errlen) {
  return append_line(st->journal, trial_json(st, t), 0, err, errlen);
}

int slS_journal_report(const slS_Study *st, const slS_Trial *t, char *err, size_t errlen) {
  json_t *o = json_pack("{s:i, s:i, s:o}", "report", t->number, "step", t->steps[t->ninter - 1], "value",
                        number(t->inter[t->ninter - 1]));
  return append_line(st->journal, o, 0, err, errlen);
}
