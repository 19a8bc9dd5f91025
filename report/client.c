/*
** client.c - the report's Jupyter client: it talks to the kernel exactly as
** nbclient does, over the messaging protocol, so what the report tests is
** what JupyterLab sees.
**
** The kernel runs as a child process with a fresh connection file and a
** random key in a private temporary folder. Outputs are gathered from IOPub
** until the kernel reports idle for the request and the execute_reply has
** arrived: streams are merged as nbformat expects, display ids are followed
** so update_display_data rewrites earlier outputs, and clear_output honours
** wait=true by clearing just before the next output.
**
** The kernel gets JPY_PARENT_PID, as jupyter_client gives it, so it exits
** if this process dies, and its own process group, so stopping it also
** stops what it started (gnuplot). SIGINT, SIGTERM and SIGHUP only set a
** flag (slR_catch_stop_signals): every wait here polls at least every
** 100 ms, sees it, and returns, so the caller shuts the kernel down and
** removes its connection file (which holds the message key) before exiting.
*/
#include "client.h"

#include <errno.h>
#include <openssl/rand.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <netinet/in.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include <zmq.h>

#include "kernel/wire.h"
#include "slutil.h"

extern char **environ;

static volatile sig_atomic_t stop_signal;

static void on_stop(int sig) { stop_signal = sig; }

void slR_catch_stop_signals(void) {
  struct sigaction sa;
  memset(&sa, 0, sizeof sa);
  sa.sa_handler = on_stop; /* no SA_RESTART: a blocking wait returns at once */
  sigemptyset(&sa.sa_mask);
  sigaction(SIGINT, &sa, NULL);
  sigaction(SIGTERM, &sa, NULL);
  sigaction(SIGHUP, &sa, NULL);
}

int slR_stop_requested(void) { return stop_signal; }

struct slR_Kernel {
  pid_t pid;
  int exited;
  char dir[64], conn_path[128];
  slj_Connection conn;
  char session[37];
  void *ctx, *shell, *iopub, *control;
  json_t *info;
};

/* a port that is free now: the kernel binds it right after */
static int free_port(void) {
  int s = socket(AF_INET, SOCK_STREAM, 0);
  struct sockaddr_in a;
  memset(&a, 0, sizeof a);
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof a;
  int port = -1;
  if (s >= 0 && bind(s, (struct sockaddr *)&a, sizeof a) == 0 && getsockname(s, (struct sockaddr *)&a, &len) == 0)
    port = ntohs(a.sin_port);
  if (s >= 0) close(s);
  return port;
}

static int alive(slR_Kernel *k) {
  if (k->exited) return 0;
  int status;
  if (waitpid(k->pid, &status, WNOHANG) == k->pid) k->exited = 1;
  return !k->exited;
}

static void *connect_socket(slR_Kernel *k, int type, int port) {
  void *s = zmq_socket(k->ctx, type);
  int zero = 0, ivl = 10;
  zmq_setsockopt(s, ZMQ_LINGER, &zero, sizeof zero);
  zmq_setsockopt(s, ZMQ_RECONNECT_IVL, &ivl, sizeof ivl);
  if (type == ZMQ_SUB) zmq_setsockopt(s, ZMQ_SUBSCRIBE, "", 0);
  char ep[300];
  slj_endpoint(&k->conn, port, ep, sizeof ep);
  zmq_connect(s, ep);
  return s;
}

static int send_request(slR_Kernel *k, void *socket, const char *type, json_t *content, char msg_id[64]) {
  slj_Msg m;
  slj_msg_init(&m, type, k->session, NULL, content);
  if (msg_id) snprintf(msg_id, 64, "%s", slj_msg_id(&m));
  int rc = slj_send(socket, &k->conn.key, &m);
  slj_msg_free(&m);
  return rc;
}

