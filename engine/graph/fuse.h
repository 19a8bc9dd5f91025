/*
** fuse.h - the fusion pass (fuse.c).
*/
#ifndef SYSLAB_FUSE_H
#define SYSLAB_FUSE_H

#include "kernels/kernels.h"
#include "model.h"

typedef struct slM_FuseCounts {
  int linear_act, add_norm, masked_softmax;
  int attention;   /* blocks now one fused attention node */
} slM_FuseCounts;

/* rewrites g in place (run it on a copy); attention: also each attention
** block into the fused FlashAttention-2 node. 0, or -1 with err if the
** result does not verify */
int slM_fuse(slM_Graph *g, int attention, slM_FuseCounts *counts, char *err, size_t errlen);

#endif
