/* test_search.c - the MT19937 stream, random pruning on it, and studies in
** the language: failed trials, interrupts, grids, spaces and journals.
** (tests/python/test_search.py compares the samplers with Optuna itself.) */
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "check.h"
#include "compress/quant.h"
#include "graph/mt19937.h"
#include "syslab.h"

static void test_mt19937_reference_outputs(void) {
  slM_Mt m;
  slM_mt_seed(&m, 5489);  /* mt19937ar's default seed: its first outputs */
  CHECK(slM_mt_next(&m) == 3499211612u);
  CHECK(slM_mt_next(&m) == 581869302u);
  CHECK(slM_mt_next(&m) == 3890346734u);
  CHECK(slM_mt_next(&m) == 3586334585u);
  CHECK(slM_mt_next(&m) == 545404204u);
  slM_mt_seed(&m, 1);  /* numpy RandomState(1).random_sample(3) */
  CHECK(slM_mt_double(&m) == 0.417022004702574);
  CHECK(slM_mt_double(&m) == 0.7203244934421581);
  CHECK(slM_mt_double(&m) == 0.00011437481734488664);
  CHECK_EQ_INT(m.draws, 6);
  CHECK_EQ_INT(slM_mt_interval(&m, 0), 0);  /* takes no draw */
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
  slQ_prune_random(10, 0.3, 3, mask);  /* the first RNE(0.3 * 10) = 3 of the permutation */
  for (int i = 0; i < 10; i++) CHECK_EQ_INT(mask[i], !(i == 5 || i == 4 || i == 1));
}

/* ------------------------------------------------------------ language */

static char out[65536], err[8192];
static int interrupt_on_print;

static void cap_write(void *ud, sl_Stream s, const char *t, size_t n) {
  char *dst = s == SL_STDERR ? err : out;
  size_t cap = s == SL_STDERR ? sizeof err : sizeof out, len = strlen(dst);
  if (len + n + 1 < cap) memcpy(dst + len, t, n), dst[len + n] = '\0';
  if (interrupt_on_print && s == SL_STDOUT && strstr(dst, "stop")) sl_interrupt();
}

static sl_Host host = {NULL, cap_write, NULL, NULL, NULL, NULL};

static const char *run(sl_State *S, const char *code) {
  static char text[16384];
  sl_Value v;
  sl_Error e;
  out[0] = err[0] = '\0';
  if (sl_execute(S, code, &host, &v, &e) != 0) {
    snprintf(text, sizeof text, "%s: %s", e.ename, e.evalue);
    sl_error_free(&e);
    return text;
  }
  char *s = sl_tostring(v);
  snprintf(text, sizeof text, "%s", s);
  free(s);
  sl_release(v);
  return text;
}

static void test_failed_trials_are_recorded_and_the_study_goes_on(void) {
  sl_State *S = sl_new();
  run(S, "s = search trials=6 sampler=random seed=2 {\n"
         "  x = suggest \"x\" int 0 9\n"
         "  if x > 4 { print nosuch }\n"
         "  objective x\n}");
  CHECK_STREQ(run(S, "s.n"), "6");
  double failed = atof(run(S, "s.failed")), complete = atof(run(S, "s.complete"));
  CHECK(failed + complete == 6 && failed > 0 && complete > 0);
  CHECK_CONTAINS(run(S, "s.trials.message"), "NameError: name 'nosuch' is not defined");
  CHECK_STREQ(run(S, "s.best_value <= 4"), "true");
  /* no objective: failed, with the reason */
  run(S, "t = search trials=2 sampler=random { x = suggest \"x\" float 0 1 }");
  CHECK_CONTAINS(run(S, "t.trials.message[0]"), "without `objective");
  /* NaN objective fails as in Optuna */
  run(S, "u = search trials=1 { objective 1e308 * 10 - 1e308 * 10 }");
  CHECK_STREQ(run(S, "u.trials.state[0]"), "failed");
  sl_free(S);
}

static void test_interrupt_keeps_finished_trials(void) {
  sl_State *S = sl_new();
  interrupt_on_print = 1;
  const char *r = run(S, "s = search trials=50 sampler=random seed=1 {\n"
                         "  x = suggest \"x\" float 0 1\n"
                         "  if trial == 3 { print \"stop\" }\n"
                         "  objective x\n}");
  interrupt_on_print = 0;
  sl_clear_interrupt();
  CHECK_CONTAINS(r, "Interrupt");
  CHECK_CONTAINS(err, "search_partial");
  CHECK_STREQ(run(S, "search_partial.n"), "3");   /* trial 3 was running: it is dropped, 0..2 kept */
  CHECK_STREQ(run(S, "search_partial.complete"), "3");
  sl_free(S);
}

