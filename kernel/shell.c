/*
** shell.c - the kernel's request handlers (the interpreter side): what
** each shell message does, what kernel_info says (asked on control too),
** and the host through which a running cell's output reaches IOPub. The
** server (server.c) calls in here; replies and IOPub messages go out
** through publish.c, never back through the server.
**
** Every request is wrapped in status busy ... idle with the request as the
** parent. An execute publishes execute_input, then the cell's outputs as
** they happen, then the reply, then idle (ipykernel's order). Text output is
** buffered per stream and flushed when the other stream or a display comes
** next, or every 50 ms, so print loops do not flood IOPub with messages;
** no stream message carries more than 1 MiB.
**
** One cell's text output is capped (10 MiB by default, SYSLAB_OUTPUT_LIMIT
** to change it): past the cap the text is dropped and counted, and a last
** line on stderr says how much, as JupyterLab users know from its own
** output limits. A print loop that runs for hours cannot then fill the
** browser, the notebook file or the kernel's memory.
*/
#include "shell.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <zmq.h>

#include "publish.h"
#include "slutil.h"

/* ------------------------------------------------------ code-point offsets */

/* The protocol counts cursor positions in Unicode code points, the engine
** in bytes of UTF-8. */
static size_t bytes_from_codepoints(const char *s, size_t cp) {
  size_t i = 0;
  while (s[i] && cp > 0) {
    i++;
    while (s[i] && ((unsigned char)s[i] & 0xC0) == 0x80) i++;
    cp--;
  }
  return i;
}

static size_t codepoints_from_bytes(const char *s, size_t bytes) {
  size_t cp = 0;
  for (size_t i = 0; i < bytes && s[i]; i++)
    if (((unsigned char)s[i] & 0xC0) != 0x80) cp++;
  return cp;
}

/* ------------------------------------------------------------- the host */

typedef struct Exec {
  slj_Kernel *K;
  const slj_Msg *req;
  int allow_stdin;
  char *buf[2];
  size_t len[2], cap[2];
  int last_stream; /* the stream written last, for ordering */
  double last_flush;
  json_t *payload;
  size_t shown, limit; /* bytes of text sent by this cell, and the cap */
  size_t dropped;      /* bytes past the cap */
} Exec;

#define DEFAULT_OUTPUT_LIMIT ((size_t)10 << 20)

static size_t output_limit(void) {
  const char *env = getenv("SYSLAB_OUTPUT_LIMIT");
  char *end;
  double x = env ? strtod(env, &end) : 0;
  return x >= 1 && x < 1e15 ? (size_t)x : DEFAULT_OUTPUT_LIMIT;
}

/* A stream message carries at most this much text as it travels, JSON
** escapes counted, so that with its header, parent header and signature it
** stays within 1 MiB: one print of a huge string leaves in several
** messages, each under jupyter_server's IOPub data rate limit. */
#define STREAM_CHUNK (((size_t)1 << 20) - 16 * 1024)

/* the bytes one byte of text takes in a JSON string as jansson writes it */
static size_t json_width(unsigned char c) {
  if (c == '"' || c == '\\' || c == '\b' || c == '\f' || c == '\n' || c == '\r' || c == '\t') return 2;
  return c < 0x20 ? 6 : 1;
}

static void flush_stream(Exec *x, int s) {
  if (x->len[s] == 0) return;
  json_t *text = slj_json_text(x->buf[s], x->len[s]); /* valid UTF-8 from here on */
  const char *t = json_string_value(text);
  size_t len = json_string_length(text);
  for (size_t at = 0; at < len;) {
    size_t end = at, width = 0;
    while (end < len && width + json_width((unsigned char)t[end]) <= STREAM_CHUNK)
      width += json_width((unsigned char)t[end++]);
    while (end < len && end > at && ((unsigned char)t[end] & 0xC0) == 0x80) end--; /* whole characters */
    json_t *content =
        json_pack("{s:s, s:o}", "name", s == SL_STDERR ? "stderr" : "stdout", "text", json_stringn(t + at, end - at));
    slj_publish(x->K, x->K->publish_main, x->req, "stream", content);
    at = end;
  }
  json_decref(text);
  x->len[s] = 0;
}

