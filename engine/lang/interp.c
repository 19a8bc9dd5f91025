/*
** interp.c - the interpreter's entry points: run a cell, evaluate one
** expression for a client that shows its value (user_expressions), and
** answer the questions an editor asks about code (is it complete, what
** completes the word at the cursor, what is the name under the cursor).
**
** Completion and inspection work on the text before the cursor with the
** lexer alone, so they answer sensibly while the cell is half typed and
** does not parse.
*/
#include "eval.h"
#include "registry.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lex.h"

sl_State *sl_new(void) {
  if (!sl_registry_ready()) { /* a program that forgot to start the engine: every command would be unknown */
    fprintf(stderr, "syslab: sl_new() before sl_init(): the engine's domains are not registered\n");
    abort();
  }
  sl_State *S = calloc(1, sizeof *S);
  if (!S) abort();
  S->vars = sl_record_new();
  return S;
}

void sl_free(sl_State *S) {
  if (!S) return;
  sl_release(S->vars);
  free(S);
}

sl_Value sl_state_get(sl_State *S, const char *name) { return sl_record_get(S->vars, name); }

/* ------------------------------------------------------------ tracebacks */

static size_t utf8_advance(const char *s, size_t n, size_t chars) {
  size_t i = 0;
  while (i < n && chars > 0) {
    i++;
    while (i < n && ((unsigned char)s[i] & 0xC0) == 0x80) i++;
    chars--;
  }
  return i;
}

static char *make_traceback(const char *src, size_t len, const sl_Error *e) {
  size_t cap = 256 + len + (e->evalue ? strlen(e->evalue) : 0) * 2;
  char *tb = malloc(cap);
  size_t n = 0;
  if (e->line > 0) {
    const char *p = src, *end = src + len;
    for (int l = 1; l < e->line && p < end; l++) {
      const char *nl = memchr(p, '\n', (size_t)(end - p));
      p = nl ? nl + 1 : end;
    }
    const char *eol = memchr(p, '\n', (size_t)(end - p));
    size_t line_len = eol ? (size_t)(eol - p) : (size_t)(end - p);
    /* a long line is shown as a window of at most 160 characters around the
    ** column, marked with "..." where it was cut, so the caret stays under
    ** the place it points at */
    size_t col = e->col > 0 ? (size_t)e->col - 1 : 0, skip = col > 80 ? col - 60 : 0;
    size_t from = utf8_advance(p, line_len, skip);
    size_t shown = utf8_advance(p + from, line_len - from, 160);
    const char *more = from + shown < line_len ? " ..." : "";
    n += (size_t)snprintf(tb + n, cap - n, "line %d, column %d:\n    %s%.*s%s\n    %s", e->line, e->col,
                          skip ? "... " : "", (int)shown, p + from, more, skip ? "    " : "");
    /* the caret goes under the column; tabs are kept so it lines up */
    size_t upto = utf8_advance(p + from, line_len - from, col - skip);
    for (size_t i = 0; i < upto && n + 8 < cap; i++) {
      unsigned char c = (unsigned char)p[from + i];
      if ((c & 0xC0) == 0x80) continue;
      tb[n++] = c == '\t' ? '\t' : ' ';
    }
    n += (size_t)snprintf(tb + n, cap - n, "^\n");
  }
  snprintf(tb + n, cap - n, "%s: %s", e->ename, e->evalue ? e->evalue : "");
  return tb;
}

