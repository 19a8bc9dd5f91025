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
  do { \
    if (!(cond)) check_fail(__FILE__, __LINE__, "CHECK(%s)", #cond); \
  } while (0)

#define CHECK_MSG(cond, ...) \
  do { \
    if (!(cond)) check_fail(__FILE__, __LINE__, __VA_ARGS__); \
  } while (0)

#define CHECK_EQ_INT(a, b) \
  do { \
    long long a_ = (long long)(a), b_ = (long long)(b); \
    if (a_ != b_) check_fail(__FILE__, __LINE__, "%s == %s: %lld != %lld", #a, #b, a_, b_); \
  } while (0)

#define CHECK_NEAR(a, b, tol) \
  do { \
    double a_ = (double)(a), b_ = (double)(b); \
    if (!(fabs(a_ - b_) <= (tol))) \
      check_fail(__FILE__, __LINE__, "%s ~ %s: %.9g vs %.9g (tol %g)", #a, #b, a_, b_, (double)(tol)); \
  } while (0)

#define CHECK_STREQ(a, b) \
  do { \
    const char *a_ = (a), *b_ = (b); \
    if (!a_ || !b_ || strcmp(a_, b_) != 0) \
      check_fail(__FILE__, __LINE__, "%s == %s: \"%s\" != \"%s\"", #a, #b, a_ ? a_ : "(null)", b_ ? b_ : "(null)"); \
  } while (0)

#define CHECK_CONTAINS(hay, needle) \
  do { \
    const char *h_ = (hay), *n_ = (needle); \
    if (!h_ || !strstr(h_, n_)) \
      check_fail(__FILE__, __LINE__, "%s contains \"%s\": got \"%s\"", #hay, n_, h_ ? h_ : "(null)"); \
  } while (0)

/* a fresh folder /tmp/syslab-NAME-XXXXXX for a test file's files, made in dir (n bytes): dir, or NULL */
const char *check_tmpdir(char *dir, size_t n, const char *name);
/* that folder and everything in it removed (no shell): 0 when done */
int check_tmpdir_remove(const char *dir);

/* a GPU test that cannot run here says so, and counts as skipped */
void check_skip(const char *name, const char *why);

/* ------------------------------------------------- running the language */

#include "syslab.h"
#include "slutil.h"

typedef struct {
  slU_Text out, err;   /* everything written ("" when nothing), however long */
  sl_Bundle last;      /* the last display, progress bars (which have an id) left out */
  char last_mime[64];  /* the last part of that display */
  int displays;        /* displays, progress bars left out */
  int updates, clears; /* display updates (progress), clear_output */
  char page[4096];     /* a pager payload (NAME?) */
  const char *answer;  /* what `input` gets; "forty-two" when NULL */
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

/* ------------------------------------------- one operator node, on the CPU */

/* Tests of an operator against another implementation (the GPU's, an
** emulation) build a graph of placeholders and one node, and run the
** node's CPU forward and backward from the operator table, so that the
** reference is the code the graph runs. */
#include "graph/model.h"

slM_Graph *check_graph_new(void);
/* a placeholder holding a copy of data (OP_MASK: the linear layer computes a gradient for it, unlike OP_INPUT) */
int check_input(slM_Graph *g, int ndim, const int *shape, const float *data);
/* the operator node over input a (and b when b >= 0), added last so that the pointer stays valid */
slM_Node *check_op_node(slM_Graph *g, slM_Op op, int a, int b);
/* a parameter of the node holding a copy of data */
void check_param(slM_Node *n, int ndim, const int *shape, const float *data);
void check_forward(slM_Graph *g, slM_Node *n);
/* the backward from dy; input k's gradient starts at init[k] and parameter k's at pinit[k] (NULL: the backward
** makes it, zeroed) */
void check_backward(slM_Graph *g, slM_Node *n, const float *dy, float *const *init, float *const *pinit);
float *check_grad_of(slM_Graph *g, const slM_Node *n, int k);

/* ------------------------------------------------------------ interrupts */

#include <pthread.h>

/* seconds on the monotonic clock (the engine's slU_now reads the same) */
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
