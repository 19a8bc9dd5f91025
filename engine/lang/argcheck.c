/*
** argcheck.c - a command's arguments held to what its registry record
** declares: types and choices, and the errors that say what is allowed.
**
** The evaluator's binding (eval.c) calls these for every argument it
** binds; they read values and the registry only, so they sit below it.
*/
#include "argcheck.h"

#include <ctype.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "error.h"
#include "registry.h"
#include "suggest.h"

int slV_in_choices(const sl_Arg *arg, const char *s) {
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

/* "'fashion-mnist' is not a choice for name: allowed are ...; did you mean ...?" */
int slV_not_a_choice(sl_State *S, const sl_Arg *arg, const slY_Node *n) {
  char list[512], word[128];
  choice_list(arg, list, sizeof list);
  if (n->kind == N_NAME) {
    snprintf(word, sizeof word, "%s", n->str);
  } else { /* the words as written */
    size_t end = S->src && n->end <= S->src_len ? n->end : n->offset;
    while (end > n->offset && isspace((unsigned char)S->src[end - 1])) end--;
    snprintf(word, sizeof word, "%.*s", (int)(end - n->offset), S->src ? S->src + n->offset : "");
  }
  const char *best = sl_closest(word, arg->choices);
  return slV_error(S, "ArgumentError", n->line, n->col, "'%s' is not a choice for %s: allowed are %s%s%s%s", word,
                   arg->name, list, best ? "; did you mean '" : "", best ? best : "", best ? "'?" : "");
}

static int type_ok(const sl_Arg *arg, sl_Value v) {
  switch (arg->type) {
    case SL_ARG_ANY: return 1;
    case SL_ARG_NUMBER: return v.type == SL_NUMBER;
    case SL_ARG_INT: return v.type == SL_NUMBER && v.u.n == floor(v.u.n) && fabs(v.u.n) < 9e15;
    case SL_ARG_BOOL: return v.type == SL_BOOL;
    case SL_ARG_STRING: return v.type == SL_STRING;
    case SL_ARG_ENUM: return v.type == SL_STRING && slV_in_choices(arg, sl_str(v));
    case SL_ARG_LIST: return v.type == SL_LIST;
    case SL_ARG_RECORD: return v.type == SL_RECORD;
    case SL_ARG_OBJECT: return v.type == SL_OBJECT && strcmp(sl_object_class(v)->name, arg->cls) == 0;
    case SL_ARG_BLOCK: return 0;
  }
  return 0;
}

int slV_check_type(sl_State *S, const sl_Command *cmd, const sl_Arg *arg, sl_Value v, int line, int col) {
  if (type_ok(arg, v)) return 0;
  if (arg->type == SL_ARG_ENUM && v.type == SL_STRING) {
    char list[512];
    choice_list(arg, list, sizeof list);
    const char *best = sl_closest(sl_str(v), arg->choices);
    return slV_error(S, "ArgumentError", line, col, "%s: %s=\"%s\" is not allowed: choose one of %s%s%s%s", cmd->name,
                     arg->name, sl_str(v), list, best ? "; did you mean '" : "", best ? best : "", best ? "'?" : "");
  }
  if (arg->type == SL_ARG_INT && v.type == SL_NUMBER)
    return slV_error(S, "TypeError", line, col, "%s: %s must be a whole number, got %s", cmd->name, arg->name,
                     SL_NUM(v.u.n));
  return slV_error(S, "TypeError", line, col, "%s: %s must be a %s, got a %s", cmd->name, arg->name, slH_type_name(arg),
                   sl_typename(v));
}

/* the argument of some command that lists `word` among its choices */
const sl_Arg *slV_choice_named(const char *word, const sl_Command **owner) {
  const sl_Command *c;
  for (size_t i = 0; (c = sl_command_at(i)); i++)
    for (int k = 0; c->args[k].name; k++)
      if (c->args[k].type == SL_ARG_ENUM && slV_in_choices(&c->args[k], word)) return *owner = c, &c->args[k];
  return NULL;
}
