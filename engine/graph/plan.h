/*
** plan.h - buffer planning (plan.c): every tensor of a pass placed once in
** one arena, reused by every later pass of the same mode and shape.
*/
#ifndef SYSLAB_PLAN_H
#define SYSLAB_PLAN_H

#include "model.h"

typedef struct slM_Plan slM_Plan;

/* the forward pass's hooks (exec.c), for a graph with planning on: begin
** before the first node (it installs the arena of the mode and shape, or
** starts a plan for them; NULL in training, where nothing more is done
** during the pass), after each node and end after the last (inference) */
slM_Plan *slM_plan_begin(slM_Graph *g, int batch, int training);
void slM_plan_after_node(slM_Graph *g, slM_Plan *p, int i);
void slM_plan_end(slM_Graph *g, slM_Plan *p);

/* gives the arena back (the placements are kept for the next pass of the
** same mode and shape); slM_plan_free also forgets the placements */
void slM_plan_release(slM_Graph *g);
void slM_plan_free(slM_Graph *g);

/* for tests and reports: the arena's bytes (0 when none is held), the bytes
** the placement needs, the most bytes alive at one step (each buffer
** rounded up to 64: a lower bound on any placement; and not rounded), the
** bytes of all the planned buffers together, the bytes node tensors hold
** outside the arena, the number of planned buffers, and how many times the
** graph was planned */
typedef struct slM_PlanInfo {
  size_t arena_bytes, placed_bytes, widest_bytes, widest_exact_bytes, outputs_bytes, kept_bytes;
  int buffers, plans;
} slM_PlanInfo;
void slM_plan_info(const slM_Graph *g, slM_PlanInfo *out);

/* the placement alone (exposed for tests): n buffers of bytes[i] alive from
** step first[i] to step last[i] inclusive; fills offset (multiples of 64)
** and returns the arena's size in bytes */
size_t slM_plan_place(int n, const size_t *bytes, const int *first, const int *last, size_t *offset);

#endif
