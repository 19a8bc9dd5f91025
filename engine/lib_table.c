/* lib_table.c - commands for tables, sweeps and CSV. */
#include "syslab.h"

const sl_Command slT_commands[] = {
  {NULL}
};
