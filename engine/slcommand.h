/*
** slcommand.h - the command-author API: what a command's implementation
** uses to declare itself, read its arguments, report and run.
**
** Design. syslab.h is what a program driving the engine needs (a session,
** cells, values, output through a host); this header is what the engine's
** own commands need on top of it, as Lua keeps lauxlib.h (helpers for
** library writers) apart from lua.h (the embedding API). Files of the
** engine's folders (engine/lang, table, kernels, graph, systems, compress,
** search), plotting/ and engine/engine.c include it where they use it; the
** drivers (kernel/, report/, cli/) do not, and tests/unit/test_layers.c
** refuses it there.
**
** Every command the language knows is described once, in an sl_Command
** record (name, arguments with types, defaults and help). Each domain
** folder's commands.c (and plotting/plot.c) exports an sl_Domain holding a
** NULL-terminated table of them; the registry (lang/registry.c) gathers
** them. Argument binding, `help`, completion, inspection and
** docs/commands.md are all generated from that one description.
**
** A command runs inside an sl_Call (lang/api.c): it reads its bound
** arguments, writes output and progress, runs its block, checks what it
** will allocate against the memory budget, and returns 0 with a result or
** -1 after recording an error that names what was wrong and what is allowed.
** It includes syslab.h (values, bundles, the host, errors) and slutil.h
** (the growable string and the byte codec its classes encode with).
*/
#ifndef SLCOMMAND_H
#define SLCOMMAND_H

#include "syslab.h"
#include "slutil.h"

/* ----------------------------------------------------------------- objects */

/* A class of engine objects. `show` fills a mime bundle (text/plain at least)
** for display in a notebook; `field` answers `obj.name` (return 0 and set *out,
** or -1 if there is no such field); `free` releases `data`. */
typedef struct sl_Class {
  const char *name; /* "table", "dataset", "model", ... */
  void (*free)(void *data);
  int (*show)(void *data, sl_Bundle *out);
  int (*field)(void *data, const char *name, sl_Value *out);
  const char *const *fields; /* NULL-terminated, for completion */
  /* answers obj[key] (may be NULL: not indexable): 0 and *out, or -1 with
  ** a message in err ("row 7 is out of range for a table of 5 rows") */
  int (*index)(void *data, sl_Value key, sl_Value *out, char *err, size_t errlen);
  /* optional, for shipping a value to another process and for files
  ** (lang/codec.c): `encode` appends the object's bytes to out (0, or -1
  ** with err); `decode` rebuilds the object from them (NULL with err). A
  ** class without them cannot leave its process. */
  int (*encode)(void *data, slU_Text *out, char *err, size_t errlen);
  void *(*decode)(const char *bytes, size_t n, char *err, size_t errlen);
} sl_Class;

sl_Value sl_object_new(const sl_Class *cls, void *data); /* takes ownership of data */
const sl_Class *sl_object_class(sl_Value v);
void *sl_object_data(sl_Value v);
/* data of an object of class `cls`, or NULL if v is something else */
void *sl_object_as(sl_Value v, const sl_Class *cls);

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

/* --------------------------------------------------------------- registry */

typedef enum sl_ArgType {
  SL_ARG_ANY = 0,
  SL_ARG_NUMBER,
  SL_ARG_INT, /* number that must be integral */
  SL_ARG_BOOL,
  SL_ARG_STRING,
  SL_ARG_ENUM, /* string from `choices`; a bare word naming a choice is accepted */
  SL_ARG_LIST,
  SL_ARG_RECORD,
  SL_ARG_OBJECT, /* an object of class named `cls` */
  SL_ARG_BLOCK   /* a { ... } block, run by the command (sweeps) */
} sl_ArgType;

enum {
  SL_POSITIONAL = 1 << 0, /* may be given without name=, in declaration order */
  SL_REQUIRED = 1 << 1,
  SL_BAREWORD = 1 << 2, /* a bare name is taken as its text (help topics, column names) unless
                              it is a variable holding a string, which stands for that string */
  SL_VARIADIC = 1 << 3  /* SL_ARG_LIST, positional: collects every remaining positional argument */
};

#define SL_MAX_ARGS 40

typedef struct sl_Arg {
  const char *name;
  sl_ArgType type;
  unsigned flags;
  const char *defval; /* default written in the language, or NULL */
  const char *help;
  const char *const *choices; /* SL_ARG_ENUM: NULL-terminated */
  const char *cls;            /* SL_ARG_OBJECT: class name */
} sl_Arg;

