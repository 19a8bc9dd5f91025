/*
** ops.h - the operator table (ops.c): the record of each operator, by its
** number, gathered from the families' files.
*/
#ifndef SYSLAB_OPS_H
#define SYSLAB_OPS_H

#include "op.h"

/* every family's operators, each list ended by a record without a name */
extern const slM_OpDef slM_ops_core[], slM_ops_attention[], slM_ops_lm[], slM_ops_fused[];

/* the record of an operator (never NULL for op < SLM_NUM_OPS) */
const slM_OpDef *slM_op(slM_Op op);
/* "" when every operator is declared exactly once with what the engine
** needs of it; else what is missing (for the tests) */
const char *slM_ops_check(void);
/* the operator a name denotes (as checkpoints write it), or -1 */
int slM_op_by_name(const char *name);

#endif
