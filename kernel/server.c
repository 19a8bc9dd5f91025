/*
** server.c - the kernel's sockets and threads (`syslab kernel -f FILE`).
**
** Four threads, each owning its sockets (ZeroMQ sockets are not shared):
**   main       shell ROUTER and stdin ROUTER: runs requests one at a time
**   control    control ROUTER: interrupt, shutdown and kernel_info are
**              answered even while the main thread runs a long cell
**   publisher  IOPub XPUB: forwards what the other threads publish through
**              inproc PUSH sockets, and greets each new subscriber with
**              iopub_welcome (protocol 5.5)
**   heartbeat  echoes whatever arrives on the hb REP socket
** SIGINT is ignored while idle and interrupts the running cell otherwise;
** every blocking call retries on EINTR.
**
** A kernel must not outlive the client that started it. Like ipykernel,
** when JPY_PARENT_PID is set (jupyter_client and `syslab report` set it)
** the control thread checks every 100 ms whether its parent process has
** changed, and if so shuts the kernel down; a cell that does not stop
** within a second is not waited for. The parent's pid is polled rather
** than asked for with prctl(PR_SET_PDEATHSIG), because that signal fires
** when the *thread* that started the kernel ends, which in a threaded
** client (a Python executor, say) is not the client's death.
*/
#include "server.h"

#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <zmq.h>

#include "kernel.h"
#include "publish.h"
#include "shell.h"

#define PUBLISH_ENDPOINT "inproc://syslab-publish"
#define POLL_MS 100
#define STOP_FRAME "syslab-publisher-stop"

static slj_Kernel *the_kernel; /* for the signal handler */
/* the connection file, when the client made it for this kernel alone
** (SYSLAB_REMOVE_CONNECTION_FILE=1, set by `syslab report`): it holds the
** message key, so a kernel whose client died removes it and its folder */
static char owned_connection_file[4096];

/* -------------------------------------------------------------- heartbeat */

static void *heartbeat_thread(void *arg) {
  slj_Kernel *K = arg;
  for (;;) {
    zmq_msg_t msg;
    zmq_msg_init(&msg);
    int rc = zmq_msg_recv(&msg, K->hb, 0);
    if (rc < 0) {
      zmq_msg_close(&msg);
      if (errno == EINTR) continue;
      break; /* ETERM: the context is shutting down */
    }
    while (zmq_msg_send(&msg, K->hb, 0) < 0 && errno == EINTR) {
    }
    zmq_msg_close(&msg);
  }
  zmq_close(K->hb);
  return NULL;
}

/* -------------------------------------------------------------- publisher */

static void forward(void *from, void *to, int *stop) {
  int more = 1, first = 1;
  while (more) {
    zmq_msg_t part;
    zmq_msg_init(&part);
    if (zmq_msg_recv(&part, from, 0) < 0) {
      zmq_msg_close(&part);
      return;
    }
    more = zmq_msg_more(&part);
    if (first && !more && zmq_msg_size(&part) == strlen(STOP_FRAME) &&
        memcmp(zmq_msg_data(&part), STOP_FRAME, zmq_msg_size(&part)) == 0) {
      *stop = 1;
      zmq_msg_close(&part);
      return;
    }
    first = 0;
    while (zmq_msg_send(&part, to, more ? ZMQ_SNDMORE : 0) < 0 && errno == EINTR) {
    }
    zmq_msg_close(&part);
  }
}

static void welcome(slj_Kernel *K, void *iopub) {
  zmq_msg_t sub;
  zmq_msg_init(&sub);
  if (zmq_msg_recv(&sub, iopub, ZMQ_DONTWAIT) < 0) {
    zmq_msg_close(&sub);
    return;
  }
  const unsigned char *d = zmq_msg_data(&sub);
  if (zmq_msg_size(&sub) >= 1 && d[0] == 1) {
    slj_Msg m;
    slj_msg_init(&m, "iopub_welcome", K->session, NULL,
                 json_pack("{s:s%}", "subscription", (const char *)d + 1, zmq_msg_size(&sub) - 1));
    slj_msg_set_topic(&m, "iopub_welcome");
    slj_send(iopub, &K->conn.key, &m);
    slj_msg_free(&m);
  }
  zmq_msg_close(&sub);
}

