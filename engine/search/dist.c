/*
** dist.c - the process's place in a job, the MPI module loader, and the
** task farm (see dist.h for the protocol).
**
** The module is found, in order, at $SYSLAB_MPI_MODULE, next to an
** installed program (<prefix>/lib/syslab/syslab_mpi.so, from
** <prefix>/bin/syslab), and in the build tree (lang/layout.c). It is opened with
** RTLD_GLOBAL because Open MPI's own plugins resolve libmpi's symbols
** through the global namespace.
**
** The coordinator is one thread polling for messages: asking for the next
** task and writing results take microseconds to milliseconds, so it never
** leaves a worker's BEAT unanswered for long. A worker has two threads:
** the main one runs tasks (which may take minutes), a second one sends
** BEATs and watches for the coordinator's answers.
*/
#define _GNU_SOURCE
#include <ctype.h>
#include <dlfcn.h>
#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <sched.h>
#include <strings.h>
#include <sys/resource.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "dist.h"

enum { TAG_HELLO = 11, TAG_TASK, TAG_RESULT, TAG_BEAT, TAG_STOP, TAG_ASK, TAG_ANSWER };

/* ------------------------------------------------------------ the process */

static int env_int(const char *const *names, int otherwise) {
  for (int i = 0; names[i]; i++) {
    const char *v = getenv(names[i]);
    if (v && *v) return atoi(v);
  }
  return otherwise;
}

/* Read once, at the first question, before this process may have started
** MPI itself: a singleton (a kernel that spawned workers) has PMIx
** variables of its own and is still no mpirun job. */
static int env_rank = -1, env_size = -1;

static void read_env(void) {
  static const char *const ranks[] = {"OMPI_COMM_WORLD_RANK", "PMIX_RANK", "PMI_RANK", NULL};
  static const char *const sizes[] = {"OMPI_COMM_WORLD_SIZE", "PMI_SIZE", NULL};
  if (env_size >= 0) return;
  env_rank = env_int(ranks, 0);
  env_size = env_int(sizes, 1);
  /* PMIx gives the rank but not always the size: a rank means a job */
  if (env_size == 1 && getenv("PMIX_RANK")) env_size = 2;
}

int slS_env_rank(void) {
  read_env();
  return env_rank;
}

int slS_env_size(void) {
  read_env();
  return env_size;
}

double slS_timeout(void) {
  const char *v = getenv("SYSLAB_MPI_TIMEOUT");
  double t = v ? atof(v) : 0;
  return t > 0 ? t : 30.0;
}

/* ----------------------------------------------------- how many workers */

/* "host slots=N" per line of an Open MPI hostfile; a line without slots=
** counts one; -1 when it cannot be read */
static long hostfile_slots(const char *path) {
  size_t len;
  char why[512], *text = slF_read_file(path, "an Open MPI hostfile", 1, &len, why, sizeof why);
  if (!text) return -1;
  long total = 0;
  for (char *line = text, *next; line; line = next) {
    next = strchr(line, '\n');
    if (next) *next++ = '\0';
    char *hash = strchr(line, '#');
    if (hash) *hash = '\0';
    char *p = line;
    while (isspace((unsigned char)*p)) p++;
    if (!*p) continue;
    const char *slots = strstr(p, "slots=");
    long n = slots && (slots == p || isspace((unsigned char)slots[-1])) ? atol(slots + 6) : 1;
    total += n > 0 ? n : 0;
  }
  free(text);
  return total;
}

/* Slurm's CPUs of the job: SLURM_NTASKS, else SLURM_JOB_CPUS_PER_NODE ("4(x2),2") */
static long slurm_slots(void) {
  const char *v = getenv("SLURM_NTASKS");
  if (v && atol(v) > 0) return atol(v);
  v = getenv("SLURM_JOB_CPUS_PER_NODE");
  if (!v || !*v) return -1;
  long total = 0;
  for (const char *p = v; *p;) {
    char *end;
    long cpus = strtol(p, &end, 10), times = 1;
    if (end == p) return -1;
    p = end;
    if (strncmp(p, "(x", 2) == 0) {
      times = strtol(p + 2, &end, 10);
      p = *end == ')' ? end + 1 : end;
    }
    total += cpus * times;
    if (*p == ',') p++;
    else if (*p) return -1;
  }
  return total;
}

