/*
** eval.c - evaluator: walks the syntax tree, binds command arguments
** against the registry, and runs commands.
**
** Every evaluation function returns 0 with a new reference in *out, or -1
** after recording the cell's first error in the state (ename, message,
** line:column). Nothing longjmps, so reference counts stay balanced on
** every path: a function that fails releases what it holds and returns.
**
** A command call binds its arguments into an sl_Call: positional ones in
** declaration order, keywords by name, defaults (language text in the
** registry) evaluated when absent, and every value checked against its
** declared type before the command runs. Commands see only sl_Call.
*/
#include "eval.h"
#include "registry.h"

#include <float.h>
#include <ctype.h>
#include <math.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "lex.h"
#include "suggest.h"

#define MAX_RANGE 10000000

struct sl_Call {
  sl_State *S;
  const sl_Command *cmd;
  slY_Node *node;
  sl_Value values[SL_MAX_ARGS];
  int given[SL_MAX_ARGS];
  int line[SL_MAX_ARGS], col[SL_MAX_ARGS];
  size_t nextra;
  char **extra_names;
  sl_Value *extra_values;
  sl_Value saved_collector;
  int collector_set;
};

/* ------------------------------------------------------------- interrupt */

static atomic_int interrupt_flag;

void sl_interrupt(void) { atomic_store(&interrupt_flag, 1); }
int sl_interrupted(void) { return atomic_load(&interrupt_flag); }
void sl_clear_interrupt(void) { atomic_store(&interrupt_flag, 0); }

/* ----------------------------------------------------------------- errors */

int slV_error(sl_State *S, const char *ename, int line, int col, const char *fmt, ...) {
  if (S->failed) return -1;  /* the first error is the one that explains */
  S->failed = 1;
  sl_Error *e = S->err;
  snprintf(e->ename, sizeof e->ename, "%s", ename);
  va_list ap, ap2;
  va_start(ap, fmt);
  va_copy(ap2, ap);
  int n = vsnprintf(NULL, 0, fmt, ap);
  va_end(ap);
  free(e->evalue);
  e->evalue = malloc((size_t)n + 1);
  vsnprintf(e->evalue, (size_t)n + 1, fmt, ap2);
  va_end(ap2);
  e->line = line;
  e->col = col;
  return -1;
}

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

static int arg_index(const sl_Command *cmd, const char *name) {
  for (int i = 0; i < SL_MAX_ARGS && cmd->args[i].name; i++)
    if (strcmp(cmd->args[i].name, name) == 0) return i;
  return -1;
}

int sl_arg_error(sl_Call *call, const char *arg, const char *fmt, ...) {
  int i = arg_index(call->cmd, arg);
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
  return slV_error(call->S, "Interrupt", call_line(call), call_col(call),
                   "%s was interrupted by the user", call->cmd->name);
}

/* ------------------------------------------------------------------ output */

void slV_host_write(sl_State *S, sl_Stream stream, const char *text, size_t len) {
  if (S->host && S->host->write) S->host->write(S->host->ud, stream, text, len);
}

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

void slV_page(sl_State *S, const char *text, const char *markdown) {
  const sl_Host *h = S->host;
  if (h && h->page) {
    h->page(h->ud, text);
  } else if (h && h->display) {
    sl_Bundle b;
    sl_bundle_init(&b);
    sl_bundle_add(&b, "text/plain", text, strlen(text));
    if (markdown) sl_bundle_add(&b, "text/markdown", markdown, strlen(markdown));
    h->display(h->ud, &b, NULL, 0);
    sl_bundle_free(&b);
  }
}

/* --------------------------------------------------------------- progress */

struct sl_Progress {
  sl_State *S;
  char label[128];
  char id[48];
  double total, done;
  double last_shown;   /* seconds, monotonic */
  char detail[160];
};

static double now_seconds(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

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
  p->last_shown = now_seconds();
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
  if (now_seconds() - p->last_shown >= 0.1) progress_show(p, 1);
}

void sl_progress_end(sl_Progress *p) {
  if (!p) return;
  progress_show(p, 1);
  free(p);
}

/* ---------------------------------------------------------- call accessors */

sl_Value sl_arg(sl_Call *call, const char *name) {
  int i = arg_index(call->cmd, name);
  return i >= 0 ? call->values[i] : sl_nil();
}

int sl_arg_given(sl_Call *call, const char *name) {
  int i = arg_index(call->cmd, name);
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
      for (size_t i = 0; i < sl_list_len(names) && !seen; i++) seen = strcmp(sl_str(sl_list_get(names, i)), n->str) == 0;
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
  int i = arg_index(call->cmd, arg);
  if (i < 0 || call->cmd->args[i].type != SL_ARG_BLOCK || !call->node || !call->node->c)
    return sl_error(call, "no { } block was given");
  sl_Value ignored;
  if (slV_run_block(call->S, call->node->c, &ignored) != 0) return -1;
  sl_release(ignored);
  return 0;
}