static void flush_all(Exec *x) {
  /* the older stream first, so stdout and stderr keep their order */
  int other = x->last_stream == SL_STDERR ? SL_STDOUT : SL_STDERR;
  flush_stream(x, other);
  flush_stream(x, x->last_stream);
  x->last_flush = slU_now();
}

static void host_write(void *ud, sl_Stream stream, const char *text, size_t len) {
  Exec *x = ud;
  int s = stream == SL_STDERR ? SL_STDERR : SL_STDOUT;
  if (x->shown + len > x->limit) {
    size_t keep = x->limit - x->shown;
    while (keep > 0 && ((unsigned char)text[keep] & 0xC0) == 0x80) keep--; /* whole UTF-8 characters */
    x->dropped += len - keep;
    len = keep;
    if (len == 0) {
      x->shown = x->limit;
      return;
    }
  }
  x->shown += len;
  if (x->len[1 - s] > 0) flush_stream(x, 1 - s);
  if (x->len[s] > 0 && x->len[s] + len > STREAM_CHUNK) flush_all(x); /* whole writes per message */
  if (x->len[s] + len + 1 > x->cap[s]) {
    x->cap[s] = (x->len[s] + len + 1) * 2;
    x->buf[s] = realloc(x->buf[s], x->cap[s]);
  }
  memcpy(x->buf[s] + x->len[s], text, len);
  x->len[s] += len;
  x->last_stream = s;
  if (slU_now() - x->last_flush > 0.05 || x->len[s] >= STREAM_CHUNK) flush_all(x);
}

static int is_text_mime(const char *mime) {
  return strncmp(mime, "text/", 5) == 0 || strcmp(mime, "image/svg+xml") == 0 ||
         strcmp(mime, "application/javascript") == 0;
}

static json_t *bundle_json(const sl_Bundle *b) {
  json_t *data = json_object();
  for (int i = 0; i < b->n; i++) {
    const sl_MimePart *p = &b->parts[i];
    json_t *value;
    if (strcmp(p->mime, "application/json") == 0 || strstr(p->mime, "+json")) {
      json_error_t e;
      value = json_loadb(p->data, p->len, JSON_DECODE_ANY, &e);
      if (!value) value = slj_json_text(p->data, p->len);
    } else if (is_text_mime(p->mime)) {
      value = slj_json_text(p->data, p->len);
    } else {
      char *b64 = slj_base64(p->data, p->len);
      value = json_string(b64);
      free(b64);
    }
    json_object_set_new(data, p->mime, value);
  }
  return data;
}

static void host_display(void *ud, const sl_Bundle *b, const char *display_id, int update) {
  Exec *x = ud;
  flush_all(x);
  json_t *content = json_pack("{s:o, s:{}}", "data", bundle_json(b), "metadata");
  if (display_id) json_object_set_new(content, "transient", json_pack("{s:s}", "display_id", display_id));
  slj_publish(x->K, x->K->publish_main, x->req, update ? "update_display_data" : "display_data", content);
}

static void host_clear(void *ud, int wait) {
  Exec *x = ud;
  flush_all(x);
  slj_publish(x->K, x->K->publish_main, x->req, "clear_output", json_pack("{s:b}", "wait", wait));
}

static void host_page(void *ud, const char *text) {
  Exec *x = ud;
  json_array_append_new(x->payload, json_pack("{s:s, s:{s:o}, s:i}", "source", "page", "data", "text/plain",
                                              slj_json_text(text, strlen(text)), "start", 0));
}

