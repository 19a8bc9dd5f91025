/*
** fuzz_notebook.c - libFuzzer target: the notebook reader on any bytes, then
** every per-cell accessor the report uses on what it accepts (the source
** joined from lines, tags, "#|" cell options, figure labels).
**
** The reader takes a path (the report reads notebooks from files), so each
** input is written to one temporary file per process first.
*/
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "report/notebook.h"

static const char *scratch_file(void) {
  static char path[64];
  if (!path[0]) snprintf(path, sizeof path, "/tmp/syslab-fuzz-notebook-%d.ipynb", (int)getpid());
  return path;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  const char *path = scratch_file();
  FILE *f = fopen(path, "wb");
  if (!f) abort();
  fwrite(data, 1, size, f);
  fclose(f);
  char err[512];
  json_t *nb = slR_notebook_read(path, err, sizeof err);
  if (!nb) {
    if (!err[0] || !strstr(err, path)) abort(); /* a refusal names the file */
    return 0;
  }
  size_t i;
  json_t *cell;
  json_array_foreach(json_object_get(nb, "cells"), i, cell) {
    char *src = slR_cell_source(cell);
    if (!src) abort(); /* the reader promised a source */
    char label[128], caption[512];
    slR_cell_option(src, "label", label, sizeof label);
    slR_cell_option(src, "fig-cap", caption, sizeof caption);
    if (slR_label_valid(label)) {
      /* a valid label is safe as a file name: no '/', no "..", not empty */
      if (!label[0] || strchr(label, '/') || strstr(label, "..")) abort();
    }
    (void)slR_cell_has_tag(cell, "remove-cell");
    (void)slR_cell_has_tag(cell, "remove-output");
    free(src);
  }
  json_decref(nb);
  return 0;
}
