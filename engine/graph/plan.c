/*
** plan.c - buffer planning: one arena for every output of a pass.
**
** After the fusion pass (fuse.c) a graph plans its buffers. A pass only
** needs a tensor from the step that writes it to the last step that reads
** it, so tensors whose lifetimes do not overlap can share memory. A plan is
** made once per graph, mode (inference or training) and input shape:
**
**   1. Shapes come from running, not from a second shape inference, so they
**      are exactly what the nodes ask for. The first inference pass of a
**      shape runs as it always did, each output freed right after its last
**      reader, and notes every output's shape; the first training step of a
**      shape runs as it always did, and the next step's start reads the
**      shapes of the tensors it left (outputs, saved tensors, gradients).
**   2. Lifetimes. Inference: output i is written at step i and read last at
**      its last reader's step; what a node saves beside its output (norm
**      statistics, the loss's probabilities, a quantised input) is read only
**      by the node itself, so it lives for that step. Training: steps 0 to
**      n - 1 are the forward nodes, step 2n - 1 - i is node i's backward;
**      a backward reads its node's output, what it saved and its inputs'
**      outputs, and an input's backward runs after its readers', so outputs
**      and saved tensors live from their forward to their own backward, and
**      a node's gradient from its last reader's backward to its own. In both
**      the logits, the output node's inputs and outputs nobody reads (the
**      loss) live to the end: the caller reads them after the pass.
**   3. Placement, greedy: tensors in order of size, largest first (ties by
**      position); each goes at the lowest offset, a multiple of 64 bytes,
**      where it overlaps no tensor already placed whose lifetime overlaps
**      its own (first fit). The arena is the highest end. Two lifetimes
**      that meet at one step overlap: a node never writes over its inputs.
**   4. The next pass of the same shape and mode allocates the arena, one
**      tensor tagged activation, and gives every planned slot a view of its
**      place without owning it (slM_tensor_view); the nodes' slM_ensure (and
**      the backward's gradient slots) find a view of the right shape and
**      write into it (a shape they did not expect would get a buffer of its
**      own, never a write past the view). From then on an inference pass
**      allocates no tensor, and a training step only the loss's gradient,
**      which slM_backward makes anew.
**
** One arena is held at a time: a pass of the other mode gives it back and
** takes its own, and another batch shape or a graph changed since plans
** again. After a pass only the tensors that live to its end hold their
** values; the others' places were reused. In training the arena saves the
** gradients' room: at the turn from forward to backward every activation is
** alive whatever the placement, and each gradient then takes the place of
** activations whose backward is done.
**
** The rotary tables are a cache kept from one pass to the next (ops_lm.c makes
** them once per context), so they stay outside the arena, allocated by the
** first pass and reused: they are what the plan keeps, with the loss's
** gradient. The memory accounting sees the arena as one activation
** allocation (in training it holds the activations' gradients too, which
** are tagged temporary when unplanned); views are not counted, so the live
** and peak figures stay those of the memory really held.
*/
#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include "memory.h"
#include "ops.h"
#include "plan.h"

#define ALIGN 64

/* a placement per mode: EMPTY, RECORDING (inference: the pass that notes
** the shapes; training: the first step of a shape, whose tensors the next
** step's begin reads), PLANNED */
enum { EMPTY, RECORDING, PLANNED };
enum { INFERENCE, TRAINING };

typedef struct Placement {
  /* what it is for: the batch shape and the graph's structure */
  int batch, context, n;
  uint64_t structure;
  int state, plans;
  int *last_use; /* step of each output's last reader in the forward pass; -1: none */
  /* buffers 4 i + s: node i's output (s = 0), saved (1), saved2 (2), gradient (3) */
  int *ndim; /* its shape; ndim 0: none planned */
  int (*shape)[SLM_MAX_DIMS];
  int *dtype; /* its storage (16-bit outputs under a 16-bit precision, model.h) */
  size_t *bytes, *offset;
  size_t size;                 /* bytes the placement needs */
  size_t widest, widest_exact; /* the most bytes alive at one step, each buffer rounded up to 64 or not */
} Placement;

struct slM_Plan {
  Placement mode[2]; /* inference, training */
  int current;       /* the mode of the last pass */
  int held;          /* the mode whose arena is installed; -1: none */
  slM_Tensor *arena;
};

static size_t align_up(size_t x) { return (x + ALIGN - 1) / ALIGN * ALIGN; }

