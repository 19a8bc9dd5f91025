/*
** execute.h - one notebook run through a kernel of its own (see execute.c).
*/
#ifndef SYSLAB_REPORT_EXECUTE_H
#define SYSLAB_REPORT_EXECUTE_H

#include <jansson.h>
#include <stddef.h>

#include "options.h"
#include "slutil.h"

/* gives every cell an id (nbformat 4.5), as Jupyter does when it saves */
void slR_ensure_ids(json_t *nb);
/* the problems of the notebook's `#| timeout:` options, each printed; their number */
int slR_check_timeouts(const char *path, json_t *nb);
/* the errors an executed notebook records (cells not tagged
** raises-exception, and inline values); print: name each on stderr */
size_t slR_recorded_errors(json_t *nb, const char *path, int print);
/* Runs every code cell of nb in a kernel started for it, then its inline
** values, filling nb's outputs; *ncells counts the cells run. Progress goes
** to stderr as it comes, or into log when log is not NULL. Returns 0, or
** -1 with err naming the notebook and the cell. */
int slR_execute_notebook(const char *path, json_t *nb, const slR_Options *o, int *ncells, slU_Text *log, char *err,
                         size_t errlen);

#endif
