/*
** publish.c - what the kernel sends: a reply to a request on the socket it
** came from, and messages on IOPub. Both are built under the process's one
** session id with the request as parent, and signed with the connection
** file's key (wire.c).
**
** IOPub's XPUB socket belongs to the publisher thread (server.c): the other
** threads publish through an inproc PUSH socket of their own, which the
** caller names. A message that cannot be sent is logged, not retried.
*/
#include "publish.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <zmq.h>

void slj_log(const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  fprintf(stderr, "[syslab kernel] ");
  vfprintf(stderr, fmt, ap);
  fputc('\n', stderr);
  va_end(ap);
}

void slj_reply(slj_Kernel *K, void *socket, const slj_Msg *request, const char *msg_type, json_t *content) {
  slj_Msg m;
  slj_msg_init(&m, msg_type, K->session, request, content);
  slj_msg_copy_route(&m, request);
  if (slj_send(socket, &K->conn.key, &m) != 0) slj_log("could not send %s: %s", msg_type, zmq_strerror(errno));
  slj_msg_free(&m);
}

void slj_publish(slj_Kernel *K, void *push, const slj_Msg *parent, const char *msg_type, json_t *content) {
  slj_Msg m;
  char topic[96];
  slj_msg_init(&m, msg_type, K->session, parent, content);
  snprintf(topic, sizeof topic, "kernel.%s.%s", K->session, msg_type);
  slj_msg_set_topic(&m, topic);
  if (slj_send(push, &K->conn.key, &m) != 0) slj_log("could not publish %s: %s", msg_type, zmq_strerror(errno));
  slj_msg_free(&m);
}

void slj_publish_status(slj_Kernel *K, void *push, const slj_Msg *parent, const char *state) {
  slj_publish(K, push, parent, "status", json_pack("{s:s}", "execution_state", state));
}
