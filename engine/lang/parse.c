/*
** parse.c - parser: a recursive-descent parser from tokens to a syntax tree.
**
** Grammar (docs/language.md has the full version):
**   block     = { statement (NEWLINE | ';') }
**   statement = NAME '=' value | NAME '?' | '?' NAME | if | for | call | expr
**   call      = COMMAND { arg } [ '{' block '}' ]       arg = [NAME '='] expr
**   value     = call | expr
** A command call may also stand inside parentheses: (evaluate m data).accuracy
**
** All nodes and strings live in one arena owned by the tree, so a syntax
** error can simply longjmp out and free the arena; there is no partial tree
** to unwind by hand.
*/
#include "parse.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stdio.h>
#include <ctype.h>
#include <stdlib.h>
#include <string.h>

#include "suggest.h"
#include "lex.h"
#include "slcommand.h"

typedef struct Chunk {
  struct Chunk *next;
  size_t used, size;
  _Alignas(16) unsigned char mem[];
} Chunk;

struct slY_Tree {
  Chunk *chunks;
  slY_Node *root;
};

typedef struct Parser {
  slX_Lexer lex;
  slX_Token tok;   /* current token */
  size_t prev_end; /* byte offset just past the previous token */
  slY_Tree *tree;
  slY_Error *err;
  int depth;   /* nesting of the constructs being parsed */
  int in_args; /* parsing a command's space-separated arguments (not inside brackets) */
  jmp_buf fail;
} Parser;

/* The one count of nesting. Deeper code is refused with a SyntaxError:
** each level costs stack in the parser and in the evaluator (and in every
** walk of the tree), so 50,000 nested parentheses or 100,000 nested
** round(...) calls must end in a message, not a stack overflow. Every
** construct that recurses counts here, once: parentheses, lists, function
** calls, `.field` and `[index]`, unary operators and the right side of
** `**`, blocks. Those walks recurse only along these levels (chains of
** binary operators are walked in loops), so this count bounds them too. */
#define MAX_NESTING SLY_MAX_NESTING

/* ------------------------------------------------------------------ arena */

static void *arena_alloc(slY_Tree *t, size_t n) {
  n = (n + 15) & ~(size_t)15;
  if (!t->chunks || t->chunks->used + n > t->chunks->size) {
    size_t size = n > 8192 ? n : 8192;
    Chunk *c = malloc(sizeof *c + size);
    if (!c) abort();
    c->next = t->chunks;
    c->used = 0;
    c->size = size;
    t->chunks = c;
  }
  void *p = t->chunks->mem + t->chunks->used;
  t->chunks->used += n;
  memset(p, 0, n);
  return p;
}

static char *arena_strndup(slY_Tree *t, const char *s, size_t n) {
  char *p = arena_alloc(t, n + 1);
  memcpy(p, s, n);
  p[n] = '\0';
  return p;
}

void slY_free(slY_Tree *t) {
  if (!t) return;
  for (Chunk *c = t->chunks, *next; c; c = next) {
    next = c->next;
    free(c);
  }
  free(t);
}

slY_Node *slY_root(slY_Tree *t) { return t->root; }

/* ----------------------------------------------------------------- tokens */

static void fail_at(Parser *P, int line, int col, int at_eof, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(P->err->message, sizeof P->err->message, fmt, ap);
  va_end(ap);
  P->err->line = line;
  P->err->col = col;
  P->err->at_eof = at_eof;
  slX_token_free(&P->tok);
  longjmp(P->fail, 1);
}

/* every recursive construct goes through enter/leave */
static void enter(Parser *P) {
  if (++P->depth > MAX_NESTING)
    fail_at(P, P->tok.line, P->tok.col, 0,
            "the code is nested more than %d levels deep (parentheses, brackets, calls, blocks, operators): "
            "split it into smaller statements with variables",
            MAX_NESTING);
}

static void leave(Parser *P) { P->depth--; }

