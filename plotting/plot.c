/* plot.c - commands for plots through gnuplot. */
#include "syslab.h"

const sl_Command slP_commands[] = {
  {NULL}
};
