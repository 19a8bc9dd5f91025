/*
** file.c - reading a file a user named, whole, without hanging on it.
**
** `load "x"` may name anything: a FIFO (which blocks for ever on open and
** read), a folder, a device, a file larger than memory. Every loader goes
** through this one reader, so each of those is refused with a message
** naming what was found and what was expected, and a long read stops when
** the user interrupts it.
*/
#include "file.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "syslab.h"

char *slF_read_file(const char *path, const char *what, int text, size_t *len, char *err, size_t errlen) {
  struct stat st;
  if (stat(path, &st) != 0) {
    snprintf(err, errlen, "cannot open '%s': %s", path, strerror(errno));
    return NULL;
  }
  if (S_ISDIR(st.st_mode)) {
    snprintf(err, errlen, "'%s' is a folder, not %s", path, what);
    return NULL;
  }
  if (!S_ISREG(st.st_mode)) {
    snprintf(err, errlen, "'%s' is not a regular file (a pipe, socket or device): only %s can be loaded", path, what);
    return NULL;
  }
  if (sl_memory_budget() < (double)st.st_size * 4) {
    char size[32];
    sl_format_bytes((double)st.st_size, size, sizeof size);
    snprintf(err, errlen, "'%s' is %s, too large for the memory budget", path, size);
    return NULL;
  }
  FILE *f = fopen(path, "rb");
  if (!f) {
    snprintf(err, errlen, "cannot open '%s': %s", path, strerror(errno));
    return NULL;
  }
  slU_Text all = {0};
  slU_add_len(&all, "", 0);
  char buf[65536];
  size_t got;
  while ((got = fread(buf, 1, sizeof buf, f)) > 0) {
    if (text && memchr(buf, '\0', got)) {
      snprintf(err, errlen, "'%s' is not %s (it contains NUL bytes)", path, what);
      break;
    }
    if (sl_interrupted()) {
      snprintf(err, errlen, "interrupted while reading '%s'", path);
      break;
    }
    slU_add_len(&all, buf, got);
  }
  int failed = got > 0;  /* the loop stopped early */
  fclose(f);
  if (failed) {
    free(all.s);
    return NULL;
  }
  *len = all.n;
  return all.s;
}
