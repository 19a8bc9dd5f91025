/*
** fuzz_wire.c - libFuzzer target: the Jupyter wire-message parser and its
** HMAC signature check. The input is cut into frames at each 0xFF byte and
** sent over an in-process ZeroMQ pair, as a client's message would arrive;
** the first byte chooses whether a key is set. A valid signature is not
** expected by chance: a second pass signs the frames correctly so that the
** JSON parsing behind the check is reached too.
*/
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <zmq.h>

#include "kernel/wire.h"

static void *ctx, *tx, *rx;

static void send_frames(const uint8_t *data, size_t size, const slj_Key *sign_with) {
  /* frames: split at 0xFF */
  const uint8_t *frames[64];
  size_t lens[64], n = 0, start = 0;
  for (size_t i = 0; i <= size && n < 64; i++)
    if (i == size || data[i] == 0xFF) {
      frames[n] = data + start;
      lens[n++] = i - start;
      start = i + 1;
    }
  char sig[65];
  size_t d = 0;
  while (d < n && !(lens[d] == 9 && memcmp(frames[d], "<IDS|MSG>", 9) == 0)) d++;
  if (sign_with && d + 5 < n) {
    const char *parts[4];
    size_t plens[4];
    for (int i = 0; i < 4; i++) parts[i] = (const char *)frames[d + 2 + i], plens[i] = lens[d + 2 + i];
    slj_sign(sign_with, parts, plens, sig);
    frames[d + 1] = (const uint8_t *)sig;
    lens[d + 1] = 64;
  }
  for (size_t i = 0; i < n; i++) zmq_send(tx, frames[i], lens[i], i + 1 < n ? ZMQ_SNDMORE : 0);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (!ctx) {
    ctx = zmq_ctx_new();
    tx = zmq_socket(ctx, ZMQ_PAIR);
    rx = zmq_socket(ctx, ZMQ_PAIR);
    zmq_bind(rx, "inproc://fuzz");
    zmq_connect(tx, "inproc://fuzz");
  }
  if (size < 1) return 0;
  slj_Key key = {{0}, 0};
  if (data[0] & 1) {
    memcpy(key.bytes, "a-secret-key", 12);
    key.len = 12;
  }
  for (int pass = 0; pass < 2; pass++) {
    send_frames(data + 1, size - 1, pass && key.len ? &key : NULL);
    slj_Msg msg;
    char err[512];
    if (slj_recv(rx, &key, 0, &msg, err, sizeof err) == SLJ_OK) {
      slj_msg_type(&msg);
      slj_msg_id(&msg);
      slj_msg_free(&msg);
    }
  }
  return 0;
}
