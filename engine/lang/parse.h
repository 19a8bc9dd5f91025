/*
** parse.h - the parser: tokens to a syntax tree.
*/
#ifndef SYSLAB_PARSE_H
#define SYSLAB_PARSE_H

#include <stddef.h>

#include "syslab.h"

typedef enum slY_Kind {
  N_NUMBER,
  N_STRING,
  N_TRUE,
  N_FALSE,
  N_NIL,
  N_NAME,   /* str */
  N_LIST,   /* kids */
  N_RANGE,  /* a .. b [step c] */
  N_UNARY,  /* op a */
  N_BINARY, /* a op b */
  N_AND,
  N_OR,
  N_FIELD,  /* a.str */
  N_INDEX,  /* a[b] */
  N_CALL,   /* command call: cmd, kids with keys (NULL key = positional), block in c */
  N_ASSIGN, /* str = a */
  N_IF,     /* if a { b } else c */
  N_FOR,    /* for str in a { b } */
  N_BLOCK,  /* kids: statements */
  N_HELP,   /* str? : help for a name, to the pager */
  N_EXPR    /* expression statement a */
} slY_Kind;

typedef struct slY_Node slY_Node;
struct slY_Node {
  slY_Kind kind;
  int line, col;
  size_t offset, end; /* byte span in the source */
  int op;             /* token type of the operator */
  double number;
  char *str;
  size_t str_len;
  slY_Node *a, *b, *c;
  slY_Node **kids;
  char **keys;   /* N_CALL: keyword names, NULL for positional */
  int *key_cols; /* N_CALL: line/col of each argument, for errors */
  size_t nkids;
  const sl_Command *cmd; /* N_CALL */
};

/* how deeply code may nest (parentheses, brackets, function calls, blocks,
** unary operators, chains of .field and [index]); deeper code is a
** SyntaxError. The one limit of the parser, the evaluator and the walks
** of the tree (parse.c). */
#define SLY_MAX_NESTING 200

typedef struct slY_Error {
  char message[300];
  int line, col;
  int at_eof; /* more input could complete the text (for is_complete) */
} slY_Error;

typedef struct slY_Tree slY_Tree;

/* Parses a whole cell. Returns the tree (root is an N_BLOCK), or NULL with
** *err filled. The tree owns every node and string. */
slY_Tree *slY_parse(const char *src, size_t len, slY_Error *err);
slY_Node *slY_root(slY_Tree *t);
void slY_free(slY_Tree *t);

#endif
