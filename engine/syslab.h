/*
** syslab.h - the engine's driver API: sessions that run cells, the values
** they give back, the host that receives their output, interrupts.
**
** Design. The engine knows nothing of ZeroMQ or Jupyter. Whoever drives it
** (the kernel, `syslab run`, the report generator, unit tests) passes an
** sl_Host: a table of callbacks that receive text streams, rich displays,
** clear-output requests and input prompts. The kernel turns those into
** IOPub messages; `syslab run` writes them to stdout/stderr.
**
** This header is what such a driver includes, as a program embedding Lua
** includes lua.h. The engine's commands use it through slcommand.h (the
** command-author API: the registry's records, calls, arguments, errors,
** progress, objects, the memory budget), and small helpers that drivers and
** commands share (the growable string, the clock, files a user names,
** numbers as text) are in slutil.h; neither is included here, so a file's
** includes say which of them it uses.
**
** Memory: sl_Value is a small tagged union passed by value. Strings, lists,
** records and objects live on the heap with a reference count. A function
** that *returns* an sl_Value hands the caller one reference; arguments are
** borrowed. sl_retain/sl_release adjust counts; releasing a scalar is a no-op.
*/
#ifndef SYSLAB_H
#define SYSLAB_H

#include <stddef.h>

#define SYSLAB_VERSION "0.1.0"
#define SYSLAB_LANGUAGE "syslab"

/* ------------------------------------------------------------------ values */

typedef enum sl_Type {
  SL_NIL = 0,
  SL_BOOL,
  SL_NUMBER, /* double */
  SL_STRING, /* immutable UTF-8 */
  SL_LIST,   /* ordered sequence of values */
  SL_RECORD, /* ordered string-keyed map, e.g. the result of `evaluate` */
  SL_OBJECT  /* engine object with a class: table, dataset, model, tensor... */
} sl_Type;

typedef struct sl_Heap sl_Heap; /* common header of heap values (refcount) */

typedef struct sl_Value {
  sl_Type type;
  union {
    int b;
    double n;
    sl_Heap *h;
  } u;
} sl_Value;

typedef struct sl_Bundle sl_Bundle;

sl_Value sl_nil(void);
sl_Value sl_bool(int b);
sl_Value sl_number(double n);
sl_Value sl_string(const char *s);               /* copies */
sl_Value sl_string_len(const char *s, size_t n); /* copies */
sl_Value sl_list_new(void);
sl_Value sl_record_new(void);

void sl_retain(sl_Value v);
void sl_release(sl_Value v);

const char *sl_typename(sl_Value v); /* "number", "table", ... */
int sl_truthy(sl_Value v);
int sl_equal(sl_Value a, sl_Value b);

const char *sl_str(sl_Value v); /* chars of a SL_STRING, else NULL */
size_t sl_strlen(sl_Value v);

size_t sl_list_len(sl_Value list);
sl_Value sl_list_get(sl_Value list, size_t i);   /* borrowed */
void sl_list_push(sl_Value list, sl_Value item); /* takes a reference */

size_t sl_record_len(sl_Value rec);
const char *sl_record_key(sl_Value rec, size_t i);
sl_Value sl_record_value(sl_Value rec, size_t i);              /* borrowed */
sl_Value sl_record_get(sl_Value rec, const char *key);         /* borrowed, nil if absent */
void sl_record_set(sl_Value rec, const char *key, sl_Value v); /* takes a reference */
void sl_record_remove(sl_Value rec, const char *key);
/* how deeply lists and records nest inside v: 0 for a scalar, 1 for [1, 2] */
size_t sl_value_depth(sl_Value v);
/* the language refuses to build values nested deeper than this */
#define SL_MAX_VALUE_DEPTH 1000

/* Formats a value as text the way `print` does (numbers with %.9g style,
** lists as [a, b], records as {k: v}). Caller frees. */
char *sl_tostring(sl_Value v);
/* Like sl_tostring but strings are quoted, as in the language's source. */
char *sl_repr(sl_Value v);

