/*
** highlight.h - the report's code coloured by the language's own lexer.
*/
#ifndef SYSLAB_HIGHLIGHT_H
#define SYSLAB_HIGHLIGHT_H

#include <stddef.h>

/* The code as HTML text (escaped), its keywords, commands, strings,
** numbers and comments in <span class="syslab-kw|cmd|str|num|com">;
** caller frees. */
char *slR_highlight_html(const char *code, size_t len);

#endif