static void test_grid_stops_at_its_size_and_spaces_are_checked(void) {
  sl_State *S = sl_new();
  run(S, "g = search trials=100 sampler=grid a=[1, 2, 3] b=[\"x\", \"y\"] {\n"
         "  a = suggest \"a\" int 1 3\n  b = suggest \"b\" categorical [\"x\", \"y\"]\n  objective a\n}");
  CHECK_STREQ(run(S, "g.n"), "6");
  CHECK_STREQ(run(S, "len(g.trials.a)"), "6");
  /* an empty space: trials with no parameter at all */
  run(S, "e = search trials=3 sampler=tpe { objective 1 }");
  CHECK_STREQ(run(S, "e.complete"), "3");
  CHECK_STREQ(run(S, "e.best_params"), "{}");
  /* a name reused with another range: an error naming both, and the search stops */
  const char *r = run(S, "r = search trials=5 sampler=random {\n"
                         "  x = suggest \"x\" int 1 10\n  y = suggest \"x\" int 1 20\n  objective x\n}");
  CHECK_CONTAINS(r, "'x' was suggested as int 1..10 and is now suggested as int 1..20");
  CHECK_STREQ(run(S, "search_partial.n"), "0");
  /* a name outside the grid */
  r = run(S, "h = search sampler=grid a=[1] { z = suggest \"z\" float 0 1\n objective z }");
  CHECK_CONTAINS(r, "'z' is not in the grid");
  /* suggest outside a search */
  CHECK_CONTAINS(run(S, "suggest \"x\" int 1 2"), "inside a search");
  /* same name, same range, same trial: the same value */
  run(S, "s = search trials=5 sampler=random seed=4 { a = suggest \"x\" float 0 1\n b = suggest \"x\" float 0 1\n objective a - b }");
  CHECK_STREQ(run(S, "s.best_value"), "0");
  CHECK_CONTAINS(run(S, "search trials=1 sampler=random { x = suggest \"x\" int 1 2 log=true by=2 }"), "by");
  CHECK_CONTAINS(run(S, "search trials=1 sampler=grid { objective 1 }"), "needs its grid");
  CHECK_CONTAINS(run(S, "search trials=1 seed=-1 { objective 1 }"), "2^32 - 1");
  sl_free(S);
}

static void test_multi_objective_pareto_and_curves(void) {
  sl_State *S = sl_new();
  run(S, "m = search trials=30 sampler=nsga2 population=6 seed=3 directions=[\"maximize\", \"minimize\"] "
         "objectives=[\"acc\", \"bits\"] {\n"
         "  b = suggest \"bits\" int 2 16\n  objective [1 - 1 / b, b]\n}");
  CHECK_STREQ(run(S, "m.n"), "30");
  /* every distinct bit width is Pareto-optimal here; the front holds no dominated trial */
  CHECK(atoi(run(S, "len(m.pareto.bits)")) >= 3);
  CHECK_STREQ(run(S, "m.best_value"), "nil");
  run(S, "a = search trials=5 sampler=random seed=1 { objective (suggest \"x\" float 0 1) }\n"
         "b = search trials=5 sampler=tpe seed=1 { objective (suggest \"x\" float 0 1) }");
  CHECK_STREQ(run(S, "c = curves random=a tpe=b\nlen(c.study)"), "10");
  CHECK_STREQ(run(S, "a.running_best.best[4] == a.best_value"), "true");
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
    const char *body = "{\n  x = suggest \"x\" float 0 1\n  n = suggest \"n\" int 1 4\n  objective (x - 0.3) ** 2 + n\n}";
    snprintf(code, sizeof code, "whole = search trials=14 startup=4 population=4 sampler=%s seed=9 %s %s", samplers[k], grid, body);
    run(S, code);
    snprintf(code, sizeof code, "half = search trials=6 startup=4 population=4 sampler=%s seed=9 %s journal=\"%s/%s.jsonl\" %s",
             samplers[k], grid, dir, samplers[k], body);
    run(S, code);
    snprintf(code, sizeof code, "rest = search trials=14 startup=4 population=4 sampler=%s seed=9 %s journal=\"%s/%s.jsonl\" %s",
             samplers[k], grid, dir, samplers[k], body);
    run(S, code);
    CHECK_CONTAINS(out, "resuming");
    CHECK_STREQ(run(S, "rest.trials.x == whole.trials.x and rest.trials.n == whole.trials.n and rest.trials.value == whole.trials.value"), "true");
    CHECK_STREQ(run(S, "half.n < rest.n"), "true");
    sl_free(S);
  }
  char cmd[600];
  snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
  CHECK(system(cmd) == 0);
}

int main(void) {
  RUN(test_mt19937_reference_outputs);
  RUN(test_shuffle_and_random_pruning_equal_numpy);
  RUN(test_failed_trials_are_recorded_and_the_study_goes_on);
  RUN(test_interrupt_keeps_finished_trials);
  RUN(test_grid_stops_at_its_size_and_spaces_are_checked);
  RUN(test_multi_objective_pareto_and_curves);
  RUN(test_journal_resume_equals_an_uninterrupted_run);
  return check_summary();
}
