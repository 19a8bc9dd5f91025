/*
** parallel.h - the group of processes a data-parallel training call runs
** in, as the graph's training loops see it.
**
** The graph knows no processes and no MPI. It asks this table of
** functions, which engine/search/ddp.c fills over the MPI transport and
** hands down when the engine starts (the search domain's open hook); in a
** program without it, parallel training is refused with the reason.
**
** The collectives are the two halves of an all-reduce whose order of sums
** is fixed: a buffer of floats is cut into one shard per rank (bounds[q] to
** bounds[q + 1]); rank q receives every rank's shard q and sums them in
** rank order, acc = c_0, acc += c_1, ..., acc += c_{N-1} (slM_grads_add),
** exactly the additions a serial run makes when it accumulates N
** micro-batches; then, for an all-reduce, every rank receives every summed
** shard. MPI's own reductions sum in an order of their choosing, which
** would make the result depend on the library and the number of ranks.
**
** Every call on a group may fail because a rank died: it then returns -1
** (or NULL) with the reason, naming the rank, and so do all later calls.
*/
#ifndef SYSLAB_GRAPH_PARALLEL_H
#define SYSLAB_GRAPH_PARALLEL_H

#include "model.h"

typedef struct slM_Group slM_Group; /* a training call's processes */
typedef struct slM_Xfer slM_Xfer;   /* one collective in flight */

typedef struct slM_GroupOps {
  /* The group a call trains in: the ranks of an mpirun job, or this
  ** process (rank 0) and workers - 1 processes started for the call, which
  ** receive what it reads and run the same call. NULL with err; NULL with
  ** err empty for a group of one (workers=1): this process trains alone. */
  slM_Group *(*open)(sl_Call *call, int workers, char *err, size_t errlen);
  int (*rank)(const slM_Group *g);
  int (*size)(const slM_Group *g);
  /* Starts the fixed-order sum of every rank's buf (bounds: size + 1
  ** offsets in floats, the last one buf's length). With gather every rank
  ** ends with every summed shard in buf; without, rank q holds the sum of
  ** shard q only. `slot` tells apart the collectives in flight at once: the
  ** same number on every rank for the same collective. */
  slM_Xfer *(*sum)(slM_Group *g, float *buf, const size_t *bounds, int gather, int slot, char *err, size_t errlen);
  /* Starts rank q's sending of its shard q of buf to `root`, or to every
  ** rank when root < 0 (the owners of a sharded state handing it out). */
  slM_Xfer *(*share)(slM_Group *g, float *buf, const size_t *bounds, int root, int slot, char *err, size_t errlen);
  /* moves every collective in flight on, without waiting: 0 or -1 with err */
  int (*poll)(slM_Group *g, char *err, size_t errlen);
  /* waits for x to finish and frees it: 0, or -1 with err */
  int (*wait)(slM_Group *g, slM_Xfer *x, char *err, size_t errlen);
  /* every rank's n bytes, in rank order, into all (size x n bytes) */
  int (*allgather)(slM_Group *g, const void *mine, size_t n, void *all, char *err, size_t errlen);
  /* root's bytes to every rank: on the others *data becomes a malloc'd copy of *n bytes */
  int (*bcast)(slM_Group *g, int root, void **data, size_t *n, char *err, size_t errlen);
  /* leaves the group; `why` non-NULL: this rank stops on an error, which
  ** the others are told so that they stop too instead of waiting */
  void (*close)(slM_Group *g, const char *why);
} slM_GroupOps;

/* set by the layer that implements groups (search/ddp.c) when the engine starts */
void slM_set_group_ops(const slM_GroupOps *ops);
/* the table, or NULL with err saying why parallel training is not available */
const slM_GroupOps *slM_group_ops(char *err, size_t errlen);

#endif
