/*
** table.c - the table value: storage, rendering as text, Markdown and
** HTML, and CSV input and output.
**
** Cells are sl_Values (numbers, strings, or nil for missing), stored row-major
** with room for more columns, so rows and columns can both grow: a sweep adds
** a row per run, and a row may name a column no earlier row had.
*/
#include "table.h"


#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* ---------------------------------------------------------------- storage */

slT_Table *slT_new(void) { return calloc(1, sizeof(slT_Table)); }

void slT_free(slT_Table *t) {
  if (!t) return;
  for (size_t r = 0; r < t->nrows; r++)
    for (size_t c = 0; c < t->ncols; c++) sl_release(t->cells[r * t->cap_cols + c]);
  for (size_t c = 0; c < t->ncols; c++) free(t->names[c]);
  free(t->names);
  free(t->timing);
  free(t->cells);
  free(t);
}

int slT_column(const slT_Table *t, const char *name) {
  for (size_t c = 0; c < t->ncols; c++)
    if (strcmp(t->names[c], name) == 0) return (int)c;
  return -1;
}

int slT_add_column(slT_Table *t, const char *name) {
  int c = slT_column(t, name);
  if (c >= 0) return c;
  if (t->ncols == t->cap_cols) {
    size_t cap = t->cap_cols ? t->cap_cols * 2 : 8;
    sl_Value *cells = calloc(cap * (t->cap_rows ? t->cap_rows : 1), sizeof *cells);
    for (size_t r = 0; r < t->nrows; r++)
      memcpy(cells + r * cap, t->cells + r * t->cap_cols, t->ncols * sizeof *cells);
    free(t->cells);
    t->cells = cells;
    t->cap_cols = cap;
    t->names = realloc(t->names, cap * sizeof *t->names);
    t->timing = realloc(t->timing, cap);
    if (!t->cap_rows) t->cap_rows = 1;
  }
  t->names[t->ncols] = strdup(name);
  t->timing[t->ncols] = 0;
  for (size_t r = 0; r < t->nrows; r++) t->cells[r * t->cap_cols + t->ncols] = sl_nil();
  return (int)t->ncols++;
}

size_t slT_add_row(slT_Table *t) {
  if (t->cap_cols == 0) {  /* a row before any column: make room for columns to come */
    t->cap_cols = 8;
    t->names = malloc(t->cap_cols * sizeof *t->names);
    t->timing = malloc(t->cap_cols);
  }
  if (t->nrows == t->cap_rows) {
    t->cap_rows = t->cap_rows ? t->cap_rows * 2 : 16;
    t->cells = realloc(t->cells, t->cap_rows * t->cap_cols * sizeof *t->cells);
  }
  for (size_t c = 0; c < t->cap_cols; c++) t->cells[t->nrows * t->cap_cols + c] = sl_nil();
  return t->nrows++;
}

void slT_mark_timing(slT_Table *t, int col) {
  if (col >= 0 && (size_t)col < t->ncols) t->timing[col] = 1;
}

sl_Value slT_get(const slT_Table *t, size_t row, size_t col) { return t->cells[row * t->cap_cols + col]; }

void slT_set(slT_Table *t, size_t row, size_t col, sl_Value v) {
  sl_release(t->cells[row * t->cap_cols + col]);
  t->cells[row * t->cap_cols + col] = v;
}

char *slT_column_list(const slT_Table *t) {
  slU_Text s = {0};
  slU_add_len(&s, "", 0);
  for (size_t c = 0; c < t->ncols; c++) slU_add(&s, "%s%s", c ? ", " : "", t->names[c]);
  if (t->ncols == 0) slU_add(&s, "(none)");
  return s.s;
}

/* -------------------------------------------------------------- rendering */

static char *cell_text(sl_Value v) {
  if (v.type == SL_NIL) return strdup("");
  return sl_tostring(v);
}

