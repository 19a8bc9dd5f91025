/*
** memory.c - where the bytes go: every tensor's bytes counted as it is
** made and freed, tagged by category, with peaks by category and a
** timeline of one step.
**
** Every tensor carries a category (parameter, gradient, optimizer state,
** activation, temporary) and the node that allocated it. The node hooks
** (profile.c) set the tag for what a node makes: in the forward pass what
** its operator's record says it makes (activations: its output and what it
** saves); in the backward pass, the gradients of activations are
** temporaries. Parameter gradients and optimizer state are re-tagged where
** they are made. The prediction of these figures before anything is
** allocated is the systems folder's (systems/predict.c).
*/
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kernels/device.h"
#include "memory.h"

const char *const slM_mem_category_names[] = {"parameter",  "gradient",  "optimizer_state",
                                              "activation", "temporary", NULL};

static size_t live[SLM_MEM_NCAT], at_peak[SLM_MEM_NCAT], total_peak;
static int cur_cat = SLM_MEM_TEMP, cur_node = -1, cur_backward;
static const char *cur_name, *cur_op; /* the node now running and its operator */
/* tensor bytes alone (no scratch), and their peak since the last reset */
static size_t tensor_bytes, tensor_peak;

static int recording;
static slM_MemEvent *events;
static size_t nevents, events_cap;
static slM_MemAlloc *allocs;
static size_t nallocs, allocs_cap;

static size_t total_live(void) {
  size_t t = 0;
  for (int c = 0; c < SLM_MEM_NCAT; c++) t += live[c];
  return t;
}

static void account(int category, long long delta) {
  live[category] = (size_t)((long long)live[category] + delta);
  size_t t = total_live();
  if (t > total_peak) {
    total_peak = t;
    memcpy(at_peak, live, sizeof live);
  }
}

static void shape_text(const slM_Tensor *t, char *buf, size_t size) {
  size_t used = (size_t)snprintf(buf, size, "[");
  for (int d = 0; d < t->ndim && used < size; d++)
    used += (size_t)snprintf(buf + used, size - used, "%s%d", d ? ", " : "", t->shape[d]);
  if (used < size) snprintf(buf + used, size - used, "]");
}

size_t slM_mem_live(void) { return tensor_bytes; }
size_t slM_mem_peak(void) { return tensor_peak; }
static void mem_reset_peak(void) { tensor_peak = tensor_bytes; }

void slM_mem_on_alloc(slM_Tensor *t) {
  size_t bytes = slM_tensor_bytes(t);
  tensor_bytes += bytes;
  if (tensor_bytes > tensor_peak) tensor_peak = tensor_bytes;
  t->category = cur_cat;
  t->node = cur_node;
  account(t->category, (long long)bytes);
  if (!recording) return;
  if (nallocs == allocs_cap)
    allocs = realloc(allocs, (allocs_cap = allocs_cap ? allocs_cap * 2 : 256) * sizeof *allocs);
  slM_MemAlloc *a = &allocs[nallocs++];
  memset(a, 0, sizeof *a);
  a->bytes = bytes;
  a->category = t->category;
  a->node = cur_node;
  a->backward = cur_backward;
  if (cur_node >= 0 && cur_name) {
    snprintf(a->node_name, sizeof a->node_name, "%s", cur_name);
    snprintf(a->op, sizeof a->op, "%s", cur_op);
  }
  shape_text(t, a->shape, sizeof a->shape);
}

void slM_mem_on_free(slM_Tensor *t) {
  tensor_bytes -= slM_tensor_bytes(t);
  account(t->category, -(long long)slM_tensor_bytes(t));
}

void slM_mem_retag(slM_Tensor *t, int category) {
  long long bytes = (long long)slM_tensor_bytes(t);
  if (t->dev) slK_dev_recount((size_t)bytes, t->category, category); /* its device copy moves with it */
  if (t->dev && !t->data) {                                          /* nothing on the host */
    t->category = category;
    return;
  }
  live[t->category] -= (size_t)bytes;
  live[category] += (size_t)bytes;
  if (recording && nallocs > 0 && allocs[nallocs - 1].bytes == (size_t)bytes) allocs[nallocs - 1].category = category;
  t->category = category;
  size_t tl = total_live();
  if (tl >= total_peak) memcpy(at_peak, live, sizeof live);
}

void slM_mem_external(long long delta) { account(SLM_MEM_TEMP, delta); }
void slM_mem_held(int category, long long delta) { account(category, delta); }

void slM_mem_set_context(int node, int backward, int category, const char *name, const char *op) {
  cur_node = node;
  cur_backward = backward;
  cur_cat = category;
  cur_name = name, cur_op = op;
}

int slM_mem_category(void) { return cur_cat; }

void slM_mem_live_by(size_t out[SLM_MEM_NCAT]) { memcpy(out, live, sizeof live); }
void slM_mem_peak_by(size_t out[SLM_MEM_NCAT]) { memcpy(out, at_peak, sizeof at_peak); }
size_t slM_mem_total_peak(void) { return total_peak; }
size_t slM_mem_total_live(void) { return total_live(); }

void slM_mem_reset(void) {
  total_peak = total_live();
  memcpy(at_peak, live, sizeof live);
  nevents = nallocs = 0;
  mem_reset_peak();
}

void slM_mem_record(int on) {
  recording = on;
  if (!on) {
    free(events), free(allocs);
    events = NULL, allocs = NULL;
    nevents = events_cap = nallocs = allocs_cap = 0;
  }
}

void slM_mem_mark(int node, int backward) {
  if (!recording) return;
  if (nevents == events_cap)
    events = realloc(events, (events_cap = events_cap ? events_cap * 2 : 256) * sizeof *events);
  events[nevents] = (slM_MemEvent){(int)nevents, node, backward, total_live()};
  nevents++;
}

const slM_MemEvent *slM_mem_timeline(size_t *n) { return *n = nevents, events; }
const slM_MemAlloc *slM_mem_allocations(size_t *n) { return *n = nallocs, allocs; }
