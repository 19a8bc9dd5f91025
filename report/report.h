/*
** report.h - `syslab report`: execute the lab notebooks and export the lab
** report. The command line (cli/args.c) reads the options into slR_Options;
** report/ never sees argv.
*/
#ifndef SYSLAB_REPORT_H
#define SYSLAB_REPORT_H

#include "options.h"

/* Runs the notebooks and writes the report. Returns the exit status of
** `syslab report`; a stop by SIGINT, SIGTERM or SIGHUP ends the process
** with that signal instead. */
int slR_report(const slR_Options *o);

#endif
