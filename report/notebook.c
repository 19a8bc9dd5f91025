/*
** notebook.c - nbformat 4 notebooks: reading with checks that name what is
** wrong, cell sources, tags and Quarto cell options, and atomic writes.
*/
#include "notebook.h"

#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "slutil.h"

json_t *slR_notebook_read(const char *path, char *err, size_t errlen) {
  json_error_t jerr;
  size_t len;
  char why[512];
  char *text = slF_read_file(path, "a notebook", 0, &len, why, sizeof why); /* a FIFO would block */
  if (!text) {
    snprintf(err, errlen, "%s: cannot read the file (%s)", path, why);
    return NULL;
  }
  json_t *nb = json_loadb(text, len, 0, &jerr);
  free(text);
  if (!nb) {
    snprintf(err, errlen, "%s: not valid JSON at line %d, column %d: %s", path, jerr.line, jerr.column, jerr.text);
    return NULL;
  }
  const char *problem = NULL;
  json_t *cells = json_object_get(nb, "cells");
  if (!json_is_object(nb)) problem = "the top level is not a JSON object";
  else if (json_integer_value(json_object_get(nb, "nbformat")) != 4)
    problem = "not an nbformat 4 notebook (the nbformat field must be 4)";
  else if (!json_is_array(cells)) problem = "it has no list of cells";
  if (!problem) {
    size_t i;
    json_t *cell;
    json_array_foreach(cells, i, cell) {
      const char *type = json_string_value(json_object_get(cell, "cell_type"));
      json_t *src = json_object_get(cell, "source");
      if (!type || (strcmp(type, "code") && strcmp(type, "markdown") && strcmp(type, "raw"))) {
        snprintf(err, errlen, "%s: cell %zu has no valid cell_type (code, markdown or raw)", path, i + 1);
        json_decref(nb);
        return NULL;
      }
      if (!json_is_string(src) && !json_is_array(src)) {
        snprintf(err, errlen, "%s: cell %zu has no source", path, i + 1);
        json_decref(nb);
        return NULL;
      }
    }
    const char *kernel =
        json_string_value(json_object_get(json_object_get(json_object_get(nb, "metadata"), "kernelspec"), "name"));
    if (kernel && strcmp(kernel, "syslab") != 0) {
      snprintf(err, errlen, "%s: the notebook names the kernel '%s'; syslab report runs notebooks of the syslab kernel",
               path, kernel);
      json_decref(nb);
      return NULL;
    }
  }
  if (problem) {
    snprintf(err, errlen, "%s: %s", path, problem);
    json_decref(nb);
    return NULL;
  }
  return nb;
}

char *slR_multiline(json_t *value) {
  if (json_is_string(value)) return strdup(json_string_value(value));
  if (!json_is_array(value)) return NULL;
  size_t n = 0, i;
  json_t *line;
  json_array_foreach(value, i, line) {
    if (!json_is_string(line)) return NULL;
    n += json_string_length(line);
  }
  char *s = malloc(n + 1), *p = s;
  json_array_foreach(value, i, line) {
    size_t l = json_string_length(line);
    memcpy(p, json_string_value(line), l);
    p += l;
  }
  *p = '\0';
  return s;
}

char *slR_cell_source(json_t *cell) {
  char *s = slR_multiline(json_object_get(cell, "source"));
  return s ? s : strdup("");
}

int slR_cell_has_tag(json_t *cell, const char *tag) {
  json_t *tags = json_object_get(json_object_get(cell, "metadata"), "tags");
  size_t i;
  json_t *t;
  json_array_foreach(tags, i, t) if (json_string_value(t) && strcmp(json_string_value(t), tag) == 0) return 1;
  return 0;
}

