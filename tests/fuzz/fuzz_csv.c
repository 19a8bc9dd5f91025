/*
** fuzz_csv.c - libFuzzer target: the CSV loader on any bytes, and the table
** it builds rendered as text, Markdown and HTML and written back.
*/
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "table/table.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  sl_init();
  char err[512];
  slT_Table *t = slT_parse_csv((const char *)data, size, "fuzz.csv", err, sizeof err);
  if (!t) return 0;
  char *text = slT_to_text(t), *md = slT_to_markdown(t), *html = slT_to_html(t);
  free(text), free(md), free(html);
  static char path[64];
  if (!path[0]) snprintf(path, sizeof path, "/tmp/syslab-fuzz-csv-%d.csv", (int)getpid());
  if (slT_write_csv(t, path, err, sizeof err) == 0) {
    /* what was written reads back with the same shape */
    slT_Table *u = slT_read_csv(path, err, sizeof err);
    if (!u || u->ncols != t->ncols || u->nrows > t->nrows) abort();
    slT_free(u);
    unlink(path);
  }
  slT_free(t);
  return 0;
}
