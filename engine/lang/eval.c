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
** declared type before the command runs. Commands see only sl_Call: what
** they may ask of it (arguments, errors, output, their block) is api.c.
** The operators on values are arith.c, the checks of an argument against
** its declaration argcheck.c, the recording of the cell's error error.c.
*/
#include "eval.h"
#include "registry.h"

#include <ctype.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "arith.h"
#include "call.h"
#include "argcheck.h"
#include "lex.h"
#include "suggest.h"

static int eval_node(sl_State *S, slY_Node *n, sl_Value *out);

/* ---------------------------------------------------------------- the host */

void slV_host_write(sl_State *S, sl_Stream stream, const char *text, size_t len) {
  if (S->host && S->host->write) S->host->write(S->host->ud, stream, text, len);
}

/* shows a help page through the host's pager, or as text when there is none */
static void show_page(sl_State *S, const char *text, const char *markdown) {
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

int slV_arg_index(const sl_Command *cmd, const char *name) {
  for (int i = 0; i < SL_MAX_ARGS && cmd->args[i].name; i++)
    if (strcmp(cmd->args[i].name, name) == 0) return i;
  return -1;
}

/* ---------------------------------------------------------------- binding */

static int has_variable(sl_State *S, const char *name) {
  for (size_t i = 0; i < sl_record_len(S->vars); i++)
    if (strcmp(sl_record_key(S->vars, i), name) == 0) return 1;
  return 0;
}

/* a name that is no variable, or such names joined by '-' (fashion-mnist):
** words meant as a choice rather than an expression */
static int bare_words(sl_State *S, const slY_Node *n) {
  for (; n->kind == N_BINARY && n->op == '-'; n = n->a)
    if (!bare_words(S, n->b)) return 0;
  return n->kind == N_NAME && !has_variable(S, n->str);
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
    if ((arg->type == SL_ARG_ENUM && slV_in_choices(arg, n->str)) || (arg->flags & SL_BAREWORD)) {
      *out = sl_string(n->str);
      return 0;
    }
    if (arg->type == SL_ARG_ENUM && !sl_command_find(n->str)) return slV_not_a_choice(S, arg, n);
  }
  if (arg->type == SL_ARG_ENUM && n->kind == N_BINARY && bare_words(S, n)) return slV_not_a_choice(S, arg, n);
  return eval_node(S, n, out);
}

static int default_value(sl_State *S, const sl_Command *cmd, const sl_Arg *arg, sl_Value *out) {
  slY_Error perr;
  slY_Tree *tree = slY_parse(arg->defval, strlen(arg->defval), &perr);
  if (!tree || slY_root(tree)->nkids != 1 || slY_root(tree)->kids[0]->kind != N_EXPR) {
    slY_free(tree);
    return slV_error(S, "InternalError", 0, 0, "%s: the default of %s does not parse: %s", cmd->name, arg->name,
                     arg->defval);
  }
  slY_Node *e = slY_root(tree)->kids[0]->a;
  int rc = e->kind == N_NAME && arg->type == SL_ARG_ENUM ? (*out = sl_string(e->str), 0) : eval_node(S, e, out);
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
      i = slV_arg_index(cmd, key);
      if (i < 0 || cmd->args[i].type == SL_ARG_BLOCK) {
        if (cmd->flags & SL_CMD_EXTRA_KEYWORDS) {
          for (size_t e = 0; e < call->nextra; e++)
            if (strcmp(call->extra_names[e], key) == 0)
              return slV_error(S, "ArgumentError", line, col, "%s: %s is given twice", cmd->name, key);
          sl_Value v;
          if (eval_node(S, n->kids[k], &v) != 0) return -1;
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
                         "%s takes no more positional arguments: name the argument (name=value); see '%s?'", cmd->name,
                         cmd->name);
    }
    if (!key && (cmd->args[i].flags & SL_VARIADIC)) {
      sl_Value v;
      if (eval_node(S, n->kids[k], &v) != 0) return -1;
      if (call->values[i].type != SL_LIST) call->values[i] = sl_list_new();
      sl_list_push(call->values[i], v);
      if (!call->given[i]) call->line[i] = line, call->col[i] = col;
      call->given[i] = 1;
      next_positional = i; /* stays on the variadic argument */
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
    if (call->given[i] && slV_check_type(S, cmd, &cmd->args[i], v, line, col) != 0) return -1;
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
      if (!S->failed) slV_error(S, "RuntimeError", n->line, n->col, "%s: failed", n->cmd->name);
    }
  }
  call_free(&call);
  return rc;
}