/* the next message on socket within `wait` seconds: 1 got, 0 none */
static int receive(slR_Kernel *k, void *socket, double wait, slj_Msg *m) {
  zmq_pollitem_t item = {socket, 0, ZMQ_POLLIN, 0};
  int rc = zmq_poll(&item, 1, (long)(wait * 1000));
  if (rc <= 0) return 0;
  char err[256];
  return slj_recv(socket, &k->conn.key, ZMQ_DONTWAIT, m, err, sizeof err) == SLJ_OK;
}

static const char *parent_id(const slj_Msg *m) {
  const char *s = json_string_value(json_object_get(m->parent, "msg_id"));
  return s ? s : "";
}

static slR_Kernel *start_once(const char *const *argv, double timeout, int *exited, char *err, size_t errlen) {
  slR_Kernel *k = calloc(1, sizeof *k);
  snprintf(k->dir, sizeof k->dir, "/tmp/syslab-report-XXXXXX");
  if (!mkdtemp(k->dir)) {
    snprintf(err, errlen, "cannot create a temporary folder: %s", strerror(errno));
    free(k);
    return NULL;
  }
  snprintf(k->conn_path, sizeof k->conn_path, "%s/kernel.json", k->dir);
  strcpy(k->conn.transport, "tcp");
  strcpy(k->conn.ip, "127.0.0.1");
  strcpy(k->conn.scheme, "hmac-sha256");
  int *ports[5] = {&k->conn.shell_port, &k->conn.iopub_port, &k->conn.stdin_port, &k->conn.control_port,
                   &k->conn.hb_port};
  for (int i = 0; i < 5; i++) *ports[i] = free_port();
  unsigned char raw[16];
  RAND_bytes(raw, sizeof raw);
  for (int i = 0; i < 16; i++) snprintf((char *)k->conn.key.bytes + 2 * i, 3, "%02x", raw[i]);
  k->conn.key.len = 32;
  slj_uuid(k->session);
  if (slj_connection_write(k->conn_path, &k->conn, err, errlen) != 0) {
    rmdir(k->dir);
    free(k);
    return NULL;
  }
  char *args[16];
  int n = 0;
  for (; argv[n] && n < 15; n++) args[n] = strcmp(argv[n], "{connection_file}") == 0 ? k->conn_path : (char *)argv[n];
  args[n] = NULL;
  /* the environment, with JPY_PARENT_PID naming this process, and the
  ** connection file the kernel's to remove should this process die */
  size_t nenv = 0;
  while (environ[nenv]) nenv++;
  char **env = calloc(nenv + 3, sizeof *env), parent[64];
  size_t nkeep = 0;
  for (size_t i = 0; i < nenv; i++)
    if (strncmp(environ[i], "JPY_PARENT_PID=", 15) != 0 &&
        strncmp(environ[i], "SYSLAB_REMOVE_CONNECTION_FILE=", 30) != 0)
      env[nkeep++] = environ[i];
  snprintf(parent, sizeof parent, "JPY_PARENT_PID=%d", (int)getpid());
  env[nkeep++] = parent;
  env[nkeep++] = "SYSLAB_REMOVE_CONNECTION_FILE=1"; /* if this process dies, the kernel removes it */
  env[nkeep] = NULL;
  posix_spawnattr_t attr;
  posix_spawnattr_init(&attr);
  posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETPGROUP);
  posix_spawnattr_setpgroup(&attr, 0);
  int src = posix_spawn(&k->pid, args[0], NULL, &attr, args, env);
  posix_spawnattr_destroy(&attr);
  free(env);
  if (src != 0) {
    snprintf(err, errlen, "cannot start the kernel %s: %s", args[0], strerror(src));
    unlink(k->conn_path);
    rmdir(k->dir);
    free(k);
    return NULL;
  }
  k->ctx = zmq_ctx_new();
  k->shell = connect_socket(k, ZMQ_DEALER, k->conn.shell_port);
  k->control = connect_socket(k, ZMQ_DEALER, k->conn.control_port);
  k->iopub = connect_socket(k, ZMQ_SUB, k->conn.iopub_port);
  /* ask until it answers, as jupyter_client does: the first request may
  ** reach the socket before the kernel has bound it */
  double deadline = slU_now() + timeout;
  while (!k->info && slU_now() < deadline && alive(k) && !stop_signal) {
    char id[64];
    send_request(k, k->shell, "kernel_info_request", NULL, id);
    double until = slU_now() + 0.5;
    slj_Msg m;
    while (!k->info && slU_now() < until && receive(k, k->shell, until - slU_now(), &m)) {
      if (strcmp(slj_msg_type(&m), "kernel_info_reply") == 0) k->info = json_incref(m.content);
      slj_msg_free(&m);
    }
  }
  if (!k->info) {
    *exited = !stop_signal && !alive(k);
    snprintf(err, errlen, "the kernel %s",
             stop_signal ? "was stopped by a signal while starting"
             : alive(k)  ? "did not answer within its start-up time"
                         : "exited while starting");
    slR_kernel_stop(k);
    return NULL;
  }
  /* IOPub is live once a message arrives on it (iopub_welcome, or the status
  ** around kernel_info); only then can no output of the first cell be lost */
  slj_Msg m;
  if (receive(k, k->iopub, 2.0, &m)) slj_msg_free(&m);
  while (receive(k, k->iopub, 0, &m)) slj_msg_free(&m);
  return k;
}

