/*
** mpi.c - the MPI module: the transport of mpi/transport.h on Open MPI (or
** any MPI-3 library), built as syslab_mpi.so and loaded at run time by
** engine/search/dist.c. This is the only file that includes <mpi.h>.
**
** Choices that follow from "a peer may die":
**  - every communicator returns errors instead of aborting the job
**    (MPI_ERRORS_RETURN), and the caller turns them into messages;
**  - sends are MPI_Isend tested until a deadline, from a copy of the data,
**    so a send to a dead peer is abandoned (the copy is then leaked on
**    purpose: MPI may still own it) instead of blocking forever;
**  - receives use a matched probe (MPI_Improbe + MPI_Mrecv), so two threads
**    polling for different tags never steal each other's message;
**  - MPI is initialised with MPI_THREAD_SERIALIZED and one mutex guards
**    every call: a worker's heartbeat thread and its main thread take turns.
** A process started outside mpirun (the Jupyter kernel asking for workers)
** becomes an MPI singleton on first use; it asks the runtime to survive
** the death of a spawned worker (orte_enable_recovery) and to place more
** workers than cores when asked (rmaps_base_oversubscribe), unless the user
** set those parameters already. How many workers may be asked for is the
** caller's rule (engine/search/dist.c: the slots and the descriptors).
**
** The singleton's runtime is a daemon it forks (Open MPI 4: orted), the
** parent of the workers. Three things keep it from outliving this process
** or spoiling its output (see "the runtime" below): it gets /dev/null and a
** pipe instead of our standard streams and inherits no other descriptor
** (so a shell's $(...) around syslab returns when syslab ends, whatever
** the daemon does), it gets SIGTERM when this process dies (a death signal
** set in the fork), and what it prints comes through a thread that drops
** the runtime's own log lines ("[host:pid] PMIX ERROR: ...",
** "ORTE_ERROR_LOG") and passes everything else, the workers' messages
** included. A spawn that has not finished after its timeout stops the
** daemon, which makes MPI_Comm_spawn return an error instead of hanging.
**
** The non-blocking transfers of data-parallel training send and receive
** the caller's buffers in place (no copy: gradients are large), in pieces
** of at most 1 GiB so that any size fits MPI's int counts; the pieces of
** one transfer share its tag and are matched in order (MPI's messages
** between two processes on one tag do not overtake one another).
*/
#define _GNU_SOURCE
#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <time.h>
#include <unistd.h>

#include <mpi.h>

#include "transport.h"

struct slD_Group {
  MPI_Comm comm;  /* rank 0 is the coordinator */
  MPI_Comm inter; /* spawned groups: the intercommunicator, else MPI_COMM_NULL */
  int rank, size;
  int lost; /* a send was abandoned: a clean disconnect could block */
};

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static slD_Group world_group;
static int have_world;

