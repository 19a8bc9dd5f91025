/*
** export.h - turning executed notebooks into the lab report.
*/
#ifndef SYSLAB_EXPORT_H
#define SYSLAB_EXPORT_H

#include <jansson.h>
#include <stddef.h>

#define SLR_KATEX_DIR "/usr/share/javascript/katex"

typedef struct slR_Notebook {
  const char *path; /* as given on the command line */
  char stem[256];   /* file name without .ipynb */
  json_t *nb;       /* the executed notebook */
} slR_Notebook;

/* report.md's text; figures are written under outdir/figures, and each one
** written is added to `written` ("figures/NAME", for the folder's manifest).
** `failures` (strings, may be empty) are listed at the top as an
** incomplete-report notice. Caller frees. */
int slR_export_markdown(const slR_Notebook *nbs, size_t count, const char *outdir, json_t *failures, json_t *written,
                        char **markdown, char *err, size_t errlen);
/* outdir/report.html from the Markdown: notebook HTML sanitised, headings
** with ids, math typeset by KaTeX under a Content-Security-Policy */
int slR_export_html(const char *markdown, const char *outdir, char *err, size_t errlen);
/* outdir/report.pdf from outdir/report.html through headless Chromium */
int slR_export_pdf(const char *outdir, double timeout, char *err, size_t errlen);

#endif
