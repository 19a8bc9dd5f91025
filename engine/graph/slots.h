/*
** slots.h - what an operator's kernels reach their tensors through
** (slots.c): its inputs' outputs, its own output and saved slots, and the
** gradient slots of its inputs and parameters. Every family's operator
** file uses these, so they sit below all of them.
*/
#ifndef SYSLAB_SLOTS_H
#define SYSLAB_SLOTS_H

#include "model.h"

/* fewest items worth handing to another thread */
#define SLM_ELEMS 16384

/* the output of node n's input k */
static inline slM_Tensor *slM_input(slM_Graph *g, const slM_Node *n, int k) { return g->nodes[n->inputs[k]].out; }
/* the tensor in *slot, reused when it has this shape, else made anew (zero-filled) */
slM_Tensor *slM_ensure(slM_Tensor **slot, int ndim, const int *shape);
/* The gradient slot of input k. The first node to touch it in a backward
** pass finds it zeroed; through slM_input_grad_fresh, not zeroed but
** marked fresh (*fresh = 1), so that a loop that writes every item stores
** 0.0f + its term: the same bits as adding the term to a zeroed slot, in
** one pass instead of two. */
slM_Tensor *slM_input_grad(slM_Graph *g, slM_Node *n, int k);
slM_Tensor *slM_input_grad_fresh(slM_Graph *g, slM_Node *n, int k, int *fresh);
/* the gradient of a parameter, made (zeroed, tagged gradient) at first use */
slM_Tensor *slM_param_grad(slM_Param *p);
/* x[0..n) = 0 on the thread team */
void slM_zero(float *x, size_t n);
/* the items of a node's output for a batch (its shape is a batch of one's), and its rows of the last dimension */
double slM_items(const slM_Node *n, int batch);
double slM_rows(const slM_Node *n, int batch);

#endif
