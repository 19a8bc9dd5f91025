/*
** memory.h - memory accounting (memory.c): every tensor tagged with its
** category and the node that made it; live and peak bytes by category; a
** timeline of one step.
*/
#ifndef SYSLAB_MEMORY_H
#define SYSLAB_MEMORY_H

#include "model.h"

enum { SLM_MEM_PARAM, SLM_MEM_GRAD, SLM_MEM_OPTIM, SLM_MEM_ACT, SLM_MEM_TEMP, SLM_MEM_NCAT };
extern const char *const slM_mem_category_names[]; /* parameter, gradient, ... */

void slM_mem_on_alloc(slM_Tensor *t); /* tensor.c */
void slM_mem_on_free(slM_Tensor *t);
void slM_mem_retag(slM_Tensor *t, int category);
/* memory outside tensors (scratch buffers), counted as temporaries */
void slM_mem_external(long long delta);
/* memory outside tensors that a model holds (pruning masks), counted in its category */
void slM_mem_held(int category, long long delta);
/* the tag new tensors get, set around each node by the node hooks
** (profile.c): the node (negative outside any), the direction, the
** category, and the node's and its operator's names for the records */
void slM_mem_set_context(int node, int backward, int category, const char *name, const char *op);

/* the category new tensors are tagged with now (device tensors take it too) */
int slM_mem_category(void);

/* live bytes by category now; at the overall peak since the last reset */
void slM_mem_live_by(size_t out[SLM_MEM_NCAT]);
void slM_mem_peak_by(size_t out[SLM_MEM_NCAT]);
size_t slM_mem_total_peak(void); /* tensors and scratch */
size_t slM_mem_total_live(void); /* tensors and scratch, now */
void slM_mem_reset(void);        /* peaks := live, records cleared */

/* recording of allocations and a timeline while on */
typedef struct slM_MemEvent {
  int index, node, backward;
  size_t live;
} slM_MemEvent;
typedef struct slM_MemAlloc {
  size_t bytes;
  int category, node, backward;
  char node_name[64], op[24], shape[48];
} slM_MemAlloc;
void slM_mem_record(int on);
const slM_MemEvent *slM_mem_timeline(size_t *n);
const slM_MemAlloc *slM_mem_allocations(size_t *n);
void slM_mem_mark(int node, int backward); /* a timeline point after a node */

#endif