typedef struct {
  slj_Kernel *K;
  void *pull;
} Publisher;

static void *publisher_thread(void *arg) {
  Publisher *p = arg;
  slj_Kernel *K = p->K;
  int stop = 0;
  while (!stop) {
    zmq_pollitem_t items[2] = {{p->pull, 0, ZMQ_POLLIN, 0}, {K->iopub, 0, ZMQ_POLLIN, 0}};
    int rc = zmq_poll(items, 2, -1);
    if (rc < 0) {
      if (errno == EINTR) continue;
      break;
    }
    if (items[1].revents & ZMQ_POLLIN) welcome(K, K->iopub);
    if (items[0].revents & ZMQ_POLLIN) forward(p->pull, K->iopub, &stop);
  }
  /* what other threads queued before the stop still goes out */
  zmq_pollitem_t item = {p->pull, 0, ZMQ_POLLIN, 0};
  while (zmq_poll(&item, 1, 0) > 0) forward(p->pull, K->iopub, &stop);
  zmq_close(p->pull);
  zmq_close(K->iopub);
  return NULL;
}

/* ---------------------------------------------------------------- control */

/* the parent has gone: the kernel was re-parented (to init or a subreaper) */
static int orphaned(const slj_Kernel *K) { return K->parent > 0 && getppid() != K->parent; }

static void handle_control(slj_Kernel *K, slj_Msg *req) {
  const char *type = slj_msg_type(req);
  void *push = K->publish_control;
  slj_publish_status(K, push, req, "busy");
  if (strcmp(type, "kernel_info_request") == 0) {
    slj_reply(K, K->control, req, "kernel_info_reply", slj_kernel_info());
  } else if (strcmp(type, "interrupt_request") == 0) {
    if (atomic_load(&K->executing)) sl_interrupt();
    slj_reply(K, K->control, req, "interrupt_reply", json_pack("{s:s}", "status", "ok"));
  } else if (strcmp(type, "shutdown_request") == 0) {
    int restart = json_is_true(json_object_get(req->content, "restart"));
    K->restart = restart;
    json_t *content = json_pack("{s:s, s:b}", "status", "ok", "restart", restart);
    slj_publish(K, push, req, "shutdown_reply", json_deep_copy(content));
    slj_reply(K, K->control, req, "shutdown_reply", content);
    atomic_store(&K->stopping, 1);
    sl_interrupt(); /* a running cell stops at its next safe point */
    zmq_send(K->wake_main, "", 0, ZMQ_DONTWAIT);
  } else {
    slj_log("ignoring unknown control message type '%s'", type);
  }
  slj_publish_status(K, push, req, "idle");
}

/* one waiting request from a socket, verified and handled; a message that
** fails its checks is logged and dropped; -1 when the socket itself failed */
static int serve_one(slj_Kernel *K, void *socket, const char *name, void (*handle)(slj_Kernel *, slj_Msg *)) {
  slj_Msg req;
  char err[256];
  slj_Status st = slj_recv(socket, &K->conn.key, ZMQ_DONTWAIT, &req, err, sizeof err);
  if (st == SLJ_OK) {
    handle(K, &req);
    slj_msg_free(&req);
  } else if (st != SLJ_NOTHING) {
    slj_log("%s: %s", name, err);
    if (st == SLJ_SOCKET_ERROR) return -1;
  }
  return 0;
}

