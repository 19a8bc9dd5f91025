/*
** report.c - `syslab report`: execute the lab notebooks through the syslab
** kernel and assemble the lab report, phase by phase.
**
**   syslab report [NOTEBOOK ...] [-o DIR] [-p NAME=VALUE ...] [--allow-errors]
**                 [--timeout SECONDS] [--no-cache] [--no-pdf] [-j N]
**
** Each notebook runs in a kernel of its own, started like any Jupyter
** client would start it (execute.c). The executed notebooks go to
** DIR/notebooks, the report's files (outputs.c: report.md with its figures
** in DIR/figures, report.html, report.pdf) to DIR. Notebooks are only
** read, never written. A notebook unchanged since its last successful run
** is taken from DIR/.cache instead of running again (cache.c); --no-cache
** runs everything.
**
** The phases: the folder is checked (folder.c) and every notebook read,
** its labels (labels.c), options and inline values checked, before
** anything is written or run, since notebooks may come from anyone; the
** previous report is removed; each notebook is taken from the cache or
** planned to run; the runs go serially, in threads or over MPI ranks
** (parallel.c); their outcomes are collected in the order of the
** notebooks, whatever order they ran in, so the report is the serial one
** apart from its timing fields; the report's files are written and the
** manifest saved. SIGINT, SIGTERM and SIGHUP stop the run with its kernel
** shut down (see client.c), then end the process with that signal.
*/
#include "report.h"

#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cache.h"
#include "client.h"
#include "execute.h"
#include "folder.h"
#include "inline.h"
#include "labels.h"
#include "notebook.h"
#include "outputs.h"
#include "parallel.h"
#include "params.h"
#include "syslab.h"
#include "slutil.h"

/* a signal stopped the run: the kernel is already shut down; end the way
** the signal would have ended the process */
static void die_of_signal(int sig) {
  fprintf(stderr, "syslab report: stopped by signal %d (%s); the kernel was shut down\n", sig, strsignal(sig));
  signal(sig, SIG_DFL);
  raise(sig);
  exit(128 + sig);
}

/* One `syslab report` run, phase by phase (each a helper below); what it
** holds is released in one place, report_free, whichever phase it ends in. */
typedef struct {
  const slR_Options *o;
  char dir[4200], cache_dir[4200]; /* DIR/notebooks and DIR/.cache */
  json_t **read;                   /* per notebook: as read; NULL once taken (or unreadable) */
  json_t *read_errors;             /* per notebook: why it cannot be read, or null */
  json_t *failures;                /* what went wrong, for the report's notice */
  json_t *written;                 /* paths this run wrote in the folder, for its manifest */
  slR_Notebook *done;              /* the report's notebooks, in order */
  slR_Run *runs;                   /* those that run (the others come from the cache) */
  size_t ndone, nruns;
  int cells, cached;
} Report;

static void report_free(Report *R) {
  for (size_t i = 0; R->read && i < R->o->count; i++) json_decref(R->read[i]);
  free(R->read);
  json_decref(R->read_errors);
  for (size_t i = 0; i < R->ndone; i++) json_decref(R->done[i].nb);
  free(R->done);
  free(R->runs); /* their notebooks belong to done[], or were released when they failed */
  json_decref(R->failures);
  json_decref(R->written);
}

/* Every notebook read and its name and labels checked before anything is
** written or run. Returns the number of problems, each printed. */
static int read_notebooks(Report *R) {
  const slR_Options *o = R->o;
  char err[2048];
  int refused = 0;
  R->read = calloc(o->count, sizeof *R->read);
  R->read_errors = json_array();
  for (size_t i = 0; i < o->count; i++) {
    char stem[256];
    slR_stem_of(o->notebooks[i], stem, sizeof stem);
    for (size_t j = 0; j < i; j++) {
      char other[256];
      slR_stem_of(o->notebooks[j], other, sizeof other);
      if (strcmp(stem, other) == 0) {
        fprintf(stderr,
                "syslab report: %s and %s have the same name '%s'; the executed notebooks and figures are "
                "named after it, so rename one\n",
                o->notebooks[j], o->notebooks[i], stem);
        refused++;
        break;
      }
    }
    R->read[i] = slR_notebook_read(o->notebooks[i], err, sizeof err);
    json_array_append_new(R->read_errors, R->read[i] ? json_null() : json_string(err));
    if (!R->read[i]) continue;
    refused += slR_check_labels(o->notebooks[i], R->read[i]) + slR_check_timeouts(o->notebooks[i], R->read[i]) +
               slR_inline_check(o->notebooks[i], R->read[i]);
    slR_params_check(o->notebooks[i], R->read[i], o->params);
  }
  return refused;
}

