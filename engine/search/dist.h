/*
** dist.h - distributed runs: which process of a job this is, the MPI
** transport (loaded on demand), and the task farm that spreads work from a
** coordinator (rank 0) over worker processes.
**
** The farm knows nothing of studies: a task and its result are byte
** strings, and the caller says what the next task is and what to do with a
** result. What it adds to the transport is the protocol of mpi/transport.h
** made safe against dying peers:
**
**   worker -> coordinator   HELLO once, RESULT per task, ASK during a task, BEAT every beat interval
**   coordinator -> worker   TASK, ANSWER to an ASK, BEAT (the answer to a BEAT), STOP with a final payload
**
** A worker silent for longer than the timeout, or one a TASK cannot reach,
** is dead: its task goes back to the queue with the same id and bytes (the
** task id, not arrival order, decides what is computed), and another worker
** runs it. A worker whose BEATs stay unanswered for the timeout decides the
** coordinator is gone and exits, so no process outlives its job. Every
** message carries the farm's number (the k-th farm of a run), so a late
** message from an earlier farm is dropped.
**
** Defaults: timeout 30 s, beat every timeout / 10; SYSLAB_MPI_TIMEOUT
** (seconds) changes them, tests use a few seconds.
**
** The files: dist.c (the process, the module, the farm), job.c (the job
** as the drivers see it, their farm, and the workers a call starts),
** remote.c (searches spread over processes), ddp.c (data-parallel groups).
*/
#ifndef SYSLAB_SEARCH_DIST_H
#define SYSLAB_SEARCH_DIST_H

#include <pthread.h>
#include <stddef.h>

#include "mpi/transport.h"
#include "slcommand.h"

/* ------------------------------------------------------------ the process */

/* rank and size from the launcher's environment (mpirun, srun), without
** starting MPI: 0 and 1 in a plain run */
int slS_env_rank(void);
int slS_env_size(void);
/* the transport, loading the MPI module on first use; NULL with err when
** this build has no MPI or the module cannot be loaded */
const slD_Transport *slS_transport(char *err, size_t errlen);
/* the group of an mpirun job (NULL with err, or NULL and no err when this
** is a plain run of one process) */
slD_Group *slS_world(char *err, size_t errlen);
/* seconds of silence after which a peer counts as dead */
double slS_timeout(void);
/* whether `workers` processes can be started from this one (workers=N):
** no more than the slots MPI places them on (this machine's CPUs, or the
** allocation's or the hostfile's slots) unless oversubscription was asked
** for, and no more than the descriptor limit lets the runtime's daemon
** hold. 0, or -1 with err saying which limit and how to raise it. */
int slS_worker_limit(int workers, char *err, size_t errlen);

/* Starts n workers (`syslab worker`) for a call and sends them its source
** and every variable it reads, after checking that each can travel: the
** workers run the same call. The group of this process (rank 0) and them,
** or NULL with err. (job.c, with the worker's side, sl_worker_main) */
slD_Group *slS_spawn_call(sl_Call *call, int n, char *err, size_t errlen);
/* in a worker a notebook started: the group of its coordinator; else NULL */
slD_Group *slS_spawned(void);
/* whether a distributed search runs in this process (a trial's call runs where the trial runs; remote.c) */
int slS_in_search(void);

/* a beating thread's pause: waits on wake (lock held) for at most `seconds` */
void slS_nap(pthread_cond_t *wake, pthread_mutex_t *lock, double seconds);

/* hands the graph its groups of processes for data-parallel training (ddp.c) */
void slS_ddp_open(void);
/* allreduce_bench: the fixed-order all-reduce of data-parallel training timed over sizes (ddp.c) */
int slS_cmd_allreduce_bench(sl_Call *call, sl_Value *result);

/* ---------------------------------------------------------------- the farm */

typedef struct slS_FarmSource {
  void *ud;
  /* the next task: 1 with *id and its bytes appended to *task; 0 when none
  ** can start until a result comes back; -1 when there is no more work */
  int (*next)(void *ud, long *id, slU_Text *task);
  /* the result of task id; return -1 to stop the farm (err filled) */
  int (*done)(void *ud, long id, const char *result, size_t n, char *err, size_t errlen);
  /* optional: a worker was declared dead and its task re-queued */
  void (*lost)(void *ud, int rank, long id);
  /* optional: a question a worker asks while it runs task id (slS_farm_ask);
  ** the answer goes back to it */
  void (*ask)(void *ud, long id, const char *q, size_t n, slU_Text *answer);
  /* optional: the payload every worker receives at the end (rc: 0, or -1) */
  void (*final)(void *ud, int rc, slU_Text *out);
} slS_FarmSource;

/* The number of a new farm: 1, 2, ... in the order this process starts or
** joins them, which is the same order on every rank of an mpirun job (each
** runs the same script). A worker a notebook started, and its coordinator,
** share a group of their own and number their one farm 1 without asking. */
int slS_farm_next(void);
/* the farms numbered so far (0: this process never ran one over mpirun's ranks) */
int slS_farm_count(void);

typedef struct slS_FarmStats {
  long tasks, requeued;
  int workers, dead;
} slS_FarmStats;

/* Rank 0: runs the farm over every other rank of g until next() says -1
** and every result is in, then sends final()'s payload to every worker that
** joined, waiting up to the timeout for those that have not. 0, or -1 with
** err (every worker died, done() failed, interrupted). */
int slS_farm_coordinate(slD_Group *g, int farm, const slS_FarmSource *src, slS_FarmStats *stats, char *err,
                        size_t errlen);

/* Evaluates a task: appends the result to *result; a failure is part of
** the result (the caller's encoding), not of the protocol. */
typedef void (*slS_TaskFn)(void *ud, long id, const char *task, size_t n, slU_Text *result);

/* Ranks > 0: joins farm number `farm`, runs tasks until STOP; returns 0 and
** the coordinator's final payload in *final (malloc'd), or -1 with err. */
int slS_farm_work(slD_Group *g, int farm, slS_TaskFn fn, void *ud, char **final, size_t *final_n, char *err,
                  size_t errlen);

/* Inside a task on a worker: asks the coordinator (its source's ask) and
** waits for the answer: 0 and a malloc'd answer, or -1 with err. */
int slS_farm_ask(const char *q, size_t n, char **answer, size_t *answer_n, char *err, size_t errlen);

#endif
