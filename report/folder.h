/*
** folder.h - the report folder kept safe, and its manifest (see folder.c).
*/
#ifndef SYSLAB_REPORT_FOLDER_H
#define SYSLAB_REPORT_FOLDER_H

#include <jansson.h>

#include "options.h"

/* 0 when the report may be written to o->outdir, else -1 with the reason
** printed; nothing is written */
int slR_check_outdir(const slR_Options *o);
/* removes the previous run's report and the figures its manifest lists,
** then empties the manifest */
void slR_remove_previous(const char *outdir);
/* this run's manifest: the paths in `written` (strings) it may name, in order */
void slR_write_manifest(const char *outdir, json_t *written);

#endif
