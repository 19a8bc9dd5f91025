/*
** compress_hooks.h - how compression (quantisers, pruning masks) plugs into
** model graphs without the graph code knowing any number format.
**
** A node that owns parameters (linear layers, and any op with a weight)
** carries an slC_NodeCompression. The graph's forward pass applies the
** transforms that are set: data_in to the node's input, weight (after the
** mask) and bias to its parameters. The backward pass treats every
** quantiser as the identity (straight-through estimator) and multiplies the
** weight gradient by the mask, so pruned weights stay exactly zero through
** fine-tuning. compress code (quant.c, prune.c) creates the transforms; the
** graph owns them once attached and frees them with the node.
*/
#ifndef SYSLAB_COMPRESS_HOOKS_H
#define SYSLAB_COMPRESS_HOOKS_H

#include <stddef.h>

typedef struct slC_Transform slC_Transform;

struct slC_Transform {
  /* transform n values (quantise-dequantise, or zero the pruned ones);
  ** in and out may be the same array */
  void (*apply)(const slC_Transform *t, const float *in, float *out, size_t n);
  void (*free)(slC_Transform *t);
  slC_Transform *(*clone)(const slC_Transform *t);  /* for deep copies of a model */
  char name[96];     /* for metadata and reports, e.g. "integer(width=8, frac=6)" */
  double bits;       /* storage bits per value, e.g. 8.25 for MXINT8; 32 for none */
  int has_gradient;  /* 0: QAT must refuse (no defined straight-through gradient) */
  void *state;       /* owned by the transform */
};

typedef struct slC_NodeCompression {
  slC_Transform *data_in;       /* applied to the node's input activations */
  slC_Transform *data_in_prune; /* activation pruning, applied before data_in */
  slC_Transform *weight;        /* applied to weight * mask */
  slC_Transform *bias;
  unsigned char *weight_mask;   /* NULL: dense; else 1 keep / 0 pruned per weight element */
} slC_NodeCompression;

#endif