/* FNV-1a over each node's operator and inputs: a pass that rewires the
** graph after planning changes it */
static uint64_t structure_of(const slM_Graph *g) {
  uint64_t h = 1469598103934665603ull;
  for (int i = 0; i < g->n; i++) {
    const slM_Node *n = &g->nodes[i];
    int words[2 + SLM_MAX_INPUTS] = {n->op, n->ninputs};
    memcpy(words + 2, n->inputs, sizeof n->inputs);
    for (int k = 0; k < 2 + n->ninputs; k++) h = (h ^ (uint64_t)(unsigned)words[k]) * 1099511628211ull;
  }
  return h;
}

/* ------------------------------------------------------------- placement */

typedef struct {
  size_t bytes;
  int first, last, index;
} Buffer;

static int larger_first(const void *a, const void *b) {
  const Buffer *x = a, *y = b;
  if (x->bytes != y->bytes) return x->bytes < y->bytes ? 1 : -1;
  return x->index - y->index;
}

typedef struct {
  size_t start, end;
} Span;

static int lower_first(const void *a, const void *b) {
  const Span *x = a, *y = b;
  return x->start < y->start ? -1 : x->start > y->start;
}

/* first fit of the buffers in the given order; returns the arena's size */
static size_t first_fit(int n, const Buffer *order, const size_t *bytes, const int *first, const int *last,
                        size_t *offset, Span *busy, char *placed) {
  memset(placed, 0, (size_t)n);
  size_t size = 0;
  for (int k = 0; k < n; k++) {
    const Buffer *b = &order[k];
    if (b->bytes == 0) {
      offset[b->index] = 0;
      continue;
    }
    /* the places taken, during this buffer's lifetime, in address order */
    int nbusy = 0;
    for (int j = 0; j < n; j++)
      if (placed[j] && first[j] <= b->last && b->first <= last[j])
        busy[nbusy++] = (Span){offset[j], offset[j] + bytes[j]};
    qsort(busy, (size_t)nbusy, sizeof *busy, lower_first);
    size_t at = 0;
    for (int j = 0; j < nbusy && busy[j].start < at + b->bytes; j++)
      if (busy[j].end > at) at = align_up(busy[j].end);
    offset[b->index] = at;
    placed[b->index] = 1;
    if (at + b->bytes > size) size = at + b->bytes;
  }
  return align_up(size);
}

size_t slM_plan_place(int n, const size_t *bytes, const int *first, const int *last, size_t *offset) {
  size_t m = (size_t)(n ? n : 1);
  Buffer *order = malloc(m * sizeof *order);
  Span *busy = malloc(m * sizeof *busy);
  char *placed = malloc(m);
  for (int i = 0; i < n; i++) order[i] = (Buffer){bytes[i], first[i], last[i], i};
  qsort(order, (size_t)n, sizeof *order, larger_first);
  size_t size = first_fit(n, order, bytes, first, last, offset, busy, placed);
  free(order), free(busy), free(placed);
  return size;
}

/* ---------------------------------------------------------------- arena */

enum { SLOTS = 4 };

static slM_Tensor **slot(slM_Node *n, int s) {
  return s == 0 ? &n->out : s == 1 ? &n->saved : s == 2 ? &n->saved2 : &n->gout;
}

/* a saved tensor the node reads again in a later pass (the rotary table) */
static int is_cache(const slM_Node *n, int s) { return (s == 1 || s == 2) && (slM_op(n->op)->flags & SLM_OP_CACHES); }

/* where the backward pass starts: its gradient is made anew by slM_backward */
static int backward_start(const slM_Graph *g) {
  int loss = slM_loss_node(g);
  return loss >= 0 ? loss : slM_logits_node(g);
}

/* the tensors go back to owning their buffers (none: the next pass makes them) */
static void uninstall(slM_Graph *g, slM_Plan *c) {
  if (!c->arena) return;
  for (int i = 0; i < g->n; i++)
    for (int s = 0; s < SLOTS; s++) {
      slM_Tensor **t = slot(&g->nodes[i], s);
      if (*t && (*t)->view) {
        slM_tensor_free(*t);
        *t = NULL;
      }
    }
  slM_tensor_free(c->arena);
  c->arena = NULL;
  c->held = -1;
}

/* one allocation for the whole placement, tagged activation, aligned to
** 64 bytes; every planned tensor a view of its place. 0 when the arena
** would be larger than one tensor can be. */
static int install(slM_Graph *g, slM_Plan *c, int mode) {
  const Placement *p = &c->mode[mode];
  size_t floats = p->size / sizeof(float);
  if (floats > INT_MAX) return 0;
  for (int b = 0; b < SLOTS * g->n; b++)
    if (p->ndim[b]) {
      slM_Tensor **t = slot(&g->nodes[b / SLOTS], b % SLOTS);
      slM_tensor_free(*t); /* the last pass's own buffer */
      *t = NULL;
    }
  int n = (int)floats;
  c->arena = slM_tensor_aligned(1, &n, ALIGN);
  slM_mem_retag(c->arena, SLM_MEM_ACT);
  char *base = (char *)c->arena->data;
  for (int b = 0; b < SLOTS * g->n; b++)
    if (p->ndim[b])
      *slot(&g->nodes[b / SLOTS], b % SLOTS) =
          slM_tensor_view_as(base + p->offset[b], p->ndim[b], p->shape[b], p->dtype[b]);
  c->held = mode;
  return 1;
}

