/*
** client.h - a Jupyter client for one kernel process: start it, run cells,
** collect their outputs as nbformat output objects, shut it down.
*/
#ifndef SYSLAB_CLIENT_H
#define SYSLAB_CLIENT_H

#include <jansson.h>
#include <sys/types.h>

typedef struct slR_Kernel slR_Kernel;

/* starts `argv` (with {connection_file} replaced) and waits until it
** answers kernel_info; NULL with err on failure */
slR_Kernel *slR_kernel_start(const char *const *argv, double timeout, char *err, size_t errlen);
/* the kernel_info_reply content (borrowed) */
json_t *slR_kernel_info(slR_Kernel *k);

typedef enum {
  SLR_CELL_OK = 0,
  SLR_CELL_ERROR = 1,   /* the cell raised an error (an error output was added) */
  SLR_CELL_TIMEOUT = 2, /* the cell ran past its time limit and was interrupted */
  SLR_CELL_DIED = 3,    /* the kernel process died */
  SLR_CELL_STOPPED = 4  /* SIGINT, SIGTERM or SIGHUP reached this process */
} slR_CellStatus;

/* SIGINT, SIGTERM and SIGHUP set a flag that every wait of the client and
** of the PDF export checks, instead of killing the process, so kernels are
** stopped and their connection files removed; the caller then exits */
void slR_catch_stop_signals(void);
/* the signal that asked to stop, or 0 */
int slR_stop_requested(void);

/* Runs code; returns the cell's nbformat outputs (new reference) in
** *outputs and its execution count. */
slR_CellStatus slR_execute(slR_Kernel *k, const char *code, double timeout, json_t **outputs, int *execution_count);
/* Evaluates `expressions` (name -> expression source) after nothing, as
** the messaging protocol's user_expressions of a silent execute_request
** with empty code (the kernel stores no history and publishes no output).
** *results (new reference) is the reply's user_expressions: name ->
** {status: ok, data, metadata} or {status: error, ename, evalue, traceback}. */
slR_CellStatus slR_evaluate(slR_Kernel *k, json_t *expressions, double timeout, json_t **results);
/* shuts the kernel down (asks, then kills if it does not exit) and frees */
void slR_kernel_stop(slR_Kernel *k);

#endif
