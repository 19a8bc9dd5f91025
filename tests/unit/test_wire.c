/* test_wire.c - the wire format: signing, verification, frames, headers. */
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <zmq.h>

#include "check.h"
#include "kernel/wire.h"

static slj_Key key_of(const char *s) {
  slj_Key k;
  k.len = strlen(s);
  memcpy(k.bytes, s, k.len);
  return k;
}

static void test_sign_known_answer(void) {
  /* computed with Python: hmac.new(b"syslab-key", header+parent+metadata+content, sha256) */
  slj_Key k = key_of("syslab-key");
  const char *parts[4] = {"{\"msg_id\":\"1\"}", "{}", "{}", "{\"code\":\"1\"}"};
  size_t lens[4];
  for (int i = 0; i < 4; i++) lens[i] = strlen(parts[i]);
  char sig[65];
  slj_sign(&k, parts, lens, sig);
  CHECK_STREQ(sig, "4c3d57acdf38034ee1abd5d48c112cde324e3cee791f3605bae04af9b2cf3981");
  CHECK(slj_verify(&k, parts, lens, sig, 64));
  sig[10] ^= 1;
  CHECK(!slj_verify(&k, parts, lens, sig, 64));
  CHECK(!slj_verify(&k, parts, lens, sig, 0));
  CHECK(!slj_verify(&k, parts, lens, "", 0));
}

static void test_header_fields(void) {
  json_t *h = slj_header_new("execute_reply", "sess");
  const char *keys[] = {"msg_id", "session", "username", "date", "msg_type", "version"};
  for (int i = 0; i < 6; i++) CHECK_MSG(json_is_string(json_object_get(h, keys[i])), "header lacks %s", keys[i]);
  CHECK_STREQ(json_string_value(json_object_get(h, "version")), "5.3");
  const char *date = json_string_value(json_object_get(h, "date"));
  CHECK_EQ_INT(strlen(date), 27); /* 2026-01-01T12:00:00.123456Z */
  CHECK(date[26] == 'Z' && date[19] == '.');
  json_t *h2 = slj_header_new("x", "sess");
  CHECK(strcmp(json_string_value(json_object_get(h, "msg_id")), json_string_value(json_object_get(h2, "msg_id"))) != 0);
  json_decref(h);
  json_decref(h2);
}

static void test_json_text_repairs_utf8(void) {
  json_t *j = slj_json_text("ok \xff\xfe end", 9);
  CHECK_STREQ(json_string_value(j), "ok \xEF\xBF\xBD\xEF\xBF\xBD end");
  json_decref(j);
  j = slj_json_text("caf\xC3\xA9", 5);
  CHECK_STREQ(json_string_value(j), "caf\xC3\xA9");
  json_decref(j);
}

static void test_base64(void) {
  char *b = slj_base64("\x89PNG", 4);
  CHECK_STREQ(b, "iVBORw==");
  free(b);
}

