/*
** test_journal.c - a study journal is read as untrusted input: every field
** of every line is checked against the header and the search space, the
** streams' positions are bounded and their replay can be interrupted, and
** a path that is not a regular file is refused before it is opened. Also
** the progress of a grid search, which counts the grid's points.
**
** The cases that crashed or hung before the checks run in a child process
** with an alarm (and, outside ASan, a memory limit), so a regression fails
** this test instead of hanging the suite or exhausting the machine.
*/
#include <jansson.h>
#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "check.h"
#include "syslab.h"
#include "slutil.h"

#if defined(__SANITIZE_ADDRESS__)
#define UNDER_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define UNDER_ASAN 1
#endif
#endif
#ifndef UNDER_ASAN
#define UNDER_ASAN 0
#endif

static char dir[64];

static double seconds_since(const struct timespec *t0) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)(t.tv_sec - t0->tv_sec) + (double)(t.tv_nsec - t0->tv_nsec) * 1e-9;
}

/* Runs fn in a child process that is killed after `seconds`; outside ASan
** its address space is limited to 2 GiB. A crash, a hang or a failed
** CHECK in the child fails the test. */
static void in_child(const char *what, void (*fn)(void), int seconds) {
  fflush(NULL);
  pid_t pid = fork();
  if (pid == 0) {
    if (!UNDER_ASAN) {
      struct rlimit rl = {(rlim_t)2 << 30, (rlim_t)2 << 30};
      setrlimit(RLIMIT_AS, &rl);
    }
    alarm((unsigned)seconds);
    check_failures_in_test = 0;
    fn();
    fflush(NULL);
    _exit(check_failures_in_test ? 1 : 0);
  }
  int status = 0;
  waitpid(pid, &status, 0);
  if (WIFSIGNALED(status))
    CHECK_MSG(0, "%s: the child died of signal %d%s", what, WTERMSIG(status),
              WTERMSIG(status) == SIGALRM ? " (it hung)" : "");
  else CHECK_MSG(WEXITSTATUS(status) == 0, "%s: the child's checks failed", what);
}

/* ------------------------------------------------------------ the journal */

static const char *const body = "{\n  a = suggest \"act\" categorical [\"relu\", \"gelu\"]\n"
                                "  x = suggest \"x\" float 0 1\n  objective x\n}";

static void journal_path(char *out, size_t size, const char *name) { snprintf(out, size, "%s/%s.jsonl", dir, name); }

static const char *search(sl_State *S, const char *path, int trials) {
  static char code[1024];
  snprintf(code, sizeof code, "s = search trials=%d sampler=random seed=3 journal=\"%s\" %s\ns.n", trials, path, body);
  return check_eval(S, code);
}

/* a fresh journal of `trials` random trials */
static void write_journal(const char *path, int trials) {
  unlink(path);
  sl_State *S = sl_new();
  char n[16];
  snprintf(n, sizeof n, "%d", trials);
  CHECK_STREQ(search(S, path, trials), n);
  sl_free(S);
}

/* sets the field at `where` ("params.0.internal": keys and indices) of
** line `lineno` (1: the header) to v, rewriting the file */
static void edit(const char *path, int lineno, const char *where, json_t *v) {
  FILE *f = fopen(path, "r");
  char *line = NULL;
  size_t cap = 0;
  slU_Text out = {0};
  slU_add_len(&out, "", 0);
  for (int n = 1; getline(&line, &cap, f) > 0; n++) {
    if (n != lineno) {
      slU_add(&out, "%s", line);
      continue;
    }
    json_t *o = json_loads(line, 0, NULL), *at = o;
    char keys[256];
    snprintf(keys, sizeof keys, "%s", where);
    char *save = NULL, *key = strtok_r(keys, ".", &save);
    while (key) {
      char *next = strtok_r(NULL, ".", &save);
      int is_index = key[0] >= '0' && key[0] <= '9';
      if (!next) {
        if (is_index) json_array_set(at, (size_t)atoi(key), v);
        else json_object_set(at, key, v);
      } else {
        at = is_index ? json_array_get(at, (size_t)atoi(key)) : json_object_get(at, key);
      }
      key = next;
    }
    char *s = json_dumps(o, JSON_COMPACT);
    slU_add(&out, "%s\n", s);
    free(s);
    json_decref(o);
  }
  free(line);
  fclose(f);
  json_decref(v);
  f = fopen(path, "w");
  fputs(out.s, f);
  fclose(f);
  free(out.s);
}

static void append_line(const char *path, const char *line) {
  FILE *f = fopen(path, "a");
  fprintf(f, "%s\n", line);
  fclose(f);
}