void sl_set_collector(sl_Call *call, sl_Value table) {
  if (!call->collector_set) {
    call->saved_collector = call->S->collector;
    call->collector_set = 1;
  }
  call->S->collector = table;
}

sl_Value sl_get_collector(sl_Call *call) { return call->S->collector; }

/* ---------------------------------------------------------------- binding */

static int has_variable(sl_State *S, const char *name) {
  for (size_t i = 0; i < sl_record_len(S->vars); i++)
    if (strcmp(sl_record_key(S->vars, i), name) == 0) return 1;
  return 0;
}

static int in_choices(const sl_Arg *arg, const char *s) {
  for (int i = 0; arg->choices && arg->choices[i]; i++)
    if (strcmp(arg->choices[i], s) == 0) return 1;
  return 0;
}

static void choice_list(const sl_Arg *arg, char *buf, size_t size) {
  buf[0] = '\0';
  size_t used = 0;
  for (int i = 0; arg->choices && arg->choices[i]; i++)
    used += (size_t)snprintf(buf + used, used < size ? size - used : 0, "%s%s", i ? ", " : "", arg->choices[i]);
}

/* a name that is no variable, or such names joined by '-' (fashion-mnist):
** words meant as a choice rather than an expression */
static int bare_words(sl_State *S, const slY_Node *n) {
  for (; n->kind == N_BINARY && n->op == '-'; n = n->a)
    if (!bare_words(S, n->b)) return 0;
  return n->kind == N_NAME && !has_variable(S, n->str);
}

/* "'fashion-mnist' is not a choice for name: allowed are ...; did you mean ...?" */
static int not_a_choice(sl_State *S, const sl_Arg *arg, const slY_Node *n) {
  char list[512], word[128];
  choice_list(arg, list, sizeof list);
  if (n->kind == N_NAME) {
    snprintf(word, sizeof word, "%s", n->str);
  } else {   /* the words as written */
    size_t end = S->src && n->end <= S->src_len ? n->end : n->offset;
    while (end > n->offset && isspace((unsigned char)S->src[end - 1])) end--;
    snprintf(word, sizeof word, "%.*s", (int)(end - n->offset), S->src ? S->src + n->offset : "");
  }
  const char *best = sl_closest(word, arg->choices);
  return slV_error(S, "ArgumentError", n->line, n->col, "'%s' is not a choice for %s: allowed are %s%s%s%s", word,
                   arg->name, list, best ? "; did you mean '" : "", best ? best : "", best ? "'?" : "");
}

/* Evaluates one argument. A bare name that is not a variable may stand for
** its own text: an enum choice (linear=integer) or a help topic. */
static int eval_arg(sl_State *S, const sl_Arg *arg, slY_Node *n, sl_Value *out) {
  /* a column name like x=width stays a name even when a variable `width`
  ** holds a number; a variable holding a string stands for that string */
  if (n->kind == N_NAME && (arg->flags & SL_BAREWORD) && has_variable(S, n->str) &&
      sl_record_get(S->vars, n->str).type != SL_STRING) {
    *out = sl_string(n->str);
    return 0;
  }
  if (n->kind == N_NAME && !has_variable(S, n->str)) {
    if ((arg->type == SL_ARG_ENUM && in_choices(arg, n->str)) || (arg->flags & SL_BAREWORD)) {
      *out = sl_string(n->str);
      return 0;
    }
    if (arg->type == SL_ARG_ENUM && !sl_command_find(n->str)) return not_a_choice(S, arg, n);
  }
  if (arg->type == SL_ARG_ENUM && n->kind == N_BINARY && bare_words(S, n)) return not_a_choice(S, arg, n);
  return slV_eval(S, n, out);
}

static int type_ok(const sl_Arg *arg, sl_Value v) {
  switch (arg->type) {
    case SL_ARG_ANY: return 1;
    case SL_ARG_NUMBER: return v.type == SL_NUMBER;
    case SL_ARG_INT: return v.type == SL_NUMBER && v.u.n == floor(v.u.n) && fabs(v.u.n) < 9e15;
    case SL_ARG_BOOL: return v.type == SL_BOOL;
    case SL_ARG_STRING: return v.type == SL_STRING;
    case SL_ARG_ENUM: return v.type == SL_STRING && in_choices(arg, sl_str(v));
    case SL_ARG_LIST: return v.type == SL_LIST;
    case SL_ARG_RECORD: return v.type == SL_RECORD;
    case SL_ARG_OBJECT: return v.type == SL_OBJECT && strcmp(sl_object_class(v)->name, arg->cls) == 0;
    case SL_ARG_BLOCK: return 0;
  }
  return 0;
}