/* Asks the client on the stdin channel; waits in short slices so that an
** interrupt or a shutdown still gets through. */
static int host_input(void *ud, const char *prompt, int password, char **answer) {
  Exec *x = ud;
  slj_Kernel *K = x->K;
  if (!x->allow_stdin) return -1;
  flush_all(x);
  /* a stale reply from an earlier, interrupted question must not answer this one */
  slj_Msg stale;
  char err[256];
  while (slj_recv(K->stdin_socket, &K->conn.key, ZMQ_DONTWAIT, &stale, err, sizeof err) == SLJ_OK) slj_msg_free(&stale);
  slj_Msg m;
  slj_msg_init(&m, "input_request", K->session, x->req,
               json_pack("{s:s, s:b}", "prompt", prompt, "password", password));
  slj_msg_copy_route(&m, x->req);
  int rc = slj_send(K->stdin_socket, &K->conn.key, &m);
  slj_msg_free(&m);
  if (rc != 0) return -1;
  while (!sl_interrupted() && !atomic_load(&K->stopping)) {
    zmq_pollitem_t item = {K->stdin_socket, 0, ZMQ_POLLIN, 0};
    int n = zmq_poll(&item, 1, 50);
    if (n < 0 && errno != EINTR) return -1;
    if (n <= 0) continue;
    slj_Msg reply;
    slj_Status st = slj_recv(K->stdin_socket, &K->conn.key, ZMQ_DONTWAIT, &reply, err, sizeof err);
    if (st != SLJ_OK) {
      if (st != SLJ_NOTHING) slj_log("stdin: %s", err);
      continue;
    }
    if (strcmp(slj_msg_type(&reply), "input_reply") == 0) {
      const char *value = json_string_value(json_object_get(reply.content, "value"));
      *answer = strdup(value ? value : "");
      slj_msg_free(&reply);
      return 0;
    }
    slj_msg_free(&reply);
  }
  *answer = strdup("");
  return 0; /* interrupted: the command sees sl_interrupted() and stops */
}

/* --------------------------------------------------------------- execute */

static json_t *error_content(const sl_Error *err) {
  json_t *tb = json_array();
  const char *t = err->traceback ? err->traceback : "";
  /* red ename, as other kernels do; the lines before it show where */
  while (*t) {
    const char *nl = strchr(t, '\n');
    size_t n = nl ? (size_t)(nl - t) : strlen(t);
    if (!nl) {
      size_t en = strlen(err->ename);
      if (n >= en && strncmp(t, err->ename, en) == 0) {
        char *line = malloc(n + 32);
        snprintf(line, n + 32, "\033[0;31m%s\033[0m%.*s", err->ename, (int)(n - en), t + en);
        json_array_append_new(tb, slj_json_text(line, strlen(line)));
        free(line);
        break;
      }
    }
    json_array_append_new(tb, slj_json_text(t, n));
    t += n + (nl != NULL);
  }
  return json_pack("{s:s, s:o, s:o}", "ename", err->ename, "evalue",
                   slj_json_text(err->evalue ? err->evalue : "", err->evalue ? strlen(err->evalue) : 0), "traceback",
                   tb);
}

/* One user expression (sl_evaluate: a single expression, without output).
** An interrupt stops the one running; the ones after it are not started. */
static int evaluate_expression(slj_Kernel *K, const char *src, sl_Value *v, sl_Error *err) {
  const char *why = !src               ? "the expression is not a string"
                    : sl_interrupted() ? "not evaluated: interrupted by the user"
                                       : NULL;
  if (!why) return sl_evaluate(K->S, src, v, err);
  memset(err, 0, sizeof *err);
  snprintf(err->ename, sizeof err->ename, "%s", src ? "Interrupt" : "TypeError");
  err->evalue = strdup(why);
  slU_Text tb = {0};
  slU_add(&tb, "%s: %s", err->ename, why);
  err->traceback = tb.s;
  return -1;
}

