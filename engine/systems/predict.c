/*
** predict.c - the prediction of a run's memory before it is allocated, and
** the refusal of runs that would not fit.
**
** The engine keeps every activation of a step until the next step
** overwrites it, so a training step's peak is the sum of all categories
** that graph/memory.c measures: parameters, gradients, optimizer state,
** activations, activation gradients, and the scratch of rounded product
** operands under a 16-bit precision. A built model is predicted node by
** node from the operator table (what each operator makes, saves, sends
** back and rounds, the copies its compression makes) and what it holds
** (pruning masks); a language model can also be predicted from its
** configuration alone, before a 2.7B model is allocated.
*/
#include <ctype.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "graph/accumulate.h"
#include "graph/ops.h"
#include "graph/precision.h"
#include "graph/product.h"
#include "graph/slots.h"
#include "graph/train.h"
#include "predict.h"

static void finish(slL_Prediction *p, int run) {
  p->peak = p->params + p->activations + p->scratch;
  if (run == SLL_RUN_TRAIN) p->peak += p->grads + p->optim + p->act_grads;
}

/* The language model from its configuration, before it is built: the same
** operators as graph/lm.c builds, counted by hand (floats of 4 bytes). */
void slL_predict_lm(const slM_LmSpec *s, int batch, int T, int run, int optimizer, int precision, slL_Prediction *out) {
  double B = batch, D = s->d_model, F = s->d_ff, H = s->heads, V = s->vocab, L = s->layers, dh = D / H;
  double BT = B * T, BTD = BT * D, BTF = BT * F, BHTT = B * H * T * T;
  memset(out, 0, sizeof *out);
  double params = V * D + L * (4 * D * D + 3 * D * F + 2 * D) + D + D * V;
  out->params = 4 * params;
  /* per layer: ln1, q, k, v, two ropes, context, output projection, residual,
  ** ln2, w2, residual (12 x BTD); w1, w3, swiglu (3 x BTF); scores, mask,
  ** softmax (3 x BHTT); saved: two rms rows, two rope tables */
  double layer_out = 12 * BTD + 3 * BTF + 3 * BHTT;
  double acts = 2 * BT + BTD + L * (layer_out + 2 * BT + 2 * T * dh) + BTD + BT + BT * V + BT * V + 1;
  out->activations = 4 * acts;
  out->scores = 4 * L * 3 * BHTT;
  /* Under a 16-bit precision on the CPU the products' outputs and what follows them elementwise are
  ** stored in 16 bits (graph/precision.c): per layer q, k, v, the two ropes, the context, the output
  ** projection and w2 (8 x BTD), w1, w3 and swiglu (3 x BTF), the scores and the masked scores
  ** (2 x BHTT); the norms, the residual stream, the softmax and the logits stay float32. */
  if (precision != SLM_FP32) {
    double halves = L * (8 * BTD + 3 * BTF + 2 * BHTT);
    out->activations -= 2 * halves;
    out->scores -= 2 * L * 2 * BHTT;
  }
  out->residual = 4 * BTD;
  if (run == SLL_RUN_TRAIN) {
    out->act_grads = 4 * (BTD + L * layer_out + BTD + BT * V + 1);
    out->grads = 4 * params;
    out->optim = 4 * params * (optimizer == SLM_ADAMW ? 2 : optimizer == SLM_SGD ? 1 : 0);
  }
  /* a training step's 16-bit working copy of every product's weight (graph/product.c): the layers'
  ** and the output projection's; inference rounds them as it packs or copies them */
  double weights =
      run == SLL_RUN_TRAIN && slM_product_keeps_copies(precision) ? 2 * (L * (4 * D * D + 3 * D * F) + D * V) : 0;
  if (slM_product_native(precision)) {
    out->scratch = weights;
    /* in bf16 the per-head products' float32 operands, rounded once a pass into their buffers: the
    ** probabilities, and in training the output gradient (BHTT of the scores, BTD of the context);
    ** q, k and v are read from their 16-bit storage */
    if (precision == SLM_BF16) out->scratch += 2 * (BHTT + (run == SLL_RUN_TRAIN ? fmax(BHTT, BTD) : 0));
  } else if (precision != SLM_FP32) {
    /* the float32 copies of the largest product inputs, and the largest float32 result stored in
    ** 16 bits (graph/product.c) */
    double a = BT * fmax(D, F), b = fmax(V * D, F * D), c = BTF;
    if (run == SLL_RUN_TRAIN) a = fmax(a, BT * V), b = fmax(b, fmax(BTF, BTD));
    out->scratch = weights + 4 * (a + b + c);
  }
  finish(out, run);
}

