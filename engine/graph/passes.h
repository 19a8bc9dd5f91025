/*
** passes.h - transform passes over graphs (passes.c): each rewrites a graph
** in place, so run it on a copy (slM_graph_copy).
*/
#ifndef SYSLAB_PASSES_H
#define SYSLAB_PASSES_H

#include "model.h"

/* rewrites every attention block as one fused node (fused = 1) or as the
** op-by-op chain scores, [mask_fill,] softmax, dropout, context (fused = 0);
** returns the number of blocks changed */
int slM_set_attention(slM_Graph *g, int fused);
/* removes every dropout node, rewiring its users to its input; returns the count */
int slM_remove_dropout(slM_Graph *g);
/* replaces the named square linear layers by the identity (ADLS Lab 2's "type
** of layer" choice in its architecture search), rewiring their users to their inputs; 0, or -1 with err */
int slM_identity_layers(slM_Graph *g, const char *const *names, int n, char *err, size_t errlen);
/* adds low-rank adapters to the linear nodes whose name contains one of
** `targets` (NULL: every linear but the classifier); freezes every other
** parameter; returns the number of adapted layers or -1 */
int slM_add_lora(slM_Graph *g, int rank, double alpha, const char *const *targets, int ntargets, uint64_t seed,
                 char *err, size_t errlen);

typedef struct slM_FuseCounts {
  int linear_act, add_norm, masked_softmax;
  int attention; /* blocks now one fused attention node */
} slM_FuseCounts;

/* the fusion pass; attention: also each attention block into the fused
** FlashAttention-2 node. 0, or -1 with err if the result does not verify */
int slM_fuse(slM_Graph *g, int attention, slM_FuseCounts *counts, char *err, size_t errlen);

#endif