/* ------------------------------------------------------------ expressions */

static int eval_range(sl_State *S, slY_Node *n, sl_Value *out) {
  sl_Value a, b, c = sl_number(1);
  if (eval_node(S, n->a, &a) != 0) return -1;
  if (eval_node(S, n->b, &b) != 0) return sl_release(a), -1;
  if (n->c && eval_node(S, n->c, &c) != 0) return sl_release(a), sl_release(b), -1;
  if (a.type != SL_NUMBER || b.type != SL_NUMBER || c.type != SL_NUMBER) {
    sl_release(a), sl_release(b), sl_release(c);
    return slV_error(S, "TypeError", n->line, n->col, "a range needs numbers: from..to step s");
  }
  return slV_range(S, n, a.u.n, b.u.n, c.u.n, out);
}

static int eval_index(sl_State *S, slY_Node *n, sl_Value *out) {
  sl_Value a, i;
  if (eval_node(S, n->a, &a) != 0) return -1;
  if (eval_node(S, n->b, &i) != 0) return sl_release(a), -1;
  int rc = 0;
  if (a.type == SL_LIST && i.type == SL_NUMBER && i.u.n == floor(i.u.n)) {
    double len = (double)sl_list_len(a), k = i.u.n < 0 ? i.u.n + len : i.u.n;
    if (k < 0 || k >= len)
      rc = slV_error(S, "IndexError", n->b->line, n->b->col, "index %.15g is out of range for a list of %.0f items",
                     i.u.n, len);
    else *out = sl_list_get(a, (size_t)k), sl_retain(*out);
  } else if (a.type == SL_RECORD && i.type == SL_STRING) {
    size_t k = 0;
    while (k < sl_record_len(a) && strcmp(sl_record_key(a, k), sl_str(i)) != 0) k++;
    if (k == sl_record_len(a))
      rc = slV_error(S, "KeyError", n->b->line, n->b->col, "the record has no field '%s'", sl_str(i));
    else *out = sl_record_value(a, k), sl_retain(*out);
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
  if (eval_node(S, n->a, &a) != 0) return -1;
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
                     "lm's 2.7B is written as an argument on its own)",
                     n->str);
  const sl_Command *owner;
  const sl_Arg *choice = slV_choice_named(n->str, &owner);
  if (choice) /* `suggest "x" float - 5 5`: a choice word caught inside an expression */
    return slV_error(S, "NameError", n->line, n->col,
                     "'%s' is a choice of %s's %s, not a variable: write it as an argument on its own (a sign "
                     "right after a space starts the next argument: %s -5)",
                     n->str, owner->name, choice->name, n->str);
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
  int rc = eval_node(S, spine[len - 1]->a, &acc);
  for (size_t i = len; rc == 0 && i-- > 0;) {
    slY_Node *k = spine[i];
    if (k->kind != N_BINARY) { /* and, or: the left value decides whether the right one is needed */
      int t = sl_truthy(acc);
      if ((k->kind == N_AND && !t) || (k->kind == N_OR && t)) continue;
      sl_release(acc);
      rc = eval_node(S, k->b, &acc);
      continue;
    }
    if ((rc = eval_node(S, k->b, &b)) != 0) break;
    sl_Value r = sl_nil();
    rc = is_comparison(k->op) ? slV_compare(S, k, acc, b, &r) : slV_arith(S, k, acc, b, &r);
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

static int eval_node(sl_State *S, slY_Node *n, sl_Value *out) {
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
        if (eval_node(S, n->kids[i], &a) != 0) {
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
      if (eval_node(S, n->a, &a) != 0) return -1;
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
    default: return slV_error(S, "InternalError", n->line, n->col, "statement used as a value");
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
  if (eval_node(S, n->a, &list) != 0) return -1;
  if (list.type != SL_LIST) {
    sl_release(list);
    return slV_error(S, "TypeError", n->a->line, n->a->col, "for needs a list or a range, got a %s", sl_typename(list));
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
      if (eval_node(S, n->a, &v) != 0) return -1;
      sl_record_set(S->vars, n->str, v);
      return 0;
    }
    case N_IF:
      for (;;) { /* an else-if chain in a loop, as it was parsed */
        sl_Value c;
        if (eval_node(S, n->a, &c) != 0) return -1;
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
      show_page(S, text, md);
      free(text);
      free(md);
      return 0;
    }
    case N_EXPR: return eval_node(S, n->a, out);
    default: return eval_node(S, n, out);
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
