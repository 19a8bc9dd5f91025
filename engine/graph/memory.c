/*
** memory.c - where the bytes go: tagging, peaks by category, a timeline of
** one step, and the prediction of a run's memory before it is allocated.
**
** Every tensor carries a category (parameter, gradient, optimizer state,
** activation, temporary) and the node that allocated it. The node hooks
** set the tag for what a node makes: its output and what it saves are
** activations in the forward pass; in the backward pass, the gradients of
** activations are temporaries. Parameter gradients and optimizer state are
** re-tagged where they are made. The engine keeps every activation of a
** step until the next step overwrites it, so a training step's peak is the
** sum of all categories: that is what the prediction computes, operator by
** operator from the shapes, without allocating anything.
*/
#include <ctype.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "memory.h"
#include "train.h"

const char *const slM_mem_category_names[] = {"parameter", "gradient", "optimizer_state", "activation", "temporary",
                                              NULL};

static size_t live[SLM_MEM_NCAT], at_peak[SLM_MEM_NCAT], total_peak;
static int cur_cat = SLM_MEM_TEMP, cur_node = -1, cur_backward;
static const slM_Graph *cur_graph;

static int recording;
static slM_MemEvent *events;
static size_t nevents, events_cap;
static slM_MemAlloc *allocs;
static size_t nallocs, allocs_cap;

static size_t total_live(void) {
  size_t t = 0;
  for (int c = 0; c < SLM_MEM_NCAT; c++) t += live[c];
  return t;
}

static void account(int category, long long delta) {
  live[category] = (size_t)((long long)live[category] + delta);
  size_t t = total_live();
  if (t > total_peak) {
    total_peak = t;
    memcpy(at_peak, live, sizeof live);
  }
}

static void shape_text(const slM_Tensor *t, char *buf, size_t size) {
  size_t used = (size_t)snprintf(buf, size, "[");
  for (int d = 0; d < t->ndim && used < size; d++)
    used += (size_t)snprintf(buf + used, size - used, "%s%d", d ? ", " : "", t->shape[d]);
  if (used < size) snprintf(buf + used, size - used, "]");
}

void slM_mem_on_alloc(slM_Tensor *t) {
  t->category = cur_cat;
  t->node = cur_node;
  account(t->category, (long long)(t->size * sizeof(float)));
  if (!recording) return;
  if (nallocs == allocs_cap) allocs = realloc(allocs, (allocs_cap = allocs_cap ? allocs_cap * 2 : 256) * sizeof *allocs);
  slM_MemAlloc *a = &allocs[nallocs++];
  memset(a, 0, sizeof *a);
  a->bytes = t->size * sizeof(float);
  a->category = t->category;
  a->node = cur_node;
  a->backward = cur_backward;
  if (cur_graph && cur_node >= 0 && cur_node < cur_graph->n) {
    snprintf(a->node_name, sizeof a->node_name, "%s", cur_graph->nodes[cur_node].name);
    snprintf(a->op, sizeof a->op, "%s", slM_op_name(cur_graph->nodes[cur_node].op));
  }
  shape_text(t, a->shape, sizeof a->shape);
}

void slM_mem_on_free(slM_Tensor *t) { account(t->category, -(long long)(t->size * sizeof(float))); }

void slM_mem_retag(slM_Tensor *t, int category) {
  long long bytes = (long long)(t->size * sizeof(float));
  live[t->category] -= (size_t)bytes;
  live[category] += (size_t)bytes;
  if (recording && nallocs > 0 && allocs[nallocs - 1].bytes == (size_t)bytes) allocs[nallocs - 1].category = category;
  t->category = category;
  size_t tl = total_live();
  if (tl >= total_peak) memcpy(at_peak, live, sizeof live);
}

void slM_mem_external(long long delta) { account(SLM_MEM_TEMP, delta); }

void slM_mem_set_context(const slM_Graph *g, int node, int backward) {
  cur_graph = g;
  cur_node = node;
  cur_backward = backward;
  cur_cat = node < 0 ? SLM_MEM_TEMP : backward ? SLM_MEM_TEMP : SLM_MEM_ACT;
}

void slM_mem_live_by(size_t out[SLM_MEM_NCAT]) { memcpy(out, live, sizeof live); }
void slM_mem_peak_by(size_t out[SLM_MEM_NCAT]) { memcpy(out, at_peak, sizeof at_peak); }
size_t slM_mem_total_peak(void) { return total_peak; }

void slM_mem_reset(void) {
  total_peak = total_live();
  memcpy(at_peak, live, sizeof live);
  nevents = nallocs = 0;
  slM_mem_reset_peak();
}

