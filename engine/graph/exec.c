/*
** exec.c - running a graph: the forward pass walks the nodes in order, the
** backward pass walks them in reverse, each node running its operator's
** kernel for the graph's device from the operator table (ops.h).
**
** Around every node run the hooks of the profiler and the memory tagger
** (profile.c); under a precision mode each output is rounded to its dtype,
** and stored in 16 bits where its operator's kernels write them
** (precision.c); with buffer planning every output is placed in one arena
** (plan.c). The backward pass starts from the loss node (or, for an
** inference graph, from the softmax of the logits against the labels) and
** reaches only nodes whose gradient some later node wrote.
*/
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "devices.h"
#include "devslots.h"
#include "kernels/device.h"
#include "kernels/softmax.h"
#include "memory.h"
#include "ops.h"
#include "plan.h"
#include "precision.h"
#include "product.h"
#include "profile.h"
#include "slots.h"

/* A pass polls the stop hook between nodes: the longest wait is one node,
** not one batch (a transformer batch of 65536 images runs for seconds). The
** pass only computes activations and gradients; the weights change in the
** optimizer step alone, which a stopped step skips, so an interrupted step
** leaves every weight as it was. */
static int stop_now(slM_Graph *g) {
  if (g->fault[0]) return g->stopped = 1; /* a device call failed: the rest of the pass would read its output */
  return g->stop && (g->stopped = g->stop(g->stop_ud) != 0);
}

/* A model on the GPU is checked before its pass (an operator without a CUDA
** slot, no device): the pass does not start, and the reason is the fault.
** On either device a fault of an earlier pass stands until the command that
** runs the model clears it: a backward after a forward that stopped at a
** fault has nothing to go back from. */
static int device_refused(slM_Graph *g) {
  if (g->device == SLM_CPU) return g->fault[0] ? (g->stopped = 1) : 0;
  char why[200];
  if (slM_device_ready(g, why, sizeof why) != 0) snprintf(g->fault, sizeof g->fault, "%.200s", why);
  return g->fault[0] ? (g->stopped = 1) : 0;
}

/* SYSLAB_FAULT_NODE=NAME: a pass that reaches the node NAME stops there with
** a fault, as a failed kernel stops a pass on the GPU, so that what reports
** faults and carries on past them (lm_bench's rows, the GPU script's) can be
** checked on a machine without one. Read once per pass (a test sets it and
** clears it between commands), so the node loop pays one comparison. */
static int fault_injected(slM_Graph *g, const slM_Node *n, const char *name) {
  if (!name || strcmp(name, n->name) != 0) return 0;
  snprintf(g->fault, sizeof g->fault, "node %.63s: a fault injected by SYSLAB_FAULT_NODE", n->name);
  return g->stopped = 1;
}

static const slM_OpImpl *impl_of(const slM_Graph *g, const slM_Node *n) { return &slM_op(n->op)->impl[g->device]; }

/* An operator whose CPU kernels read float32 alone (no SLM_OP_HALF or SLM_OP_HALF_IN) sees
** its 16-bit inputs widened, exactly, into buffers kept between calls
** (product.c): while its kernel runs, each such input's output is a
** float32 view of the widened values. Its own output is float32
** (slM_node_store). */
static void run(slM_Graph *g, slM_Node *n, int backward) {
  const slM_OpImpl *impl = impl_of(g, n);
  slM_Kernel kernel = backward ? impl->backward : impl->forward;
  slM_Tensor *kept[SLM_MAX_INPUTS] = {NULL};
  int widen = g->device == SLM_CPU && !(slM_op(n->op)->flags & (SLM_OP_HALF | SLM_OP_HALF_IN));
  for (int k = 0; widen && k < n->ninputs; k++) {
    slM_Node *src = &g->nodes[n->inputs[k]];
    float *f = src->out && src->out->half ? slM_product_widened(k, src->out) : NULL; /* an input twice: once */
    if (!f) continue;
    kept[k] = src->out;
    src->out = slM_tensor_view(f, kept[k]->ndim, kept[k]->shape);
  }
  kernel(g, n);
  for (int k = n->ninputs - 1; k >= 0; k--)
    if (kept[k]) {
      slM_Node *src = &g->nodes[n->inputs[k]];
      slM_tensor_free(src->out);
      src->out = kept[k];
    }
}

