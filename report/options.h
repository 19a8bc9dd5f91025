/*
** options.h - what a `syslab report` run is asked to do: the options record
** the command line (cli/args.c) fills and every part of the run reads.
*/
#ifndef SYSLAB_REPORT_OPTIONS_H
#define SYSLAB_REPORT_OPTIONS_H

#include <jansson.h>
#include <stddef.h>

typedef struct slR_Options {
  char **notebooks; /* in the report's order */
  size_t count;
  const char *outdir; /* the report folder (-o) */
  json_t *params;     /* -p: name -> source text of the value */
  int allow_errors, use_cache, pdf, force;
  int jobs;       /* notebooks run at once (-j) */
  double timeout; /* seconds a cell may run (--timeout) */
} slR_Options;

/* the most seconds --timeout or a cell's `#| timeout:` may give a cell: a day */
#define SLR_MAX_CELL_SECONDS 86400

#endif