static int check_type(sl_State *S, const sl_Command *cmd, const sl_Arg *arg, sl_Value v, int line, int col) {
  if (type_ok(arg, v)) return 0;
  if (arg->type == SL_ARG_ENUM && v.type == SL_STRING) {
    char list[512];
    choice_list(arg, list, sizeof list);
    return slV_error(S, "ArgumentError", line, col, "%s: %s=\"%s\" is not allowed: choose one of %s",
                     cmd->name, arg->name, sl_str(v), list);
  }
  if (arg->type == SL_ARG_INT && v.type == SL_NUMBER)
    return slV_error(S, "TypeError", line, col, "%s: %s must be a whole number, got %s", cmd->name,
                     arg->name, SL_NUM(v.u.n));
  return slV_error(S, "TypeError", line, col, "%s: %s must be a %s, got a %s", cmd->name, arg->name,
                   slH_type_name(arg), sl_typename(v));
}

static int default_value(sl_State *S, const sl_Command *cmd, const sl_Arg *arg, sl_Value *out) {
  slY_Error perr;
  slY_Tree *tree = slY_parse(arg->defval, strlen(arg->defval), &perr);
  if (!tree || slY_root(tree)->nkids != 1 || slY_root(tree)->kids[0]->kind != N_EXPR) {
    slY_free(tree);
    return slV_error(S, "InternalError", 0, 0, "%s: the default of %s does not parse: %s", cmd->name,
                     arg->name, arg->defval);
  }
  slY_Node *e = slY_root(tree)->kids[0]->a;
  int rc = e->kind == N_NAME && arg->type == SL_ARG_ENUM ? (*out = sl_string(e->str), 0) : slV_eval(S, e, out);
  slY_free(tree);
  return rc;
}

static void call_free(sl_Call *call) {
  for (int i = 0; i < SL_MAX_ARGS; i++) sl_release(call->values[i]);
  for (size_t i = 0; i < call->nextra; i++) {
    free(call->extra_names[i]);
    sl_release(call->extra_values[i]);
  }
  free(call->extra_names);
  free(call->extra_values);
  if (call->collector_set) call->S->collector = call->saved_collector;
}

static int bind(sl_State *S, sl_Call *call) {
  const sl_Command *cmd = call->cmd;
  slY_Node *n = call->node;
  int next_positional = 0;
  for (size_t k = 0; k < n->nkids; k++) {
    const char *key = n->keys[k];
    int line = n->key_cols[2 * k], col = n->key_cols[2 * k + 1];
    int i;
    if (key) {
      i = arg_index(cmd, key);
      if (i < 0 || cmd->args[i].type == SL_ARG_BLOCK) {
        if (cmd->flags & SL_CMD_EXTRA_KEYWORDS) {
          for (size_t e = 0; e < call->nextra; e++)
            if (strcmp(call->extra_names[e], key) == 0)
              return slV_error(S, "ArgumentError", line, col, "%s: %s is given twice", cmd->name, key);
          sl_Value v;
          if (slV_eval(S, n->kids[k], &v) != 0) return -1;
          call->extra_names = realloc(call->extra_names, (call->nextra + 1) * sizeof *call->extra_names);
          call->extra_values = realloc(call->extra_values, (call->nextra + 1) * sizeof *call->extra_values);
          call->extra_names[call->nextra] = strdup(key);
          call->extra_values[call->nextra++] = v;
          continue;
        }
        char allowed[1024] = "";
        size_t used = 0;
        const char *best = NULL;
        size_t best_d = (size_t)-1;
        for (int a = 0; cmd->args[a].name; a++) {
          if (cmd->args[a].type == SL_ARG_BLOCK) continue;
          used += (size_t)snprintf(allowed + used, used < sizeof allowed ? sizeof allowed - used : 0, "%s%s",
                                   used ? ", " : "", cmd->args[a].name);
          size_t d = sl_edit_distance(key, cmd->args[a].name);
          if (d < best_d) best_d = d, best = cmd->args[a].name;
        }
        if (best && best_d <= 2 + strlen(key) / 4)
          return slV_error(S, "ArgumentError", line, col, "%s has no argument '%s'; did you mean '%s'? (allowed: %s)",
                           cmd->name, key, best, allowed[0] ? allowed : "none");
        return slV_error(S, "ArgumentError", line, col, "%s has no argument '%s' (allowed: %s)", cmd->name, key,
                         allowed[0] ? allowed : "none");
      }
    } else {
      while (cmd->args[next_positional].name &&
             (!(cmd->args[next_positional].flags & SL_POSITIONAL) ||
              (call->given[next_positional] && !(cmd->args[next_positional].flags & SL_VARIADIC))))
        next_positional++;
      i = next_positional;
      if (!cmd->args[i].name || !(cmd->args[i].flags & SL_POSITIONAL))
        return slV_error(S, "ArgumentError", line, col,
                         "%s takes no more positional arguments: name the argument (name=value); see '%s?'",
                         cmd->name, cmd->name);
    }
    if (!key && (cmd->args[i].flags & SL_VARIADIC)) {
      sl_Value v;
      if (slV_eval(S, n->kids[k], &v) != 0) return -1;
      if (call->values[i].type != SL_LIST) call->values[i] = sl_list_new();
      sl_list_push(call->values[i], v);
      if (!call->given[i]) call->line[i] = line, call->col[i] = col;
      call->given[i] = 1;
      next_positional = i;  /* stays on the variadic argument */
      continue;
    }
    if (call->given[i])
      return slV_error(S, "ArgumentError", line, col, "%s: %s is given twice", cmd->name, cmd->args[i].name);
    sl_Value v;
    if (eval_arg(S, &cmd->args[i], n->kids[k], &v) != 0) return -1;
    call->values[i] = v;
    /* nil given to an argument of any type is a value (type nil); elsewhere it means "use the default" */
    call->given[i] = v.type != SL_NIL || cmd->args[i].type == SL_ARG_ANY;
    call->line[i] = line;
    call->col[i] = col;
    if (call->given[i] && check_type(S, cmd, &cmd->args[i], v, line, col) != 0) return -1;
  }
  for (int i = 0; cmd->args[i].name; i++) {
    const sl_Arg *arg = &cmd->args[i];
    if (arg->type == SL_ARG_BLOCK) {
      if ((arg->flags & SL_REQUIRED) && !n->c)
        return slV_error(S, "ArgumentError", n->line, n->col, "%s needs a { ... } block", cmd->name);
      call->given[i] = n->c != NULL;
      continue;
    }
    if (call->given[i]) continue;
    if (arg->flags & SL_REQUIRED)
      return slV_error(S, "ArgumentError", n->line, n->col, "%s needs %s (%s): %s", cmd->name, arg->name,
                       slH_type_name(arg), arg->help ? arg->help : "");
    if (arg->defval) {
      sl_release(call->values[i]);
      if (default_value(S, cmd, arg, &call->values[i]) != 0) return -1;
    }
  }
  return 0;
}

