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
*/
#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <math.h>
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

static json_t *header(const slS_Study *st) {
  json_t *h = json_object(), *dirs = json_array(), *names = json_array();
  json_object_set_new(h, "syslab_study", json_integer(1));
  json_object_set_new(h, "sampler", json_string(slS_sampler_name(st->sampler)));
  json_object_set_new(h, "seed", json_integer(st->seed));
  for (int k = 0; k < st->nobj; k++) {
    json_array_append_new(dirs, json_string(st->maximize[k] ? "maximize" : "minimize"));
    json_array_append_new(names, json_string(st->objnames[k]));
  }
  json_object_set_new(h, "directions", dirs);
  json_object_set_new(h, "objectives", names);
  json_object_set_new(h, "pruner", json_string(st->pruner == SLS_MEDIAN ? "median" : "none"));
  if (st->pruner == SLS_MEDIAN)
    json_object_set_new(h, "pruner_settings", json_pack("{s:i, s:i, s:i, s:i}", "startup", st->prune_startup, "warmup",
                                                        st->prune_warmup, "interval", st->prune_interval, "min_trials",
                                                        st->prune_min_trials));
  if (st->sampler == SLS_TPE)
    json_object_set_new(h, "tpe", json_pack("{s:i, s:i}", "startup", st->startup, "candidates", st->ei_candidates));
  if (st->sampler == SLS_NSGA2) json_object_set_new(h, "nsga2", json_pack("{s:i}", "population", st->population));
  if (st->sampler == SLS_GRID) {
    json_t *g = json_object();
    for (int i = 0; i < st->ngrid; i++) json_object_set_new(g, st->grid_names[i], value_json(st->grid_values[i]));
    json_object_set_new(h, "grid", g);
  }
  return h;
}

/* the first key whose values differ, described for the user */
static int compare_headers(json_t *file, json_t *mine, char *err, size_t errlen) {
  const char *key;
  json_t *v;
  json_object_foreach(mine, key, v) {
    json_t *w = json_object_get(file, key);
    if (w && json_equal(v, w)) continue;
    char *a = json_dumps(v, JSON_COMPACT | JSON_ENCODE_ANY), *b = w ? json_dumps(w, JSON_COMPACT | JSON_ENCODE_ANY) : NULL;
    snprintf(err, errlen, "the journal was written by another search: its %s is %s, this search's is %s", key,
             b ? b : "not set", a);
    free(a);
    free(b);
    return -1;
  }
  json_object_foreach(file, key, v) {
    if (json_object_get(mine, key)) continue;
    char *b = json_dumps(v, JSON_COMPACT | JSON_ENCODE_ANY);
    snprintf(err, errlen, "the journal was written by another search: its %s is %s, this search has none", key, b);
    free(b);
    return -1;
  }
  return 0;
}

/* ---------------------------------------------------------------- trials */

static json_t *dist_json(const slS_Dist *d) {
  if (d->kind == SLS_CATEGORICAL) return json_pack("{s:s, s:o}", "kind", "categorical", "choices", value_json(d->choices));
  return json_pack("{s:s, s:o, s:o, s:o, s:b}", "kind", d->kind == SLS_INT ? "int" : "float", "low", number(d->low),
                   "high", number(d->high), "step", number(d->step), "log", d->log);
}

static int dist_from(const json_t *j, slS_Dist *d) {
  memset(d, 0, sizeof *d);
  d->choices = sl_nil();
  const char *kind = json_string_value(json_object_get(j, "kind"));
  if (!kind) return -1;
  if (strcmp(kind, "categorical") == 0) {
    json_t *c = json_object_get(j, "choices");
    if (!json_is_array(c) || json_array_size(c) == 0) return -1;
    d->kind = SLS_CATEGORICAL;
    d->choices = json_value(c);
    d->nchoices = (int)json_array_size(c);
    return 0;
  }
  d->kind = strcmp(kind, "int") == 0 ? SLS_INT : SLS_FLOAT;
  d->log = json_is_true(json_object_get(j, "log"));
  if (number_of(json_object_get(j, "low"), &d->low) || number_of(json_object_get(j, "high"), &d->high) ||
      number_of(json_object_get(j, "step"), &d->step))
    return -1;
  return 0;
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
  for (int i = 0; i < t->ninter; i++) json_array_append_new(inter, json_pack("[i, o]", t->steps[i], number(t->inter[i])));
  json_object_set_new(o, "intermediate", inter);
  json_object_set_new(o, "seconds", number(t->seconds));
  if (t->message) json_object_set_new(o, "message", json_string(t->message));
  if (t->grid_id >= 0) json_object_set_new(o, "grid_id", json_integer(t->grid_id));
  json_object_set_new(o, "draws", json_pack("[I, I]", (json_int_t)t->draws[0], (json_int_t)t->draws[1]));
  return o;
}

