/*
** search.h - studies, trials and samplers: what the search folder's files
** share (docs/search.md describes the language and the exact semantics).
**
** A study is a list of trials and the search space their suggestions
** built. Parameters are kept in Optuna's internal form: the value itself
** for int and float parameters (not its logarithm), the index of the
** choice for categorical ones. Every sampler draws from MT19937 streams
** (graph/mt19937.h) seeded as Optuna seeds numpy's RandomState, so the
** random and grid samplers, and TPE's start-up trials, propose exactly what
** Optuna 4.2 proposes for the same seed.
*/
#ifndef SYSLAB_SEARCH_H
#define SYSLAB_SEARCH_H

#include <stddef.h>
#include <stdint.h>

#include "graph/mt19937.h"
#include "slcommand.h"

#define SLS_MAX_OBJECTIVES 8
#define SLS_NAME_MAX 64
/* worker processes of one search, at most (workers=N) */
#define SLS_MAX_WORKERS 4096

typedef enum { SLS_FLOAT, SLS_INT, SLS_CATEGORICAL } slS_Kind;

typedef struct slS_Dist {
  slS_Kind kind;
  double low, high, step; /* step 0: a continuous float */
  int log;
  sl_Value choices; /* categorical: a list of strings, numbers, booleans or nil (owned) */
  int nchoices;
} slS_Dist;

typedef struct slS_Param {
  char name[SLS_NAME_MAX];
  slS_Dist dist;
} slS_Param;

typedef enum { SLS_RUNNING, SLS_COMPLETE, SLS_PRUNED, SLS_FAILED } slS_State;

typedef struct slS_Trial {
  int number;
  slS_State state;
  int nparams, capparams;
  int *param;       /* index into the study's space, in suggestion order */
  double *internal; /* the value in internal form */
  int nvalues;
  double values[SLS_MAX_OBJECTIVES];
  int ninter, capinter;
  int *steps; /* intermediate reports, in report order */
  double *inter;
  double seconds;
  char *message;     /* failed: why */
  long grid_id;      /* grid sampler: the grid point, or -1 */
  uint64_t draws[2]; /* sampler streams' positions after the trial (journal) */
} slS_Trial;

enum { SLS_NO_PRUNER, SLS_MEDIAN };

typedef struct slS_Sampler slS_Sampler;

typedef struct slS_Study {
  int nobj;
  int maximize[SLS_MAX_OBJECTIVES];
  char objnames[SLS_MAX_OBJECTIVES][SLS_NAME_MAX];
  slS_Param *space;
  int nspace, capspace;
  slS_Trial *trials;
  int ntrials, captrials;
  /* sampler */
  const slS_Sampler *sampler;
  void *state; /* the sampler's own, which only its file reads */
  uint32_t seed;
  slM_Mt rng;  /* the sampler's RandomState(seed) */
  slM_Mt rng2; /* TPE and NSGA-II: their inner RandomSampler(seed) */
  /* pruner */
  int pruner;
  int prune_startup, prune_warmup, prune_interval, prune_min_trials;
  /* run */
  char *journal;
  double seconds; /* wall time of every trial together */
  double elapsed; /* wall time of the search command, sampling and bookkeeping included */
} slS_Study;

extern const sl_Class slS_study_class;

/* ---------------------------------------------------------------- study.c */
slS_Study *slS_study_new(void);
void slS_study_free(slS_Study *st);
slS_Trial *slS_trial_new(slS_Study *st); /* appends a RUNNING trial */
void slS_trial_drop_last(slS_Study *st); /* removes the last (unfinished) trial */
/* adds name with d (taking d's choices reference) or checks it matches the
** recorded one; -1 with err naming both when they differ */
int slS_space_add(slS_Study *st, const char *name, slS_Dist *d, char *err, size_t errlen);
void slS_dist_free(slS_Dist *d);
/* "int 16..256 step 16", "float 1e-05..0.1 log", "categorical [a, b]" */
void slS_dist_describe(const slS_Dist *d, char *out, size_t size);
int slS_dist_single(const slS_Dist *d);
/* the internal value of a trial's parameter p; 0 if the trial lacks it */
int slS_trial_param(const slS_Trial *t, int p, double *internal);
void slS_trial_set_param(slS_Trial *t, int p, double internal);
void slS_trial_report(slS_Trial *t, int step, double value);
/* the external value (number, or the choice) of an internal one; a new reference */
sl_Value slS_external(const slS_Dist *d, double internal);
/* the best COMPLETE trial (single objective), or NULL */
const slS_Trial *slS_best(const slS_Study *st);
const char *slS_state_name(slS_State s);
/* the study's tables; new references */
sl_Value slS_trials_table(const slS_Study *st);
sl_Value slS_running_best(const slS_Study *st);
sl_Value slS_pareto_table(const slS_Study *st);
sl_Value slS_params_record(const slS_Study *st, const slS_Trial *t);

