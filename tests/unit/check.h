/*
** check.h - a tiny unit-test harness for the C tests.
**
** A test file defines `static void test_x(void)` functions and a main that
** calls RUN(test_x) for each, then `return check_summary();`. A failed CHECK
** records the file:line and the test goes on, so one run shows every failure.
** The summary line "N passed, N failed" is the one CI reads.
**
** Tests of the language run code through check_eval (or check_show,
** check_fails) against check_host, an in-memory host: each call starts
** a fresh capture of what the code writes, displays, clears and pages.
*/
#ifndef CHECK_H
#define CHECK_H

#include <math.h>
#include <stdio.h>
#include <string.h>

extern int check_failures_in_test;

void check_fail(const char *file, int line, const char *fmt, ...);
void check_run(const char *name, void (*fn)(void));
int check_summary(void);

#define RUN(fn) check_run(#fn, fn)

#define CHECK(cond) \
  do { if (!(cond)) check_fail(__FILE__, __LINE__, "CHECK(%s)", #cond); } while (0)

#define CHECK_MSG(cond, ...) \
  do { if (!(cond)) check_fail(__FILE__, __LINE__, __VA_ARGS__); } while (0)

#define CHECK_EQ_INT(a, b) \
  do { long long a_ = (long long)(a), b_ = (long long)(b); \
       if (a_ != b_) check_fail(__FILE__, __LINE__, "%s == %s: %lld != %lld", #a, #b, a_, b_); } while (0)

#define CHECK_NEAR(a, b, tol) \
  do { double a_ = (double)(a), b_ = (double)(b); \
       if (!(fabs(a_ - b_) <= (tol))) \
         check_fail(__FILE__, __LINE__, "%s ~ %s: %.9g vs %.9g (tol %g)", #a, #b, a_, b_, (double)(tol)); } while (0)

#define CHECK_STREQ(a, b) \
  do { const char *a_ = (a), *b_ = (b); \
       if (!a_ || !b_ || strcmp(a_, b_) != 0) \
         check_fail(__FILE__, __LINE__, "%s == %s: \"%s\" != \"%s\"", #a, #b, a_ ? a_ : "(null)", b_ ? b_ : "(null)"); } while (0)

#define CHECK_CONTAINS(hay, needle) \
  do { const char *h_ = (hay), *n_ = (needle); \
       if (!h_ || !strstr(h_, n_)) \
         check_fail(__FILE__, __LINE__, "%s contains \"%s\": got \"%s\"", #hay, n_, h_ ? h_ : "(null)"); } while (0)

/* a GPU test that cannot run here says so, and counts as skipped */
void check_skip(const char *name, const char *why);

/* ------------------------------------------------- running the language */

#include "syslab.h"

typedef struct {
  slU_Text out, err;       /* everything written ("" when nothing), however long */
  sl_Bundle last;          /* the last display, progress bars (which have an id) left out */
  char last_mime[64];      /* the last part of that display */
  int displays;            /* displays, progress bars left out */
  int updates, clears;     /* display updates (progress), clear_output */
  char page[4096];         /* a pager payload (NAME?) */
  const char *answer;      /* what `input` gets; "forty-two" when NULL */
  /* called after each write, e.g. to interrupt when something is printed */
  void (*on_write)(sl_Stream stream);
} check_Capture;

extern check_Capture check_cap;
extern sl_Host check_host;

/* empties check_cap (each check_eval, check_show and check_fails does) */
void check_reset(void);
/* runs code; the result as the language writes it (strings quoted), or
** "Ename: message". The text lives until the next call. */
const char *check_eval(sl_State *S, const char *code);
/* runs code; what a notebook shows: the standard output, then the result
** as `mime` (text/plain when it has no such part), or "Ename: message" */
const char *check_show(sl_State *S, const char *code, const char *mime);
/* runs code; NULL when it ran, else "Ename: message" */
const char *check_fails(sl_State *S, const char *code);

/* ------------------------------------------------------------ interrupts */

#include <pthread.h>

/* seconds on the monotonic clock (the engine's slM_now reads the same) */
double check_now(void);
/* An interrupt sent by another thread `after` seconds from now, as the
** kernel's control thread sends one; check_interrupt_join waits for that
** thread, after which `at` holds when the interrupt was sent. */
typedef struct {
  double after, at;
  pthread_t thread;
} check_Timer;
void check_interrupt_later(check_Timer *t, double after);
void check_interrupt_join(check_Timer *t);

#endif
