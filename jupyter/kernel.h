/*
** kernel.h - what the kernel's server (server.c) and its request handlers
** (shell.c, history.c) share. The engine never sees any of it.
*/
#ifndef SYSLAB_JUPYTER_KERNEL_H
#define SYSLAB_JUPYTER_KERNEL_H

#include <stdarg.h>
#include <stdatomic.h>
#include <sys/types.h>

#include "syslab.h"
#include "wire.h"

typedef struct slj_HistoryEntry {
  int line;
  char *input;
  char *output;   /* text/plain of the execute_result, or NULL */
} slj_HistoryEntry;

typedef struct slj_History {
  slj_HistoryEntry *entries;
  size_t n, cap;
} slj_History;

typedef struct slj_Kernel {
  slj_Connection conn;
  char session[37];       /* one id for every message this process sends */
  void *ctx;
  void *shell, *control, *stdin_socket, *hb;
  void *iopub;            /* XPUB, owned by the publisher thread */
  void *publish_main;     /* inproc PUSH to the publisher, main thread */
  void *publish_control;  /* inproc PUSH to the publisher, control thread */
  void *wake_main;        /* inproc PUSH, control thread: wakes the main loop at once on shutdown */
  void *wake_listen;      /* inproc PULL, main thread */
  sl_State *S;
  int execution_count;
  slj_History history;
  slj_Msg pending[64];    /* requests set aside while aborting, handled next */
  size_t npending;
  atomic_int executing;   /* a cell is running: SIGINT interrupts it */
  atomic_int stopping;    /* shutdown_request received, or the parent died */
  atomic_int main_done;   /* the main loop has ended */
  pid_t parent;           /* the process whose death ends the kernel, or 0 */
  int restart;
} slj_Kernel;

/* server.c: send a reply on `socket` to `request`; publish on IOPub through
** the given inproc PUSH socket. Both take ownership of content. */
void slj_reply(slj_Kernel *K, void *socket, const slj_Msg *request, const char *msg_type, json_t *content);
void slj_publish(slj_Kernel *K, void *push, const slj_Msg *parent, const char *msg_type, json_t *content);
void slj_publish_status(slj_Kernel *K, void *push, const slj_Msg *parent, const char *state);
json_t *slj_kernel_info(void);
/* a line on stderr, which Jupyter keeps in its server log */
void slj_log(const char *fmt, ...);

/* shell.c: one shell request, busy/idle included */
void slj_handle_shell(slj_Kernel *K, slj_Msg *request);
/* shell.c: answer execute_requests already queued on the shell socket with
** status "aborted" after a failed cell; other requests are kept in
** K->pending and handled next, in order */
void slj_abort_queued(slj_Kernel *K);

/* history.c */
void slj_history_add(slj_History *h, int line, const char *input, const char *output);
json_t *slj_history_reply(const slj_History *h, const json_t *request_content);
void slj_history_free(slj_History *h);

#endif
