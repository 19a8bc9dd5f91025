/*
** ops_cuda.h - the CUDA slots of the operator table (ops_cuda.c): each
** operator's forward and backward on a model whose device is the GPU. The
** families' tables name them with SLM_CUDA_SLOT; an operator without one
** keeps its model on the CPU (devices.c says so before anything moves).
*/
#ifndef SYSLAB_OPS_CUDA_H
#define SYSLAB_OPS_CUDA_H

#include "op.h"

#define SLM_CUDA_SLOT(name) .impl[SLM_CUDA] = {slM_cuda_##name##_forward, slM_cuda_##name##_backward}

#define SLM_CUDA_DECLARE(name)                                 \
  void slM_cuda_##name##_forward(slM_Graph *g, slM_Node *n);   \
  void slM_cuda_##name##_backward(slM_Graph *g, slM_Node *n);

/* placeholders (no backward work) */
SLM_CUDA_DECLARE(input)
SLM_CUDA_DECLARE(labels)
SLM_CUDA_DECLARE(mask)
SLM_CUDA_DECLARE(ids)
SLM_CUDA_DECLARE(output)
/* every family's */
SLM_CUDA_DECLARE(linear)
SLM_CUDA_DECLARE(activation)   /* relu, gelu, tanh, scale */
SLM_CUDA_DECLARE(dropout)
SLM_CUDA_DECLARE(norm)         /* layer norm and RMSNorm */
SLM_CUDA_DECLARE(add)
SLM_CUDA_DECLARE(softmax)
SLM_CUDA_DECLARE(patchify)
SLM_CUDA_DECLARE(mean_tokens)
SLM_CUDA_DECLARE(cross_entropy)
/* attention op by op, and fused */
SLM_CUDA_DECLARE(scores)
SLM_CUDA_DECLARE(mask_fill)
SLM_CUDA_DECLARE(context)
SLM_CUDA_DECLARE(attention)
/* the language model's */
SLM_CUDA_DECLARE(embedding)
SLM_CUDA_DECLARE(rope)
SLM_CUDA_DECLARE(swiglu)
SLM_CUDA_DECLARE(causal_mask)
SLM_CUDA_DECLARE(token_ce)

#endif