static int eval_call(sl_State *S, slY_Node *n, sl_Value *out) {
  sl_Call call;
  memset(&call, 0, sizeof call);
  call.S = S;
  call.cmd = n->cmd;
  call.node = n;
  *out = sl_nil();
  int rc = bind(S, &call);
  if (rc == 0) {
    rc = n->cmd->fn(&call, out);
    if (rc != 0) {
      sl_release(*out);
      *out = sl_nil();
      if (!S->failed) sl_error(&call, "failed");
    }
  }
  call_free(&call);
  return rc;
}

/* ------------------------------------------------------------ expressions */

/* 1 when `bytes` more fit the memory budget; else records a MemoryError
** naming what would need them and returns 0 (x = x + x in a loop doubles
** until the machine says no: the session must survive that) */
static int grows_within(sl_State *S, slY_Node *n, double bytes, const char *what) {
  char msg[512];
  if (!sl_memory_exceeds(bytes, what, msg, sizeof msg)) return 1;
  slV_error(S, "MemoryError", n->line, n->col, "%s", msg);
  return 0;
}

static int arith(sl_State *S, slY_Node *n, sl_Value a, sl_Value b, sl_Value *out) {
  char buf[16];
  const char *op = slX_describe(n->op, buf, sizeof buf);
  if (n->op == '+' && (a.type == SL_STRING || b.type == SL_STRING)) {
    char *x = sl_tostring(a), *y = sl_tostring(b);
    size_t lx = strlen(x), ly = strlen(y);
    /* the joined text and the string made of it: refused before allocating
    ** when over the budget, rather than ending the process in malloc */
    char *s = grows_within(S, n, 2.0 * ((double)lx + (double)ly + 1), "joining these strings") ? malloc(lx + ly + 1)
                                                                                                  : NULL;
    if (!s) {
      free(x), free(y);
      return S->failed ? -1
                       : slV_error(S, "MemoryError", n->line, n->col, "out of memory joining strings of %zu and %zu bytes",
                                   lx, ly);
    }
    memcpy(s, x, lx);
    memcpy(s + lx, y, ly + 1);
    *out = sl_string_len(s, lx + ly);
    free(x);
    free(y);
    free(s);
    return 0;
  }
  if (n->op == '+' && a.type == SL_LIST && b.type == SL_LIST) {
    double items = (double)sl_list_len(a) + (double)sl_list_len(b);
    if (!grows_within(S, n, 2.0 * items * sizeof(sl_Value), "joining these lists")) return -1;
    *out = sl_list_new();
    for (size_t i = 0; i < sl_list_len(a); i++) sl_retain(sl_list_get(a, i)), sl_list_push(*out, sl_list_get(a, i));
    for (size_t i = 0; i < sl_list_len(b); i++) sl_retain(sl_list_get(b, i)), sl_list_push(*out, sl_list_get(b, i));
    return 0;
  }
  if (a.type != SL_NUMBER || b.type != SL_NUMBER)
    return slV_error(S, "TypeError", n->line, n->col, "%s needs two numbers, got %s and %s", op, sl_typename(a),
                     sl_typename(b));
  double x = a.u.n, y = b.u.n, r = 0;
  switch (n->op) {
    case '+': r = x + y; break;
    case '-': r = x - y; break;
    case '*': r = x * y; break;
    case '/':
      if (y == 0) return slV_error(S, "ZeroDivisionError", n->line, n->col, "division by zero");
      r = x / y;
      break;
    case '%':
      if (y == 0) return slV_error(S, "ZeroDivisionError", n->line, n->col, "modulo by zero");
      r = fmod(x, y);
      if (r != 0 && (r < 0) != (y < 0)) r += y;  /* sign of the divisor, as in Python */
      break;
    case TK_POW:
      /* as 1 / 0 is an error, so is 0 ** -1 (it divides by zero too) */
      if (x == 0 && y < 0) return slV_error(S, "ZeroDivisionError", n->line, n->col, "0 cannot be raised to a negative power");
      r = pow(x, y);
      break;
  }
  *out = sl_number(r);
  return 0;
}

