/*
** graph.c - a graph as a whole: freeing and copying it, and checking it:
** structure against each operator's record, then the metadata every node
** carries (shapes for a batch of one, FLOPs and bytes per sample) from its
** operator's shape rule.
*/
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ops.h"
#include "plan.h"

void slM_graph_free(slM_Graph *g) {
  if (!g) return;
  slM_plan_free(g);
  for (int i = 0; i < g->n; i++) slM_node_clear(&g->nodes[i]);
  free(g->nodes);
  free(g);
}

static slM_Transform *clone_transform(const slM_Transform *t) { return t && t->clone ? t->clone(t) : NULL; }

slM_Graph *slM_graph_copy(const slM_Graph *g, int deep) {
  slM_Graph *c = malloc(sizeof *c);
  *c = *g;
  c->stop = NULL, c->stop_ud = NULL, c->stopped = 0;
  c->grad_ready = NULL, c->grad_ready_ud = NULL, c->feed_row0 = 0;
  c->profile = NULL;
  c->arena = NULL; /* a plan is for one graph's buffers */
  c->nodes = malloc((size_t)g->cap * sizeof *c->nodes);
  for (int i = 0; i < g->n; i++) {
    slM_Node *n = &c->nodes[i];
    *n = g->nodes[i];
    n->out = n->gout = n->saved = n->saved2 = NULL;
    n->gout_live = 0;
    for (int k = 0; k < n->nparams; k++) {
      if (deep) n->params[k] = slM_param_clone(g->nodes[i].params[k]);
      else n->params[k]->refs++;
    }
    const slM_NodeTransforms *from = &g->nodes[i].comp;
    n->comp.data_in = clone_transform(from->data_in);
    n->comp.data_in_prune = clone_transform(from->data_in_prune);
    n->comp.weight = clone_transform(from->weight);
    n->comp.bias = clone_transform(from->bias);
    if (from->weight_mask) {
      size_t size = n->params[0]->value->size;
      n->comp.weight_mask = slM_mask_new(size);
      memcpy(n->comp.weight_mask, from->weight_mask, size);
    }
  }
  return c;
}

/* ------------------------------------------------- verification, metadata */

/* the shape of the first input, and flops_per_item FLOPs per item of it */
static void same_shape(slM_Graph *g, slM_Node *n, double flops_per_item) {
  const slM_Node *a = &g->nodes[n->inputs[0]];
  n->ndim = a->ndim;
  memcpy(n->shape, a->shape, sizeof n->shape);
  size_t elems = 1;
  for (int d = 0; d < n->ndim; d++) elems *= (size_t)n->shape[d];
  n->flops = flops_per_item * (double)elems;
}

/* Bytes a sample moves through the node: what it reads of its inputs and
** writes of its output, and its parameters. A fused node's are those of
** its ends alone, which is what fusion saves. */
static void count_bytes(const slM_Graph *g, slM_Node *n) {
  double items = 1;
  for (int d = 1; d < n->ndim; d++) items *= n->shape[d];
  for (int k = 0; k < n->ninputs; k++) {
    const slM_Node *a = &g->nodes[n->inputs[k]];
    double e = 1;
    for (int d = 1; d < a->ndim; d++) e *= a->shape[d];
    items += e;
  }
  n->bytes = 4 * (items + (double)slM_node_params(n));
}

int slM_propagate(slM_Graph *g, char *err, size_t errlen) {
  for (int i = 0; i < g->n; i++) {
    slM_Node *n = &g->nodes[i];
    const slM_OpDef *d = slM_op(n->op);
    n->flops = 0;
    if (d->shape) {
      if (d->shape(g, n, err, errlen) != 0) return -1;
    } else {
      same_shape(g, n, d->flops_per_item);
    }
    count_bytes(g, n);
  }
  return 0;
}

/* a node setting against the range its operator declares (NaN is never inside one) */
static int setting_ok(const slM_Node *n, const char *what, double x, slM_Range r, char *err, size_t errlen) {
  if (r.lo == 0 && r.hi == 0) return 0; /* the operator does not read it */
  if (x >= r.lo && (r.below ? x < r.hi : x <= r.hi)) return 0;
  return snprintf(err, errlen, "node %s (%s) has %s = %g, outside [%g, %g%s", n->name, slM_op_name(n->op), what, x,
                  r.lo, r.hi, r.below ? ")" : "]"),
         -1;
}

/* the operator's rules of structure: inputs, parameters, the settings it reads, and its own check */
static int check_node(const slM_Graph *g, int i, char *err, size_t errlen) {
  const slM_Node *n = &g->nodes[i];
  const slM_OpDef *d = slM_op(n->op);
  if (n->ninputs < d->min_inputs || n->ninputs > d->max_inputs)
    return snprintf(err, errlen, "node %s (%s) has %d inputs", n->name, d->name, n->ninputs), -1;
  for (int k = 0; k < n->ninputs; k++) {
    int j = n->inputs[k];
    if (j < 0 || j >= i)
      return snprintf(err, errlen, "node %s reads node %d, which does not come before it (the graph must be acyclic)",
                      n->name, j),
             -1;
    if (g->nodes[j].op == OP_OUTPUT) return snprintf(err, errlen, "node %s reads the output node", n->name), -1;
  }
  if (n->nparams < d->min_params) return snprintf(err, errlen, "node %s lacks its parameters", n->name), -1;
  if (setting_ok(n, "heads", n->heads, d->heads, err, errlen) ||
      setting_ok(n, "patch", n->patch, d->patch, err, errlen) || setting_ok(n, "p", n->p, d->p, err, errlen))
    return -1;
  return d->check ? d->check(g, n, err, errlen) : 0;
}

int slM_verify(slM_Graph *g, char *err, size_t errlen) {
  int outputs = 0;
  for (int i = 0; i < g->n; i++) {
    slM_Node *n = &g->nodes[i];
    if (check_node(g, i, err, errlen) != 0) return -1;
    if (n->op == OP_OUTPUT) outputs++;
    for (int j = 0; j < i; j++)
      if (strcmp(g->nodes[j].name, n->name) == 0) return snprintf(err, errlen, "two nodes are named %s", n->name), -1;
  }
  if (outputs != 1 || g->nodes[g->n - 1].op != OP_OUTPUT)
    return snprintf(err, errlen, "a graph needs exactly one output node, at the end (found %d)", outputs), -1;
  return slM_propagate(g, err, errlen);
}