static long cpu_slots(void) {
  cpu_set_t set;
  if (sched_getaffinity(0, sizeof set, &set) == 0 && CPU_COUNT(&set) > 0) return CPU_COUNT(&set);
  long n = sysconf(_SC_NPROCESSORS_ONLN);
  return n > 0 ? n : 1;
}

static int truthy(const char *v) {
  return v && (strcmp(v, "1") == 0 || strcasecmp(v, "true") == 0 || strcasecmp(v, "yes") == 0);
}

/* file descriptors the runtime's daemon holds: about 25, and 3 per worker
** (measured with Open MPI 4.1); with a margin */
#define FDS_BASE 64
#define FDS_PER_WORKER 4

int slS_worker_limit(int workers, char *err, size_t errlen) {
  /* the user's own setting, read before the MPI module sets it for its spawns */
  static int user_oversubscribe = -1;
  if (user_oversubscribe < 0) user_oversubscribe = truthy(getenv("OMPI_MCA_rmaps_base_oversubscribe"));
  int oversubscribe = user_oversubscribe || truthy(getenv("SYSLAB_OVERSUBSCRIBE"));
  if (!oversubscribe) {
    char where[PATH_MAX + 64];
    const char *hostfile = getenv("OMPI_MCA_orte_default_hostfile");
    long slots = -1;
    if (hostfile && *hostfile && (slots = hostfile_slots(hostfile)) >= 0) {
      snprintf(where, sizeof where, "in the hostfile %s", hostfile);
    } else if ((slots = slurm_slots()) > 0) {
      snprintf(where, sizeof where, "in the Slurm allocation");
    } else {
      slots = cpu_slots();
      snprintf(where, sizeof where, "on this machine (its CPUs)");
    }
    if (workers > slots) {
      snprintf(err, errlen,
               "%d workers need %d slots, and MPI has %ld %s: give workers=%ld or fewer, or set "
               "SYSLAB_OVERSUBSCRIBE=1 to run more workers than slots",
               workers, workers, slots, where, slots);
      return -1;
    }
  }
  struct rlimit rl;
  if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur != RLIM_INFINITY) {
    long limit = (long)rl.rlim_cur, most = (limit - FDS_BASE) / FDS_PER_WORKER;
    if (workers > most) {
      snprintf(err, errlen,
               "%d workers need about %d file descriptors in the MPI runtime (%d each), over this process's "
               "limit of %ld (ulimit -n): give workers=%ld or fewer, or raise the limit",
               workers, FDS_BASE + FDS_PER_WORKER * workers, FDS_PER_WORKER, limit, most > 0 ? most : 0);
      return -1;
    }
  }
  return 0;
}

#ifdef SYSLAB_HAVE_MPI
#ifdef SYSLAB_MPI_MODULE
#define BUILD_TREE_MODULE SYSLAB_MPI_MODULE
#else
#define BUILD_TREE_MODULE NULL
#endif

static int module_path(char *out, size_t size) {
  const char *env = getenv("SYSLAB_MPI_MODULE");
  if (env && *env) return snprintf(out, size, "%s", env), 0;
  sl_program_file("lib/syslab/syslab_mpi.so", BUILD_TREE_MODULE, out, size);
  return 0;
}
#endif

