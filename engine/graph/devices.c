/*
** devices.c - a model on a device: the copy of a model on the GPU or back
** on the CPU, the checks that say why a model cannot go there, and the
** prediction of its device memory. The device tensors its passes make are
** devslots.c's.
**
** A model on the GPU is its graph with g->device = SLM_CUDA: the forward
** and backward passes run each operator's CUDA slot (exec.c), and the
** optimiser's update is one launch over every parameter (train.c). Every
** tensor a pass makes lives in device memory only (data NULL, dev set),
** from the caching allocator of kernels/device.c, counted by the memory
** categories of memory.c; the logits and the loss are brought back because
** the training loop reads them. Parameters, their gradients and optimiser
** state live on the device too and keep a host copy, refreshed when a
** command ends (slM_device_pull), so that what reads weights on the host
** (show, checkpoints, difference, compression) keeps working.
**
** What cannot run there is refused with the reason before anything moves:
** no GPU (the reason the CUDA runtime gives), an operator without a CUDA
** slot, buffer planning, compression transforms. A 16-bit precision runs
** its products on the tensor cores (ops_cuda.c). Its activations keep
** float32 storage: 16-bit storage is the CPU's (precision.c's
** slM_node_store answers float32 for a graph on the GPU), as the CUDA
** slots read and write float32 device buffers; the values are the same.
*/
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "devices.h"
#include "devslots.h"
#include "kernels/device.h"
#include "memory.h"
#include "ops.h"

const char *slM_device_name(int device) { return device == SLM_CUDA ? "gpu" : "cpu"; }

int slM_device_parse(const char *name) {
  if (!name) return -1;
  if (strcmp(name, "cpu") == 0) return SLM_CPU;
  if (strcmp(name, "gpu") == 0 || strcmp(name, "cuda") == 0) return SLM_CUDA;
  return -1;
}

static int has_transforms(const slM_Node *n) {
  const slM_NodeTransforms *c = &n->comp;
  return c->data_in || c->data_in_prune || c->weight || c->bias || c->weight_mask;
}

int slM_device_check(const slM_Graph *g, int device, char *err, size_t errlen) {
  if (device == SLM_CPU) return 0;
  if (device != SLM_CUDA)
    return snprintf(err, errlen, "unknown device %d: the devices are " SLM_DEVICE_NAMES, device), -1;
  if (!slK_dev_available()) return slM_device_usable("gpu", err, errlen);
  for (int i = 0; i < g->n; i++) {
    const slM_Node *n = &g->nodes[i];
    const slM_OpImpl *cuda = &slM_op(n->op)->impl[SLM_CUDA];
    if (!cuda->forward || !cuda->backward)
      return snprintf(err, errlen,
                      "node %s: operator %s has no CUDA implementation, so this %s model runs on the CPU "
                      "only (the fusion pass's operators are the CPU's; move the model unfused: docs/gpu.md lists the "
                      "operators the GPU runs)",
                      n->name, slM_op_name(n->op), g->family),
             -1;
    if (has_transforms(n))
      return snprintf(err, errlen,
                      "node %s has a compression transform (a quantiser or a pruning mask): compressed "
                      "models run on the CPU only",
                      n->name),
             -1;
  }
  if (g->plan)
    return snprintf(err, errlen,
                    "buffer planning (the fusion pass's arena) is the CPU's; the GPU's caching "
                    "allocator reuses its blocks instead: move the model before fusing it"),
           -1;
  return 0;
}

int slM_device_ready(const slM_Graph *g, char *err, size_t errlen) {
  if (slM_device_check(g, g->device, err, errlen) != 0) return -1;
  for (int i = 0; g->device == SLM_CUDA && i < g->n; i++)
    for (int k = 0; k < g->nodes[i].nparams; k++)
      if (!g->nodes[i].params[k]->value->dev)
        return snprintf(err, errlen,
                        "node %s: parameter %s has no copy on the GPU (a model made from a GPU model "
                        "on the host, as LoRA adapters are): `to m gpu` moves all of it",
                        g->nodes[i].name, g->nodes[i].params[k]->name),
               -1;
  return 0;
}

/* ------------------------------------------------------------ the copy */

static slM_Tensor *copy_tagged(const slM_Tensor *t, int category) {
  if (!t) return NULL;
  slM_Tensor *c = slM_tensor_copy(t);
  slM_mem_retag(c, category);
  return c;
}

/* the optimiser state and gradient come too: a copy trains on as the original would */
static void copy_state(slM_Param *to, const slM_Param *from) {
  to->grad = copy_tagged(from->grad, SLM_MEM_GRAD);
  to->m = copy_tagged(from->m, SLM_MEM_OPTIM);
  to->v = copy_tagged(from->v, SLM_MEM_OPTIM);
}

static int upload_param(slM_Param *p, char *err, size_t errlen) {
  if (slM_dev_upload_tensor(p->value, err, errlen) || slM_dev_upload_tensor(p->grad, err, errlen) ||
      slM_dev_upload_tensor(p->m, err, errlen) || slM_dev_upload_tensor(p->v, err, errlen))
    return -1;
  return 0;
}

slM_Graph *slM_graph_to(slM_Graph *g, int device, char *err, size_t errlen) {
  if (slM_device_check(g, device, err, errlen) != 0) return NULL;
  if (g->device == SLM_CUDA && slM_device_pull(g, err, errlen) != 0) return NULL;
  slM_Graph *c = slM_graph_copy(g, 1);
  c->device = device;
  c->fault[0] = '\0';
  for (int i = 0; i < c->n; i++)
    for (int k = 0; k < c->nodes[i].nparams; k++) copy_state(c->nodes[i].params[k], g->nodes[i].params[k]);
  for (int i = 0; device == SLM_CUDA && i < c->n; i++)
    for (int k = 0; k < c->nodes[i].nparams; k++)
      if (upload_param(c->nodes[i].params[k], err, errlen) != 0) {
        slM_graph_free(c);
        return NULL;
      }
  return c;
}

