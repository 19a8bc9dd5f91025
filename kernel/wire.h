/*
** wire.h - the Jupyter wire format: messages as ZeroMQ multipart frames,
** HMAC-SHA256 signatures, headers, and connection files.
**
** Used by both ends of the protocol: the kernel (server.c) and the report
** generator's client (report/). Nothing here knows about kernel state.
*/
#ifndef SYSLAB_WIRE_H
#define SYSLAB_WIRE_H

#include <jansson.h>
#include <stddef.h>

#define SLK_PROTOCOL_VERSION "5.3"
#define SLK_DELIMITER "<IDS|MSG>"

typedef struct slk_Key {
  unsigned char bytes[512];
  size_t len;            /* 0: messages are neither signed nor checked */
} slk_Key;

typedef struct slk_Frame {
  void *data;
  size_t len;
} slk_Frame;

typedef struct slk_Msg {
  slk_Frame *idents;     /* routing prefix, copied verbatim onto replies */
  size_t nidents;
  json_t *header, *parent, *metadata, *content;   /* owned references */
  slk_Frame *buffers;    /* raw buffers after the content (not signed) */
  size_t nbuffers;
} slk_Msg;

typedef enum {
  SLK_OK = 0,
  SLK_NOTHING = 1,       /* no message was waiting (non-blocking receive) */
  SLK_MALFORMED = -1,    /* frames or JSON are wrong; the reason is in err */
  SLK_BAD_SIGNATURE = -2,
  SLK_SOCKET_ERROR = -3  /* the socket failed or the context is ending */
} slk_Status;

/* Receives one whole message (every frame, even when it is rejected, so the
** socket stays in step). flags: 0 or ZMQ_DONTWAIT. */
slk_Status slk_recv(void *socket, const slk_Key *key, int flags, slk_Msg *msg, char *err, size_t errlen);
/* Signs and sends msg. Returns 0, or -1 if the socket refused it. */
int slk_send(void *socket, const slk_Key *key, const slk_Msg *msg);
void slk_msg_free(slk_Msg *msg);

/* A message to send: header made from msg_type and session, parent copied
** from `parent` (or {} when NULL), identities copied from `route` (or a
** single topic frame when route is NULL and topic is given), metadata {},
** content taken over (may be NULL for {}). */
void slk_msg_init(slk_Msg *msg, const char *msg_type, const char *session, const slk_Msg *parent,
                  json_t *content);
void slk_msg_set_topic(slk_Msg *msg, const char *topic);
void slk_msg_copy_route(slk_Msg *msg, const slk_Msg *from);

/* header fields */
json_t *slk_header_new(const char *msg_type, const char *session);
const char *slk_msg_type(const slk_Msg *msg);   /* "" when absent */
const char *slk_msg_id(const slk_Msg *msg);

/* lowercase hex HMAC-SHA256 of the four serialized dicts; out has 65 bytes */
void slk_sign(const slk_Key *key, const char *parts[4], const size_t lens[4], char out[65]);
/* constant-time check of a received signature */
int slk_verify(const slk_Key *key, const char *parts[4], const size_t lens[4], const char *sig, size_t siglen);

void slk_uuid(char out[37]);
void slk_iso_now(char out[40]);

/* JSON string from bytes that may not be valid UTF-8: bad bytes become U+FFFD */
json_t *slk_json_text(const char *s, size_t n);
/* base64 without line breaks, as Jupyter expects for image/png; caller frees */
char *slk_base64(const void *data, size_t n);

/* Connection file (kernels.rst): endpoints and the signing key. */
typedef struct slk_Connection {
  char transport[16];
  char ip[256];
  int shell_port, iopub_port, stdin_port, control_port, hb_port;
  char scheme[32];
  slk_Key key;
} slk_Connection;

int slk_connection_read(const char *path, slk_Connection *c, char *err, size_t errlen);
int slk_connection_write(const char *path, const slk_Connection *c, char *err, size_t errlen);
/* "tcp://127.0.0.1:5555" or "ipc://path-5555" */
void slk_endpoint(const slk_Connection *c, int port, char *out, size_t size);

#endif