void slM_mem_record(int on) {
  recording = on;
  if (!on) {
    free(events), free(allocs);
    events = NULL, allocs = NULL;
    nevents = events_cap = nallocs = allocs_cap = 0;
  }
}

void slM_mem_mark(int node, int backward) {
  if (!recording) return;
  if (nevents == events_cap) events = realloc(events, (events_cap = events_cap ? events_cap * 2 : 256) * sizeof *events);
  events[nevents] = (slM_MemEvent){(int)nevents, node, backward, total_live()};
  nevents++;
}

const slM_MemEvent *slM_mem_timeline(size_t *n) { return *n = nevents, events; }
const slM_MemAlloc *slM_mem_allocations(size_t *n) { return *n = nallocs, allocs; }

/* ------------------------------------------------------------ prediction */

static void finish(slM_MemPrediction *p, int run) {
  p->peak = p->params + p->activations + p->scratch;
  if (run == SLM_RUN_TRAIN) p->peak += p->grads + p->optim + p->act_grads;
}

/* The language model from its configuration: the same operators as
** lm.c builds, counted by hand (floats of 4 bytes). */
void slM_mem_predict_lm(const slM_LmSpec *s, int batch, int T, int run, int optimizer, int precision,
                        slM_MemPrediction *out) {
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
  out->residual = 4 * BTD;
  if (run == SLM_RUN_TRAIN) {
    out->act_grads = 4 * (BTD + L * layer_out + BTD + BT * V + 1);
    out->grads = 4 * params;
    out->optim = 4 * params * (optimizer == SLM_ADAMW ? 2 : optimizer == SLM_SGD ? 1 : 0);
  }
  if (precision != SLM_FP32) {
    /* the rounded copies of the largest product inputs (precision.c) */
    double a = BT * fmax(D, F), b = fmax(V * D, F * D);
    a = fmax(a, T * fmax(T, dh));
    if (run == SLM_RUN_TRAIN) a = fmax(a, BT * V), b = fmax(b, fmax(BTF, BTD));
    out->scratch = 4 * (a + b);
  }
  finish(out, run);
}

static double elems(const slM_Node *n, int batch) {
  double e = batch;
  for (int d = 1; d < n->ndim; d++) e *= n->shape[d];
  return e;
}

/* inputs of node n that receive a gradient in the backward pass (exec.c, lm.c, fuse.c) */
static int passes_gradient(const slM_Graph *g, const slM_Node *n, int k) {
  slM_Op from = g->nodes[n->inputs[k]].op;
  switch (n->op) {
    case OP_CROSS_ENTROPY: case OP_TOKEN_CE: case OP_MASK_FILL: return k == 0;
    case OP_LINEAR: case OP_LINEAR_ACT: return from != OP_INPUT && from != OP_PATCHIFY;
    case OP_EMBEDDING: case OP_PATCHIFY: case OP_OUTPUT: return 0;
    default: return 1;
  }
}

static double saved_floats(const slM_Graph *g, const slM_Node *n, int batch, int run) {
  double e = elems(n, batch), last = n->ndim ? n->shape[n->ndim - 1] : 1, rows = e / last;
  switch (n->op) {
    case OP_LAYERNORM: return 2 * rows;
    case OP_ADD_NORM: return 2 * rows + e;   /* statistics and the residual sum */
    case OP_RMSNORM: return rows;
    case OP_DROPOUT: return run == SLM_RUN_TRAIN && n->p > 0 ? e : 0;
    case OP_CROSS_ENTROPY: return elems(&g->nodes[n->inputs[0]], batch);
    case OP_TOKEN_CE: return elems(&g->nodes[n->inputs[0]], batch);
    case OP_ROPE: return (double)n->shape[1] * n->shape[2] / n->heads;
    case OP_LINEAR_ACT: return n->act == OP_GELU ? e : 0;   /* the pre-activation, for GELU's slope */
    case OP_ATTENTION: return e / last * n->heads;           /* the row logsumexp: batch x heads x tokens */
    default: return 0;
  }
}