typedef struct sl_Call sl_Call;
/* Returns 0 and sets *result (a new reference; leave nil for no value), or
** -1 after reporting an error with sl_error/sl_arg_error. */
typedef int (*sl_CommandFn)(sl_Call *call, sl_Value *result);

enum {
  SL_CMD_EXTRA_KEYWORDS = 1 << 0, /* accepts name=value pairs not in args (sweep, row) */
  /* may run for more than a second: it polls sl_interrupted() in its inner
  ** loops (per step, row, node or timed repetition) and, interrupted, returns
  ** sl_interrupted_error with no result. tests/unit/test_interrupt_commands.c
  ** runs every command so marked at a size that takes seconds, interrupts it
  ** and wants it stopped within a second; a marked command without a case
  ** there fails that test. */
  SL_CMD_LONG = 1 << 1
};

struct sl_Command { /* typedef'd in syslab.h, where a driver asks sl_command_find */
  const char *name;
  const char *group;   /* topic inside its domain ("core", "display", "data", "model", ...):
                             the `help` index lists a domain's commands under these */
  const char *summary; /* one line */
  const char *help;    /* longer text, may span lines */
  const char *example; /* one or more lines of the language */
  sl_CommandFn fn;
  unsigned flags;
  sl_Arg args[SL_MAX_ARGS]; /* terminated by an entry with name == NULL */
};

/* Each folder of the engine (and plotting/) registers its commands as one
** domain: a name, a paragraph saying what the domain is for, and a table of
** commands terminated by an entry with name == NULL. The engine's start
** (sl_init, engine/engine.c) lists the domains in the order of the layers
** and hands them to the registry (lang/registry.c). */
typedef struct sl_Domain {
  const char *name;  /* "Language", "Tables and sweeps", ... */
  const char *intro; /* one paragraph, for help and docs/commands.md */
  const sl_Command *commands;
  const sl_Class *const *classes; /* the object classes it defines (NULL-terminated, or NULL) */
  /* run once by sl_init: where a domain hooks itself into the layers below
  ** it (compress/ gives the graph its transform decoder); NULL: nothing */
  void (*open)(void);
} sl_Domain;

extern const sl_Domain slB_domain; /* engine/lang/commands.c: print, help, sleep, input, display... */
extern const sl_Domain slT_domain; /* engine/table/commands.c: tables, sweep, row, csv */
extern const sl_Domain slP_domain; /* plotting/plot.c: plot */
extern const sl_Domain slK_domain; /* engine/kernels/commands.c: bench, machine, roofline, attention memory, version */
extern const sl_Domain slM_domain; /* engine/graph/commands.c: datasets, models, graphs, passes, training */
extern const sl_Domain slL_domain; /* engine/systems/commands.c: language models, memory, profiles, precision, fusion */
extern const sl_Domain slQ_domain; /* engine/compress/commands.c: quantisation, pruning */
extern const sl_Domain slS_domain; /* engine/search/commands.c: studies, samplers, pruning of trials */

/* for sl_init: the registry's domains (lang/registry.c); whether it has them */
void sl_registry_use(const sl_Domain *const *domains, size_t n);
int sl_registry_ready(void);

/* the domains in layer order: i = 0, 1, ... until NULL */
const sl_Domain *sl_domain_at(size_t i);
/* the domain a command belongs to */
const sl_Domain *sl_command_domain(const sl_Command *cmd);

/* iterate over every command: i = 0, 1, ... until NULL */
const sl_Command *sl_command_at(size_t i);
const sl_Arg *sl_command_arg(const sl_Command *cmd, const char *name);

/* ---------------------------------------------------------- inside a call */

/* Bound argument values (defaults applied). Borrowed; nil when not given
** and no default. Types were checked against the registry before fn runs. */
sl_Value sl_arg(sl_Call *call, const char *name);
int sl_arg_given(sl_Call *call, const char *name);
double sl_arg_number(sl_Call *call, const char *name);
const char *sl_arg_string(sl_Call *call, const char *name); /* STRING and ENUM */
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
void sl_setvar(sl_Call *call, const char *name, sl_Value v); /* takes a reference */
sl_Value sl_getvar(sl_Call *call, const char *name);         /* borrowed, nil if unset */
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
void sl_set_collector(sl_Call *call, sl_Value table); /* borrowed for the block's duration */
sl_Value sl_get_collector(sl_Call *call);

/* the error a command returns when it stops on interrupt (sl_interrupted(),
** syslab.h, says when) */
int sl_interrupted_error(sl_Call *call);

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

#endif
