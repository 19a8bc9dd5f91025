/*
** publish.h - what the kernel sends (publish.c): replies to requests and
** messages on IOPub, each under the kernel's session and signed with its
** key; and the kernel's log line. The server's threads and the request
** handlers both send through here.
*/
#ifndef SYSLAB_JUPYTER_PUBLISH_H
#define SYSLAB_JUPYTER_PUBLISH_H

#include "kernel.h"

/* Send a reply on `socket` to `request`; publish on IOPub through the given
** inproc PUSH socket (one per thread, see server.c). Both take ownership of
** content. */
void slj_reply(slj_Kernel *K, void *socket, const slj_Msg *request, const char *msg_type, json_t *content);
void slj_publish(slj_Kernel *K, void *push, const slj_Msg *parent, const char *msg_type, json_t *content);
void slj_publish_status(slj_Kernel *K, void *push, const slj_Msg *parent, const char *state);
/* a line on stderr, which Jupyter keeps in its server log */
void slj_log(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

#endif