int sl_execute(sl_State *S, const char *code, const sl_Host *host, sl_Value *result, sl_Error *err) {
  memset(err, 0, sizeof *err);
  *result = sl_nil();
  sl_clear_interrupt();
  size_t len = strlen(code);
  slY_Error perr;
  slY_Tree *tree = slY_parse(code, len, &perr);
  if (!tree) {
    snprintf(err->ename, sizeof err->ename, "SyntaxError");
    err->evalue = strdup(perr.message);
    err->line = perr.line;
    err->col = perr.col;
    err->traceback = make_traceback(code, len, err);
    return -1;
  }
  S->host = host;
  S->src = code;
  S->src_len = len;
  S->err = err;
  S->failed = 0;
  sl_Value last;
  int rc = slV_run_block(S, slY_root(tree), &last);
  slY_Node *root = slY_root(tree);
  /* only a final bare expression or call is the cell's result */
  if (rc == 0 && root->nkids > 0 && root->kids[root->nkids - 1]->kind == N_EXPR) *result = last;
  else sl_release(last);
  if (rc != 0) {
    if (!S->failed) slV_error(S, "RuntimeError", 0, 0, "failed");
    err->traceback = make_traceback(code, len, err);
  }
  S->host = NULL;
  S->err = NULL;
  S->src = NULL;
  slY_free(tree);
  return rc;
}

/* ------------------------------------------------------------ evaluation */

/* Why a parsed cell is not one expression, or NULL when it is. A call
** that takes a block (sweep, search) runs statements, wherever it stands. */
static int runs_block(const slY_Node *n) {
  if (!n) return 0;
  if (n->kind == N_CALL && n->c) return 1;
  if (runs_block(n->a) || runs_block(n->b) || runs_block(n->c)) return 1;
  for (size_t i = 0; i < n->nkids; i++)
    if (runs_block(n->kids[i])) return 1;
  return 0;
}

static const char *not_an_expression(const slY_Node *root, const slY_Node **where) {
  static char several[64];
  *where = root->nkids > 0 ? root->kids[root->nkids > 1 ? 1 : 0] : NULL;
  if (root->nkids == 0) return "the expression is empty";
  if (root->nkids > 1) {
    snprintf(several, sizeof several, "this is %zu statements", root->nkids);
    return several;
  }
  switch ((*where)->kind) {
    case N_ASSIGN: return "this is an assignment";
    case N_IF: return "this is an if statement";
    case N_FOR: return "this is a for loop";
    case N_HELP: return "this is a help request";
    default: return runs_block(*where) ? "this command runs a block of statements" : NULL;
  }
}

/* The host of an expression: output is not shown but remembered, so that
** the evaluation can fail with what the expression tried to do. */
typedef struct {
  const char *what;
} Refusal;

static void refuse(Refusal *r, const char *what) {
  if (!r->what) r->what = what;
}
static void refuse_write(void *ud, sl_Stream stream, const char *text, size_t len) { refuse(ud, "prints text"); }
static void refuse_display(void *ud, const sl_Bundle *b, const char *display_id, int update) {
  refuse(ud, "displays output (a plot, a table, an image or a progress bar)");
}
static void refuse_clear(void *ud, int wait) { refuse(ud, "clears the output"); }
static void refuse_page(void *ud, const char *text) { refuse(ud, "shows help"); }

static int evaluation_error(const char *code, sl_Error *err, const char *ename, int line, int col, const char *why) {
  snprintf(err->ename, sizeof err->ename, "%s", ename);
  size_t n = strlen(why) + 200;
  err->evalue = malloc(n);
  snprintf(err->evalue, n,
           "%s: a user expression must only compute a value, without assigning, printing or "
           "plotting (run it in a code cell)",
           why);
  err->line = line;
  err->col = col;
  err->traceback = make_traceback(code, strlen(code), err);
  return -1;
}

int sl_evaluate(sl_State *S, const char *code, sl_Value *result, sl_Error *err) {
  memset(err, 0, sizeof *err);
  *result = sl_nil();
  slY_Error perr;
  slY_Tree *tree = slY_parse(code, strlen(code), &perr);
  if (tree) {
    const slY_Node *where;
    const char *why = not_an_expression(slY_root(tree), &where);
    int line = where ? where->line : 0, col = where ? where->col : 0;
    slY_free(tree);
    if (why) return evaluation_error(code, err, "SyntaxError", line, col, why);
  }
  Refusal r = {NULL};
  sl_Host host = {&r, refuse_write, refuse_display, refuse_clear, NULL, refuse_page};
  int rc = sl_execute(S, code, &host, result, err); /* a syntax error is reported as for a cell */
  if (rc != 0 || !r.what) return rc;
  sl_release(*result);
  *result = sl_nil();
  char why[128];
  snprintf(why, sizeof why, "this expression %s", r.what);
  return evaluation_error(code, err, "ValueError", 0, 0, why);
}