/* The cell the reader sees: its place in the notebook's file, from 1,
** Markdown and raw cells included (the order JupyterLab lists them in);
** the cell the report injects for -p is not the reader's, so it does
** not count. */
size_t slR_cell_number(json_t *cells, size_t index) {
  size_t n = 0, i;
  json_t *cell;
  json_array_foreach(cells, i, cell) {
    if (i > index) break;
    if (!slR_cell_injected(cell)) n++;
  }
  return n;
}

int slR_cell_injected(json_t *cell) {
  const char *id = json_string_value(json_object_get(cell, "id"));
  return id && strcmp(id, "injected-parameters") == 0 && slR_cell_has_tag(cell, "injected-parameters");
}

int slR_cell_option(const char *source, const char *key, char *out, size_t size) {
  out[0] = '\0';
  size_t klen = strlen(key);
  const char *p = source;
  while (strncmp(p, "#|", 2) == 0) {
    const char *q = p + 2;
    while (*q == ' ') q++;
    const char *eol = strchr(q, '\n');
    size_t len = eol ? (size_t)(eol - q) : strlen(q);
    if (len > klen && strncmp(q, key, klen) == 0 && q[klen] == ':') {
      const char *v = q + klen + 1;
      while (*v == ' ') v++;
      size_t vlen = len - (size_t)(v - q);
      while (vlen > 0 && (v[vlen - 1] == ' ' || v[vlen - 1] == '\r')) vlen--;
      if (vlen >= 2 && (v[0] == '"' || v[0] == '\'') && v[vlen - 1] == v[0]) v++, vlen -= 2;
      snprintf(out, size, "%.*s", (int)vlen, v);
      return 1;
    }
    if (!eol) break;
    p = eol + 1;
  }
  return 0;
}

int slR_label_valid(const char *label) {
  size_t n = strlen(label);
  if (n == 0 || n > 100) return 0;
  for (const char *p = label; *p; p++)
    if (!isalnum((unsigned char)*p) && *p != '-' && *p != '_') return 0;
  return 1;
}

int slR_write_atomic(const char *path, const void *data, size_t len, char *err, size_t errlen) {
  char tmp[4200];
  snprintf(tmp, sizeof tmp, "%s.tmp%d", path, (int)getpid());
  /* the temporary name is created here, never opened through a link or over
  ** a file someone left there (removed first); the rename then replaces
  ** whatever the final name was, a link included, never what it points to */
  char why[512];
  unlink(tmp);
  int fd = slF_open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW, "a file of the report", NULL, why, sizeof why);
  if (fd < 0) {
    snprintf(err, errlen, "cannot write %s: %s", path, why);
    return -1;
  }
  const char *p = data;
  size_t left = len;
  while (left > 0) {
    ssize_t n = write(fd, p, left);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    p += n;
    left -= (size_t)n;
  }
  int saved = errno;
  if (close(fd) != 0 && left == 0) left = 1, saved = errno;
  if (left > 0 || rename(tmp, path) != 0) {
    snprintf(err, errlen, "cannot write %s: %s", path, strerror(left > 0 ? saved : errno));
    unlink(tmp);
    return -1;
  }
  return 0;
}

int slR_write_json_atomic(const char *path, json_t *json, char *err, size_t errlen) {
  char *s = json_dumps(json, JSON_INDENT(1) | JSON_PRESERVE_ORDER | JSON_ENSURE_ASCII);
  size_t n = strlen(s);
  char *with_newline = malloc(n + 2);
  memcpy(with_newline, s, n);
  with_newline[n] = '\n';
  int rc = slR_write_atomic(path, with_newline, n + 1, err, errlen);
  free(with_newline);
  free(s);
  return rc;
}

int slR_mkdirs(const char *path) {
  char buf[4096];
  snprintf(buf, sizeof buf, "%s", path);
  for (char *p = buf + 1; *p; p++) {
    if (*p != '/') continue;
    *p = '\0';
    if (mkdir(buf, 0755) != 0 && errno != EEXIST) return -1;
    *p = '/';
  }
  return mkdir(buf, 0755) != 0 && errno != EEXIST ? -1 : 0;
}
