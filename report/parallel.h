/*
** parallel.h - the notebooks of a report run serially, in threads or over
** MPI ranks (see parallel.c).
*/
#ifndef SYSLAB_REPORT_PARALLEL_H
#define SYSLAB_REPORT_PARALLEL_H

#include <jansson.h>
#include <stddef.h>

#include "options.h"

/* one notebook to run */
typedef struct slR_Run {
  const char *path; /* the notebook */
  size_t slot;      /* its place in the report */
  json_t *nb;       /* in: parameters injected; out: executed */
  char executed[4600], key_path[4600], key[65];
  double t0;
  int ran, rc, cells; /* ran: 0 when a stop came before its turn */
  char err[2048];
} slR_Run;

/* Runs the runs (under mpirun, on the other ranks; with -j N, in N
** threads; else one after another, progress live) until all have run or a
** stop comes. Returns the number of cells run. */
int slR_run_all(const slR_Options *o, slR_Run *runs, size_t n);
/* a rank of an mpirun job other than 0: runs what rank 0 hands it; the
** exit status */
int slR_serve_rank(const slR_Options *o);

#endif