static double now(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

static void pause_us(long us) {
  struct timespec t = {0, us * 1000};
  nanosleep(&t, NULL);
}

static void mpi_message(int rc, const char *what, char *err, size_t errlen) {
  char text[MPI_MAX_ERROR_STRING];
  int len = 0;
  if (MPI_Error_string(rc, text, &len) != MPI_SUCCESS) snprintf(text, sizeof text, "error %d", rc);
  snprintf(err, errlen, "%s failed: %s", what, text);
}

static int start(char *err, size_t errlen) {
  int done = 0;
  MPI_Initialized(&done);
  if (done) return 0;
  int provided = 0;
  int rc = MPI_Init_thread(NULL, NULL, MPI_THREAD_SERIALIZED, &provided);
  if (rc != MPI_SUCCESS) {
    snprintf(err, errlen, "MPI could not start (MPI_Init_thread returned %d)", rc);
    return -1;
  }
  if (provided < MPI_THREAD_SERIALIZED) {
    snprintf(err, errlen, "the MPI library offers thread level %d; syslab needs MPI_THREAD_SERIALIZED", provided);
    return -1;
  }
  MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
  MPI_Comm_set_errhandler(MPI_COMM_SELF, MPI_ERRORS_RETURN);
  return 0;
}

static slD_Group *world(char *err, size_t errlen) {
  pthread_mutex_lock(&lock);
  slD_Group *g = NULL;
  if (have_world || start(err, errlen) == 0) {
    if (!have_world) {
      world_group.comm = MPI_COMM_WORLD;
      world_group.inter = MPI_COMM_NULL;
      MPI_Comm_rank(MPI_COMM_WORLD, &world_group.rank);
      MPI_Comm_size(MPI_COMM_WORLD, &world_group.size);
      have_world = 1;
    }
    g = &world_group;
  }
  pthread_mutex_unlock(&lock);
  return g;
}

static slD_Group *merged(MPI_Comm inter, int high) {
  slD_Group *g = calloc(1, sizeof *g);
  g->inter = inter;
  MPI_Comm_set_errhandler(inter, MPI_ERRORS_RETURN);
  MPI_Intercomm_merge(inter, high, &g->comm);
  MPI_Comm_set_errhandler(g->comm, MPI_ERRORS_RETURN);
  MPI_Comm_rank(g->comm, &g->rank);
  MPI_Comm_size(g->comm, &g->size);
  return g;
}

/* ------------------------------------------------------------ the runtime */

static void write_all(int fd, const char *p, size_t n) {
  while (n > 0) {
    ssize_t w = write(fd, p, n);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) return;
    p += w, n -= (size_t)w;
  }
}

static int runtime_started; /* the singleton's daemon was forked, its streams ours */
static int runtime_stopped; /* a spawn timed out and the daemon was stopped */
static volatile sig_atomic_t forking_runtime;
static volatile sig_atomic_t initializing; /* in MPI_Init: a failure there ends the process */
static int real_stderr = -1;               /* our stderr while the standard streams are the daemon's */

/* in the child of a fork while the daemon is being started: it dies with us */
static void child_after_fork(void) {
  if (forking_runtime) prctl(PR_SET_PDEATHSIG, SIGTERM);
}

/* Open MPI's and PMIx's log lines start "[host:pid] "; MPI_ERRORS_ARE_FATAL
** reports start "*** " */
static int runtime_log(const char *line) {
  if (strncmp(line, "*** ", 4) == 0 || strcmp(line, "***") == 0) return 1;
  if (line[0] != '[') return 0;
  const char *close = strchr(line, ']'), *colon = strchr(line, ':');
  if (!close || !colon || colon > close || colon + 1 == close) return 0;
  for (const char *p = colon + 1; p < close; p++)
    if (!isdigit((unsigned char)*p)) return 0;
  return close[1] == ' ';
}

/* the runtime's help texts ("An MPI communication peer process has
** unexpectedly disconnected...") stand between two lines of dashes */
static int dashes(const char *line) {
  size_t n = strspn(line, "-");
  return n >= 20 && line[n] == '\0';
}

/* 1 when the line is the runtime's, not a worker's: dropped */
static int runtime_noise(const char *line, int *help) {
  if (dashes(line)) {
    *help = *help ? 0 : 1;
    return 1;
  }
  if (*help && ++*help > 80) *help = 0; /* a help text never closed: stop dropping */
  return *help || runtime_log(line);
}

/* the pipe the daemon writes to, and a copy of our stderr of the thread's
** own (fd 2 is the pipe while the daemon starts) */
typedef struct {
  int in, out;
} Streams;

/* passes the daemon's output (and its workers') to our stderr, line by
** line, without the runtime's own log lines */
static void *runtime_output(void *arg) {
  Streams *streams = arg;
  int fd = streams->in, out = streams->out, help = 0;
  free(streams);
  char buf[8192];
  size_t n = 0;
  for (;;) {
    ssize_t got = read(fd, buf + n, sizeof buf - 1 - n);
    if (got < 0 && errno == EINTR) continue;
    if (got <= 0) break;
    n += (size_t)got;
    size_t start = 0;
    for (size_t i = 0; i < n; i++) {
      if (buf[i] != '\n') continue;
      buf[i] = '\0';
      if (!runtime_noise(buf + start, &help)) {
        buf[i] = '\n';
        write_all(out, buf + start, i + 1 - start);
      }
      start = i + 1;
    }
    if (start == 0 && n == sizeof buf - 1) { /* one long line: pass it on */
      write_all(out, buf, n);
      n = 0;
    }
    memmove(buf, buf + start, n - start);
    n -= start;
  }
  if (n > 0) {
    buf[n] = '\0';
    if (!runtime_noise(buf, &help)) write_all(out, buf, n);
  }
  close(fd);
  close(out);
  return NULL;
}