/* ------------------------------------------------------------ mime bundles */

#define SL_BUNDLE_MAX 8

typedef struct sl_MimePart {
  char *mime; /* "text/plain", "image/png", ... */
  char *data; /* raw bytes; binary for image/png (the kernel base64s it) */
  size_t len;
} sl_MimePart;

struct sl_Bundle {
  int n;
  sl_MimePart parts[SL_BUNDLE_MAX];
};

void sl_bundle_init(sl_Bundle *b);
/* copies mime and data; replaces an existing part of the same mime */
void sl_bundle_add(sl_Bundle *b, const char *mime, const char *data, size_t len);
void sl_bundle_addf(sl_Bundle *b, const char *mime, const char *fmt, ...);
const sl_MimePart *sl_bundle_get(const sl_Bundle *b, const char *mime);
void sl_bundle_free(sl_Bundle *b);

/* Fill a bundle for showing value v (execute_result, `show`). */
int sl_show(sl_Value v, sl_Bundle *out);
/* A number's exact value beside its shown text: SL_MIME_NUMBER holds
** sl_format_exact's text, which a client that formats the number itself
** reads (the report's inline values from user_expressions); other values
** add nothing. */
#define SL_MIME_NUMBER "text/vnd.syslab.number"
void sl_show_exact(sl_Value v, sl_Bundle *out);

/* -------------------------------------------------------------------- host */

typedef enum sl_Stream { SL_STDOUT = 0, SL_STDERR = 1 } sl_Stream;

typedef struct sl_Host {
  void *ud;
  /* text output; the host may coalesce consecutive writes */
  void (*write)(void *ud, sl_Stream stream, const char *text, size_t len);
  /* rich output. display_id may be NULL. update=1 replaces the output that
  ** was displayed earlier with the same display_id (progress bars). */
  void (*display)(void *ud, const sl_Bundle *b, const char *display_id, int update);
  void (*clear)(void *ud, int wait);
  /* asks the user; returns 0 and a malloc'd answer in *answer, or -1 when no
  ** input channel is available (e.g. allow_stdin=false, batch runs). */
  int (*input)(void *ud, const char *prompt, int password, char **answer);
  /* pager payload (help pages); may be NULL, then text goes to write() */
  void (*page)(void *ud, const char *text);
} sl_Host;

/* --------------------------------------------------------------- registry */

/* Starts the engine: registers every domain, in the order of the layers,
** and runs their open hooks. Call it once before anything else (more calls
** do nothing); every program that drives the engine does. */
void sl_init(void);

/* A command's record, defined with the command-author API (slcommand.h);
** a driver only asks whether a name is one (highlighting a cell). */
typedef struct sl_Command sl_Command;
const sl_Command *sl_command_find(const char *name);

/* Documentation generated from the registry, for docs/commands.md. Caller frees. */
char *sl_registry_markdown(void);

/* ---------------------------------------------------------------- interrupt */

/* Async-signal-safe. Long work polls sl_interrupted() at safe points
** (batch boundaries, sleep slices) and stops cleanly. */
void sl_interrupt(void);
int sl_interrupted(void);
void sl_clear_interrupt(void);

/* --------------------------------------------------------- distributed runs */