static void next(Parser *P) {
  P->prev_end = P->tok.offset + P->tok.len;
  slX_token_free(&P->tok);
  P->tok = slX_next(&P->lex);
  if (P->tok.type == TK_ERROR) fail_at(P, P->tok.line, P->tok.col, P->lex.eof_in_string, "%s", P->lex.error);
}

/* type of the token after the current one, without consuming anything */
static int peek_type(Parser *P) {
  slX_Lexer copy = P->lex;
  slX_Token t = slX_next(&copy);
  int type = t.type;
  slX_token_free(&t);
  return type;
}

/* the current token is directly followed by '(' with no space: round(x, 2) */
static int call_parens_follow(Parser *P) {
  slX_Lexer copy = P->lex;
  slX_Token t = slX_next(&copy);
  int yes = t.type == '(' && t.offset == P->tok.offset + P->tok.len;
  slX_token_free(&t);
  return yes;
}

static void unexpected(Parser *P, const char *expected) {
  char buf[16];
  const char *got = slX_describe(P->tok.type, buf, sizeof buf);
  if (P->tok.type == TK_NAME || P->tok.type == TK_NUMBER)
    fail_at(P, P->tok.line, P->tok.col, 0, "expected %s, found %s '%.*s'", expected, got, (int)P->tok.len,
            P->tok.start);
  fail_at(P, P->tok.line, P->tok.col, P->tok.type == TK_EOF, "expected %s, found %s", expected, got);
}

static void expect(Parser *P, int type, const char *what) {
  if (P->tok.type != type) unexpected(P, what);
  next(P);
}

/* the closing bracket of one opened at line:col; at the end of the input
** the error points at the opening one, as for an unclosed '{' */
static void expect_close(Parser *P, int close, int line, int col, const char *what) {
  if (P->tok.type == TK_EOF && P->tok.type != close)
    fail_at(P, line, col, 1, "this '%c' is never closed: add '%c'", close == ')' ? '(' : '[', close);
  expect(P, close, what);
}

static slY_Node *node(Parser *P, slY_Kind kind) {
  slY_Node *n = arena_alloc(P->tree, sizeof *n);
  n->kind = kind;
  n->line = P->tok.line;
  n->col = P->tok.col;
  n->offset = P->tok.offset;
  return n;
}

static void finish(Parser *P, slY_Node *n) { n->end = P->tok.offset; }

/* growable child arrays live in the arena too; doubling wastes a little */
static void add_kid(Parser *P, slY_Node *n, slY_Node *kid, const char *key, int line, int col) {
  if ((n->nkids & (n->nkids - 1)) == 0) {
    size_t cap = n->nkids ? n->nkids * 2 : 1;
    slY_Node **kids = arena_alloc(P->tree, cap * sizeof *kids);
    char **keys = arena_alloc(P->tree, cap * sizeof *keys);
    int *cols = arena_alloc(P->tree, cap * 2 * sizeof *cols);
    if (n->nkids) {
      memcpy(kids, n->kids, n->nkids * sizeof *kids);
      memcpy(keys, n->keys, n->nkids * sizeof *keys);
      memcpy(cols, n->key_cols, n->nkids * 2 * sizeof *cols);
    }
    n->kids = kids;
    n->keys = keys;
    n->key_cols = cols;
  }
  n->kids[n->nkids] = kid;
  n->keys[n->nkids] = key ? arena_strndup(P->tree, key, strlen(key)) : NULL;
  n->key_cols[2 * n->nkids] = line;
  n->key_cols[2 * n->nkids + 1] = col;
  n->nkids++;
}

static int at_statement_end(Parser *P) {
  int t = P->tok.type;
  return t == TK_NEWLINE || t == TK_EOF || t == ';' || t == '}';
}

static const sl_Command *command_named(Parser *P) {
  if (P->tok.type != TK_NAME) return NULL;
  char name[64];
  if (P->tok.len >= sizeof name) return NULL;
  memcpy(name, P->tok.start, P->tok.len);
  name[P->tok.len] = '\0';
  return sl_command_find(name);
}

/* ------------------------------------------------------------ expressions */

