/*
** commands_lm.h - what the two files of the systems commands share: the
** argument and table helpers (commands_lm.c) and the profiling and memory
** commands (commands_memory.c), which commands_lm.c registers with the rest
** of the Systems domain.
*/
#ifndef SYSLAB_COMMANDS_LM_H
#define SYSLAB_COMMANDS_LM_H

#include "lm.h"
#include "memory.h"
#include "table/table.h"

extern const char *const slM_sys_runs[];        /* forward, train */
extern const char *const slM_sys_optimizers[];  /* adamw, sgd, none */

const slM_Graph *slM_sys_model_of(sl_Call *call, const char *name);
/* a table with the given columns (NULL-terminated) */
slT_Table *slM_sys_table(const char *const *cols);
void slM_sys_setn(slT_Table *t, size_t r, const char *col, double v);   /* NaN: nil */
void slM_sys_sets(slT_Table *t, size_t r, const char *col, const char *v);
int slM_sys_budget_of(sl_Call *call, double *budget);   /* the "budget" argument, or MemAvailable */
int slM_sys_precision_arg(sl_Call *call);
int slM_sys_optimizer_arg(sl_Call *call);               /* SLM_ADAMW, SLM_SGD, or -1 for none */
int slM_sys_is_lm(const slM_Graph *g);
/* the prediction for a built model on this batch */
void slM_sys_predict(const slM_Graph *g, int batch, int T, int run, int optimizer, slM_MemPrediction *p);
/* batch and tokens per sample from the call; T = 0 for image models */
int slM_sys_batch_args(sl_Call *call, const slM_Graph *g, int *batch, int *T);
/* gradients and optimizer state a model already holds from earlier training */
void slM_sys_state_bytes(const slM_Graph *g, double *grads, double *optim);
/* an OOM error with the predicted figures when p's peak exceeds the budget */
int slM_sys_refuse_if_over(sl_Call *call, const slM_MemPrediction *p, double budget);
/* a list argument of 1 to max whole numbers in [lo, hi]; the count, or -1 */
int slM_sys_list_ints(sl_Call *call, const char *name, int *out, int max, int lo, int hi);
/* the "presets" argument as specifications; the count, or -1 */
int slM_sys_preset_list(sl_Call *call, slM_LmSpec *out, int max);

/* commands_memory.c */
int slM_cmd_profile(sl_Call *call, sl_Value *result);
int slM_cmd_memory_predict(sl_Call *call, sl_Value *result);
int slM_cmd_memory_check(sl_Call *call, sl_Value *result);
int slM_cmd_memory_profile(sl_Call *call, sl_Value *result);
int slM_cmd_attention_accounting(sl_Call *call, sl_Value *result);
int slM_cmd_attention_bench(sl_Call *call, sl_Value *result);

#endif