static void *control_thread(void *arg) {
  slj_Kernel *K = arg;
  while (!atomic_load(&K->stopping)) {
    if (orphaned(K)) {
      slj_log("the parent process %d has gone: shutting down", (int)K->parent);
      atomic_store(&K->stopping, 1);
      sl_interrupt();
      zmq_send(K->wake_main, "", 0, ZMQ_DONTWAIT);
      /* nobody is left to ask for a clean stop: give the cell a second */
      for (int i = 0; i < 100 && !atomic_load(&K->main_done); i++) {
        struct timespec ts = {0, 10 * 1000 * 1000};
        nanosleep(&ts, NULL);
      }
      if (owned_connection_file[0]) {
        unlink(owned_connection_file);
        char *slash = strrchr(owned_connection_file, '/');
        if (slash && slash != owned_connection_file) *slash = '\0', rmdir(owned_connection_file);
      }
      if (!atomic_load(&K->main_done)) _exit(1);
      break;
    }
    zmq_pollitem_t item = {K->control, 0, ZMQ_POLLIN, 0};
    int rc = zmq_poll(&item, 1, POLL_MS);
    if (rc < 0) {
      if (errno == EINTR) continue;
      break;
    }
    if (rc == 0) continue;
    if (serve_one(K, K->control, "control", handle_control) != 0) break;
  }
  /* A shutdown_request interrupted the running cell, and every long command
  ** stops within a second; one stuck where no interrupt reaches (inside a
  ** single product of the BLAS, say) is not waited for past two seconds,
  ** so the kernel always ends when asked to. */
  for (int i = 0; i < 200 && atomic_load(&K->stopping) && !atomic_load(&K->main_done); i++) {
    struct timespec ts = {0, 10 * 1000 * 1000};
    nanosleep(&ts, NULL);
  }
  if (atomic_load(&K->stopping) && !atomic_load(&K->main_done)) {
    slj_log("the running cell did not stop within two seconds of the shutdown request: exiting");
    _exit(0);
  }
  return NULL;
}

/* ---------------------------------------------------------------- signals */

static void on_sigint(int sig) {
  (void)sig;
  if (the_kernel && atomic_load(&the_kernel->executing)) sl_interrupt();
}

/* ------------------------------------------------------------------ setup */

static void *open_socket(slj_Kernel *K, int type, int port, const char *name) {
  void *s = zmq_socket(K->ctx, type);
  int zero = 0, one = 1;
  int64_t max_size = (int64_t)1 << 30; /* a message over 1 GiB is refused, not buffered */
  zmq_setsockopt(s, ZMQ_LINGER, &zero, sizeof zero);
  zmq_setsockopt(s, ZMQ_MAXMSGSIZE, &max_size, sizeof max_size);
  if (type == ZMQ_ROUTER) zmq_setsockopt(s, ZMQ_ROUTER_HANDOVER, &one, sizeof one);
  if (type == ZMQ_XPUB) {
    int linger = 1000; /* last messages (idle, shutdown_reply) still reach clients */
    zmq_setsockopt(s, ZMQ_XPUB_VERBOSE, &one, sizeof one);
    zmq_setsockopt(s, ZMQ_LINGER, &linger, sizeof linger);
  }
  char endpoint[512];
  slj_endpoint(&K->conn, port, endpoint, sizeof endpoint);
  if (zmq_bind(s, endpoint) != 0) {
    slj_log("cannot bind the %s socket to %s: %s", name, endpoint, zmq_strerror(errno));
    zmq_close(s);
    return NULL;
  }
  return s;
}

static void *connect_push(slj_Kernel *K) {
  void *s = zmq_socket(K->ctx, ZMQ_PUSH);
  int zero = 0;
  zmq_setsockopt(s, ZMQ_LINGER, &zero, sizeof zero);
  zmq_connect(s, PUBLISH_ENDPOINT);
  return s;
}

