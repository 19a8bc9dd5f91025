/*
** interp.h - what the evaluator, the registry and the interpreter entry
** points share inside the engine (not part of the public interface).
*/
#ifndef SYSLAB_INTERP_H
#define SYSLAB_INTERP_H

#include "parse.h"
#include "syslab.h"

struct sl_State {
  sl_Value vars;            /* record: the session's variables, in creation order */
  const sl_Host *host;      /* set for the duration of sl_execute */
  const char *src;          /* the cell being run, for tracebacks */
  size_t src_len;
  sl_Error *err;            /* where the first error of the cell goes */
  int failed;               /* an error was recorded */
  sl_Value collector;       /* innermost sweep's table (borrowed) */
  unsigned next_display;    /* counter for display ids */
  int depth;                /* nesting of blocks, against runaway recursion */
};

/* evaluator (eval.c) */
int slV_run_block(sl_State *S, slY_Node *block, sl_Value *last);
int slV_eval(sl_State *S, slY_Node *n, sl_Value *out);
int slV_error(sl_State *S, const char *ename, int line, int col, const char *fmt, ...);
sl_State *slV_state(sl_Call *call);
/* the source text of the call being run: the command, its arguments and its
** block, as written (a search ships it to worker processes); caller frees */
char *slV_call_source(sl_Call *call);
/* the names the call reads (variables and bare words), each once: a list of strings */
sl_Value slV_call_names(sl_Call *call);
void slV_host_write(sl_State *S, sl_Stream stream, const char *text, size_t len);

/* registry texts (registry.c); the caller frees */
char *slH_help_text(const sl_Command *cmd, int markdown);
char *slH_index_text(int markdown);
char *slH_arg_text(const sl_Command *cmd, const sl_Arg *arg, int markdown);
const char *slH_type_name(const sl_Arg *arg);

/* shows a help page through the host's pager, or as text when there is none */
void slV_page(sl_State *S, const char *text, const char *markdown);

#endif
