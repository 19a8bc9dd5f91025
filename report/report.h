/*
** report.h - `syslab report`: execute the lab notebooks and export the lab
** report. The command line (cli/args.c) reads the options into slR_Options;
** report/ never sees argv.
*/
#ifndef SYSLAB_REPORT_H
#define SYSLAB_REPORT_H

#include <jansson.h>
#include <stddef.h>

typedef struct slR_Options {
  char **notebooks;        /* in the report's order */
  size_t count;
  const char *outdir;      /* the report folder (-o) */
  json_t *params;          /* -p: name -> source text of the value */
  int allow_errors, use_cache, pdf, force;
  int jobs;                /* notebooks run at once (-j) */
  double timeout;          /* seconds a cell may run (--timeout) */
} slR_Options;

/* the most seconds --timeout or a cell's `#| timeout:` may give a cell: a day */
#define SLR_MAX_CELL_SECONDS 86400

/* Runs the notebooks and writes the report. Returns the exit status of
** `syslab report`; a stop by SIGINT, SIGTERM or SIGHUP ends the process
** with that signal instead. */
int slR_report(const slR_Options *o);

#endif
