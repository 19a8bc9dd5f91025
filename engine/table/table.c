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
#include <fcntl.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
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
  free(t->note);
  free(t);
}

void slT_set_note(slT_Table *t, const char *note) {
  free(t->note);
  t->note = note ? strdup(note) : NULL;
}

int slT_column(const slT_Table *t, const char *name) {
  for (size_t c = 0; c < t->ncols; c++)
    if (strcmp(t->names[c], name) == 0) return (int)c;
  return -1;
}

/* adds a column that does not exist yet */
static int append_column(slT_Table *t, const char *name) {
  if (t->ncols == t->cap_cols) {
    size_t cap = t->cap_cols ? t->cap_cols * 2 : 8;
    sl_Value *cells = calloc(cap * (t->cap_rows ? t->cap_rows : 1), sizeof *cells);
    for (size_t r = 0; r < t->nrows; r++) memcpy(cells + r * cap, t->cells + r * t->cap_cols, t->ncols * sizeof *cells);
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

int slT_add_column(slT_Table *t, const char *name) {
  int c = slT_column(t, name);
  return c >= 0 ? c : append_column(t, name);
}

size_t slT_add_row(slT_Table *t) {
  if (t->cap_cols == 0) { /* a row before any column: make room for columns to come */
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

/* Displays show a long table as its head and tail, as pandas and JupyterLab
** users expect: building and sending a million rows to a browser hangs both,
** and nobody reads them. `save` still writes every row. */
#define SHOW_ALL_UPTO 60
#define SHOW_EDGE 20

/* the rows a display shows: row r of the display is table row shown_row(t, r) */
static size_t shown_rows(const slT_Table *t) { return t->nrows <= SHOW_ALL_UPTO ? t->nrows : 2 * SHOW_EDGE; }
static size_t shown_row(const slT_Table *t, size_t r) {
  return t->nrows <= SHOW_ALL_UPTO || r < SHOW_EDGE ? r : t->nrows - 2 * SHOW_EDGE + r;
}
/* the display's gap comes before display row r */
static int gap_before(const slT_Table *t, size_t r) { return t->nrows > SHOW_ALL_UPTO && r == SHOW_EDGE; }
static size_t hidden_rows(const slT_Table *t) { return t->nrows - shown_rows(t); }

static int numeric_column(const slT_Table *t, size_t c) {
  for (size_t r = 0; r < t->nrows; r++)
    if (slT_get(t, r, c).type == SL_STRING) return 0;
  return 1;
}

/* per column: 1 when it holds no strings (numbers align right) */
static int *numeric_columns(const slT_Table *t) {
  int *right = calloc(t->ncols ? t->ncols : 1, sizeof *right);
  for (size_t c = 0; c < t->ncols; c++) right[c] = numeric_column(t, c);
  return right;
}

char *slT_to_text(const slT_Table *t) {
  slU_Text s = {0};
  slU_add_len(&s, "", 0);
  if (t->ncols == 0) {
    slU_add(&s, "(empty table)");
    return s.s;
  }
  size_t n = shown_rows(t);
  size_t *width = calloc(t->ncols, sizeof *width);
  for (size_t c = 0; c < t->ncols; c++) width[c] = utf8_width(t->names[c]);
  for (size_t r = 0; r < n; r++)
    for (size_t c = 0; c < t->ncols; c++) {
      char *x = cell_text(slT_get(t, shown_row(t, r), c));
      if (utf8_width(x) > width[c]) width[c] = utf8_width(x);
      free(x);
    }
  /* numbers align right, text left; the last column carries no trailing blanks */
  int *right = numeric_columns(t);
  for (size_t r = 0; r <= n; r++) {
    if (r > 0 && gap_before(t, r - 1)) {
      for (size_t c = 0; c < t->ncols; c++) {
        int pad = (int)(width[c] > 3 ? width[c] - 3 : 0);
        if (right[c]) slU_add(&s, "%s%*s...", c ? "  " : "", pad, "");
        else slU_add(&s, "%s...%*s", c ? "  " : "", c + 1 < t->ncols ? pad : 0, "");
      }
      slU_add(&s, "\n");
    }
    for (size_t c = 0; c < t->ncols; c++) {
      char *x = r == 0 ? strdup(t->names[c]) : cell_text(slT_get(t, shown_row(t, r - 1), c));
      int pad = (int)(width[c] - utf8_width(x));
      if (right[c]) slU_add(&s, "%s%*s%s", c ? "  " : "", pad, "", x);
      else slU_add(&s, "%s%s%*s", c ? "  " : "", x, c + 1 < t->ncols ? pad : 0, "");
      free(x);
    }
    slU_add(&s, "\n");
  }
  free(right);
  if (hidden_rows(t))
    slU_add(&s, "(%zu rows; the first and last %d are shown, %zu in between are not)", t->nrows, SHOW_EDGE,
            hidden_rows(t));
  else slU_add(&s, "(%zu row%s)", t->nrows, t->nrows == 1 ? "" : "s");
  free(width);
  return s.s;
}

static void add_escaped(slU_Text *s, const char *x, int markdown) {
  const char *plain = x;
  for (; *x; x++) {
    const char *rep = markdown && *x == '|'    ? "\\|"
                      : *x == '\n'             ? (markdown ? " " : "<br>")
                      : !markdown && *x == '<' ? "&lt;"
                      : !markdown && *x == '>' ? "&gt;"
                      : !markdown && *x == '&' ? "&amp;"
                                               : NULL;
    if (!rep) continue;
    slU_add_len(s, plain, (size_t)(x - plain));
    slU_add(s, "%s", rep);
    plain = x + 1;
  }
  slU_add_len(s, plain, (size_t)(x - plain));
}

char *slT_to_markdown(const slT_Table *t) {
  slU_Text s = {0};
  slU_add_len(&s, "", 0);
  if (t->ncols == 0) {
    slU_add(&s, "*(empty table)*\n");
    return s.s;
  }
  int *right = numeric_columns(t);
  slU_add(&s, "|");
  for (size_t c = 0; c < t->ncols; c++) slU_add(&s, " "), add_escaped(&s, t->names[c], 1), slU_add(&s, " |");
  slU_add(&s, "\n|");
  for (size_t c = 0; c < t->ncols; c++) slU_add(&s, right[c] ? "---:|" : "---|");
  slU_add(&s, "\n");
  for (size_t r = 0; r < shown_rows(t); r++) {
    if (gap_before(t, r)) {
      slU_add(&s, "|");
      for (size_t c = 0; c < t->ncols; c++) slU_add(&s, " ... |");
      slU_add(&s, "\n");
    }
    slU_add(&s, "|");
    for (size_t c = 0; c < t->ncols; c++) {
      char *x = cell_text(slT_get(t, shown_row(t, r), c));
      slU_add(&s, t->timing[c] ? " <span class=\"syslab-timing\">" : " ");
      add_escaped(&s, x, 1);
      slU_add(&s, t->timing[c] ? "</span> |" : " |");
      free(x);
    }
    slU_add(&s, "\n");
  }
  if (hidden_rows(t)) slU_add(&s, "\n*%zu rows; the first and last %d are shown.*\n", t->nrows, SHOW_EDGE);
  free(right);
  return s.s;
}

char *slT_to_html(const slT_Table *t) {
  slU_Text s = {0};
  int *right = numeric_columns(t);
  slU_add(&s, "<table>\n<thead><tr>");
  for (size_t c = 0; c < t->ncols; c++) {
    slU_add(&s, "<th style=\"text-align:%s\">", right[c] ? "right" : "left");
    add_escaped(&s, t->names[c], 0);
    slU_add(&s, "</th>");
  }
  slU_add(&s, "</tr></thead>\n<tbody>\n");
  for (size_t r = 0; r < shown_rows(t); r++) {
    if (gap_before(t, r)) {
      slU_add(&s, "<tr>");
      for (size_t c = 0; c < t->ncols; c++)
        slU_add(&s, "<td style=\"text-align:%s\">...</td>", right[c] ? "right" : "left");
      slU_add(&s, "</tr>\n");
    }
    slU_add(&s, "<tr>");
    for (size_t c = 0; c < t->ncols; c++) {
      char *x = cell_text(slT_get(t, shown_row(t, r), c));
      slU_add(&s, "<td style=\"text-align:%s\">", right[c] ? "right" : "left");
      add_escaped(&s, x, 0);
      slU_add(&s, "</td>");
      free(x);
    }
    slU_add(&s, "</tr>\n");
  }
  slU_add(&s, "</tbody>\n</table>\n");
  if (hidden_rows(t)) slU_add(&s, "<p>%zu rows; the first and last %d are shown.</p>\n", t->nrows, SHOW_EDGE);
  free(right);
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

/* t[3] is row 3 as a record (t[-1] the last), t["loss"] the column as a list */
static int table_index(void *data, sl_Value key, sl_Value *out, char *err, size_t errlen) {
  slT_Table *t = data;
  if (key.type == SL_STRING) {
    if (slT_column(t, sl_str(key)) >= 0) return table_field(t, sl_str(key), out);
    char *cols = slT_column_list(t);
    snprintf(err, errlen, "the table has no column '%.100s' (columns: %.300s)", sl_str(key), cols);
    free(cols);
    return -1;
  }
  if (key.type != SL_NUMBER || key.u.n != floor(key.u.n)) {
    snprintf(err, errlen, "a table is indexed by a row number (t[0]) or a column name (t[\"loss\"])");
    return -1;
  }
  double rows = (double)t->nrows, r = key.u.n < 0 ? key.u.n + rows : key.u.n;
  if (r < 0 || r >= rows) {
    snprintf(err, errlen, "row %.15g is out of range for a table of %zu rows", key.u.n, t->nrows);
    return -1;
  }
  *out = sl_record_new();
  for (size_t c = 0; c < t->ncols; c++) {
    sl_Value v = slT_get(t, (size_t)r, c);
    sl_retain(v);
    sl_record_set(*out, t->names[c], v);
  }
  return 0;
}

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

const sl_Class slT_class = {.name = "table",
                            .free = table_free,
                            .show = table_show,
                            .field = table_field,
                            .fields = table_fields,
                            .index = table_index,
                            .encode = table_encode,
                            .decode = table_decode};

sl_Value slT_value(slT_Table *t) { return sl_object_new(&slT_class, t); }
slT_Table *slT_from(sl_Value v) { return sl_object_as(v, &slT_class); }

/* -------------------------------------------------------------------- CSV */

/* Strings are quoted when they must be (commas, quotes, line breaks, edge
** blanks) and also when they are empty or read as numbers, so that every
** cell comes back as what it was: "" stays an empty string (an unquoted
** empty field is a missing value) and the string "12" stays a string. */
static void csv_field(FILE *f, const char *s, int is_string) {
  double ignored;
  int quote = strpbrk(s, ",\"\n\r") || s[0] == ' ' || (*s && s[strlen(s) - 1] == ' ') ||
              strncmp(s, "\xEF\xBB\xBF", 3) == 0 || /* a leading BOM would be taken for the file's */
              (is_string && (!*s || sl_parse_number(s, &ignored)));
  if (!quote) {
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
  char tmp[4096], why[512];
  snprintf(tmp, sizeof tmp, "%s.tmp%d", path, (int)getpid());
  int fd = slF_open(tmp, O_WRONLY | O_CREAT | O_TRUNC, "a CSV file", NULL, why, sizeof why);
  FILE *f = fd >= 0 ? fdopen(fd, "w") : NULL;
  if (!f) {
    if (fd >= 0) close(fd);
    snprintf(err, errlen, "cannot write '%s': %s", path, fd < 0 ? why : strerror(errno));
    return -1;
  }
  for (size_t c = 0; c < t->ncols; c++) {
    if (c) fputc(',', f);
    csv_field(f, t->names[c], 0);
  }
  fputc('\n', f);
  for (size_t r = 0; r < t->nrows; r++) {
    if ((r & 1023) == 0 && sl_interrupted()) break;
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
        csv_field(f, s, v.type == SL_STRING);
        free(s);
      }
    }
    fputc('\n', f);
  }
  int bad = ferror(f);
  if (sl_interrupted()) {
    fclose(f);
    unlink(tmp);
    snprintf(err, errlen, "interrupted: '%s' was not written", path);
    return -1;
  }
  if (fclose(f) != 0 || bad || rename(tmp, path) != 0) {
    snprintf(err, errlen, "cannot write '%s': %s", path, strerror(errno));
    unlink(tmp);
    return -1;
  }
  return 0;
}

typedef struct {
  char *text;
  int quoted;
} Field;

/* one record of RFC 4180 CSV; returns the number of fields, -1 at end of
** input, -2 for an unterminated quote. Text after a closing quote is kept
** ("a"b reads as ab, as Python's csv module reads it). */
static int csv_record(const char **p, const char *end, Field **fields, size_t *cap) {
  const char *s = *p;
  if (s == end) return -1;
  int n = 0;
  for (;;) {
    slU_Text field = {0};
    slU_add_len(&field, "", 0);
    int quoted = 0;
    if (s < end && *s == '"') {
      quoted = 1;
      s++;
      for (;;) {
        const char *q = memchr(s, '"', (size_t)(end - s));
        if (!q) {
          free(field.s);
          for (int i = 0; i < n; i++) free((*fields)[i].text);
          return -2;
        }
        slU_add_len(&field, s, (size_t)(q - s));
        s = q + 1;
        if (s < end && *s == '"') {
          slU_add_len(&field, "\"", 1);
          s++;
        } else {
          break;
        }
      }
    }
    const char *stop = s;
    while (stop < end && *stop != ',' && *stop != '\n' && *stop != '\r') stop++;
    slU_add_len(&field, s, (size_t)(stop - s));
    s = stop;
    if ((size_t)n == *cap) *fields = realloc(*fields, (*cap = *cap ? *cap * 2 : 16) * sizeof **fields);
    (*fields)[n++] = (Field){field.s, quoted};
    if (s < end && *s == ',') {
      s++;
      continue;
    }
    if (s < end && *s == '\r') s++;
    if (s < end && *s == '\n') s++;
    break;
  }
  *p = s;
  return n;
}

/* quoted fields are strings; unquoted ones are numbers when they read as
** numbers in the language's grammar, missing when empty */
static sl_Value parse_cell(const Field *f) {
  double x;
  if (f->quoted) return sl_string(f->text);
  if (!f->text[0]) return sl_nil();
  if (sl_parse_number(f->text, &x)) return sl_number(x);
  return sl_string(f->text);
}

static void free_fields(Field *fields, int n) {
  for (int i = 0; i < n; i++) free(fields[i].text);
}

typedef struct {
  const char *name;
  int index;
} NamedColumn;

static int by_name(const void *a, const void *b) {
  const NamedColumn *x = a, *y = b;
  int c = strcmp(x->name, y->name);
  return c ? c : x->index - y->index;
}

/* the first duplicate or empty name of a header, or -1; sorting keeps a
** header of 100,000 columns fast */
static int bad_header(const Field *fields, int n, int *empty) {
  NamedColumn *cols = malloc((size_t)(n ? n : 1) * sizeof *cols);
  int bad = -1;
  *empty = 0;
  for (int i = 0; i < n; i++) {
    if (!fields[i].text[0] && bad < 0) bad = i, *empty = 1;
    cols[i] = (NamedColumn){fields[i].text, i};
  }
  if (bad < 0) {
    qsort(cols, (size_t)n, sizeof *cols, by_name);
    for (int i = 1; i < n; i++)
      if (strcmp(cols[i].name, cols[i - 1].name) == 0 && (bad < 0 || cols[i].index < bad)) bad = cols[i].index;
  }
  free(cols);
  return bad;
}

slT_Table *slT_parse_csv(const char *text, size_t len, const char *path, char *err, size_t errlen) {
  const char *p = text, *end = text + len;
  if (len >= 3 && memcmp(p, "\xEF\xBB\xBF", 3) == 0) p += 3; /* a UTF-8 byte-order mark is no part of the header */
  Field *fields = NULL;
  size_t cap = 0;
  int n = csv_record(&p, end, &fields, &cap);
  if (n < 0) {
    snprintf(err, errlen,
             n == -1 ? "'%s' is empty: a CSV file needs a header line" : "'%s': unterminated quote in the header",
             path);
    free(fields);
    return NULL;
  }
  int empty, bad = bad_header(fields, n, &empty);
  if (bad >= 0) {
    snprintf(err, errlen, "'%s': column %d of the header is %s%.200s%s", path, bad + 1,
             empty ? "empty" : "a duplicate name: ", empty ? "" : fields[bad].text, empty ? "" : "");
    free_fields(fields, n);
    free(fields);
    return NULL;
  }
  slT_Table *t = slT_new();
  for (int i = 0; i < n; i++) append_column(t, fields[i].text);
  free_fields(fields, n);
  int line = 1;
  while ((n = csv_record(&p, end, &fields, &cap)) != -1) {
    line++;
    if (n == -2 || ((line & 1023) == 0 && sl_interrupted())) {
      if (n == -2) snprintf(err, errlen, "'%s' line %d: unterminated quote", path, line);
      else snprintf(err, errlen, "interrupted while loading '%s'", path), free_fields(fields, n);
      free(fields);
      slT_free(t);
      return NULL;
    }
    if (n == 1 && !fields[0].text[0] && !fields[0].quoted) { /* blank line */
      free(fields[0].text);
      continue;
    }
    if ((size_t)n != t->ncols) {
      snprintf(err, errlen, "'%s' line %d has %d fields; the header has %zu", path, line, n, t->ncols);
      free_fields(fields, n);
      free(fields);
      slT_free(t);
      return NULL;
    }
    size_t r = slT_add_row(t);
    for (int i = 0; i < n; i++) slT_set(t, r, (size_t)i, parse_cell(&fields[i]));
    free_fields(fields, n);
  }
  free(fields);
  return t;
}

slT_Table *slT_read_csv(const char *path, char *err, size_t errlen) {
  size_t len;
  char *text = slF_read_file(path, "a CSV file", 1, &len, err, errlen);
  if (!text) return NULL;
  slT_Table *t = slT_parse_csv(text, len, path, err, errlen);
  free(text);
  return t;
}
