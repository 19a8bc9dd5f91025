/*
** devslots.c - the device tensors a model on the GPU runs with: each made
** from the caching allocator of kernels/device.c under the memory category
** the node hooks set (profile.c), so the device's bytes are counted as the
** CPU's are; gradient slots zeroed when a backward pass first reaches them,
** because the CUDA operators add into their gradients.
*/
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "devslots.h"
#include "kernels/device.h"
#include "memory.h"

int slM_dev_upload_tensor(slM_Tensor *t, char *err, size_t errlen) {
  if (!t || t->dev) return 0;
  t->dev = slK_dev_alloc(slM_dev_bytes(t), t->category, err, errlen);
  if (!t->dev) return -1;
  return slK_gpu()->upload(t->dev, t->data, slM_dev_bytes(t), err, errlen);
}

int slM_dev_fault(slM_Graph *g, const slM_Node *n, int rc, const char *why) {
  if (rc != 0 && !g->fault[0])
    snprintf(g->fault, sizeof g->fault, "node %.63s on the GPU: %.160s", n ? n->name : "-", why);
  return rc;
}

static slM_Tensor *device_tensor(slM_Graph *g, const slM_Node *n, int ndim, const int *shape, int category) {
  slM_Tensor *t = calloc(1, sizeof *t);
  if (!t) return slM_dev_fault(g, n, -1, "out of host memory for a device tensor's record"), NULL;
  t->ndim = ndim;
  t->size = 1;
  for (int i = 0; i < ndim; i++) t->shape[i] = shape[i], t->size *= (size_t)shape[i];
  t->category = category;
  t->node = n ? (int)(n - g->nodes) : -1;
  char err[200];
  t->dev = slK_dev_alloc(slM_dev_bytes(t), category, err, sizeof err);
  if (!t->dev) {
    free(t);
    slM_dev_fault(g, n, -1, err);
    return NULL;
  }
  return t;
}

slM_Tensor *slM_dev_ensure(slM_Graph *g, const slM_Node *n, slM_Tensor **slot, int ndim, const int *shape) {
  slM_Tensor *t = *slot;
  int same = t && t->dev && t->ndim == ndim;
  for (int i = 0; same && i < ndim; i++) same = t->shape[i] == shape[i];
  if (same) return t;
  slM_tensor_free(t);
  return *slot = device_tensor(g, n, ndim, shape, slM_mem_category());
}

slM_Tensor *slM_dev_input_grad(slM_Graph *g, slM_Node *n, int k) {
  slM_Node *src = &g->nodes[n->inputs[k]];
  if (src->gout_live) return src->gout;
  slM_Tensor *t = slM_dev_ensure(g, n, &src->gout, src->out->ndim, src->out->shape);
  char err[200];
  if (!t || slM_dev_fault(g, n, slK_gpu()->zero(t->dev, slM_dev_bytes(t), err, sizeof err), err)) return NULL;
  src->gout_live = 1;
  return t;
}

float *slM_dev_param_grad(slM_Graph *g, const slM_Node *n, slM_Param *p) {
  if (p->frozen) return NULL;
  char err[200];
  if (!p->grad) {
    p->grad = slM_tensor_like(p->value);
    slM_mem_retag(p->grad, SLM_MEM_GRAD);
    if (slM_dev_fault(g, n, slM_dev_upload_tensor(p->grad, err, sizeof err), err)) return NULL;
  }
  return p->grad->dev;
}

int slM_dev_to_host(slM_Graph *g, slM_Tensor *t) {
  if (!t || !t->dev) return 0;
  if (!t->data) {
    t->data = malloc(slM_dev_bytes(t) ? slM_dev_bytes(t) : 1);
    if (!t->data) return slM_dev_fault(g, NULL, -1, "out of host memory for the logits");
    /* the host copy is counted under the device copy's category and node */
    slM_mem_set_context(t->node, 0, t->category, NULL, NULL);
    slM_mem_on_alloc(t);
    slM_mem_set_context(-1, 0, SLM_MEM_TEMP, NULL, NULL);
  }
  char err[200];
  return slM_dev_fault(g, NULL, slK_gpu()->download(t->data, t->dev, slM_dev_bytes(t), err, sizeof err), err);
}

double slM_dev_seed_loss(slM_Graph *g, slM_Node *n) {
  float one = 1, loss = 0;
  char err[200];
  slM_Tensor *go = slM_dev_ensure(g, n, &n->gout, n->out->ndim, n->out->shape);
  if (!go) return 0;
  n->gout_live = 1;
  if (slM_dev_fault(g, n, slK_gpu()->upload(go->dev, &one, sizeof one, err, sizeof err), err) ||
      slM_dev_fault(g, n, slK_gpu()->download(&loss, n->out->dev, sizeof loss, err, sizeof err), err))
    return 0;
  return loss;
}

void slM_dev_zero_grads(slM_Graph *g) {
  char err[200];
  for (int i = 0; i < g->n; i++)
    for (int k = 0; k < g->nodes[i].nparams; k++) {
      slM_Tensor *t = g->nodes[i].params[k]->grad;
      if (t && t->dev) slM_dev_fault(g, &g->nodes[i], slK_gpu()->zero(t->dev, slM_dev_bytes(t), err, sizeof err), err);
    }
}
