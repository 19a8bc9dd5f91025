/*
** eval.h - the evaluator's entry points inside the engine (eval.c): running
** blocks and expressions, recording errors (error.h), and what a command
** running now may ask of the call that runs it beyond slcommand.h (api.c; not
** part of the public interface).
*/
#ifndef SYSLAB_EVAL_H
#define SYSLAB_EVAL_H

#include "error.h"
#include "parse.h"
#include "state.h"
#include "slcommand.h"

/* the evaluator (eval.c) */
int slV_run_block(sl_State *S, slY_Node *block, sl_Value *last);
void slV_host_write(sl_State *S, sl_Stream stream, const char *text, size_t len);

/* the call a command runs in, beyond slcommand.h's command-author API (api.c) */
sl_State *slV_state(sl_Call *call);
/* the source text of the call being run: the command, its arguments and its
** block, as written (a search ships it to worker processes); caller frees */
char *slV_call_source(sl_Call *call);
/* the names the call reads (variables and bare words), each once: a list of strings */
sl_Value slV_call_names(sl_Call *call);

#endif
