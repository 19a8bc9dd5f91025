/*
** labels.c - the names the report's files take from a notebook: its stem
** (DIR/notebooks/STEM.ipynb, figures/STEM-LABEL.png) and its cells' labels.
**
** Labels name figure files and @references, so in one notebook each must
** be unique and a plain name; both are checked before any cell runs, so a
** class's submission cannot make the report write outside figures/.
*/
#include "labels.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "notebook.h"

void slR_stem_of(const char *path, char *stem, size_t size) {
  const char *base = strrchr(path, '/') ? strrchr(path, '/') + 1 : path;
  snprintf(stem, size, "%s", base);
  char *dot = strrchr(stem, '.');
  if (dot && strcmp(dot, ".ipynb") == 0) *dot = '\0';
}

int slR_check_labels(const char *path, json_t *nb) {
  json_t *seen = json_object();
  int problems = 0;
  size_t i;
  json_t *cell;
  json_array_foreach(json_object_get(nb, "cells"), i, cell) {
    if (strcmp(json_string_value(json_object_get(cell, "cell_type")), "code") != 0) continue;
    char *src = slR_cell_source(cell), label[256];
    slR_cell_option(src, "label", label, sizeof label);
    free(src);
    if (!label[0]) continue;
    if (!slR_label_valid(label)) {
      fprintf(stderr, "  error: %s, cell %zu: the label '%s' may only use letters, digits, '-' and '_' (at most 100)\n",
              path, i + 1, label);
      problems++;
      continue;
    }
    json_t *first = json_object_get(seen, label);
    if (first) {
      fprintf(stderr,
              "  error: %s: cells %d and %zu both have the label '%s'; a label names one figure, so each "
              "must be unique in its notebook\n",
              path, (int)json_integer_value(first), i + 1, label);
      problems++;
    } else {
      json_object_set_new(seen, label, json_integer((json_int_t)(i + 1)));
    }
  }
  json_decref(seen);
  return problems;
}