/* ------------------------------------------------------------- samplers.c */

/* A sampler is described once, by its record: its name, its options and
** its part of the journal's header, and the calls every trial and every
** suggestion go through. Its state is its file's own (st->state, `size`
** bytes, zeroed, its options set), so no other file reads it. `search`'s
** choices and help, the study's `sampler` and the journal take the names
** and options from slS_samplers; adding a sampler is its record and file,
** a line there, and its tests. */

/* an integer option of a sampler: an option of `search` (whose help names
** the sampler before `help`), a key of the sampler's part of the journal's
** header, and an int at `offset` in the sampler's state */
typedef struct slS_Option {
  const char *name;
  const char *defval; /* as the language writes it */
  double lo, hi;      /* the whole numbers allowed */
  const char *help;
  size_t offset;
} slS_Option;

enum {
  SLS_LEARNS = 1 << 0,        /* what it draws depends on the finished trials */
  SLS_ONE_OBJECTIVE = 1 << 1, /* it optimises one objective only */
  SLS_AUTO_ONE = 1 << 2,      /* sampler=auto with one objective */
  SLS_AUTO_MANY = 1 << 3,     /* sampler=auto with several */
  SLS_EXACT = 1 << 4          /* it proposes exactly Optuna's trials for a seed (tests/python/test_search.py) */
};

struct slS_Sampler {
  const char *name;  /* sampler=NAME, the study's `sampler`, the journal's */
  const char *title; /* as prose writes it ("TPE") */
  const char *help;  /* what search's help says of it besides its flags, or NULL */
  unsigned flags;
  const slS_Option *options; /* ended by a NULL name; NULL: none */
  size_t size;               /* of its state */
  /* what search's name=[values] keywords give it ("a grid"), and how it
  ** takes them (n may be 0); NULL: it takes none */
  const char *extras;
  int (*take_extras)(slS_Study *st, size_t n, const char *const *names, const sl_Value *values, char *err,
                     size_t errlen);
  void (*init)(slS_Study *st);                 /* the streams are seeded; NULL: nothing more */
  void (*before)(slS_Study *st, slS_Trial *t); /* a trial starts; NULL: nothing */
  /* the internal value of parameter p (not single-valued) for trial t; -1 with err */
  int (*sample)(slS_Study *st, slS_Trial *t, int p, double *internal, char *err, size_t errlen);
  /* a sampler whose trials are the points of a finite set (each trial's
  ** grid_id): how many there are; NULL: its trials are not points */
  size_t (*points)(const slS_Study *st);
  /* its part of the journal's header beside its options (the grid's lists),
  ** a record of values; NULL: none */
  sl_Value (*header)(const slS_Study *st);
  /* the stream outputs one parameter may take beyond a random draw (TPE's
  ** candidates), for the journal's bound on them; NULL: none */
  double (*extra_draws)(const slS_Study *st);
  void (*free)(void *state); /* what its state points to; NULL: nothing */
};

#define SLS_MAX_SAMPLERS 16
/* every sampler, in the order help lists them; NULL-terminated */
extern const slS_Sampler *const slS_samplers[];
extern const slS_Sampler slS_random_sampler, slS_grid_sampler, slS_tpe_sampler, slS_nsga2_sampler;

/* the sampler of that name, or NULL */
const slS_Sampler *slS_sampler_find(const char *name);
/* sampler=auto: the one for one objective, or for several */
const slS_Sampler *slS_sampler_auto(int nobj);
/* makes s st's sampler, with a new state and its options at their defaults */
void slS_sampler_use(slS_Study *st, const slS_Sampler *s);
/* sets an option of st's sampler; -1 with err when it has none of that
** name or v is not a whole number in its range */
int slS_sampler_option(slS_Study *st, const char *name, double v, char *err, size_t errlen);
/* the value of an option of st's sampler (its journal header) */
int slS_sampler_option_value(const slS_Study *st, const slS_Option *o);
/* search's name=[values] keywords, for a sampler that takes them; -1 with err */
int slS_sampler_extras(slS_Study *st, size_t n, const char *const *names, const sl_Value *values, char *err,
                       size_t errlen);