const slD_Transport *slS_transport(char *err, size_t errlen) {
#ifdef SYSLAB_HAVE_MPI
  static const slD_Transport *t;
  static char why[PATH_MAX + 1024];
  read_env(); /* before MPI can change the environment */
  if (t) return t;
  if (why[0]) return snprintf(err, errlen, "%s", why), NULL;
  char path[PATH_MAX + 64];
  module_path(path, sizeof path);
  void *h = dlopen(path, RTLD_NOW | RTLD_GLOBAL);
  const slD_Transport *(*get)(void) = h ? (const slD_Transport *(*)(void))dlsym(h, "slD_transport") : NULL;
  if (!get) {
    snprintf(why, sizeof why,
             "cannot load the MPI module %s: %s (install openmpi-bin and libopenmpi-dev, or set SYSLAB_MPI_MODULE)",
             path, dlerror());
  } else if (get()->version != SLD_TRANSPORT_VERSION) {
    snprintf(why, sizeof why, "the MPI module %s is version %d, this program needs %d", path, get()->version,
             SLD_TRANSPORT_VERSION);
  } else {
    t = get();
    return t;
  }
  snprintf(err, errlen, "%s", why);
  return NULL;
#else
  snprintf(err, errlen, "this syslab was built without MPI (install libopenmpi-dev and rebuild)");
  return NULL;
#endif
}

slD_Group *slS_world(char *err, size_t errlen) {
  static slD_Group *g;
  if (err && errlen) err[0] = '\0';
  if (g) return g;
  if (slS_env_size() <= 1) return NULL;
  const slD_Transport *t = slS_transport(err, errlen);
  if (t) g = t->world(err, errlen);
  return g;
}

/* -------------------------------------------------------------- messages */

static int farms; /* farms this process has numbered */

int slS_farm_next(void) { return ++farms; }

int slS_farm_count(void) { return farms; }

/* Backs off from 20 us to 1 ms while nothing arrives: answers stay fast
** when busy, and an idle wait costs little CPU. */
static void idle(long *us) {
  struct timespec t = {0, *us * 1000};
  nanosleep(&t, NULL);
  if (*us < 1000) *us *= 2;
}

/* every message: farm number, task id (or 0), then the payload */
typedef struct {
  int32_t farm;
  int32_t pad;
  int64_t id;
} Header;

static int send_msg(const slD_Transport *t, slD_Group *g, int to, int tag, int farm, long id, const void *data,
                    size_t n, double timeout) {
  Header h = {farm, 0, id};
  char *buf = malloc(sizeof h + n + 1);
  memcpy(buf, &h, sizeof h);
  if (n) memcpy(buf + sizeof h, data, n);
  int rc = t->send(g, to, tag, buf, sizeof h + n, timeout);
  free(buf);
  return rc;
}

/* a message of farm `farm` from `from` with `tag`; stale ones are dropped */
static int recv_msg(const slD_Transport *t, slD_Group *g, int from, int tag, int farm, int *src, int *got_tag, long *id,
                    char **payload, size_t *n) {
  void *data;
  size_t len;
  while (t->poll(g, from, tag, src, got_tag, &data, &len)) {
    Header h;
    if (len < sizeof h) {
      free(data);
      continue;
    }
    memcpy(&h, data, sizeof h);
    if (h.farm != farm) {
      free(data);
      continue;
    }
    *id = (long)h.id;
    *n = len - sizeof h;
    *payload = malloc(*n + 1);
    memcpy(*payload, (char *)data + sizeof h, *n);
    (*payload)[*n] = '\0';
    free(data);
    return 1;
  }
  return 0;
}

/* ------------------------------------------------------ the coordinator */

typedef struct {
  int joined, dead, busy;
  long id;      /* the task it runs, when busy */
  double heard; /* last message from it */
} Worker;

typedef struct {
  long id;
  char *bytes;
  size_t n;
} Task;

typedef struct {
  Task *items;
  size_t n, cap;
} Tasks;

static void tasks_push(Tasks *q, Task t) {
  if (q->n == q->cap) q->items = realloc(q->items, (q->cap = q->cap ? q->cap * 2 : 16) * sizeof *q->items);
  q->items[q->n++] = t;
}

static Task *tasks_find(Tasks *q, long id) {
  for (size_t i = 0; i < q->n; i++)
    if (q->items[i].id == id) return &q->items[i];
  return NULL;
}