/* which nodes receive a gradient in the backward pass: from the loss (or
** the logits), every input its operator sends one to */
static char *gradient_reach(const slM_Graph *g) {
  char *grad = calloc((size_t)g->n, 1);
  int loss = slM_loss_node(g);
  grad[loss >= 0 ? loss : slM_logits_node(g)] = 1;
  for (int i = g->n - 1; i >= 0; i--) {
    const slM_Node *n = &g->nodes[i];
    const slM_OpDef *d = slM_op(n->op);
    if (grad[i])
      for (int k = 0; k < n->ninputs; k++)
        if (!d->grad_to || d->grad_to(g, n, k)) grad[n->inputs[k]] = 1;
  }
  return grad;
}

static void param_bytes(const slM_Node *n, int trains, int optimizer, slL_Prediction *out) {
  if (n->comp.weight_mask) out->params += (double)n->params[0]->value->size; /* a byte per weight */
  for (int k = 0; k < n->nparams; k++) {
    double bytes = 4.0 * (double)n->params[k]->value->size;
    out->params += bytes;
    if (trains && !n->params[k]->frozen) {
      out->grads += bytes;
      out->optim += bytes * (optimizer == SLM_ADAMW ? 2 : optimizer == SLM_SGD ? 1 : 0);
    }
  }
}

/* Any model, node by node from its operators' records: what each makes,
** saves and sends back, and the rounded copies of its products' operands.
** A language model is walked at T tokens: its shapes are propagated again
** on a copy of its node array (the parameters and transforms stay the
** graph's, only read). */
void slL_predict_graph(const slM_Graph *g, int batch, int T, int run, int optimizer, slL_Prediction *out) {
  if (strcmp(g->family, "lm") == 0 && T > 0 && T != g->context) {
    slM_Graph at = *g;
    char err[256];
    at.context = T;
    at.nodes = malloc((size_t)g->n * sizeof *at.nodes);
    memcpy(at.nodes, g->nodes, (size_t)g->n * sizeof *at.nodes);
    if (slM_propagate(&at, err, sizeof err) == 0) slL_predict_graph(&at, batch, T, run, optimizer, out);
    free(at.nodes);
    return;
  }
  memset(out, 0, sizeof *out);
  int train = run == SLL_RUN_TRAIN;
  char *grad = gradient_reach(g);
  int *dtypes = malloc((size_t)g->n * sizeof *dtypes), *store = malloc((size_t)g->n * sizeof *store);
  slM_dtypes(g, dtypes);
  for (int i = 0; i < g->n; i++) store[i] = g->precision == SLM_FP32 ? SLM_FP32 : slM_node_store(g, i, dtypes);
  double a_max = 0, b_max = 0, c_max = 0, weights = 0, slot[3] = {0, 0, 0}, wide[SLM_MAX_INPUTS] = {0};
  int native = slM_product_native(g->precision), operands = native && g->precision == SLM_BF16;
  int copies = slM_product_keeps_copies(g->precision);
  for (int i = 0; i < g->n; i++) {
    const slM_Node *n = &g->nodes[i];
    const slM_OpDef *d = slM_op(n->op);
    param_bytes(n, train && grad[i], optimizer, out);
    if (n->kind == SLM_OUTPUT) continue;
    double e = d->flags & SLM_OP_LOSS ? 1 : slM_items(n, batch), size = store[i] == SLM_FP32 ? 4 : 2;
    double saved = d->saves ? d->saves(g, n, batch, train) : 0;
    out->activations += size * e + (d->flags & SLM_OP_SAVES_HALF && slM_mask_store(g) != SLM_FP32 ? 2 : 4) * saved;
    if (d->flags & SLM_OP_QUADRATIC) out->scores += size * e;
    if (train && grad[i]) out->act_grads += 4 * e * (1 + d->backward_temps);
    /* 16-bit inputs of an operator that reads float32 alone, widened into a buffer per input
    ** (graph/exec.c), or of a compressed linear layer's transforms */
    int reads16 = d->flags & (SLM_OP_HALF | SLM_OP_HALF_IN),
        widens = !reads16 || n->comp.data_in || n->comp.data_in_prune;
    for (int k = 0; widens && g->precision != SLM_FP32 && k < n->ninputs; k++)
      if (store[n->inputs[k]] != SLM_FP32) {
        int slot_k = reads16 ? 0 : k;
        wide[slot_k] = fmax(wide[slot_k], slM_items(&g->nodes[n->inputs[k]], batch));
      }
    if (g->precision != SLM_FP32 && d->rounded) {
      double a, b, c;
      d->rounded(g, n, e, train, &a, &b, &c);
      /* a weight's 16-bit working copy, two bytes an element, alive through the training run */
      if (train && copies && n->nparams > 0 && !n->comp.weight && !n->comp.weight_mask)
        weights += (double)n->params[0]->value->size;
      if (native) {
        if (n->nparams == 0 && operands) { /* a product of two activations: its float32 operands' buffers (product.h) */
          if (store[n->inputs[0]] == SLM_FP32) slot[0] = fmax(slot[0], slM_items(&g->nodes[n->inputs[0]], batch));
          if (store[n->inputs[1]] == SLM_FP32) slot[1] = fmax(slot[1], slM_items(&g->nodes[n->inputs[1]], batch));
          if (train && grad[i]) slot[2] = fmax(slot[2], e);
        }
      } else if (n->nparams > 0) { /* the emulated path's scratch buffers, as large as the largest product needs
                                    ** (attention's per-head products use each thread's tiles, not tensors) */
        a_max = fmax(a_max, a), b_max = fmax(b_max, b);
        if (store[i] != SLM_FP32) c_max = fmax(c_max, c);
      }
    }
    if ((d->flags & SLM_OP_RESIDUAL) && out->residual == 0) out->residual = 4 * slM_items(n, batch);
  }
  out->scratch = 2 * weights + 4 * (wide[0] + wide[1] + wide[2] + wide[3]);
  out->scratch += native ? 2 * (slot[0] + slot[1] + slot[2]) : 4 * (a_max + b_max + c_max);
  free(grad), free(dtypes), free(store);
  finish(out, run);
}