static slY_Node *expr(Parser *P, int allow_call);
static slY_Node *block(Parser *P);
static slY_Node *call(Parser *P, const sl_Command *cmd, int in_parens);

static slY_Node *primary(Parser *P, int allow_call) {
  slY_Node *n;
  switch (P->tok.type) {
    case TK_NUMBER:
      n = node(P, N_NUMBER);
      n->number = P->tok.number;
      next(P);
      break;
    case TK_STRING:
      n = node(P, N_STRING);
      n->str = arena_strndup(P->tree, P->tok.string, P->tok.string_len);
      n->str_len = P->tok.string_len;
      next(P);
      break;
    case TK_TRUE:
      n = node(P, N_TRUE);
      next(P);
      break;
    case TK_FALSE:
      n = node(P, N_FALSE);
      next(P);
      break;
    case TK_NIL:
      n = node(P, N_NIL);
      next(P);
      break;
    case TK_NAME: {
      const sl_Command *cmd = command_named(P);
      if (cmd && call_parens_follow(P)) return call(P, cmd, 3);
      if (cmd && allow_call) return call(P, cmd, allow_call == 2);
      n = node(P, N_NAME);
      n->str = arena_strndup(P->tree, P->tok.start, P->tok.len);
      next(P);
      break;
    }
    case TK_STEP: /* a word like any other outside a range: schedule=step */
      n = node(P, N_NAME);
      n->str = arena_strndup(P->tree, P->tok.start, P->tok.len);
      next(P);
      break;
    case '(': {
      int line = P->tok.line, col = P->tok.col, in_args = P->in_args;
      enter(P);
      next(P);
      P->in_args = 0; /* inside brackets a sign is an operator again */
      n = expr(P, 2);
      P->in_args = in_args;
      expect_close(P, ')', line, col, "')'");
      leave(P);
      return n; /* not finished again: a call's source (workers run it) ends before the ')' */
    }
    case '[': {
      int line = P->tok.line, col = P->tok.col, in_args = P->in_args;
      n = node(P, N_LIST);
      enter(P);
      next(P);
      P->in_args = 0;
      while (P->tok.type != ']') {
        add_kid(P, n, expr(P, 0), NULL, 0, 0);
        if (P->tok.type != ',') break;
        next(P);
      }
      P->in_args = in_args;
      expect_close(P, ']', line, col, "',' or ']'");
      leave(P);
      break;
    }
    default: unexpected(P, "a value (number, string, name, list or '(')"); return NULL;
  }
  finish(P, n);
  return n;
}

static slY_Node *postfix(Parser *P, int allow_call) {
  slY_Node *n = primary(P, allow_call);
  /* a chain a.b[1].c is a tree as deep as it is long */
  int links = 0;
  for (;; links++) {
    if (P->tok.type == '.') {
      enter(P);
      slY_Node *f = node(P, N_FIELD);
      next(P);
      if (P->tok.type != TK_NAME) unexpected(P, "a field name after '.'");
      f->a = n;
      f->str = arena_strndup(P->tree, P->tok.start, P->tok.len);
      f->line = P->tok.line;
      f->col = P->tok.col;
      next(P);
      n = f;
    } else if (P->tok.type == '[' && P->tok.offset == P->prev_end) {
      /* x[i] indexes; "print x [1, 2]" passes a list: the space decides */
      enter(P);
      slY_Node *ix = node(P, N_INDEX);
      int line = P->tok.line, col = P->tok.col, in_args = P->in_args;
      next(P);
      ix->a = n;
      P->in_args = 0;
      ix->b = expr(P, 0);
      P->in_args = in_args;
      expect_close(P, ']', line, col, "']'");
      n = ix;
    } else {
      P->depth -= links;
      return n;
    }
    finish(P, n);
  }
}

static slY_Node *unary(Parser *P, int allow_call);

