/* lib_compress.c - commands for quantisation formats, PTQ/QAT and pruning. */
#include "syslab.h"

const sl_Command slQ_commands[] = {
  {NULL}
};