/* A port found free can be taken by another program before the kernel
** binds it, and the kernel then exits: it is started again on new ports,
** as jupyter_client's restarter does (three tries in all). */
slR_Kernel *slR_kernel_start(const char *const *argv, double timeout, char *err, size_t errlen) {
  for (int attempt = 1;; attempt++) {
    int exited = 0;
    slR_Kernel *k = start_once(argv, timeout, &exited, err, errlen);
    if (k || !exited || attempt == 3) return k;
  }
}

json_t *slR_kernel_info(slR_Kernel *k) { return k->info; }

/* ------------------------------------------------------------- outputs */

typedef struct {
  json_t *outputs;     /* the cell's nbformat outputs */
  int clear_pending;   /* clear_output(wait=true) seen */
  json_t *display_ids; /* display_id -> list of output indexes */
} Collector;

static void add_output(Collector *c, json_t *out, const char *display_id) {
  if (c->clear_pending) {
    json_array_clear(c->outputs);
    json_object_clear(c->display_ids);
    c->clear_pending = 0;
  }
  /* consecutive stream text of one stream is one output, as nbformat merges it */
  size_t n = json_array_size(c->outputs);
  if (n && strcmp(json_string_value(json_object_get(out, "output_type")), "stream") == 0) {
    json_t *last = json_array_get(c->outputs, n - 1);
    if (strcmp(json_string_value(json_object_get(last, "output_type")), "stream") == 0 &&
        json_equal(json_object_get(last, "name"), json_object_get(out, "name"))) {
      const char *a = json_string_value(json_object_get(last, "text")),
                 *b = json_string_value(json_object_get(out, "text"));
      size_t la = strlen(a ? a : ""), lb = strlen(b ? b : "");
      char *joined = malloc(la + lb + 1);
      memcpy(joined, a ? a : "", la);
      memcpy(joined + la, b ? b : "", lb + 1);
      json_object_set_new(last, "text", json_string(joined));
      free(joined);
      json_decref(out);
      return;
    }
  }
  if (display_id) {
    json_t *list = json_object_get(c->display_ids, display_id);
    if (!list) json_object_set_new(c->display_ids, display_id, list = json_array());
    json_array_append_new(list, json_integer((json_int_t)n));
  }
  json_array_append_new(c->outputs, out);
}

static json_t *metadata_for(json_t *content, const char *display_id);

static void update_display(Collector *c, const char *display_id, json_t *content) {
  json_t *list = json_object_get(c->display_ids, display_id);
  size_t i;
  json_t *index;
  json_array_foreach(list, i, index) {
    json_t *out = json_array_get(c->outputs, (size_t)json_integer_value(index));
    json_object_set(out, "data", json_object_get(content, "data"));
    json_object_set_new(out, "metadata", metadata_for(content, display_id));
  }
}

