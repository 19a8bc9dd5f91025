/*
** outputs.c - the report's files: report.md, report.html and report.pdf,
** described once, in the order they are made.
**
** Each row names the file, the function that writes it and the option that
** turns it off. Everything that must know the report's files reads this
** table: the export phase below, the removal of the previous report, the
** manifest and the check of the folder (folder.c), the paths printed at
** the end (report.c). Each file is made from the one before it (the HTML
** from the Markdown, the PDF from the HTML), so the first that fails ends
** the phase; a stop removes what was made, so a stopped run leaves no
** report that looks like its own.
*/
#include "outputs.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "client.h"
#include "notebook.h"

/* figures are written under outdir/figures and added to x->written */
static int write_markdown(slR_Exporting *x, const char *path, char *err, size_t errlen) {
  if (slR_export_markdown(x->done, x->ndone, x->o->outdir, x->failures, x->written, &x->md, err, errlen) != 0)
    return -1;
  return slR_write_atomic(path, x->md, strlen(x->md), err, errlen);
}

/* slR_export_html writes outdir/report.html, the name in the table */
static int write_html(slR_Exporting *x, const char *path, char *err, size_t errlen) {
  return slR_export_html(x->md, x->o->outdir, err, errlen);
}

/* slR_export_pdf prints outdir/report.html into outdir/report.pdf */
static int write_pdf(slR_Exporting *x, const char *path, char *err, size_t errlen) {
  return slR_export_pdf(x->o->outdir, 120, err, errlen);
}

static int pdf_wanted(const slR_Options *o) { return o->pdf; } /* --no-pdf */

const slR_Output slR_outputs[SLR_NOUTPUTS] = {
    {"report.md", write_markdown, NULL, 1},
    {"report.html", write_html, NULL, 0},
    {"report.pdf", write_pdf, pdf_wanted, 1},
};

int slR_is_output(const char *name) {
  for (int i = 0; i < SLR_NOUTPUTS; i++)
    if (strcmp(name, slR_outputs[i].name) == 0) return 1;
  return 0;
}

void slR_remove_outputs(const char *outdir) {
  for (int i = 0; i < SLR_NOUTPUTS; i++) {
    char path[4400];
    snprintf(path, sizeof path, "%s/%s", outdir, slR_outputs[i].name);
    unlink(path);
  }
}

int slR_export_outputs(slR_Exporting *x, int ok[SLR_NOUTPUTS]) {
  const slR_Options *o = x->o;
  char err[2048];
  size_t failed_before = json_array_size(x->failures);
  for (int i = 0; i < SLR_NOUTPUTS; i++) ok[i] = 0;
  int stopped = slR_stop_requested();
  for (int i = 0; i < SLR_NOUTPUTS && !stopped && x->ndone > 0; i++) {
    const slR_Output *out = &slR_outputs[i];
    if (out->wanted && !out->wanted(o)) continue;
    char path[4400];
    snprintf(path, sizeof path, "%s/%s", o->outdir, out->name);
    if (out->write(x, path, err, sizeof err) != 0) {
      json_array_append_new(x->failures, json_string(err));
      break;
    }
    ok[i] = 1;
    json_array_append_new(x->written, json_string(out->name));
  }
  for (size_t i = failed_before; i < json_array_size(x->failures); i++)
    fprintf(stderr, "syslab report: %s\n", json_string_value(json_array_get(x->failures, i)));
  free(x->md);
  x->md = NULL;
  stopped = slR_stop_requested();
  if (stopped) {
    slR_remove_outputs(o->outdir);
    for (int i = 0; i < SLR_NOUTPUTS; i++) ok[i] = 0;
  }
  return stopped;
}
