/*
** kernel.h - the state of the kernel process, shared by its server
** (server.c: sockets and threads), its outgoing messages (publish.c) and
** its request handlers (shell.c). The engine never sees any of it.
*/
#ifndef SYSLAB_JUPYTER_KERNEL_H
#define SYSLAB_JUPYTER_KERNEL_H

#include <stdatomic.h>
#include <sys/types.h>

#include "history.h"
#include "syslab.h"
#include "wire.h"

typedef struct slj_Kernel {
  slj_Connection conn;
  char session[37]; /* one id for every message this process sends */
  void *ctx;
  void *shell, *control, *stdin_socket, *hb;
  void *iopub;           /* XPUB, owned by the publisher thread */
  void *publish_main;    /* inproc PUSH to the publisher, main thread */
  void *publish_control; /* inproc PUSH to the publisher, control thread */
  void *wake_main;       /* inproc PUSH, control thread: wakes the main loop at once on shutdown */
  void *wake_listen;     /* inproc PULL, main thread */
  sl_State *S;
  int execution_count;
  slj_History history;
  slj_Msg pending[64]; /* requests set aside while aborting, handled next */
  size_t npending;
  atomic_int executing; /* a cell is running: SIGINT interrupts it */
  atomic_int stopping;  /* shutdown_request received, or the parent died */
  atomic_int main_done; /* the main loop has ended */
  pid_t parent;         /* the process whose death ends the kernel, or 0 */
  int restart;
} slj_Kernel;

#endif
