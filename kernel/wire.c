/*
** wire.c - the Jupyter wire format (messaging.rst, "The Wire Protocol").
**
**   [identities...] "<IDS|MSG>" signature header parent metadata content [buffers...]
**
** The signature is the hex HMAC-SHA256, keyed with the connection file's key
** string, over the four JSON frames exactly as they travel. It is checked
** with CRYPTO_memcmp so the time taken does not reveal how much of a forged
** signature was right. A received message is always read to its last frame,
** even when rejected, so the next read starts at a message boundary.
*/
#include "wire.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/params.h>
#include <openssl/rand.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include <zmq.h>

#include "slutil.h"

/* ---------------------------------------------------------------- helpers */

/* from the system's generator (getrandom): a message id need not wait for
** OpenSSL's generator to be set up, which took a millisecond of a kernel's
** start before its first reply */
void slj_uuid(char out[37]) {
  unsigned char b[16];
  if (getrandom(b, sizeof b, 0) != (ssize_t)sizeof b && RAND_bytes(b, sizeof b) != 1) {
    /* never expected; fall back to a weaker but still unique-enough source */
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    srand((unsigned)(ts.tv_nsec ^ ts.tv_sec ^ getpid()));
    for (int i = 0; i < 16; i++) b[i] = (unsigned char)rand();
  }
  b[6] = (unsigned char)((b[6] & 0x0F) | 0x40); /* version 4 */
  b[8] = (unsigned char)((b[8] & 0x3F) | 0x80); /* RFC 4122 variant */
  snprintf(out, 37, "%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-%02x%02x%02x%02x%02x%02x", b[0], b[1], b[2], b[3],
           b[4], b[5], b[6], b[7], b[8], b[9], b[10], b[11], b[12], b[13], b[14], b[15]);
}

static void iso_now(char out[40]) {
  struct timespec ts;
  struct tm tm;
  clock_gettime(CLOCK_REALTIME, &ts);
  gmtime_r(&ts.tv_sec, &tm);
  size_t n = strftime(out, 40, "%Y-%m-%dT%H:%M:%S", &tm);
  snprintf(out + n, 40 - n, ".%06ldZ", ts.tv_nsec / 1000);
}

json_t *slj_json_text(const char *s, size_t n) {
  json_t *j = json_stringn(s, n);
  if (j) return j;
  /* invalid UTF-8: keep what is valid, replace the rest with U+FFFD */
  char *clean = malloc(n * 3 + 1);
  size_t o = 0;
  for (size_t i = 0; i < n;) {
    unsigned char c = (unsigned char)s[i];
    size_t len = c < 0x80 ? 1 : (c >> 5) == 6 ? 2 : (c >> 4) == 14 ? 3 : (c >> 3) == 30 ? 4 : 0;
    int ok = len > 0 && i + len <= n && !(len == 1 && c == 0);
    for (size_t k = 1; ok && k < len; k++) ok = ((unsigned char)s[i + k] & 0xC0) == 0x80;
    if (ok && len > 1) {
      json_t *probe = json_stringn(s + i, len); /* rejects overlongs and surrogates */
      ok = probe != NULL;
      json_decref(probe);
    }
    if (ok) {
      memcpy(clean + o, s + i, len);
      o += len;
      i += len;
    } else {
      memcpy(clean + o, "\xEF\xBF\xBD", 3);
      o += 3;
      i++;
    }
  }
  j = json_stringn(clean, o);
  free(clean);
  return j ? j : json_string("");
}

char *slj_base64(const void *data, size_t n) {
  char *out = malloc(4 * ((n + 2) / 3) + 1);
  EVP_EncodeBlock((unsigned char *)out, data, (int)n);
  return out;
}

/* --------------------------------------------------------------- signing */

static EVP_MAC *hmac_algorithm;
static pthread_once_t hmac_once = PTHREAD_ONCE_INIT;

static void fetch_hmac(void) { hmac_algorithm = EVP_MAC_fetch(NULL, "HMAC", NULL); }