static int trial_from(slS_Study *st, const json_t *o, char *err, size_t errlen) {
  json_t *params = json_object_get(o, "params"), *values = json_object_get(o, "values");
  json_t *inter = json_object_get(o, "intermediate"), *draws = json_object_get(o, "draws");
  const char *state = json_string_value(json_object_get(o, "state"));
  if (!json_is_array(params) || !json_is_array(values) || !json_is_array(inter) || !json_is_array(draws) || !state ||
      json_integer_value(json_object_get(o, "trial")) != st->ntrials) {
    snprintf(err, errlen, "trial %d is malformed or out of order", st->ntrials);
    return -1;
  }
  slS_Trial *t = slS_trial_new(st);
  for (slS_State s = SLS_RUNNING; s <= SLS_FAILED; s++)
    if (strcmp(state, slS_state_name(s)) == 0) t->state = s;
  for (size_t i = 0; i < json_array_size(params); i++) {
    json_t *p = json_array_get(params, i);
    const char *name = json_string_value(json_object_get(p, "name"));
    slS_Dist d;
    double internal;
    if (!name || dist_from(json_object_get(p, "distribution"), &d) != 0 ||
        number_of(json_object_get(p, "internal"), &internal) != 0) {
      snprintf(err, errlen, "trial %d has a malformed parameter", t->number);
      return -1;
    }
    int k = slS_space_add(st, name, &d, err, errlen);
    if (k < 0) return -1;
    slS_trial_set_param(t, k, internal);
  }
  t->nvalues = (int)json_array_size(values);
  if (t->nvalues > st->nobj) t->nvalues = st->nobj;
  for (int k = 0; k < t->nvalues; k++) number_of(json_array_get(values, (size_t)k), &t->values[k]);
  for (size_t i = 0; i < json_array_size(inter); i++) {
    double v = NAN;
    number_of(json_array_get(json_array_get(inter, i), 1), &v);
    slS_trial_report(t, (int)json_integer_value(json_array_get(json_array_get(inter, i), 0)), v);
  }
  number_of(json_object_get(o, "seconds"), &t->seconds);
  const char *msg = json_string_value(json_object_get(o, "message"));
  if (msg) t->message = strdup(msg);
  json_t *g = json_object_get(o, "grid_id");
  if (json_is_integer(g)) t->grid_id = (long)json_integer_value(g);
  t->draws[0] = (uint64_t)json_integer_value(json_array_get(draws, 0));
  t->draws[1] = (uint64_t)json_integer_value(json_array_get(draws, 1));
  st->seconds += t->seconds;
  return 0;
}

/* ---------------------------------------------------------------- files */

