/*
** test_farm.c - the task farm of engine/search/dist.c over real MPI
** processes: an mpirun job of 3 ranks (this very program, started again
** with --job), and workers spawned from a plain process (--spawned).
**
** The tasks are stand-ins for trials: task id i computes f(i) after a short
** sleep, so the coordinator can check every result, and one worker kills
** itself with SIGKILL on its second task to show that its task is re-run by
** another worker and the farm still finishes. Loopback only; Open MPI needs
** --oversubscribe on a 2-core machine and --enable-recovery to let the job
** outlive a dead rank.
*/
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "check.h"
#include "search/dist.h"

#define NTASKS 24

static long f(long i) { return i * i * 7 + 3; }

typedef struct {
  long next;
  long results[NTASKS];
  int seen[NTASKS];
  long lost_task;
} Source;

static int next_task(void *ud, long *id, slU_Text *task) {
  Source *s = ud;
  if (s->next >= NTASKS) return -1;
  *id = s->next++;
  slU_add(task, "%ld", *id);
  return 1;
}

static int task_done(void *ud, long id, const char *result, size_t n, char *err, size_t errlen) {
  Source *s = ud;
  s->results[id] = atol(result);
  s->seen[id]++;
  return 0;
}

static void task_lost(void *ud, int rank, long id) { ((Source *)ud)->lost_task = id; }

/* a question during a task: the coordinator squares the number asked */
static void ask_square(void *ud, long id, const char *q, size_t n, slU_Text *answer) {
  long x = atol(q);
  slU_add(answer, "%ld", x * x);
}

static void say_bye(void *ud, int rc, slU_Text *out) { slU_add(out, "bye"); }

static int kill_rank = -1;
static int my_rank;

static void run_task(void *ud, long id, const char *task, size_t n, slU_Text *result) {
  static int ran;
  if (my_rank == kill_rank && ++ran == 2) raise(SIGKILL); /* on its second task, whichever it is */
  struct timespec t = {0, 20 * 1000 * 1000};
  nanosleep(&t, NULL);
  /* f(i) = 7 i^2 + 3, with i^2 asked of the coordinator */
  char q[32], *answer, err[256];
  size_t an;
  snprintf(q, sizeof q, "%ld", atol(task));
  if (slS_farm_ask(q, strlen(q), &answer, &an, err, sizeof err) != 0) {
    slU_add(result, "-1");
    return;
  }
  slU_add(result, "%ld", atol(answer) * 7 + 3);
  free(answer);
}

/* the coordinator's side: prints one line the parent test reads */
static int coordinate(slD_Group *g) {
  Source s = {0};
  s.lost_task = -1;
  slS_FarmSource src = {&s, next_task, task_done, task_lost, ask_square, say_bye};
  slS_FarmStats st;
  char err[512];
  int rc = slS_farm_coordinate(g, 1, &src, &st, err, sizeof err);
  int wrong = 0;
  for (long i = 0; i < NTASKS; i++) wrong += s.seen[i] != 1 || s.results[i] != f(i);
  printf("farm rc=%d tasks=%ld wrong=%d dead=%d requeued=%ld lost_task=%ld %s\n", rc, st.tasks, wrong, st.dead,
         st.requeued, s.lost_task, rc ? err : "");
  fflush(stdout);
  return rc || wrong;
}

static int work(slD_Group *g) {
  char err[512], *final;
  size_t n;
  int rc = slS_farm_work(g, 1, run_task, NULL, &final, &n, err, sizeof err);
  if (rc == 0 && (n != 3 || memcmp(final, "bye", 3) != 0)) rc = 1;
  free(final);
  return rc;
}

/* one process of the mpirun job */
static int job_main(void) {
  char err[512];
  slD_Group *g = slS_world(err, sizeof err);
  if (!g) {
    fprintf(stderr, "no MPI world: %s\n", err);
    return 1;
  }
  const slD_Transport *t = slS_transport(err, sizeof err);
  my_rank = t->rank(g);
  int rc = my_rank == 0 ? coordinate(g) : work(g);
  t->finalize(10, rc);
  return rc;
}

