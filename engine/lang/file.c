/*
** file.c - opening a file a user named, without hanging on it.
**
** `load "x"`, `lm_train data="x"`, `dataset ... path="x"`, `syslab run x`,
** `syslab report x.ipynb` or a connection file may name anything: a FIFO
** (which blocks for ever on open and read, where no interrupt reaches), a
** folder, a device (/dev/zero and /dev/urandom never end), a file larger
** than memory. Every file a user names is opened by slF_open, here, and
** nowhere else (tests/python/test_user_paths.py reads the sources for any
** other open and holds the rest to a commented list of paths no user names:
** /proc files, the program's own share folder, its temporary folders). So
** each of those is refused with a message naming the path, what was found
** and what is allowed, and a whole read stops when the user interrupts it.
**
** The path is checked twice: stat() before opening, for the message (and so
** that a device is never opened at all), and fstat() on the descriptor
** after, because the path may have been replaced in between. The open
** itself is non-blocking, so a FIFO put there in that moment cannot hold it
** (a reader's open returns at once; a writer's fails with ENXIO). A whole
** read stops at the size fstat() gave: a file that grows while it is read
** gives no more than that.
*/
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "slcommand.h"

/* NULL when st is a regular file, else why not */
static const char *refuse(const char *path, const struct stat *st, const char *what, char *err, size_t errlen) {
  if (S_ISDIR(st->st_mode)) {
    snprintf(err, errlen, "'%s' is a folder, not %s", path, what);
    return err;
  }
  if (!S_ISREG(st->st_mode)) {
    snprintf(err, errlen, "'%s' is not a regular file (a pipe, socket or device): %s must be a regular file", path,
             what);
    return err;
  }
  return NULL;
}

int slF_open(const char *path, int flags, const char *what, size_t *size, char *err, size_t errlen) {
  struct stat st;
  int exists = stat(path, &st) == 0;
  if (!exists && !(flags & O_CREAT)) {
    snprintf(err, errlen, "cannot open '%s': %s", path, strerror(errno));
    return -1;
  }
  if (exists && refuse(path, &st, what, err, errlen)) return -1;
  int fd = open(path, flags | O_NONBLOCK | O_CLOEXEC | O_NOCTTY, 0644);
  if (fd < 0) {
    snprintf(err, errlen, "cannot open '%s': %s", path, strerror(errno));
    return -1;
  }
  if (fstat(fd, &st) != 0) {
    snprintf(err, errlen, "cannot open '%s': %s", path, strerror(errno));
    close(fd);
    return -1;
  }
  if (refuse(path, &st, what, err, errlen)) { /* what was opened, not what stat saw */
    close(fd);
    return -1;
  }
  if (size) *size = (size_t)st.st_size;
  return fd;
}

char *slF_read_file(const char *path, const char *what, int text, size_t *len, char *err, size_t errlen) {
  size_t size, n = 0;
  int fd = slF_open(path, O_RDONLY, what, &size, err, errlen);
  if (fd < 0) return NULL;
  if (sl_memory_budget() < (double)size * 4) {
    char bytes[32];
    sl_format_bytes((double)size, bytes, sizeof bytes);
    snprintf(err, errlen, "'%s' is %s, too large for the memory budget", path, bytes);
    close(fd);
    return NULL;
  }
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
    if (got == 0) break; /* it shrank: what is there */
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

int slF_write_file(const char *path, const void *bytes, size_t n, const char *what, char *err, size_t errlen) {
  char tmp[4096], why[512] = "";
  snprintf(tmp, sizeof tmp, "%s.tmp.%ld", path, (long)getpid());
  int fd = slF_open(tmp, O_WRONLY | O_CREAT | O_TRUNC, what, NULL, why, sizeof why);
  int ok = fd >= 0, saved = 0;
  for (size_t done = 0; ok && done < n;) {
    ssize_t w = write(fd, (const char *)bytes + done, n - done);
    if (w < 0 && errno == EINTR) continue;
    ok = w > 0, done += w > 0 ? (size_t)w : 0;
  }
  if (ok && fsync(fd) != 0) ok = 0;
  if (!ok) saved = errno;
  if (fd >= 0 && close(fd) != 0 && ok) ok = 0, saved = errno;
  if (ok && rename(tmp, path) != 0) ok = 0, saved = errno;
  if (ok) return 0;
  if (why[0]) snprintf(err, errlen, "cannot write '%s': %s", path, why);
  else snprintf(err, errlen, "cannot write '%s': %s", path, strerror(saved));
  if (fd >= 0) unlink(tmp);
  return -1;
}
