/*
** call.h - a command call as the evaluator binds it (eval.c) and the
** command-author API reads it (api.c). Commands see only sl_Call, through
** the functions of slcommand.h.
*/
#ifndef SYSLAB_CALL_H
#define SYSLAB_CALL_H

#include "parse.h"
#include "state.h"
#include "slcommand.h"

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

/* the index of cmd's argument `name`, or -1 */
int slV_arg_index(const sl_Command *cmd, const char *name);

#endif