/* resuming from the journal fails with an error naming the line, the field and `why` */
static void refused(const char *path, int lineno, const char *field, const char *why) {
  sl_State *S = sl_new();
  struct timespec t0;
  clock_gettime(CLOCK_MONOTONIC, &t0);
  const char *r = search(S, path, 5);
  char want[512];
  snprintf(want, sizeof want, "line %d of the journal %s", lineno, path);
  CHECK_CONTAINS(r, want);
  snprintf(want, sizeof want, "field \"%s\"", field);
  CHECK_CONTAINS(r, want);
  CHECK_CONTAINS(r, why);
  CHECK_MSG(seconds_since(&t0) < 2, "refusing took %.1f s", seconds_since(&t0));
  sl_free(S);
}

static char path[256];

static void categorical_index_minus_one(void) {
  edit(path, 2, "params.0.internal", json_real(-1));
  refused(path, 2, "params[0].internal", "not the index of a choice of categorical [\"relu\", \"gelu\"] (0 to 1)");
}

static void draws_1e18(void) {
  edit(path, 4, "draws.0", json_integer(1000000000000000000LL));
  refused(path, 4, "draws[0]", "more than the trials could have drawn");
}

static void draws_minus_5(void) {
  edit(path, 3, "draws.1", json_integer(-5));
  refused(path, 3, "draws[1]", "a whole number of at least 0");
}

/* a categorical index of -1 corrupted the heap (double free, SIGABRT); an
** index past the choices, 3 values for 1 objective, an unknown state, a
** complete trial whose value is NaN and a float outside its range were
** accepted; a stream position of 1e18 or -5 made resume spin for ever */
static void test_every_field_is_checked(void) {
  journal_path(path, sizeof path, "fields");
  write_journal(path, 3);
  in_child("a categorical index of -1", categorical_index_minus_one, 20);
  write_journal(path, 3);
  in_child("draws of 1e18", draws_1e18, 20);
  write_journal(path, 3);
  in_child("draws of -5", draws_minus_5, 20);

  write_journal(path, 3);
  edit(path, 2, "params.0.internal", json_real(2));
  refused(path, 2, "params[0].internal", "not the index of a choice");
  write_journal(path, 3);
  edit(path, 3, "params.0.internal", json_real(0.5));
  refused(path, 3, "params[0].internal", "not the index of a choice");
  write_journal(path, 3);
  edit(path, 2, "values", json_pack("[f, f, f]", 1.0, 2.0, 3.0));
  refused(path, 2, "values", "a complete trial has 1 value (one per objective), this one has 3");
  write_journal(path, 3);
  edit(path, 2, "state", json_string("bogus"));
  refused(path, 2, "state", "\"bogus\" is not the state of a finished trial (complete, pruned or failed)");
  write_journal(path, 3);
  edit(path, 2, "state", json_string("running"));
  refused(path, 2, "state", "not the state of a finished trial");
  write_journal(path, 3);
  edit(path, 3, "values.0", json_string("nan"));
  refused(path, 3, "values[0]", "a complete trial's value is a number, not NaN");
  write_journal(path, 3);
  edit(path, 2, "params.1.internal", json_real(1.5));
  refused(path, 2, "params[1].internal", "outside float 0..1");
  write_journal(path, 3);
  edit(path, 2, "params.1.internal", json_string("inf"));
  refused(path, 2, "params[1].internal", "outside float 0..1");

  /* the rest of a trial line */
  write_journal(path, 3);
  edit(path, 2, "trial", json_string("0"));
  refused(path, 2, "trial", "must be 0");
  write_journal(path, 3);
  edit(path, 3, "trial", json_integer(5));
  refused(path, 3, "trial", "must be 1 (trials are numbered in order)");
  write_journal(path, 3);
  edit(path, 2, "colour", json_string("red"));
  refused(path, 2, "colour", "is not a field of a trial line");
  write_journal(path, 3);
  edit(path, 2, "params.1.distribution.kind", json_string("complex"));
  refused(path, 2, "params[1].distribution.kind", "int, float or categorical");
  write_journal(path, 3);
  edit(path, 2, "params.1.distribution.low", json_real(2));
  refused(path, 2, "params[1].distribution", "low must not be above high");
  write_journal(path, 3);
  edit(path, 3, "params.1.distribution.high", json_real(2));
  refused(path, 3, "params[1].distribution", "'x' was suggested as float 0..1 and is now suggested as float 0..2");
  write_journal(path, 3);
  edit(path, 2, "params.0.distribution.choices", json_pack("[s, [i]]", "relu", 1));
  refused(path, 2, "params[0].distribution.choices[1]", "numbers, strings, booleans or null");
  write_journal(path, 3);
  edit(path, 2, "params.1.name", json_string("act"));
  refused(path, 2, "params[1].name", "'act' is given twice");
  write_journal(path, 3);
  edit(path, 2, "seconds", json_real(-1));
  refused(path, 2, "seconds", "at least 0");
  write_journal(path, 3);
  edit(path, 2, "message", json_string("why"));
  refused(path, 2, "message", "only a failed trial has a message");
  write_journal(path, 3);
  edit(path, 2, "intermediate", json_pack("[[i, f], [i, f]]", 1, 0.5, 1, 0.25));
  refused(path, 2, "intermediate[1][0]", "step 1 is reported twice");
  write_journal(path, 3);
  edit(path, 2, "grid_id", json_integer(0));
  refused(path, 2, "grid_id", "only a grid search's trials have a grid point");
  write_journal(path, 3);
  edit(path, 2, "draws", json_pack("[i]", 3));
  refused(path, 2, "draws", "two whole numbers");
  write_journal(path, 3);
  edit(path, 2, "state", json_string("pruned"));
  refused(path, 2, "state", "no intermediate value");

  /* other lines */
  write_journal(path, 3);
  append_line(path, "{\"report\": -1, \"step\": 0, \"value\": 1}");
  refused(path, 5, "report", "the number of a trial not yet finished (3 or more)");
  write_journal(path, 3);
  append_line(path, "{\"report\": 3, \"step\": 0, \"value\": [1]}");
  refused(path, 5, "value", "a number");
  write_journal(path, 3);
  append_line(path, "{\"note\": 1}");
  refused(path, 5, "note", "neither a trial nor a report");
  write_journal(path, 3);
  append_line(path, "{\"syslab_study\": 1}");
  refused(path, 5, "syslab_study", "only the first line is a header");

  /* a good journal still resumes, a torn last line is still cut */
  write_journal(path, 3);
  append_line(path, "{\"report\": 3, \"step\": 0, \"value\": 0.5}");
  FILE *f = fopen(path, "a");
  fputs("{\"trial\": 3, \"sta", f);
  fclose(f);
  sl_State *S = sl_new();
  CHECK_STREQ(search(S, path, 5), "5");
  CHECK_CONTAINS(check_cap.err.s, "is incomplete");
  CHECK_CONTAINS(check_cap.out.s, "resuming from");
  sl_free(S);
  unlink(path);
}

