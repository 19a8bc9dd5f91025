/*
** table.h - tables: rows of named columns holding numbers or strings, the
** value every sweep, benchmark and plot works with.
*/
#ifndef SYSLAB_TABLE_H
#define SYSLAB_TABLE_H

#include <stddef.h>

#include "slcommand.h"

typedef struct slT_Table {
  size_t ncols, nrows, cap_rows, cap_cols;
  char **names;
  unsigned char *timing; /* per column: holds measurements of time (marked in Markdown) */
  sl_Value *cells;       /* row-major, nrows x cap_cols; nil marks a missing cell */
  char *note;            /* why its cells may be missing, for messages (a study without a complete trial); or NULL */
} slT_Table;

extern const sl_Class slT_class;

slT_Table *slT_new(void);
void slT_free(slT_Table *t);
sl_Value slT_value(slT_Table *t); /* wraps t in an object value (takes ownership) */
slT_Table *slT_from(sl_Value v);  /* the table inside a value, or NULL */

/* column index, or -1 */
int slT_column(const slT_Table *t, const char *name);
/* adds a column (filled with nil) if it does not exist; returns its index */
int slT_add_column(slT_Table *t, const char *name);
/* marks a column as measurements of time: reports may differ there between runs */
void slT_mark_timing(slT_Table *t, int col);
/* says why the table's cells may be missing (copied; replaces an earlier note) */
void slT_set_note(slT_Table *t, const char *note);
/* appends an empty row (all nil) and returns its index */
size_t slT_add_row(slT_Table *t);
sl_Value slT_get(const slT_Table *t, size_t row, size_t col);   /* borrowed */
void slT_set(slT_Table *t, size_t row, size_t col, sl_Value v); /* takes a reference */

/* "names the columns: a, b, c", for error messages; caller frees */
char *slT_column_list(const slT_Table *t);

/* text renderings used by show (and by the report); caller frees */
char *slT_to_text(const slT_Table *t);
char *slT_to_markdown(const slT_Table *t);
char *slT_to_html(const slT_Table *t);

/* the column named by a call's argument `arg`, or -1 after an error that
** lists the table's columns */
int slT_arg_column(sl_Call *call, slT_Table *t, const char *arg);

/* CSV (RFC 4180 quoting). Writing goes to a temporary name, then renames. */
int slT_write_csv(const slT_Table *t, const char *path, char *err, size_t errlen);
slT_Table *slT_read_csv(const char *path, char *err, size_t errlen);
/* CSV text already in memory (`path` only names it in errors) */
slT_Table *slT_parse_csv(const char *text, size_t len, const char *path, char *err, size_t errlen);

#endif