int slj_kernel_run(const char *path) {
  static slj_Kernel kernel;
  slj_Kernel *K = &kernel;
  char err[512];
  if (slj_connection_read(path, &K->conn, err, sizeof err) != 0) {
    fprintf(stderr, "syslab kernel: %s\n", err);
    return 2;
  }
  slj_uuid(K->session);
  /* as ipykernel: JPY_PARENT_PID names the parent to watch; if the kernel
  ** was started through something else (a wrapper), that is watched */
  const char *jpy = getenv("JPY_PARENT_PID");
  if (jpy && atoi(jpy) > 1 && getppid() > 1) K->parent = getppid();
  const char *owned = getenv("SYSLAB_REMOVE_CONNECTION_FILE");
  if (owned && strcmp(owned, "1") == 0) snprintf(owned_connection_file, sizeof owned_connection_file, "%s", path);
  if (K->conn.key.len > 0) slj_sign_warm_start(); /* while the sockets are bound */
  K->ctx = zmq_ctx_new();
  K->shell = open_socket(K, ZMQ_ROUTER, K->conn.shell_port, "shell");
  K->control = open_socket(K, ZMQ_ROUTER, K->conn.control_port, "control");
  K->stdin_socket = open_socket(K, ZMQ_ROUTER, K->conn.stdin_port, "stdin");
  K->iopub = open_socket(K, ZMQ_XPUB, K->conn.iopub_port, "iopub");
  K->hb = open_socket(K, ZMQ_REP, K->conn.hb_port, "heartbeat");
  if (!K->shell || !K->control || !K->stdin_socket || !K->iopub || !K->hb) {
    slj_sign_warm_join();
    return 1;
  }
  Publisher pub = {K, zmq_socket(K->ctx, ZMQ_PULL)};
  zmq_bind(pub.pull, PUBLISH_ENDPOINT);
  K->publish_main = connect_push(K);
  K->publish_control = connect_push(K);
  K->wake_listen = zmq_socket(K->ctx, ZMQ_PULL);
  zmq_bind(K->wake_listen, "inproc://syslab-wake");
  K->wake_main = zmq_socket(K->ctx, ZMQ_PUSH);
  int zero = 0;
  zmq_setsockopt(K->wake_main, ZMQ_LINGER, &zero, sizeof zero);
  zmq_connect(K->wake_main, "inproc://syslab-wake");
  K->S = sl_new();

  the_kernel = K;
  struct sigaction sa;
  memset(&sa, 0, sizeof sa);
  sa.sa_handler = on_sigint;
  sigaction(SIGINT, &sa, NULL);
  signal(SIGPIPE, SIG_IGN);

  pthread_t hb_tid, pub_tid, ctl_tid;
  pthread_create(&hb_tid, NULL, heartbeat_thread, K);
  pthread_create(&pub_tid, NULL, publisher_thread, &pub);
  pthread_create(&ctl_tid, NULL, control_thread, K);
  slj_sign_warm_join();
  slj_publish_status(K, K->publish_main, NULL, "starting");

  while (!atomic_load(&K->stopping)) {
    if (K->npending > 0) { /* set aside while aborting after a failed cell */
      slj_Msg req = K->pending[0];
      memmove(K->pending, K->pending + 1, --K->npending * sizeof *K->pending);
      slj_handle_shell(K, &req);
      slj_msg_free(&req);
      continue;
    }
    zmq_pollitem_t items[2] = {{K->shell, 0, ZMQ_POLLIN, 0}, {K->wake_listen, 0, ZMQ_POLLIN, 0}};
    int rc = zmq_poll(items, 2, POLL_MS);
    if (rc < 0) {
      if (errno == EINTR) continue;
      slj_log("shell poll failed: %s", zmq_strerror(errno));
      break;
    }
    if (!(items[0].revents & ZMQ_POLLIN)) continue;
    if (serve_one(K, K->shell, "shell", slj_handle_shell) != 0) break;
  }

  atomic_store(&K->stopping, 1);
  atomic_store(&K->main_done, 1);
  pthread_join(ctl_tid, NULL);
  zmq_send(K->publish_main, STOP_FRAME, strlen(STOP_FRAME), 0);
  pthread_join(pub_tid, NULL);
  zmq_close(K->publish_main);
  zmq_close(K->publish_control);
  zmq_close(K->wake_main);
  zmq_close(K->wake_listen);
  zmq_close(K->shell);
  zmq_close(K->control);
  zmq_close(K->stdin_socket);
  zmq_ctx_shutdown(K->ctx); /* wakes the heartbeat thread with ETERM */
  pthread_join(hb_tid, NULL);
  zmq_ctx_term(K->ctx);
  the_kernel = NULL;
  for (size_t i = 0; i < K->npending; i++) slj_msg_free(&K->pending[i]);
  sl_free(K->S);
  slj_history_free(&K->history);
  return 0;
}