static int compare(sl_State *S, slY_Node *n, sl_Value a, sl_Value b, sl_Value *out) {
  if (n->op == TK_EQ || n->op == TK_NE) {
    int eq = sl_equal(a, b);
    *out = sl_bool(n->op == TK_EQ ? eq : !eq);
    return 0;
  }
  int c;
  if (a.type == SL_NUMBER && b.type == SL_NUMBER) c = (a.u.n > b.u.n) - (a.u.n < b.u.n);
  else if (a.type == SL_STRING && b.type == SL_STRING) c = strcmp(sl_str(a), sl_str(b));
  else {
    char buf[16];
    return slV_error(S, "TypeError", n->line, n->col, "cannot compare %s with %s using %s", sl_typename(a),
                     sl_typename(b), slX_describe(n->op, buf, sizeof buf));
  }
  int r = n->op == '<' ? c < 0 : n->op == TK_LE ? c <= 0 : n->op == '>' ? c > 0 : c >= 0;
  *out = sl_bool(r);
  return 0;
}

/* Ranges with decimal steps give the numbers as written: 0.1..0.9 step 0.1
** holds 0.3, not 0.30000000000000004. When the start and the step are
** whole multiples of 10^-d (d up to 12) and every scaled value stays an
** exact integer in a double, each value is an integer divided by 10^d:
** one correctly rounded division, the same double as the decimal text.
** Otherwise (a step of 1/3, values past 2^53) it is from + i * step. */
static double range_scale(double from, double step, double count) {
  double scale = 1;
  for (int d = 0; d <= 12; d++, scale *= 10) {
    double f = from * scale, s = step * scale;
    if (fabs(f - nearbyint(f)) <= 8 * DBL_EPSILON * fmax(1, fabs(f)) &&
        fabs(s - nearbyint(s)) <= 8 * DBL_EPSILON * fmax(1, fabs(s))) {
      double last = fabs(nearbyint(f)) + fabs(nearbyint(s)) * count;
      return last < 9007199254740992.0 ? scale : 0;
    }
  }
  return 0;
}

static double range_value(double from, double step, double i, double scale) {
  if (scale <= 1) return from + i * step; /* whole numbers are exact as they are */
  return (nearbyint(from * scale) + i * nearbyint(step * scale)) / scale;
}

