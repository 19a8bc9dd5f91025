/*
** passes.c - transform passes: graphs rewritten in place (run them on a
** copy). Attention as one fused node or op by op; dropout removed; square
** linear layers made the identity (ADLS Lab 2's "type of layer" choice); LoRA
** adapters added; and the fusion pass (the torch.compile question of ADLS
** Lab 4, Part A): what eager execution runs as separate nodes, one pass over
** memory each, becomes one node that makes a single pass.
**
**   linear -> relu | gelu         linear_act: bias and activation applied in
**                                 the same sweep over the product's output
**   add -> layer_norm             add_layer_norm: the residual sum is
**                                 normalised while it is still in cache
**   causal_mask -> softmax        masked_softmax: the masked scores are never
**                                 written (a B x H x T x T tensor saved)
**
** The attention scale is already folded into the scores product (its alpha),
** so "scale + mask + softmax" is the masked softmax here. The fused
** operators (ops_fused.c) run the same arithmetic in the same order as the
** eager nodes, so outputs and gradients are equal bit for bit in float32.
** With attention on, each attention block (scores, mask, softmax, context)
** first becomes one FlashAttention-2 node: no T x T tensor is kept, and the
** outputs agree with eager attention within float32 rounding of a
** different summation order (1e-4 relative in the tests), not bit for bit.
** The pass also turns on buffer planning: every output, saved tensor and
** gradient gets a place in one arena, planned once per mode and batch shape
** from their lifetimes (plan.c).
*/
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "passes.h"

int slM_identity_layers(slM_Graph *g, const char *const *names, int n, char *err, size_t errlen) {
  for (int k = 0; k < n; k++) {
    int i = slM_find_node(g, names[k]);
    if (i < 0 || g->nodes[i].op != OP_LINEAR) {
      snprintf(err, errlen, "'%s' is not a linear layer of this model (see model.node_names)", names[k]);
      return -1;
    }
    const slM_Tensor *w = g->nodes[i].params[0]->value;
    if (w->shape[0] != w->shape[1]) {
      snprintf(err, errlen, "'%s' maps %d features to %d: only a square linear layer can become the identity", names[k],
               w->shape[1], w->shape[0]);
      return -1;
    }
    slM_remove_node(g, i);
  }
  return slM_propagate(g, err, errlen);
}

/* "encoder_0_attention_context" -> "encoder_0_attention_sdpa" (and back) */
static void rename_suffix(slM_Node *n, const char *from, const char *to) {
  size_t len = strlen(n->name), lf = strlen(from);
  char prefix[64];
  snprintf(prefix, sizeof prefix, "%.*s", (int)(len >= lf && strcmp(n->name + len - lf, from) == 0 ? len - lf : len),
           n->name);
  snprintf(n->name, sizeof n->name, "%.40s%s", prefix, to);
}

static int single_user(const slM_Graph *g, int i) {
  int count = 0;
  for (int j = i + 1; j < g->n; j++)
    for (int k = 0; k < g->nodes[j].ninputs; k++) count += g->nodes[j].inputs[k] == i;
  return count == 1;
}