double slL_largest_share(const size_t *sizes, int n, int ranks, int *rank) {
  int *owner = malloc(((size_t)n + 1) * sizeof *owner);
  double *share = calloc((size_t)ranks, sizeof *share), most = 0;
  slM_shard_owners(sizes, n, ranks, owner);
  for (int i = 0; i < n; i++) share[owner[i]] += (double)sizes[i];
  *rank = 0;
  for (int q = 0; q < ranks; q++)
    if (share[q] > most) most = share[q], *rank = q;
  free(owner), free(share);
  return most;
}

void slL_predict_shard(slL_Prediction *p, double share, int optimizer) {
  p->optim = 4 * share * (optimizer == SLM_ADAMW ? 2 : optimizer == SLM_SGD ? 1 : 0);
  finish(p, SLL_RUN_TRAIN);
}

int slL_lm_param_sizes(const slM_LmSpec *s, size_t *out) {
  size_t D = (size_t)s->d_model, F = (size_t)s->d_ff, V = (size_t)s->vocab;
  int n = 0;
  out[n++] = V * D; /* the token embedding */
  for (int l = 0; l < s->layers; l++) {
    const size_t layer[9] = {D, D * D, D * D, D * D, D * D,
                             D, F * D, F * D, D * F}; /* ln1, q, k, v, o, ln2, w1, w3, w2 */
    for (int k = 0; k < 9; k++) out[n++] = layer[k];
  }
  out[n++] = D;     /* the final norm */
  out[n++] = V * D; /* the output projection */
  return n;
}

double slL_budget(const char *text, char *err, size_t errlen) {
  if (!text || !*text) return sl_memory_budget(); /* MemAvailable, ulimit -v, SYSLAB_MEMORY_BUDGET */
  char *end;
  double v = strtod(text, &end);
  while (isspace((unsigned char)*end)) end++;
  static const struct {
    const char *unit;
    double scale;
  } units[] = {
      {"", 1},      {"B", 1},        {"KB", 1e3},        {"MB", 1e6},           {"GB", 1e9},
      {"TB", 1e12}, {"KiB", 1024.0}, {"MiB", 1048576.0}, {"GiB", 1073741824.0}, {"TiB", 1099511627776.0},
  };
  if (end != text && v > 0)
    for (size_t i = 0; i < sizeof units / sizeof units[0]; i++)
      if (strcasecmp(end, units[i].unit) == 0) return v * units[i].scale;
  snprintf(
      err, errlen,
      "budget '%s' is not a size: write a positive number with B, KB, MB, GB, TB, KiB, MiB, GiB or TiB, e.g. \"80GB\"",
      text);
  return 0;
}

void slL_refusal(const slL_Prediction *p, double budget, char *buf, size_t size) {
  snprintf(buf, size,
           "OOM: predicted peak %.2f GB exceeds the budget of %.2f GB (parameters %.2f GB, gradients %.2f GB, "
           "optimizer state %.2f GB, activations %.2f GB, activation gradients %.2f GB, scratch %.2f GB)",
           p->peak / 1e9, budget / 1e9, p->params / 1e9, p->grads / 1e9, p->optim / 1e9, p->activations / 1e9,
           p->act_grads / 1e9, p->scratch / 1e9);
}