/* ------------------------------------------------------------ placements */

static void forget(Placement *p) {
  free(p->last_use), free(p->ndim), free(p->shape), free(p->dtype), free(p->bytes), free(p->offset);
  int plans = p->plans;
  memset(p, 0, sizeof *p);
  p->plans = plans;
}

/* a new shape or structure: the readers now, the shapes later */
static void start(const slM_Graph *g, Placement *p, int batch, int context, uint64_t structure) {
  forget(p);
  int n = g->n;
  size_t nb = (size_t)SLOTS * (size_t)n;
  p->batch = batch, p->context = context, p->n = n, p->structure = structure;
  p->state = RECORDING;
  p->last_use = malloc((size_t)n * sizeof *p->last_use);
  p->ndim = calloc(nb, sizeof *p->ndim);
  p->shape = calloc(nb, sizeof *p->shape);
  p->dtype = calloc(nb, sizeof *p->dtype);
  p->bytes = calloc(nb, sizeof *p->bytes);
  p->offset = calloc(nb, sizeof *p->offset);
  for (int i = 0; i < n; i++) p->last_use[i] = -1;
  for (int i = 0; i < n; i++)
    for (int k = 0; k < g->nodes[i].ninputs; k++) p->last_use[g->nodes[i].inputs[k]] = i;
}

static void note(Placement *p, int b, const slM_Tensor *t) {
  p->ndim[b] = t->ndim;
  memcpy(p->shape[b], t->shape, sizeof p->shape[b]);
  p->dtype[b] = t->dtype;
  p->bytes[b] = slM_tensor_bytes(t);
}

/* outputs the caller reads after the pass: the logits, the output node's
** inputs, and outputs nobody reads (the loss) */
static int read_after(const slM_Graph *g, const Placement *p, int i) {
  if (i == slM_logits_node(g) || p->last_use[i] < 0) return 1;
  for (int j = 0; j < g->n; j++)
    if (g->nodes[j].op == OP_OUTPUT && g->nodes[j].inputs[0] == i) return 1;
  return 0;
}

static void place(const slM_Graph *g, Placement *p, const int *first, const int *last, int steps) {
  int nb = SLOTS * g->n;
  p->size = slM_plan_place(nb, p->bytes, first, last, p->offset);
  p->widest = p->widest_exact = 0;
  for (int step = 0; step <= steps; step++) {
    size_t alive = 0, exact = 0;
    for (int b = 0; b < nb; b++)
      if (first[b] <= step && step <= last[b]) alive += align_up(p->bytes[b]), exact += p->bytes[b];
    if (alive > p->widest) p->widest = alive;
    if (exact > p->widest_exact) p->widest_exact = exact;
  }
  p->state = PLANNED;
  p->plans++;
}

/* Inference: the pass runs over steps 0 .. n - 1. An output lives from its
** node's step to its last reader's; saved tensors for their node's step. */
static void place_inference(const slM_Graph *g, Placement *p) {
  int n = g->n, nb = SLOTS * n, *first = malloc((size_t)nb * sizeof *first), *last = malloc((size_t)nb * sizeof *last);
  for (int b = 0; b < nb; b++) {
    int i = b / SLOTS;
    first[b] = i;
    last[b] = b % SLOTS ? i : read_after(g, p, i) ? n : p->last_use[i];
  }
  place(g, p, first, last, n);
  free(first), free(last);
}

/* Training: step i is node i's forward, step 2n - 1 - i its backward. The
** backward of a node reads its output, what it saved and its inputs'
** outputs, and the backward of an input runs after its readers', so each
** output and saved tensor lives from its forward to its own backward. A
** node's gradient is first written by its last reader's backward and last
** read by its own. At the turn from forward to backward every activation is
** alive, so what the arena saves is the gradients' room: each takes the
** place of activations whose backward is done. */
static void place_training(const slM_Graph *g, Placement *p) {
  int n = g->n, nb = SLOTS * n, *first = malloc((size_t)nb * sizeof *first), *last = malloc((size_t)nb * sizeof *last);
  for (int b = 0; b < nb; b++) {
    int i = b / SLOTS, s = b % SLOTS, back = 2 * n - 1 - i;
    first[b] = s == 3 ? 2 * n - 1 - (p->last_use[i] < 0 ? i : p->last_use[i]) : i;
    last[b] = s == 0 && read_after(g, p, i) ? 2 * n : back;
  }
  place(g, p, first, last, 2 * n);
  free(first), free(last);
}