/* OpenSSL's first HMAC reads its configuration and sets up its default
** provider and algorithm tables, most of a millisecond; a kernel has that
** done on a thread of its own while it binds its sockets, and waits for it
** (slj_sign_warm_join) before the first message it signs. */
static pthread_t warm_tid;
static int warming;

static void *warm(void *arg) {
  (void)arg;
  static const slj_Key key = {{'k'}, 1};
  const char *parts[4] = {"", "", "", ""};
  const size_t lens[4] = {0, 0, 0, 0};
  char sig[65];
  slj_sign(&key, parts, lens, sig);
  return NULL;
}

void slj_sign_warm_start(void) {
  if (!warming) warming = pthread_create(&warm_tid, NULL, warm, NULL) == 0;
}

void slj_sign_warm_join(void) {
  if (warming) pthread_join(warm_tid, NULL);
  warming = 0;
}

void slj_sign(const slj_Key *key, const char *parts[4], const size_t lens[4], char out[65]) {
  unsigned char mac[EVP_MAX_MD_SIZE];
  unsigned int maclen = 0;
  /* EVP_MAC is the OpenSSL 3 interface; the algorithm is fetched once, and
  ** each call has its own context so threads can sign at the same time */
  pthread_once(&hmac_once, fetch_hmac);
  EVP_MAC_CTX *mctx = EVP_MAC_CTX_new(hmac_algorithm);
  OSSL_PARAM params[2];
  params[0] = OSSL_PARAM_construct_utf8_string("digest", "SHA256", 0);
  params[1] = OSSL_PARAM_construct_end();
  size_t outlen = 0;
  EVP_MAC_init(mctx, key->bytes, key->len, params);
  for (int i = 0; i < 4; i++) EVP_MAC_update(mctx, (const unsigned char *)parts[i], lens[i]);
  EVP_MAC_final(mctx, mac, &outlen, sizeof mac);
  maclen = (unsigned int)outlen;
  EVP_MAC_CTX_free(mctx);
  static const char hex[] = "0123456789abcdef";
  for (unsigned i = 0; i < maclen && i < 32; i++) {
    out[2 * i] = hex[mac[i] >> 4];
    out[2 * i + 1] = hex[mac[i] & 15];
  }
  out[64] = '\0';
}

int slj_verify(const slj_Key *key, const char *parts[4], const size_t lens[4], const char *sig, size_t siglen) {
  char expected[65];
  slj_sign(key, parts, lens, expected);
  if (siglen != 64) return 0;
  return CRYPTO_memcmp(expected, sig, 64) == 0;
}

/* --------------------------------------------------------------- messages */

json_t *slj_header_new(const char *msg_type, const char *session) {
  char id[37], date[40];
  slj_uuid(id);
  iso_now(date);
  return json_pack("{s:s, s:s, s:s, s:s, s:s, s:s}", "msg_id", id, "session", session, "username", "syslab", "date",
                   date, "msg_type", msg_type, "version", SLJ_PROTOCOL_VERSION);
}

static const char *header_string(const slj_Msg *msg, const char *key) {
  const char *s = msg->header ? json_string_value(json_object_get(msg->header, key)) : NULL;
  return s ? s : "";
}

const char *slj_msg_type(const slj_Msg *msg) { return header_string(msg, "msg_type"); }
const char *slj_msg_id(const slj_Msg *msg) { return header_string(msg, "msg_id"); }

static slj_Frame frame_copy(const void *data, size_t len) {
  slj_Frame f;
  f.data = malloc(len ? len : 1);
  memcpy(f.data, data, len);
  f.len = len;
  return f;
}

void slj_msg_init(slj_Msg *msg, const char *msg_type, const char *session, const slj_Msg *parent, json_t *content) {
  memset(msg, 0, sizeof *msg);
  msg->header = slj_header_new(msg_type, session);
  msg->parent = parent && parent->header ? json_deep_copy(parent->header) : json_object();
  msg->metadata = json_object();
  msg->content = content ? content : json_object();
}