static json_t *user_expressions(slj_Kernel *K, json_t *exprs) {
  json_t *out = json_object();
  const char *name;
  json_t *code;
  json_object_foreach(exprs, name, code) {
    sl_Value v;
    sl_Error err;
    if (evaluate_expression(K, json_string_value(code), &v, &err) == 0) {
      sl_Bundle b;
      sl_show(v, &b);
      sl_show_exact(v, &b); /* a number's exact value too, for clients that format it (the report) */
      json_object_set_new(out, name,
                          json_pack("{s:s, s:o, s:{}}", "status", "ok", "data", bundle_json(&b), "metadata"));
      sl_bundle_free(&b);
      sl_release(v);
    } else {
      json_t *e = error_content(&err);
      json_object_set_new(e, "status", json_string("error"));
      json_object_set_new(out, name, e);
      sl_error_free(&err);
    }
  }
  return out;
}

/* A NUL byte would silently end the program there: name its place instead. */
int slj_find_nul(const char *code, size_t len, int *line, int *col, char *msg, size_t size) {
  const char *nul = memchr(code, '\0', len);
  if (!nul) return 0;
  *line = 1, *col = 1;
  for (const char *p = code; p < nul; p++) {
    if (*p == '\n') *line += 1, *col = 1;
    else if (((unsigned char)*p & 0xC0) != 0x80) *col += 1; /* characters, not bytes */
  }
  snprintf(msg, size, "line %d, column %d holds a NUL byte (U+0000): code is text and cannot contain NUL characters",
           *line, *col);
  return 1;
}

/* A NUL arrives as "\u0000" in the request's JSON; the C string would end
** there and run only the code before it. It is the same error as in a
** file given to `syslab run`, with the usual traceback (the NUL shown as
** the symbol U+2400). Returns 1 with err filled, or 0. */
static int nul_error(const char *code, size_t len, sl_Error *err) {
  int line, col;
  char msg[160];
  memset(err, 0, sizeof *err);
  if (!slj_find_nul(code, len, &line, &col, msg, sizeof msg)) return 0;
  snprintf(err->ename, sizeof err->ename, "SyntaxError");
  err->evalue = strdup(msg);
  err->line = line, err->col = col;
  const char *p = code, *end = code + len;
  for (int l = 1; l < line; l++) p = memchr(p, '\n', (size_t)(end - p)) + 1;
  const char *eol = memchr(p, '\n', (size_t)(end - p));
  slU_Text tb = {0};
  slU_add(&tb, "line %d, column %d:\n    ", line, col);
  for (const char *q = p; q < (eol ? eol : end); q++) {
    if (*q == '\0') slU_add(&tb, "\u2400");
    else slU_add_len(&tb, q, 1);
  }
  slU_add(&tb, "\n    %*s^\nSyntaxError: %s", col - 1, "", msg);
  err->traceback = tb.s;
  return 1;
}

/* The requests waiting on the shell socket behind a failed cell, taken off
** it before that cell's reply (take_queued) and answered after its idle
** (answer_queued). */
typedef struct Queued {
  slj_Msg *msgs;
  size_t n, cap;
} Queued;

static void take_queued(slj_Kernel *K, Queued *q);
static void answer_queued(slj_Kernel *K, Queued *q);

/* the note on a cell whose text passed the cap, the last flush */
static void finish_output(Exec *x) {
  if (x->dropped > 0) {
    char note[256];
    int n = snprintf(note, sizeof note,
                     "\n[output truncated: %zu more bytes were not shown; a cell shows at most %zu bytes of text "
                     "(SYSLAB_OUTPUT_LIMIT)]\n",
                     x->dropped, x->limit);
    x->limit = (size_t)-1;
    host_write(x, SL_STDERR, note, (size_t)n);
  }
  flush_all(x);
  free(x->buf[0]);
  free(x->buf[1]);
}