/* ------------------------------------------------------------ is_complete */

/* Complete: the cell parses. Incomplete: more lines could still complete
** it, which in this language means it ends inside brackets or a block, or
** with a '\' that continues the line; elsewhere a newline ends the
** statement, so `x = ` is as invalid as `print )`, and a string cannot
** span lines, so `"abc` can never be closed. The test is the parser's:
** the cell followed by a newline fails at the end of the input (a further
** line could go on from there) or before it (nothing can). */
sl_Completeness sl_is_complete(const char *code, char *indent, size_t indent_size) {
  size_t len = strlen(code);
  while (len > 0 && isspace((unsigned char)code[len - 1])) len--;
  if (indent && indent_size) indent[0] = '\0';
  slX_Lexer L;
  slX_init(&L, code, len);
  int continued = 0;
  for (;;) {
    slX_Token t = slX_next(&L);
    int type = t.type;
    size_t at = t.offset;
    slX_token_free(&t);
    if (type == TK_EOF) break;
    if (type == TK_ERROR) {
      /* a '\' that ends the text (outside strings and comments) asks for the next line */
      continued = at + 1 == len && code[at] == '\\';
      if (continued) break;
      return SL_INVALID;
    }
  }
  if (!continued) {
    char *text = malloc(len + 2);
    if (!text) abort();
    memcpy(text, code, len);
    text[len] = '\n';
    text[len + 1] = '\0';
    slY_Error perr;
    slY_Tree *tree = slY_parse(text, len + 1, &perr);
    free(text);
    if (tree) {
      slY_free(tree);
      return SL_COMPLETE;
    }
    if (!perr.at_eof) return SL_INVALID;
  }
  if (indent) {
    int depth = L.depth > 0 ? L.depth : 1;
    size_t n = 0;
    for (int i = 0; i < depth && n + 2 < indent_size; i++) indent[n++] = ' ', indent[n++] = ' ';
    indent[n] = '\0';
  }
  return SL_INCOMPLETE;
}

/* ------------------------------------------------------------- completion */

/* What the lexer saw before the cursor: the command being called at the
** current nesting level, if any, and the keyword being given a value. */
typedef struct {
  const sl_Command *command;   /* innermost command call in progress */
  char keyword[64];            /* "name" when the cursor follows "name=" */
  int at_statement_start;      /* the cursor word starts a statement */
  int after_dot;               /* the cursor word follows "expr." */
  char dotted[64];             /* the name before the dot */
  size_t word_start;           /* byte offset where the word at the cursor starts */
  char given[SL_MAX_ARGS][64]; /* keywords already given in this call */
  int ngiven;
} Context;