/* seeds the streams and readies the sampler (the grid shuffles); its settings must be set first */
void slS_sampler_init(slS_Study *st);
/* called when trial t starts (grid: assigns its point) */
void slS_before_trial(slS_Study *st, slS_Trial *t);
/* the internal value of parameter p for trial t; -1 with err (grid: a name not in the grid) */
int slS_sample(slS_Study *st, slS_Trial *t, int p, double *internal, char *err, size_t errlen);
/* a sampler of points (the grid) has none left to visit */
int slS_sampler_done(const slS_Study *st);
/* the trials a search of `trials` will have run when it ends: a grid stops
** at its last unvisited point (progress counts to it) */
int slS_trials_planned(const slS_Study *st, int trials);

/* --------------------------------------------------------------- random.c */
/* Optuna's RandomSampler draw for one parameter (numerics §6.3) */
double slS_random_draw(slM_Mt *rng, const slS_Dist *d);

/* --------------------------------------------------------------- pruner.c */
/* median pruner (numerics §6.5): 1 when trial t should stop now */
int slS_should_prune(const slS_Study *st, const slS_Trial *t);

/* ------------------------------------------------------------------ run.c */
/* a trial being run: the innermost search block's (searches may nest) */
typedef struct slS_Active {
  slS_Study *st;
  slS_Trial *t;
  int pruned; /* the pruner stopped the trial */
  int fatal;  /* the error belongs to the search, not to the trial */
  int has_objective;
  struct slS_Active *outer;
} slS_Active;

/* the trial the commands inside a search block belong to, or NULL outside one */
slS_Active *slS_active(void);
/* runs the search block as trial t (the last of st) and records its outcome;
** -1 when the search must stop (the trial is dropped) */
int slS_run_trial(sl_Call *call, slS_Study *st, slS_Trial *t);

/* --------------------------------------------------------------- remote.c */
/* distributed searches (dist.h carries the processes and the protocol) */
enum { SLS_SERIAL, SLS_COORDINATOR, SLS_WORKER };
/* which part this process plays in the search being called; -1 with err */
int slS_search_mode(sl_Call *call, char *err, size_t errlen);
/* rank 0: hands trials to the workers until `trials` are finished (or the
** grid is done, or the timeout passed); the same study as a serial run for
** the random and grid samplers. 0, or -1 after an error in the call. */
int slS_search_coordinate(sl_Call *call, slS_Study *st, int trials, double timeout, sl_Progress *bar);
/* a worker rank: evaluates trials until the coordinator is done, then
** receives the finished study into st */
int slS_search_work(sl_Call *call, slS_Study *st);
/* inside a worker's trial: the coordinator samples and prunes */
int slS_remote_trial(const slS_Trial *t);
int slS_remote_sample(const char *name, const slS_Dist *d, double *internal, char *err, size_t errlen);
int slS_remote_report(int step, double value, int *prune, char *err, size_t errlen);

/* -------------------------------------------------------------- journal.c */
/* opens or creates the journal: loads its finished trials into st (which
** must have its options set); -1 with err for a foreign or unreadable file.
** *warning receives a malloc'd note about a torn last line, or NULL. */
int slS_journal_open(slS_Study *st, const char *path, char **warning, char *err, size_t errlen);
/* the journal's lines in text[0..len) into st (its options set, its streams
** seeded), every field checked against the header and the space; `path`
** names the file in messages. *good_end: the bytes up to the end of the
** last complete line; *warning: a note about a torn last line (malloc'd),
** or NULL. 0, or -1 with err naming the line and the field. */
int slS_journal_load(slS_Study *st, const char *text, size_t len, const char *path, size_t *good_end, char **warning,
                     char *err, size_t errlen);
/* advances the streams to where the last loaded trial left them; -1 when interrupted */
int slS_journal_restore(slS_Study *st);
/* appends a finished trial, or one intermediate report, and fsyncs */
int slS_journal_trial(const slS_Study *st, const slS_Trial *t, char *err, size_t errlen);
int slS_journal_report(const slS_Study *st, const slS_Trial *t, char *err, size_t errlen);

#endif
