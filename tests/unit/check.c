/* check.c - the unit-test harness behind check.h, the in-memory host
** the tests of the language share, and the one-node graphs of the
** operator tests. */
#define _XOPEN_SOURCE 700 /* nftw */
#include "check.h"

#include <ftw.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "graph/ops.h"
#include "graph/slots.h"

int check_failures_in_test;
static int passed, failed, skipped;

void check_fail(const char *file, int line, const char *fmt, ...) {
  va_list ap;
  fprintf(stderr, "  FAIL %s:%d: ", file, line);
  va_start(ap, fmt);
  vfprintf(stderr, fmt, ap);
  va_end(ap);
  fputc('\n', stderr);
  check_failures_in_test++;
}

void check_run(const char *name, void (*fn)(void)) {
  sl_init(); /* the engine's domains, as every program registers them at start */
  check_failures_in_test = 0;
  fn();
  if (check_failures_in_test) {
    failed++;
    printf("not ok - %s\n", name);
  } else {
    passed++;
    printf("ok - %s\n", name);
  }
  fflush(stdout);
}

void check_skip(const char *name, const char *why) {
  skipped++;
  printf("skip - %s: %s\n", name, why);
}

int check_summary(void) {
  if (skipped) printf("%d passed, %d failed, %d skipped\n", passed, failed, skipped);
  else printf("%d passed, %d failed\n", passed, failed);
  return failed ? 1 : 0;
}

static int remove_one(const char *path, const struct stat *st, int flag, struct FTW *ftw) {
  (void)st, (void)flag, (void)ftw;
  return remove(path);
}

const char *check_tmpdir(char *dir, size_t n, const char *name) {
  if ((size_t)snprintf(dir, n, "/tmp/syslab-%s-XXXXXX", name) >= n) return NULL;
  return mkdtemp(dir);
}

int check_tmpdir_remove(const char *dir) { return nftw(dir, remove_one, 16, FTW_DEPTH | FTW_PHYS); }

/* ------------------------------------------------- running the language */

check_Capture check_cap;

static void cap_write(void *ud, sl_Stream s, const char *t, size_t n) {
  slU_add_len(s == SL_STDERR ? &check_cap.err : &check_cap.out, t, n);
  if (check_cap.on_write) check_cap.on_write(s);
}

static void cap_display(void *ud, const sl_Bundle *b, const char *id, int update) {
  if (update) check_cap.updates++;
  if (id) return; /* a progress bar */
  check_cap.displays++;
  sl_bundle_free(&check_cap.last);
  for (int i = 0; i < b->n; i++) sl_bundle_add(&check_cap.last, b->parts[i].mime, b->parts[i].data, b->parts[i].len);
  snprintf(check_cap.last_mime, sizeof check_cap.last_mime, "%s", b->n ? b->parts[b->n - 1].mime : "");
}

static void cap_clear(void *ud, int wait) { check_cap.clears++; }

static int cap_input(void *ud, const char *prompt, int password, char **answer) {
  *answer = strdup(check_cap.answer ? check_cap.answer : "forty-two");
  return 0;
}

static void cap_page(void *ud, const char *text) { snprintf(check_cap.page, sizeof check_cap.page, "%s", text); }

sl_Host check_host = {NULL, cap_write, cap_display, cap_clear, cap_input, cap_page};

void check_reset(void) {
  free(check_cap.out.s), free(check_cap.err.s);
  sl_bundle_free(&check_cap.last);
  void (*on_write)(sl_Stream) = check_cap.on_write;
  const char *answer = check_cap.answer;
  memset(&check_cap, 0, sizeof check_cap);
  slU_add_len(&check_cap.out, "", 0), slU_add_len(&check_cap.err, "", 0);
  check_cap.on_write = on_write, check_cap.answer = answer; /* a test's settings stay */
}

static char *text;

/* 0 with *v the result, or -1 with text "Ename: message" */
static int execute(sl_State *S, const char *code, sl_Value *v) {
  sl_Error e;
  free(text);
  text = NULL;
  check_reset();
  if (sl_execute(S, code, &check_host, v, &e) == 0) return 0;
  size_t n = strlen(e.ename) + strlen(e.evalue) + 3;
  text = malloc(n);
  snprintf(text, n, "%s: %s", e.ename, e.evalue);
  sl_error_free(&e);
  return -1;
}

