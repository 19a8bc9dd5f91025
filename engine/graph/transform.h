/*
** transform.h - the interface a transform attached to a graph node has: what
** a quantiser or a pruning mask is asked to do. The graph defines it and
** compress/ implements it, so the graph never knows any number format.
**
** A node that owns parameters (linear layers, and any op with a weight)
** carries an slM_NodeTransforms. The graph's forward pass applies the
** transforms that are set: data_in to the node's input, weight (after the
** mask) and bias to its parameters. The backward pass treats every
** quantiser as the identity (straight-through estimator) and multiplies the
** weight gradient by the mask, so pruned weights stay exactly zero through
** fine-tuning. compress/ (quant.c, commands.c) creates the transforms; the
** graph owns them once attached and frees them with the node. A checkpoint
** writes a transform through its encode and reads it back through the
** decoder compress/ installs when the engine starts.
*/
#ifndef SYSLAB_GRAPH_TRANSFORM_H
#define SYSLAB_GRAPH_TRANSFORM_H

#include <stddef.h>

struct slU_Text;
typedef struct slM_Transform slM_Transform;

struct slM_Transform {
  /* transform n values (quantise-dequantise, or zero the pruned ones);
  ** in and out may be the same array */
  void (*apply)(const slM_Transform *t, const float *in, float *out, size_t n);
  void (*free)(slM_Transform *t);
  slM_Transform *(*clone)(const slM_Transform *t); /* for deep copies of a model */
  /* for checkpoints: appends the bytes the transform decoder rebuilds it
  ** from (its kind and settings, and any state it carries) */
  void (*encode)(const slM_Transform *t, struct slU_Text *out);
  char name[96];    /* for metadata and reports, e.g. "integer(width=8, frac=6)" */
  double bits;      /* storage bits per value, e.g. 8.25 for MXINT8; 32 for none */
  int has_gradient; /* 0: QAT must refuse (no defined straight-through gradient) */
  void *state;      /* owned by the transform */
};

/* Rebuilds a transform from the bytes its encode wrote; NULL with err.
** compress/, which alone knows the kinds, installs its decoder for
** graph/checkpoint.c when the engine starts (a layer above hooking itself
** into the one below, as the registry's domains do). */
typedef slM_Transform *(*slM_TransformDecoder)(const char *bytes, size_t n, char *err, size_t errlen);
void slM_set_transform_decoder(slM_TransformDecoder decode);

typedef struct slM_NodeTransforms {
  slM_Transform *data_in;       /* applied to the node's input activations */
  slM_Transform *data_in_prune; /* activation pruning, applied before data_in */
  slM_Transform *weight;        /* applied to weight * mask */
  slM_Transform *bias;
  unsigned char *weight_mask; /* NULL: dense; else 1 keep / 0 pruned per weight element */
} slM_NodeTransforms;

#endif