/* Before the daemon is forked: every descriptor this process has from its
** caller (or opened itself) is closed on exec, and its standard streams are
** /dev/null and a pipe to runtime_output, kept in saved[] meanwhile. */
static int isolate_begin(int saved[3]) {
  fflush(NULL);
  DIR *d = opendir("/proc/self/fd");
  if (d) {
    for (struct dirent *e; (e = readdir(d));) {
      int fd = atoi(e->d_name);
      if (fd > 2 && fd != dirfd(d)) fcntl(fd, F_SETFD, fcntl(fd, F_GETFD) | FD_CLOEXEC);
    }
    closedir(d);
  }
  int p[2], null = open("/dev/null", O_RDONLY | O_CLOEXEC);
  if (null < 0 || pipe2(p, O_CLOEXEC) != 0) {
    if (null >= 0) close(null);
    return -1;
  }
  for (int i = 0; i < 3; i++) saved[i] = fcntl(i, F_DUPFD_CLOEXEC, 3);
  real_stderr = saved[2];
  int out = fcntl(2, F_DUPFD_CLOEXEC, 3);
  dup2(null, 0), dup2(p[1], 1), dup2(p[1], 2); /* dup2 leaves these inheritable */
  close(null), close(p[1]);
  pthread_t t;
  Streams *streams = malloc(sizeof *streams);
  if (streams) streams->in = p[0], streams->out = out;
  if (!streams || out < 0 || pthread_create(&t, NULL, runtime_output, streams) != 0) {
    free(streams);
    if (out >= 0) close(out);
    close(p[0]); /* no reader: what the daemon writes is lost (EPIPE), not blocked */
  } else {
    pthread_detach(t);
  }
  return 0;
}

static void isolate_end(const int saved[3]) {
  real_stderr = -1;
  for (int i = 0; i < 3; i++)
    if (saved[i] >= 0) dup2(saved[i], i), close(saved[i]);
}

/* our child the daemon, or -1 */
static pid_t daemon_pid(void) {
  pid_t me = getpid(), found = -1;
  DIR *d = opendir("/proc");
  if (!d) return -1;
  for (struct dirent *e; found < 0 && (e = readdir(d));) {
    if (!isdigit((unsigned char)e->d_name[0])) continue;
    char path[300], stat[512];
    snprintf(path, sizeof path, "/proc/%s/stat", e->d_name);
    FILE *f = fopen(path, "r");
    if (!f) continue;
    size_t n = fread(stat, 1, sizeof stat - 1, f);
    fclose(f);
    stat[n] = '\0';
    const char *open = strchr(stat, '('), *close = strrchr(stat, ')');
    int ppid = 0;
    if (!open || !close || sscanf(close + 1, " %*c %d", &ppid) != 1 || ppid != me) continue;
    if (strncmp(open + 1, "orted", 5) == 0 || strncmp(open + 1, "prted", 5) == 0) found = (pid_t)atoi(e->d_name);
  }
  closedir(d);
  return found;
}

typedef struct {
  pthread_mutex_t lock;
  pthread_cond_t wake;
  int done, fired;
  double seconds;
} Watch;

