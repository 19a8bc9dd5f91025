/*
** lex.c - lexer: turns a cell's text into tokens with line and column.
**
** Newlines end statements, except inside ( ) and [ ], where a long argument
** list may wrap freely; inside { } they separate the block's statements.
** A backslash at the end of a line also continues the statement. Columns
** count characters (UTF-8 code points) so carets line up under the text.
*/
#include "lex.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "syslab.h"
#include "slutil.h"

static const struct {
  const char *word;
  int type;
} keywords[] = {
    {"if", TK_IF},   {"else", TK_ELSE}, {"for", TK_FOR},     {"in", TK_IN},   {"and", TK_AND},   {"or", TK_OR},
    {"not", TK_NOT}, {"true", TK_TRUE}, {"false", TK_FALSE}, {"nil", TK_NIL}, {"step", TK_STEP},
};

void slX_init(slX_Lexer *L, const char *src, size_t len) {
  memset(L, 0, sizeof *L);
  L->src = src;
  L->len = len;
  L->line = 1;
  L->col = 1;
}

int slX_is_name_start(int c) { return c >= 0 && (isalpha(c) || c == '_' || (c & 0x80)); }
int slX_is_name_char(int c) { return c >= 0 && (isalnum(c) || c == '_' || (c & 0x80)); }

static int peek(slX_Lexer *L, size_t ahead) {
  return L->pos + ahead < L->len ? (unsigned char)L->src[L->pos + ahead] : -1;
}

static void advance(slX_Lexer *L) {
  unsigned char c = (unsigned char)L->src[L->pos++];
  if (c == '\n') {
    L->line++;
    L->col = 1;
  } else if ((c & 0xC0) != 0x80) {
    L->col++; /* continuation bytes of a UTF-8 character add no column */
  }
}

static int in_brackets(const slX_Lexer *L) {
  int top = L->depth < SLX_MAX_NESTING ? L->depth : SLX_MAX_NESTING;
  return L->depth > 0 && L->nesting[top - 1] != '{';
}

static slX_Token make(slX_Lexer *L, int type, size_t start, int line, int col) {
  slX_Token t;
  memset(&t, 0, sizeof t);
  t.type = type;
  t.start = L->src + start;
  t.len = L->pos - start;
  t.offset = start;
  t.line = line;
  t.col = col;
  return t;
}

static slX_Token error(slX_Lexer *L, size_t start, int line, int col, const char *msg) {
  snprintf(L->error, sizeof L->error, "%s", msg);
  return make(L, TK_ERROR, start, line, col);
}

static void append_utf8(char *out, size_t *n, unsigned long cp) {
  if (cp < 0x80) out[(*n)++] = (char)cp;
  else if (cp < 0x800) {
    out[(*n)++] = (char)(0xC0 | (cp >> 6));
    out[(*n)++] = (char)(0x80 | (cp & 0x3F));
  } else if (cp < 0x10000) {
    out[(*n)++] = (char)(0xE0 | (cp >> 12));
    out[(*n)++] = (char)(0x80 | ((cp >> 6) & 0x3F));
    out[(*n)++] = (char)(0x80 | (cp & 0x3F));
  } else {
    out[(*n)++] = (char)(0xF0 | (cp >> 18));
    out[(*n)++] = (char)(0x80 | ((cp >> 12) & 0x3F));
    out[(*n)++] = (char)(0x80 | ((cp >> 6) & 0x3F));
    out[(*n)++] = (char)(0x80 | (cp & 0x3F));
  }
}

static slX_Token read_string(slX_Lexer *L, size_t start, int line, int col) {
  int quote = peek(L, 0);
  advance(L);
  /* decoded text is never longer than the source */
  char *out = malloc(L->len - L->pos + 1);
  size_t n = 0;
  for (;;) {
    int c = peek(L, 0);
    if (c < 0 || c == '\n') {
      free(out);
      L->eof_in_string = c < 0;
      return error(L, start, line, col, "unterminated string: close it with a matching quote on the same line");
    }
    if (c == quote) {
      advance(L);
      break;
    }
    if (c == '\\') {
      int e = peek(L, 1);
      advance(L);
      if (e < 0) continue;
      advance(L);
      switch (e) {
        case 'n': out[n++] = '\n'; break;
        case 't': out[n++] = '\t'; break;
        case 'r': out[n++] = '\r'; break;
        case '\\':
        case '"':
        case '\'': out[n++] = (char)e; break;
        case 'u': {
          if (peek(L, 0) != '{') goto bad_escape;
          advance(L);
          unsigned long cp = 0;
          int digits = 0;
          while (isxdigit(peek(L, 0)) && digits < 6) {
            int h = peek(L, 0);
            cp = cp * 16 + (unsigned long)(isdigit(h) ? h - '0' : tolower(h) - 'a' + 10);
            digits++;
            advance(L);
          }
          if (peek(L, 0) != '}' || digits == 0 || cp > 0x10FFFF || cp == 0 || (cp >= 0xD800 && cp <= 0xDFFF)) {
            free(out);
            return error(L, start, line, col,
                         "invalid \\u{...} escape: give 1 to 6 hex digits of a Unicode character from 1 to 10FFFF, "
                         "not a surrogate (D800-DFFF)");
          }
          advance(L);
          append_utf8(out, &n, cp);
          break;
        }
        default:
        bad_escape:
          free(out);
          return error(L, start, line, col,
                       "invalid escape in string: allowed are \\n \\t \\r \\\\ \\\" \\' and \\u{hex} "
                       "(strings cannot hold NUL characters)");
      }
      continue;
    }
    out[n++] = (char)c;
    advance(L);
  }
  out[n] = '\0';
  slX_Token t = make(L, TK_STRING, start, line, col);
  t.string = out;
  t.string_len = n;
  return t;
}

