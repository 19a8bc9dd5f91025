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
/* the tensor in *slot, reused when it has this shape, else made anew (zero-filled, float32) */
slM_Tensor *slM_ensure(slM_Tensor **slot, int ndim, const int *shape);
/* the same of a dtype (model.h: a 16-bit tensor holds bits, not floats) */
slM_Tensor *slM_ensure_as(slM_Tensor **slot, int ndim, const int *shape, int dtype);
/* node n's output slot in the dtype its forward stores it in (n->store) */
static inline slM_Tensor *slM_out(slM_Node *n, int ndim, const int *shape) {
  return slM_ensure_as(&n->out, ndim, shape, n->store);
}

/* Kernels over tensors of either storage go block by block: a block of a
** 16-bit tensor is widened into a buffer of SLM_BLOCK floats on the
** stack (exactly), computed in float32 as before, and the results rounded
** back as they are stored; a float32 tensor is read and written in place.
** The numbers are those of float32 storage holding 16-bit values. */
enum { SLM_BLOCK = 512 };
/* n <= SLM_BLOCK values of t from index i as float32: in place, or widened into buf */
const float *slM_get(const slM_Tensor *t, size_t i, size_t n, float *buf);
/* where n values for t from index i are to be computed: in place, or buf (then slM_put) */
static inline float *slM_dst(slM_Tensor *t, size_t i, float *buf) { return t->half ? buf : t->data + i; }
/* the n values computed at slM_dst(t, i, buf) stored: into t's bits, rounded to its dtype; or, in
** float32 storage, rounded in place to `round` (a 16-bit dtype) when it is not 0 */
void slM_put(slM_Tensor *t, size_t i, float *vals, size_t n, int round);
/* The gradient slot of input k. The first node to touch it in a backward
** pass finds it zeroed; through slM_input_grad_fresh, not zeroed but
** marked fresh (*fresh = 1), so that a loop that writes every item stores
** 0.0f + its term: the same bits as adding the term to a zeroed slot, in
** one pass instead of two. */
slM_Tensor *slM_input_grad(slM_Graph *g, slM_Node *n, int k);
slM_Tensor *slM_input_grad_fresh(slM_Graph *g, slM_Node *n, int k, int *fresh);
/* the gradient slot's shape is the input's output's; gradients are float32 whatever its storage */
/* the gradient of a parameter, made (zeroed, tagged gradient) at first use */
slM_Tensor *slM_param_grad(slM_Param *p);
/* x[0..n) = 0 on the thread team */
void slM_zero(float *x, size_t n);
/* 16-bit storage (precision.c's slM_node_store decides which outputs): 0 keeps every output in float32
** storage (rounded to its dtype as before), for the tests that hold 16-bit storage to it bit for bit;
** returns the setting before. slM_half_storage_on says the setting. */
int slM_half_storage(int on);
int slM_half_storage_on(void);
/* the dtype a dropout mask is stored in: its values are 0 and 1/(1 - p), kept as 16-bit flags (0 or 1)
** under a 16-bit precision on the CPU whatever the output's dtype, float32 otherwise */
int slM_mask_store(const slM_Graph *g);
/* the items of a node's output for a batch (its shape is a batch of one's), and its rows of the last dimension */
double slM_items(const slM_Node *n, int batch);
double slM_rows(const slM_Node *n, int batch);

#endif
