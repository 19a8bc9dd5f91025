/*
** api.c - what a command may ask of the call that runs it: errors, output
** to the host, progress bars, its arguments, the session's variables, its
** block (plain or protected), and the table a sweep collects into.
**
** The calls of the command-author API (slcommand.h), kept apart from the
** evaluator as Lua keeps lapi.c apart from lvm.c: eval.c binds a call and
** runs the command; the command reaches the interpreter only through these
** functions, never through its state. Only this file and the binding in
** eval.c read the call record (call.h).
*/
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "call.h"
#include "error.h"
#include "eval.h"
#include "slcommand.h"

/* ----------------------------------------------------------------- errors */

static int call_line(sl_Call *call) { return call->node ? call->node->line : 0; }
static int call_col(sl_Call *call) { return call->node ? call->node->col : 0; }

static int vcall_error(sl_Call *call, const char *ename, int line, int col, const char *fmt, va_list ap) {
  char msg[1024];
  vsnprintf(msg, sizeof msg, fmt, ap);
  return slV_error(call->S, ename, line, col, "%s: %s", call->cmd->name, msg);
}

int sl_error(sl_Call *call, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  vcall_error(call, "RuntimeError", call_line(call), call_col(call), fmt, ap);
  va_end(ap);
  return -1;
}

/* the memory budget's refusal as this command's error (budget.c decides) */
int sl_memory_check(sl_Call *call, const char *arg, double bytes, const char *what) {
  char msg[512];
  if (!sl_memory_exceeds(bytes, what, msg, sizeof msg)) return 0;
  if (arg) return sl_arg_error(call, arg, "%s: choose smaller sizes", msg);
  return sl_error(call, "%s: choose smaller sizes", msg);
}

int sl_arg_error(sl_Call *call, const char *arg, const char *fmt, ...) {
  int i = slV_arg_index(call->cmd, arg);
  int line = call_line(call), col = call_col(call);
  if (i >= 0 && call->given[i] && call->line[i]) {
    line = call->line[i];
    col = call->col[i];
  }
  char msg[1024];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  return slV_error(call->S, "ArgumentError", line, col, "%s: %s: %s", call->cmd->name, arg, msg);
}

int sl_interrupted_error(sl_Call *call) {
  return slV_error(call->S, "Interrupt", call_line(call), call_col(call), "%s was interrupted by the user",
                   call->cmd->name);
}

/* ------------------------------------------------------------------ output */

static void vwrite(sl_Call *call, sl_Stream stream, const char *fmt, va_list ap) {
  va_list ap2;
  va_copy(ap2, ap);
  int n = vsnprintf(NULL, 0, fmt, ap);
  char *s = malloc((size_t)n + 1);
  vsnprintf(s, (size_t)n + 1, fmt, ap2);
  va_end(ap2);
  slV_host_write(call->S, stream, s, (size_t)n);
  free(s);
}

void sl_printf(sl_Call *call, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  vwrite(call, SL_STDOUT, fmt, ap);
  va_end(ap);
}

void sl_eprintf(sl_Call *call, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  vwrite(call, SL_STDERR, fmt, ap);
  va_end(ap);
}

void sl_display(sl_Call *call, const sl_Bundle *b) {
  const sl_Host *h = call->S->host;
  if (h && h->display) h->display(h->ud, b, NULL, 0);
}

const sl_Host *sl_call_host(sl_Call *call) { return call->S->host; }
sl_State *slV_state(sl_Call *call) { return call->S; }

/* --------------------------------------------------------------- progress */

struct sl_Progress {
  sl_State *S;
  char label[128];
  char id[48];
  double total, done;
  double last_shown; /* seconds, monotonic */
  char detail[160];
};

static void progress_show(sl_Progress *p, int update) {
  const sl_Host *h = p->S->host;
  if (!h || !h->display) return;
  double frac = p->total > 0 ? p->done / p->total : 0;
  if (frac > 1) frac = 1;
  int filled = (int)(frac * 30 + 0.5);
  char bar[31];
  for (int i = 0; i < 30; i++) bar[i] = i < filled ? '#' : '.';
  bar[30] = '\0';
  char count[64];
  if (p->total > 0) snprintf(count, sizeof count, "%.0f/%.0f", p->done, p->total);
  else snprintf(count, sizeof count, "%.0f", p->done);
  sl_Bundle b;
  sl_bundle_init(&b);
  sl_bundle_addf(&b, "text/plain", "%s [%s] %s %s", p->label, bar, count, p->detail);
  sl_bundle_addf(&b, "text/html",
                 "<div style=\"font-family:monospace\">%s "
                 "<progress value=\"%.4f\" max=\"1\" style=\"width:16em\"></progress> %s %s</div>",
                 p->label, frac, count, p->detail);
  h->display(h->ud, &b, p->id, update);
  sl_bundle_free(&b);
  p->last_shown = slU_now();
}

