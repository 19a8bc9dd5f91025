/* report.c - `syslab report` (not built yet: says so and fails). */
#include "report.h"

#include <stdio.h>

int slR_main(int argc, char **argv) {
  (void)argc; (void)argv;
  fprintf(stderr, "syslab report: not available in this build yet\n");
  return 2;
}
