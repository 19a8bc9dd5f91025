/* text.c - the growable string declared in slutil.h (slU_Text). */
#include "slutil.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void slU_add_len(slU_Text *t, const char *s, size_t n) {
  if (t->n + n + 1 > t->cap) {
    t->cap = (t->n + n + 1) * 2;
    t->s = realloc(t->s, t->cap);
    if (!t->s) abort();
  }
  memcpy(t->s + t->n, s, n);
  t->n += n;
  t->s[t->n] = '\0';
}

void slU_add(slU_Text *t, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  int n = vsnprintf(NULL, 0, fmt, ap);
  va_end(ap);
  if (t->n + (size_t)n + 1 > t->cap) {
    t->cap = (t->n + (size_t)n + 1) * 2;
    t->s = realloc(t->s, t->cap);
    if (!t->s) abort();
  }
  va_start(ap, fmt);
  vsnprintf(t->s + t->n, (size_t)n + 1, fmt, ap);
  va_end(ap);
  t->n += (size_t)n;
}