/* the dtype of every node under a 16-bit precision (NULL in float32) */
static int *dtypes_of(const slM_Graph *g) {
  if (g->precision == SLM_FP32) return NULL;
  int *dt = malloc((size_t)g->n * sizeof *dt);
  slM_dtypes(g, dt);
  return dt;
}

/* The end of a forward pass on the GPU waits for its kernels, so that a
** fault inside one is reported here and a timing of the pass is the
** device's. The image models' loops read the logits on the host (accuracy);
** the language model's read the loss alone (slM_lm_loss): its logits are
** batch x context x vocab, and stay on the device. */
static void device_end_pass(slM_Graph *g, slM_Node *logits) {
  char err[200];
  if (g->stopped) return;
  if (slM_dev_fault(g, NULL, slK_gpu()->sync(err, sizeof err), err) != 0 ||
      (strcmp(g->family, "lm") != 0 && slM_dev_to_host(g, logits->out) != 0))
    g->stopped = 1;
}

/* With buffer planning (a graph after the fusion pass), a pass writes
** every output into its place in one arena (plan.c): the peak is the arena
** rather than the sum of the nodes, and nothing is allocated. */
slM_Tensor *slM_forward(slM_Graph *g, const float *x, const uint8_t *labels, int batch, int training) {
  g->training = training;
  g->stopped = 0;
  g->feed_x = x, g->feed_labels = labels, g->feed_batch = batch;
  int logits = slM_logits_node(g);
  if (device_refused(g)) return NULL; /* a fault stays until the command that runs the model starts again */
  int *dtypes = dtypes_of(g);
  slM_product_begin_pass(g); /* weights' working copies: the optimizer's, or made afresh at first use */
  slM_Plan *plan = g->plan ? slM_plan_begin(g, batch, training) : NULL;
  const char *fault_at = getenv("SYSLAB_FAULT_NODE");
  for (int i = 0; i < g->n && !stop_now(g) && !fault_injected(g, &g->nodes[i], fault_at); i++) {
    slM_node_begin(g, i, 0);
    slM_Node *n = &g->nodes[i];
    n->round = dtypes && (dtypes[i] == SLM_BF16 || dtypes[i] == SLM_FP16) ? dtypes[i] : 0;
    n->store = slM_node_store(g, i, dtypes);
    n->rounded = 0;
    run(g, n, 0);
    if (dtypes) slM_precision_after(g, i, dtypes);
    slM_node_end(g, i, 0);
    if (plan) slM_plan_after_node(g, plan, i);
  }
  if (plan) slM_plan_end(g, plan);
  free(dtypes);
  g->feed_x = NULL, g->feed_labels = NULL;
  if (g->device != SLM_CPU) device_end_pass(g, &g->nodes[logits]);
  return g->nodes[logits].out;
}

float *slM_input_rows(slM_Graph *g, int batch) {
  /* a planned graph places its input in its arena when the pass starts; on the GPU its rows are device memory */
  if (g->plan || g->device != SLM_CPU) return NULL;
  for (int i = 0; i < g->n; i++)
    if (g->nodes[i].op == OP_INPUT) {
      int shape[2] = {batch, g->features};
      return slM_ensure(&g->nodes[i].out, 2, shape)->data;
    }
  return NULL;
}

/* an inference graph: the loss is computed outside it, as a training loop
** would, and its gradient seeds the logits */
static double seed_from_logits(slM_Node *n, const uint8_t *labels, int batch) {
  int C = n->out->shape[1];
  slM_tensor_free(n->gout);
  n->gout = slM_tensor_like(n->out);
  n->gout_live = 1;
  slK_softmax_rows(n->out->data, n->gout->data, (size_t)batch, C);
  double loss = 0;
  for (int b = 0; b < batch; b++) {
    float *row = n->gout->data + (size_t)b * C;
    loss -= log(row[labels[b]] + 1e-12);
    row[labels[b]] -= 1;
    for (int c = 0; c < C; c++) row[c] /= (float)batch;
  }
  return loss / batch;
}

