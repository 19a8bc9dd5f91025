/*
** shell.h - the kernel's request handlers (shell.c), called by the server's
** threads (server.c).
*/
#ifndef SYSLAB_JUPYTER_SHELL_H
#define SYSLAB_JUPYTER_SHELL_H

#include "kernel.h"

/* one shell request, busy/idle included; main thread */
void slj_handle_shell(slj_Kernel *K, slj_Msg *request);
/* the content of a kernel_info_reply, asked on shell or control */
json_t *slj_kernel_info(void);

/* Code is text: a NUL byte in it (in a file, or as "\u0000" in an
** execute_request) would silently end the program where C strings end.
** Finds the first one: 0 when there is none, else 1 with its line and column
** (from 1) and why in msg, the same words for `syslab run` and the kernel. */
int slj_find_nul(const char *code, size_t len, int *line, int *col, char *msg, size_t size);

#endif
