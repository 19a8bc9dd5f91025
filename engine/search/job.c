/*
** job.c - the program's MPI job as the drivers see it (syslab.h's
** sl_job_*): this process's rank and the job's size, the job's end, the
** farm that spreads a driver's tasks over the ranks (`syslab report` under
** mpirun runs one notebook per task), and `syslab worker`, the process a
** notebook's call starts with workers=N.
**
** A driver's farm is the search folder's task farm (dist.c) over byte
** strings: rank 0 hands out the tasks in order and takes each result as it
** comes back; a dead rank's task goes to another rank with the same id, so
** what is computed does not depend on which rank runs it. Every farm of a
** run gets the next farm number (dist.c counts them), in the same order on
** every rank, so a late message of an earlier farm is never taken for one
** of this farm's.
**
** A call with workers=N (a search, data-parallel training) starts N copies
** of this program as `syslab worker` and ships them the call's source and
** every variable it reads (lang/codec.c), after checking that each can
** travel; the worker runs that one call in a session of its own, whose
** search or training then finds its coordinator through slS_spawned(), and
** exits. Sender and receiver of that message live here together;
** remote.c (searches) and ddp.c (training) only ask for the group.
*/
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <unistd.h>

#include "dist.h"
#include "lang/eval.h"

#define TAG_CONTEXT 40 /* coordinator -> spawned worker: the call and its variables */

static slD_Group *spawned; /* this process is a worker started by a notebook */

/* --------------------------------------------------------------- the job */

void sl_job_end(int status) {
  char err[256];
  if (slS_farm_count() > 0 || slS_env_size() > 1) {
    const slD_Transport *t = slS_transport(err, sizeof err);
    if (t) t->finalize(slS_timeout(), status);
  }
}

int sl_job_rank(void) { return slS_env_rank(); }

int sl_job_size(void) { return slS_env_size(); }

/* ------------------------------------------------- a farm for the drivers */

typedef struct {
  size_t n, next;
  char *const *tasks;
  const size_t *lens;
  sl_TaskDone done;
  void *ud;
} Plain;

static int plain_next(void *ud, long *id, slU_Text *task) {
  Plain *p = ud;
  if (p->next >= p->n) return -1;
  *id = (long)p->next;
  slU_add_len(task, p->tasks[p->next], p->lens[p->next]);
  p->next++;
  return 1;
}

static int plain_done(void *ud, long id, const char *result, size_t n, char *err, size_t errlen) {
  Plain *p = ud;
  p->done(p->ud, id, result, n);
  return 0;
}

int sl_job_farm(size_t n, char *const *tasks, const size_t *lens, sl_TaskRun run, sl_TaskDone done, void *ud, char *err,
                size_t errlen) {
  slD_Group *g = slS_world(err, errlen);
  if (!g) {
    if (!err[0]) snprintf(err, errlen, "this is not an mpirun job");
    return -1;
  }
  int farm = slS_farm_next();
  if (slS_transport(err, errlen)->rank(g) != 0) {
    char *final;
    size_t fn;
    int rc = slS_farm_work(g, farm, run, ud, &final, &fn, err, errlen);
    free(final);
    return rc == 0 ? 1 : -1;
  }
  Plain p = {n, 0, tasks, lens, done, ud};
  slS_FarmSource src = {&p, plain_next, plain_done, NULL, NULL, NULL};
  return slS_farm_coordinate(g, farm, &src, NULL, err, errlen);
}

/* ------------------------------------------------------ spawned workers */

/* the call's source and the variables it reads, to every worker */
static int send_context(sl_Call *call, const slD_Transport *t, slD_Group *g, char *err, size_t errlen) {
  sl_Value ctx = sl_list_new(), vars = sl_record_new(), names = slV_call_names(call);
  char *code = slV_call_source(call);
  for (size_t i = 0; i < sl_list_len(names); i++) {
    const char *name = sl_str(sl_list_get(names, i));
    sl_Value v = sl_getvar(call, name);
    if (v.type != SL_NIL) sl_retain(v), sl_record_set(vars, name, v);
  }
  sl_list_push(ctx, sl_string(code));
  sl_list_push(ctx, vars);
  slU_Text bytes = {0};
  int rc = sl_encode(ctx, &bytes, err, errlen);
  for (int r = 1; rc == 0 && r < t->size(g); r++)
    if (t->send(g, r, TAG_CONTEXT, bytes.s, bytes.n, slS_timeout()) != 0) {
      snprintf(err, errlen, "worker %d did not take the search's variables within %.0f s", r, slS_timeout());
      rc = -1;
    }
  free(bytes.s);
  free(code);
  sl_release(names);
  sl_release(ctx);
  return rc;
}

