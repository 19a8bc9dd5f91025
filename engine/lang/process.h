/*
** process.h - running a helper program as a filter, without a shell
** (process.c).
*/
#ifndef SYSLAB_PROCESS_H
#define SYSLAB_PROCESS_H

#include <stddef.h>

typedef enum {
  SLO_OK = 0,
  SLO_MISSING = -1,    /* the program is not installed */
  SLO_FAILED = -2,     /* it could not be started, or reported an error */
  SLO_TIMEOUT = -3,    /* it ran past its time limit and was killed */
  SLO_INTERRUPTED = -4 /* the user interrupted; it was killed */
} slO_Status;

/* Runs argv[0] (found on PATH, no shell) with `input` on its standard
** input, within timeout seconds. Returns an slO_Status; on SLO_OK, *out
** holds standard output (caller frees), *errtext standard error or NULL,
** and *exit_status the program's exit status. */
int slO_run_filter(const char *const *argv, const char *input, double timeout, char **out, size_t *outlen,
                   char **errtext, int *exit_status, char *err, size_t errlen);

#endif
