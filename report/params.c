/*
** params.c - `syslab report -p NAME=VALUE`: the names checked, and the cell
** that sets them injected after the notebook's parameters cell.
**
** As papermill does, the values go into a cell of their own (tagged
** injected-parameters) right after the cell tagged `parameters`, so they
** override its defaults. A name is pasted into that cell as code, so only
** a name of the language gets there: letters, digits and '_', not starting
** with a digit, not a keyword and not a command. A name the parameters cell
** does not set (-p scael=full) is most often a typo that would leave the
** default in force without a word, so it is warned about, with the closest
** name the cell does set.
*/
#include "params.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "notebook.h"
#include "syslab.h"
#include "slutil.h"

typedef struct {
  int pieces, name; /* pieces the lexer saw; whether the one piece was a name */
} Lexed;

static void count_piece(void *ud, sl_LexClass cls, size_t at, size_t n) {
  Lexed *l = ud;
  (void)at, (void)n;
  l->pieces++;
  l->name = cls == SL_LEX_NAME;
}

int slR_param_name_ok(const char *name) {
  if (!(isalpha((unsigned char)name[0]) || name[0] == '_')) return 0;
  for (const char *p = name; *p; p++)
    if (!isalnum((unsigned char)*p) && *p != '_') return 0;
  Lexed l = {0, 0};
  sl_lex_pieces(name, strlen(name), count_piece, &l); /* keywords (if, true, ...) are no names */
  return l.pieces == 1 && l.name && !sl_command_find(name);
}

/* The names a cell sets at the start of a line (`name = value`), in order,
** NULL-terminated; caller frees the list and its names. */
static char **names_set(const char *src) {
  size_t n = 0;
  char **names = calloc(1, sizeof *names);
  for (const char *line = src; line; line = strchr(line, '\n') ? strchr(line, '\n') + 1 : NULL) {
    const char *p = line;
    while (*p == ' ' || *p == '\t') p++;
    const char *start = p;
    while (isalnum((unsigned char)*p) || *p == '_') p++;
    size_t len = (size_t)(p - start);
    while (*p == ' ' || *p == '\t') p++;
    if (!len || *p != '=' || p[1] == '=') continue;
    char *name = strndup(start, len);
    int seen = 0;
    for (size_t i = 0; i < n && !seen; i++) seen = strcmp(names[i], name) == 0;
    if (seen || !slR_param_name_ok(name)) {
      free(name);
      continue;
    }
    names = realloc(names, (n + 2) * sizeof *names);
    names[n++] = name;
    names[n] = NULL;
  }
  return names;
}

void slR_params_check(const char *path, json_t *nb, json_t *params) {
  if (json_object_size(params) == 0) return;
  slU_Text src = {0};
  slU_add_len(&src, "", 0);
  int cells = 0;
  size_t i;
  json_t *cell;
  json_array_foreach(json_object_get(nb, "cells"), i, cell) {
    if (!slR_cell_has_tag(cell, "parameters")) continue;
    char *s = slR_cell_source(cell);
    slU_add(&src, "%s\n", s);
    free(s);
    cells++;
  }
  char **names = names_set(src.s);
  slU_Text list = {0};
  slU_add_len(&list, "", 0);
  for (char **p = names; *p; p++) slU_add(&list, "%s%s", p == names ? "" : ", ", *p);
  const char *name;
  json_t *value;
  json_object_foreach(params, name, value) {
    int set = 0;
    for (char **p = names; *p && !set; p++) set = strcmp(*p, name) == 0;
    if (set) continue;
    if (!cells) {
      fprintf(stderr,
              "syslab report: %s: warning: -p %s: the notebook has no cell tagged `parameters`; the value is "
              "set in a cell of its own before the first code cell\n",
              path, name);
      continue;
    }
    const char *best = sl_closest(name, (const char *const *)names);
    fprintf(stderr, "syslab report: %s: warning: -p %s: the parameters cell does not set '%s' (it sets %s)%s%s%s\n",
            path, name, name, list.s[0] ? list.s : "nothing", best ? "; did you mean '" : "", best ? best : "",
            best ? "'?" : "");
  }
  for (char **p = names; *p; p++) free(*p);
  free(names);
  free(list.s);
  free(src.s);
}

void slR_params_inject(json_t *nb, json_t *params) {
  if (json_object_size(params) == 0) return;
  slU_Text src = {0};
  slU_add(&src, "# Parameters\n");
  const char *name;
  json_t *value;
  json_object_foreach(params, name, value) if (slR_param_name_ok(name))
      slU_add(&src, "%s = %s\n", name, json_string_value(value)); /* never code */
  json_t *cell = json_pack("{s:s, s:s, s:{s:[s]}, s:s, s:[], s:n}", "cell_type", "code", "id", "injected-parameters",
                           "metadata", "tags", "injected-parameters", "source", src.s, "outputs", "execution_count");
  free(src.s);
  json_t *cells = json_object_get(nb, "cells");
  /* without a parameters cell: after the leading Markdown, before the first code */
  size_t at = 0, i;
  json_t *c;
  while (at < json_array_size(cells) &&
         strcmp(json_string_value(json_object_get(json_array_get(cells, at), "cell_type")), "markdown") == 0)
    at++;
  json_array_foreach(cells, i, c) if (slR_cell_has_tag(c, "parameters")) at = i + 1;
  json_array_insert_new(cells, at, cell);
  json_t *meta = json_object_get(nb, "metadata");
  if (!json_is_object(meta)) json_object_set_new(nb, "metadata", meta = json_object());
  json_object_set_new(meta, "syslab", json_pack("{s:O}", "parameters", params));
}
