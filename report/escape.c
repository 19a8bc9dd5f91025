/*
** escape.c - one escaping helper per place the report writes text.
**
** The report writes text that is not its own (notebook sources, outputs,
** inline values, TeX) into three targets, and each needs its own set:
**
** - HTML element text (slR_html_text_escape): '&', '<' and '>' as
**   references, nothing else, so that text reads as it was written. The
**   TeX of a math span (export.c) and an SVG's CDATA written back as text
**   (sanitize.c) take this form.
** - HTML attribute values in double quotes (slR_html_attr_escape): the
**   same and '"', which would end the value. The sanitiser's attribute
**   values take it, and so does the highlighted code of report.html
**   (highlight.c): its quotes have always been written as &quot;, harmless
**   in text, and the report keeps those bytes.
** - Markdown within a line (slR_md_escape): an inline value must stay the
**   text it is, on its line: Markdown's markup characters backslash-escaped,
**   '$' as &#36; (the report would read math), '<', '>' and '&' as
**   references (raw HTML and entities), line breaks and other control
**   characters as spaces, and where the value starts a block, a first
**   character that would open one (a list item, a rule, a heading
**   underline, indented code) as a character reference, which Markdown
**   reads as text.
** - Markdown that must stay Markdown but open no raw HTML
**   (slR_md_tags_escape): report.md's raw HTML that could not be placed
**   through the sanitiser (export.c) has each '<' written as &lt;; the rest
**   is the author's markup and is kept.
*/
#include "escape.h"

#include <ctype.h>
#include <stdio.h>
#include <string.h>

void slR_html_text_escape(slU_Text *t, const char *s, size_t n) {
  for (size_t i = 0; i < n; i++) {
    if (s[i] == '&') slU_add(t, "&amp;");
    else if (s[i] == '<') slU_add(t, "&lt;");
    else if (s[i] == '>') slU_add(t, "&gt;");
    else slU_add_len(t, s + i, 1);
  }
}

void slR_html_attr_escape(slU_Text *t, const char *s, size_t n) {
  size_t from = 0;
  for (size_t i = 0; i < n; i++)
    if (s[i] == '"') {
      slR_html_text_escape(t, s + from, i - from);
      slU_add(t, "&quot;");
      from = i + 1;
    }
  slR_html_text_escape(t, s + from, n - from);
}

/* whether text written after t would start a Markdown block: its line so
** far holds at most indentation and container marks (>, -, +, *, 1.) */
static int at_block_start(const slU_Text *t) {
  const char *line = t->s ? t->s : "", *nl;
  while ((nl = strchr(line, '\n'))) line = nl + 1;
  for (const char *p = line;;) {
    while (*p == ' ' || *p == '\t') p++;
    size_t digits = strspn(p, "0123456789");
    if (*p == '>') p++;
    else if (strchr("-+*", *p) && *p && (p[1] == ' ' || p[1] == '\t')) p += 2;
    else if (digits > 0 && digits < 10 && (p[digits] == '.' || p[digits] == ')') &&
             (p[digits + 1] == ' ' || p[digits + 1] == '\t'))
      p += digits + 2;
    else return *p == '\0';
  }
}

/* whether text s (followed in the source by after) would open a block at
** the start of one: a list item, a setext or thematic rule, indented code */
static int opens_block(const char *s, const char *after) {
  char look[16];
  snprintf(look, sizeof look, "%s%s", s, after);
  if (look[0] == ' ' || look[0] == '\t') return 1;
  if (strchr("-+=", look[0]) && look[0]) return !isalnum((unsigned char)look[1]) && look[1] != '.';
  size_t digits = strspn(look, "0123456789");
  return digits > 0 && digits < 10 && (look[digits] == '.' || look[digits] == ')') &&
         (look[digits + 1] == '\0' || isspace((unsigned char)look[digits + 1]));
}

void slR_md_escape(slU_Text *t, const char *s, const char *after, int block) {
  if (block && *s && at_block_start(t) && opens_block(s, after)) slU_add(t, "&#%d;", (unsigned char)*s++);
  for (; *s; s++) {
    if (strchr("\\`*_[]|~#", *s)) slU_add(t, "\\%c", *s);
    else if (*s == '$') slU_add(t, "&#36;");
    else if (*s == '<') slU_add(t, "&lt;");
    else if (*s == '>') slU_add(t, "&gt;");
    else if (*s == '&') slU_add(t, "&amp;");
    else if ((unsigned char)*s < 0x20 || *s == 0x7f) slU_add(t, " ");
    else slU_add_len(t, s, 1);
  }
}

void slR_md_tags_escape(slU_Text *t, const char *s, size_t n) {
  for (size_t i = 0; i < n; i++) {
    if (s[i] == '<') slU_add(t, "&lt;");
    else slU_add_len(t, s + i, 1);
  }
}
