/*
** nodes.c - the graph IR's vocabulary: parameters, nodes, and the
** questions passes and runs ask of them (which node is the output, the
** logits, the loss; who reads a node).
**
** Nodes are kept in execution order and refer to their inputs by index, so
** an input always comes before its users and the graph is acyclic by
** construction; users are derived when needed rather than stored twice.
** Parameters are reference-counted: a capture or a pass shares them with
** the graph it came from, a deep copy owns new ones. A node owns its
** transforms and its run-time tensors and frees them with itself.
*/
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kernels/parallel.h"
#include "memory.h"
#include "ops.h"

const char *slM_kind_name(slM_Kind k) {
  static const char *const names[] = {"placeholder", "call_module", "call_function", "call_method", "output"};
  return names[k];
}

/* ------------------------------------------------------------ parameters */

slM_Param *slM_param_new(const char *name, int ndim, const int *shape) {
  slM_Param *p = calloc(1, sizeof *p);
  p->refs = 1;
  snprintf(p->name, sizeof p->name, "%s", name);
  p->value = slM_tensor_new(ndim, shape);
  slM_mem_retag(p->value, SLM_MEM_PARAM);
  return p;
}

void slM_param_release(slM_Param *p) {
  if (!p || --p->refs > 0) return;
  /* a weight's bf16 copy outlives a training forward whose backward never ran (a stopped step, a
  ** model freed in between): uncounted from the value's size before the value goes */
  if (p->half) slM_mem_external(-(long long)(2 * p->value->size));
  free(p->half);
  slM_tensor_free(p->value);
  slM_tensor_free(p->grad);
  slM_tensor_free(p->m);
  slM_tensor_free(p->v);
  free(p);
}

slM_Param *slM_param_clone(const slM_Param *p) {
  slM_Param *c = slM_param_new(p->name, p->value->ndim, p->value->shape);
  memcpy(c->value->data, p->value->data, p->value->size * sizeof(float));
  c->frozen = p->frozen;
  return c;
}

/* Each value is one normal from two draws of the stream (slM_rng_normal):
** value i takes draws 2i + 1 and 2i + 2. The stream is counter-based
** (slM_rng_skip), so each chunk of the thread team starts its own generator
** where one thread's loop would have reached it, and the weights are the
** same numbers on any number of cores (a 2.7B model's 2.7e9 draws of a
** logarithm, a cosine and a square root took two minutes on one). The draw
** stops at an interrupt, and the command building the model sees
** sl_interrupted() and frees it (a model is never kept half drawn). */
typedef struct {
  float *x;
  uint64_t state;
  double std;
} NormalFill;

static void normal_range(void *ctx, size_t begin, size_t end) {
  const NormalFill *f = ctx;
  slM_Rng r = {f->state};
  slM_rng_skip(&r, 2 * (uint64_t)begin);
  for (size_t i = begin; i < end; i++) {
    if (((i - begin) & 0xFFFF) == 0 && sl_interrupted()) return;
    f->x[i] = (float)(slM_rng_normal(&r) * f->std);
  }
}

void slM_param_normal(slM_Param *p, slM_Rng *rng, double std) {
  NormalFill f = {p->value->data, rng->state, std};
  slK_parallel_for(p->value->size, (size_t)1 << 15, normal_range, &f);
  slM_rng_skip(rng, 2 * (uint64_t)p->value->size);
}

void slM_param_fill(slM_Param *p, float v) {
  for (size_t i = 0; i < p->value->size; i++) p->value->data[i] = v;
}

/* ----------------------------------------------------------------- nodes */

int slM_add_node(slM_Graph *g, const char *name, slM_Kind kind, slM_Op op, const int *inputs, int ninputs) {
  if (g->n == g->cap) {
    g->cap = g->cap ? g->cap * 2 : 32;
    g->nodes = realloc(g->nodes, (size_t)g->cap * sizeof *g->nodes);
  }
  slM_Node *n = &g->nodes[g->n];
  memset(n, 0, sizeof *n);
  snprintf(n->name, sizeof n->name, "%s", name);
  n->kind = kind;
  n->op = op;
  for (int i = 0; i < ninputs; i++) n->inputs[i] = inputs[i];
  n->ninputs = ninputs;
  return g->n++;
}

/* A pruning mask is a byte per weight that its model holds as long as it
** lives: counted with the parameters, so that memory figures and their
** prediction include it. */
unsigned char *slM_mask_new(size_t n) {
  unsigned char *mask = malloc(n ? n : 1);
  slM_mem_held(SLM_MEM_PARAM, (long long)n);
  return mask;
}