/* The op-by-op block is the chain scores(q, k) [-> mask_fill(., mask)] ->
** softmax [-> dropout] -> context(., v); the fused block is one node
** attention(q, k, v [, mask]). Parameters are untouched either way. */
int slM_set_attention(slM_Graph *g, int fused) {
  int changed = 0;
  for (int c = 0; c < g->n; c++) {
    slM_Node *n = &g->nodes[c];
    if (fused && n->op == OP_CONTEXT) {
      int chain[5], nchain = 0, x = n->inputs[0], v = n->inputs[1], mask = -1;
      if (g->nodes[x].op == OP_DROPOUT) chain[nchain++] = x, x = g->nodes[x].inputs[0];
      if (g->nodes[x].op != OP_SOFTMAX) continue;
      chain[nchain++] = x, x = g->nodes[x].inputs[0];
      if (g->nodes[x].op == OP_MASK_FILL) chain[nchain++] = x, mask = g->nodes[x].inputs[1], x = g->nodes[x].inputs[0];
      int causal = g->nodes[x].op == OP_CAUSAL_MASK; /* the language model's */
      if (causal) chain[nchain++] = x, x = g->nodes[x].inputs[0];
      if (g->nodes[x].op != OP_SCORES) continue;
      chain[nchain++] = x;
      int alone = 1;
      for (int i = 0; i < nchain; i++) alone &= single_user(g, chain[i]);
      if (!alone) continue; /* something else reads the probabilities: leave the block as it is */
      n->op = OP_ATTENTION;
      n->causal = causal;
      n->inputs[0] = g->nodes[x].inputs[0], n->inputs[1] = g->nodes[x].inputs[1], n->inputs[2] = v;
      n->ninputs = 3;
      if (mask >= 0) n->inputs[n->ninputs++] = mask;
      rename_suffix(n, "attention_context", "attention_sdpa");
      for (int i = 0; i < nchain; i++) slM_remove_node(g, chain[i]); /* chain[] runs from the highest index down */
      c -= nchain;
      changed++;
    } else if (!fused && n->op == OP_ATTENTION) {
      int q = n->inputs[0], k = n->inputs[1], v = n->inputs[2], mask = n->ninputs > 3 ? n->inputs[3] : -1,
          heads = n->heads;
      char prefix[64], name[96];
      snprintf(prefix, sizeof prefix, "%s", n->name);
      size_t len = strlen(prefix), lf = strlen("attention_sdpa");
      if (len >= lf && strcmp(prefix + len - lf, "attention_sdpa") == 0) prefix[len - lf] = 0;
      int ins[2] = {q, k};
      snprintf(name, sizeof name, "%sattention_scores", prefix);
      int x = slM_insert_node(g, c++, name, SLM_CALL_FUNCTION, OP_SCORES, ins, 2);
      g->nodes[x].heads = heads;
      if (mask >= 0) {
        int mi[2] = {x, mask};
        snprintf(name, sizeof name, "%sattention_mask_fill", prefix);
        x = slM_insert_node(g, c++, name, SLM_CALL_FUNCTION, OP_MASK_FILL, mi, 2);
      }
      if (g->nodes[c].causal) {
        snprintf(name, sizeof name, "%sattention_causal_mask", prefix);
        x = slM_insert_node(g, c++, name, SLM_CALL_FUNCTION, OP_CAUSAL_MASK, &x, 1);
      }
      snprintf(name, sizeof name, "%sattention_softmax", prefix);
      x = slM_insert_node(g, c++, name, SLM_CALL_FUNCTION, OP_SOFTMAX, &x, 1);
      if (!g->nodes[c].causal) { /* the language model has no attention dropout */
        snprintf(name, sizeof name, "%sattention_dropout", prefix);
        x = slM_insert_node(g, c++, name, SLM_CALL_MODULE, OP_DROPOUT, &x, 1);
        g->nodes[x].p = g->dropout;
      }
      n = &g->nodes[c];
      n->causal = 0;
      n->op = OP_CONTEXT;
      n->inputs[0] = x, n->inputs[1] = v, n->ninputs = 2;
      rename_suffix(n, "attention_sdpa", "attention_context");
      changed++;
    }
  }
  if (strcmp(g->family, "transformer") == 0) g->fused_attention = fused; /* the builder's argument capture reuses */
  return changed;
}

int slM_remove_dropout(slM_Graph *g) {
  int removed = 0;
  for (int i = g->n - 1; i >= 0; i--)
    if (g->nodes[i].op == OP_DROPOUT) {
      slM_remove_node(g, i);
      removed++;
    }
  return removed;
}

static int name_matches(const char *name, const char *const *targets, int ntargets) {
  if (!targets) return strcmp(name, "classifier") != 0;
  for (int t = 0; t < ntargets; t++)
    if (strstr(name, targets[t])) return 1;
  return 0;
}