static int execute(slj_Kernel *K, slj_Msg *req, Queued *behind) {
  json_t *c = req->content;
  const char *code = json_string_value(json_object_get(c, "code"));
  int silent = json_is_true(json_object_get(c, "silent"));
  int store_history = !silent && !json_is_false(json_object_get(c, "store_history"));
  json_t *stop = json_object_get(c, "stop_on_error");
  int stop_on_error = stop ? json_is_true(stop) : 1;
  if (!code) {
    slj_reply(K, K->shell, req, "execute_reply",
              json_pack("{s:s, s:s, s:s, s:[s], s:i}", "status", "error", "ename", "MessageError", "evalue",
                        "execute_request without a code string", "traceback", "execute_request without a code string",
                        "execution_count", K->execution_count));
    return -1;
  }
  if (!silent) {
    K->execution_count++;
    slj_publish(K, K->publish_main, req, "execute_input",
                json_pack("{s:O, s:i}", "code", json_object_get(c, "code"), "execution_count", K->execution_count));
  }

  Exec x;
  memset(&x, 0, sizeof x);
  x.K = K;
  x.req = req;
  x.allow_stdin = json_is_true(json_object_get(c, "allow_stdin"));
  x.payload = json_array();
  x.last_flush = slU_now();
  x.limit = output_limit();
  /* a silent cell runs, but nothing it prints is shown */
  sl_Host host = {&x, host_write, host_display, host_clear, host_input, host_page};
  sl_Host quiet = {&x, NULL, NULL, NULL, host_input, NULL};

  sl_Value result;
  sl_Error err;
  atomic_store(&K->executing, 1);
  int rc = nul_error(code, json_string_length(json_object_get(c, "code")), &err)
               ? -1
               : sl_execute(K->S, code, silent ? &quiet : &host, &result, &err);
  finish_output(&x);
  /* the user expressions are part of the request: an interrupt stops them too */
  json_t *exprs = json_object_get(c, "user_expressions");
  json_t *values = rc == 0 && json_is_object(exprs) ? user_expressions(K, exprs) : json_object();
  atomic_store(&K->executing, 0);

  char *output_text = NULL;
  if (rc == 0) {
    if (!silent && result.type != SL_NIL) {
      sl_Bundle b;
      sl_show(result, &b);
      const sl_MimePart *plain = sl_bundle_get(&b, "text/plain");
      if (plain) output_text = strdup(plain->data);
      slj_publish(
          K, K->publish_main, req, "execute_result",
          json_pack("{s:i, s:o, s:{}}", "execution_count", K->execution_count, "data", bundle_json(&b), "metadata"));
      sl_bundle_free(&b);
    }
    sl_release(result);
    slj_reply(K, K->shell, req, "execute_reply",
              json_pack("{s:s, s:i, s:o, s:o}", "status", "ok", "execution_count", K->execution_count, "payload",
                        x.payload, "user_expressions", values));
  } else {
    json_decref(x.payload);
    json_t *content = error_content(&err);
    if (!silent) slj_publish(K, K->publish_main, req, "error", json_deep_copy(content));
    /* What is queued now was sent before the client could know this cell
    ** failed ("Run All"): it is taken off the socket before the reply, since
    ** a request sent after the reply is a new decision and must run. */
    if (stop_on_error) take_queued(K, behind);
    json_object_set_new(content, "status", json_string("error"));
    json_object_set_new(content, "execution_count", json_integer(K->execution_count));
    json_object_set_new(content, "user_expressions", values);
    json_object_set_new(content, "payload", json_array());
    slj_reply(K, K->shell, req, "execute_reply", content);
    sl_error_free(&err);
  }
  if (store_history) slj_history_add(&K->history, K->execution_count, code, output_text);
  free(output_text);
  return rc;
}

/* ----------------------------------------------------- the other requests */

/* a completion or inspection request's code and cursor (in code points, as
** the protocol counts them; a missing or negative cursor is the end) */
static const char *code_and_cursor(const slj_Msg *req, size_t *cp) {
  const char *code = json_string_value(json_object_get(req->content, "code"));
  json_t *pos = json_object_get(req->content, "cursor_pos");
  if (!code) code = "";
  *cp = json_is_integer(pos) && json_integer_value(pos) >= 0 ? (size_t)json_integer_value(pos)
                                                             : codepoints_from_bytes(code, strlen(code));
  return code;
}