static slY_Node *power(Parser *P, int allow_call) {
  slY_Node *base = postfix(P, allow_call);
  if (P->tok.type == TK_POW || P->tok.type == '^') {
    slY_Node *n = node(P, N_BINARY);
    n->op = TK_POW;
    next(P);
    n->a = base;
    enter(P);
    n->b = unary(P, 0); /* right-associative, and 2 ** -1 works */
    leave(P);
    finish(P, n);
    return n;
  }
  return base;
}

static slY_Node *unary(Parser *P, int allow_call) {
  if (P->tok.type == '-' || P->tok.type == '+') {
    slY_Node *n = node(P, N_UNARY);
    n->op = P->tok.type;
    next(P);
    enter(P);
    n->a = unary(P, 0);
    leave(P);
    finish(P, n);
    return n;
  }
  return power(P, allow_call);
}

static slY_Node *binary_left(Parser *P, slY_Node *left, int op, slY_Node *(*operand)(Parser *, int)) {
  slY_Node *n = node(P, N_BINARY);
  n->line = left->line;
  n->col = left->col;
  n->offset = left->offset;
  n->op = op;
  next(P);
  n->a = left;
  n->b = operand(P, 0);
  finish(P, n);
  return n;
}

static slY_Node *term(Parser *P, int allow_call) {
  slY_Node *n = unary(P, allow_call);
  while (P->tok.type == '*' || P->tok.type == '/' || P->tok.type == '%') n = binary_left(P, n, P->tok.type, unary);
  return n;
}

/* Among a command's arguments, a sign after a space and right before a
** number, a '.' or a name starts the next argument, as in a shell:
** `suggest "x" float -5 5` is four arguments, while `a - 1` and `a-1`
** stay differences (docs/language.md). */
static int sign_starts_argument(Parser *P) {
  if (!P->in_args || P->tok.offset == P->prev_end || P->tok.offset + 1 >= P->lex.len) return 0;
  int c = (unsigned char)P->lex.src[P->tok.offset + 1];
  return isdigit(c) || c == '.' || slX_is_name_start(c);
}

static slY_Node *sum(Parser *P, int allow_call) {
  slY_Node *n = term(P, allow_call);
  while ((P->tok.type == '+' || P->tok.type == '-') && !sign_starts_argument(P))
    n = binary_left(P, n, P->tok.type, term);
  return n;
}

static slY_Node *range(Parser *P, int allow_call) {
  slY_Node *n = sum(P, allow_call);
  if (P->tok.type != TK_DOTDOT) return n;
  slY_Node *r = node(P, N_RANGE);
  r->line = n->line;
  r->col = n->col;
  r->offset = n->offset;
  next(P);
  r->a = n;
  r->b = sum(P, 0);
  if (P->tok.type == TK_STEP) {
    next(P);
    r->c = sum(P, 0);
  }
  finish(P, r);
  return r;
}

static int is_comparison(int t) { return t == TK_EQ || t == TK_NE || t == '<' || t == TK_LE || t == '>' || t == TK_GE; }

static slY_Node *comparison(Parser *P, int allow_call) {
  slY_Node *n = range(P, allow_call);
  while (is_comparison(P->tok.type)) n = binary_left(P, n, P->tok.type, range);
  return n;
}

static slY_Node *negation(Parser *P, int allow_call) {
  if (P->tok.type == TK_NOT) {
    slY_Node *n = node(P, N_UNARY);
    n->op = TK_NOT;
    next(P);
    enter(P);
    n->a = negation(P, 0);
    leave(P);
    finish(P, n);
    return n;
  }
  return comparison(P, allow_call);
}

static slY_Node *conjunction(Parser *P, int allow_call) {
  slY_Node *n = negation(P, allow_call);
  while (P->tok.type == TK_AND) {
    n = binary_left(P, n, TK_AND, negation);
    n->kind = N_AND;
  }
  return n;
}

/* allow_call: 0 no command calls (arguments), 1 at statement level,
** 2 inside parentheses (the call ends at ')') */
static slY_Node *expr(Parser *P, int allow_call) {
  slY_Node *n = conjunction(P, allow_call);
  while (P->tok.type == TK_OR) {
    n = binary_left(P, n, TK_OR, conjunction);
    n->kind = N_OR;
  }
  return n;
}