int slM_add_lora(slM_Graph *g, int rank, double alpha, const char *const *targets, int ntargets, uint64_t seed,
                 char *err, size_t errlen) {
  if (rank < 1) {
    snprintf(err, errlen, "rank must be at least 1, got %d", rank);
    return -1;
  }
  for (int i = 0; i < g->n; i++)
    for (int k = 0; k < g->nodes[i].nparams; k++) g->nodes[i].params[k]->frozen = 1;
  slM_Rng rng;
  slM_rng_seed(&rng, seed);
  int adapted = 0;
  for (int i = 0; i < g->n; i++) {
    slM_Node *base = &g->nodes[i];
    if (base->op != OP_LINEAR || strstr(base->name, "lora_") || !name_matches(base->name, targets, ntargets)) continue;
    int in_f = base->params[0]->value->shape[1], out_f = base->params[0]->value->shape[0];
    if (rank > in_f || rank > out_f) {
      snprintf(err, errlen, "rank %d is larger than layer %s (%d x %d)", rank, base->name, out_f, in_f);
      return -1;
    }
    char name[96], base_name[64];
    snprintf(base_name, sizeof base_name, "%s", base->name);
    int x = base->inputs[0];
    /* users of the base layer are collected before the adapter nodes exist */
    int *users = malloc((size_t)g->n * sizeof *users);
    int nusers = slM_users(g, i, users);
    snprintf(name, sizeof name, "%s_lora_A", base_name);
    int a = slM_insert_node(g, i + 1, name, SLM_CALL_MODULE, OP_LINEAR, &x, 1);
    int ashape[2] = {rank, in_f}, bshape[2] = {out_f, rank};
    snprintf(name, sizeof name, "%s_lora_A.weight", base_name);
    g->nodes[a].params[g->nodes[a].nparams++] = slM_param_new(name, 2, ashape);
    slM_param_normal(g->nodes[a].params[0], &rng, 1.0 / sqrt((double)in_f));
    snprintf(name, sizeof name, "%s_lora_B", base_name);
    int b = slM_insert_node(g, a + 1, name, SLM_CALL_MODULE, OP_LINEAR, &a, 1);
    snprintf(name, sizeof name, "%s_lora_B.weight", base_name);
    g->nodes[b].params[g->nodes[b].nparams++] = slM_param_new(name, 2, bshape); /* zero: starts as the base model */
    snprintf(name, sizeof name, "%s_lora_scale", base_name);
    int s = slM_insert_node(g, b + 1, name, SLM_CALL_FUNCTION, OP_SCALE, &b, 1);
    g->nodes[s].p = (float)(alpha / rank);
    int ins[2] = {i, s};
    snprintf(name, sizeof name, "%s_lora_add", base_name);
    int sum = slM_insert_node(g, s + 1, name, SLM_CALL_FUNCTION, OP_ADD, ins, 2);
    for (int u = 0; u < nusers; u++) {
      slM_Node *user = &g->nodes[users[u] + 4]; /* every user sits after the four new nodes */
      for (int k = 0; k < user->ninputs; k++)
        if (user->inputs[k] == i) user->inputs[k] = sum;
    }
    free(users);
    adapted++;
    i = sum;
  }
  if (adapted == 0) {
    snprintf(err, errlen, "no linear layer matches the names given");
    return -1;
  }
  return slM_propagate(g, err, errlen) == 0 ? adapted : -1;
}

/* --------------------------------------------------------------- fusion */

static int only_user(const slM_Graph *g, int i, int *user) {
  int *users = malloc((size_t)g->n * sizeof *users), n = slM_users(g, i, users);
  *user = n == 1 ? users[0] : -1;
  free(users);
  if (*user < 0) return 0;
  for (int j = 0; j < g->n; j++) /* the output node reading it counts as a second user */
    if (g->nodes[j].op == OP_OUTPUT && j != *user)
      for (int k = 0; k < g->nodes[j].ninputs; k++)
        if (g->nodes[j].inputs[k] == i) return 0;
  return 1;
}

static int plain(const slM_Node *n) {
  const slM_NodeTransforms *c = &n->comp;
  return !c->data_in && !c->data_in_prune && !c->weight && !c->bias && !c->weight_mask;
}

static void rename_fused(slM_Node *n, const char *second) {
  char name[64];
  snprintf(name, sizeof name, "%.30s+%.30s", n->name, second);
  memcpy(n->name, name, sizeof name);
}

int slM_fuse(slM_Graph *g, int attention, slM_FuseCounts *counts, char *err, size_t errlen) {
  memset(counts, 0, sizeof *counts);
  /* attention first: the whole block goes to FlashAttention-2 (graph.c's set_attention pass) */
  if (attention) counts->attention = slM_set_attention(g, 1);
  for (int i = 0; i < g->n; i++) {
    slM_Node *n = &g->nodes[i];
    int u;
    if (!only_user(g, i, &u)) continue;
    slM_Node *next = &g->nodes[u];
    if (n->op == OP_LINEAR && plain(n) && (next->op == OP_RELU || next->op == OP_GELU)) {
      n->op = OP_LINEAR_ACT;
      n->act = next->op;
      rename_fused(n, next->name);
      slM_remove_node(g, u);
      counts->linear_act++;
    } else if (n->op == OP_ADD && n->ninputs == 2 && next->op == OP_LAYERNORM) {
      n->op = OP_ADD_NORM;
      n->kind = SLM_CALL_MODULE;
      n->params[0] = next->params[0], n->params[1] = next->params[1], n->nparams = 2;
      next->nparams = 0; /* the parameters moved */
      n->p = next->p;
      rename_fused(n, next->name);
      slM_remove_node(g, u);
      counts->add_norm++;
    } else if (n->op == OP_CAUSAL_MASK && next->op == OP_SOFTMAX) {
      n->op = OP_MASKED_SOFTMAX;
      rename_fused(n, next->name);
      slM_remove_node(g, u);
      counts->masked_softmax++;
    }
  }
  g->plan = 1;
  return slM_verify(g, err, errlen);
}
