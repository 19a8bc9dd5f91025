/*
** devslots.h - the device tensors of the CUDA slots (devslots.c), as
** slots.h is for the CPU's: output and saved slots in device memory, the
** gradient slots of inputs and parameters, and the few values a pass
** brings back to the host. A failed device call stops the pass with its
** reason kept in the graph.
*/
#ifndef SYSLAB_DEVSLOTS_H
#define SYSLAB_DEVSLOTS_H

#include "model.h"

/* the bytes of a tensor's float32 values, as a device copy holds them */
static inline size_t slM_dev_bytes(const slM_Tensor *t) { return t->size * sizeof(float); }

/* a host tensor given its device copy (zeroed when it has no host data to copy); 0, or -1 with err */
int slM_dev_upload_tensor(slM_Tensor *t, char *err, size_t errlen);
/* a failed device call: the pass stops at this node with the reason kept
** in g->fault; returns rc (0 passes through) */
int slM_dev_fault(slM_Graph *g, const slM_Node *n, int rc, const char *why);
/* the device tensor in *slot, reused when it has this shape, else made anew
** (not zeroed); NULL when the memory could not be had (the fault set) */
slM_Tensor *slM_dev_ensure(slM_Graph *g, const slM_Node *n, slM_Tensor **slot, int ndim, const int *shape);
/* the gradient slot of input k on the device, zeroed when the pass first reaches it; NULL on a fault */
slM_Tensor *slM_dev_input_grad(slM_Graph *g, slM_Node *n, int k);
/* a parameter's gradient on the device (made zeroed at first use); NULL on a fault or when it is frozen */
float *slM_dev_param_grad(slM_Graph *g, const slM_Node *n, slM_Param *p);
/* a host tensor made on the device brought to the host (the logits the caller reads); 0 or -1 */
int slM_dev_to_host(slM_Graph *g, slM_Tensor *t);
/* the loss node's value read back and its gradient seeded with 1 on the device */
double slM_dev_seed_loss(slM_Graph *g, slM_Node *n);
/* every parameter gradient zeroed on the device */
void slM_dev_zero_grads(slM_Graph *g);

#endif