sl_Progress *sl_progress_begin(sl_Call *call, const char *label, double total) {
  sl_Progress *p = calloc(1, sizeof *p);
  p->S = call->S;
  p->total = total;
  snprintf(p->label, sizeof p->label, "%s", label);
  snprintf(p->id, sizeof p->id, "syslab-progress-%u", ++call->S->next_display);
  progress_show(p, 0);
  return p;
}

void sl_progress_update(sl_Progress *p, double done, const char *detail) {
  if (!p) return;
  p->done = done;
  if (detail) snprintf(p->detail, sizeof p->detail, "%s", detail);
  if (slU_now() - p->last_shown >= 0.1) progress_show(p, 1);
}

void sl_progress_end(sl_Progress *p) {
  if (!p) return;
  progress_show(p, 1);
  free(p);
}

/* ---------------------------------------------------------- call accessors */

sl_Value sl_arg(sl_Call *call, const char *name) {
  int i = slV_arg_index(call->cmd, name);
  return i >= 0 ? call->values[i] : sl_nil();
}

int sl_arg_given(sl_Call *call, const char *name) {
  int i = slV_arg_index(call->cmd, name);
  return i >= 0 && call->given[i];
}

double sl_arg_number(sl_Call *call, const char *name) {
  sl_Value v = sl_arg(call, name);
  return v.type == SL_NUMBER ? v.u.n : v.type == SL_BOOL ? v.u.b : 0;
}

const char *sl_arg_string(sl_Call *call, const char *name) { return sl_str(sl_arg(call, name)); }

void *sl_arg_object(sl_Call *call, const char *name, const sl_Class *cls) {
  return sl_object_as(sl_arg(call, name), cls);
}

size_t sl_call_extra_count(sl_Call *call) { return call->nextra; }
const char *sl_call_extra_name(sl_Call *call, size_t i) { return i < call->nextra ? call->extra_names[i] : NULL; }
sl_Value sl_call_extra_value(sl_Call *call, size_t i) { return i < call->nextra ? call->extra_values[i] : sl_nil(); }

void sl_setvar(sl_Call *call, const char *name, sl_Value v) { sl_record_set(call->S->vars, name, v); }
sl_Value sl_getvar(sl_Call *call, const char *name) { return sl_record_get(call->S->vars, name); }
void sl_unsetvar(sl_Call *call, const char *name) { sl_record_remove(call->S->vars, name); }

char *slV_call_source(sl_Call *call) {
  const slY_Node *n = call->node;
  if (!n || !call->S->src || n->end > call->S->src_len || n->offset > n->end) return strdup("");
  return strndup(call->S->src + n->offset, n->end - n->offset);
}

/* Recurses as the evaluator does: along the levels the parser counts, and in
** a loop down the left side of a chain of operators (100,000 terms deep). */
static void collect_names(const slY_Node *n, sl_Value names) {
  for (; n; n = n->a) {
    if (n->kind == N_NAME && n->str) {
      int seen = 0;
      for (size_t i = 0; i < sl_list_len(names) && !seen; i++)
        seen = strcmp(sl_str(sl_list_get(names, i)), n->str) == 0;
      if (!seen) sl_list_push(names, sl_string(n->str));
    }
    collect_names(n->b, names);
    collect_names(n->c, names);
    for (size_t i = 0; i < n->nkids; i++) collect_names(n->kids[i], names);
  }
}

sl_Value slV_call_names(sl_Call *call) {
  sl_Value names = sl_list_new();
  collect_names(call->node, names);
  return names;
}

int sl_run_block(sl_Call *call, const char *arg) {
  int i = slV_arg_index(call->cmd, arg);
  if (i < 0 || call->cmd->args[i].type != SL_ARG_BLOCK || !call->node || !call->node->c)
    return sl_error(call, "no { } block was given");
  sl_Value ignored;
  if (slV_run_block(call->S, call->node->c, &ignored) != 0) return -1;
  sl_release(ignored);
  return 0;
}

int sl_run_protected(sl_Call *call, const char *arg, sl_Error *caught) {
  memset(caught, 0, sizeof *caught);
  if (sl_run_block(call, arg) == 0) return 0;
  sl_State *S = call->S;
  sl_Error *e = S->err;
  snprintf(caught->ename, sizeof caught->ename, "%s", e->ename);
  caught->evalue = e->evalue; /* moved, not copied */
  caught->line = e->line;
  caught->col = e->col;
  e->evalue = NULL;
  e->ename[0] = '\0';
  e->line = e->col = 0;
  S->failed = 0;
  return -1;
}

int sl_raise(sl_Call *call, const sl_Error *e) {
  return slV_error(call->S, e->ename, e->line, e->col, "%s", e->evalue ? e->evalue : "");
}

const sl_Error *sl_call_error(sl_Call *call) { return call->S->err; }

void sl_set_collector(sl_Call *call, sl_Value table) {
  if (!call->collector_set) {
    call->saved_collector = call->S->collector;
    call->collector_set = 1;
  }
  call->S->collector = table;
}

sl_Value sl_get_collector(sl_Call *call) { return call->S->collector; }
