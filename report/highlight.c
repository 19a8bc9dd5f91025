/*
** highlight.c - code in report.html (and so in the PDF) coloured the way
** the language reads it: the engine's own lexer cuts the code into pieces
** (sl_lex_pieces), names that the command registry knows are commands, and
** each piece that has a colour gets a span with a class that report.html's
** style sheet colours (export.c). Text is escaped, so the code shows
** exactly as it was written.
*/
#include "highlight.h"

#include <stdlib.h>
#include <string.h>

#include "escape.h"
#include "syslab.h"
#include "slutil.h"

typedef struct {
  const char *code;
  slU_Text *out;
} Pieces;

static void piece(void *ud, sl_LexClass cls, size_t at, size_t n) {
  Pieces *p = ud;
  const char *klass = NULL;
  switch (cls) {
    case SL_LEX_KEYWORD: klass = "syslab-kw"; break;
    case SL_LEX_STRING: klass = "syslab-str"; break;
    case SL_LEX_NUMBER: klass = "syslab-num"; break;
    case SL_LEX_COMMENT: klass = "syslab-com"; break;
    case SL_LEX_NAME: {
      char name[64];
      if (n < sizeof name) {
        memcpy(name, p->code + at, n);
        name[n] = '\0';
        if (sl_command_find(name)) klass = "syslab-cmd";
      }
      break;
    }
    default: break;
  }
  if (klass) slU_add(p->out, "<span class=\"%s\">", klass);
  slR_html_attr_escape(p->out, p->code + at, n); /* quotes too: escape.c */
  if (klass) slU_add(p->out, "</span>");
}

char *slR_highlight_html(const char *code, size_t len) {
  slU_Text t = {0};
  slU_add_len(&t, "", 0);
  Pieces p = {code, &t};
  sl_lex_pieces(code, len, piece, &p);
  return t.s;
}
