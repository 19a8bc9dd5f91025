/* lib_model.c - commands for datasets, models, graphs, passes and training. */
#include "syslab.h"

const sl_Command slM_commands[] = {
  {NULL}
};
