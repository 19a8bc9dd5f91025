/*
** export.c - the lab report from executed notebooks: Markdown with figure
** files, then HTML (cmark-gfm); the PDF is printed from it by pdf.c.
**
** Figures are numbered across the whole report in order of appearance; a
** code cell's `#| label: fig-x` and `#| fig-cap: ...` name and caption its
** figure (the caption's inline values filled in, as a Markdown cell's
** are), and `@fig-x` in Markdown becomes "Figure N" (Quarto's
** convention). Figure files are named after the notebook and the cell's
** label or position, so two runs name them the same way. Headings of the
** notebooks move one level down under the report's title.
*/
#include "export.h"

#include <cmark-gfm-core-extensions.h>
#include <cmark-gfm.h>
#include <ctype.h>
#include <strings.h>
#include <errno.h>
#include <openssl/evp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "client.h"
#include "escape.h"
#include "highlight.h"
#include "inline.h"
#include "notebook.h"
#include "sanitize.h"
#include "slutil.h"

/* GitHub-style heading anchors: lower case, spaces to '-', punctuation dropped */
static void slug(const char *title, char *out, size_t size) {
  size_t n = 0;
  for (const char *p = title; *p && n + 1 < size; p++) {
    unsigned char c = (unsigned char)*p;
    if ((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-' || c == '_' || c >= 0x80) out[n++] = (char)c;
    else if (c >= 'A' && c <= 'Z') out[n++] = (char)(c - 'A' + 'a');
    else if (c == ' ') out[n++] = '-';
  }
  out[n] = '\0';
}

/* the notebook's section heading in the report: the first line of its first
** Markdown cell when that is a heading, else its file name (what
** slR_export_markdown writes as the section's heading) */
static void notebook_title(json_t *nb, const char *stem, char *out, size_t size) {
  size_t i;
  json_t *cell;
  snprintf(out, size, "%s", stem);
  json_array_foreach(json_object_get(nb, "cells"), i, cell) {
    if (strcmp(json_string_value(json_object_get(cell, "cell_type")), "markdown") != 0) continue;
    char *src = slR_cell_source(cell);
    if (src[0] == '#') {
      char *t = src, *eol = strchr(src, '\n');
      while (*t == '#') t++;
      while (*t == ' ') t++;
      snprintf(out, size, "%.*s", (int)(eol ? eol - t : (long)strlen(t)), t);
    }
    free(src);
    return;
  }
}

static int is_progress(json_t *out) {
  return json_is_true(json_object_get(json_object_get(json_object_get(out, "metadata"), "syslab"), "progress"));
}

/* the same test in both passes, so figure numbers and files agree */
/* what slR_multiline accepts, asked without joining the text (an image's
** base64 can be megabytes) */
static int is_multiline(json_t *v) {
  if (json_is_string(v)) return 1;
  if (!json_is_array(v)) return 0;
  size_t i;
  json_t *line;
  json_array_foreach(v, i, line) if (!json_is_string(line)) return 0;
  return 1;
}

static int is_figure(json_t *out) {
  const char *otype = json_string_value(json_object_get(out, "output_type"));
  if (!otype || (strcmp(otype, "display_data") != 0 && strcmp(otype, "execute_result") != 0) || is_progress(out))
    return 0;
  json_t *data = json_object_get(out, "data");
  return is_multiline(json_object_get(data, "image/png")) || is_multiline(json_object_get(data, "image/svg+xml"));
}

static void strip_ansi(slU_Text *t, const char *s) {
  while (*s) {
    if (*s == '\033' && s[1] == '[') {
      s += 2;
      while (*s && !((*s >= 'A' && *s <= 'Z') || (*s >= 'a' && *s <= 'z'))) s++;
      if (*s) s++;
    } else {
      slU_add_len(t, s++, 1);
    }
  }
}

static void fenced(slU_Text *t, const char *lang, const char *text) {
  size_t n = strlen(text);
  slU_add(t, "```%s\n", lang);
  slU_add_len(t, text, n);
  if (n == 0 || text[n - 1] != '\n') slU_add(t, "\n");
  slU_add(t, "```\n\n");
}

/* Markdown of the notebooks' own text: headings one level down, @fig-x
** references resolved */
static void add_markdown_cell(slU_Text *t, const char *src, json_t *labels) {
  int in_fence = 0;
  for (const char *line = src; *line;) {
    const char *eol = strchr(line, '\n');
    size_t len = eol ? (size_t)(eol - line) + 1 : strlen(line);
    if (strncmp(line, "```", 3) == 0) in_fence = !in_fence;
    if (!in_fence && line[0] == '#') slU_add(t, "#");
    /* @fig-label -> Figure N */
    const char *p = line, *end = line + len;
    while (p < end) {
      const char *at = NULL;
      for (const char *q = p; q + 5 <= end; q++)
        if (strncmp(q, "@fig-", 5) == 0) {
          at = q;
          break;
        }
      if (!at || in_fence) {
        slU_add_len(t, p, (size_t)(end - p));
        break;
      }
      slU_add_len(t, p, (size_t)(at - p));
      const char *e = at + 1;
      while (e < end && (isalnum((unsigned char)*e) || *e == '-' || *e == '_')) e++;
      char label[128];
      snprintf(label, sizeof label, "%.*s", (int)(e - at - 1), at + 1);
      json_t *num = json_object_get(labels, label);
      if (num) slU_add(t, "Figure %d", (int)json_integer_value(num));
      else slU_add_len(t, at, (size_t)(e - at));
      p = e;
    }
    line += len;
  }
  slU_add(t, "\n\n");
}

/* a code cell's source without its "#|" option lines */
static char *visible_code(const char *src) {
  const char *p = src;
  while (strncmp(p, "#|", 2) == 0) {
    const char *eol = strchr(p, '\n');
    p = eol ? eol + 1 : p + strlen(p);
  }
  char *s = strdup(p);
  size_t n = strlen(s);
  while (n > 0 && (s[n - 1] == '\n' || s[n - 1] == ' ')) s[--n] = '\0';
  return s;
}

static int decode_base64(const char *b64, unsigned char **out, size_t *len) {
  size_t n = strlen(b64);
  *out = malloc(n / 4 * 3 + 3);
  int got = EVP_DecodeBlock(*out, (const unsigned char *)b64, (int)n);
  if (got < 0) {
    free(*out);
    return -1;
  }
  size_t pad = 0;
  while (n > 0 && b64[n - 1] == '=') n--, pad++;
  *len = (size_t)got - pad;
  return 0;
}

static void toc_anchors(const char *markdown, const slR_Notebook *nbs, size_t count, char (*anchors)[256]);
static char *sanitize_markdown(const char *md);

/* First pass: number the figures so references can point forward too; a
** label names a figure within its own notebook. One object per notebook,
** label -> figure number. */
static json_t *number_figures(const slR_Notebook *nbs, size_t count) {
  json_t *labels = json_array();
  int figure = 0;
  for (size_t k = 0; k < count; k++) {
    size_t i;
    json_t *cell, *mine = json_object();
    json_array_append_new(labels, mine);
    json_array_foreach(json_object_get(nbs[k].nb, "cells"), i, cell) {
      if (slR_cell_has_tag(cell, "remove-cell") || slR_cell_has_tag(cell, "remove-output")) continue;
      size_t j;
      json_t *out;
      int first = 1;
      json_array_foreach(json_object_get(cell, "outputs"), j, out) {
        if (!is_figure(out)) continue;
        figure++;
        if (first) {
          char *src = slR_cell_source(cell), label[128];
          slR_cell_option(src, "label", label, sizeof label);
          if (label[0]) json_object_set_new(mine, label, json_integer(figure));
          free(src);
          first = 0;
        }
      }
    }
  }
  return labels;
}

/* The report's body as the second pass writes it, and where it stands. */
typedef struct {
  slU_Text t;
  const char *figdir; /* outdir/figures */
  int figure;         /* figures written so far, across the report */
  int rc;             /* the last figure file's: 0, or -1 with err set */
  char *err;
  size_t errlen;
  json_t *written; /* "figures/NAME" of each figure file written */
} Body;

/* One code cell's place: what it names its figures and their caption. */
typedef struct {
  const slR_Notebook *nb;
  size_t i; /* the cell's index in the notebook */
  char label[128];
  char *caption; /* "#| fig-cap:" with its inline values filled in */
  int nfig;      /* figures of this cell so far */
} CellPlace;

/* A figure output: its file under figures/ (named after the notebook and
** the cell's label, else its number), then the image and its caption. */
static void add_figure(Body *b, CellPlace *c, const char *png, const char *svg, int measured) {
  b->figure++;
  size_t number = slR_cell_number(json_object_get(c->nb->nb, "cells"), c->i);
  char name[512], path[4800];
  if (c->label[0] && slR_label_valid(c->label))
    snprintf(name, sizeof name, "%s-%s%s%.0d.%s", c->nb->stem, c->label, c->nfig ? "-" : "", c->nfig,
             png ? "png" : "svg");
  else
    snprintf(name, sizeof name, "%s-cell%zu%s%.0d.%s", c->nb->stem, number, c->nfig ? "-" : "", c->nfig,
             png ? "png" : "svg");
  c->nfig++;
  snprintf(path, sizeof path, "%s/%s", b->figdir, name);
  if (png) {
    unsigned char *bytes;
    size_t len;
    if (decode_base64(png, &bytes, &len) != 0) {
      snprintf(b->err, b->errlen, "%s, cell %zu: the PNG output is not valid base64", c->nb->path, number);
      b->rc = -1;
    } else {
      b->rc = slR_write_atomic(path, bytes, len, b->err, b->errlen);
      free(bytes);
    }
  } else {
    /* scripts, styles and references outside the figure go (sanitize.c) */
    char *safe = slR_sanitize_svg(svg);
    if (!safe) {
      snprintf(b->err, b->errlen, "%s, cell %zu: the SVG output has no <svg> element", c->nb->path, number);
      b->rc = -1;
    } else {
      b->rc = slR_write_atomic(path, safe, strlen(safe), b->err, b->errlen);
      free(safe);
    }
  }
  if (b->rc == 0) json_array_append_new(b->written, json_sprintf("figures/%s", name));
  if (b->rc == 0) {
    const char *cap = c->caption;
    slU_add(&b->t, "![Figure %d%s%s](figures/%s)\n\n*Figure %d%s%s*%s\n\n", b->figure, cap[0] ? ": " : "", cap, name,
            b->figure, cap[0] ? ": " : "", cap,
            measured ? " <span class=\"syslab-timing-figure\">(drawn from timings: the image differs from run to "
                       "run)</span>"
                     : "");
  }
}

/* display_data or execute_result: a figure, else the richest text form */
static void add_display(Body *b, CellPlace *c, json_t *out) {
  json_t *data = json_object_get(out, "data");
  char *png = slR_multiline(json_object_get(data, "image/png"));
  char *svg = slR_multiline(json_object_get(data, "image/svg+xml"));
  char *md = slR_multiline(json_object_get(data, "text/markdown"));
  char *latex = slR_multiline(json_object_get(data, "text/latex"));
  char *html = slR_multiline(json_object_get(data, "text/html"));
  char *plain = slR_multiline(json_object_get(data, "text/plain"));
  /* a plot drawn from timings carries {"measured": true} in the kernel's figure bundle (the MIME type
  ** plotting/gnuplot.h names; the report reads it as any client of the kernel would) */
  int measured = json_is_true(json_object_get(json_object_get(data, "application/vnd.syslab.figure+json"), "measured"));
  if (png || svg) add_figure(b, c, png, svg, measured);
  else if (md) slU_add(&b->t, "%s\n\n", md);
  else if (latex) slU_add(&b->t, "%s\n\n", latex);
  else if (html) slU_add(&b->t, "%s\n\n", html);
  else if (plain) fenced(&b->t, "text", plain);
  free(png), free(svg), free(md), free(latex), free(html), free(plain);
}

/* A code cell: its code (unless hidden), then its outputs in order. A
** figure that cannot be written ends the cell's outputs (b->rc). */
static void add_code_cell(Body *b, const slR_Notebook *nb, size_t i, json_t *cell, const char *src) {
  if (!slR_cell_has_tag(cell, "remove-input") && !slR_cell_has_tag(cell, "hide-input")) {
    char *code = visible_code(src);
    if (code[0]) fenced(&b->t, "syslab", code);
    free(code);
  }
  if (slR_cell_has_tag(cell, "remove-output")) return;
  char *caption = slR_inline_text(cell);
  CellPlace c = {nb, i, "", caption ? slR_inline_fill(cell, caption, 0) : strdup(""), 0};
  free(caption);
  slR_cell_option(src, "label", c.label, sizeof c.label);
  size_t j;
  json_t *out;
  json_array_foreach(json_object_get(cell, "outputs"), j, out) {
    const char *otype = json_string_value(json_object_get(out, "output_type"));
    /* outputs come from the kernel, or from an executed notebook in the
    ** cache that Jupyter may have saved again (text as lists of lines);
    ** anything else nbformat does not define is left out */
    if (!otype || is_progress(out)) continue;
    if (strcmp(otype, "stream") == 0) {
      char *text = slR_multiline(json_object_get(out, "text"));
      if (text) fenced(&b->t, "text", text);
      free(text);
    } else if (strcmp(otype, "error") == 0) {
      const char *ename = json_string_value(json_object_get(out, "ename"));
      const char *evalue = json_string_value(json_object_get(out, "evalue"));
      slU_Text e = {0};
      slU_add(&e, "%s: %s\n", ename ? ename : "Error", evalue ? evalue : "");
      fenced(&b->t, "text", e.s);
      free(e.s);
    } else if (strcmp(otype, "display_data") == 0 || strcmp(otype, "execute_result") == 0) {
      add_display(b, &c, out);
      if (b->rc != 0) break;
    }
  }
  free(c.caption);
}

/* One notebook's section: a heading of its file name unless its first
** Markdown cell starts with one, then its cells. */
static void add_notebook(Body *b, const slR_Notebook *nb, json_t *labels) {
  size_t i;
  json_t *cell;
  int has_heading = 0;
  json_array_foreach(json_object_get(nb->nb, "cells"), i, cell) {
    if (strcmp(json_string_value(json_object_get(cell, "cell_type")), "markdown") == 0) {
      char *s = slR_cell_source(cell);
      has_heading = s[0] == '#';
      free(s);
      break;
    }
  }
  if (!has_heading) slU_add(&b->t, "## %s\n\n", nb->stem);
  json_array_foreach(json_object_get(nb->nb, "cells"), i, cell) {
    if (slR_cell_has_tag(cell, "remove-cell")) continue;
    const char *type = json_string_value(json_object_get(cell, "cell_type"));
    char *src = slR_cell_source(cell);
    if (strcmp(type, "markdown") == 0) {
      char *filled = slR_inline_fill(cell, src, 1);
      add_markdown_cell(&b->t, filled, labels);
      free(filled);
    } else if (strcmp(type, "raw") == 0) slU_add(&b->t, "%s\n\n", src);
    else add_code_cell(b, nb, i, cell, src);
    free(src);
  }
}

/* The whole document around the body: the title, the notice of what
** failed, and the contents, which come last once the headings they point
** to are known. ANSI colours have no place in a document. Caller frees. */
static char *assemble(const char *body, const slR_Notebook *nbs, size_t count, json_t *failures) {
  slU_Text clean = {0};
  slU_add_len(&clean, "", 0);
  strip_ansi(&clean, body);
  slU_Text doc = {0};
  slU_add(&doc, "# Lab report\n\n");
  if (json_array_size(failures) > 0) {
    slU_add(&doc, "> **Incomplete report:** %zu problem%s; notebooks that failed are left out.\n>\n",
            json_array_size(failures), json_array_size(failures) == 1 ? "" : "s");
    size_t i;
    json_t *f;
    json_array_foreach(failures, i, f) slU_add(&doc, "> - %s\n", json_string_value(f));
    slU_add(&doc, "\n");
  }
  slU_add(&doc, "## Contents\n\n");
  size_t head = doc.n;
  slU_add(&doc, "%s", clean.s);
  char(*anchors)[256] = calloc(count ? count : 1, sizeof *anchors);
  toc_anchors(doc.s, nbs, count, anchors);
  slU_Text toc = {0};
  slU_add_len(&toc, doc.s, head);
  for (size_t k = 0; k < count; k++) {
    char title[256];
    notebook_title(nbs[k].nb, nbs[k].stem, title, sizeof title);
    slU_add(&toc, "%zu. [%s](#%s)\n", k + 1, title, anchors[k]);
  }
  slU_add(&toc, "\n%s", clean.s);
  free(anchors);
  free(doc.s);
  free(clean.s);
  return toc.s;
}

int slR_export_markdown(const slR_Notebook *nbs, size_t count, const char *outdir, json_t *failures, json_t *written,
                        char **markdown, char *err, size_t errlen) {
  char figdir[4200];
  snprintf(figdir, sizeof figdir, "%s/figures", outdir);
  if (slR_mkdirs(figdir) != 0) {
    snprintf(err, errlen, "cannot create %s: %s", figdir, strerror(errno));
    return -1;
  }
  json_t *labels = number_figures(nbs, count);
  Body b = {{0}, figdir, 0, 0, err, errlen, written};
  slU_add_len(&b.t, "", 0);
  for (size_t k = 0; k < count && b.rc == 0; k++) add_notebook(&b, &nbs[k], json_array_get(labels, k));
  json_decref(labels);
  if (b.rc != 0) {
    free(b.t.s);
    return -1;
  }
  char *doc = assemble(b.t.s, nbs, count, failures);
  free(b.t.s);
  /* the notebooks' raw HTML in report.md held to the HTML sanitiser's rules */
  *markdown = sanitize_markdown(doc);
  free(doc);
  return 0;
}

/* ------------------------------------------------------------------ HTML */

/* Math is kept away from the Markdown parser, which would read the _ and *
** of TeX as emphasis, and put back verbatim for KaTeX to typeset. The
** control characters \1 and \2 mark headings for their ids below, so any
** in the input are dropped (they have no place in HTML anyway). */
static char *protect_math(const char *md, json_t *stash) {
  slU_Text t = {0};
  slU_add_len(&t, "", 0);
  int in_fence = 0;
  for (const char *p = md; *p;) {
    if ((p == md || p[-1] == '\n') && strncmp(p, "```", 3) == 0) in_fence = !in_fence;
    if (*p == '\1' || *p == '\2') {
      p++;
      continue;
    }
    if (!in_fence && *p == '$') {
      int display = p[1] == '$';
      const char *close = display ? strstr(p + 2, "$$") : strchr(p + 1, '$');
      if (close && (display || !memchr(p + 1, '\n', (size_t)(close - p - 1)))) {
        size_t len = (size_t)(close - p) + (display ? 2 : 1);
        char key[64];
        snprintf(key, sizeof key, "SYSLABMATH%zuX", json_array_size(stash));
        json_array_append_new(stash, json_stringn(p, len));
        slU_add(&t, "%s", key);
        p += len;
        continue;
      }
    }
    slU_add_len(&t, p++, 1);
  }
  return t.s;
}

/* The placeholders replaced: in HTML by a span that the report's script
** typesets with KaTeX (the TeX escaped, as text); in plain text by the TeX. */
static char *restore_math(const char *s, json_t *stash, int html) {
  slU_Text t = {0};
  slU_add_len(&t, "", 0);
  for (const char *p = s; *p;) {
    if (strncmp(p, "SYSLABMATH", 10) == 0) {
      char *end;
      long i = strtol(p + 10, &end, 10);
      if (*end == 'X' && i >= 0 && (size_t)i < json_array_size(stash)) {
        const char *m = json_string_value(json_array_get(stash, (size_t)i));
        if (!html) {
          slU_add(&t, "%s", m);
          p = end + 1;
          continue;
        }
        slU_add(&t, "<span class=\"syslab-math%s\">", m[1] == '$' ? " syslab-display" : "");
        slR_html_text_escape(&t, m, strlen(m));
        slU_add(&t, "</span>");
        p = end + 1;
        continue;
      }
    }
    slU_add_len(&t, p++, 1);
  }
  return t.s;
}

static cmark_node *parse_markdown(const char *markdown, json_t *stash, cmark_parser **parser) {
  cmark_gfm_core_extensions_ensure_registered();
  *parser = cmark_parser_new(CMARK_OPT_UNSAFE);
  const char *exts[] = {"table", "strikethrough", "autolink"};
  for (int i = 0; i < 3; i++) cmark_parser_attach_syntax_extension(*parser, cmark_find_syntax_extension(exts[i]));
  char *protected = protect_math(markdown, stash);
  cmark_parser_feed(*parser, protected, strlen(protected));
  free(protected);
  return cmark_parser_finish(*parser);
}

/* One piece of raw HTML in the Markdown: [at, at + len) of the text, and
** what replaces it. */
typedef struct {
  size_t at, len;
  char *with;
} Patch;

static int patch_order(const void *a, const void *b) {
  size_t x = ((const Patch *)a)->at, y = ((const Patch *)b)->at;
  return x < y ? -1 : x > y;
}

/* The raw HTML that a node holds, found in the text it came from (a
** block's lines may carry the prefixes of the list or quote it is in,
** which its literal lacks), made safe in place: the whole literal where the
** text holds it as it is, else line by line, else, as a last resort, every
** '<' of the node's lines written as text. */
#define ADD_PATCH(A, L, W) \
  do { \
    if (*np == *cap) *patches = realloc(*patches, (*cap = *cap * 2 + 16) * sizeof **patches); \
    (*patches)[(*np)++] = (Patch){(A), (L), (W)}; \
  } while (0)

/* where node n's literal starts in the text, by its source position, and
** its lines l0..l1; 1 when the text holds the literal there as it is */
static int literal_at(const char *text, const size_t *line_at, size_t nlines, cmark_node *n, size_t len, size_t *at,
                      int *l0, int *l1) {
  const char *lit = cmark_node_get_literal(n);
  /* the last line from the literal: cmark gives a one-line block an end
  ** line before its start */
  int c0 = cmark_node_get_start_column(n);
  *l0 = *l1 = cmark_node_get_start_line(n);
  for (size_t i = 0; i < len; i++) *l1 += lit[i] == '\n';
  if (*l0 < 1 || (size_t)*l1 > nlines || c0 < 1) return -1;
  *at = line_at[*l0 - 1] + (size_t)c0 - 1;
  return *at + len <= strlen(text) && memcmp(text + *at, lit, len) == 0;
}

/* An inline start tag of an element that goes with its content (a
** <script> or <style> inside a paragraph, which cmark splits into the tag,
** text and the end tag): the tag, everything after it among its siblings
** and the end tag are cut from the text in one piece; with no end tag,
** the rest of its paragraph goes, as a browser reads the rest as the
** element's raw text. *until is the node the cut ends with (its end tag, or
** the paragraph, left at its exit), so that nothing inside it is patched
** again. 0, or -1 when the pieces cannot be placed. */
static int cut_element(const char *text, const size_t *line_at, size_t nlines, cmark_node *open, const char *name,
                       Patch **patches, size_t *np, size_t *cap, cmark_node **until) {
  size_t at, end, len = strlen(cmark_node_get_literal(open)), nlen = strlen(name);
  int l0, l1;
  if (literal_at(text, line_at, nlines, open, len, &at, &l0, &l1) != 1) return -1;
  cmark_node *close = cmark_node_next(open);
  for (; close; close = cmark_node_next(close)) {
    const char *lit = cmark_node_get_type(close) == CMARK_NODE_HTML_INLINE ? cmark_node_get_literal(close) : NULL;
    if (lit && lit[0] == '<' && lit[1] == '/' && strncasecmp(lit + 2, name, nlen) == 0 &&
        !isalnum((unsigned char)lit[2 + nlen]))
      break;
  }
  if (close) {
    size_t cat, clen = strlen(cmark_node_get_literal(close));
    if (literal_at(text, line_at, nlines, close, clen, &cat, &l0, &l1) != 1) return -1;
    end = cat + clen;
    *until = close;
  } else {
    cmark_node *block = cmark_node_parent(open);
    while (block && (cmark_node_get_type(block) & CMARK_NODE_TYPE_MASK) == CMARK_NODE_TYPE_INLINE)
      block = cmark_node_parent(block);
    int el = block ? cmark_node_get_end_line(block) : 0, ec = block ? cmark_node_get_end_column(block) : 0;
    if (el < 1 || (size_t)el > nlines || ec < 1) return -1;
    end = line_at[el - 1] + (size_t)ec;
    if (end > strlen(text) || end < at) return -1;
    *until = block;
  }
  ADD_PATCH(at, end - at, strdup(""));
  return 0;
}

static int patch_html(const char *text, const size_t *line_at, size_t nlines, cmark_node *n, Patch **patches,
                      size_t *np, size_t *cap) {
  const char *lit = cmark_node_get_literal(n);
  if (!lit) return 0;
  size_t len = strlen(lit);
  if (cmark_node_get_type(n) == CMARK_NODE_HTML_BLOCK)
    while (len > 0 && lit[len - 1] == '\n') len--; /* the block's literal ends with its newline */
  size_t at, end_of_text = strlen(text);
  int l0, l1, found = literal_at(text, line_at, nlines, n, len, &at, &l0, &l1);
  if (found < 0) return -1;
  if (found) {
    char *piece = strndup(lit, len);
    ADD_PATCH(at, len, slR_sanitize_html(piece));
    free(piece);
    return 0;
  }
  /* line by line: each line of the literal ends a line of the text */
  int whole = 1;
  size_t first = *np;
  const char *line = lit;
  for (int l = l0; l <= l1 && whole; l++) {
    const char *eol = strchr(line, '\n');
    size_t ll = eol ? (size_t)(eol - line) : strlen(line);
    size_t ls = line_at[l - 1], le = (size_t)l < nlines ? line_at[l] - 1 : end_of_text;
    if (le > ls && text[le - 1] == '\r') le--;
    if (le - ls < ll || memcmp(text + le - ll, line, ll) != 0) {
      whole = 0;
      break;
    }
    char *piece = strndup(line, ll);
    ADD_PATCH(le - ll, ll, slR_sanitize_html(piece));
    free(piece);
    if (!eol) break;
    line = eol + 1;
  }
  if (whole) return 0;
  while (*np > first) free((*patches)[--*np].with);
  for (size_t k = line_at[l0 - 1]; k < ((size_t)l1 < nlines ? line_at[l1] : end_of_text); k++)
    if (text[k] == '<') ADD_PATCH(k, 1, strdup("&lt;"));
  return 0;
}
#undef ADD_PATCH

/* the last resort when raw HTML could not be placed: every '<' outside
** fenced code becomes text */
static char *escape_all_html(const char *text) {
  slU_Text t = {0};
  slU_add_len(&t, "", 0);
  int in_fence = 0;
  for (const char *p = text; *p;) { /* line by line: a fence's first line opens it, its last closes it */
    size_t n = strcspn(p, "\n");
    n += p[n] == '\n';
    if (strncmp(p, "```", 3) == 0) in_fence = !in_fence;
    if (in_fence) slU_add_len(&t, p, n);
    else slR_md_tags_escape(&t, p, n);
    p += n;
  }
  return t.s;
}

/* report.md with every piece of raw HTML (the notebooks' Markdown cells,
** their HTML outputs) passed through the sanitiser, as report.html's body
** is: no script, style, iframe, meta refresh or on* attribute is left for
** a Markdown viewer to run. Math is shielded first, as for the HTML. */
static char *sanitize_markdown(const char *md) {
  json_t *stash = json_array();
  char *text = protect_math(md, stash);
  cmark_gfm_core_extensions_ensure_registered();
  cmark_parser *parser = cmark_parser_new(CMARK_OPT_UNSAFE | CMARK_OPT_SOURCEPOS);
  const char *exts[] = {"table", "strikethrough", "autolink"};
  for (int i = 0; i < 3; i++) cmark_parser_attach_syntax_extension(parser, cmark_find_syntax_extension(exts[i]));
  cmark_parser_feed(parser, text, strlen(text));
  cmark_node *doc = cmark_parser_finish(parser);
  size_t nlines = 1, lcap = 64;
  size_t *line_at = malloc(lcap * sizeof *line_at);
  line_at[0] = 0;
  for (size_t i = 0; text[i]; i++)
    if (text[i] == '\n' && text[i + 1]) {
      if (nlines == lcap) line_at = realloc(line_at, (lcap *= 2) * sizeof *line_at);
      line_at[nlines++] = i + 1;
    }
  Patch *patches = NULL;
  size_t np = 0, cap = 0;
  int lost = 0;
  cmark_iter *it = cmark_iter_new(doc);
  cmark_event_type ev;
  cmark_node *until = NULL; /* inside an inline element that was cut whole, up to this node */
  while ((ev = cmark_iter_next(it)) != CMARK_EVENT_DONE) {
    cmark_node *n = cmark_iter_get_node(it);
    cmark_node_type type = cmark_node_get_type(n);
    char name[32];
    if (until) {
      if (n == until && (ev == CMARK_EVENT_EXIT || cmark_node_get_type(n) == CMARK_NODE_HTML_INLINE)) until = NULL;
      continue;
    }
    if (ev == CMARK_EVENT_ENTER && type == CMARK_NODE_HTML_INLINE &&
        slR_html_drops_content(cmark_node_get_literal(n), name, sizeof name))
      lost |= cut_element(text, line_at, nlines, n, name, &patches, &np, &cap, &until) != 0;
    else if (ev == CMARK_EVENT_ENTER && (type == CMARK_NODE_HTML_BLOCK || type == CMARK_NODE_HTML_INLINE))
      lost |= patch_html(text, line_at, nlines, n, &patches, &np, &cap) != 0;
  }
  cmark_iter_free(it);
  if (np > 0) qsort(patches, np, sizeof *patches, patch_order); /* patches is NULL when there are none */
  slU_Text t = {0};
  slU_add_len(&t, "", 0);
  size_t from = 0;
  for (size_t i = 0; i < np; i++) {
    size_t end = patches[i].at + patches[i].len;
    if (patches[i].at >= from) {
      slU_add_len(&t, text + from, patches[i].at - from);
      slU_add(&t, "%s", patches[i].with);
      from = end;
    } else if (end > from) { /* pieces never overlap; if they did, the rest would be text */
      slR_md_tags_escape(&t, text + from, end - from);
      from = end;
    }
    free(patches[i].with);
  }
  slU_add(&t, "%s", text + from);
  if (lost) {
    char *escaped = escape_all_html(t.s);
    free(t.s);
    t.s = escaped;
  }
  char *out = restore_math(t.s, stash, 0);
  free(t.s);
  free(patches);
  free(line_at);
  free(text);
  json_decref(stash);
  cmark_node_free(doc);
  cmark_parser_free(parser);
  return out;
}

/* Every heading's id, in document order, as [text, id] pairs: GitHub's rule
** (the heading's text in lower case, spaces to '-', punctuation dropped,
** -1, -2, ... added to repeats), so report.md's links work on GitHub too. */
static json_t *heading_ids(cmark_node *doc, json_t *stash) {
  json_t *ids = json_array(), *used = json_object();
  cmark_iter *it = cmark_iter_new(doc);
  cmark_event_type ev;
  while ((ev = cmark_iter_next(it)) != CMARK_EVENT_DONE) {
    cmark_node *n = cmark_iter_get_node(it);
    if (ev != CMARK_EVENT_ENTER || cmark_node_get_type(n) != CMARK_NODE_HEADING) continue;
    char *plain = cmark_render_plaintext(n, CMARK_OPT_DEFAULT, 0);
    char *text = restore_math(plain, stash, 0);
    size_t len = strlen(text);
    while (len > 0 && isspace((unsigned char)text[len - 1])) text[--len] = '\0';
    char base[200], id[256];
    slug(text, base, sizeof base);
    snprintf(id, sizeof id, "%s", base[0] ? base : "section");
    for (int k = 1; json_object_get(used, id); k++) snprintf(id, sizeof id, "%s-%d", base[0] ? base : "section", k);
    json_object_set_new(used, id, json_true());
    json_array_append_new(ids, json_pack("[s,s]", text, id));
    free(text);
    free(plain);
  }
  cmark_iter_free(it);
  json_decref(used);
  return ids;
}

/* the id of each notebook's section heading in the finished Markdown: the
** first heading, after the previous notebook's, whose text is the title */
static void toc_anchors(const char *markdown, const slR_Notebook *nbs, size_t count, char (*anchors)[256]) {
  json_t *stash = json_array();
  cmark_parser *parser;
  cmark_node *doc = parse_markdown(markdown, stash, &parser);
  json_t *ids = heading_ids(doc, stash);
  size_t next = 2; /* after "Lab report" and "Contents" */
  for (size_t k = 0; k < count; k++) {
    char title[256], heading[300];
    notebook_title(nbs[k].nb, nbs[k].stem, title, sizeof title);
    snprintf(heading, sizeof heading, "# %s\n", title);
    json_t *tstash = json_array();
    cmark_parser *tparser;
    cmark_node *tdoc = parse_markdown(heading, tstash, &tparser);
    json_t *tids = heading_ids(tdoc, tstash);
    const char *want = json_string_value(json_array_get(json_array_get(tids, 0), 0));
    size_t j = next;
    while (j < json_array_size(ids) &&
           (!want || strcmp(json_string_value(json_array_get(json_array_get(ids, j), 0)), want) != 0))
      j++;
    if (j == json_array_size(ids)) j = next < j ? next : 0; /* not found: the next heading, so the link still lands */
    snprintf(anchors[k], 256, "%s", json_string_value(json_array_get(json_array_get(ids, j), 1)));
    if (j >= next) next = j + 1;
    json_decref(tids);
    json_decref(tstash);
    cmark_node_free(tdoc);
    cmark_parser_free(tparser);
  }
  json_decref(ids);
  json_decref(stash);
  cmark_node_free(doc);
  cmark_parser_free(parser);
}

/* "<hN>\1k\2" as cmark renders a marked heading becomes <hN id="..."> */
static char *place_heading_ids(const char *html, json_t *ids) {
  slU_Text t = {0};
  slU_add_len(&t, "", 0);
  for (const char *p = html; *p;) {
    if (p[0] == '<' && p[1] == 'h' && p[2] >= '1' && p[2] <= '6' && p[3] == '>' && p[4] == '\1') {
      char *end;
      long k = strtol(p + 5, &end, 10);
      if (*end == '\2') {
        slU_add(&t, "<h%c id=\"%s\">", p[2], json_string_value(json_array_get(json_array_get(ids, (size_t)k), 1)));
        p = end + 1;
        continue;
      }
    }
    if (*p != '\1' && *p != '\2') slU_add_len(&t, p, 1);
    p++;
  }
  return t.s;
}

static const char *const css =
    "body{font-family:'DejaVu Sans',sans-serif;max-width:50em;margin:2em auto;line-height:1.45;color:#111;font-size:11pt}"
    "h1,h2,h3{line-height:1.2}h2{border-bottom:1px solid #ccc;padding-bottom:.2em;page-break-before:auto}"
    "pre{background:#f6f6f6;border:1px solid #e2e2e2;padding:.6em;overflow-x:auto;white-space:pre-wrap;font-size:9pt}"
    "code{font-family:'DejaVu Sans Mono',monospace}"
    /* the language's colours: dark enough to print, told apart without colour too */
    ".syslab-kw{color:#7b1fa2;font-weight:bold}.syslab-cmd{color:#0b4f8a;font-weight:bold}"
    ".syslab-str{color:#a0410d}.syslab-num{color:#1b6e20}.syslab-com{color:#5f6368;font-style:italic}"
    "table{border-collapse:collapse;margin:1em 0;font-size:8pt;max-width:100%}th,td{border:1px solid #bbb;padding:.2em .4em;overflow-wrap:anywhere}"
    "th{background:#eee}img{max-width:85%;display:block;margin:1em auto}"
    "p>em:only-child{display:block;text-align:center;font-size:.95em}"
    "blockquote{border-left:4px solid #c33;margin:1em 0;padding:.2em 1em;background:#fdf3f3}"
    ".syslab-display{display:block;text-align:center;margin:.8em 0}"
    "@page{size:A4;margin:18mm}";

/* the report's only script after KaTeX itself: typeset the math spans */
static const char *const typeset = "document.querySelectorAll('.syslab-math').forEach(function (e) {"
                                   "var d = e.classList.contains('syslab-display'), t = e.textContent;"
                                   "t = d ? t.slice(2, -2) : t.slice(1, -1);"
                                   "try { katex.render(t, e, {displayMode: d, throwOnError: false}); } catch (x) {}"
                                   "});";

static void sha256_base64(const char *s, size_t n, char out[64]) {
  unsigned char md[32];
  unsigned len = 0;
  EVP_Digest(s, n, md, &len, EVP_sha256(), NULL);
  EVP_EncodeBlock((unsigned char *)out, md, 32);
}

static char *read_file(const char *path) {
  FILE *f = fopen(path, "rb");
  if (!f) return NULL;
  slU_Text t = {0};
  slU_add_len(&t, "", 0);
  char buf[16384];
  size_t n;
  while ((n = fread(buf, 1, sizeof buf, f)) > 0) slU_add_len(&t, buf, n);
  fclose(f);
  return t.s;
}

/* Each ```syslab block becomes the HTML cmark would write for it, with
** the code coloured by the language's own lexer (highlight.c); the
** sanitiser keeps its pre, code and span elements and their classes. */
static void highlight_code(cmark_node *doc) {
  cmark_node **blocks = NULL;
  size_t n = 0, cap = 0;
  cmark_iter *it = cmark_iter_new(doc);
  cmark_event_type ev;
  while ((ev = cmark_iter_next(it)) != CMARK_EVENT_DONE) {
    cmark_node *node = cmark_iter_get_node(it);
    const char *info = cmark_node_get_fence_info(node);
    if (ev != CMARK_EVENT_ENTER || cmark_node_get_type(node) != CMARK_NODE_CODE_BLOCK || !info ||
        strcmp(info, "syslab") != 0)
      continue;
    if (n == cap) blocks = realloc(blocks, (cap = cap * 2 + 8) * sizeof *blocks);
    blocks[n++] = node;
  }
  cmark_iter_free(it);
  for (size_t i = 0; i < n; i++) {
    const char *code = cmark_node_get_literal(blocks[i]);
    char *coloured = slR_highlight_html(code ? code : "", code ? strlen(code) : 0);
    slU_Text t = {0};
    slU_add(&t, "<pre><code class=\"language-syslab\">%s</code></pre>\n", coloured);
    cmark_node *html = cmark_node_new(CMARK_NODE_HTML_BLOCK);
    cmark_node_set_literal(html, t.s);
    cmark_node_replace(blocks[i], html);
    cmark_node_free(blocks[i]);
    free(t.s);
    free(coloured);
  }
  free(blocks);
}

/* The page carries its own policy: scripts run only if their text hashes to
** KaTeX's or the typesetting script's, nothing is fetched, framed or
** embedded, and images come only from files (the sanitiser keeps those to
** relative paths) or data: URLs. KaTeX is inlined because Chromium cannot
** check a hash on a file:// script, and allowing file: scripts would allow
** any script on the disk. */
int slR_export_html(const char *markdown, const char *outdir, char *err, size_t errlen) {
  char *katex = read_file(SLR_KATEX_DIR "/katex.min.js");
  if (!katex || strstr(katex, "</script") || strstr(katex, "<!--")) {
    snprintf(err, errlen, "cannot use %s/katex.min.js (install the Debian package libjs-katex); report.md was written",
             SLR_KATEX_DIR);
    free(katex);
    return -1;
  }
  json_t *stash = json_array();
  cmark_parser *parser;
  cmark_node *doc = parse_markdown(markdown, stash, &parser);
  json_t *ids = heading_ids(doc, stash);
  /* mark each heading with its number, so its id can be placed after rendering */
  cmark_iter *it = cmark_iter_new(doc);
  cmark_event_type ev;
  size_t nheading = 0;
  while ((ev = cmark_iter_next(it)) != CMARK_EVENT_DONE) {
    cmark_node *n = cmark_iter_get_node(it);
    if (ev != CMARK_EVENT_ENTER || cmark_node_get_type(n) != CMARK_NODE_HEADING) continue;
    char mark[32];
    snprintf(mark, sizeof mark, "\1%zu\2", nheading++);
    cmark_node *m = cmark_node_new(CMARK_NODE_TEXT);
    cmark_node_set_literal(m, mark);
    cmark_node_prepend_child(n, m);
  }
  cmark_iter_free(it);
  highlight_code(doc);
  char *body = cmark_render_html(doc, CMARK_OPT_UNSAFE, cmark_parser_get_syntax_extensions(parser));
  char *clean = slR_sanitize_html(body);
  char *with_ids = place_heading_ids(clean, ids);
  char *restored = restore_math(with_ids, stash, 1);
  char katex_hash[64], typeset_hash[64];
  sha256_base64(katex, strlen(katex), katex_hash);
  sha256_base64(typeset, strlen(typeset), typeset_hash);
  slU_Text t = {0};
  slU_add(&t,
          "<!DOCTYPE html>\n<html><head><meta charset=\"utf-8\">\n"
          "<meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; script-src 'sha256-%s' "
          "'sha256-%s'; style-src 'unsafe-inline' file:; font-src file:; img-src file: data:; base-uri 'none'; "
          "form-action 'none'\">\n<title>Lab report</title>\n"
          "<link rel=\"stylesheet\" href=\"file://" SLR_KATEX_DIR "/katex.min.css\">\n"
          "<style>%s</style></head>\n<body>\n%s\n<script>",
          katex_hash, typeset_hash, css, restored);
  slU_add(&t, "%s", katex);
  slU_add(&t, "</script>\n<script>%s</script>\n</body></html>\n", typeset);
  char path[4200];
  snprintf(path, sizeof path, "%s/report.html", outdir);
  int rc = slR_write_atomic(path, t.s, t.n, err, errlen);
  free(t.s);
  free(restored);
  free(with_ids);
  free(clean);
  free(body);
  free(katex);
  json_decref(ids);
  json_decref(stash);
  cmark_node_free(doc);
  cmark_parser_free(parser);
  return rc;
}
