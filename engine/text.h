/*
** text.h - a growable string, for building help pages, tables, scripts and
** reports piece by piece. The string is always NUL-terminated; the owner
** frees `s`.
*/
#ifndef SYSLAB_TEXT_H
#define SYSLAB_TEXT_H

#include <stddef.h>

typedef struct slU_Text {
  char *s;
  size_t n, cap;
} slU_Text;

void slU_add_len(slU_Text *t, const char *s, size_t n);
void slU_add(slU_Text *t, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

#endif
