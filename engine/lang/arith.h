/*
** arith.h - the language's operators on values (see arith.c).
*/
#ifndef SYSLAB_ARITH_H
#define SYSLAB_ARITH_H

#include "parse.h"
#include "state.h"

/* a op b for the arithmetic operator of n (+ also joins strings and lists):
** 0 with a new reference in *out, or -1 with the error recorded at n */
int slV_arith(sl_State *S, slY_Node *n, sl_Value a, sl_Value b, sl_Value *out);
/* a op b for the comparison operator of n, as slV_arith */
int slV_compare(sl_State *S, slY_Node *n, sl_Value a, sl_Value b, sl_Value *out);
/* the list from..to step `step` of the range at n, as slV_arith */
int slV_range(sl_State *S, slY_Node *n, double from, double to, double step, sl_Value *out);

#endif