static void tasks_remove(Tasks *q, long id) {
  Task *t = tasks_find(q, id);
  if (!t) return;
  free(t->bytes);
  *t = q->items[--q->n];
}

typedef struct {
  const slD_Transport *t;
  slD_Group *g;
  int farm;
  const slS_FarmSource *src;
  Worker *w;
  int nw;
  Tasks running; /* sent and not finished, with their bytes for a re-run */
  long *requeue; /* ids of running tasks whose worker died */
  size_t nrequeue;
  slS_FarmStats *stats;
  double timeout;
} Coord;

static void declare_dead(Coord *c, int r) {
  Worker *w = &c->w[r];
  if (w->dead) return;
  w->dead = 1;
  c->stats->dead++;
  if (w->busy) {
    c->requeue = realloc(c->requeue, (c->nrequeue + 1) * sizeof *c->requeue);
    c->requeue[c->nrequeue++] = w->id;
    c->stats->requeued++;
    if (c->src->lost) c->src->lost(c->src->ud, r, w->id);
    w->busy = 0;
  }
}

/* hands a task to idle worker r: a re-queued one first, else a new one;
** returns 1 if r got one, 0 if none was ready, -1 when no more will come */
static int feed(Coord *c, int r, int *exhausted) {
  Task *task = NULL;
  while (c->nrequeue > 0 && !task) {
    long id = c->requeue[--c->nrequeue];
    task = tasks_find(&c->running, id); /* NULL if its result came back late */
  }
  if (!task) {
    if (*exhausted) return 0;
    slU_Text bytes = {0};
    long id = 0;
    int got = c->src->next(c->src->ud, &id, &bytes);
    if (got < 0) *exhausted = 1;
    if (got <= 0) {
      free(bytes.s);
      return got < 0 ? -1 : 0;
    }
    tasks_push(&c->running, (Task){id, bytes.s ? bytes.s : strdup(""), bytes.n});
    task = tasks_find(&c->running, id);
  }
  Worker *w = &c->w[r];
  w->busy = 1;
  w->id = task->id;
  if (send_msg(c->t, c->g, r, TAG_TASK, c->farm, task->id, task->bytes, task->n, c->timeout) != 0) declare_dead(c, r);
  return 1;
}

