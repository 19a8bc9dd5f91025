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
** set those parameters already.
*/
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <mpi.h>

#include "transport.h"

struct slD_Group {
  MPI_Comm comm;       /* rank 0 is the coordinator */
  MPI_Comm inter;      /* spawned groups: the intercommunicator, else MPI_COMM_NULL */
  int rank, size;
  int lost;            /* a send was abandoned: a clean disconnect could block */
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

static slD_Group *spawn(char *const *argv, int n, char *err, size_t errlen) {
  setenv("OMPI_MCA_orte_enable_recovery", "1", 0);
  setenv("OMPI_MCA_rmaps_base_oversubscribe", "1", 0);
  pthread_mutex_lock(&lock);
  slD_Group *g = NULL;
  if (start(err, errlen) == 0) {
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
  g->lost = 1;  /* MPI may still read `copy`: it stays allocated */
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
  if (g->lost) MPI_Comm_free(&g->inter);
  else MPI_Comm_disconnect(&g->inter);
  pthread_mutex_unlock(&lock);
  free(g);
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
    SLD_TRANSPORT_VERSION, world, spawn, parent, rank, size, send, poll_msg, close_group, finalize,
};

const slD_Transport *slD_transport(void) { return &transport; }
