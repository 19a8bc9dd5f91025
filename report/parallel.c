/*
** parallel.c - the notebooks of a report run one after another, at once
** in threads (-j N), or over the ranks of an mpirun job.
**
** With -j N, N notebooks run at once, each in its own kernel, from N
** threads (the client keeps no global state). Under mpirun (a class's
** submissions over a cluster), rank 0 hands each notebook to run to
** another rank (as JSON, so the ranks need not share a disk) and takes
** back the executed notebook; the kernels a rank starts are not part of
** the job (its MPI variables are taken out of their environment). A
** notebook's progress lines are printed together when it ends (live, cell
** by cell, in a serial run). Whichever way they ran, the runs are left in
** their places for the report to collect in the order of the notebooks.
*/
#include "parallel.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "client.h"
#include "execute.h"
#include "syslab.h"
#include "slutil.h"

typedef struct {
  const slR_Options *o;
  slR_Run *runs;
  size_t n, next;
  pthread_mutex_t lock;
  int cells;
} Runner;

/* runs one notebook; live: print progress as it comes (else all at the end) */
static void run_one(Runner *rn, slR_Run *r, int live) {
  slU_Text log = {0};
  int cells = 0;
  r->t0 = slU_now();
  r->ran = 1;
  if (live) fprintf(stderr, "syslab report: %s\n", r->path);
  r->rc = slR_execute_notebook(r->path, r->nb, rn->o, &cells, live ? NULL : &log, r->err, sizeof r->err);
  pthread_mutex_lock(&rn->lock);
  rn->cells += cells;
  if (!live) fprintf(stderr, "syslab report: ran %s\n%s", r->path, log.s ? log.s : "");
  if (r->rc == 0) fprintf(stderr, "  done in %.2f s\n", slU_now() - r->t0);
  pthread_mutex_unlock(&rn->lock);
  free(log.s);
}

static void *run_thread(void *arg) {
  Runner *rn = arg;
  for (;;) {
    pthread_mutex_lock(&rn->lock);
    size_t i = rn->next++;
    pthread_mutex_unlock(&rn->lock);
    if (i >= rn->n || slR_stop_requested()) return NULL;
    run_one(rn, &rn->runs[i], 0);
  }
}

static void run_threads(Runner *rn) {
  int n = rn->o->jobs < (int)rn->n ? rn->o->jobs : (int)rn->n;
  pthread_t *t = calloc((size_t)n, sizeof *t);
  for (int i = 0; i < n; i++) pthread_create(&t[i], NULL, run_thread, rn);
  for (int i = 0; i < n; i++) pthread_join(t[i], NULL);
  free(t);
}

/* The kernels a rank starts are plain processes, not part of the job: they
** must not see the launcher's variables (they would take themselves for
** ranks of it). */
static void leave_the_job(void) {
  extern char **environ;
  static const char *const prefixes[] = {"OMPI_", "PMIX_", "PMI_", NULL};
  for (int again = 1; again;) {
    again = 0;
    for (char **e = environ; *e && !again; e++)
      for (int k = 0; prefixes[k]; k++)
        if (strncmp(*e, prefixes[k], strlen(prefixes[k])) == 0) {
          char name[256];
          snprintf(name, sizeof name, "%.*s", (int)(strchr(*e, '=') ? strchr(*e, '=') - *e : (long)strlen(*e)), *e);
          unsetenv(name);
          again = 1;
          break;
        }
  }
}

/* a rank's task: the notebook as JSON; its result: rc, cells, err, progress, executed notebook */
static void mpi_task(void *ud, long id, const char *task, size_t n, slU_Text *result) {
  Runner *rn = ud;
  static int left;
  if (!left) leave_the_job(), left = 1;
  json_error_t jerr;
  slR_Run r;
  memset(&r, 0, sizeof r);
  const char *nl = memchr(task, '\n', n); /* the notebook's path, then the notebook */
  char path[4096];
  snprintf(path, sizeof path, "%.*s", nl ? (int)(nl - task) : 0, task);
  r.nb = nl ? json_loadb(nl + 1, n - (size_t)(nl + 1 - task), 0, &jerr) : NULL;
  slU_Text log = {0};
  int cells = 0;
  r.rc = r.nb ? slR_execute_notebook(path, r.nb, rn->o, &cells, &log, r.err, sizeof r.err) : -1;
  if (!r.nb) snprintf(r.err, sizeof r.err, "the notebook did not arrive whole");
  char *json = r.nb ? json_dumps(r.nb, JSON_COMPACT) : strdup("null");
  slU_add(result, "%d %d ", r.rc, cells);
  slU_put_str(result, r.err);
  slU_put_str(result, log.s ? log.s : "");
  slU_add(result, "%s", json);
  free(json);
  free(log.s);
  json_decref(r.nb);
}

