/*
** fuzz_markdown.c - libFuzzer target: the report's exporters on any
** notebook the reader accepts. The input is read as the report reads a
** notebook, exported to Markdown (figures written under a scratch folder),
** and the Markdown turned into report.html (cmark-gfm, math kept apart,
** heading ids, the HTML sanitiser). PDF is left out: it runs Chromium.
**
** What must hold: export either succeeds or fails with a message; every
** figure it writes stays inside the scratch folder's figures/; the HTML
** that reaches report.html has no <script> other than the report's own two.
*/
#define _GNU_SOURCE /* strcasestr */
#include <dirent.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "report/export.h"
#include "report/notebook.h"

static char dir[64], figures[96], input[96], html[96];

static void setup(void) {
  if (dir[0]) return;
  snprintf(dir, sizeof dir, "/tmp/syslab-fuzz-report-%d", (int)getpid());
  snprintf(figures, sizeof figures, "%s/figures", dir);
  snprintf(input, sizeof input, "%s/nb.ipynb", dir);
  snprintf(html, sizeof html, "%s/report.html", dir);
  mkdir(dir, 0700);
}

/* removes what one run wrote, and checks that figures/ holds only files */
static void clean_figures(void) {
  DIR *d = opendir(figures);
  if (!d) return;
  struct dirent *e;
  char path[512];
  while ((e = readdir(d)) != NULL) {
    if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0) continue;
    snprintf(path, sizeof path, "%s/%s", figures, e->d_name);
    if (unlink(path) != 0) abort(); /* a folder inside figures/ would mean a path escaped */
  }
  closedir(d);
}

/* case-insensitive, as browsers read tags */
static size_t count_scripts(const char *s) {
  size_t n = 0;
  for (const char *p = s; (p = strcasestr(p, "<script")) != NULL; p++) n++;
  return n;
}

static char *read_all(const char *path) {
  FILE *h = fopen(path, "rb");
  if (!h) abort();
  fseek(h, 0, SEEK_END);
  long n = ftell(h);
  rewind(h);
  char *page = malloc((size_t)n + 1);
  if (fread(page, 1, (size_t)n, h) != (size_t)n) abort();
  page[n] = '\0';
  fclose(h);
  return page;
}

/* the script tags of a report with no notebook HTML in it: KaTeX's and the
** typesetting script's, plus any inside KaTeX's own text */
static size_t baseline_scripts(void) {
  static size_t n;
  if (n) return n;
  char err[512];
  if (slR_export_html("# Lab report\n\ntext\n", dir, err, sizeof err) != 0) abort();
  char *page = read_all(html);
  n = count_scripts(page);
  free(page);
  unlink(html);
  return n;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  setup();
  FILE *f = fopen(input, "wb");
  if (!f) abort();
  fwrite(data, 1, size, f);
  fclose(f);
  char err[512];
  slR_Notebook nb = {.path = input, .stem = "nb"};
  nb.nb = slR_notebook_read(input, err, sizeof err);
  if (!nb.nb) return 0;
  json_t *failures = json_array(), *written = json_array();
  char *md = NULL;
  err[0] = '\0';
  if (slR_export_markdown(&nb, 1, dir, failures, written, &md, err, sizeof err) == 0) {
    if (!md) abort();
    if (slR_export_html(md, dir, err, sizeof err) == 0) {
      char *page = read_all(html);
      /* anything beyond the report's own scripts got through the sanitiser */
      if (count_scripts(page) != baseline_scripts()) abort();
      free(page);
      unlink(html);
    } else if (!err[0]) {
      abort();
    }
  } else if (!err[0]) {
    abort(); /* a failure says why */
  }
  free(md);
  clean_figures();
  json_decref(failures);
  json_decref(written);
  json_decref(nb.nb);
  return 0;
}