static int eval_range(sl_State *S, slY_Node *n, sl_Value *out) {
  sl_Value a, b, c = sl_number(1);
  if (slV_eval(S, n->a, &a) != 0) return -1;
  if (slV_eval(S, n->b, &b) != 0) return sl_release(a), -1;
  if (n->c && slV_eval(S, n->c, &c) != 0) return sl_release(a), sl_release(b), -1;
  if (a.type != SL_NUMBER || b.type != SL_NUMBER || c.type != SL_NUMBER) {
    sl_release(a), sl_release(b), sl_release(c);
    return slV_error(S, "TypeError", n->line, n->col, "a range needs numbers: from..to step s");
  }
  double from = a.u.n, to = b.u.n, step = c.u.n;
  if (!isfinite(from) || !isfinite(to) || !isfinite(step)) {
    char f[32], t[32], st[32];
    sl_format_number(from, f, sizeof f), sl_format_number(to, t, sizeof t), sl_format_number(step, st, sizeof st);
    return slV_error(S, "ValueError", n->line, n->col, "a range needs finite numbers, got %.24s..%.24s step %.24s", f,
                     t, st);
  }
  if (step == 0 || (to - from) / step < 0)
    return slV_error(S, "ValueError", n->line, n->col,
                     "range %.9g..%.9g step %.9g never reaches its end: the step must move from the start towards the end",
                     from, to, step);
  /* a + i*step, with a small tolerance so 0.1..0.9 step 0.1 includes 0.9 */
  double count = floor((to - from) / step + 1e-9) + 1;
  if (count > MAX_RANGE)
    return slV_error(S, "ValueError", n->line, n->col, "range has %.4g values; at most %d are allowed", count,
                     MAX_RANGE);
  double scale = range_scale(from, step, count);
  *out = sl_list_new();
  for (long i = 0; i < (long)count; i++) {
    if ((i & 65535) == 65535 && sl_interrupted()) {
      sl_release(*out);
      *out = sl_nil();
      return slV_error(S, "Interrupt", n->line, n->col, "interrupted by the user");
    }
    sl_list_push(*out, sl_number(range_value(from, step, (double)i, scale)));
  }
  return 0;
}

static int eval_index(sl_State *S, slY_Node *n, sl_Value *out) {
  sl_Value a, i;
  if (slV_eval(S, n->a, &a) != 0) return -1;
  if (slV_eval(S, n->b, &i) != 0) return sl_release(a), -1;
  int rc = 0;
  if (a.type == SL_LIST && i.type == SL_NUMBER && i.u.n == floor(i.u.n)) {
    double len = (double)sl_list_len(a), k = i.u.n < 0 ? i.u.n + len : i.u.n;
    if (k < 0 || k >= len)
      rc = slV_error(S, "IndexError", n->b->line, n->b->col, "index %.15g is out of range for a list of %.0f items",
                     i.u.n, len);
    else
      *out = sl_list_get(a, (size_t)k), sl_retain(*out);
  } else if (a.type == SL_RECORD && i.type == SL_STRING) {
    size_t k = 0;
    while (k < sl_record_len(a) && strcmp(sl_record_key(a, k), sl_str(i)) != 0) k++;
    if (k == sl_record_len(a))
      rc = slV_error(S, "KeyError", n->b->line, n->b->col, "the record has no field '%s'", sl_str(i));
    else
      *out = sl_record_value(a, k), sl_retain(*out);
  } else if (a.type == SL_OBJECT && sl_object_class(a)->index) {
    char why[512] = "";
    if (sl_object_class(a)->index(sl_object_data(a), i, out, why, sizeof why) != 0)
      rc = slV_error(S, "IndexError", n->b->line, n->b->col, "%s", why);
  } else {
    rc = slV_error(S, "TypeError", n->line, n->col, "cannot index a %s with a %s", sl_typename(a), sl_typename(i));
  }
  sl_release(a);
  sl_release(i);
  return rc;
}

static void field_list(sl_Value v, char *buf, size_t size) {
  size_t used = 0;
  buf[0] = '\0';
  if (v.type == SL_RECORD) {
    for (size_t i = 0; i < sl_record_len(v); i++)
      used += (size_t)snprintf(buf + used, used < size ? size - used : 0, "%s%s", i ? ", " : "", sl_record_key(v, i));
  } else if (v.type == SL_OBJECT && sl_object_class(v)->fields) {
    const char *const *f = sl_object_class(v)->fields;
    for (size_t i = 0; f[i]; i++)
      used += (size_t)snprintf(buf + used, used < size ? size - used : 0, "%s%s", i ? ", " : "", f[i]);
  }
}

static int eval_field(sl_State *S, slY_Node *n, sl_Value *out) {
  sl_Value a;
  if (slV_eval(S, n->a, &a) != 0) return -1;
  int rc = -1;
  if (a.type == SL_RECORD) {
    for (size_t i = 0; i < sl_record_len(a); i++)
      if (strcmp(sl_record_key(a, i), n->str) == 0) {
        *out = sl_record_value(a, i);
        sl_retain(*out);
        rc = 0;
      }
  } else if (a.type == SL_OBJECT && sl_object_class(a)->field) {
    rc = sl_object_class(a)->field(sl_object_data(a), n->str, out);
  }
  if (rc != 0) {
    char fields[512];
    field_list(a, fields, sizeof fields);
    slV_error(S, "AttributeError", n->line, n->col, "a %s has no field '%s'%s%s%s", sl_typename(a), n->str,
              fields[0] ? " (fields: " : "", fields, fields[0] ? ")" : "");
  }
  sl_release(a);
  return rc;
}

