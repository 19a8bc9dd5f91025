/* test_search.c - the MT19937 stream, random pruning on it, and studies in
** the language: failed trials, interrupts, grids, spaces and journals.
** (tests/python/test_search.py compares the samplers with Optuna itself.) */
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <sys/resource.h>

#include "check.h"
#include "compress/quant.h"
#include "graph/mt19937.h"
#include "search/dist.h"
#include "syslab.h"

static void test_mt19937_reference_outputs(void) {
  slM_Mt m;
  slM_mt_seed(&m, 5489); /* mt19937ar's default seed: its first outputs */
  CHECK(slM_mt_next(&m) == 3499211612u);
  CHECK(slM_mt_next(&m) == 581869302u);
  CHECK(slM_mt_next(&m) == 3890346734u);
  CHECK(slM_mt_next(&m) == 3586334585u);
  CHECK(slM_mt_next(&m) == 545404204u);
  slM_mt_seed(&m, 1); /* numpy RandomState(1).random_sample(3) */
  CHECK(slM_mt_double(&m) == 0.417022004702574);
  CHECK(slM_mt_double(&m) == 0.7203244934421581);
  CHECK(slM_mt_double(&m) == 0.00011437481734488664);
  CHECK_EQ_INT(m.draws, 6);
  CHECK_EQ_INT(slM_mt_interval(&m, 0), 0); /* takes no draw */
  CHECK_EQ_INT(m.draws, 6);
  /* skipping equals drawing */
  slM_Mt a, b;
  slM_mt_seed(&a, 77);
  slM_mt_seed(&b, 77);
  for (int i = 0; i < 1500; i++) slM_mt_next(&a);
  slM_mt_skip(&b, 1500);
  CHECK(slM_mt_next(&a) == slM_mt_next(&b));
}

static void test_shuffle_and_random_pruning_equal_numpy(void) {
  /* numpy: RandomState(3).permutation(10) = [5 4 1 2 9 6 7 0 3 8] */
  size_t x[10], want[10] = {5, 4, 1, 2, 9, 6, 7, 0, 3, 8};
  for (size_t i = 0; i < 10; i++) x[i] = i;
  slM_Mt m;
  slM_mt_seed(&m, 3);
  slM_mt_shuffle(&m, x, 10);
  for (int i = 0; i < 10; i++) CHECK_EQ_INT(x[i], want[i]);
  unsigned char mask[10];
  slQ_prune_random(10, 0.3, 3, mask); /* the first RNE(0.3 * 10) = 3 of the permutation */
  for (int i = 0; i < 10; i++) CHECK_EQ_INT(mask[i], !(i == 5 || i == 4 || i == 1));
}

/* ------------------------------------------------------------ language */

/* a print of "stop" interrupts the search that prints it */
static void interrupt_on_stop(sl_Stream s) {
  if (s == SL_STDOUT && strstr(check_cap.out.s, "stop")) sl_interrupt();
}

static void test_failed_trials_are_recorded_and_the_study_goes_on(void) {
  sl_State *S = sl_new();
  check_eval(S, "s = search trials=6 sampler=random seed=2 {\n"
                "  x = suggest \"x\" int 0 9\n"
                "  if x > 4 { print nosuch }\n"
                "  objective x\n}");
  CHECK_STREQ(check_eval(S, "s.n"), "6");
  double failed = atof(check_eval(S, "s.failed")), complete = atof(check_eval(S, "s.complete"));
  CHECK(failed + complete == 6 && failed > 0 && complete > 0);
  CHECK_CONTAINS(check_eval(S, "s.trials.message"), "NameError: name 'nosuch' is not defined");
  CHECK_STREQ(check_eval(S, "s.best_value <= 4"), "true");
  /* no objective: failed, with the reason */
  check_eval(S, "t = search trials=2 sampler=random { x = suggest \"x\" float 0 1 }");
  CHECK_CONTAINS(check_eval(S, "t.trials.message[0]"), "without `objective");
  /* NaN objective fails as in Optuna */
  check_eval(S, "u = search trials=1 { objective 1e308 * 10 - 1e308 * 10 }");
  CHECK_STREQ(check_eval(S, "u.trials.state[0]"), "\"failed\"");
  sl_free(S);
}