static slX_Token read_number(slX_Lexer *L, size_t start, int line, int col) {
  while (isdigit(peek(L, 0)) || peek(L, 0) == '_') advance(L);
  /* "1..5" is a range, not the number "1." */
  if (peek(L, 0) == '.' && peek(L, 1) != '.') {
    advance(L);
    while (isdigit(peek(L, 0)) || peek(L, 0) == '_') advance(L);
  }
  if (peek(L, 0) == 'e' || peek(L, 0) == 'E') {
    size_t save = L->pos;
    int scol = L->col;
    advance(L);
    if (peek(L, 0) == '+' || peek(L, 0) == '-') advance(L);
    if (!isdigit(peek(L, 0))) {
      L->pos = save; /* not an exponent after all: "2e" is 2 then a name */
      L->col = scol;
    } else {
      while (isdigit(peek(L, 0))) advance(L);
    }
  }
  if (slX_is_name_char(peek(L, 0))) {
    /* a word that starts with a digit ("2.7B", a preset): a bare word that
    ** a command may take as a choice; anywhere else it is no number and no
    ** variable, and evaluating it says so (eval.c) */
    while (slX_is_name_char(peek(L, 0)) || peek(L, 0) == '.') advance(L);
    return make(L, TK_NAME, start, line, col);
  }
  char buf[128];
  size_t n = 0;
  for (size_t i = start; i < L->pos && n < sizeof buf - 1; i++)
    if (L->src[i] != '_') buf[n++] = L->src[i];
  buf[n] = '\0';
  slX_Token t = make(L, TK_NUMBER, start, line, col);
  t.number = strtod(buf, NULL);
  return t;
}

slX_Token slX_next(slX_Lexer *L) {
  for (;;) {
    int c = peek(L, 0);
    if (c == ' ' || c == '\t' || c == '\r') {
      advance(L);
    } else if (c == '#') {
      while (peek(L, 0) >= 0 && peek(L, 0) != '\n') advance(L);
    } else if (c == '\\' && (peek(L, 1) == '\n' || (peek(L, 1) == '\r' && peek(L, 2) == '\n'))) {
      advance(L);
      while (peek(L, 0) != '\n') advance(L);
      advance(L);
    } else if (c == '\n' && in_brackets(L)) {
      advance(L);
    } else {
      break;
    }
  }
  size_t start = L->pos;
  int line = L->line, col = L->col;
  int c = peek(L, 0);
  if (c < 0) return make(L, TK_EOF, start, line, col);
  if (c == '\n') {
    advance(L);
    return make(L, TK_NEWLINE, start, line, col);
  }
  if (isdigit(c) || (c == '.' && isdigit(peek(L, 1)))) return read_number(L, start, line, col);
  if (c == '"' || c == '\'') return read_string(L, start, line, col);
  if (slX_is_name_start(c)) {
    while (slX_is_name_char(peek(L, 0))) advance(L);
    slX_Token t = make(L, TK_NAME, start, line, col);
    for (size_t i = 0; i < sizeof keywords / sizeof keywords[0]; i++)
      if (strlen(keywords[i].word) == t.len && memcmp(keywords[i].word, t.start, t.len) == 0) t.type = keywords[i].type;
    return t;
  }
  advance(L);
  int two = peek(L, 0);
  switch (c) {
    case '=':
      if (two == '=') {
        advance(L);
        return make(L, TK_EQ, start, line, col);
      }
      break;
    case '!':
      if (two == '=') {
        advance(L);
        return make(L, TK_NE, start, line, col);
      }
      return error(L, start, line, col, "unexpected '!': write 'not x' for negation or '!=' for inequality");
    case '<':
      if (two == '=') {
        advance(L);
        return make(L, TK_LE, start, line, col);
      }
      break;
    case '>':
      if (two == '=') {
        advance(L);
        return make(L, TK_GE, start, line, col);
      }
      break;
    case '*':
      if (two == '*') {
        advance(L);
        return make(L, TK_POW, start, line, col);
      }
      break;
    case '.':
      if (two == '.') {
        advance(L);
        return make(L, TK_DOTDOT, start, line, col);
      }
      break;
    case '(':
    case '[':
    case '{':
      if (L->depth < SLX_MAX_NESTING) L->nesting[L->depth] = (char)c;
      L->depth++;
      break;
    case ')':
    case ']':
    case '}':
      if (L->depth > 0) L->depth--;
      break;
    case '+':
    case '-':
    case '/':
    case '%':
    case '^':
    case ',':
    case ';':
    case ':':
    case '?': break;
    default: {
      char msg[80];
      snprintf(msg, sizeof msg, "unexpected character '%c'", c > 32 && c < 127 ? c : '?');
      return error(L, start, line, col, msg);
    }
  }
  return make(L, c, start, line, col);
}

