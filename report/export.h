/*
** export.h - turning executed notebooks into the lab report.
*/
#ifndef SYSLAB_EXPORT_H
#define SYSLAB_EXPORT_H

#include <jansson.h>
#include <stddef.h>

#define SLR_KATEX_DIR "/usr/share/javascript/katex"

typedef struct slR_Notebook {
  const char *path;   /* as given on the command line */
  char stem[256];     /* file name without .ipynb */
  json_t *nb;         /* the executed notebook */
} slR_Notebook;

/* report.md's text; figures are written under outdir/figures. Caller frees. */
int slR_export_markdown(const slR_Notebook *nbs, size_t count, const char *outdir, char **markdown, char *err,
                        size_t errlen);
/* outdir/report.html from the Markdown, with math typeset by KaTeX */
int slR_export_html(const char *markdown, const char *outdir, char *err, size_t errlen);
/* outdir/report.pdf from outdir/report.html through headless Chromium */
int slR_export_pdf(const char *outdir, double timeout, char *err, size_t errlen);

#endif
