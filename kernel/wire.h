/*
** wire.h - the Jupyter wire format: messages as ZeroMQ multipart frames,
** HMAC-SHA256 signatures, headers, and connection files.
**
** Used by both ends of the protocol: the kernel (server.c) and the report
** generator's client (report/). Nothing here knows about kernel state.
*/
#ifndef SYSLAB_JUPYTER_WIRE_H
#define SYSLAB_JUPYTER_WIRE_H

#include <jansson.h>
#include <stddef.h>

#define SLJ_PROTOCOL_VERSION "5.3"
#define SLJ_DELIMITER "<IDS|MSG>"

typedef struct slj_Key {
  unsigned char bytes[512];
  size_t len; /* 0: messages are neither signed nor checked */
} slj_Key;

typedef struct slj_Frame {
  void *data;
  size_t len;
} slj_Frame;

typedef struct slj_Msg {
  slj_Frame *idents; /* routing prefix, copied verbatim onto replies */
  size_t nidents;
  json_t *header, *parent, *metadata, *content; /* owned references */
  slj_Frame *buffers;                           /* raw buffers after the content (not signed) */
  size_t nbuffers;
} slj_Msg;

typedef enum {
  SLJ_OK = 0,
  SLJ_NOTHING = 1,    /* no message was waiting (non-blocking receive) */
  SLJ_MALFORMED = -1, /* frames or JSON are wrong; the reason is in err */
  SLJ_BAD_SIGNATURE = -2,
  SLJ_SOCKET_ERROR = -3 /* the socket failed or the context is ending */
} slj_Status;

/* Receives one whole message (every frame, even when it is rejected, so the
** socket stays in step). flags: 0 or ZMQ_DONTWAIT. */
slj_Status slj_recv(void *socket, const slj_Key *key, int flags, slj_Msg *msg, char *err, size_t errlen);
/* Signs and sends msg. Returns 0, or -1 if the socket refused it. */
int slj_send(void *socket, const slj_Key *key, const slj_Msg *msg);
void slj_msg_free(slj_Msg *msg);

/* A message to send: header made from msg_type and session, parent copied
** from `parent` (or {} when NULL), identities copied from `route` (or a
** single topic frame when route is NULL and topic is given), metadata {},
** content taken over (may be NULL for {}). */
void slj_msg_init(slj_Msg *msg, const char *msg_type, const char *session, const slj_Msg *parent, json_t *content);
void slj_msg_set_topic(slj_Msg *msg, const char *topic);
void slj_msg_copy_route(slj_Msg *msg, const slj_Msg *from);

/* header fields */
json_t *slj_header_new(const char *msg_type, const char *session);
const char *slj_msg_type(const slj_Msg *msg); /* "" when absent */
const char *slj_msg_id(const slj_Msg *msg);

/* lowercase hex HMAC-SHA256 of the four serialized dicts; out has 65 bytes */
void slj_sign(const slj_Key *key, const char *parts[4], const size_t lens[4], char out[65]);
/* constant-time check of a received signature */
int slj_verify(const slj_Key *key, const char *parts[4], const size_t lens[4], const char *sig, size_t siglen);
/* set up OpenSSL's HMAC on a thread of its own, while the caller goes on;
** join before the first signature to have it ready (wire.c) */
void slj_sign_warm_start(void);
void slj_sign_warm_join(void);

void slj_uuid(char out[37]);

/* JSON string from bytes that may not be valid UTF-8: bad bytes become U+FFFD */
json_t *slj_json_text(const char *s, size_t n);
/* base64 without line breaks, as Jupyter expects for image/png; caller frees */
char *slj_base64(const void *data, size_t n);

/* Connection file (kernels.rst): endpoints and the signing key. */
typedef struct slj_Connection {
  char transport[16];
  char ip[256];
  int shell_port, iopub_port, stdin_port, control_port, hb_port;
  char scheme[32];
  slj_Key key;
} slj_Connection;

int slj_connection_read(const char *path, slj_Connection *c, char *err, size_t errlen);
int slj_connection_write(const char *path, const slj_Connection *c, char *err, size_t errlen);
/* "tcp://127.0.0.1:5555" or "ipc://path-5555" */
void slj_endpoint(const slj_Connection *c, int port, char *out, size_t size);

#endif