/* Each readable notebook takes its place in the report: from the cache, or
** as a Run to execute (its parameters injected). A stop ends the walk. */
static void plan_runs(Report *R) {
  const slR_Options *o = R->o;
  R->done = calloc(o->count, sizeof *R->done);
  R->runs = calloc(o->count, sizeof *R->runs);
  for (size_t i = 0; i < o->count && !slR_stop_requested(); i++) {
    const char *path = o->notebooks[i];
    char stem[256];
    slR_stem_of(path, stem, sizeof stem);
    json_t *nb = R->read[i];
    R->read[i] = NULL;
    if (!nb) {
      const char *why = json_string_value(json_array_get(R->read_errors, i));
      fprintf(stderr, "syslab report: %s\n  error: %s\n", path, why);
      json_array_append_new(R->failures, json_string(why));
      continue;
    }
    char key[65], key_path[4600], executed[4600];
    slR_cache_key(path, o, key);
    snprintf(key_path, sizeof key_path, "%s/%s.key", R->cache_dir, stem);
    snprintf(executed, sizeof executed, "%s/%s.ipynb", R->dir, stem);
    slR_Notebook *d = &R->done[R->ndone++];
    d->path = path;
    snprintf(d->stem, sizeof d->stem, "%s", stem);
    json_t *prev = o->use_cache ? slR_cache_take(key_path, key, executed) : NULL;
    if (prev) {
      fprintf(stderr, "syslab report: %s\n  unchanged since the last run: taken from the cache\n", path);
      json_decref(nb);
      d->nb = prev;
      R->cached++;
      continue;
    }
    unlink(key_path);
    slR_params_inject(nb, o->params);
    slR_ensure_ids(nb);
    slR_Run *r = &R->runs[R->nruns++];
    r->path = path;
    r->slot = R->ndone - 1;
    r->nb = nb;
    snprintf(r->executed, sizeof r->executed, "%s", executed);
    snprintf(r->key_path, sizeof r->key_path, "%s", key_path);
    memcpy(r->key, key, sizeof r->key);
    d->nb = NULL; /* filled when it has run */
  }
  for (size_t i = 0; i < o->count; i++) json_decref(R->read[i]); /* those a stop left unread */
  free(R->read);
  R->read = NULL;
  json_decref(R->read_errors);
  R->read_errors = NULL;
}

/* Each run's outcome into its place, in the order of the notebooks,
** whatever order they ran in: an executed notebook is written (even one
** that stopped early, so its outputs can be read) and its cache key saved;
** a failed one leaves the report with its error. */
static void collect_runs(Report *R) {
  char err[2048];
  size_t kept = 0;
  for (size_t i = 0, ri = 0; i < R->ndone; i++) {
    slR_Run *r = ri < R->nruns && R->runs[ri].slot == i ? &R->runs[ri++] : NULL;
    if (r) {
      int rc = r->ran ? r->rc : -1;
      char werr[512];
      if (!r->ran) snprintf(r->err, sizeof r->err, "not run: the report was stopped");
      if (r->ran && r->nb && slR_write_json_atomic(r->executed, r->nb, werr, sizeof werr) != 0 && rc == 0) {
        snprintf(r->err, sizeof r->err, "%s", werr);
        rc = -1;
      }
      if (rc != 0) {
        fprintf(stderr, "syslab report: %s: error: %s\n", R->done[i].path, r->err);
        json_array_append_new(R->failures, json_string(r->err));
        json_decref(r->nb);
        r->nb = NULL;
        continue;
      }
      slR_write_atomic(r->key_path, r->key, 64, err, sizeof err);
      R->done[i].nb = r->nb;
    }
    R->done[kept++] = R->done[i];
  }
  R->ndone = kept;
}

int slR_report(const slR_Options *o) {
  double start = slU_now();
  if (sl_job_size() > 1 && sl_job_rank() != 0) return slR_serve_rank(o);
  if (slR_check_outdir(o) != 0) return 2;
  Report R = {.o = o, .failures = json_array(), .written = json_array()};
  int refused = read_notebooks(&R);
  if (refused) {
    fprintf(stderr, "syslab report: nothing was run; fix the %s above first\n", refused == 1 ? "problem" : "problems");
    report_free(&R);
    return 1;
  }
  snprintf(R.dir, sizeof R.dir, "%s/notebooks", o->outdir);
  snprintf(R.cache_dir, sizeof R.cache_dir, "%s/.cache", o->outdir);
  if (slR_mkdirs(R.dir) != 0 || slR_mkdirs(R.cache_dir) != 0) {
    fprintf(stderr, "syslab report: cannot create %s: %s\n", o->outdir, strerror(errno));
    report_free(&R);
    return 1;
  }
  slR_remove_previous(o->outdir);
  slR_catch_stop_signals();
  plan_runs(&R);
  R.cells += slR_run_all(o, R.runs, R.nruns);
  collect_runs(&R);
  /* the errors the report's notebooks record count as errors too, even
  ** though --allow-errors let the notebooks go on */
  size_t cell_errors = 0;
  for (size_t i = 0; i < R.ndone; i++) cell_errors += slR_recorded_errors(R.done[i].nb, R.done[i].path, 1);
  slR_Exporting x = {o, R.done, R.ndone, R.failures, R.written, NULL};
  int written[SLR_NOUTPUTS];
  int stopped = slR_export_outputs(&x, written);
  slR_write_manifest(o->outdir, R.written);
  size_t nfail = json_array_size(R.failures), nerr = nfail + cell_errors;
  char kept_going[96] = "";
  if (cell_errors)
    snprintf(kept_going, sizeof kept_going, " (%zu in cell%s, kept going: --allow-errors)", cell_errors,
             cell_errors == 1 ? "" : "s");
  fprintf(stderr, "\n%zu notebook%s (%d from the cache), %d cells run, %zu error%s%s, %.1f s\n", o->count,
          o->count == 1 ? "" : "s", R.cached, R.cells, nerr, nerr == 1 ? "" : "s", kept_going, slU_now() - start);
  /* only the paths of files this run wrote */
  for (int i = 0; i < SLR_NOUTPUTS; i++)
    if (written[i] && slR_outputs[i].shown) printf("%s/%s\n", o->outdir, slR_outputs[i].name);
  fflush(stdout);
  report_free(&R);
  if (stopped) die_of_signal(stopped);
  return nfail ? 1 : 0;
}
