/*
** profile.c - the hooks every node runs between (slM_node_begin/end): the
** profiler's clock, the memory tagger's context and the memory timeline.
**
** The profiler is the analogue of an nsys trace for a CPU graph: with
** nothing attached the hooks cost two branches per node, so eager runs are
** not slowed; attached, every node's forward and backward time is summed.
** Products run in OpenBLAS threads, which return before the node ends, so
** a node's time is its whole cost, threads included. On the GPU the
** profiler waits for each node's kernels before reading the clock.
*/
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "kernels/device.h"
#include "memory.h"
#include "ops.h"
#include "profile.h"

slM_Profile *slM_profile_attach(slM_Graph *g) {
  slM_Profile *p = calloc(1, sizeof *p);
  p->n = g->n;
  p->forward = calloc((size_t)g->n, sizeof *p->forward);
  p->backward = calloc((size_t)g->n, sizeof *p->backward);
  g->profile = p;
  return p;
}

void slM_profile_detach(slM_Graph *g) { g->profile = NULL; }

void slM_profile_free(slM_Profile *p) {
  if (!p) return;
  free(p->forward);
  free(p->backward);
  free(p);
}

/* what a node makes is tagged as its operator's record says in the
** forward pass, as temporaries in the backward pass and outside nodes */
void slM_node_begin(slM_Graph *g, int node, int backward) {
  if (node < 0 || node >= g->n) {
    slM_mem_set_context(node, backward, SLM_MEM_TEMP, NULL, NULL);
  } else {
    const slM_Node *n = &g->nodes[node];
    const slM_OpDef *d = slM_op(n->op);
    slM_mem_set_context(node, backward, backward ? SLM_MEM_TEMP : d->makes, n->name, d->name);
  }
  if (g->profile) g->profile->started = slU_now();
}

void slM_node_end(slM_Graph *g, int node, int backward) {
  slM_Profile *p = g->profile;
  char err[200];
  /* on the GPU a node's kernels return before they finish: a profile waits for them, so each node's time is its own */
  if (p && g->device != SLM_CPU && slK_gpu()->sync(err, sizeof err) != 0 && !g->fault[0])
    snprintf(g->fault, sizeof g->fault, "a kernel of node %d failed: %.200s", node, err);
  if (p && node >= 0 && node < p->n) (backward ? p->backward : p->forward)[node] += slU_now() - p->started;
  slM_mem_mark(node, backward);
  slM_mem_set_context(-1, 0, SLM_MEM_TEMP, NULL, NULL);
}