/* stops the daemon when a spawn outlasts its time: SIGTERM, then SIGKILL */
static void *spawn_watch(void *arg) {
  Watch *w = arg;
  struct timespec until;
  clock_gettime(CLOCK_REALTIME, &until);
  double t = (double)until.tv_sec + (double)until.tv_nsec * 1e-9 + w->seconds;
  pthread_mutex_lock(&w->lock);
  for (int sig = SIGTERM; !w->done;) {
    until.tv_sec = (time_t)t;
    until.tv_nsec = (long)((t - (double)until.tv_sec) * 1e9);
    if (pthread_cond_timedwait(&w->wake, &w->lock, &until) != ETIMEDOUT || w->done) continue;
    if (!w->fired && initializing) { /* Open MPI ends a singleton whose daemon fails in MPI_Init: say why */
      char note[160];
      int n = snprintf(note, sizeof note,
                       "syslab: MPI did not start within %.0f s (its runtime daemon does not answer); "
                       "stopping the daemon ends this process\n",
                       w->seconds);
      write_all(real_stderr >= 0 ? real_stderr : 2, note, (size_t)n);
    }
    w->fired = 1;
    pid_t d = daemon_pid();
    if (d > 0) kill(d, sig);
    sig = SIGKILL;
    t += 2;
  }
  pthread_mutex_unlock(&w->lock);
  return NULL;
}

static slD_Group *spawn(char *const *argv, int n, double timeout, char *err, size_t errlen) {
  setenv("OMPI_MCA_orte_enable_recovery", "1", 0);
  setenv("OMPI_MCA_rmaps_base_oversubscribe", "1", 0);
  pthread_mutex_lock(&lock);
  if (runtime_stopped) {
    pthread_mutex_unlock(&lock);
    snprintf(err, errlen,
             "the MPI runtime of this process was stopped after a failed start of workers: "
             "restart the kernel (or the program) to start workers again");
    return NULL;
  }
  int saved[3] = {-1, -1, -1}, isolated = 0;
  int initialized = 0;
  MPI_Initialized(&initialized);
  if (!runtime_started && !initialized) {
    static int registered;
    if (!registered) registered = pthread_atfork(NULL, NULL, child_after_fork) == 0;
    isolated = isolate_begin(saved) == 0;
    forking_runtime = 1;
  }
  Watch w = {PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER, 0, 0, timeout};
  pthread_t watcher;
  int watching = pthread_create(&watcher, NULL, spawn_watch, &w) == 0;
  slD_Group *g = NULL;
  initializing = 1;
  int started = start(err, errlen);
  initializing = 0;
  if (started == 0) {
    runtime_started = 1;
    MPI_Comm inter;
    int *codes = calloc((size_t)n, sizeof *codes);
    int rc = MPI_Comm_spawn(argv[0], (char **)(argv + 1), n, MPI_INFO_NULL, 0, MPI_COMM_SELF, &inter, codes);
    if (rc != MPI_SUCCESS) {
      mpi_message(rc, "starting workers (MPI_Comm_spawn)", err, errlen);
    } else {
      g = merged(inter, 0);
      for (int i = 0; i < n; i++)
        if (codes[i] != MPI_SUCCESS) {
          mpi_message(codes[i], "starting a worker (MPI_Comm_spawn)", err, errlen);
          g->lost = 1;
        }
    }
    free(codes);
  }
  forking_runtime = 0;
  if (isolated) isolate_end(saved);
  if (watching) {
    pthread_mutex_lock(&w.lock);
    w.done = 1;
    pthread_cond_signal(&w.wake);
    pthread_mutex_unlock(&w.lock);
    pthread_join(watcher, NULL);
  }
  if (w.fired) {
    runtime_stopped = 1;
    snprintf(err, errlen,
             "starting %d worker%s did not finish within %.0f s, so the MPI runtime was stopped; "
             "restart the kernel (or the program) to start workers again",
             n, n == 1 ? "" : "s", timeout);
    free(g); /* its communicators went with the runtime */
    g = NULL;
  }
  pthread_mutex_unlock(&lock);
  return g;
}

static slD_Group *parent(char *err, size_t errlen) {
  pthread_mutex_lock(&lock);
  slD_Group *g = NULL;
  if (start(err, errlen) == 0) {
    MPI_Comm inter;
    MPI_Comm_get_parent(&inter);
    if (inter == MPI_COMM_NULL) snprintf(err, errlen, "this process was not started by a coordinator (no MPI parent)");
    else g = merged(inter, 1);
  }
  pthread_mutex_unlock(&lock);
  return g;
}

