/*
** clock.c - the one monotonic clock: seconds since an arbitrary start,
** never set back, for timings, deadlines and timeouts everywhere in the
** program (the MPI and CUDA modules keep their own: they are loaded
** libraries and call nothing of the program).
*/
#include <time.h>

#include "slutil.h"

double slU_now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}