static size_t utf8_width(const char *s) {
  size_t w = 0;
  for (; *s; s++)
    if (((unsigned char)*s & 0xC0) != 0x80) w++;
  return w;
}

static int numeric_column(const slT_Table *t, size_t c);

char *slT_to_text(const slT_Table *t) {
  slU_Text s = {0};
  slU_add_len(&s, "", 0);
  if (t->ncols == 0) {
    slU_add(&s, "(empty table)");
    return s.s;
  }
  size_t *width = calloc(t->ncols, sizeof *width);
  for (size_t c = 0; c < t->ncols; c++) width[c] = utf8_width(t->names[c]);
  for (size_t r = 0; r < t->nrows; r++)
    for (size_t c = 0; c < t->ncols; c++) {
      char *x = cell_text(slT_get(t, r, c));
      if (utf8_width(x) > width[c]) width[c] = utf8_width(x);
      free(x);
    }
  /* numbers align right, text left; the last column carries no trailing blanks */
  int *right = calloc(t->ncols, sizeof *right);
  for (size_t c = 0; c < t->ncols; c++) right[c] = numeric_column(t, c);
  for (size_t r = 0; r <= t->nrows; r++) {
    for (size_t c = 0; c < t->ncols; c++) {
      char *x = r == 0 ? strdup(t->names[c]) : cell_text(slT_get(t, r - 1, c));
      int pad = (int)(width[c] - utf8_width(x));
      if (right[c]) slU_add(&s, "%s%*s%s", c ? "  " : "", pad, "", x);
      else slU_add(&s, "%s%s%*s", c ? "  " : "", x, c + 1 < t->ncols ? pad : 0, "");
      free(x);
    }
    slU_add(&s, "\n");
  }
  free(right);
  slU_add(&s, "(%zu row%s)", t->nrows, t->nrows == 1 ? "" : "s");
  free(width);
  return s.s;
}

static void add_escaped(slU_Text *s, const char *x, int markdown) {
  for (; *x; x++) {
    if (markdown && *x == '|') slU_add(s, "\\|");
    else if (*x == '\n') slU_add(s, markdown ? " " : "<br>");
    else if (!markdown && *x == '<') slU_add(s, "&lt;");
    else if (!markdown && *x == '>') slU_add(s, "&gt;");
    else if (!markdown && *x == '&') slU_add(s, "&amp;");
    else slU_add(s, "%c", *x);
  }
}

static int numeric_column(const slT_Table *t, size_t c) {
  for (size_t r = 0; r < t->nrows; r++)
    if (slT_get(t, r, c).type == SL_STRING) return 0;
  return 1;
}

char *slT_to_markdown(const slT_Table *t) {
  slU_Text s = {0};
  slU_add_len(&s, "", 0);
  if (t->ncols == 0) {
    slU_add(&s, "*(empty table)*\n");
    return s.s;
  }
  slU_add(&s, "|");
  for (size_t c = 0; c < t->ncols; c++) slU_add(&s, " "), add_escaped(&s, t->names[c], 1), slU_add(&s, " |");
  slU_add(&s, "\n|");
  for (size_t c = 0; c < t->ncols; c++) slU_add(&s, numeric_column(t, c) ? "---:|" : "---|");
  slU_add(&s, "\n");
  for (size_t r = 0; r < t->nrows; r++) {
    slU_add(&s, "|");
    for (size_t c = 0; c < t->ncols; c++) {
      char *x = cell_text(slT_get(t, r, c));
      slU_add(&s, t->timing[c] ? " <span class=\"syslab-timing\">" : " ");
      add_escaped(&s, x, 1);
      slU_add(&s, t->timing[c] ? "</span> |" : " |");
      free(x);
    }
    slU_add(&s, "\n");
  }
  return s.s;
}

