/*
** precision.c - mixed precision in the manner of autocast: which dtype
** every node's output has under a precision mode, read from the operator
** table, and the rounding of outputs to it.
**
** Products (linear layers and attention's two products) take bfloat16 or
** float16 inputs and accumulate in float32 (product.c); norms, softmax and
** the loss stay float32; an elementwise operation keeps the widest dtype of
** its inputs. Parameters and their gradients stay float32 in every mode.
** On the CPU a node whose output is 16-bit stores it in 16 bits when its
** operator's kernels write them (SLM_OP_HALF), halving that activation's
** memory; the values are those float32 storage held after rounding, so
** the numbers do not change. The rest keep float32 storage, rounded after
** the node (or by its kernel as it writes).
*/
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "devslots.h"
#include "kernels/device.h"
#include "kernels/gemm_half.h"
#include "kernels/parallel.h"
#include "kernels/round.h"
#include "ops.h"
#include "precision.h"
#include "product.h"
#include "slots.h"

const char *const slM_precision_names[] = {"fp32", "bf16", "fp16", NULL};

const char *slM_dtype_name(int dtype) {
  switch (dtype) {
    case SLM_BF16: return "bfloat16";
    case SLM_FP16: return "float16";
    case SLM_INT64: return "int64";
    default: return "float32";
  }
}

/* a node's number format: its quantiser's when it has one, else its output's dtype under the model's
** precision mode (dtypes: slM_dtypes of the graph) */
const char *slM_node_format(const slM_Node *n, int dtype) {
  if (n->comp.weight) return n->comp.weight->name;
  if (n->comp.data_in) return n->comp.data_in->name;
  return slM_dtype_name(dtype);
}

/* the widest float dtype of the inputs; float32 when a parameter takes part */
static int widest(const slM_Node *n, const int *dtypes) {
  int w = -1;
  for (int k = 0; k < n->ninputs; k++) {
    int d = dtypes[n->inputs[k]];
    if (d == SLM_INT64) continue;
    if (w < 0 || d == SLM_FP32) w = d;
  }
  if (n->nparams) w = SLM_FP32;
  return w < 0 ? SLM_FP32 : w;
}

/* output dtype of node i under the graph's precision, given its inputs' */
static int node_dtype(const slM_Graph *g, int i, const int *dtypes) {
  const slM_Node *n = &g->nodes[i];
  switch (slM_op(n->op)->autocast) {
    case SLM_AUTOCAST_LOW: return g->precision;
    case SLM_AUTOCAST_FP32: return SLM_FP32;
    case SLM_AUTOCAST_INT: return SLM_INT64;
    case SLM_AUTOCAST_FIRST: return dtypes[n->inputs[0]];
    case SLM_AUTOCAST_WIDEST: return widest(n, dtypes);
  }
  return SLM_FP32;
}

/* A product's kernel follows the mode: bf16's packed kernel where the CPU has avx512_bf16 (fp16's on
** AVX-512), else OpenBLAS on operands rounded into float32 copies (product.c) */
void slM_node_kernel(const slM_Graph *g, const slM_Node *n, char *buf, size_t size) {
  const slM_OpDef *d = slM_op(n->op);
  const char *mode = slM_precision_names[g->precision];
  if (g->precision == SLM_FP32 || d->autocast != SLM_AUTOCAST_LOW || g->device != SLM_CPU)
    snprintf(buf, size, "%s", d->kernel);
  else if (strcmp(d->kernel, "cblas_sgemm") != 0) snprintf(buf, size, "%s with %s products", d->kernel, mode);
  else if (slM_product_native(g->precision))
    snprintf(buf, size, "%s",
             g->precision == SLM_BF16 ? "gemm_bf16 (vdpbf16ps)" : "gemm_fp16 (AVX-512, fp16 operands)");
  else snprintf(buf, size, "cblas_sgemm on %s-rounded operands", mode);
}

void slM_dtypes(const slM_Graph *g, int *dtypes) { slM_dtypes_upto(g, g->n - 1, dtypes); }

int slM_node_store(const slM_Graph *g, int i, const int *dtypes) {
  const slM_Node *n = &g->nodes[i];
  if (!slM_half_storage_on() || !dtypes || g->device != SLM_CPU || (dtypes[i] != SLM_BF16 && dtypes[i] != SLM_FP16))
    return SLM_FP32;
  if (!(slM_op(n->op)->flags & SLM_OP_HALF) || n->kind == SLM_OUTPUT) return SLM_FP32;
  for (int j = i + 1; j < g->n; j++) /* the output node reads its inputs after the pass: float32 for its callers */
    if (g->nodes[j].kind == SLM_OUTPUT)
      for (int k = 0; k < g->nodes[j].ninputs; k++)
        if (g->nodes[j].inputs[k] == i) return SLM_FP32;
  return dtypes[i];
}