/* one spawned worker */
static int spawned_main(void) {
  char err[512];
  const slD_Transport *t = slS_transport(err, sizeof err);
  slD_Group *g = t ? t->parent(err, sizeof err) : NULL;
  if (!g) {
    fprintf(stderr, "spawned worker: %s\n", err);
    return 1;
  }
  my_rank = t->rank(g);
  int rc = work(g);
  t->close(g);
  t->finalize(10, rc);
  return rc;
}

#ifdef SYSLAB_HAVE_MPI
static const char *self_path;

/* runs cmd through the shell, returns its stdout; *status its exit status */
static char *capture(const char *cmd, int *status) {
  FILE *p = popen(cmd, "r");
  slU_Text out = {0};
  char buf[4096];
  size_t n;
  while ((n = fread(buf, 1, sizeof buf, p)) > 0) slU_add_len(&out, buf, n);
  int st = pclose(p);
  *status = WIFEXITED(st) ? WEXITSTATUS(st) : -1;
  if (!out.s) slU_add(&out, "%s", "");
  return out.s;
}

#define MPIRUN \
  SYSLAB_MPIEXEC " --oversubscribe --enable-recovery --allow-run-as-root" \
                 " --mca btl self,vader,tcp --mca btl_tcp_if_include lo --mca oob_tcp_if_include lo"

static void test_three_ranks_every_task_once(void) {
  char cmd[4096];
  int st;
  snprintf(cmd, sizeof cmd, "SYSLAB_MPI_TIMEOUT=3 " MPIRUN " -n 3 %s --job none 2>&1", self_path);
  char *out = capture(cmd, &st);
  CHECK_EQ_INT(st, 0);
  CHECK_CONTAINS(out, "farm rc=0 tasks=24 wrong=0 dead=0 requeued=0");
  free(out);
}

static void test_killed_worker_task_runs_elsewhere(void) {
  char cmd[4096];
  int st;
  snprintf(cmd, sizeof cmd, "SYSLAB_MPI_TIMEOUT=2 " MPIRUN " -n 3 %s --job 2 2>&1", self_path);
  char *out = capture(cmd, &st);
  /* mpirun reports the killed rank in its exit status; the farm finished */
  CHECK_CONTAINS(out, "farm rc=0 tasks=24 wrong=0 dead=1 requeued=1 lost_task=");
  CHECK(!strstr(out, "lost_task=-1"));
  free(out);
}

static void test_spawned_workers(void) {
  char err[512];
  const slD_Transport *t = slS_transport(err, sizeof err);
  CHECK_MSG(t != NULL, "%s", err);
  if (!t) return;
  char *argv[] = {(char *)self_path, "--spawned", NULL};
  slD_Group *g = t->spawn(argv, 2, 30, err, sizeof err);
  CHECK_MSG(g != NULL, "%s", err);
  if (!g) return;
  CHECK_EQ_INT(t->size(g), 3);
  CHECK_EQ_INT(t->rank(g), 0);
  CHECK_EQ_INT(coordinate(g), 0);
  t->close(g);
}
#endif

int main(int argc, char **argv) {
  if (argc > 2 && strcmp(argv[1], "--job") == 0) {
    kill_rank = strcmp(argv[2], "none") == 0 ? -1 : atoi(argv[2]);
    return job_main();
  }
  if (argc > 1 && strcmp(argv[1], "--spawned") == 0) return spawned_main();
#ifdef SYSLAB_HAVE_MPI
  self_path = argv[0];
  setenv("SYSLAB_MPI_TIMEOUT", "3", 1);
  RUN(test_three_ranks_every_task_once);
  RUN(test_killed_worker_task_runs_elsewhere);
  RUN(test_spawned_workers);
  char err[512];
  const slD_Transport *t = slS_transport(err, sizeof err);
  if (t) t->finalize(10, 0);
#else
  check_skip("test_farm", "this build has no MPI (libopenmpi-dev not found by CMake)");
#endif
  return check_summary();
}