/* --------------------------------------------------------------- commands */

static int takes_block(const sl_Command *cmd) {
  for (int i = 0; cmd->args[i].name; i++)
    if (cmd->args[i].type == SL_ARG_BLOCK) return 1;
  return 0;
}

/* in_parens: 0 the call runs to the end of the statement, 1 it ends at a
** ')' that closes an enclosing '(', 3 function style name(a, b, key=c) */
static slY_Node *call(Parser *P, const sl_Command *cmd, int in_parens) {
  slY_Node *n = node(P, N_CALL);
  n->cmd = cmd;
  n->str = arena_strndup(P->tree, P->tok.start, P->tok.len);
  next(P);
  int function_style = in_parens == 3, open_line = P->tok.line, open_col = P->tok.col, in_args = P->in_args;
  if (function_style) enter(P), next(P); /* the '(' is a level, as any other */
  P->in_args = !function_style;          /* name(a, -1): commas separate, a sign is an operator */
  for (;;) {
    if (at_statement_end(P) || (in_parens && P->tok.type == ')')) break;
    if (P->tok.type == '{') {
      if (!takes_block(cmd)) fail_at(P, P->tok.line, P->tok.col, 0, "'%s' takes no { } block", cmd->name);
      P->in_args = 0; /* the block's statements are statements again */
      n->c = block(P);
      break;
    }
    int line = P->tok.line, col = P->tok.col;
    if (P->tok.type == TK_NAME && peek_type(P) == '=') {
      char key[64];
      snprintf(key, sizeof key, "%.*s", (int)(P->tok.len < 63 ? P->tok.len : 63), P->tok.start);
      next(P);
      next(P);
      if (at_statement_end(P) || P->tok.type == '{') unexpected(P, "a value after '='");
      add_kid(P, n, expr(P, 0), key, line, col);
    } else {
      add_kid(P, n, expr(P, 0), NULL, line, col);
    }
    if (P->tok.type == ',') next(P); /* commas between arguments are allowed */
  }
  P->in_args = in_args;
  if (function_style) expect_close(P, ')', open_line, open_col, "')' to close the argument list"), leave(P);
  finish(P, n);
  return n;
}

/* ------------------------------------------------------------- statements */

static slY_Node *statement(Parser *P);

/* "name args..." where name is no command, at the start of a statement or
** after `x =`: most likely a misspelt command, so the error says which */
static void refuse_stray_arguments(Parser *P, const slY_Node *value) {
  if (value->kind != N_NAME || at_statement_end(P) || P->tok.type == '{') return;
  const char *best = sl_suggest(NULL, value->str, 1, 0);
  fail_at(P, value->line, value->col, 0, "'%s' is not a command%s%s%s", value->str, best ? "; did you mean '" : "",
          best ? best : "", best ? "'?" : " (type help for the list)");
}

/* the name a statement is about to set (x = ..., for x in ...) */
static void check_new_name(Parser *P) {
  if (P->tok.type == TK_NAME && isdigit((unsigned char)P->tok.start[0]))
    fail_at(P, P->tok.line, P->tok.col, 0, "'%.*s' cannot be a name: a name starts with a letter or '_'",
            (int)P->tok.len, P->tok.start);
}

/* '{' statements '}' */
static slY_Node *block(Parser *P) {
  slY_Node *b = node(P, N_BLOCK);
  int line = P->tok.line, col = P->tok.col;
  enter(P);
  expect(P, '{', "'{'");
  for (;;) {
    while (P->tok.type == TK_NEWLINE || P->tok.type == ';') next(P);
    if (P->tok.type == '}') break;
    if (P->tok.type == TK_EOF) fail_at(P, line, col, 1, "this '{' is never closed: add '}'");
    add_kid(P, b, statement(P), NULL, 0, 0);
    if (P->tok.type != '}' && !at_statement_end(P)) unexpected(P, "end of statement");
  }
  leave(P);
  next(P);
  finish(P, b);
  return b;
}