static void test_interrupt_keeps_finished_trials(void) {
  sl_State *S = sl_new();
  check_cap.on_write = interrupt_on_stop;
  const char *r = check_eval(S, "s = search trials=50 sampler=random seed=1 {\n"
                                "  x = suggest \"x\" float 0 1\n"
                                "  if trial == 3 { print \"stop\" }\n"
                                "  objective x\n}");
  check_cap.on_write = NULL;
  sl_clear_interrupt();
  CHECK_CONTAINS(r, "Interrupt");
  CHECK_CONTAINS(check_cap.err.s, "search_partial");
  CHECK_STREQ(check_eval(S, "search_partial.n"), "3"); /* trial 3 was running: it is dropped, 0..2 kept */
  CHECK_STREQ(check_eval(S, "search_partial.complete"), "3");
  sl_free(S);
}

static void test_grid_stops_at_its_size_and_spaces_are_checked(void) {
  sl_State *S = sl_new();
  check_eval(S, "g = search trials=100 sampler=grid a=[1, 2, 3] b=[\"x\", \"y\"] {\n"
                "  a = suggest \"a\" int 1 3\n  b = suggest \"b\" categorical [\"x\", \"y\"]\n  objective a\n}");
  CHECK_STREQ(check_eval(S, "g.n"), "6");
  CHECK_STREQ(check_eval(S, "len(g.trials.a)"), "6");
  /* an empty space: trials with no parameter at all */
  check_eval(S, "e = search trials=3 sampler=tpe { objective 1 }");
  CHECK_STREQ(check_eval(S, "e.complete"), "3");
  CHECK_STREQ(check_eval(S, "e.best_params"), "{}");
  /* a name reused with another range: an error naming both, and the search stops */
  const char *r = check_eval(S, "r = search trials=5 sampler=random {\n"
                                "  x = suggest \"x\" int 1 10\n  y = suggest \"x\" int 1 20\n  objective x\n}");
  CHECK_CONTAINS(r, "'x' was suggested as int 1..10 and is now suggested as int 1..20");
  CHECK_STREQ(check_eval(S, "search_partial.n"), "0");
  /* a name outside the grid */
  r = check_eval(S, "h = search sampler=grid a=[1] { z = suggest \"z\" float 0 1\n objective z }");
  CHECK_CONTAINS(r, "'z' is not in the grid");
  /* suggest outside a search */
  CHECK_CONTAINS(check_eval(S, "suggest \"x\" int 1 2"), "inside a search");
  /* same name, same range, same trial: the same value */
  check_eval(
      S,
      "s = search trials=5 sampler=random seed=4 { a = suggest \"x\" float 0 1\n b = suggest \"x\" float 0 1\n objective a - b }");
  CHECK_STREQ(check_eval(S, "s.best_value"), "0");
  CHECK_CONTAINS(check_eval(S, "search trials=1 sampler=random { x = suggest \"x\" int 1 2 log=true by=2 }"), "by");
  CHECK_CONTAINS(check_eval(S, "search trials=1 sampler=grid { objective 1 }"), "needs its grid");
  CHECK_CONTAINS(check_eval(S, "search trials=1 seed=-1 { objective 1 }"), "2^32 - 1");
  sl_free(S);
}

static void test_multi_objective_pareto_and_curves(void) {
  sl_State *S = sl_new();
  check_eval(S, "m = search trials=30 sampler=nsga2 population=6 seed=3 directions=[\"maximize\", \"minimize\"] "
                "objectives=[\"acc\", \"bits\"] {\n"
                "  b = suggest \"bits\" int 2 16\n  objective [1 - 1 / b, b]\n}");
  CHECK_STREQ(check_eval(S, "m.n"), "30");
  /* every distinct bit width is Pareto-optimal here; the front holds no dominated trial */
  CHECK(atoi(check_eval(S, "len(m.pareto.bits)")) >= 3);
  CHECK_STREQ(check_eval(S, "m.best_value"), "nil");
  check_eval(S, "a = search trials=5 sampler=random seed=1 { objective (suggest \"x\" float 0 1) }\n"
                "b = search trials=5 sampler=tpe seed=1 { objective (suggest \"x\" float 0 1) }");
  CHECK_STREQ(check_eval(S, "c = curves random=a tpe=b\nlen(c.study)"), "10");
  CHECK_STREQ(check_eval(S, "a.running_best.best[4] == a.best_value"), "true");
  sl_free(S);
}