void slM_dtypes_upto(const slM_Graph *g, int last, int *dtypes) {
  for (int i = 0; i <= last; i++) dtypes[i] = node_dtype(g, i, dtypes);
}

typedef struct {
  int format;
  float *x;
} Rounding;

static void round_range(void *ctx, size_t i0, size_t i1) {
  const Rounding *r = ctx;
  slK_round_values(r->format, r->x + i0, r->x + i0, i1 - i0);
}

/* after node i ran: an output whose dtype is 16-bit holds 16-bit values (in pieces on the thread
** team: between two nodes the other threads would otherwise wait), unless its forward rounded each
** piece as it wrote it (n->rounded: a native product's store, the elementwise operators, the
** per-head products), which saves a pass over the output and a hand-over of the team */
void slM_precision_after(slM_Graph *g, int i, const int *dtypes) {
  slM_Node *n = &g->nodes[i];
  if (g->precision == SLM_FP32 || !n->out || n->rounded || n->out->half)
    return; /* 16-bit storage holds rounded values */
  int d = dtypes[i];
  if (d != SLM_BF16 && d != SLM_FP16) return;
  if (g->device != SLM_CPU) { /* a model on the GPU: its outputs are device memory */
    char err[200];
    if (n->out->dev)
      slM_dev_fault(g, n, slK_gpu()->round_half(d, n->out->dev, n->out->dev, n->out->size, err, sizeof err), err);
    return;
  }
  Rounding r = {d, n->out->data};
  slK_parallel_for(n->out->size, 1 << 14, round_range, &r);
}

/* ------------------------------------------------------- values that went */

static int finite_tensor(const slM_Tensor *t) {
  if (t && t->half) { /* 16-bit bits: the exponent field all ones */
    uint16_t e = t->dtype == SLM_BF16 ? 0x7F80 : 0x7C00;
    for (size_t i = 0; i < t->size; i++)
      if ((t->half[i] & e) == e) return 0;
    return 1;
  }
  if (!t || !t->data) return 1; /* nothing on the host to read (a model on the GPU) */
  for (size_t i = 0; i < t->size; i++)
    if (!isfinite(t->data[i])) return 0;
  return 1;
}

int slM_first_nonfinite(const slM_Graph *g) {
  for (int i = 0; i < g->n; i++)
    if (g->nodes[i].kind != SLM_OUTPUT && !finite_tensor(g->nodes[i].out)) return i;
  return -1;
}

/* Checked after each pass of an fp16 model, as the loss may not show it: a
** ReLU turns NaN into 0, and a batch whose products all overflowed then
** gives every class the same logit, a finite loss of log(classes). */
int slM_fp16_overflow(const slM_Graph *g) {
  if (g->precision != SLM_FP16) return -1;
  int *dtypes = malloc((size_t)g->n * sizeof *dtypes), at = -1;
  slM_dtypes(g, dtypes);
  for (int i = 0; i < g->n && at < 0; i++)
    if (dtypes[i] == SLM_FP16 && g->nodes[i].kind != SLM_OUTPUT && !finite_tensor(g->nodes[i].out)) at = i;
  free(dtypes);
  return at;
}

/* A float16 output holds nothing above 65504: a larger value becomes
** infinity as it is rounded, or already as a product's operand is, and the
** NaN of infinity less infinity follows. */
void slM_nonfinite_why(const slM_Graph *g, int i, char *buf, size_t size) {
  if (i < 0) {
    snprintf(buf, size, "the outputs are not finite numbers");
    return;
  }
  const slM_Node *n = &g->nodes[i];
  int *dtypes = malloc((size_t)(i + 1) * sizeof *dtypes);
  slM_dtypes_upto(g, i, dtypes);
  if (dtypes[i] == SLM_FP16)
    snprintf(buf, size,
             "the values overflowed float16's range (its largest finite value is 65504) at node %s (%s), whose "
             "output is float16 under precision fp16: bf16 keeps float32's range, or scale the inputs down",
             n->name, slM_op_name(n->op));
  else
    snprintf(buf, size, "node %s (%s) is the first whose output is not a finite number", n->name, slM_op_name(n->op));
  free(dtypes);
}

/* the CS336 systems assignment's mixed_precision_accumulation experiment: 1000 additions of 0.01 (numerics §8) */
void slM_accumulation(double out[3]) {
  volatile float s32 = 0, s_mixed = 0, s16 = 0;
  float h = slK_round_fp16(0.01f);
  for (int i = 0; i < 1000; i++) s32 += 0.01f;
  /* two halves add exactly in float (their exponents are close), so one
  ** rounding gives the correctly rounded float16 sum */
  for (int i = 0; i < 1000; i++) s16 = slK_round_fp16(s16 + h);
  for (int i = 0; i < 1000; i++) s_mixed += h;
  out[0] = s32, out[1] = (double)s16, out[2] = s_mixed;
}
