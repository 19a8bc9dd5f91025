/*
** file.c - reading a file a user named, whole, without hanging on it.
**
** `load "x"` or `journal="x"` may name anything: a FIFO (which blocks for
** ever on open and read), a folder, a device (/dev/zero never ends), a
** file larger than memory. Every loader goes through this one reader, so
** each of those is refused with a message naming what was found and what
** was expected, and a long read stops when the user interrupts it.
**
** The path is checked twice: stat() before opening, for the message, and
** fstat() on the descriptor after, because the path may have been replaced
** in between. The open itself is non-blocking, so a FIFO put there in that
** moment cannot hold it. The read stops at the size fstat() gave: a file
** that grows while it is read (or a device that claims to be a file) gives
** no more than that.
*/
#include "file.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "syslab.h"

/* NULL when st is a regular file within the memory budget, else why not */
static const char *refuse(const char *path, const struct stat *st, const char *what, char *err, size_t errlen) {
  if (S_ISDIR(st->st_mode)) {
    snprintf(err, errlen, "'%s' is a folder, not %s", path, what);
    return err;
  }
  if (!S_ISREG(st->st_mode)) {
    snprintf(err, errlen, "'%s' is not a regular file (a pipe, socket or device): only %s can be loaded", path, what);
    return err;
  }
  if (sl_memory_budget() < (double)st->st_size * 4) {
    char size[32];
    sl_format_bytes((double)st->st_size, size, sizeof size);
    snprintf(err, errlen, "'%s' is %s, too large for the memory budget", path, size);
    return err;
  }
  return NULL;
}

char *slF_read_file(const char *path, const char *what, int text, size_t *len, char *err, size_t errlen) {
  struct stat st;
  if (stat(path, &st) != 0) {
    snprintf(err, errlen, "cannot open '%s': %s", path, strerror(errno));
    return NULL;
  }
  if (refuse(path, &st, what, err, errlen)) return NULL;
  int fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC | O_NOCTTY);
  if (fd < 0) {
    snprintf(err, errlen, "cannot open '%s': %s", path, strerror(errno));
    return NULL;
  }
  if (fstat(fd, &st) != 0) {
    snprintf(err, errlen, "cannot open '%s': %s", path, strerror(errno));
    close(fd);
    return NULL;
  }
  if (refuse(path, &st, what, err, errlen)) {  /* what was opened, not what stat saw */
    close(fd);
    return NULL;
  }
  size_t size = (size_t)st.st_size, n = 0;
  char *all = malloc(size + 1);
  if (!all) {
    snprintf(err, errlen, "'%s' does not fit in memory", path);
    close(fd);
    return NULL;
  }
  int failed = 0;
  while (n < size) {
    size_t want = size - n < 65536 ? size - n : 65536;
    ssize_t got = read(fd, all + n, want);
    if (got < 0 && errno == EINTR) continue;
    if (got < 0) {
      snprintf(err, errlen, "cannot read '%s': %s", path, strerror(errno));
      failed = 1;
      break;
    }
    if (got == 0) break;  /* it shrank: what is there */
    if (text && memchr(all + n, '\0', (size_t)got)) {
      snprintf(err, errlen, "'%s' is not %s (it contains NUL bytes)", path, what);
      failed = 1;
      break;
    }
    n += (size_t)got;
    if (sl_interrupted()) {
      snprintf(err, errlen, "interrupted while reading '%s'", path);
      failed = 1;
      break;
    }
  }
  close(fd);
  if (failed) {
    free(all);
    return NULL;
  }
  all[n] = '\0';
  *len = n;
  return all;
}