char *slT_to_html(const slT_Table *t) {
  slU_Text s = {0};
  slU_add(&s, "<table>\n<thead><tr>");
  for (size_t c = 0; c < t->ncols; c++) {
    slU_add(&s, "<th style=\"text-align:%s\">", numeric_column(t, c) ? "right" : "left");
    add_escaped(&s, t->names[c], 0);
    slU_add(&s, "</th>");
  }
  slU_add(&s, "</tr></thead>\n<tbody>\n");
  for (size_t r = 0; r < t->nrows; r++) {
    slU_add(&s, "<tr>");
    for (size_t c = 0; c < t->ncols; c++) {
      char *x = cell_text(slT_get(t, r, c));
      slU_add(&s, "<td style=\"text-align:%s\">", numeric_column(t, c) ? "right" : "left");
      add_escaped(&s, x, 0);
      slU_add(&s, "</td>");
      free(x);
    }
    slU_add(&s, "</tr>\n");
  }
  slU_add(&s, "</tbody>\n</table>\n");
  return s.s;
}

/* ---------------------------------------------------------- object class */

static void table_free(void *data) { slT_free(data); }

static int table_show(void *data, sl_Bundle *out) {
  slT_Table *t = data;
  char *text = slT_to_text(t), *md = slT_to_markdown(t), *html = slT_to_html(t);
  sl_bundle_add(out, "text/plain", text, strlen(text));
  sl_bundle_add(out, "text/html", html, strlen(html));
  sl_bundle_add(out, "text/markdown", md, strlen(md));
  free(text);
  free(md);
  free(html);
  return 0;
}

/* t.name is the column as a list; t.nrows, t.ncols and t.columns describe it */
static int table_field(void *data, const char *name, sl_Value *out) {
  slT_Table *t = data;
  int c = slT_column(t, name);
  if (c >= 0) {
    *out = sl_list_new();
    for (size_t r = 0; r < t->nrows; r++) {
      sl_Value v = slT_get(t, r, (size_t)c);
      sl_retain(v);
      sl_list_push(*out, v);
    }
    return 0;
  }
  if (strcmp(name, "nrows") == 0) return *out = sl_number((double)t->nrows), 0;
  if (strcmp(name, "ncols") == 0) return *out = sl_number((double)t->ncols), 0;
  if (strcmp(name, "columns") == 0) {
    *out = sl_list_new();
    for (size_t i = 0; i < t->ncols; i++) sl_list_push(*out, sl_string(t->names[i]));
    return 0;
  }
  return -1;
}

static const char *const table_fields[] = {"nrows", "ncols", "columns", NULL};

/* Shipping and saving: column names, timing marks, then every cell as an
** encoded value (nil for a missing one). */
static int table_encode(void *data, slU_Text *out, char *err, size_t errlen) {
  slT_Table *t = data;
  slU_put_u64(out, t->ncols);
  slU_put_u64(out, t->nrows);
  for (size_t c = 0; c < t->ncols; c++) {
    slU_put_str(out, t->names[c]);
    slU_put_u8(out, t->timing[c]);
  }
  for (size_t r = 0; r < t->nrows; r++)
    for (size_t c = 0; c < t->ncols; c++)
      if (sl_encode(slT_get(t, r, c), out, err, errlen) != 0) return -1;
  return 0;
}

/* one encoded value at the reader's position: its length, found by decoding */
static int next_cell(slU_Reader *r, sl_Value *v, char *err, size_t errlen) {
  /* cells are scalars: a tag byte, then 0, 1, 8 or 8 + length bytes */
  size_t start = r->at, len;
  unsigned tag = slU_get_u8(r);
  if (tag == 'n') len = 1;
  else if (tag == 'b') len = 2;
  else if (tag == 'd') len = 9;
  else if (tag == 's') len = 9 + (size_t)slU_get_u64(r);
  else return snprintf(err, errlen, "a table cell is not a number or a string"), -1;
  if (r->bad || len > r->n - start) return snprintf(err, errlen, "the table is truncated"), -1;
  r->at = start + len;
  return sl_decode(r->p + start, len, v, err, errlen);
}