/* if c { } else if c { } ... else { }: the chain is read in a loop, so a
** long else-if chain is no deeper than one if; only the blocks nest */
static slY_Node *if_statement(Parser *P) {
  slY_Node *first = NULL, *last = NULL;
  for (;;) {
    slY_Node *n = node(P, N_IF);
    next(P);
    n->a = expr(P, 0);
    if (P->tok.type != '{') unexpected(P, "'{' after the condition of 'if'");
    n->b = block(P);
    if (last) last->c = n;
    else first = n;
    last = n;
    if (P->tok.type != TK_ELSE) break;
    next(P);
    if (P->tok.type != TK_IF) {
      n->c = block(P);
      break;
    }
  }
  for (slY_Node *n = first; n && n->kind == N_IF; n = n->c) finish(P, n);
  return first;
}

static slY_Node *for_statement(Parser *P) {
  slY_Node *n = node(P, N_FOR);
  next(P);
  if (P->tok.type != TK_NAME) unexpected(P, "a variable name after 'for'");
  check_new_name(P);
  n->str = arena_strndup(P->tree, P->tok.start, P->tok.len);
  next(P);
  expect(P, TK_IN, "'in'");
  n->a = expr(P, 0);
  if (P->tok.type != '{') unexpected(P, "'{' after the list of 'for'");
  n->b = block(P);
  finish(P, n);
  return n;
}

static slY_Node *help_node(Parser *P) {
  slY_Node *n = node(P, N_HELP);
  n->str = arena_strndup(P->tree, P->tok.start, P->tok.len);
  next(P);
  return n;
}

static slY_Node *statement(Parser *P) {
  switch (P->tok.type) {
    case TK_IF: return if_statement(P);
    case TK_FOR: return for_statement(P);
    case '?': {
      next(P);
      if (P->tok.type != TK_NAME) unexpected(P, "a name after '?'");
      return help_node(P);
    }
    case TK_NAME: {
      int after = peek_type(P);
      if (after == '?') {
        slY_Node *n = help_node(P);
        next(P);
        return n;
      }
      if (after == '=') {
        check_new_name(P);
        slY_Node *n = node(P, N_ASSIGN);
        n->str = arena_strndup(P->tree, P->tok.start, P->tok.len);
        next(P);
        next(P);
        if (at_statement_end(P)) unexpected(P, "a value after '='");
        n->a = expr(P, 1);
        finish(P, n);
        refuse_stray_arguments(P, n->a);
        return n;
      }
      break;
    }
    default: break;
  }
  slY_Node *n = node(P, N_EXPR);
  n->a = expr(P, 1);
  finish(P, n);
  refuse_stray_arguments(P, n->a);
  return n;
}

slY_Tree *slY_parse(const char *src, size_t len, slY_Error *err) {
  Parser *P = calloc(1, sizeof *P);
  if (!P || !(P->tree = calloc(1, sizeof *P->tree))) abort();
  memset(err, 0, sizeof *err);
  P->err = err;
  slX_init(&P->lex, src, len);
  if (setjmp(P->fail)) {
    slY_free(P->tree);
    free(P);
    return NULL;
  }
  next(P);
  slY_Node *root = node(P, N_BLOCK);
  for (;;) {
    while (P->tok.type == TK_NEWLINE || P->tok.type == ';') next(P);
    if (P->tok.type == TK_EOF) break;
    if (P->tok.type == '}' || P->tok.type == ')' || P->tok.type == ']') {
      char buf[16];
      fail_at(P, P->tok.line, P->tok.col, 0, "unmatched %s: nothing is open here",
              slX_describe(P->tok.type, buf, sizeof buf));
    }
    add_kid(P, root, statement(P), NULL, 0, 0);
    if (!at_statement_end(P)) unexpected(P, "end of statement (a new line or ';')");
  }
  finish(P, root);
  slY_Tree *tree = P->tree;
  tree->root = root;
  slX_token_free(&P->tok);
  free(P);
  return tree;
}