static void test_journal_resume_equals_an_uninterrupted_run(void) {
  char dir[] = "/tmp/syslab-search-XXXXXX";
  CHECK(mkdtemp(dir) != NULL);
  char code[2048];
  const char *samplers[] = {"random", "tpe", "grid", "nsga2"};
  for (int k = 0; k < 4; k++) {
    sl_State *S = sl_new();
    const char *grid = k == 2 ? "x=[0.1, 0.5, 0.9] n=[1, 2, 3, 4]" : "";
    const char *body =
        "{\n  x = suggest \"x\" float 0 1\n  n = suggest \"n\" int 1 4\n  objective (x - 0.3) ** 2 + n\n}";
    snprintf(code, sizeof code, "whole = search trials=14 startup=4 population=4 sampler=%s seed=9 %s %s", samplers[k],
             grid, body);
    check_eval(S, code);
    snprintf(code, sizeof code,
             "half = search trials=6 startup=4 population=4 sampler=%s seed=9 %s journal=\"%s/%s.jsonl\" %s",
             samplers[k], grid, dir, samplers[k], body);
    check_eval(S, code);
    snprintf(code, sizeof code,
             "rest = search trials=14 startup=4 population=4 sampler=%s seed=9 %s journal=\"%s/%s.jsonl\" %s",
             samplers[k], grid, dir, samplers[k], body);
    check_eval(S, code);
    CHECK_CONTAINS(check_cap.out.s, "resuming");
    CHECK_STREQ(
        check_eval(
            S,
            "rest.trials.x == whole.trials.x and rest.trials.n == whole.trials.n and rest.trials.value == whole.trials.value"),
        "true");
    CHECK_STREQ(check_eval(S, "half.n < rest.n"), "true");
    sl_free(S);
  }
  char cmd[600];
  snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
  CHECK(system(cmd) == 0);
}

/* workers=N is held to the slots MPI places workers on (this machine's
** CPUs, a hostfile's, a Slurm allocation's) unless oversubscription is
** asked for, and to the descriptors the runtime's daemon may hold */
static void test_worker_limit(void) {
  char err[512], path[] = "/tmp/syslab-hostfile-XXXXXX";
  long cpus = sysconf(_SC_NPROCESSORS_ONLN);
  CHECK_EQ_INT(slS_worker_limit(1, err, sizeof err), 0);
  CHECK_EQ_INT(slS_worker_limit((int)cpus + 1, err, sizeof err), -1);
  CHECK_CONTAINS(err, "slots, and MPI has");
  CHECK_CONTAINS(err, "on this machine (its CPUs): give workers=");
  int fd = mkstemp(path);
  CHECK(fd >= 0);
  const char *hosts = "# the lab's nodes\nnode1 slots=3\nnode2 slots=2 max_slots=4  # two\n\nnode3\n";
  CHECK(write(fd, hosts, strlen(hosts)) == (ssize_t)strlen(hosts));
  close(fd);
  setenv("OMPI_MCA_orte_default_hostfile", path, 1);
  CHECK_EQ_INT(slS_worker_limit(6, err, sizeof err), 0);
  CHECK_EQ_INT(slS_worker_limit(7, err, sizeof err), -1);
  CHECK_CONTAINS(err, "7 workers need 7 slots, and MPI has 6 in the hostfile");
  unsetenv("OMPI_MCA_orte_default_hostfile");
  unlink(path);
  setenv("SLURM_JOB_CPUS_PER_NODE", "4(x2),2", 1);
  CHECK_EQ_INT(slS_worker_limit(10, err, sizeof err), 0);
  CHECK_EQ_INT(slS_worker_limit(11, err, sizeof err), -1);
  CHECK_CONTAINS(err, "MPI has 10 in the Slurm allocation");
  unsetenv("SLURM_JOB_CPUS_PER_NODE");
  /* oversubscribed: the descriptors */
  setenv("SYSLAB_OVERSUBSCRIBE", "1", 1);
  struct rlimit was, low = {256, 256};
  getrlimit(RLIMIT_NOFILE, &was);
  low.rlim_max = was.rlim_max;
  CHECK(setrlimit(RLIMIT_NOFILE, &low) == 0);
  CHECK_EQ_INT(slS_worker_limit(48, err, sizeof err), 0);
  CHECK_EQ_INT(slS_worker_limit(49, err, sizeof err), -1);
  CHECK_CONTAINS(err, "49 workers need about 260 file descriptors");
  setrlimit(RLIMIT_NOFILE, &was);
  unsetenv("SYSLAB_OVERSUBSCRIBE");
}

int main(void) {
  RUN(test_mt19937_reference_outputs);
  RUN(test_shuffle_and_random_pruning_equal_numpy);
  RUN(test_failed_trials_are_recorded_and_the_study_goes_on);
  RUN(test_interrupt_keeps_finished_trials);
  RUN(test_grid_stops_at_its_size_and_spaces_are_checked);
  RUN(test_multi_objective_pareto_and_curves);
  RUN(test_journal_resume_equals_an_uninterrupted_run);
  RUN(test_worker_limit);
  return check_summary();
}
