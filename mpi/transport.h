/*
** transport.h - the one door to MPI: a small table of functions that the
** MPI module (mpi/mpi.c, built as syslab_mpi.so when CMake finds MPI)
** exports and engine/search/dist.c loads with dlopen.
**
** Why a module loaded at run time: the serial program must start as fast as
** it did and run on machines without Open MPI, so neither `syslab` nor the
** engine links libmpi; only this module does, and it is loaded when a run
** is started by mpirun or a search asks for workers. Nothing outside mpi/
** sees an MPI type or symbol.
**
** A group is a set of processes numbered 0..size-1 in which rank 0 is the
** coordinator: MPI_COMM_WORLD under mpirun, or, for workers started with
** MPI_Comm_spawn, the parent and its children merged into one communicator
** (the parent is rank 0). Messages are byte strings with a small integer
** tag. Every call is non-blocking or bounded by a deadline, because a peer
** may have died: sends give up after `timeout` seconds and polls return
** at once, so the caller decides when a silent peer counts as dead.
** Calls may come from two threads (a worker's main thread and its
** heartbeat); the module serialises them.
**
** Data-parallel training (engine/search/ddp.c) also moves large float
** buffers without copying them: non-blocking sends and receives of the
** caller's memory, tested until done, so that gradients travel while the
** backward pass goes on. Each training call works in a duplicate of its
** group, so its messages never meet those of a search or of another call.
*/
#ifndef SYSLAB_MPI_TRANSPORT_H
#define SYSLAB_MPI_TRANSPORT_H

#include <stddef.h>

#define SLD_TRANSPORT_VERSION 3

typedef struct slD_Group slD_Group;
typedef struct slD_Request slD_Request;

typedef struct slD_Transport {
  int version; /* SLD_TRANSPORT_VERSION */
  /* the processes started together by mpirun (initialises MPI on first use);
  ** NULL with err when MPI cannot start */
  slD_Group *(*world)(char *err, size_t errlen);
  /* starts n processes running argv[0] argv[1..] (NULL-terminated) and
  ** returns the group of this process (rank 0) and them; NULL with err
  ** when they could not be started, or were not all running after
  ** `timeout` seconds (the runtime is then stopped, and no later spawn in
  ** this process can succeed) */
  slD_Group *(*spawn)(char *const *argv, int n, double timeout, char *err, size_t errlen);
  /* in a process started by spawn: the group of its parent and siblings */
  slD_Group *(*parent)(char *err, size_t errlen);
  int (*rank)(const slD_Group *g);
  int (*size)(const slD_Group *g);
  /* sends n bytes to rank `to`; 0, or -1 when not delivered within timeout
  ** seconds (the peer is gone or not listening) */
  int (*send)(slD_Group *g, int to, int tag, const void *data, size_t n, double timeout);
  /* a waiting message from `from` (-1: any) with `tag` (-1: any): returns 1
  ** and a malloc'd copy in *data (*n bytes), or 0 when there is none */
  int (*poll)(slD_Group *g, int from, int tag, int *src, int *got_tag, void **data, size_t *n);
  /* leaves the group (a spawned group is disconnected; the world is kept) */
  void (*close)(slD_Group *g);
  /* leaves a group in which a peer may have died: freed without waiting
  ** for anyone (a disconnect would wait for the dead); a duplicate is kept
  ** instead, so that no later duplicate takes its context id */
  void (*abandon)(slD_Group *g);
  /* a group of the same processes whose messages are its own (every member
  ** calls it, in the same order); NULL with err */
  slD_Group *(*dup)(slD_Group *g, char *err, size_t errlen);
  /* Non-blocking transfers of n bytes of the caller's memory (any size:
  ** large ones go in pieces, matched in order). The memory stays lent to
  ** MPI until the request is done: a send's is not changed, a receive's not
  ** read. NULL with err when MPI refuses to start it. */
  slD_Request *(*isend)(slD_Group *g, int to, int tag, const void *data, size_t n, char *err, size_t errlen);
  slD_Request *(*irecv)(slD_Group *g, int from, int tag, void *data, size_t n, char *err, size_t errlen);
  /* 1 when r is done (r is freed), 0 while in flight, -1 with err (r is freed) */
  int (*test)(slD_Request *r, char *err, size_t errlen);
  /* gives up r, which will not finish (a peer died or the work stopped): a
  ** receive is cancelled; a send is left to MPI, and its memory must then
  ** stay allocated (the caller leaks it) */
  void (*cancel)(slD_Request *r);
  /* MPI_Finalize, once, at exit of a process that used MPI. Finalising
  ** waits for every process of the job, and one may have died: after
  ** `timeout` seconds the process exits with `status` instead of hanging. */
  void (*finalize)(double timeout, int status);
} slD_Transport;

/* the module's one exported symbol */
const slD_Transport *slD_transport(void);

#endif
