/*
** lex.h - the lexer of the command language.
*/
#ifndef SYSLAB_LEX_H
#define SYSLAB_LEX_H

#include <stddef.h>

enum slX_TokenType {
  /* single-character tokens use their character code */
  TK_EOF = 256,
  TK_NEWLINE, /* end of a statement: a newline outside () and [] */
  TK_NUMBER,
  TK_STRING,
  TK_NAME,
  /* keywords */
  TK_IF,
  TK_ELSE,
  TK_FOR,
  TK_IN,
  TK_AND,
  TK_OR,
  TK_NOT,
  TK_TRUE,
  TK_FALSE,
  TK_NIL,
  TK_STEP,
  /* multi-character operators */
  TK_EQ,
  TK_NE,
  TK_LE,
  TK_GE,
  TK_POW,
  TK_DOTDOT,
  TK_ERROR
};

typedef struct slX_Token {
  int type;
  const char *start; /* points into the source */
  size_t len;        /* bytes of source text */
  size_t offset;     /* byte offset of start */
  int line, col;     /* 1-based; col counts characters, not bytes */
  double number;     /* TK_NUMBER */
  char *string;      /* TK_STRING: decoded text, owned by the token (slX_token_free) */
  size_t string_len;
} slX_Token;

/* brackets remembered; deeper ones count as the innermost remembered kind
** (the parser refuses code nested this deep before it matters) */
#define SLX_MAX_NESTING 256

typedef struct slX_Lexer {
  const char *src;
  size_t len, pos;
  int line, col;
  char nesting[SLX_MAX_NESTING]; /* open brackets: '(' '[' '{' */
  int depth;
  int eof_in_string; /* the source ended inside a string literal */
  char error[200];   /* message of the last TK_ERROR */
} slX_Lexer;

void slX_init(slX_Lexer *L, const char *src, size_t len);
/* Returns the next token; on TK_ERROR the message is in L->error. */
slX_Token slX_next(slX_Lexer *L);
void slX_token_free(slX_Token *t);
/* "'+'", "number", "end of line" ... for error messages */
const char *slX_describe(int type, char *buf, size_t size);
int slX_is_name_start(int c);
int slX_is_name_char(int c);

#endif