static int append_line(const char *path, json_t *o, char *err, size_t errlen) {
  char *line = json_dumps(o, JSON_COMPACT | JSON_REAL_PRECISION(17));
  json_decref(o);
  if (!line) {
    snprintf(err, errlen, "could not encode a journal line");
    return -1;
  }
  size_t n = strlen(line);
  line[n] = '\n';  /* json_dumps leaves room for its terminator: reuse it */
  int fd = open(path, O_WRONLY | O_APPEND | O_CREAT, 0644), rc = 0;
  if (fd < 0 || write(fd, line, n + 1) != (ssize_t)(n + 1) || fsync(fd) != 0) {
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
  int rc = append_line(tmp, json_incref(h), err, errlen);
  if (rc == 0 && rename(tmp, path) != 0) {
    snprintf(err, errlen, "could not create the journal %s: %s", path, strerror(errno));
    rc = -1;
  }
  if (rc != 0) unlink(tmp);
  free(tmp);
  return rc;
}

static char *read_all(const char *path, size_t *len) {
  FILE *f = fopen(path, "rb");
  if (!f) return NULL;
  size_t cap = 1 << 16, n = 0;
  char *buf = malloc(cap + 1);
  size_t got;
  while ((got = fread(buf + n, 1, cap - n, f)) > 0) {
    n += got;
    if (n == cap) buf = realloc(buf, (cap *= 2) + 1);
  }
  fclose(f);
  buf[n] = '\0';
  *len = n;
  return buf;
}

int slS_journal_open(slS_Study *st, const char *path, char **warning, char *err, size_t errlen) {
  *warning = NULL;
  json_t *mine = header(st);
  struct stat sb;
  if (stat(path, &sb) != 0) {
    int rc = create(path, mine, err, errlen);
    json_decref(mine);
    if (rc == 0) st->journal = strdup(path);
    return rc;
  }
  size_t len;
  char *text = read_all(path, &len);
  if (!text) {
    json_decref(mine);
    snprintf(err, errlen, "could not read the journal %s: %s", path, strerror(errno));
    return -1;
  }
  int rc = 0, lineno = 0;
  size_t good_end = 0;   /* bytes up to the end of the last complete, valid line */
  for (size_t at = 0; at < len && rc == 0;) {
    char *nl = memchr(text + at, '\n', len - at);
    size_t end = nl ? (size_t)(nl - text) : len;
    lineno++;
    json_error_t jerr;
    json_t *o = nl ? json_loadb(text + at, end - at, 0, &jerr) : NULL;
    if (!json_is_object(o)) {
      json_decref(o);
      if (lineno > 1 && (!nl || end + 1 >= len)) {  /* the last line, cut short by a crash */
        char buf[256];
        snprintf(buf, sizeof buf, "warning: the last line of the journal %s is incomplete (a crash while writing); it is ignored", path);
        *warning = strdup(buf);
        break;
      }
      if (lineno == 1) snprintf(err, errlen, "%s is not a syslab study journal (its first line is not a JSON object)", path);
      else snprintf(err, errlen, "line %d of the journal %s is not a JSON object: the file is damaged", lineno, path);
      rc = -1;
      break;
    }
    if (lineno == 1) {
      if (!json_object_get(o, "syslab_study")) {
        snprintf(err, errlen, "%s is not a syslab study journal (its first line has no \"syslab_study\")", path);
        rc = -1;
      } else {
        rc = compare_headers(o, mine, err, errlen);
      }
    } else if (json_object_get(o, "trial")) {
      rc = trial_from(st, o, err, errlen);
      if (rc != 0) {
        char inner[512];
        snprintf(inner, sizeof inner, "%s", err);
        snprintf(err, errlen, "line %d of the journal %s: %s", lineno, path, inner);
      }
    }
    json_decref(o);
    good_end = end + 1;
    at = end + 1;
  }
  free(text);
  json_decref(mine);
  if (rc == 0 && lineno == 0) {
    snprintf(err, errlen, "the journal %s is empty: delete it to start a new search", path);
    rc = -1;
  }
  if (rc == 0 && *warning && truncate(path, (off_t)good_end) != 0) {
    snprintf(err, errlen, "could not cut the incomplete last line from %s: %s", path, strerror(errno));
    rc = -1;
  }
  if (rc != 0) {
    free(*warning);
    *warning = NULL;
    return -1;
  }
  st->journal = strdup(path);
  if (st->ntrials > 0) {  /* the streams as they stood after the last finished trial */
    const slS_Trial *last = &st->trials[st->ntrials - 1];
    if (last->draws[0] >= st->rng.draws) slM_mt_skip(&st->rng, last->draws[0] - st->rng.draws);
    if (last->draws[1] >= st->rng2.draws) slM_mt_skip(&st->rng2, last->draws[1] - st->rng2.draws);
  }
  return 0;
}

int slS_journal_trial(const slS_Study *st, const slS_Trial *t, char *err, size_t errlen) {
  return append_line(st->journal, trial_json(st, t), err, errlen);
}

int slS_journal_report(const slS_Study *st, const slS_Trial *t, char *err, size_t errlen) {
  json_t *o = json_pack("{s:i, s:i, s:o}", "report", t->number, "step", t->steps[t->ninter - 1], "value",
                        number(t->inter[t->ninter - 1]));
  return append_line(st->journal, o, err, errlen);
}
