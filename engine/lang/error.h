/*
** error.h - the cell's first error (see error.c).
*/
#ifndef SYSLAB_ERROR_H
#define SYSLAB_ERROR_H

#include "state.h"

/* records the cell's error unless one is recorded already; returns -1 */
int slV_error(sl_State *S, const char *ename, int line, int col, const char *fmt, ...);

#endif
