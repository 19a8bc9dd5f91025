/*
** kernel.h - what the kernel's server (server.c) and its request handlers
** (shell.c, history.c) share. The engine never sees any of it.
*/
#ifndef SYSLAB_KERNEL_H
#define SYSLAB_KERNEL_H

#include <stdarg.h>
#include <stdatomic.h>
#include <sys/types.h>

#include "syslab.h"
#include "wire.h"

typedef struct slk_HistoryEntry {
  int line;
  char *input;
  char *output;   /* text/plain of the execute_result, or NULL */
} slk_HistoryEntry;

typedef struct slk_History {
  slk_HistoryEntry *entries;
  size_t n, cap;
} slk_History;

typedef struct slk_Kernel {
  slk_Connection conn;
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
  slk_History history;
  slk_Msg pending[64];    /* requests set aside while aborting, handled next */
  size_t npending;
  atomic_int executing;   /* a cell is running: SIGINT interrupts it */
  atomic_int stopping;    /* shutdown_request received, or the parent died */
  atomic_int main_done;   /* the main loop has ended */
  pid_t parent;           /* the process whose death ends the kernel, or 0 */
  int restart;
} slk_Kernel;

/* server.c: send a reply on `socket` to `request`; publish on IOPub through
** the given inproc PUSH socket. Both take ownership of content. */
void slk_reply(slk_Kernel *K, void *socket, const slk_Msg *request, const char *msg_type, json_t *content);
void slk_publish(slk_Kernel *K, void *push, const slk_Msg *parent, const char *msg_type, json_t *content);
void slk_publish_status(slk_Kernel *K, void *push, const slk_Msg *parent, const char *state);
json_t *slk_kernel_info(void);
/* a line on stderr, which Jupyter keeps in its server log */
void slk_log(const char *fmt, ...);

/* shell.c: one shell request, busy/idle included */
void slk_handle_shell(slk_Kernel *K, slk_Msg *request);
/* shell.c: answer execute_requests already queued on the shell socket with
** status "aborted" after a failed cell; other requests are kept in
** K->pending and handled next, in order */
void slk_abort_queued(slk_Kernel *K);

/* history.c */
void slk_history_add(slk_History *h, int line, const char *input, const char *output);
json_t *slk_history_reply(const slk_History *h, const json_t *request_content);
void slk_history_free(slk_History *h);

#endif