static json_t *metadata_for(json_t *content, const char *display_id) {
  json_t *md = json_object_get(content, "metadata");
  md = json_is_object(md) ? json_deep_copy(md) : json_object();
  /* progress bars are marked, so a report can leave them out */
  if (display_id && strncmp(display_id, "syslab-progress-", 16) == 0)
    json_object_set_new(md, "syslab", json_pack("{s:b}", "progress", 1));
  return md;
}

static void handle_iopub(Collector *c, slj_Msg *m, int *busy_done) {
  const char *type = slj_msg_type(m);
  json_t *content = m->content;
  const char *display_id = json_string_value(json_object_get(json_object_get(content, "transient"), "display_id"));
  if (strcmp(type, "status") == 0) {
    const char *state = json_string_value(json_object_get(content, "execution_state"));
    if (state && strcmp(state, "idle") == 0) *busy_done = 1;
  } else if (strcmp(type, "stream") == 0) {
    add_output(c,
               json_pack("{s:s, s:O, s:O}", "output_type", "stream", "name", json_object_get(content, "name"), "text",
                         json_object_get(content, "text")),
               NULL);
  } else if (strcmp(type, "display_data") == 0 || strcmp(type, "execute_result") == 0) {
    int result = strcmp(type, "execute_result") == 0;
    json_t *out = json_pack("{s:s, s:O, s:o}", "output_type", type, "data", json_object_get(content, "data"),
                            "metadata", metadata_for(content, display_id));
    if (result) json_object_set(out, "execution_count", json_object_get(content, "execution_count"));
    if (display_id && json_object_get(c->display_ids, display_id)) update_display(c, display_id, content);
    add_output(c, out, display_id);
  } else if (strcmp(type, "update_display_data") == 0) {
    if (display_id) update_display(c, display_id, content);
  } else if (strcmp(type, "clear_output") == 0) {
    if (json_is_true(json_object_get(content, "wait"))) {
      c->clear_pending = 1;
    } else {
      json_array_clear(c->outputs);
      json_object_clear(c->display_ids);
    }
  } else if (strcmp(type, "error") == 0) {
    add_output(
        c,
        json_pack("{s:s, s:O, s:O, s:O}", "output_type", "error", "ename", json_object_get(content, "ename"), "evalue",
                  json_object_get(content, "evalue"), "traceback", json_object_get(content, "traceback")),
        NULL);
  }
}

slR_CellStatus slR_execute(slR_Kernel *k, const char *code, double timeout, json_t **outputs, int *execution_count) {
  Collector c = {json_array(), 0, json_object()};
  char id[64];
  *execution_count = 0;
  send_request(k, k->shell, "execute_request",
               json_pack("{s:s, s:b, s:b, s:{}, s:b, s:b}", "code", code, "silent", 0, "store_history", 1,
                         "user_expressions", "allow_stdin", 0, "stop_on_error", 1),
               id);
  int idle = 0, replied = 0, interrupted = 0;
  slR_CellStatus status = SLR_CELL_OK;
  double deadline = slU_now() + timeout;
  while (!(idle && replied)) {
    if (stop_signal) {
      status = SLR_CELL_STOPPED;
      break;
    }
    if (!alive(k)) {
      status = SLR_CELL_DIED;
      break;
    }
    if (slU_now() > deadline) {
      if (interrupted) break; /* even the interrupt did not stop it */
      send_request(k, k->control, "interrupt_request", NULL, NULL);
      interrupted = 1;
      status = SLR_CELL_TIMEOUT;
      deadline = slU_now() + 5;
    }
    zmq_pollitem_t items[2] = {{k->iopub, 0, ZMQ_POLLIN, 0}, {k->shell, 0, ZMQ_POLLIN, 0}};
    if (zmq_poll(items, 2, 100) <= 0) continue;
    slj_Msg m;
    char err[256];
    if ((items[0].revents & ZMQ_POLLIN) &&
        slj_recv(k->iopub, &k->conn.key, ZMQ_DONTWAIT, &m, err, sizeof err) == SLJ_OK) {
      if (strcmp(parent_id(&m), id) == 0) handle_iopub(&c, &m, &idle);
      slj_msg_free(&m);
    }
    if ((items[1].revents & ZMQ_POLLIN) &&
        slj_recv(k->shell, &k->conn.key, ZMQ_DONTWAIT, &m, err, sizeof err) == SLJ_OK) {
      if (strcmp(parent_id(&m), id) == 0 && strcmp(slj_msg_type(&m), "execute_reply") == 0) {
        replied = 1;
        *execution_count = (int)json_integer_value(json_object_get(m.content, "execution_count"));
        const char *st = json_string_value(json_object_get(m.content, "status"));
        if (status == SLR_CELL_OK && st && strcmp(st, "ok") != 0) status = SLR_CELL_ERROR;
      }
      slj_msg_free(&m);
    }
  }
  json_decref(c.display_ids);
  *outputs = c.outputs;
  return status;
}