void slX_token_free(slX_Token *t) {
  free(t->string);
  t->string = NULL;
}

const char *slX_describe(int type, char *buf, size_t size) {
  static const char *names[] = {
      "end of input", "end of line", "number", "string", "name",   "'if'",    "'else'",        "'for'",
      "'in'",         "'and'",       "'or'",   "'not'",  "'true'", "'false'", "'nil'",         "'step'",
      "'=='",         "'!='",        "'<='",   "'>='",   "'**'",   "'..'",    "invalid token",
  };
  if (type >= TK_EOF && type <= TK_ERROR) return names[type - TK_EOF];
  snprintf(buf, size, "'%c'", type);
  return buf;
}

/* A whole text that is a number as the language writes it, with an optional
** sign: what CSV cells and report parameters must look like to be taken as
** numbers, so that "0x10", "nan", "inf" and "1e5x" stay text. */
int sl_parse_number(const char *s, double *out) {
  size_t len = strlen(s), i = s[0] == '-' || s[0] == '+';
  if (i >= len || !(isdigit((unsigned char)s[i]) || (s[i] == '.' && isdigit((unsigned char)s[i + 1])))) return 0;
  slX_Lexer L;
  slX_init(&L, s + i, len - i);
  slX_Token t = slX_next(&L);
  int ok = t.type == TK_NUMBER && t.len == len - i;
  if (ok && out) *out = s[0] == '-' ? -t.number : t.number;
  slX_token_free(&t);
  return ok;
}

int sl_parse_whole(const char *s, long lo, long hi, long *out) {
  long v = 0;
  if (!*s) return 0;
  for (; *s; s++) {
    int d = *s - '0';
    if (!isdigit((unsigned char)*s) || v > hi / 10 || v * 10 > hi - d) return 0; /* past hi: refused, never wrapped */
    v = v * 10 + d;
  }
  if (v < lo) return 0;
  *out = v;
  return 1;
}

/* what the lexer skipped between two tokens: blanks and line
** continuations (text), and comments from '#' to the end of the line */
static void gap_pieces(const char *code, size_t from, size_t to,
                       void (*piece)(void *ud, sl_LexClass cls, size_t at, size_t n), void *ud) {
  while (from < to) {
    const char *hash = memchr(code + from, '#', to - from);
    size_t c = hash ? (size_t)(hash - code) : to;
    if (c > from) piece(ud, SL_LEX_TEXT, from, c - from);
    if (c == to) return;
    const char *eol = memchr(code + c, '\n', to - c);
    size_t e = eol ? (size_t)(eol - code) : to;
    piece(ud, SL_LEX_COMMENT, c, e - c);
    from = e;
  }
}

void sl_lex_pieces(const char *code, size_t len, void (*piece)(void *ud, sl_LexClass cls, size_t at, size_t n),
                   void *ud) {
  slX_Lexer L;
  slX_init(&L, code, len);
  size_t done = 0;
  for (;;) {
    size_t before = L.pos;
    slX_Token t = slX_next(&L);
    if (t.offset > done) gap_pieces(code, done, t.offset, piece, ud);
    if (t.type == TK_EOF || (L.pos == before && t.len == 0)) {
      slX_token_free(&t);
      break;
    }
    sl_LexClass cls = SL_LEX_OPERATOR;
    if (t.type == TK_NUMBER) cls = SL_LEX_NUMBER;
    else if (t.type == TK_STRING) cls = SL_LEX_STRING;
    else if (t.type == TK_NAME) cls = SL_LEX_NAME;
    else if (t.type >= TK_IF && t.type <= TK_STEP) cls = SL_LEX_KEYWORD;
    else if (t.type == TK_NEWLINE) cls = SL_LEX_TEXT;
    else if (t.type == TK_ERROR) cls = t.len && (t.start[0] == '"' || t.start[0] == '\'') ? SL_LEX_STRING : SL_LEX_TEXT;
    if (t.len) piece(ud, cls, t.offset, t.len);
    done = t.offset + t.len;
    slX_token_free(&t);
  }
  if (done < len) gap_pieces(code, done, len, piece, ud);
}
