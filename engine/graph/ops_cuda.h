/*
** ops_cuda.h - the CUDA slots of the operator table (ops_cuda.c): each
** operator's forward and backward on a model whose device is the GPU. The
** families' records name them, written out, with SLM_CUDA_SLOT (op.h); an
** operator without one keeps its model on the CPU (devices.c says so
** before anything moves).
*/
#ifndef SYSLAB_OPS_CUDA_H
#define SYSLAB_OPS_CUDA_H

#include "op.h"

/* placeholders (no backward work) */
void slM_cuda_input_forward(slM_Graph *g, slM_Node *n);
void slM_cuda_input_backward(slM_Graph *g, slM_Node *n);
void slM_cuda_labels_forward(slM_Graph *g, slM_Node *n);
void slM_cuda_labels_backward(slM_Graph *g, slM_Node *n);
void slM_cuda_mask_forward(slM_Graph *g, slM_Node *n);
void slM_cuda_mask_backward(slM_Graph *g, slM_Node *n);
void slM_cuda_ids_forward(slM_Graph *g, slM_Node *n);
void slM_cuda_ids_backward(slM_Graph *g, slM_Node *n);
void slM_cuda_output_forward(slM_Graph *g, slM_Node *n);
void slM_cuda_output_backward(slM_Graph *g, slM_Node *n);

/* every family's */
void slM_cuda_linear_forward(slM_Graph *g, slM_Node *n);
void slM_cuda_linear_backward(slM_Graph *g, slM_Node *n);
/* relu, gelu, tanh, scale */
void slM_cuda_activation_forward(slM_Graph *g, slM_Node *n);
void slM_cuda_activation_backward(slM_Graph *g, slM_Node *n);
void slM_cuda_dropout_forward(slM_Graph *g, slM_Node *n);
void slM_cuda_dropout_backward(slM_Graph *g, slM_Node *n);
/* layer norm and RMSNorm */
void slM_cuda_norm_forward(slM_Graph *g, slM_Node *n);
void slM_cuda_norm_backward(slM_Graph *g, slM_Node *n);
void slM_cuda_add_forward(slM_Graph *g, slM_Node *n);
void slM_cuda_add_backward(slM_Graph *g, slM_Node *n);
void slM_cuda_softmax_forward(slM_Graph *g, slM_Node *n);
void slM_cuda_softmax_backward(slM_Graph *g, slM_Node *n);
void slM_cuda_patchify_forward(slM_Graph *g, slM_Node *n);
void slM_cuda_patchify_backward(slM_Graph *g, slM_Node *n);
void slM_cuda_mean_tokens_forward(slM_Graph *g, slM_Node *n);
void slM_cuda_mean_tokens_backward(slM_Graph *g, slM_Node *n);
void slM_cuda_cross_entropy_forward(slM_Graph *g, slM_Node *n);
void slM_cuda_cross_entropy_backward(slM_Graph *g, slM_Node *n);

/* attention op by op, and fused */
void slM_cuda_scores_forward(slM_Graph *g, slM_Node *n);
void slM_cuda_scores_backward(slM_Graph *g, slM_Node *n);
void slM_cuda_mask_fill_forward(slM_Graph *g, slM_Node *n);
void slM_cuda_mask_fill_backward(slM_Graph *g, slM_Node *n);
void slM_cuda_context_forward(slM_Graph *g, slM_Node *n);
void slM_cuda_context_backward(slM_Graph *g, slM_Node *n);
void slM_cuda_attention_forward(slM_Graph *g, slM_Node *n);
void slM_cuda_attention_backward(slM_Graph *g, slM_Node *n);

/* the language model's */
void slM_cuda_embedding_forward(slM_Graph *g, slM_Node *n);
void slM_cuda_embedding_backward(slM_Graph *g, slM_Node *n);
void slM_cuda_rope_forward(slM_Graph *g, slM_Node *n);
void slM_cuda_rope_backward(slM_Graph *g, slM_Node *n);
void slM_cuda_swiglu_forward(slM_Graph *g, slM_Node *n);
void slM_cuda_swiglu_backward(slM_Graph *g, slM_Node *n);
void slM_cuda_causal_mask_forward(slM_Graph *g, slM_Node *n);
void slM_cuda_causal_mask_backward(slM_Graph *g, slM_Node *n);
void slM_cuda_token_ce_forward(slM_Graph *g, slM_Node *n);
void slM_cuda_token_ce_backward(slM_Graph *g, slM_Node *n);

#endif
