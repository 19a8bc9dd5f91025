/*
** labels.h - the names a notebook gives the report's files (see labels.c).
*/
#ifndef SYSLAB_REPORT_LABELS_H
#define SYSLAB_REPORT_LABELS_H

#include <jansson.h>
#include <stddef.h>

/* the notebook's file name without its folder and .ipynb */
void slR_stem_of(const char *path, char *stem, size_t size);
/* the problems of the notebook's cell labels, each printed; their number */
int slR_check_labels(const char *path, json_t *nb);

#endif
