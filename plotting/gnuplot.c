/*
** gnuplot.c - the gnuplot driver.
**
** Each figure is one gnuplot process, run as a filter by lang/process.c
** (no shell ever sees the script), fed its script on standard input, and
** read back from standard output: the script writes a PNG and then an SVG there, and
** the PNG's own chunk structure says where it ends. So nothing goes through
** files, and two figures rendered at once cannot collide. The process is
** killed if it runs past its time limit; what it says on stderr is kept as
** warnings, or as the error when it fails.
*/
#include "gnuplot.h"
#include "slutil.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void slP_quote(char **buf, size_t *len, size_t *cap, const char *s) {
  slU_Text b = {*buf, *len, *cap};
  int pieces = 0, open = 0;
  for (; *s; s++) {
    char c = *s;
    if (c == '\'') {
      if (open) slU_add_len(&b, "'", 1), open = 0;
      slU_add(&b, "%s\"'\"", pieces++ ? "." : "");
      continue;
    }
    if (!open) slU_add(&b, "%s'", pieces++ ? "." : ""), open = 1;
    if ((unsigned char)c < 32 || c == 127) c = ' ';
    slU_add_len(&b, &c, 1);
  }
  if (open) slU_add_len(&b, "'", 1);
  if (!pieces) slU_add_len(&b, "''", 2);
  *buf = b.s;
  *len = b.n;
  *cap = b.cap;
}

/* gnuplot's stderr as one short line: the message of its first error
** ("line 3: all points y value undefined!" becomes "all points y value
** undefined!"), without the echoed script and caret */
static void summarise_error(const char *text, char *out, size_t size) {
  const char *best = NULL;
  for (const char *line = text; line && *line; line = strchr(line, '\n') ? strchr(line, '\n') + 1 : NULL) {
    const char *p = line;
    while (*p == ' ') p++;
    if (strncmp(p, "line ", 5) == 0 && strchr(p, ':') && strchr(p, ':') < strchr(p, '\n')) {
      best = strchr(p, ':') + 1;
      break;
    }
    if (!best && *p && *p != '\n' && strncmp(p, "gnuplot>", 8) != 0 && *p != '^') best = p;
  }
  if (!best) best = "no message";
  while (*best == ' ') best++;
  size_t n = strcspn(best, "\n");
  if (n > 200) n = 200;
  snprintf(out, size, "%.*s", (int)n, best);
}

static unsigned be32(const unsigned char *p) {
  return (unsigned)p[0] << 24 | (unsigned)p[1] << 16 | (unsigned)p[2] << 8 | p[3];
}

static const unsigned char png_signature[8] = {0x89, 'P', 'N', 'G', '\r', '\n', 0x1A, '\n'};

/* length of the PNG at the start of data (through its IEND chunk), or 0 */
static size_t png_length(const char *data, size_t len) {
  const unsigned char *p = (const unsigned char *)data;
  if (len < 8 || memcmp(p, png_signature, 8) != 0) return 0;
  size_t at = 8;
  while (at + 12 <= len) {
    size_t chunk = be32(p + at);
    if (chunk > len - at - 12) return 0;
    int end = memcmp(p + at + 4, "IEND", 4) == 0;
    at += 12 + chunk;
    if (end) return at;
  }
  return 0;
}

int slP_png_size(const char *data, size_t len, unsigned *width, unsigned *height) {
  const unsigned char *p = (const unsigned char *)data;
  if (png_length(data, len) != len || len < 24 || memcmp(p + 12, "IHDR", 4) != 0) return 0;
  *width = be32(p + 16);
  *height = be32(p + 20);
  return 1;
}

slP_Status slP_render(const char *script, double timeout, slP_Image *out, char *err, size_t errlen) {
  memset(out, 0, sizeof *out);
  char *o, *e;
  size_t n;
  int exit_status;
  const char *argv[] = {"gnuplot", NULL};
  int st = slO_run_filter(argv, script, timeout, &o, &n, &e, &exit_status, err, errlen);
  if (st == SLP_MISSING) {
    snprintf(err, errlen, "gnuplot is not installed: install the Debian package gnuplot-nox");
    return SLP_MISSING;
  }
  if (st != SLP_OK) {
    free(o);
    free(e);
    return (slP_Status)st;
  }
  slP_Status status = SLP_OK;
  if (exit_status != 0) {
    char why[256];
    summarise_error(e ? e : "", why, sizeof why);
    snprintf(err, errlen, "gnuplot could not draw the plot: %s", why);
    status = SLP_FAILED;
  } else {
    size_t png = png_length(o, n);
    const char *svg = png ? o + png : NULL;
    if (!png || !strstr(svg, "<svg") || !strstr(svg, "</svg>")) {
      char why[256];
      summarise_error(e ? e : "", why, sizeof why);
      snprintf(err, errlen, "gnuplot produced no image: %s", why);
      status = SLP_FAILED;
    } else {
      out->png = malloc(png);
      memcpy(out->png, o, png);
      out->png_len = png;
      out->svg_len = n - png;
      out->svg = malloc(out->svg_len + 1);
      memcpy(out->svg, svg, out->svg_len + 1);
      if (e) out->warnings = strdup(e);
    }
  }
  free(o);
  free(e);
  return status;
}

void slP_image_free(slP_Image *img) {
  free(img->png);
  free(img->svg);
  free(img->warnings);
  memset(img, 0, sizeof *img);
}