/* This process's rank in an mpirun job (from the launcher's environment,
** without starting MPI); 0 in a plain run. `syslab run` prints from rank 0. */
int sl_job_rank(void);
/* Ends MPI in a process that used it; call once before exiting with
** `status` (which it exits with itself if a dead peer blocks the end). */
void sl_job_end(int status);
/* `syslab worker`: a process a notebook's search started (workers=N); runs
** the trials it is handed, then exits. */
int sl_worker_main(void);
/* The number of processes in this mpirun job (1 in a plain run). */
int sl_job_size(void);
/* Spreads n tasks (byte strings) over the ranks of an mpirun job, for the
** drivers (`syslab report` under mpirun): rank 0 hands them out and gets
** each result through done(), in the order they finish; the other ranks
** run them with run() and then return 1 (their part is over). A dead rank's
** task is run by another. Rank 0 returns 0 once every result is in, or -1
** with err. */
struct slU_Text; /* slutil.h */
typedef void (*sl_TaskRun)(void *ud, long id, const char *task, size_t n, struct slU_Text *result);
typedef void (*sl_TaskDone)(void *ud, long id, const char *result, size_t n);
int sl_job_farm(size_t n, char *const *tasks, const size_t *lens, sl_TaskRun run, sl_TaskDone done, void *ud, char *err,
                size_t errlen);

/* -------------------------------------------------------------- interpreter */

typedef struct sl_State sl_State;

typedef struct sl_Error sl_Error; /* a cell's error */
struct sl_Error {
  char ename[64];  /* "SyntaxError", "NameError", "TypeError", "ArgumentError",
                          "RuntimeError", "Interrupt", ... */
  char *evalue;    /* one-line message */
  int line, col;   /* 1-based location in the cell, 0 if unknown */
  char *traceback; /* readable multi-line text: the source line with a caret */
};

void sl_error_free(sl_Error *e);

sl_State *sl_new(void);
void sl_free(sl_State *S);
/* a session variable (borrowed), nil if unset */
sl_Value sl_state_get(sl_State *S, const char *name);

/* Runs a cell. Returns 0 and sets *result to the value of a final bare
** expression (nil if none; caller releases), or -1 and fills *err. */
int sl_execute(sl_State *S, const char *code, const sl_Host *host, sl_Value *result, sl_Error *err);

/* Evaluates one expression for a client that shows its value elsewhere
** (Jupyter's user_expressions, the report's inline values): 0 and *result
** (caller releases), or -1 and *err. Code that is not a single expression
** (an assignment, if, for, help, a command with a block, several
** statements) is refused before it runs (SyntaxError); an expression that
** prints, displays (a plot, a table) or clears output fails (ValueError)
** once it has run, its output dropped. */
int sl_evaluate(sl_State *S, const char *code, sl_Value *result, sl_Error *err);

typedef enum { SL_COMPLETE, SL_INCOMPLETE, SL_INVALID } sl_Completeness;
/* Incomplete only where a further line can complete the cell (inside
** brackets or a block, after a line-ending '\'); indent receives the
** suggested indent then ("  "). */
sl_Completeness sl_is_complete(const char *code, char *indent, size_t indent_size);

/* Highlighting: the pieces of a cell as the language's lexer reads them,
** in order and covering the whole text (lang/lex.c). A name may be a
** command (sl_command_find tells). */
typedef enum {
  SL_LEX_TEXT,
  SL_LEX_KEYWORD,
  SL_LEX_NAME,
  SL_LEX_NUMBER,
  SL_LEX_STRING,
  SL_LEX_COMMENT,
  SL_LEX_OPERATOR
} sl_LexClass;
void sl_lex_pieces(const char *code, size_t len, void (*piece)(void *ud, sl_LexClass cls, size_t at, size_t n),
                   void *ud);

/* Completion at byte offset `cursor`. Fills a malloc'd array of malloc'd
** strings; start and end are byte offsets of the text to replace. */
typedef struct sl_Completion {
  char **matches;
  size_t n;
  size_t start, end;
} sl_Completion;
void sl_complete(sl_State *S, const char *code, size_t cursor, sl_Completion *out);
void sl_completion_free(sl_Completion *c);

/* Help for the name under the cursor (command, argument, variable).
** Returns 1 and fills out (text/plain, text/markdown), or 0 if nothing. */
int sl_inspect(sl_State *S, const char *code, size_t cursor, int detail, sl_Bundle *out);

#endif