static void mpi_done(void *ud, long id, const char *result, size_t n) {
  Runner *rn = ud;
  slR_Run *r = &rn->runs[id];
  int rc = -1, cells = 0, used = 0;
  if (sscanf(result, "%d %d %n", &rc, &cells, &used) < 2) {
    snprintf(r->err, sizeof r->err, "a rank sent a malformed result");
    r->rc = -1;
    return;
  }
  slU_Reader rd = {result + used, n - (size_t)used, 0, 0};
  char log[16384];
  slU_get_str(&rd, r->err, sizeof r->err);
  slU_get_str(&rd, log, sizeof log);
  json_error_t jerr;
  json_decref(r->nb);
  r->nb = rd.bad ? NULL : json_loadb(rd.p + rd.at, rd.n - rd.at, 0, &jerr);
  r->rc = rd.bad || !r->nb ? -1 : rc;
  if (rd.bad || !r->nb) snprintf(r->err, sizeof r->err, "a rank sent back a damaged notebook");
  rn->cells += cells;
  fprintf(stderr, "syslab report: ran %s\n%s", r->path, log);
  if (r->rc == 0) fprintf(stderr, "  done in %.2f s\n", slU_now() - r->t0);
}

static void run_mpi(Runner *rn) {
  char **tasks = calloc(rn->n + 1, sizeof *tasks);
  size_t *lens = calloc(rn->n + 1, sizeof *lens);
  for (size_t i = 0; i < rn->n; i++) {
    rn->runs[i].ran = 1;
    rn->runs[i].t0 = slU_now();
    char *json = json_dumps(rn->runs[i].nb, JSON_COMPACT);
    slU_Text t = {0};
    slU_add(&t, "%s\n%s", rn->runs[i].path, json);
    free(json);
    tasks[i] = t.s;
    lens[i] = t.n;
  }
  char err[1024];
  if (sl_job_farm(rn->n, tasks, lens, mpi_task, mpi_done, rn, err, sizeof err) < 0)
    for (size_t i = 0; i < rn->n; i++)
      if (rn->runs[i].rc == 0 && !rn->runs[i].err[0] && rn->runs[i].nb) {
        rn->runs[i].rc = -1;
        snprintf(rn->runs[i].err, sizeof rn->runs[i].err, "%s", err);
      }
  for (size_t i = 0; i < rn->n; i++) free(tasks[i]);
  free(tasks);
  free(lens);
}

int slR_run_all(const slR_Options *o, slR_Run *runs, size_t n) {
  Runner rn = {o, runs, n, 0, PTHREAD_MUTEX_INITIALIZER, 0};
  if (sl_job_size() > 1) run_mpi(&rn);
  else if (o->jobs > 1 && n > 1) run_threads(&rn);
  else
    for (size_t i = 0; i < n && !slR_stop_requested(); i++) run_one(&rn, &runs[i], 1);
  return rn.cells;
}

/* a rank of an mpirun job other than 0: runs what rank 0 hands it */
int slR_serve_rank(const slR_Options *o) {
  Runner rn = {o, NULL, 0, 0, PTHREAD_MUTEX_INITIALIZER, 0};
  char err[1024];
  int rc = sl_job_farm(0, NULL, NULL, mpi_task, mpi_done, &rn, err, sizeof err);
  if (rc < 0) fprintf(stderr, "syslab report (rank %d): %s\n", sl_job_rank(), err);
  return rc < 0 ? 1 : 0;
}