void slM_mask_free(unsigned char *mask, size_t n) {
  if (!mask) return;
  slM_mem_held(SLM_MEM_PARAM, -(long long)n);
  free(mask);
}

static void free_comp(slM_NodeTransforms *c, size_t mask_bytes) {
  slM_Transform *ts[4] = {c->data_in, c->data_in_prune, c->weight, c->bias};
  for (int i = 0; i < 4; i++)
    if (ts[i] && ts[i]->free) ts[i]->free(ts[i]);
  slM_mask_free(c->weight_mask, mask_bytes);
  memset(c, 0, sizeof *c);
}

void slM_node_clear(slM_Node *n) {
  size_t mask_bytes = n->comp.weight_mask ? n->params[0]->value->size : 0; /* its weight's, before it goes */
  for (int k = 0; k < n->nparams; k++) slM_param_release(n->params[k]);
  free_comp(&n->comp, mask_bytes);
  slM_tensor_free(n->out);
  slM_tensor_free(n->gout);
  slM_tensor_free(n->saved);
  slM_tensor_free(n->saved2);
}

/* node i goes; its users read its first input instead (replace_all_uses_with) */
void slM_remove_node(slM_Graph *g, int i) {
  int replacement = g->nodes[i].ninputs ? g->nodes[i].inputs[0] : -1;
  slM_node_clear(&g->nodes[i]);
  memmove(&g->nodes[i], &g->nodes[i + 1], (size_t)(g->n - i - 1) * sizeof *g->nodes);
  g->n--;
  for (int j = i; j < g->n; j++)
    for (int k = 0; k < g->nodes[j].ninputs; k++) {
      int *in = &g->nodes[j].inputs[k];
      if (*in == i) *in = replacement; /* replace_all_uses_with */
      else if (*in > i) (*in)--;
    }
}

/* inserts a node at position `at`, shifting later nodes and their references */
int slM_insert_node(slM_Graph *g, int at, const char *name, slM_Kind kind, slM_Op op, const int *inputs, int ninputs) {
  int last = slM_add_node(g, name, kind, op, inputs, ninputs);
  slM_Node fresh = g->nodes[last];
  memmove(&g->nodes[at + 1], &g->nodes[at], (size_t)(last - at) * sizeof *g->nodes);
  g->nodes[at] = fresh;
  for (int j = at + 1; j < g->n; j++)
    for (int k = 0; k < g->nodes[j].ninputs; k++)
      if (g->nodes[j].inputs[k] >= at) g->nodes[j].inputs[k]++;
  return at;
}

int slM_find_node(const slM_Graph *g, const char *name) {
  for (int i = 0; i < g->n; i++)
    if (strcmp(g->nodes[i].name, name) == 0) return i;
  return -1;
}

static int output_node(const slM_Graph *g) {
  for (int i = g->n - 1; i >= 0; i--)
    if (g->nodes[i].op == OP_OUTPUT) return i;
  return -1;
}

int slM_loss_node(const slM_Graph *g) {
  for (int i = 0; i < g->n; i++)
    if (slM_op(g->nodes[i].op)->flags & SLM_OP_LOSS) return i;
  return -1;
}

int slM_logits_node(const slM_Graph *g) {
  int loss = slM_loss_node(g);
  if (loss >= 0) return g->nodes[loss].inputs[0];
  int o = output_node(g);
  return o >= 0 ? g->nodes[o].inputs[0] : g->n - 1;
}

int slM_users(const slM_Graph *g, int i, int *users) {
  int n = 0;
  for (int j = i + 1; j < g->n; j++)
    for (int k = 0; k < g->nodes[j].ninputs; k++)
      if (g->nodes[j].inputs[k] == i) {
        users[n++] = j;
        break;
      }
  return n;
}

size_t slM_node_params(const slM_Node *n) {
  size_t total = 0;
  for (int k = 0; k < n->nparams; k++) total += n->params[k]->value->size;
  return total;
}

void slM_param_counts(const slM_Graph *g, size_t *trainable, size_t *total) {
  *trainable = *total = 0;
  for (int i = 0; i < g->n; i++)
    for (int k = 0; k < g->nodes[i].nparams; k++) {
      size_t s = g->nodes[i].params[k]->value->size;
      *total += s;
      if (!g->nodes[i].params[k]->frozen) *trainable += s;
    }
}