void slj_msg_set_topic(slj_Msg *msg, const char *topic) {
  msg->idents = malloc(sizeof *msg->idents);
  msg->idents[0] = frame_copy(topic, strlen(topic));
  msg->nidents = 1;
}

void slj_msg_copy_route(slj_Msg *msg, const slj_Msg *from) {
  msg->idents = malloc((from->nidents ? from->nidents : 1) * sizeof *msg->idents);
  for (size_t i = 0; i < from->nidents; i++) msg->idents[i] = frame_copy(from->idents[i].data, from->idents[i].len);
  msg->nidents = from->nidents;
}

void slj_msg_free(slj_Msg *msg) {
  for (size_t i = 0; i < msg->nidents; i++) free(msg->idents[i].data);
  for (size_t i = 0; i < msg->nbuffers; i++) free(msg->buffers[i].data);
  free(msg->idents);
  free(msg->buffers);
  json_decref(msg->header);
  json_decref(msg->parent);
  json_decref(msg->metadata);
  json_decref(msg->content);
  memset(msg, 0, sizeof *msg);
}

static int send_frame(void *socket, const void *data, size_t len, int more) {
  for (;;) {
    if (zmq_send(socket, data, len, more ? ZMQ_SNDMORE : 0) >= 0) return 0;
    if (errno != EINTR) return -1;
  }
}

int slj_send(void *socket, const slj_Key *key, const slj_Msg *msg) {
  json_t *dicts[4] = {msg->header, msg->parent, msg->metadata, msg->content};
  char *parts[4];
  size_t lens[4];
  for (int i = 0; i < 4; i++) {
    parts[i] = json_dumps(dicts[i] ? dicts[i] : json_object(), JSON_COMPACT | JSON_ENCODE_ANY);
    lens[i] = strlen(parts[i]);
  }
  char sig[65] = "";
  if (key->len) slj_sign(key, (const char **)parts, lens, sig);
  int rc = 0;
  for (size_t i = 0; i < msg->nidents && rc == 0; i++)
    rc = send_frame(socket, msg->idents[i].data, msg->idents[i].len, 1);
  if (rc == 0) rc = send_frame(socket, SLJ_DELIMITER, strlen(SLJ_DELIMITER), 1);
  if (rc == 0) rc = send_frame(socket, sig, strlen(sig), 1);
  for (int i = 0; i < 4 && rc == 0; i++) rc = send_frame(socket, parts[i], lens[i], i < 3 || msg->nbuffers > 0);
  for (size_t i = 0; i < msg->nbuffers && rc == 0; i++)
    rc = send_frame(socket, msg->buffers[i].data, msg->buffers[i].len, i + 1 < msg->nbuffers);
  for (int i = 0; i < 4; i++) free(parts[i]);
  return rc;
}

/* reads every frame of one multipart message */
static int recv_frames(void *socket, int flags, slj_Frame **frames, size_t *n) {
  *frames = NULL;
  *n = 0;
  size_t cap = 0;
  int more = 1;
  while (more) {
    zmq_msg_t part;
    zmq_msg_init(&part);
    int rc;
    do rc = zmq_msg_recv(&part, socket, *n == 0 ? flags : 0);
    while (rc < 0 && errno == EINTR);
    if (rc < 0) {
      int e = errno;
      zmq_msg_close(&part);
      errno = e;
      return -1;
    }
    if (*n == cap) *frames = realloc(*frames, (cap = cap ? cap * 2 : 8) * sizeof **frames);
    (*frames)[(*n)++] = frame_copy(zmq_msg_data(&part), zmq_msg_size(&part));
    more = zmq_msg_more(&part);
    zmq_msg_close(&part);
  }
  return 0;
}