static void complete(slj_Kernel *K, slj_Msg *req) {
  size_t cp;
  const char *code = code_and_cursor(req, &cp);
  size_t cursor = bytes_from_codepoints(code, cp);
  sl_Completion c;
  sl_complete(K->S, code, cursor, &c);
  json_t *matches = json_array();
  for (size_t i = 0; i < c.n; i++) json_array_append_new(matches, json_string(c.matches[i]));
  slj_reply(K, K->shell, req, "complete_reply",
            json_pack("{s:s, s:o, s:I, s:I, s:{}}", "status", "ok", "matches", matches, "cursor_start",
                      (json_int_t)codepoints_from_bytes(code, c.start), "cursor_end",
                      (json_int_t)codepoints_from_bytes(code, c.end), "metadata"));
  sl_completion_free(&c);
}

static void inspect(slj_Kernel *K, slj_Msg *req) {
  size_t cp;
  const char *code = code_and_cursor(req, &cp);
  int detail = (int)json_integer_value(json_object_get(req->content, "detail_level"));
  sl_Bundle b;
  int found = sl_inspect(K->S, code, bytes_from_codepoints(code, cp), detail, &b);
  slj_reply(K, K->shell, req, "inspect_reply",
            json_pack("{s:s, s:b, s:o, s:{}}", "status", "ok", "found", found, "data",
                      found ? bundle_json(&b) : json_object(), "metadata"));
  sl_bundle_free(&b);
}

static void is_complete(slj_Kernel *K, slj_Msg *req) {
  const char *code = json_string_value(json_object_get(req->content, "code"));
  char indent[64];
  sl_Completeness r = sl_is_complete(code ? code : "", indent, sizeof indent);
  json_t *content = json_pack("{s:s}", "status",
                              r == SL_COMPLETE     ? "complete"
                              : r == SL_INCOMPLETE ? "incomplete"
                                                   : "invalid");
  if (r == SL_INCOMPLETE) json_object_set_new(content, "indent", json_string(indent));
  slj_reply(K, K->shell, req, "is_complete_reply", content);
}

json_t *slj_kernel_info(void) {
  /* No highlighter knows syslab; Ruby's reads its lexical shape best (#
  ** comments, strings in either quote, numbers with _ and exponents, ranges
  ** 1..n, blocks in braces, the keywords if/else/for/in/and/or/not and
  ** true/false/nil, NAME? for help) and is in Pygments (nbconvert) and in
  ** JupyterLab's CodeMirror. Python's marked the `?` of `train?` as an
  ** error and knew neither true, false nor nil (docs/kernel.md). */
  json_t *language =
      json_pack("{s:s, s:s, s:s, s:s, s:s, s:s}", "name", SYSLAB_LANGUAGE, "version", SYSLAB_VERSION, "mimetype",
                "text/x-syslab", "file_extension", ".syslab", "pygments_lexer", "ruby", "codemirror_mode", "ruby");
  /* the documentation, installed under share/doc/syslab/docs, or in the source tree */
  json_t *links = json_array();
  static const char *docs[][2] = {{"syslab commands", "commands.md"}, {"syslab language", "language.md"}};
  for (int i = 0; i < 2; i++) {
    char installed[64], path[4096], url[4200];
#ifdef SYSLAB_SOURCE_DIR
    char source[4096];
    snprintf(source, sizeof source, "%s/docs/%s", SYSLAB_SOURCE_DIR, docs[i][1]);
#else
    const char *source = NULL;
#endif
    snprintf(installed, sizeof installed, "share/doc/syslab/docs/%s", docs[i][1]);
    sl_program_file(installed, source, path, sizeof path);
    snprintf(url, sizeof url, "file://%s", path);
    json_array_append_new(links, json_pack("{s:s, s:s}", "text", docs[i][0], "url", url));
  }
  return json_pack("{s:s, s:s, s:s, s:s, s:o, s:s, s:o, s:[]}", "status", "ok", "protocol_version",
                   SLJ_PROTOCOL_VERSION, "implementation", "syslab", "implementation_version", SYSLAB_VERSION,
                   "language_info", language, "banner",
                   "syslab " SYSLAB_VERSION " - a lab kernel for machine-learning systems.\n"
                   "Type `help` for the commands, and NAME? for the help of one.",
                   "help_links", links, "supported_features");
}

