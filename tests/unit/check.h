/*
** check.h - a tiny unit-test harness for the C tests.
**
** A test file defines `static void test_x(void)` functions and a main that
** calls RUN(test_x) for each, then `return check_summary();`. A failed CHECK
** records the file:line and the test goes on, so one run shows every failure.
** The summary line "N passed, N failed" is the one CI reads.
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

#endif
