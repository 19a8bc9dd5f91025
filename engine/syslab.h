/*
** syslab.h - the engine's public interface: values, the command registry,
** the host that receives output, and the interpreter entry points.
**
** Design. The engine knows nothing of ZeroMQ or Jupyter. Whoever drives it
** (the kernel, `syslab run`, the report generator, unit tests) passes an
** sl_Host: a table of callbacks that receive text streams, rich displays,
** clear-output requests and input prompts. The kernel turns those into
** IOPub messages; `syslab run` writes them to stdout/stderr.
**
** Every command the language knows is described once, in an sl_Command
** record (name, arguments with types, defaults and help). Each domain
** folder's commands.c (and plotting/plot.c) exports an sl_Domain holding a
** NULL-terminated table of them; the registry (lang/registry.c) gathers them. Argument binding, `help`,
** completion, inspection and docs/commands.md are all generated from that
** one description.
**
** Memory: sl_Value is a small tagged union passed by value. Strings, lists,
** records and objects live on the heap with a reference count. A function
** that *returns* an sl_Value hands the caller one reference; arguments are
** borrowed. sl_retain/sl_release adjust counts; releasing a scalar is a no-op.
*/
#ifndef SYSLAB_H
#define SYSLAB_H

#include <stddef.h>
#include <stdint.h>
#include <stdarg.h>

#define SYSLAB_VERSION "0.1.0"
#define SYSLAB_LANGUAGE "syslab"

/* ------------------------------------------------------------------ values */

typedef enum sl_Type {
  SL_NIL = 0,
  SL_BOOL,
  SL_NUMBER,   /* double */
  SL_STRING,   /* immutable UTF-8 */
  SL_LIST,     /* ordered sequence of values */
  SL_RECORD,   /* ordered string-keyed map, e.g. the result of `evaluate` */
  SL_OBJECT    /* engine object with a class: table, dataset, model, tensor... */
} sl_Type;

typedef struct sl_Heap sl_Heap;   /* common header of heap values (refcount) */

typedef struct sl_Value {
  sl_Type type;
  union {
    int b;
    double n;
    sl_Heap *h;
  } u;
} sl_Value;

typedef struct sl_Bundle sl_Bundle;
struct slU_Text;

/* A class of engine objects. `show` fills a mime bundle (text/plain at least)
** for display in a notebook; `field` answers `obj.name` (return 0 and set *out,
** or -1 if there is no such field); `free` releases `data`. */
typedef struct sl_Class {
  const char *name;                       /* "table", "dataset", "model", ... */
  void (*free)(void *data);
  int (*show)(void *data, sl_Bundle *out);
  int (*field)(void *data, const char *name, sl_Value *out);
  const char *const *fields;              /* NULL-terminated, for completion */
  /* answers obj[key] (may be NULL: not indexable): 0 and *out, or -1 with
  ** a message in err ("row 7 is out of range for a table of 5 rows") */
  int (*index)(void *data, sl_Value key, sl_Value *out, char *err, size_t errlen);
  /* optional, for shipping a value to another process and for files
  ** (lang/codec.c): `encode` appends the object's bytes to out (0, or -1
  ** with err); `decode` rebuilds the object from them (NULL with err). A
  ** class without them cannot leave its process. */
  int (*encode)(void *data, struct slU_Text *out, char *err, size_t errlen);
  void *(*decode)(const char *bytes, size_t n, char *err, size_t errlen);
} sl_Class;

sl_Value sl_nil(void);
sl_Value sl_bool(int b);
sl_Value sl_number(double n);
sl_Value sl_string(const char *s);               /* copies */
sl_Value sl_string_len(const char *s, size_t n); /* copies */
sl_Value sl_list_new(void);
sl_Value sl_record_new(void);
sl_Value sl_object_new(const sl_Class *cls, void *data); /* takes ownership of data */

void sl_retain(sl_Value v);
void sl_release(sl_Value v);

const char *sl_typename(sl_Value v);       /* "number", "table", ... */
int sl_truthy(sl_Value v);
int sl_equal(sl_Value a, sl_Value b);

const char *sl_str(sl_Value v);            /* chars of a SL_STRING, else NULL */
size_t sl_strlen(sl_Value v);