void slj_handle_shell(slj_Kernel *K, slj_Msg *req) {
  const char *type = slj_msg_type(req);
  Queued behind = {NULL, 0, 0};
  slj_publish_status(K, K->publish_main, req, "busy");
  if (strcmp(type, "execute_request") == 0) {
    execute(K, req, &behind);
  } else if (strcmp(type, "kernel_info_request") == 0) {
    slj_reply(K, K->shell, req, "kernel_info_reply", slj_kernel_info());
  } else if (strcmp(type, "complete_request") == 0) {
    complete(K, req);
  } else if (strcmp(type, "inspect_request") == 0) {
    inspect(K, req);
  } else if (strcmp(type, "is_complete_request") == 0) {
    is_complete(K, req);
  } else if (strcmp(type, "history_request") == 0) {
    slj_reply(K, K->shell, req, "history_reply", slj_history_reply(&K->history, req->content));
  } else if (strcmp(type, "comm_info_request") == 0) {
    slj_reply(K, K->shell, req, "comm_info_reply", json_pack("{s:s, s:{}}", "status", "ok", "comms"));
  } else if (strcmp(type, "comm_open") == 0) {
    /* no comm targets exist: the protocol asks for an immediate close */
    json_t *id = json_object_get(req->content, "comm_id");
    slj_publish(K, K->publish_main, req, "comm_close",
                json_pack("{s:O, s:{}}", "comm_id", id ? id : json_string(""), "data"));
  } else if (strcmp(type, "comm_msg") == 0 || strcmp(type, "comm_close") == 0) {
    /* nothing is open, so there is nothing to do */
  } else if (strcmp(type, "shutdown_request") == 0) {
    int restart = json_is_true(json_object_get(req->content, "restart"));
    slj_reply(K, K->shell, req, "shutdown_reply", json_pack("{s:s, s:b}", "status", "ok", "restart", restart));
    atomic_store(&K->stopping, 1);
  } else {
    slj_log("ignoring unknown shell message type '%s'", type);
  }
  slj_publish_status(K, K->publish_main, req, "idle");
  answer_queued(K, &behind);
}

static void take_queued(slj_Kernel *K, Queued *q) {
  for (;;) {
    slj_Msg req;
    char err[256];
    slj_Status st = slj_recv(K->shell, &K->conn.key, ZMQ_DONTWAIT, &req, err, sizeof err);
    if (st == SLJ_NOTHING || st == SLJ_SOCKET_ERROR) break;
    if (st != SLJ_OK) {
      slj_log("shell: %s", err);
      continue;
    }
    if (q->n == q->cap) {
      q->cap = q->cap ? q->cap * 2 : 16;
      q->msgs = realloc(q->msgs, q->cap * sizeof *q->msgs);
      if (!q->msgs) abort();
    }
    q->msgs[q->n++] = req;
  }
}

/* After the failed cell's idle, as ipykernel does: each execute_request
** taken is answered with status "aborted" (busy, reply, idle) without
** running; other requests are kept in K->pending and handled next. */
static void answer_queued(slj_Kernel *K, Queued *q) {
  for (size_t i = 0; i < q->n; i++) {
    slj_Msg *req = &q->msgs[i];
    if (strcmp(slj_msg_type(req), "execute_request") == 0) {
      slj_publish_status(K, K->publish_main, req, "busy");
      slj_reply(K, K->shell, req, "execute_reply",
                json_pack("{s:s, s:i}", "status", "aborted", "execution_count", K->execution_count));
      slj_publish_status(K, K->publish_main, req, "idle");
      slj_msg_free(req);
    } else if (K->npending < sizeof K->pending / sizeof K->pending[0]) {
      K->pending[K->npending++] = *req;
    } else {
      slj_log("dropping a %s request: too many requests queued behind a failed cell", slj_msg_type(req));
      slj_msg_free(req);
    }
  }
  free(q->msgs);
}