static void scan_context(const char *code, size_t cursor, Context *cx) {
  memset(cx, 0, sizeof *cx);
  size_t ws = cursor;
  while (ws > 0 && slX_is_name_char((unsigned char)code[ws - 1])) ws--;
  cx->word_start = ws;
  /* per nesting level: the command in progress and whether a statement starts */
  const sl_Command *cmd_at[SLX_MAX_NESTING + 1] = {0};
  int start_at[SLX_MAX_NESTING + 1];
  int depth = 0;
  start_at[0] = 1;
  slX_Lexer L;
  slX_init(&L, code, ws);
  int prev = TK_NEWLINE, prev2 = TK_NEWLINE;
  char prev_name[64] = "", prev2_name[64] = "";
  for (;;) {
    slX_Token t = slX_next(&L);
    int type = t.type;
    char name[64] = "";
    if (type == TK_NAME) snprintf(name, sizeof name, "%.*s", (int)(t.len < 63 ? t.len : 63), t.start);
    slX_token_free(&t);
    if (type == TK_EOF || type == TK_ERROR) break;
    if (type == TK_NEWLINE || type == ';') {
      cmd_at[depth] = NULL;
      start_at[depth] = 1;
      cx->ngiven = 0;
    } else if (type == '(' || type == '[' || type == '{') {
      if (depth < SLX_MAX_NESTING) depth++;
      cmd_at[depth] = NULL;
      start_at[depth] = type != '[';
      if (type == '{') cx->ngiven = 0;
    } else if (type == ')' || type == ']' || type == '}') {
      if (depth > 0) depth--;
      if (type == '}') {
        cmd_at[depth] = NULL;
        start_at[depth] = 1;
      }
    } else if (type == TK_NAME && start_at[depth]) {
      cmd_at[depth] = sl_command_find(name);
      start_at[depth] = 0;
      if (cmd_at[depth]) cx->ngiven = 0;
    } else if (type == '=' && prev == TK_NAME && !cmd_at[depth]) {
      start_at[depth] = 1; /* x = <command> */
    } else {
      if (type == '=' && prev == TK_NAME && cx->ngiven < SL_MAX_ARGS)
        snprintf(cx->given[cx->ngiven++], 64, "%s", prev_name);
      start_at[depth] = 0;
    }
    prev2 = prev;
    snprintf(prev2_name, sizeof prev2_name, "%s", prev_name);
    prev = type;
    snprintf(prev_name, sizeof prev_name, "%s", name);
  }
  cx->command = cmd_at[depth];
  cx->at_statement_start = start_at[depth];
  if (prev == '=' && prev2 == TK_NAME) {
    snprintf(cx->keyword, sizeof cx->keyword, "%s", prev2_name);
    /* the keyword's '=' was counted as given; it is the one being typed */
    if (cx->ngiven > 0) cx->ngiven--;
  }
  if (prev == '.' && prev2 == TK_NAME) {
    cx->after_dot = 1;
    snprintf(cx->dotted, sizeof cx->dotted, "%s", prev2_name);
  }
}

static void add_match(sl_Completion *c, const char *prefix, size_t plen, const char *cand, const char *suffix) {
  if (strncmp(cand, prefix, plen) != 0) return;
  char buf[160];
  snprintf(buf, sizeof buf, "%s%s", cand, suffix);
  for (size_t i = 0; i < c->n; i++)
    if (strcmp(c->matches[i], buf) == 0) return;
  c->matches = realloc(c->matches, (c->n + 1) * sizeof *c->matches);
  c->matches[c->n++] = strdup(buf);
}

static int cmp_str(const void *a, const void *b) { return strcmp(*(char *const *)a, *(char *const *)b); }

