/*
** escape.h - text made safe for the place the report writes it: HTML
** text, HTML attribute values, Markdown within a line, Markdown that must
** open no raw HTML (see escape.c for what each escapes and why).
*/
#ifndef SYSLAB_ESCAPE_H
#define SYSLAB_ESCAPE_H

#include <stddef.h>

#include "slutil.h"

/* n bytes of s as HTML element text: & < > as references */
void slR_html_text_escape(slU_Text *t, const char *s, size_t n);
/* n bytes of s as a double-quoted HTML attribute value (or text that may
** become one): & < > " as references */
void slR_html_attr_escape(slU_Text *t, const char *s, size_t n);
/* s as Markdown text within its line (an inline value): markup
** backslash-escaped, $ and HTML's specials as references, control
** characters as spaces; with block set and t at the start of a block, a
** first character that would open one (s followed in the source by after)
** as a reference */
void slR_md_escape(slU_Text *t, const char *s, const char *after, int block);
/* n bytes of Markdown source kept as Markdown but opening no raw HTML:
** each '<' as &lt; */
void slR_md_tags_escape(slU_Text *t, const char *s, size_t n);

#endif