/* the stream positions are bounded by what the trials could have drawn:
** for this space (a categorical of 2 choices, a float) at most 1024 + 64 x
** ((2 x 2 + 4) + (2 + 4)) = 1920 outputs a trial, for the 3 trials and
** 4096 more that a distributed search may have had running */
static void test_stream_positions_are_bounded(void) {
  char p[256];
  journal_path(p, sizeof p, "bound");
  write_journal(p, 3);
  edit(p, 4, "draws.0", json_integer(7870080));
  sl_State *S = sl_new();
  CHECK_STREQ(search(S, p, 4), "4");
  sl_free(S);
  write_journal(p, 3);
  edit(p, 4, "draws.1", json_integer(7870081));
  refused(p, 4, "draws[1]", "7870081 is more than the trials could have drawn (at most 7870080 outputs after seeding");
  unlink(p);
}

static void *interrupt_soon(void *arg) {
  struct timespec t = {0, 200 * 1000 * 1000};
  nanosleep(&t, NULL);
  sl_interrupt();
  return NULL;
}

/* replaying a long stream stops when interrupted */
static void test_stream_replay_is_interruptible(void) {
  char p[256];
  journal_path(p, sizeof p, "replay");
  unlink(p);
  /* 3,000 choices: a journal may record 1.6 billion outputs, seconds to replay */
  slU_Text code = {0};
  slU_add(&code, "s = search trials=1 sampler=random seed=1 journal=\"%s\" {\n  c = suggest \"c\" categorical [", p);
  for (int i = 0; i < 3000; i++) slU_add(&code, "%s%d", i ? ", " : "", i);
  slU_add(&code, "]\n  objective c\n}\ns.n");
  sl_State *S = sl_new();
  CHECK_STREQ(check_eval(S, code.s), "1");
  edit(p, 2, "draws.0", json_integer(1500000000LL));
  pthread_t th;
  pthread_create(&th, NULL, interrupt_soon, NULL);
  struct timespec t0;
  clock_gettime(CLOCK_MONOTONIC, &t0);
  char *more = strdup(code.s);
  memcpy(strstr(more, "trials=1"), "trials=2", 8);
  const char *r = check_eval(S, more);
  double took = seconds_since(&t0);
  pthread_join(th, NULL);
  sl_clear_interrupt();
  CHECK_CONTAINS(r, "Interrupt");
  CHECK_MSG(took < 1.2, "the replay went on for %.2f s after the interrupt at 0.2 s", took);
  free(more);
  free(code.s);
  sl_free(S);
  unlink(p);
}

