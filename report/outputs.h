/*
** outputs.h - the report's files, one table of them, and the phase that
** writes them (see outputs.c).
*/
#ifndef SYSLAB_REPORT_OUTPUTS_H
#define SYSLAB_REPORT_OUTPUTS_H

#include <jansson.h>
#include <stddef.h>

#include "export.h"
#include "options.h"

/* what the writers share: the executed notebooks, and what the writers
** before one made */
typedef struct slR_Exporting {
  const slR_Options *o;
  const slR_Notebook *done; /* the report's notebooks, in order */
  size_t ndone;
  json_t *failures; /* strings: what went wrong, for the report's notice */
  json_t *written;  /* paths written in the folder, for its manifest */
  char *md;         /* report.md's text, once made */
} slR_Exporting;

typedef struct slR_Output {
  const char *name; /* its file in the report folder */
  /* makes the file at path (the folder's name) from x: 0, or -1 with err */
  int (*write)(slR_Exporting *x, const char *path, char *err, size_t errlen);
  /* the option that turns it off (NULL: always written) */
  int (*wanted)(const slR_Options *o);
  int shown; /* its path is printed on stdout once written */
} slR_Output;

#define SLR_NOUTPUTS 3
/* in the order they are made, each from the one before */
extern const slR_Output slR_outputs[SLR_NOUTPUTS];

/* 1 when name is one of the report's files */
int slR_is_output(const char *name);
/* Writes the report's files from x; what fails joins x->failures and is
** printed, and the files after it are not made. A stop removes whatever was
** made. ok[i]: slR_outputs[i] was written. Returns the signal that stopped
** the run, or 0. */
int slR_export_outputs(slR_Exporting *x, int ok[SLR_NOUTPUTS]);
/* removes the report's files from outdir (never through a link) */
void slR_remove_outputs(const char *outdir);

#endif