/* the argument of some command that lists `word` among its choices */
static const sl_Arg *choice_named(const char *word, const sl_Command **owner) {
  const sl_Command *c;
  for (size_t i = 0; (c = sl_command_at(i)); i++)
    for (int k = 0; c->args[k].name; k++)
      if (c->args[k].type == SL_ARG_ENUM && in_choices(&c->args[k], word)) return *owner = c, &c->args[k];
  return NULL;
}

static int eval_name(sl_State *S, slY_Node *n, sl_Value *out) {
  for (size_t i = 0; i < sl_record_len(S->vars); i++)
    if (strcmp(sl_record_key(S->vars, i), n->str) == 0) {
      *out = sl_record_value(S->vars, i);
      sl_retain(*out);
      return 0;
    }
  if (sl_command_find(n->str))
    return slV_error(S, "NameError", n->line, n->col,
                     "'%s' is a command: call it at the start of a statement, after '=', or in parentheses: (%s ...)",
                     n->str, n->str);
  if (isdigit((unsigned char)n->str[0]))
    return slV_error(S, "NameError", n->line, n->col,
                     "'%s' is not a number, and a name cannot start with a digit (a command's choice such as "
                     "lm's 2.7B is written as an argument on its own)", n->str);
  const sl_Command *owner;
  const sl_Arg *choice = choice_named(n->str, &owner);
  if (choice)   /* `suggest "x" float - 5 5`: a choice word caught inside an expression */
    return slV_error(S, "NameError", n->line, n->col,
                     "'%s' is a choice of %s's %s, not a variable: write it as an argument on its own (a sign "
                     "right after a space starts the next argument: %s -5)", n->str, owner->name, choice->name, n->str);
  const char *best = sl_suggest(S, n->str, 1, 1);
  if (best)
    return slV_error(S, "NameError", n->line, n->col, "name '%s' is not defined; did you mean '%s'?", n->str, best);
  return slV_error(S, "NameError", n->line, n->col, "name '%s' is not defined", n->str);
}

static int is_chain(const slY_Node *n) { return n->kind == N_BINARY || n->kind == N_AND || n->kind == N_OR; }

static int is_comparison(int op) {
  return op == TK_EQ || op == TK_NE || op == '<' || op == TK_LE || op == '>' || op == TK_GE;
}

/* Binary operators associate to the left, so a flat sum of 100,000 terms is
** a tree 100,000 deep down its left side. It is evaluated bottom-up along
** that spine in a loop (recursing only into the right operands, which the
** parser keeps shallow), so no length of code can overflow the stack. */
static int eval_chain(sl_State *S, slY_Node *n, sl_Value *out) {
  size_t len = 0, cap = 16;
  slY_Node **spine = malloc(cap * sizeof *spine);
  for (slY_Node *k = n; is_chain(k); k = k->a) {
    if (len == cap) spine = realloc(spine, (cap *= 2) * sizeof *spine);
    spine[len++] = k;
  }
  sl_Value acc, b;
  int rc = slV_eval(S, spine[len - 1]->a, &acc);
  for (size_t i = len; rc == 0 && i-- > 0;) {
    slY_Node *k = spine[i];
    if (k->kind != N_BINARY) {  /* and, or: the left value decides whether the right one is needed */
      int t = sl_truthy(acc);
      if ((k->kind == N_AND && !t) || (k->kind == N_OR && t)) continue;
      sl_release(acc);
      rc = slV_eval(S, k->b, &acc);
      continue;
    }
    if ((rc = slV_eval(S, k->b, &b)) != 0) break;
    sl_Value r = sl_nil();
    rc = is_comparison(k->op) ? compare(S, k, acc, b, &r) : arith(S, k, acc, b, &r);
    sl_release(acc);
    sl_release(b);
    acc = r;
  }
  free(spine);
  if (rc != 0) {
    sl_release(acc);
    acc = sl_nil();
  }
  *out = acc;
  return rc;
}