/* ------------------------------------------------------------ the paths */

static void dev_zero(void) {
  sl_State *S = sl_new();
  CHECK_CONTAINS(search(S, "/dev/zero", 2), "'/dev/zero' is not a regular file");
  sl_free(S);
}

static void fifo(void) {
  sl_State *S = sl_new();
  char p[256];
  journal_path(p, sizeof p, "fifo");
  CHECK_CONTAINS(search(S, p, 2), "is not a regular file (a pipe, socket or device)");
  sl_free(S);
}

/* /dev/zero read until memory ran out, a FIFO blocked for ever in open, a
** folder was "empty: delete it" */
static void test_journal_paths_are_regular_files(void) {
  in_child("journal=\"/dev/zero\"", dev_zero, 20);
  char p[256];
  journal_path(p, sizeof p, "fifo");
  unlink(p);
  CHECK(mkfifo(p, 0600) == 0);
  in_child("a FIFO as the journal", fifo, 20);
  unlink(p);
  sl_State *S = sl_new();
  CHECK_CONTAINS(search(S, dir, 2), "is a folder, not a syslab study journal");
  /* a link to a device is refused too */
  journal_path(p, sizeof p, "link");
  CHECK(symlink("/dev/null", p) == 0);
  CHECK_CONTAINS(search(S, p, 2), "is not a regular file");
  unlink(p);
  sl_free(S);
}

/* ------------------------------------------------------------ progress */

static char progress[512];
static void (*plain_display)(void *, const sl_Bundle *, const char *, int);

static void keep_progress(void *ud, const sl_Bundle *b, const char *id, int update) {
  const sl_MimePart *p = id ? sl_bundle_get(b, "text/plain") : NULL;
  if (p) snprintf(progress, sizeof progress, "%s", p->data);
  plain_display(ud, b, id, update);
}

/* a 6-point grid showed 6/100 with trials=100 */
static void test_grid_progress_counts_the_grid(void) {
  plain_display = check_host.display;
  check_host.display = keep_progress;
  sl_State *S = sl_new();
  check_eval(S, "g = search trials=100 sampler=grid a=[1, 2, 3] b=[\"x\", \"y\"] {\n"
                "  a = suggest \"a\" int 1 3\n  b = suggest \"b\" categorical [\"x\", \"y\"]\n  objective a\n}");
  CHECK_CONTAINS(progress, " 6/6 ");
  CHECK_CONTAINS(progress, "trial 6/6 ");
  /* fewer trials than points: the trials */
  check_eval(S, "g = search trials=4 sampler=grid a=[1, 2, 3] b=[\"x\", \"y\"] {\n"
                "  a = suggest \"a\" int 1 3\n  b = suggest \"b\" categorical [\"x\", \"y\"]\n  objective a\n}");
  CHECK_CONTAINS(progress, " 4/4 ");
  /* a resumed grid: the points left after the journal's */
  char p[256], code[1024];
  journal_path(p, sizeof p, "grid");
  unlink(p);
  const char *grid = "search trials=%d sampler=grid journal=\"%s\" a=[1, 2, 3] b=[\"x\", \"y\"] {\n"
                     "  a = suggest \"a\" int 1 3\n  b = suggest \"b\" categorical [\"x\", \"y\"]\n  objective a\n}";
  snprintf(code, sizeof code, grid, 2, p);
  check_eval(S, code);
  snprintf(code, sizeof code, grid, 100, p);
  check_eval(S, code);
  CHECK_CONTAINS(progress, " 6/6 ");
  /* other samplers count the trials */
  check_eval(S, "r = search trials=3 sampler=random { objective (suggest \"x\" float 0 1) }");
  CHECK_CONTAINS(progress, " 3/3 ");
  unlink(p);
  sl_free(S);
  check_host.display = plain_display;
}

int main(void) {
  if (!check_tmpdir(dir, sizeof dir, "journal")) return 1;
  RUN(test_every_field_is_checked);
  RUN(test_stream_positions_are_bounded);
  RUN(test_stream_replay_is_interruptible);
  RUN(test_journal_paths_are_regular_files);
  RUN(test_grid_progress_counts_the_grid);
  if (check_tmpdir_remove(dir) != 0) return 1;
  return check_summary();
}
