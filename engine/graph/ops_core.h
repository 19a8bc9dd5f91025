/*
** ops_core.h - what the other families' operators take from the core
** operators (ops_core.c): the linear layer's rules, which the fused linear
** + activation shares (its gradient routing is op.h's, which the GPU's
** linear asks too), and the loss's saved probabilities.
*/
#ifndef SYSLAB_OPS_CORE_H
#define SYSLAB_OPS_CORE_H

#include "op.h"

int slM_linear_shape(slM_Graph *g, slM_Node *n, char *err, size_t errlen);
void slM_linear_rounded(const slM_Graph *g, const slM_Node *n, double items, int training, double *a, double *b,
                        double *c);
/* a loss keeps the softmax of its logits (input 0) */
double slM_logits_saves(const slM_Graph *g, const slM_Node *n, int batch, int training);

#endif