int slS_farm_coordinate(slD_Group *g, int farm, const slS_FarmSource *src, slS_FarmStats *stats, char *err,
                        size_t errlen) {
  const slD_Transport *t = slS_transport(err, errlen);
  if (!t) return -1;
  slS_FarmStats scratch;
  if (!stats) stats = &scratch;
  memset(stats, 0, sizeof *stats);
  Coord c = {t, g, farm, src, NULL, t->size(g), {0}, NULL, 0, stats, slS_timeout()};
  c.w = calloc((size_t)c.nw, sizeof *c.w);
  stats->workers = c.nw - 1;
  int rc = 0, exhausted = 0;
  double start = slU_now();
  err[0] = '\0';
  for (long wait = 20;;) {
    int src_rank, tag, progressed = 0;
    long id;
    char *payload;
    size_t n;
    while (recv_msg(t, g, -1, -1, farm, &src_rank, &tag, &id, &payload, &n)) {
      progressed = 1;
      Worker *w = &c.w[src_rank];
      w->heard = slU_now();
      if (w->dead) w->dead = 0, stats->dead--; /* it was only slow: take it back */
      if (tag == TAG_HELLO) {
        w->joined = 1;
      } else if (tag == TAG_BEAT) {
        send_msg(t, g, src_rank, TAG_BEAT, farm, 0, NULL, 0, c.timeout);
      } else if (tag == TAG_ASK) {
        slU_Text answer = {0};
        if (src->ask) src->ask(src->ud, id, payload, n, &answer);
        send_msg(t, g, src_rank, TAG_ANSWER, farm, id, answer.s ? answer.s : "", answer.n, c.timeout);
        free(answer.s);
      } else if (tag == TAG_RESULT) {
        if (w->busy && w->id == id) w->busy = 0;
        if (tasks_find(&c.running, id)) {
          tasks_remove(&c.running, id);
          stats->tasks++;
          if (src->done(src->ud, id, payload, n, err, errlen) != 0) rc = -1;
        }
      }
      free(payload);
      if (rc) break;
    }
    if (rc) break;
    if (sl_interrupted()) {
      snprintf(err, errlen, "interrupted");
      rc = -1;
      break;
    }
    int alive = 0, busy = 0;
    for (int r = 1; r < c.nw; r++) {
      Worker *w = &c.w[r];
      if (w->joined && !w->dead && slU_now() - w->heard > c.timeout) declare_dead(&c, r);
      if (w->joined && !w->dead && !w->busy && feed(&c, r, &exhausted) > 0) progressed = 1;
      if (!w->dead && (w->joined || slU_now() - start < c.timeout)) alive++;
      if (w->busy) busy++;
    }
    if (exhausted && busy == 0 && c.running.n == 0) break;
    if (alive == 0) {
      snprintf(err, errlen, "every worker died or none joined within %.0f s; %zu task(s) unfinished", c.timeout,
               c.running.n);
      rc = -1;
      break;
    }
    if (progressed) wait = 20;
    else idle(&wait);
  }
  /* STOP to every worker that joined; late joiners get it when they say HELLO */
  slU_Text fin = {0};
  if (src->final) src->final(src->ud, rc, &fin);
  const char *final = fin.s ? fin.s : "";
  size_t final_n = fin.n;
  double deadline = slU_now() + c.timeout;
  for (long wait = 20;;) {
    int pending = 0;
    for (int r = 1; r < c.nw; r++) {
      Worker *w = &c.w[r];
      if (w->dead || w->joined < 0) continue;
      if (w->joined) {
        send_msg(t, g, r, TAG_STOP, farm, rc, final, final_n, c.timeout);
        w->joined = -1;
      } else {
        pending++;
      }
    }
    if (!pending || slU_now() > deadline) break;
    int src_rank, tag;
    long id;
    char *payload;
    size_t n;
    int got = 0;
    while (recv_msg(t, g, -1, -1, farm, &src_rank, &tag, &id, &payload, &n)) {
      got = 1;
      if (tag == TAG_HELLO && c.w[src_rank].joined == 0) c.w[src_rank].joined = 1;
      if (tag == TAG_BEAT) send_msg(t, g, src_rank, TAG_BEAT, farm, 0, NULL, 0, c.timeout);
      free(payload);
    }
    if (got) wait = 20;
    else idle(&wait);
  }
  free(fin.s);
  for (size_t i = 0; i < c.running.n; i++) free(c.running.items[i].bytes);
  free(c.running.items);
  free(c.requeue);
  free(c.w);
  return rc;
}

/* ------------------------------------------------------------ a worker */

typedef struct {
  const slD_Transport *t;
  slD_Group *g;
  int farm;
  double timeout;
  pthread_mutex_t lock;
  pthread_cond_t wake;
  int stop;
} Beat;

/* Sends a BEAT every timeout / 10 and reads the answers; when none has
** come for the timeout, the coordinator is gone and this process ends. */
static void *beat_thread(void *arg) {
  Beat *b = arg;
  double heard = slU_now(), interval = b->timeout / 10;
  pthread_mutex_lock(&b->lock);
  while (!b->stop) {
    pthread_mutex_unlock(&b->lock);
    send_msg(b->t, b->g, 0, TAG_BEAT, b->farm, 0, NULL, 0, interval);
    int src, tag;
    long id;
    char *payload;
    size_t n;
    while (recv_msg(b->t, b->g, 0, TAG_BEAT, b->farm, &src, &tag, &id, &payload, &n)) {
      heard = slU_now();
      free(payload);
    }
    if (slU_now() - heard > b->timeout) {
      fprintf(stderr, "syslab worker %d: no answer from the coordinator for %.0f s; it is gone, stopping\n",
              b->t->rank(b->g), b->timeout);
      _exit(3);
    }
    pthread_mutex_lock(&b->lock);
    if (b->stop) break;
    slS_nap(&b->wake, &b->lock, interval);
  }
  pthread_mutex_unlock(&b->lock);
  return NULL;
}