slj_Status slj_recv(void *socket, const slj_Key *key, int flags, slj_Msg *msg, char *err, size_t errlen) {
  memset(msg, 0, sizeof *msg);
  slj_Frame *frames;
  size_t n;
  if (recv_frames(socket, flags, &frames, &n) != 0) {
    if (errno == EAGAIN) return SLJ_NOTHING;
    snprintf(err, errlen, "receive failed: %s", zmq_strerror(errno));
    return SLJ_SOCKET_ERROR;
  }
  slj_Status status = SLJ_OK;
  size_t d = 0;
  while (d < n &&
         !(frames[d].len == strlen(SLJ_DELIMITER) && memcmp(frames[d].data, SLJ_DELIMITER, frames[d].len) == 0))
    d++;
  if (d == n || n - d - 1 < 5) {
    snprintf(err, errlen, "malformed message: %zu frames, %s", n,
             d == n ? "no <IDS|MSG> delimiter" : "fewer than 5 frames after the delimiter");
    status = SLJ_MALFORMED;
    goto done;
  }
  const char *parts[4];
  size_t lens[4];
  for (int i = 0; i < 4; i++) {
    parts[i] = frames[d + 2 + i].data;
    lens[i] = frames[d + 2 + i].len;
  }
  if (key->len && !slj_verify(key, parts, lens, frames[d + 1].data, frames[d + 1].len)) {
    snprintf(err, errlen, "%s signature: message dropped", frames[d + 1].len ? "invalid" : "missing");
    status = SLJ_BAD_SIGNATURE;
    goto done;
  }
  json_t **dicts[4] = {&msg->header, &msg->parent, &msg->metadata, &msg->content};
  static const char *names[4] = {"header", "parent_header", "metadata", "content"};
  for (int i = 0; i < 4; i++) {
    json_error_t jerr;
    /* content may hold "\u0000" (a NUL in a cell's code): it is read, and
    ** refused where it matters with a clear error, not dropped unanswered */
    *dicts[i] = json_loadb(parts[i], lens[i], i == 3 ? JSON_ALLOW_NUL : 0, &jerr);
    if (!*dicts[i] || !json_is_object(*dicts[i])) {
      snprintf(err, errlen, "malformed message: %s is not a JSON object (%s)", names[i],
               *dicts[i] ? "another JSON type" : jerr.text);
      status = SLJ_MALFORMED;
      goto done;
    }
  }
  if (!json_is_string(json_object_get(msg->header, "msg_type"))) {
    snprintf(err, errlen, "malformed message: the header has no msg_type");
    status = SLJ_MALFORMED;
    goto done;
  }
  msg->nidents = d;
  msg->idents = malloc((d ? d : 1) * sizeof *msg->idents);
  for (size_t i = 0; i < d; i++) {
    msg->idents[i] = frames[i];
    frames[i].data = NULL;
  }
  msg->nbuffers = n - d - 6;
  msg->buffers = malloc((msg->nbuffers ? msg->nbuffers : 1) * sizeof *msg->buffers);
  for (size_t i = 0; i < msg->nbuffers; i++) {
    msg->buffers[i] = frames[d + 6 + i];
    frames[d + 6 + i].data = NULL;
  }
done:
  for (size_t i = 0; i < n; i++) free(frames[i].data);
  free(frames);
  if (status != SLJ_OK) slj_msg_free(msg);
  return status;
}

/* -------------------------------------------------------- connection files */