/* send through a real socket pair and read back */
static void test_round_trip_and_rejections(void) {
  void *ctx = zmq_ctx_new();
  void *a = zmq_socket(ctx, ZMQ_PAIR), *b = zmq_socket(ctx, ZMQ_PAIR);
  CHECK(zmq_bind(a, "inproc://wire-test") == 0);
  CHECK(zmq_connect(b, "inproc://wire-test") == 0);
  slj_Key k = key_of("k3y");
  slj_Msg m, got;
  char err[256];
  slj_msg_init(&m, "execute_request", "s1", NULL, json_pack("{s:s}", "code", "print 1"));
  slj_msg_set_topic(&m, "ident-1");
  CHECK(slj_send(a, &k, &m) == 0);
  CHECK_EQ_INT(slj_recv(b, &k, 0, &got, err, sizeof err), SLJ_OK);
  CHECK_STREQ(slj_msg_type(&got), "execute_request");
  CHECK_STREQ(json_string_value(json_object_get(got.content, "code")), "print 1");
  CHECK_EQ_INT(got.nidents, 1);
  CHECK(got.nidents == 1 && got.idents[0].len == 7 && memcmp(got.idents[0].data, "ident-1", 7) == 0);
  slj_msg_free(&got);

  /* the same message signed with another key is refused */
  slj_Key wrong = key_of("other");
  CHECK(slj_send(a, &wrong, &m) == 0);
  CHECK_EQ_INT(slj_recv(b, &k, 0, &got, err, sizeof err), SLJ_BAD_SIGNATURE);
  CHECK_CONTAINS(err, "invalid signature");
  /* unsigned, while a key is set */
  slj_Key none = {.len = 0};
  CHECK(slj_send(a, &none, &m) == 0);
  CHECK_EQ_INT(slj_recv(b, &k, 0, &got, err, sizeof err), SLJ_BAD_SIGNATURE);
  CHECK_CONTAINS(err, "missing signature");
  slj_msg_free(&m);

  /* truncated: delimiter and signature only; the next message still reads */
  zmq_send(a, "<IDS|MSG>", 9, ZMQ_SNDMORE);
  zmq_send(a, "abc", 3, 0);
  CHECK_EQ_INT(slj_recv(b, &k, 0, &got, err, sizeof err), SLJ_MALFORMED);
  CHECK_CONTAINS(err, "fewer than 5 frames");
  /* invalid JSON, correctly signed */
  const char *parts[4] = {"{oops", "{}", "{}", "{}"};
  size_t lens[4] = {5, 2, 2, 2};
  char sig[65];
  slj_sign(&k, parts, lens, sig);
  zmq_send(a, "<IDS|MSG>", 9, ZMQ_SNDMORE);
  zmq_send(a, sig, 64, ZMQ_SNDMORE);
  for (int i = 0; i < 4; i++) zmq_send(a, parts[i], lens[i], i < 3 ? ZMQ_SNDMORE : 0);
  CHECK_EQ_INT(slj_recv(b, &k, 0, &got, err, sizeof err), SLJ_MALFORMED);
  CHECK_CONTAINS(err, "header is not a JSON object");
  CHECK_EQ_INT(slj_recv(b, &k, ZMQ_DONTWAIT, &got, err, sizeof err), SLJ_NOTHING);
  zmq_close(a);
  zmq_close(b);
  zmq_ctx_term(ctx);
}

static void test_connection_file(void) {
  char path[] = "/tmp/syslab-conn-XXXXXX";
  int fd = mkstemp(path);
  CHECK(fd >= 0);
  close(fd);
  slj_Connection c;
  memset(&c, 0, sizeof c);
  strcpy(c.transport, "tcp");
  strcpy(c.ip, "127.0.0.1");
  strcpy(c.scheme, "hmac-sha256");
  c.shell_port = 5001, c.iopub_port = 5002, c.stdin_port = 5003, c.control_port = 5004, c.hb_port = 5005;
  c.key = key_of("abc");
  char err[256];
  CHECK(slj_connection_write(path, &c, err, sizeof err) == 0);
  slj_Connection r;
  CHECK(slj_connection_read(path, &r, err, sizeof err) == 0);
  CHECK_EQ_INT(r.hb_port, 5005);
  CHECK_EQ_INT(r.key.len, 3);
  char ep[128];
  slj_endpoint(&r, r.shell_port, ep, sizeof ep);
  CHECK_STREQ(ep, "tcp://127.0.0.1:5001");
  FILE *f = fopen(path, "w");
  fputs("{\"transport\": \"tcp\", \"ip\": \"127.0.0.1\"}", f);
  fclose(f);
  CHECK(slj_connection_read(path, &r, err, sizeof err) != 0);
  CHECK_CONTAINS(err, "shell_port");
  unlink(path);
}

int main(void) {
  RUN(test_sign_known_answer);
  RUN(test_header_fields);
  RUN(test_json_text_repairs_utf8);
  RUN(test_base64);
  RUN(test_round_trip_and_rejections);
  RUN(test_connection_file);
  return check_summary();
}
