/*
** notebook.h - reading, checking and writing nbformat 4 notebooks, and
** writing any file whole or not at all.
*/
#ifndef SYSLAB_NOTEBOOK_H
#define SYSLAB_NOTEBOOK_H

#include <jansson.h>
#include <stddef.h>

/* reads and checks a notebook; NULL with err naming the file and the problem */
json_t *slR_notebook_read(const char *path, char *err, size_t errlen);
/* nbformat's multiline string (a string, or a list of strings written by
** Jupyter when it saves) as one string; NULL for anything else. Caller frees */
char *slR_multiline(json_t *value);
/* a cell's source as one string ("" if it has none); caller frees */
char *slR_cell_source(json_t *cell);
int slR_cell_has_tag(json_t *cell, const char *tag);
/* the number a reader gives cells[index]: its place in the file from 1,
** Markdown included, the cell injected for -p left out (docs/report.md) */
size_t slR_cell_number(json_t *cells, size_t index);
/* the cell `syslab report -p` injected */
int slR_cell_injected(json_t *cell);
/* Quarto-style cell options: "#| key: value" lines at the top of a code
** cell; 1 when the cell has the option (its value, maybe "", in out), else 0 */
int slR_cell_option(const char *source, const char *key, char *out, size_t size);
/* a label may name a figure file: letters, digits, '-' and '_', 1 to 100 of them */
int slR_label_valid(const char *label);

/* writes to PATH.tmpPID and renames, so readers never see half a file; the
** temporary file is created anew (O_EXCL, O_NOFOLLOW) and the rename replaces
** a link at PATH itself, so nothing is written through a symbolic link */
int slR_write_atomic(const char *path, const void *data, size_t len, char *err, size_t errlen);
int slR_write_json_atomic(const char *path, json_t *json, char *err, size_t errlen);
/* mkdir -p */
int slR_mkdirs(const char *path);

#endif