int slV_eval(sl_State *S, slY_Node *n, sl_Value *out) {
  sl_Value a;
  *out = sl_nil();
  switch (n->kind) {
    case N_NUMBER: *out = sl_number(n->number); return 0;
    case N_STRING: *out = sl_string_len(n->str, n->str_len); return 0;
    case N_TRUE: *out = sl_bool(1); return 0;
    case N_FALSE: *out = sl_bool(0); return 0;
    case N_NIL: return 0;
    case N_NAME: return eval_name(S, n, out);
    case N_LIST:
      *out = sl_list_new();
      for (size_t i = 0; i < n->nkids; i++) {
        if (slV_eval(S, n->kids[i], &a) != 0) {
          sl_release(*out);
          *out = sl_nil();
          return -1;
        }
        sl_list_push(*out, a);
      }
      if (sl_value_depth(*out) > SL_MAX_VALUE_DEPTH) {
        sl_release(*out);
        *out = sl_nil();
        return slV_error(S, "ValueError", n->line, n->col, "lists nested more than %d deep are not allowed",
                         SL_MAX_VALUE_DEPTH);
      }
      return 0;
    case N_RANGE: return eval_range(S, n, out);
    case N_UNARY:
      if (slV_eval(S, n->a, &a) != 0) return -1;
      if (n->op == TK_NOT) {
        *out = sl_bool(!sl_truthy(a));
      } else if (a.type != SL_NUMBER) {
        sl_release(a);
        return slV_error(S, "TypeError", n->line, n->col, "unary %c needs a number, got %s", n->op, sl_typename(a));
      } else {
        *out = sl_number(n->op == '-' ? -a.u.n : a.u.n);
      }
      sl_release(a);
      return 0;
    case N_AND:
    case N_OR:
    case N_BINARY: return eval_chain(S, n, out);
    case N_FIELD: return eval_field(S, n, out);
    case N_INDEX: return eval_index(S, n, out);
    case N_CALL: return eval_call(S, n, out);
    default:
      return slV_error(S, "InternalError", n->line, n->col, "statement used as a value");
  }
}

/* ------------------------------------------------------------- statements */

static int check_interrupt(sl_State *S, slY_Node *n) {
  if (!sl_interrupted()) return 0;
  return slV_error(S, "Interrupt", n->line, n->col, "interrupted by the user");
}

static int run_statement(sl_State *S, slY_Node *n, sl_Value *out);

static int run_for(sl_State *S, slY_Node *n) {
  sl_Value list;
  if (slV_eval(S, n->a, &list) != 0) return -1;
  if (list.type != SL_LIST) {
    sl_release(list);
    return slV_error(S, "TypeError", n->a->line, n->a->col, "for needs a list or a range, got a %s",
                     sl_typename(list));
  }
  int rc = 0;
  for (size_t i = 0; i < sl_list_len(list) && rc == 0; i++) {
    if ((rc = check_interrupt(S, n)) != 0) break;
    sl_Value item = sl_list_get(list, i);
    sl_retain(item);
    sl_record_set(S->vars, n->str, item);
    sl_Value ignored;
    rc = slV_run_block(S, n->b, &ignored);
    sl_release(ignored);
  }
  sl_release(list);
  return rc;
}

static int run_statement(sl_State *S, slY_Node *n, sl_Value *out) {
  *out = sl_nil();
  if (check_interrupt(S, n) != 0) return -1;
  switch (n->kind) {
    case N_ASSIGN: {
      if (sl_command_find(n->str))
        return slV_error(S, "NameError", n->line, n->col,
                         "'%s' is a command and cannot be assigned to; choose another name", n->str);
      sl_Value v;
      if (slV_eval(S, n->a, &v) != 0) return -1;
      sl_record_set(S->vars, n->str, v);
      return 0;
    }
    case N_IF:
      for (;;) {   /* an else-if chain in a loop, as it was parsed */
        sl_Value c;
        if (slV_eval(S, n->a, &c) != 0) return -1;
        int t = sl_truthy(c);
        sl_release(c);
        if (t) return slV_run_block(S, n->b, out);
        if (!n->c) return 0;
        if (n->c->kind != N_IF) return slV_run_block(S, n->c, out);
        n = n->c;
      }
    case N_FOR: return run_for(S, n);
    case N_HELP: {
      const sl_Command *cmd = sl_command_find(n->str);
      if (!cmd) {
        const char *best = sl_suggest(S, n->str, 1, 0);
        return slV_error(S, "NameError", n->line, n->col, "no command named '%s'%s%s%s", n->str,
                         best ? "; did you mean '" : "", best ? best : "", best ? "'?" : "");
      }
      char *text = slH_help_text(cmd, 0), *md = slH_help_text(cmd, 1);
      slV_page(S, text, md);
      free(text);
      free(md);
      return 0;
    }
    case N_EXPR: return slV_eval(S, n->a, out);
    default: return slV_eval(S, n, out);
  }
}

/* Blocks, like every construct that nests, are held to the parser's one
** count (SLY_MAX_NESTING): the evaluator recurses only along the levels it
** counted, and walks chains of operators in a loop (eval_chain), so no code
** the parser accepts can overflow the stack here. */
int slV_run_block(sl_State *S, slY_Node *block, sl_Value *last) {
  *last = sl_nil();
  int rc = 0;
  for (size_t i = 0; i < block->nkids; i++) {
    sl_release(*last);
    if ((rc = run_statement(S, block->kids[i], last)) != 0) break;
  }
  return rc;
}