/* user_expressions of a silent request: only the reply matters, since a
** silent request publishes no output; what IOPub says about it is left for
** the next request's filter (it goes by parent message id) */
slR_CellStatus slR_evaluate(slR_Kernel *k, json_t *expressions, double timeout, json_t **results) {
  char id[64];
  *results = NULL;
  send_request(k, k->shell, "execute_request",
               json_pack("{s:s, s:b, s:b, s:O, s:b, s:b}", "code", "", "silent", 1, "store_history", 0,
                         "user_expressions", expressions, "allow_stdin", 0, "stop_on_error", 0),
               id);
  double deadline = slU_now() + timeout;
  int interrupted = 0;
  slR_CellStatus status = SLR_CELL_OK;
  for (;;) {
    if (stop_signal) return SLR_CELL_STOPPED;
    if (!alive(k)) return SLR_CELL_DIED;
    if (slU_now() > deadline) {
      if (interrupted) return SLR_CELL_TIMEOUT;
      send_request(k, k->control, "interrupt_request", NULL, NULL);
      interrupted = 1;
      status = SLR_CELL_TIMEOUT;
      deadline = slU_now() + 5;
    }
    slj_Msg m;
    if (!receive(k, k->shell, 0.1, &m)) continue;
    int mine = strcmp(parent_id(&m), id) == 0 && strcmp(slj_msg_type(&m), "execute_reply") == 0;
    if (mine) {
      json_t *ue = json_object_get(m.content, "user_expressions");
      *results = json_is_object(ue) ? json_incref(ue) : json_object();
      const char *st = json_string_value(json_object_get(m.content, "status"));
      if (status == SLR_CELL_OK && st && strcmp(st, "ok") != 0) status = SLR_CELL_ERROR;
    }
    slj_msg_free(&m);
    if (mine) return status;
  }
}

void slR_kernel_stop(slR_Kernel *k) {
  if (!k) return;
  if (alive(k)) {
    send_request(k, k->control, "shutdown_request", json_pack("{s:b}", "restart", 0), NULL);
    /* when stopping for a signal, the kernel gets a moment, not three seconds */
    double until = slU_now() + (stop_signal ? 0.5 : 3);
    while (alive(k) && slU_now() < until) {
      struct timespec ts = {0, 2 * 1000 * 1000};
      nanosleep(&ts, NULL);
    }
    if (alive(k)) {
      kill(-k->pid, SIGKILL); /* its process group: gnuplot too */
      kill(k->pid, SIGKILL);
      while (waitpid(k->pid, NULL, 0) < 0 && errno == EINTR) {
      }
    }
  }
  if (k->ctx) {
    zmq_close(k->shell);
    zmq_close(k->control);
    zmq_close(k->iopub);
    zmq_ctx_term(k->ctx);
  }
  json_decref(k->info);
  unlink(k->conn_path);
  rmdir(k->dir);
  free(k);
}