void slM_mem_predict_graph(const slM_Graph *g, int batch, int T, int run, int optimizer, slM_MemPrediction *out) {
  (void)T;
  memset(out, 0, sizeof *out);
  char *grad = calloc((size_t)g->n, 1);
  int loss = -1;
  for (int i = 0; i < g->n; i++)
    if (g->nodes[i].op == OP_CROSS_ENTROPY || g->nodes[i].op == OP_TOKEN_CE) loss = i;
  grad[loss >= 0 ? loss : slM_logits_node(g)] = 1;
  for (int i = g->n - 1; i >= 0; i--)
    if (grad[i])
      for (int k = 0; k < g->nodes[i].ninputs; k++)
        if (passes_gradient(g, &g->nodes[i], k)) grad[g->nodes[i].inputs[k]] = 1;
  double a_max = 0, b_max = 0;
  for (int i = 0; i < g->n; i++) {
    const slM_Node *n = &g->nodes[i];
    for (int k = 0; k < n->nparams; k++) {
      double bytes = 4.0 * (double)n->params[k]->value->size;
      out->params += bytes;
      if (run == SLM_RUN_TRAIN && grad[i] && !n->params[k]->frozen) {
        out->grads += bytes;
        out->optim += bytes * (optimizer == SLM_ADAMW ? 2 : optimizer == SLM_SGD ? 1 : 0);
      }
    }
    if (n->op == OP_OUTPUT) continue;
    double e = n->op == OP_CROSS_ENTROPY || n->op == OP_TOKEN_CE ? 1 : elems(n, batch);
    out->activations += 4 * (e + saved_floats(g, n, batch, run));
    if (n->op == OP_SCORES || n->op == OP_CAUSAL_MASK || n->op == OP_MASK_FILL || n->op == OP_SOFTMAX ||
        n->op == OP_MASKED_SOFTMAX)
      out->scores += 4 * e;
    if (run == SLM_RUN_TRAIN && grad[i]) out->act_grads += 4 * e * (n->op == OP_LINEAR_ACT ? 2 : 1);
    if (g->precision != SLM_FP32 && (n->op == OP_LINEAR || n->op == OP_LINEAR_ACT)) {
      double in_f = n->params[0]->value->shape[1], out_f = n->params[0]->value->shape[0], rows = e / out_f;
      a_max = fmax(a_max, rows * fmax(in_f, run == SLM_RUN_TRAIN ? out_f : 0));
      b_max = fmax(b_max, fmax(out_f * in_f, run == SLM_RUN_TRAIN ? rows * in_f : 0));
    }
    if (g->precision != SLM_FP32 && (n->op == OP_SCORES || n->op == OP_CONTEXT)) {
      const slM_Node *v = &g->nodes[n->inputs[1]];
      double Tk = v->shape[1], dh = (double)v->shape[2] / n->heads;
      a_max = fmax(a_max, Tk * fmax(Tk, dh));
      b_max = fmax(b_max, Tk * dh);
    }
  }
  out->scratch = 4 * (a_max + b_max);
  for (int i = 0; i < g->n; i++)
    if (g->nodes[i].op == OP_EMBEDDING || (g->nodes[i].op == OP_LAYERNORM && out->residual == 0)) {
      out->residual = 4 * elems(&g->nodes[i], batch);
      break;
    }
  free(grad);
  finish(out, run);
}

double slM_mem_budget(const char *text, char *err, size_t errlen) {
  if (!text || !*text) {
    FILE *f = fopen("/proc/meminfo", "r");
    char line[256];
    double kb = 0;
    while (f && fgets(line, sizeof line, f))
      if (sscanf(line, "MemAvailable: %lf kB", &kb) == 1) break;
    if (f) fclose(f);
    if (kb <= 0) return snprintf(err, errlen, "cannot read MemAvailable from /proc/meminfo; give a budget"), 0;
    return kb * 1024;
  }
  char *end;
  double v = strtod(text, &end);
  while (isspace((unsigned char)*end)) end++;
  static const struct { const char *unit; double scale; } units[] = {
    {"", 1}, {"B", 1}, {"KB", 1e3}, {"MB", 1e6}, {"GB", 1e9}, {"TB", 1e12},
    {"KiB", 1024.0}, {"MiB", 1048576.0}, {"GiB", 1073741824.0}, {"TiB", 1099511627776.0},
  };
  if (end != text && v > 0)
    for (size_t i = 0; i < sizeof units / sizeof units[0]; i++)
      if (strcasecmp(end, units[i].unit) == 0) return v * units[i].scale;
  snprintf(err, errlen, "budget '%s' is not a size: write a positive number with B, KB, MB, GB, TB, KiB, MiB, GiB or TiB, e.g. \"80GB\"", text);
  return 0;
}

void slM_mem_refusal(const slM_MemPrediction *p, double budget, char *buf, size_t size) {
  snprintf(buf, size,
           "OOM: predicted peak %.2f GB exceeds the budget of %.2f GB (parameters %.2f GB, gradients %.2f GB, "
           "optimizer state %.2f GB, activations %.2f GB, activation gradients %.2f GB, scratch %.2f GB)",
           p->peak / 1e9, budget / 1e9, p->params / 1e9, p->grads / 1e9, p->optim / 1e9, p->activations / 1e9,
           p->act_grads / 1e9, p->scratch / 1e9);
}