int slj_connection_read(const char *path, slj_Connection *c, char *err, size_t errlen) {
  memset(c, 0, sizeof *c);
  json_error_t jerr;
  size_t n;
  char why[512];
  char *text = slF_read_file(path, "a connection file", 1, &n, why, sizeof why); /* a FIFO would block */
  json_t *j = text ? json_loadb(text, n, 0, &jerr) : NULL;
  if (!j) snprintf(err, errlen, "cannot read connection file '%s': %s", path, text ? jerr.text : why);
  free(text);
  if (!j) return -1;
  const char *transport = json_string_value(json_object_get(j, "transport"));
  const char *ip = json_string_value(json_object_get(j, "ip"));
  const char *key = json_string_value(json_object_get(j, "key"));
  const char *scheme = json_string_value(json_object_get(j, "signature_scheme"));
  snprintf(c->transport, sizeof c->transport, "%s", transport ? transport : "tcp");
  snprintf(c->ip, sizeof c->ip, "%s", ip ? ip : "127.0.0.1");
  snprintf(c->scheme, sizeof c->scheme, "%s", scheme ? scheme : "hmac-sha256");
  int *ports[5] = {&c->shell_port, &c->iopub_port, &c->stdin_port, &c->control_port, &c->hb_port};
  static const char *names[5] = {"shell_port", "iopub_port", "stdin_port", "control_port", "hb_port"};
  int rc = 0;
  for (int i = 0; i < 5 && rc == 0; i++) {
    json_t *p = json_object_get(j, names[i]);
    if (!json_is_integer(p) || json_integer_value(p) < 0 || json_integer_value(p) > 65535) {
      snprintf(err, errlen, "connection file '%s': %s is missing or not a port number", path, names[i]);
      rc = -1;
    } else {
      *ports[i] = (int)json_integer_value(p);
    }
  }
  if (rc == 0 && strcmp(c->transport, "tcp") != 0 && strcmp(c->transport, "ipc") != 0) {
    snprintf(err, errlen, "connection file '%s': transport '%s' is not supported (tcp or ipc)", path, c->transport);
    rc = -1;
  }
  if (rc == 0 && key && *key && strcmp(c->scheme, "hmac-sha256") != 0) {
    snprintf(err, errlen, "connection file '%s': signature_scheme '%s' is not supported (hmac-sha256)", path,
             c->scheme);
    rc = -1;
  }
  if (rc == 0 && key) {
    size_t len = strlen(key);
    if (len > sizeof c->key.bytes) {
      snprintf(err, errlen, "connection file '%s': key longer than %zu bytes", path, sizeof c->key.bytes);
      rc = -1;
    } else {
      memcpy(c->key.bytes, key, len);
      c->key.len = len;
    }
  }
  json_decref(j);
  return rc;
}

int slj_connection_write(const char *path, const slj_Connection *c, char *err, size_t errlen) {
  char key[sizeof c->key.bytes + 1];
  memcpy(key, c->key.bytes, c->key.len);
  key[c->key.len] = '\0';
  json_t *j = json_pack("{s:s, s:s, s:i, s:i, s:i, s:i, s:i, s:s, s:s, s:s}", "transport", c->transport, "ip", c->ip,
                        "shell_port", c->shell_port, "iopub_port", c->iopub_port, "stdin_port", c->stdin_port,
                        "control_port", c->control_port, "hb_port", c->hb_port, "signature_scheme", c->scheme, "key",
                        key, "kernel_name", "syslab");
  char tmp[4096];
  snprintf(tmp, sizeof tmp, "%s.tmp%d", path, (int)getpid());
  char why[512];
  mode_t old = umask(077); /* the key is a secret: the file is for its owner only */
  int fd = slF_open(tmp, O_WRONLY | O_CREAT | O_TRUNC, "a connection file", NULL, why, sizeof why);
  umask(old);
  int rc = fd >= 0 ? json_dumpfd(j, fd, JSON_INDENT(2)) : -1;
  if (fd >= 0 && close(fd) != 0) rc = -1;
  json_decref(j);
  if (rc != 0 || rename(tmp, path) != 0) {
    snprintf(err, errlen, "cannot write connection file '%s': %s", path, fd < 0 ? why : strerror(errno));
    if (fd >= 0) unlink(tmp);
    return -1;
  }
  return 0;
}

void slj_endpoint(const slj_Connection *c, int port, char *out, size_t size) {
  if (strcmp(c->transport, "ipc") == 0) snprintf(out, size, "ipc://%s-%d", c->ip, port);
  else snprintf(out, size, "tcp://%s:%d", c->ip, port);
}