static slD_Group *dup_group(slD_Group *g, char *err, size_t errlen) {
  slD_Group *d = calloc(1, sizeof *d);
  pthread_mutex_lock(&lock);
  int rc = MPI_Comm_dup(g->comm, &d->comm);
  pthread_mutex_unlock(&lock);
  if (rc != MPI_SUCCESS) {
    mpi_message(rc, "duplicating the group (MPI_Comm_dup)", err, errlen);
    free(d);
    return NULL;
  }
  MPI_Comm_set_errhandler(d->comm, MPI_ERRORS_RETURN);
  d->inter = MPI_COMM_NULL;
  d->rank = g->rank;
  d->size = g->size;
  return d;
}

/* ------------------------------------------------- non-blocking transfers */

#define PIECE ((size_t)1 << 30)

struct slD_Request {
  slD_Group *g;
  int n, send;
  MPI_Request req[]; /* one per piece */
};

static slD_Request *transfer(slD_Group *g, int peer, int tag, void *data, size_t n, int send, char *err,
                             size_t errlen) {
  size_t pieces = n / PIECE + 1;
  if (pieces > 4096) return snprintf(err, errlen, "a transfer of %zu bytes is too large", n), NULL;
  slD_Request *r = calloc(1, sizeof *r + pieces * sizeof(MPI_Request));
  r->g = g, r->n = (int)pieces, r->send = send;
  pthread_mutex_lock(&lock);
  int rc = MPI_SUCCESS, k = 0;
  for (; k < r->n && rc == MPI_SUCCESS; k++) {
    size_t at = (size_t)k * PIECE, len = n - at < PIECE ? n - at : PIECE;
    rc = send ? MPI_Isend((char *)data + at, (int)len, MPI_BYTE, peer, tag, g->comm, &r->req[k])
              : MPI_Irecv((char *)data + at, (int)len, MPI_BYTE, peer, tag, g->comm, &r->req[k]);
  }
  pthread_mutex_unlock(&lock);
  if (rc != MPI_SUCCESS) {
    mpi_message(rc, send ? "a send (MPI_Isend)" : "a receive (MPI_Irecv)", err, errlen);
    r->n = k - 1; /* the pieces started before the failure are given up */
    r->g->lost = 1;
    for (int i = 0; i < r->n; i++) MPI_Request_free(&r->req[i]);
    free(r);
    return NULL;
  }
  return r;
}

static slD_Request *isend(slD_Group *g, int to, int tag, const void *data, size_t n, char *err, size_t errlen) {
  return transfer(g, to, tag, (void *)data, n, 1, err, errlen);
}

static slD_Request *irecv(slD_Group *g, int from, int tag, void *data, size_t n, char *err, size_t errlen) {
  return transfer(g, from, tag, data, n, 0, err, errlen);
}

static void cancel(slD_Request *r) {
  if (!r) return;
  pthread_mutex_lock(&lock);
  for (int k = 0; k < r->n; k++) {
    if (r->req[k] == MPI_REQUEST_NULL) continue;
    if (!r->send) MPI_Cancel(&r->req[k]);
    MPI_Request_free(&r->req[k]);
  }
  pthread_mutex_unlock(&lock);
  r->g->lost = 1;
  free(r);
}

static int test(slD_Request *r, char *err, size_t errlen) {
  int done = 0;
  pthread_mutex_lock(&lock);
  int rc = MPI_Testall(r->n, r->req, &done, MPI_STATUSES_IGNORE);
  pthread_mutex_unlock(&lock);
  if (rc != MPI_SUCCESS) {
    mpi_message(rc, r->send ? "a send" : "a receive", err, errlen);
    cancel(r);
    return -1;
  }
  if (done) free(r);
  return done;
}

static int rank(const slD_Group *g) { return g->rank; }
static int size(const slD_Group *g) { return g->size; }

