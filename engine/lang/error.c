/*
** error.c - the cell's first error, and the interrupt that stops a cell.
**
** Every part of the interpreter records an error the same way: the first
** one of a cell is kept (ename, message, line:column) and later ones are
** dropped, since the first explains. The interrupt is a flag that a
** signal handler or another thread sets and long work polls.
*/
#include "error.h"

#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>

static atomic_int interrupt_flag;

void sl_interrupt(void) { atomic_store(&interrupt_flag, 1); }
int sl_interrupted(void) { return atomic_load(&interrupt_flag); }
void sl_clear_interrupt(void) { atomic_store(&interrupt_flag, 0); }

int slV_error(sl_State *S, const char *ename, int line, int col, const char *fmt, ...) {
  if (S->failed) return -1; /* the first error is the one that explains */
  S->failed = 1;
  sl_Error *e = S->err;
  snprintf(e->ename, sizeof e->ename, "%s", ename);
  va_list ap, ap2;
  va_start(ap, fmt);
  va_copy(ap2, ap);
  int n = vsnprintf(NULL, 0, fmt, ap);
  va_end(ap);
  free(e->evalue);
  e->evalue = malloc((size_t)n + 1);
  vsnprintf(e->evalue, (size_t)n + 1, fmt, ap2);
  va_end(ap2);
  e->line = line;
  e->col = col;
  return -1;
}