/* On the GPU the loss is read back, or, for a graph without a loss node,
** computed on the host from the logits the forward brought back, and its
** gradient sent to the device. */
static double seed_on_device(slM_Graph *g, int loss_node, int start, const uint8_t *labels, int batch) {
  slM_Node *n = &g->nodes[start];
  if (!n->out || (loss_node < 0 && !n->out->data)) { /* the forward pass stopped before it */
    slM_dev_fault(g, n, -1, "the forward pass did not reach this node, so there is nothing to go back from");
    return NAN;
  }
  if (loss_node >= 0) return slM_dev_seed_loss(g, n);
  double loss = seed_from_logits(n, labels, batch); /* from the logits' host copy; n->gout: the seed on the host */
  slM_Tensor *seed = n->gout;
  n->gout = NULL;
  if (slM_dev_ensure(g, n, &n->gout, seed->ndim, seed->shape)) {
    char err[200];
    slM_dev_fault(g, n, slK_gpu()->upload(n->gout->dev, seed->data, seed->size * sizeof(float), err, sizeof err), err);
  }
  slM_tensor_free(seed);
  return loss;
}

double slM_backward(slM_Graph *g, const uint8_t *labels, int batch) {
  g->stopped = 0;
  if (device_refused(g)) return NAN; /* on the GPU: the forward pass's fault stands */
  for (int i = 0; i < g->n; i++) g->nodes[i].gout_live = 0;
  int loss_node = slM_loss_node(g), start = loss_node >= 0 ? loss_node : slM_logits_node(g);
  double loss;
  slM_node_begin(g, start, 1);
  if (g->device != SLM_CPU) {
    loss = seed_on_device(g, loss_node, start, labels, batch);
  } else if (loss_node >= 0) {
    slM_Node *n = &g->nodes[loss_node];
    slM_tensor_free(n->gout);
    n->gout = slM_tensor_like(n->out);
    n->gout_live = 1;
    n->gout->data[0] = 1;
    loss = n->out->data[0];
  } else {
    loss = seed_from_logits(&g->nodes[start], labels, batch);
  }
  slM_node_end(g, start, 1);
  for (int i = g->n - 1; i >= 0 && !stop_now(g); i--)
    if (g->nodes[i].gout_live) {
      slM_node_begin(g, i, 1);
      run(g, &g->nodes[i], 1);
      slM_node_end(g, i, 1);
      if (g->grad_ready) g->grad_ready(g->grad_ready_ud, i);
    }
  char err[200]; /* the pass's kernels done, as at the end of a forward pass */
  if (g->device != SLM_CPU && !g->stopped && slM_dev_fault(g, NULL, slK_gpu()->sync(err, sizeof err), err) != 0)
    g->stopped = 1;
  return loss;
}

void slM_zero_grads(slM_Graph *g) {
  if (g->device != SLM_CPU) {
    slM_dev_zero_grads(g);
    return;
  }
  for (int i = 0; i < g->n; i++)
    for (int k = 0; k < g->nodes[i].nparams; k++) {
      slM_Param *p = g->nodes[i].params[k];
      if (p->grad) slM_zero(p->grad->data, p->grad->size);
    }
}

/* A fresh model has no parameter gradients: the first backward pass that needs one makes it (slots.c, devslots.c).
** A parameter shared by several nodes is met more than once; its gradient goes at the first. */
void slM_release_grads(slM_Graph *g) {
  for (int i = 0; i < g->n; i++)
    for (int k = 0; k < g->nodes[i].nparams; k++) {
      slM_Param *p = g->nodes[i].params[k];
      slM_tensor_free(p->grad);
      p->grad = NULL;
    }
}

void slM_release_activations(slM_Graph *g) {
  slM_plan_release(g);         /* the arena and its views */
  slM_product_free_weights(g); /* the weights' 16-bit working copies */
  for (int i = 0; i < g->n; i++) {
    slM_Node *n = &g->nodes[i];
    slM_tensor_free(n->out);
    slM_tensor_free(n->gout);
    slM_tensor_free(n->saved);
    slM_tensor_free(n->saved2);
    n->out = n->gout = n->saved = n->saved2 = NULL;
    n->gout_live = 0;
  }
}