void slS_nap(pthread_cond_t *wake, pthread_mutex_t *lock, double seconds) {
  struct timespec until;
  clock_gettime(CLOCK_REALTIME, &until);
  double t = (double)until.tv_sec + (double)until.tv_nsec * 1e-9 + seconds;
  until.tv_sec = (time_t)t;
  until.tv_nsec = (long)((t - (double)until.tv_sec) * 1e9);
  pthread_cond_timedwait(wake, lock, &until);
}

/* the task a worker runs now, for slS_farm_ask */
static struct {
  const slD_Transport *t;
  slD_Group *g;
  int farm;
  long id;
  double timeout;
} current;

int slS_farm_ask(const char *q, size_t n, char **answer, size_t *answer_n, char *err, size_t errlen) {
  if (!current.g) return snprintf(err, errlen, "no task is running on this worker"), -1;
  if (send_msg(current.t, current.g, 0, TAG_ASK, current.farm, current.id, q, n, current.timeout) != 0)
    return snprintf(err, errlen, "the coordinator (rank 0) did not take a question within %.0f s", current.timeout), -1;
  for (long wait = 20;;) { /* the BEAT thread ends the process if the coordinator dies */
    int src, tag;
    long id;
    if (recv_msg(current.t, current.g, 0, TAG_ANSWER, current.farm, &src, &tag, &id, answer, answer_n)) return 0;
    idle(&wait);
  }
}

int slS_farm_work(slD_Group *g, int farm, slS_TaskFn fn, void *ud, char **final, size_t *final_n, char *err,
                  size_t errlen) {
  const slD_Transport *t = slS_transport(err, errlen);
  if (!t) return -1;
  double timeout = slS_timeout();
  if (send_msg(t, g, 0, TAG_HELLO, farm, 0, NULL, 0, timeout) != 0) {
    snprintf(err, errlen, "the coordinator (rank 0) did not take this worker's HELLO within %.0f s", timeout);
    return -1;
  }
  Beat b = {t, g, farm, timeout, PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER, 0};
  pthread_t beat;
  pthread_create(&beat, NULL, beat_thread, &b);
  int rc = 0;
  *final = NULL;
  *final_n = 0;
  for (long wait = 20;;) {
    int src, tag;
    long id;
    char *payload;
    size_t n;
    if (recv_msg(t, g, 0, TAG_STOP, farm, &src, &tag, &id, &payload, &n)) {
      *final = payload;
      *final_n = n;
      if (id != 0) {
        snprintf(err, errlen, "the coordinator stopped the work on an error");
        rc = -1;
      }
      break;
    }
    if (recv_msg(t, g, 0, TAG_TASK, farm, &src, &tag, &id, &payload, &n)) {
      slU_Text result = {0};
      current.t = t, current.g = g, current.farm = farm, current.id = id, current.timeout = timeout;
      fn(ud, id, payload, n, &result);
      current.g = NULL;
      free(payload);
      if (send_msg(t, g, 0, TAG_RESULT, farm, id, result.s ? result.s : "", result.n, timeout) != 0) {
        free(result.s);
        snprintf(err, errlen, "the coordinator (rank 0) did not take a result within %.0f s", timeout);
        rc = -1;
        break;
      }
      free(result.s);
      wait = 20;
      continue;
    }
    idle(&wait);
  }
  pthread_mutex_lock(&b.lock);
  b.stop = 1;
  pthread_cond_signal(&b.wake);
  pthread_mutex_unlock(&b.lock);
  pthread_join(beat, NULL);
  return rc;
}
