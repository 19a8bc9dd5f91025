/*
** commands_memory.h - the profiling and memory commands
** (commands_memory.c), which commands.c registers with the rest of the
** Systems domain.
*/
#ifndef SYSLAB_COMMANDS_MEMORY_H
#define SYSLAB_COMMANDS_MEMORY_H

#include "slcommand.h"

int slL_cmd_profile(sl_Call *call, sl_Value *result);
int slL_cmd_memory_predict(sl_Call *call, sl_Value *result);
int slL_cmd_memory_check(sl_Call *call, sl_Value *result);
int slL_cmd_memory_profile(sl_Call *call, sl_Value *result);
int slL_cmd_attention_accounting(sl_Call *call, sl_Value *result);
int slL_cmd_attention_bench(sl_Call *call, sl_Value *result);

#endif