static void *table_decode(const char *bytes, size_t n, char *err, size_t errlen) {
  slU_Reader r = {bytes, n, 0, 0};
  uint64_t ncols = slU_get_u64(&r), nrows = slU_get_u64(&r);
  if (r.bad || ncols > n || nrows > n) return snprintf(err, errlen, "the table is truncated"), NULL;
  slT_Table *t = slT_new();
  for (uint64_t c = 0; c < ncols; c++) {
    char name[256];
    slU_get_str(&r, name, sizeof name);
    int col = slT_add_column(t, name);
    if (slU_get_u8(&r)) slT_mark_timing(t, col);
  }
  for (uint64_t row = 0; row < nrows && !r.bad; row++) {
    size_t at = slT_add_row(t);
    for (uint64_t c = 0; c < ncols; c++) {
      sl_Value v;
      if (next_cell(&r, &v, err, errlen) != 0) return slT_free(t), NULL;
      slT_set(t, at, c, v);
    }
  }
  if (r.bad || r.at != n) return slT_free(t), snprintf(err, errlen, "the table is truncated or too long"), NULL;
  return t;
}

const sl_Class slT_class = {"table", table_free, table_show, table_field, table_fields, table_encode, table_decode};

sl_Value slT_value(slT_Table *t) { return sl_object_new(&slT_class, t); }
slT_Table *slT_from(sl_Value v) { return sl_object_as(v, &slT_class); }

/* -------------------------------------------------------------------- CSV */

static void csv_field(FILE *f, const char *s) {
  if (!strpbrk(s, ",\"\n\r") && s[0] != ' ' && (!*s || s[strlen(s) - 1] != ' ')) {
    fputs(s, f);
    return;
  }
  fputc('"', f);
  for (; *s; s++) {
    if (*s == '"') fputc('"', f);
    fputc(*s, f);
  }
  fputc('"', f);
}

int slT_write_csv(const slT_Table *t, const char *path, char *err, size_t errlen) {
  char tmp[4096];
  snprintf(tmp, sizeof tmp, "%s.tmp%d", path, (int)getpid());
  FILE *f = fopen(tmp, "w");
  if (!f) {
    snprintf(err, errlen, "cannot write '%s': %s", path, strerror(errno));
    return -1;
  }
  for (size_t c = 0; c < t->ncols; c++) {
    if (c) fputc(',', f);
    csv_field(f, t->names[c]);
  }
  fputc('\n', f);
  for (size_t r = 0; r < t->nrows; r++) {
    for (size_t c = 0; c < t->ncols; c++) {
      if (c) fputc(',', f);
      sl_Value v = slT_get(t, r, c);
      if (v.type == SL_NUMBER) {
        /* the shortest text that reads back as the same double */
        char num[64];
        for (int digits = 15; digits <= 17; digits++) {
          snprintf(num, sizeof num, "%.*g", digits, v.u.n);
          if (strtod(num, NULL) == v.u.n) break;
        }
        fputs(num, f);
      } else if (v.type != SL_NIL) {
        char *s = sl_tostring(v);
        csv_field(f, s);
        free(s);
      }
    }
    fputc('\n', f);
  }
  int bad = ferror(f);
  if (fclose(f) != 0 || bad || rename(tmp, path) != 0) {
    snprintf(err, errlen, "cannot write '%s': %s", path, strerror(errno));
    unlink(tmp);
    return -1;
  }
  return 0;
}