/* ----------------------------------------------------------------- hooks */

slM_Plan *slM_plan_begin(slM_Graph *g, int batch, int training) {
  slM_Plan *c = g->arena;
  if (!c) {
    c = g->arena = calloc(1, sizeof *c);
    c->held = -1;
  }
  int mode = training ? TRAINING : INFERENCE;
  int context = strcmp(g->family, "lm") == 0 ? g->context_now : 0;
  uint64_t structure = structure_of(g);
  Placement *p = &c->mode[mode];
  int same =
      p->state != EMPTY && p->batch == batch && p->context == context && p->n == g->n && p->structure == structure;
  c->current = mode;
  if (same && p->state == PLANNED) {
    if (c->held == mode) return mode == INFERENCE ? c : NULL; /* steady state */
    uninstall(g, c);
    if (install(g, c, mode)) return mode == INFERENCE ? c : NULL;
    same = 0; /* too large for one tensor: each buffer its own, as before planning */
  }
  if (mode == TRAINING && same) {
    /* the second step of a shape: the first one's tensors give the shapes
    ** (read before another arena's views go) */
    int loss = backward_start(g);
    for (int b = 0; b < SLOTS * g->n; b++) {
      slM_Node *nd = &g->nodes[b / SLOTS];
      int s = b % SLOTS;
      const slM_Tensor *t = *slot(nd, s);
      if (t && nd->op != OP_OUTPUT && !is_cache(nd, s) && !(s == 3 && b / SLOTS == loss)) note(p, b, t);
    }
    uninstall(g, c);
    place_training(g, p);
    if (!install(g, c, mode)) forget(p);
    return NULL;
  }
  uninstall(g, c);
  start(g, p, batch, context, structure);
  return mode == INFERENCE ? c : NULL; /* training: this step runs as before planning */
}

void slM_plan_after_node(slM_Graph *g, slM_Plan *c, int i) {
  Placement *p = &c->mode[INFERENCE];
  if (p->state != RECORDING) return;
  slM_Node *n = &g->nodes[i];
  for (int s = 0; s < 3 && n->op != OP_OUTPUT; s++) {
    const slM_Tensor *t = *slot(n, s);
    if (t && !is_cache(n, s)) note(p, SLOTS * i + s, t);
  }
  /* while recording, each output is freed right after its last reader runs,
  ** so the first pass's peak is the widest cut of the graph */
  for (int k = 0; k < n->ninputs; k++) {
    slM_Node *src = &g->nodes[n->inputs[k]];
    if (p->last_use[n->inputs[k]] == i && !read_after(g, p, n->inputs[k]) && src->op != OP_OUTPUT) {
      slM_tensor_free(src->out);
      src->out = NULL;
    }
  }
}

void slM_plan_end(slM_Graph *g, slM_Plan *c) {
  Placement *p = &c->mode[INFERENCE];
  if (p->state != RECORDING) return;
  if (g->stopped) forget(p); /* a pass cut short saw only some shapes: record again next time */
  else place_inference(g, p);
}

void slM_plan_release(slM_Graph *g) {
  if (g->arena) uninstall(g, g->arena);
}

void slM_plan_free(slM_Graph *g) {
  slM_Plan *c = g->arena;
  if (!c) return;
  uninstall(g, c);
  forget(&c->mode[INFERENCE]);
  forget(&c->mode[TRAINING]);
  free(c);
  g->arena = NULL;
}

void slM_plan_info(const slM_Graph *g, slM_PlanInfo *out) {
  memset(out, 0, sizeof *out);
  const slM_Plan *c = g->arena;
  if (c) {
    const Placement *p = &c->mode[c->current];
    int planned = p->state == PLANNED;
    out->arena_bytes = c->arena ? slM_tensor_bytes(c->arena) : 0;
    out->placed_bytes = planned ? p->size : 0;
    out->widest_bytes = planned ? p->widest : 0;
    out->widest_exact_bytes = planned ? p->widest_exact : 0;
    out->plans = p->plans;
    for (int b = 0; planned && b < SLOTS * p->n; b++) {
      out->outputs_bytes += p->bytes[b];
      out->buffers += p->bytes[b] > 0;
    }
  }
  for (int i = 0; i < g->n; i++) {
    const slM_Node *n = &g->nodes[i];
    const slM_Tensor *own[4] = {n->out, n->gout, n->saved, n->saved2};
    for (int k = 0; k < 4; k++)
      if (own[k] && !own[k]->view) out->kept_bytes += slM_tensor_bytes(own[k]);
  }
}