const char *check_eval(sl_State *S, const char *code) {
  sl_Value v;
  if (execute(S, code, &v) != 0) return text;
  text = v.type == SL_STRING ? sl_repr(v) : sl_tostring(v);
  sl_release(v);
  return text;
}

const char *check_show(sl_State *S, const char *code, const char *mime) {
  sl_Value v;
  if (execute(S, code, &v) != 0) return text;
  sl_Bundle b;
  sl_show(v, &b);
  const sl_MimePart *p = sl_bundle_get(&b, mime);
  if (!p) p = sl_bundle_get(&b, "text/plain");
  slU_Text t = {0};
  slU_add(&t, "%s%s", check_cap.out.s, p ? p->data : "");
  text = t.s;
  sl_bundle_free(&b);
  sl_release(v);
  return text;
}

const char *check_fails(sl_State *S, const char *code) {
  sl_Value v;
  if (execute(S, code, &v) != 0) return text;
  sl_release(v);
  return NULL;
}

/* ------------------------------------------- one operator node, on the CPU */

slM_Graph *check_graph_new(void) {
  slM_Graph *g = calloc(1, sizeof *g);
  slM_rng_seed(&g->rng, 5);
  return g;
}

int check_input(slM_Graph *g, int ndim, const int *shape, const float *data) {
  int k = slM_add_node(g, "x", SLM_PLACEHOLDER, OP_MASK, NULL, 0);
  slM_Tensor *t = g->nodes[k].out = slM_tensor_new(ndim, shape);
  memcpy(t->data, data, t->size * sizeof *t->data);
  return k;
}

slM_Node *check_op_node(slM_Graph *g, slM_Op op, int a, int b) {
  int ins[2] = {a, b};
  int k = slM_add_node(g, slM_op_name(op), SLM_CALL_FUNCTION, op, ins, b < 0 ? 1 : 2);
  return &g->nodes[k];
}

void check_param(slM_Node *n, int ndim, const int *shape, const float *data) {
  slM_Param *p = slM_param_new("p", ndim, shape);
  memcpy(p->value->data, data, p->value->size * sizeof(float));
  n->params[n->nparams++] = p;
}

void check_forward(slM_Graph *g, slM_Node *n) { slM_op(n->op)->impl[SLM_CPU].forward(g, n); }

void check_backward(slM_Graph *g, slM_Node *n, const float *dy, float *const *init, float *const *pinit) {
  n->gout = slM_tensor_like(n->out);
  memcpy(n->gout->data, dy, n->gout->size * sizeof(float));
  n->gout_live = 1;
  for (int k = 0; k < n->ninputs && init; k++) {
    slM_Node *src = &g->nodes[n->inputs[k]];
    if (!init[k]) continue;
    src->gout = slM_tensor_like(src->out);
    memcpy(src->gout->data, init[k], src->gout->size * sizeof(float));
    src->gout_live = 1;
  }
  for (int k = 0; k < n->nparams && pinit; k++)
    if (pinit[k]) memcpy(slM_param_grad(n->params[k])->data, pinit[k], n->params[k]->value->size * sizeof(float));
  slM_op(n->op)->impl[SLM_CPU].backward(g, n);
}

float *check_grad_of(slM_Graph *g, const slM_Node *n, int k) { return g->nodes[n->inputs[k]].gout->data; }

/* ------------------------------------------------------------ interrupts */

double check_now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static void *interrupt_later(void *arg) {
  check_Timer *t = arg;
  struct timespec ts = {(time_t)t->after, (long)((t->after - (double)(time_t)t->after) * 1e9)};
  nanosleep(&ts, NULL);
  t->at = check_now();
  sl_interrupt();
  return NULL;
}

void check_interrupt_later(check_Timer *t, double after) {
  t->after = after;
  t->at = 0;
  pthread_create(&t->thread, NULL, interrupt_later, t);
}

void check_interrupt_join(check_Timer *t) { pthread_join(t->thread, NULL); }