int slM_device_usable(const char *name, char *err, size_t errlen) {
  int device = slM_device_parse(name);
  if (device < 0) return snprintf(err, errlen, "unknown device '%s': the devices are " SLM_DEVICE_NAMES, name), -1;
  if (device == SLM_CUDA && !slK_dev_available())
    return snprintf(err, errlen, "the gpu device needs a CUDA GPU, and here there is %s; cpu runs everywhere",
                    slK_dev_why()),
           -1;
  return 0;
}

slM_Graph *slM_graph_move(slM_Graph *g, int device, char *err, size_t errlen) {
  if (device == SLM_CPU && g->device == SLM_CPU) return g;
  slM_Graph *moved = slM_graph_to(g, device, err, errlen);
  slM_graph_free(g);
  return moved;
}

static int pull(slM_Tensor *t, char *err, size_t errlen) {
  return t && t->dev && t->data ? slK_gpu()->download(t->data, t->dev, slM_dev_bytes(t), err, errlen) : 0;
}

int slM_device_pull(slM_Graph *g, char *err, size_t errlen) {
  if (g->device != SLM_CUDA) return 0;
  for (int i = 0; i < g->n; i++)
    for (int k = 0; k < g->nodes[i].nparams; k++) {
      slM_Param *p = g->nodes[i].params[k];
      if (pull(p->value, err, errlen) || pull(p->grad, err, errlen) || pull(p->m, err, errlen) ||
          pull(p->v, err, errlen)) {
        snprintf(g->fault, sizeof g->fault, "%.200s", err);
        return -1;
      }
    }
  return 0;
}

/* ---------------------------------------------------------- prediction */

double slM_device_predict(const slM_Graph *g, int batch, int training, double by[5]) {
  size_t trainable, total;
  slM_param_counts(g, &trainable, &total);
  double cats[SLM_MEM_NCAT] = {0};
  cats[SLM_MEM_PARAM] = 4.0 * (double)total;
  if (training) cats[SLM_MEM_GRAD] = 4.0 * (double)trainable, cats[SLM_MEM_OPTIM] = 8.0 * (double)trainable;
  for (int i = 0; i < g->n; i++) {
    const slM_Node *n = &g->nodes[i];
    const slM_OpDef *d = slM_op(n->op);
    double items = 1;
    for (int k = 1; k < n->ndim; k++) items *= n->shape[k];
    cats[SLM_MEM_ACT] += 4.0 * items * batch + (d->saves ? 4.0 * d->saves(g, n, batch, training) : 0);
    if (training) cats[SLM_MEM_TEMP] += 4.0 * items * batch; /* the gradient of every output */
  }
  double sum = 0;
  for (int c = 0; c < SLM_MEM_NCAT; c++) {
    if (by) by[c] = cats[c];
    sum += cats[c];
  }
  return sum;
}

static double dev_bytes(const slM_Tensor *t) { return t && t->dev ? (double)t->size * sizeof(float) : 0; }

/* the device bytes of a model's own tensors: its parameters (a parameter shared by two nodes once), their
** gradients and state, and the slots its passes keep */
static double model_held(const slM_Graph *g) {
  double held = 0;
  for (int i = 0; i < g->n; i++) {
    const slM_Node *n = &g->nodes[i];
    held += dev_bytes(n->out) + dev_bytes(n->gout) + dev_bytes(n->saved) + dev_bytes(n->saved2);
    for (int k = 0; k < n->nparams; k++) {
      const slM_Param *p = n->params[k];
      int seen = 0;
      for (int j = 0; j < i && !seen; j++)
        for (int q = 0; q < g->nodes[j].nparams; q++) seen |= g->nodes[j].params[q] == p;
      for (int q = 0; q < k; q++) seen |= n->params[q] == p;
      if (!seen) held += dev_bytes(p->value) + dev_bytes(p->grad) + dev_bytes(p->m) + dev_bytes(p->v);
    }
  }
  return held;
}

int slM_device_fits(const slM_Graph *g, int batch, int training, char *err, size_t errlen) {
  if (g->device != SLM_CUDA) return 0;
  double by[SLM_MEM_NCAT];
  double need = slM_device_predict(g, batch, training, by);
  /* what this model already holds on the device is part of the prediction
  ** (other models' memory is not: the device must hold it besides) */
  double held = model_held(g), more = need > held ? need - held : 0;
  char why[240];
  if (slK_dev_fits((size_t)more, why, sizeof why) == 0) return 0;
  return snprintf(err, errlen,
                  "refused before allocating: a %s pass of batch %d is predicted to take %.3f GiB on "
                  "the device (parameters %.3f, gradients %.3f, optimiser state %.3f, activations %.3f, temporaries "
                  "%.3f): %s; use a smaller batch",
                  training ? "training" : "inference", batch, need / 1073741824.0, by[SLM_MEM_PARAM] / 1073741824.0,
                  by[SLM_MEM_GRAD] / 1073741824.0, by[SLM_MEM_OPTIM] / 1073741824.0, by[SLM_MEM_ACT] / 1073741824.0,
                  by[SLM_MEM_TEMP] / 1073741824.0, why),
         -1;
}