size_t sl_list_len(sl_Value list);
sl_Value sl_list_get(sl_Value list, size_t i);            /* borrowed */
void sl_list_push(sl_Value list, sl_Value item);          /* takes a reference */

size_t sl_record_len(sl_Value rec);
const char *sl_record_key(sl_Value rec, size_t i);
sl_Value sl_record_value(sl_Value rec, size_t i);          /* borrowed */
sl_Value sl_record_get(sl_Value rec, const char *key);     /* borrowed, nil if absent */
void sl_record_set(sl_Value rec, const char *key, sl_Value v); /* takes a reference */
void sl_record_remove(sl_Value rec, const char *key);
/* how deeply lists and records nest inside v: 0 for a scalar, 1 for [1, 2] */
size_t sl_value_depth(sl_Value v);
/* the language refuses to build values nested deeper than this */
#define SL_MAX_VALUE_DEPTH 1000

const sl_Class *sl_object_class(sl_Value v);
void *sl_object_data(sl_Value v);
/* data of an object of class `cls`, or NULL if v is something else */
void *sl_object_as(sl_Value v, const sl_Class *cls);

/* Formats a value as text the way `print` does (numbers with %.9g style,
** lists as [a, b], records as {k: v}). Caller frees. */
char *sl_tostring(sl_Value v);
/* Like sl_tostring but strings are quoted, as in the language's source. */
char *sl_repr(sl_Value v);
/* 1 and *out set when the whole of s is a number in the language's grammar
** (123, -4.5, 1e-3, 1_000; an optional sign), else 0: "0x10", "nan", "inf"
** and " 1" are not numbers. */
int sl_parse_number(const char *s, double *out);
/* A count or a number of seconds as a command line or a cell option gives it
** (lang/lex.c): decimal digits only, no sign, fraction, exponent or '_',
** within lo..hi (lo >= 0). 1 and *out set, else 0: "3x", "2.9", "1e9", ""
** and "-1" are refused, never read as their leading digits. */
int sl_parse_whole(const char *s, long lo, long hi, long *out);
/* "Did you mean": the candidate (a NULL-terminated list) closest to name by
** edit distance, when close enough for its length; else NULL (lang/suggest.c,
** the same rule as the language's suggestions) */
const char *sl_closest(const char *name, const char *const *candidates);
/* Highlighting: the pieces of a cell as the language's lexer reads them,
** in order and covering the whole text (lang/lex.c). A name may be a
** command (sl_command_find tells). */
typedef enum {
  SL_LEX_TEXT, SL_LEX_KEYWORD, SL_LEX_NAME, SL_LEX_NUMBER, SL_LEX_STRING, SL_LEX_COMMENT, SL_LEX_OPERATOR
} sl_LexClass;
void sl_lex_pieces(const char *code, size_t len, void (*piece)(void *ud, sl_LexClass cls, size_t at, size_t n),
                   void *ud);
/* Numbers as the language prints them: integers plainly, others with %.9g
** so every float32 value round-trips exactly. */
void sl_format_number(double x, char *out, size_t size);
/* x as the language prints it, for messages: SL_NUM(x) is a string that
** lives to the end of the enclosing block ("4294967296", "nan", "0.25"),
** so an error says what the user wrote, not %g's 4.2949673e+09 or -nan */
const char *sl_number_text(double x, char *buf, size_t size);
#define SL_NUM(x) sl_number_text((x), (char[40]){0}, 40)
/* The fewest significant digits that read back as the same double
** ("0.1", "9007199254740992", "1e+300", "nan"): the exact value in text
** (lang/format.c). */
void sl_format_exact(double x, char *out, size_t size);
/* x by a subset of Python's format spec, [+|-][z][,|_][.precision][f|e|g|%|d],
** as Python's format() writes it; no type: as the language prints it.
** Caller frees; NULL with err for a spec it does not read or a 'd' of a
** number that is not whole. sl_format_spec_check reads the spec alone. */
char *sl_format_spec(double x, const char *spec, char *err, size_t errlen);
int sl_format_spec_check(const char *spec, char *err, size_t errlen);

