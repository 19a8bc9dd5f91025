/*
** file.h - reading a file a user named, whole (file.c).
*/
#ifndef SYSLAB_FILE_H
#define SYSLAB_FILE_H

#include <stddef.h>

/* The bytes of `path` (NUL-terminated, caller frees; *len without the
** terminator), or NULL with err. Refuses what is not a regular file (a FIFO
** would block for ever, a folder holds no data), a file too large for the
** memory budget, and, when text=1, one holding NUL bytes; reads no more
** than the size the file had when opened; stops when interrupted. `what`
** names what the file should be in messages ("a CSV file", "a syslab
** file"). */
char *slF_read_file(const char *path, const char *what, int text, size_t *len, char *err, size_t errlen);

#endif