void sl_complete(sl_State *S, const char *code, size_t cursor, sl_Completion *out) {
  memset(out, 0, sizeof *out);
  size_t len = strlen(code);
  if (cursor > len) cursor = len;
  Context cx;
  scan_context(code, cursor, &cx);
  const char *prefix = code + cx.word_start;
  size_t plen = cursor - cx.word_start;
  out->start = cx.word_start;
  out->end = cursor;
  if (cx.after_dot) {
    sl_Value v = sl_record_get(S->vars, cx.dotted);
    if (v.type == SL_RECORD)
      for (size_t i = 0; i < sl_record_len(v); i++) add_match(out, prefix, plen, sl_record_key(v, i), "");
    if (v.type == SL_OBJECT && sl_object_class(v)->fields)
      for (const char *const *f = sl_object_class(v)->fields; *f; f++) add_match(out, prefix, plen, *f, "");
  } else if (cx.keyword[0] && cx.command) {
    const sl_Arg *arg = sl_command_arg(cx.command, cx.keyword);
    if (arg && arg->type == SL_ARG_ENUM)
      for (int i = 0; arg->choices && arg->choices[i]; i++) add_match(out, prefix, plen, arg->choices[i], "");
    if (arg && arg->type == SL_ARG_BOOL) {
      add_match(out, prefix, plen, "true", "");
      add_match(out, prefix, plen, "false", "");
    }
    for (size_t i = 0; i < sl_record_len(S->vars); i++) add_match(out, prefix, plen, sl_record_key(S->vars, i), "");
  } else {
    if (cx.at_statement_start) {
      for (size_t i = 0; sl_command_at(i); i++) add_match(out, prefix, plen, sl_command_at(i)->name, "");
      static const char *const keywords[] = {"if", "for", "else", NULL};
      for (int i = 0; keywords[i]; i++) add_match(out, prefix, plen, keywords[i], "");
    }
    if (cx.command) {
      for (int i = 0; cx.command->args[i].name; i++) {
        const sl_Arg *a = &cx.command->args[i];
        int given = 0;
        for (int g = 0; g < cx.ngiven; g++) given |= strcmp(cx.given[g], a->name) == 0;
        if (a->type != SL_ARG_BLOCK && !given) add_match(out, prefix, plen, a->name, "=");
        if (a->flags & SL_BAREWORD)
          for (size_t k = 0; sl_command_at(k); k++) add_match(out, prefix, plen, sl_command_at(k)->name, "");
      }
    }
    for (size_t i = 0; i < sl_record_len(S->vars); i++) add_match(out, prefix, plen, sl_record_key(S->vars, i), "");
  }
  if (out->n) qsort(out->matches, out->n, sizeof *out->matches, cmp_str);
}

void sl_completion_free(sl_Completion *c) {
  for (size_t i = 0; i < c->n; i++) free(c->matches[i]);
  free(c->matches);
  memset(c, 0, sizeof *c);
}

/* ------------------------------------------------------------- inspection */

int sl_inspect(sl_State *S, const char *code, size_t cursor, int detail, sl_Bundle *out) {
  sl_bundle_init(out);
  size_t len = strlen(code);
  if (cursor > len) cursor = len;
  size_t a = cursor, b = cursor;
  while (a > 0 && slX_is_name_char((unsigned char)code[a - 1])) a--;
  while (b < len && slX_is_name_char((unsigned char)code[b])) b++;
  /* at "cmd |" with nothing under the cursor, look at the word just before */
  if (a == b) {
    size_t e = a;
    while (e > 0 && code[e - 1] == ' ') e--;
    b = e;
    a = e;
    while (a > 0 && slX_is_name_char((unsigned char)code[a - 1])) a--;
  }
  if (a == b || b - a >= 64) return 0;
  char word[64];
  snprintf(word, sizeof word, "%.*s", (int)(b - a), code + a);
  const sl_Command *cmd = sl_command_find(word);
  if (!cmd && b < len && code[b] == '=') { /* a keyword argument: help of that argument */
    Context cx;
    scan_context(code, a, &cx);
    const sl_Arg *arg = cx.command ? sl_command_arg(cx.command, word) : NULL;
    if (arg) {
      char *t = slH_arg_text(cx.command, arg, 0), *m = slH_arg_text(cx.command, arg, 1);
      sl_bundle_add(out, "text/plain", t, strlen(t));
      sl_bundle_add(out, "text/markdown", m, strlen(m));
      free(t);
      free(m);
      return 1;
    }
  }
  if (cmd) {
    char *t = slH_help_text(cmd, 0), *m = slH_help_text(cmd, 1);
    sl_bundle_add(out, "text/plain", t, strlen(t));
    sl_bundle_add(out, "text/markdown", m, strlen(m));
    free(t);
    free(m);
    return 1;
  }
  for (size_t i = 0; i < sl_record_len(S->vars); i++) {
    if (strcmp(sl_record_key(S->vars, i), word) != 0) continue;
    sl_Value v = sl_record_value(S->vars, i);
    char *s = sl_repr(v);
    size_t limit = detail ? 4000 : 400;
    if (strlen(s) > limit) strcpy(s + limit - 4, " ...");
    sl_bundle_addf(out, "text/plain", "%s: %s\n%s", word, sl_typename(v), s);
    free(s);
    return 1;
  }
  return 0;
}