/* -------------------------------------------------------- growable string */

/* A growable string, for building help pages, tables, scripts and reports
** piece by piece (lang/text.c). Start from {0}; it is always NUL-terminated
** once anything was added; the owner frees `s`. */
typedef struct slU_Text {
  char *s;
  size_t n, cap;
} slU_Text;

void slU_add_len(slU_Text *t, const char *s, size_t n);
void slU_add(slU_Text *t, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* seconds on the monotonic clock (lang/clock.c): for timings and deadlines */
double slU_now(void);

/* ------------------------------------------------------------ value codec */

/* Values as bytes (lang/codec.c), to ship them to a worker process and to
** keep them in files: nil, booleans, numbers, strings, lists and records,
** and objects whose class has encode/decode (tables, data sets by their
** definition, models with their weights). Byte order is fixed (little
** endian), so the bytes mean the same on every machine. */
int sl_encode(sl_Value v, slU_Text *out, char *err, size_t errlen);
/* 0 and a new value in *out, or -1 with err (truncated, foreign, unknown class) */
int sl_decode(const char *bytes, size_t n, sl_Value *out, char *err, size_t errlen);

/* A file holds a header (magic "SYSLAB\0V", format version, length, CRC-32)
** and one encoded value. Saving writes a temporary name and renames it;
** loading refuses a file that is not one, is truncated or was altered. */
int sl_save_file(sl_Value v, const char *path, char *err, size_t errlen);
int sl_load_file(const char *path, sl_Value *out, char *err, size_t errlen);

/* Fixed-width pieces for encoders, and a reader that checks every length:
** a read past the end sets `bad` and returns zeros. */
void slU_put_u8(slU_Text *t, unsigned v);
void slU_put_u32(slU_Text *t, uint32_t v);
void slU_put_u64(slU_Text *t, uint64_t v);
void slU_put_f32(slU_Text *t, float v);
void slU_put_f64(slU_Text *t, double v);
void slU_put_str(slU_Text *t, const char *s);            /* u32 length, then the bytes */
void slU_put_bytes(slU_Text *t, const void *p, size_t n); /* u64 length, then the bytes */

typedef struct slU_Reader {
  const char *p;
  size_t n, at;
  int bad;
} slU_Reader;
unsigned slU_get_u8(slU_Reader *r);
uint32_t slU_get_u32(slU_Reader *r);
uint64_t slU_get_u64(slU_Reader *r);
float slU_get_f32(slU_Reader *r);
double slU_get_f64(slU_Reader *r);
/* copies a string into out (size bytes, truncating); 0, or -1 if bad */
int slU_get_str(slU_Reader *r, char *out, size_t size);
/* a pointer into the reader's bytes and their length, or NULL if bad */
const char *slU_get_bytes(slU_Reader *r, size_t *n);
/* reads n floats (stored as f32) into out */
void slU_get_f32s(slU_Reader *r, float *out, size_t n);
void slU_put_f32s(slU_Text *t, const float *v, size_t n);

/* ------------------------------------------------------------ mime bundles */

#define SL_BUNDLE_MAX 8

typedef struct sl_MimePart {
  char *mime;       /* "text/plain", "image/png", ... */
  char *data;       /* raw bytes; binary for image/png (the kernel base64s it) */
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

typedef enum sl_ArgType {
  SL_ARG_ANY = 0,
  SL_ARG_NUMBER,
  SL_ARG_INT,      /* number that must be integral */
  SL_ARG_BOOL,
  SL_ARG_STRING,
  SL_ARG_ENUM,     /* string from `choices`; a bare word naming a choice is accepted */
  SL_ARG_LIST,
  SL_ARG_RECORD,
  SL_ARG_OBJECT,   /* an object of class named `cls` */
  SL_ARG_BLOCK     /* a { ... } block, run by the command (sweeps) */
} sl_ArgType;

enum {
  SL_POSITIONAL = 1 << 0,  /* may be given without name=, in declaration order */
  SL_REQUIRED   = 1 << 1,
  SL_BAREWORD   = 1 << 2,  /* a bare name is taken as its text (help topics, column names) unless
                              it is a variable holding a string, which stands for that string */
  SL_VARIADIC   = 1 << 3   /* SL_ARG_LIST, positional: collects every remaining positional argument */
};

#define SL_MAX_ARGS 40

typedef struct sl_Arg {
  const char *name;
  sl_ArgType type;
  unsigned flags;
  const char *defval;              /* default written in the language, or NULL */
  const char *help;
  const char *const *choices;      /* SL_ARG_ENUM: NULL-terminated */
  const char *cls;                 /* SL_ARG_OBJECT: class name */
} sl_Arg;

typedef struct sl_Call sl_Call;
typedef struct sl_Error sl_Error;  /* a cell's error, described with the driver API below */
/* Returns 0 and sets *result (a new reference; leave nil for no value), or
** -1 after reporting an error with sl_error/sl_arg_error. */
typedef int (*sl_CommandFn)(sl_Call *call, sl_Value *result);

enum {
  SL_CMD_EXTRA_KEYWORDS = 1 << 0,  /* accepts name=value pairs not in args (sweep, row) */
  /* may run for more than a second: it polls sl_interrupted() in its inner
  ** loops (per step, row, node or timed repetition) and, interrupted, returns
  ** sl_interrupted_error with no result. tests/unit/test_interrupt_commands.c
  ** runs every command so marked at a size that takes seconds, interrupts it
  ** and wants it stopped within a second; a marked command without a case
  ** there fails that test. */
  SL_CMD_LONG = 1 << 1
};

typedef struct sl_Command {
  const char *name;
  const char *group;      /* topic inside its domain ("core", "display", "data", "model", ...):
                             the `help` index lists a domain's commands under these */
  const char *summary;    /* one line */
  const char *help;       /* longer text, may span lines */
  const char *example;    /* one or more lines of the language */
  sl_CommandFn fn;
  unsigned flags;
  sl_Arg args[SL_MAX_ARGS];   /* terminated by an entry with name == NULL */
} sl_Command;

/* Each folder of the engine (and plotting/) registers its commands as one
** domain: a name, a paragraph saying what the domain is for, and a table of
** commands terminated by an entry with name == NULL. The engine's start
** (sl_init, engine/engine.c) lists the domains in the order of the layers
** and hands them to the registry (lang/registry.c). */
typedef struct sl_Domain {
  const char *name;                /* "Language", "Tables and sweeps", ... */
  const char *intro;               /* one paragraph, for help and docs/commands.md */
  const sl_Command *commands;
  const sl_Class *const *classes;  /* the object classes it defines (NULL-terminated, or NULL) */
  /* run once by sl_init: where a domain hooks itself into the layers below
  ** it (compress/ gives the graph its transform decoder); NULL: nothing */
  void (*open)(void);
} sl_Domain;

extern const sl_Domain slB_domain;   /* engine/lang/commands.c: print, help, sleep, input, display... */
extern const sl_Domain slT_domain;   /* engine/table/commands.c: tables, sweep, row, csv */
extern const sl_Domain slP_domain;   /* plotting/plot.c: plot */
extern const sl_Domain slK_domain;   /* engine/kernels/commands.c: bench, machine, roofline, attention memory, version */
extern const sl_Domain slM_domain;   /* engine/graph/commands.c: datasets, models, graphs, passes, training */
extern const sl_Domain slL_domain;   /* engine/systems/commands.c: language models, memory, profiles, precision, fusion */
extern const sl_Domain slQ_domain;   /* engine/compress/commands.c: quantisation, pruning */
extern const sl_Domain slS_domain;   /* engine/search/commands.c: studies, samplers, pruning of trials */

/* Starts the engine: registers every domain, in the order of the layers,
** and runs their open hooks. Call it once before anything else (more calls
** do nothing); every program that drives the engine does. */
void sl_init(void);
/* for sl_init: the registry's domains (lang/registry.c); whether it has them */
void sl_registry_use(const sl_Domain *const *domains, size_t n);
int sl_registry_ready(void);

/* the domains in layer order: i = 0, 1, ... until NULL */
const sl_Domain *sl_domain_at(size_t i);
/* the domain a command belongs to */
const sl_Domain *sl_command_domain(const sl_Command *cmd);

const sl_Command *sl_command_find(const char *name);
/* iterate over every command: i = 0, 1, ... until NULL */
const sl_Command *sl_command_at(size_t i);
const sl_Arg *sl_command_arg(const sl_Command *cmd, const char *name);

/* ---------------------------------------------------------- inside a call */

/* Bound argument values (defaults applied). Borrowed; nil when not given
** and no default. Types were checked against the registry before fn runs. */
sl_Value sl_arg(sl_Call *call, const char *name);
int sl_arg_given(sl_Call *call, const char *name);
double sl_arg_number(sl_Call *call, const char *name);
const char *sl_arg_string(sl_Call *call, const char *name);   /* STRING and ENUM */
void *sl_arg_object(sl_Call *call, const char *name, const sl_Class *cls);
/* extra name=value pairs for SL_CMD_EXTRA_KEYWORDS commands, in call order */
size_t sl_call_extra_count(sl_Call *call);
const char *sl_call_extra_name(sl_Call *call, size_t i);
sl_Value sl_call_extra_value(sl_Call *call, size_t i);

/* Errors: the message should name what was wrong and what is allowed.
** sl_arg_error points the error's line:column at that argument. Both
** return -1 so a command can `return sl_error(call, ...)`. */
int sl_error(sl_Call *call, const char *fmt, ...);
int sl_arg_error(sl_Call *call, const char *arg, const char *fmt, ...);

/* output from inside a command */
void sl_printf(sl_Call *call, const char *fmt, ...);
void sl_eprintf(sl_Call *call, const char *fmt, ...);
void sl_display(sl_Call *call, const sl_Bundle *b);
const sl_Host *sl_call_host(sl_Call *call);

/* Progress: shown in place (update_display_data in the kernel, a \r line on
** stderr in `syslab run`). total may be 0 when unknown. */
typedef struct sl_Progress sl_Progress;
sl_Progress *sl_progress_begin(sl_Call *call, const char *label, double total);
void sl_progress_update(sl_Progress *p, double done, const char *detail);
void sl_progress_end(sl_Progress *p);

/* Variables and blocks, for commands that run a block (sweep). */
void sl_setvar(sl_Call *call, const char *name, sl_Value v);  /* takes a reference */
sl_Value sl_getvar(sl_Call *call, const char *name);          /* borrowed, nil if unset */
void sl_unsetvar(sl_Call *call, const char *name);
/* runs the block argument `arg`; returns 0, or -1 on error/interrupt
** (the error is already recorded in the call) */
int sl_run_block(sl_Call *call, const char *arg);
/* Runs the block argument `arg` as sl_run_block does, but an error the
** block raises is the caller's instead of the cell's (a search records a
** failed trial and goes on): returns 0, or -1 with the error moved into
** *caught (its name, message, line and column; free it with
** sl_error_free) and the cell going on as if the block had not failed.
** sl_raise makes a caught error the cell's again. */
int sl_run_protected(sl_Call *call, const char *arg, sl_Error *caught);
/* records e as the cell's error, where e says it happened (unless the cell
** has an error already: the first one explains); returns -1 */
int sl_raise(sl_Call *call, const sl_Error *e);
/* the cell's error so far, its first (ename "" while there is none) */
const sl_Error *sl_call_error(sl_Call *call);
/* per-call scratch slot a block command can use for its collector (sweep
** keeps the table that `row` appends to). Nested blocks see the innermost. */
void sl_set_collector(sl_Call *call, sl_Value table);   /* borrowed for the block's duration */
sl_Value sl_get_collector(sl_Call *call);

/* ---------------------------------------------------------------- interrupt */

/* Async-signal-safe. Long work polls sl_interrupted() at safe points
** (batch boundaries, sleep slices) and stops cleanly. */
void sl_interrupt(void);
int sl_interrupted(void);
void sl_clear_interrupt(void);
/* the error a command returns when it stops on interrupt */
int sl_interrupted_error(sl_Call *call);

/* ------------------------------------------------------ files a user names */

/* Every file a user names (a command's path, the command line's files, a
** notebook, a connection file) is opened here and nowhere else (lang/file.c):
** without blocking, and only when it is a regular file, checked again on
** the descriptor. `flags` are open(2)'s: O_RDONLY, or O_WRONLY with O_CREAT,
** O_EXCL, O_TRUNC, O_APPEND or O_NOFOLLOW. Returns the descriptor (close on
** exec) and the file's size in *size (may be NULL), or -1 with err naming
** the path, what it is and what is allowed: `what` names what the file
** should be ("a CSV file"). A FIFO, socket, device or folder is refused
** without being opened. */
int slF_open(const char *path, int flags, const char *what, size_t *size, char *err, size_t errlen);
/* The whole of a file a user named, through slF_open (NUL-terminated, caller
** frees; *len without the terminator), or NULL with err. Also refuses a file
** too large for the memory budget and, when text=1, one holding NUL bytes;
** reads no more than the size the file had when opened; stops when
** interrupted. */
char *slF_read_file(const char *path, const char *what, int text, size_t *len, char *err, size_t errlen);
/* n bytes written whole to a file a user named, or nothing: under a
** temporary name beside it (through slF_open), flushed to disk, then renamed
** over path. 0, or -1 with err naming the path and why. */
int slF_write_file(const char *path, const void *bytes, size_t n, const char *what, char *err, size_t errlen);

/* ----------------------------------------------------------- memory budget */

/* Bytes one piece of work may use: the smallest of the memory the machine
** has available now, what an address-space limit (ulimit -v) leaves the
** process, and SYSLAB_MEMORY_BUDGET (bytes, or with a K, M or G suffix)
** when set (lang/budget.c); and which of them it is, in words. */
double sl_memory_budget(void);
const char *sl_memory_budget_source(void);
/* 0 when `bytes` fits the budget; otherwise reports an error naming `what`,
** the predicted size and the budget (at argument `arg` when not NULL) and
** returns -1. Call it before allocating anything large. */
int sl_memory_check(sl_Call *call, const char *arg, double bytes, const char *what);
/* 1 when `bytes` would not fit, with that sentence written to msg (for
** callers that report their own kind of error); 0 when it fits. */
int sl_memory_exceeds(double bytes, const char *what, char *msg, size_t size);
/* "1.50 GiB" */
void sl_format_bytes(double bytes, char *out, size_t size);
/* ------------------------------------------------------ the program's files */

/* A file or folder that ships with the program, by its place under the
** install prefix ("share/syslab/kernelspec", "lib/syslab/syslab_mpi.so"):
** found beside the running program (<prefix>/bin/syslab), else at
** `build_tree`, its place for a program run from its build folder (NULL
** in a program built for installation; lang/layout.c). 0 with its path in
** out; -1 with out the place it would have under the prefix, for messages. */
int sl_program_file(const char *installed, const char *build_tree, char *out, size_t size);

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
typedef void (*sl_TaskRun)(void *ud, long id, const char *task, size_t n, slU_Text *result);
typedef void (*sl_TaskDone)(void *ud, long id, const char *result, size_t n);
int sl_job_farm(size_t n, char *const *tasks, const size_t *lens, sl_TaskRun run, sl_TaskDone done, void *ud,
                char *err, size_t errlen);

/* -------------------------------------------------------------- interpreter */

typedef struct sl_State sl_State;

struct sl_Error {
  char ename[64];      /* "SyntaxError", "NameError", "TypeError", "ArgumentError",
                          "RuntimeError", "Interrupt", ... */
  char *evalue;        /* one-line message */
  int line, col;       /* 1-based location in the cell, 0 if unknown */
  char *traceback;     /* readable multi-line text: the source line with a caret */
};

void sl_error_free(sl_Error *e);

sl_State *sl_new(void);
void sl_free(sl_State *S);
/* a session variable (borrowed), nil if unset */
sl_Value sl_state_get(sl_State *S, const char *name);

/* Runs a cell. Returns 0 and sets *result to the value of a final bare
** expression (nil if none; caller releases), or -1 and fills *err. */
int sl_execute(sl_State *S, const char *code, const sl_Host *host,
               sl_Value *result, sl_Error *err);

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


/* Documentation generated from the registry, for docs/commands.md. Caller frees. */
char *sl_registry_markdown(void);

#endif
