/*
** ops.c - the operator table: the families' lists of operator records,
** indexed by operator number once, at first use.
**
** Each family declares its operators in its own file (op.h says what a
** record holds); this file only gathers them. An operator declared twice,
** or one without a record, is a programming error that slM_ops_check
** names, and the tests run it. Names are unique: a checkpoint names each
** node's operator, so that a new operator numbered among the others
** re-labels no saved model.
*/
#include <pthread.h>
#include <stdio.h>
#include <string.h>

#include "ops.h"

static const slM_OpDef *const *families(void) {
  static const slM_OpDef *const lists[] = {slM_ops_core, slM_ops_attention, slM_ops_lm, slM_ops_fused, NULL};
  return lists;
}

static const slM_OpDef *table[SLM_NUM_OPS];
static int declared[SLM_NUM_OPS];
static pthread_once_t once = PTHREAD_ONCE_INIT;

static void gather(void) {
  for (const slM_OpDef *const *f = families(); *f; f++)
    for (const slM_OpDef *d = *f; d->name; d++)
      if (d->op < SLM_NUM_OPS) {
        table[d->op] = d;
        declared[d->op]++;
      }
}

const slM_OpDef *slM_op(slM_Op op) {
  pthread_once(&once, gather);
  return op < SLM_NUM_OPS ? table[op] : NULL;
}

const char *slM_ops_check(void) {
  static char why[160];
  pthread_once(&once, gather);
  for (int op = 0; op < SLM_NUM_OPS; op++) {
    const slM_OpDef *d = table[op];
    if (declared[op] != 1) return snprintf(why, sizeof why, "operator %d is declared %d times", op, declared[op]), why;
    if (!d->impl[SLM_CPU].forward || !d->impl[SLM_CPU].backward)
      return snprintf(why, sizeof why, "operator %s has no CPU forward or backward", d->name), why;
    if ((d->impl[SLM_CUDA].forward == NULL) != (d->impl[SLM_CUDA].backward == NULL))
      return snprintf(why, sizeof why, "operator %s has half a CUDA slot", d->name), why;
    if (d->min_inputs > d->max_inputs || !d->kernel)
      return snprintf(why, sizeof why, "operator %s: arity or kernel missing", d->name), why;
    for (int other = 0; other < op; other++)
      if (strcmp(table[other]->name, d->name) == 0)
        return snprintf(why, sizeof why, "operators %d and %d are both named %s", other, op, d->name), why;
  }
  return "";
}

int slM_op_by_name(const char *name) {
  pthread_once(&once, gather);
  for (int op = 0; op < SLM_NUM_OPS; op++)
    if (table[op] && strcmp(table[op]->name, name) == 0) return op;
  return -1;
}

const char *slM_op_name(slM_Op op) {
  const slM_OpDef *d = slM_op(op);
  return d ? d->name : "?";
}