/* one record of RFC 4180 CSV; returns the number of fields, -1 at end of
** input, -2 for an unterminated quote */
static int csv_record(const char **p, char ***fields, size_t *cap) {
  const char *s = *p;
  if (!*s) return -1;
  int n = 0;
  for (;;) {
    slU_Text field = {0};
    slU_add_len(&field, "", 0);
    if (*s == '"') {
      s++;
      for (;;) {
        if (!*s) {
          free(field.s);
          for (int i = 0; i < n; i++) free((*fields)[i]);
          return -2;
        }
        if (*s == '"' && s[1] == '"') slU_add(&field, "\""), s += 2;
        else if (*s == '"') { s++; break; }
        else slU_add(&field, "%c", *s++);
      }
      while (*s && *s != ',' && *s != '\n' && *s != '\r') s++;  /* junk after the quote is dropped */
    } else {
      while (*s && *s != ',' && *s != '\n' && *s != '\r') slU_add(&field, "%c", *s++);
    }
    if ((size_t)n == *cap) *fields = realloc(*fields, (*cap = *cap ? *cap * 2 : 16) * sizeof **fields);
    (*fields)[n++] = field.s;
    if (*s == ',') {
      s++;
      continue;
    }
    if (*s == '\r') s++;
    if (*s == '\n') s++;
    break;
  }
  *p = s;
  return n;
}

static sl_Value parse_cell(const char *s) {
  if (!*s) return sl_nil();
  char *end;
  double x = strtod(s, &end);
  if (*end == '\0' && end != s) return sl_number(x);
  return sl_string(s);
}

slT_Table *slT_read_csv(const char *path, char *err, size_t errlen) {
  FILE *f = fopen(path, "rb");
  if (!f) {
    snprintf(err, errlen, "cannot open '%s': %s", path, strerror(errno));
    return NULL;
  }
  slU_Text all = {0};
  slU_add_len(&all, "", 0);
  char buf[8192];
  size_t got;
  while ((got = fread(buf, 1, sizeof buf, f)) > 0) {
    if (memchr(buf, '\0', got)) {
      fclose(f);
      free(all.s);
      snprintf(err, errlen, "'%s' is not a CSV text file (it contains NUL bytes)", path);
      return NULL;
    }
    slU_add(&all, "%.*s", (int)got, buf);
  }
  fclose(f);
  const char *p = all.s;
  char **fields = NULL;
  size_t cap = 0;
  slT_Table *t = slT_new();
  int n = csv_record(&p, &fields, &cap);
  if (n < 0) {
    snprintf(err, errlen, n == -1 ? "'%s' is empty: a CSV file needs a header line" : "'%s': unterminated quote in the header", path);
    free(fields);
    free(all.s);
    slT_free(t);
    return NULL;
  }
  for (int i = 0; i < n; i++) {
    if (slT_column(t, fields[i]) >= 0 || !fields[i][0]) {
      snprintf(err, errlen, "'%s': column %d of the header is %s", path, i + 1, fields[i][0] ? "a duplicate name" : "empty");
      for (int k = i; k < n; k++) free(fields[k]);
      free(fields);
      free(all.s);
      slT_free(t);
      return NULL;
    }
    slT_add_column(t, fields[i]);
    free(fields[i]);
  }
  int line = 1;
  while ((n = csv_record(&p, &fields, &cap)) != -1) {
    line++;
    if (n == -2) {
      snprintf(err, errlen, "'%s' line %d: unterminated quote", path, line);
      free(fields);
      free(all.s);
      slT_free(t);
      return NULL;
    }
    if (n == 1 && !fields[0][0]) {  /* blank line */
      free(fields[0]);
      continue;
    }
    if ((size_t)n != t->ncols) {
      snprintf(err, errlen, "'%s' line %d has %d fields; the header has %zu", path, line, n, t->ncols);
      for (int i = 0; i < n; i++) free(fields[i]);
      free(fields);
      free(all.s);
      slT_free(t);
      return NULL;
    }
    size_t r = slT_add_row(t);
    for (int i = 0; i < n; i++) {
      slT_set(t, r, (size_t)i, parse_cell(fields[i]));
      free(fields[i]);
    }
  }
  free(fields);
  free(all.s);
  return t;
}