slD_Group *slS_spawn_call(sl_Call *call, int n, char *err, size_t errlen) {
  const slD_Transport *t = slS_transport(err, errlen);
  if (!t) return NULL;
  char exe[4096];
  ssize_t len = readlink("/proc/self/exe", exe, sizeof exe - 1);
  if (len <= 0) return snprintf(err, errlen, "cannot find this program to start workers"), NULL;
  exe[len] = '\0';
  char *argv[] = {exe, "worker", NULL};
  /* what the call reads must travel: check it all before starting anything */
  slU_Text probe = {0};
  sl_Value names = slV_call_names(call);
  for (size_t i = 0; i < sl_list_len(names); i++) {
    const char *name = sl_str(sl_list_get(names, i));
    sl_Value v = sl_getvar(call, name);
    char why[1024];
    if (v.type != SL_NIL && sl_encode(v, &probe, why, sizeof why) != 0) {
      free(probe.s);
      sl_release(names);
      snprintf(err, errlen, "the variable '%s' cannot be shipped to the workers: %s", name, why);
      return NULL;
    }
  }
  free(probe.s);
  sl_release(names);
  slD_Group *g = t->spawn(argv, n, slS_timeout() + 0.5 * n, err, errlen);
  if (g && send_context(call, t, g, err, errlen) != 0) {
    t->abandon(g);
    return NULL;
  }
  return g;
}

slD_Group *slS_spawned(void) { return spawned; }

static void discard_write(void *ud, sl_Stream s, const char *text, size_t len) {}
static void discard_display(void *ud, const sl_Bundle *b, const char *id, int update) {}

int sl_worker_main(void) {
  /* the runtime's daemon started this process: it ends with the daemon */
  pid_t parent = getppid();
  prctl(PR_SET_PDEATHSIG, SIGKILL);
  if (getppid() != parent) return 1;
  char err[1024];
  const slD_Transport *t = slS_transport(err, sizeof err);
  slD_Group *g = t ? t->parent(err, sizeof err) : NULL;
  if (!g) {
    fprintf(stderr, "syslab worker: %s\n", err);
    return 1;
  }
  void *data = NULL;
  size_t n = 0;
  double deadline = slU_now() + slS_timeout();
  while (!t->poll(g, 0, TAG_CONTEXT, NULL, NULL, &data, &n)) {
    if (slU_now() > deadline) {
      fprintf(stderr, "syslab worker: the coordinator sent no search within %.0f s\n", slS_timeout());
      return 1;
    }
    usleep(1000);
  }
  sl_Value ctx;
  int rc = sl_decode(data, n, &ctx, err, sizeof err);
  free(data);
  if (rc != 0) {
    fprintf(stderr, "syslab worker: %s\n", err);
    return 1;
  }
  sl_State *S = sl_new();
  sl_Value vars = sl_list_get(ctx, 1);
  for (size_t i = 0; i < sl_record_len(vars); i++) {
    sl_Value v = sl_record_value(vars, i);
    sl_retain(v);
    sl_record_set(S->vars, sl_record_key(vars, i), v);
  }
  spawned = g;
  sl_Host host = {NULL, discard_write, discard_display, NULL, NULL, NULL};
  sl_Value result;
  sl_Error e;
  rc = sl_execute(S, sl_str(sl_list_get(ctx, 0)), &host, &result, &e);
  if (rc == 0) sl_release(result);
  else fprintf(stderr, "syslab worker: %s\n", e.evalue ? e.evalue : e.ename), sl_error_free(&e);
  spawned = NULL;
  sl_release(ctx);
  sl_free(S);
  if (rc == 0) t->close(g);
  else t->abandon(g); /* a peer may have died: a disconnect would wait for it */
  t->finalize(slS_timeout(), rc == 0 ? 0 : 1);
  return rc == 0 ? 0 : 1;
}
