/*
** state.h - a session's state, which every part of the interpreter reads:
** its variables, the host it writes to while a cell runs, the cell's text
** for tracebacks, and where the cell's first error goes.
*/
#ifndef SYSLAB_STATE_H
#define SYSLAB_STATE_H

#include "syslab.h"

struct sl_State {
  sl_Value vars;       /* record: the session's variables, in creation order */
  const sl_Host *host; /* set for the duration of sl_execute */
  const char *src;     /* the cell being run, for tracebacks */
  size_t src_len;
  sl_Error *err;         /* where the first error of the cell goes */
  int failed;            /* an error was recorded */
  sl_Value collector;    /* innermost sweep's table (borrowed) */
  unsigned next_display; /* counter for display ids */
};

#endif