static int send(slD_Group *g, int to, int tag, const void *data, size_t n, double timeout) {
  if (n > INT_MAX) return -1;
  void *copy = malloc(n ? n : 1);
  memcpy(copy, data, n);
  MPI_Request req;
  pthread_mutex_lock(&lock);
  int rc = MPI_Isend(copy, (int)n, MPI_BYTE, to, tag, g->comm, &req);
  pthread_mutex_unlock(&lock);
  if (rc != MPI_SUCCESS) {
    free(copy);
    return -1;
  }
  double deadline = now() + timeout;
  long wait = 10;
  for (;;) {
    int done = 0;
    pthread_mutex_lock(&lock);
    rc = MPI_Test(&req, &done, MPI_STATUS_IGNORE);
    pthread_mutex_unlock(&lock);
    if (rc != MPI_SUCCESS) break;
    if (done) {
      free(copy);
      return 0;
    }
    if (now() > deadline) break;
    pause_us(wait);
    if (wait < 1000) wait *= 2;
  }
  g->lost = 1; /* MPI may still read `copy`: it stays allocated */
  return -1;
}

static int poll_msg(slD_Group *g, int from, int tag, int *src, int *got_tag, void **data, size_t *n) {
  int flag = 0, count = 0;
  MPI_Message msg;
  MPI_Status st;
  pthread_mutex_lock(&lock);
  int rc = MPI_Improbe(from < 0 ? MPI_ANY_SOURCE : from, tag < 0 ? MPI_ANY_TAG : tag, g->comm, &flag, &msg, &st);
  if (rc == MPI_SUCCESS && flag) {
    MPI_Get_count(&st, MPI_BYTE, &count);
    *data = malloc(count ? (size_t)count : 1);
    rc = MPI_Mrecv(*data, count, MPI_BYTE, &msg, &st);
  }
  pthread_mutex_unlock(&lock);
  if (rc != MPI_SUCCESS || !flag) {
    if (flag) free(*data);
    return 0;
  }
  *n = (size_t)count;
  if (src) *src = st.MPI_SOURCE;
  if (got_tag) *got_tag = st.MPI_TAG;
  return 1;
}

static void close_group(slD_Group *g) {
  if (!g || g == &world_group) return;
  pthread_mutex_lock(&lock);
  /* The merged communicator is freed, not disconnected: Open MPI 4 blocks
  ** for ever when both are disconnected. A disconnect also waits for every
  ** pending message, so a group with an abandoned send is only freed. */
  MPI_Comm_free(&g->comm);
  if (g->inter != MPI_COMM_NULL) { /* a duplicate (dup_group) has none */
    if (g->lost) MPI_Comm_free(&g->inter);
    else MPI_Comm_disconnect(&g->inter);
  }
  pthread_mutex_unlock(&lock);
  free(g);
}

static void abandon(slD_Group *g) {
  if (!g || g == &world_group) return;
  /* A duplicate is kept, not freed: Open MPI would give its context id to
  ** the next duplicate, which would then be handed this one's late messages
  ** under their old sequence numbers, and a failed call cannot agree with
  ** its peers that none is still on its way (docs/scaling.md, "Closing a
  ** call"). One communicator per failed call is what that costs. */
  if (g->inter == MPI_COMM_NULL) {
    free(g);
    return;
  }
  g->lost = 1;
  close_group(g);
}

static int exit_status;
static double exit_after;

static void *watchdog(void *arg) {
  struct timespec t = {(time_t)exit_after, (long)((exit_after - (double)(time_t)exit_after) * 1e9)};
  nanosleep(&t, NULL);
  fflush(NULL);
  _exit(exit_status);
}

static void finalize(double timeout, int status) {
  int init = 0, fin = 0;
  MPI_Initialized(&init);
  MPI_Finalized(&fin);
  if (!init || fin) return;
  exit_status = status;
  exit_after = timeout;
  pthread_t t;
  if (pthread_create(&t, NULL, watchdog, NULL) == 0) pthread_detach(t);
  MPI_Finalize();
}

static const slD_Transport transport = {
    SLD_TRANSPORT_VERSION, world,   spawn,     parent, rank,  size, send,   poll_msg,
    close_group,           abandon, dup_group, isend,  irecv, test, cancel, finalize,
};

const slD_Transport *slD_transport(void) { return &transport; }
