/*
** gnuplot.h - running gnuplot safely: one short-lived process per figure.
*/
#ifndef SYSLAB_GNUPLOT_H
#define SYSLAB_GNUPLOT_H

#include <stddef.h>

#include "lang/process.h"

/* The part of a figure's bundle that marks it as drawn from timings,
** {"measured": true}: the report marks such a figure, whose image differs
** from run to run (docs/report.md). */
#define SLP_FIGURE_MIME "application/vnd.syslab.figure+json"

typedef struct slP_Image {
  char *png;
  size_t png_len;
  char *svg;
  size_t svg_len;
  char *warnings; /* what gnuplot wrote on stderr, or NULL */
} slP_Image;

/* the statuses of lang/process.h, as they read for gnuplot */
typedef enum {
  SLP_OK = SLO_OK,
  SLP_MISSING = SLO_MISSING,        /* gnuplot is not installed */
  SLP_FAILED = SLO_FAILED,          /* gnuplot reported an error or produced no image */
  SLP_TIMEOUT = SLO_TIMEOUT,        /* gnuplot ran past its time limit and was killed */
  SLP_INTERRUPTED = SLO_INTERRUPTED /* the user interrupted; gnuplot was killed */
} slP_Status;

/* Runs `script` (which must end by writing a PNG, then an SVG, to standard
** output) through gnuplot without a shell, within timeout seconds. On
** success fills *out; otherwise err says what went wrong. */
slP_Status slP_render(const char *script, double timeout, slP_Image *out, char *err, size_t errlen);
void slP_image_free(slP_Image *img);

/* Appends s to buf as a gnuplot string expression: runs of text in single
** quotes, where nothing is interpreted (no backquote commands, no escapes),
** joined by gnuplot's '.' to "'" for each apostrophe (gnuplot misreads
** doubled quotes in a row, as in f''(x)). Control characters become spaces
** so a string cannot end a line. */
void slP_quote(char **buf, size_t *len, size_t *cap, const char *s);

/* the gnuplot script of the last `plot` in this process (for benchmarks) */
const char *slP_last_script(void);

/* 1 if data is a whole PNG whose header says width x height */
int slP_png_size(const char *data, size_t len, unsigned *width, unsigned *height);

#endif
