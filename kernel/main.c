/* main.c - the `syslab` command line (subcommands are added as they land). */
#include <stdio.h>

#include "syslab.h"

int main(void) {
  printf("syslab %s\n", SYSLAB_VERSION);
  return 0;
}
