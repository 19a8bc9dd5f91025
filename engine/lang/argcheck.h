/*
** argcheck.h - a command's arguments held to their declarations (see argcheck.c).
*/
#ifndef SYSLAB_ARGCHECK_H
#define SYSLAB_ARGCHECK_H

#include "parse.h"
#include "state.h"
#include "slcommand.h"

/* 1 when s is one of arg's choices */
int slV_in_choices(const sl_Arg *arg, const char *s);
/* "'fashion-mnist' is not a choice for name: ...": the error recorded for
** the words at n (a name, or names joined by '-'); returns -1 */
int slV_not_a_choice(sl_State *S, const sl_Arg *arg, const slY_Node *n);
/* 0 when v may be given to arg, else -1 with the error recorded at line:col */
int slV_check_type(sl_State *S, const sl_Command *cmd, const sl_Arg *arg, sl_Value v, int line, int col);
/* the argument of some command that lists `word` among its choices (its
** command in *owner), or NULL */
const sl_Arg *slV_choice_named(const char *word, const sl_Command **owner);

#endif
