/*
** sanitize.h - notebook HTML reduced to an allow-list of inert tags and
** attributes before it goes into report.html (see sanitize.c).
*/
#ifndef SYSLAB_SANITIZE_H
#define SYSLAB_SANITIZE_H

#include <stddef.h>

/* the HTML with scripts, frames, embedded objects, event handlers and URLs
** reaching outside the report's folder removed; caller frees */
char *slR_sanitize_html(const char *html);
/* 1 when `tag` (a piece of HTML that starts with a start tag) opens an
** element that goes with its content (script, style, iframe, ...), its
** name in name[]; cmark gives each tag inside a paragraph as a piece of its
** own, so report.md's sanitiser (export.c) cuts what lies between */
int slR_html_drops_content(const char *tag, char *name, size_t size);
/* an SVG figure rebuilt from an allow-list of drawing elements and
** attributes: no script, style, foreignObject, animation, image, DOCTYPE or
** reference outside the figure; NULL when no <svg> element is left;
** caller frees */
char *slR_sanitize_svg(const char *svg);

#endif
