/*
** run.c - `syslab run FILE`: executes a script with the same interpreter as
** the kernel and shows every output as text on the terminal.
**
** Rich displays print their text/plain part. A display that is later
** updated in place (a progress bar) is drawn on one stderr line rewritten
** with \r when stderr is a terminal; otherwise only its final state is
** printed, so logs stay readable.
**
** Under mpirun every rank runs the script (same seeds, same data, same
** models) and searches spread their trials over the ranks; only rank 0
** prints, and the other ranks show nothing but their errors.
*/
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <jansson.h>

#include "cli.h"
#include "kernel/shell.h"
#include "report/notebook.h"
#include "syslab.h"
#include "slutil.h"

typedef struct {
  int quiet;            /* a rank above 0 of an mpirun job: rank 0 alone prints */
  int tty;              /* stderr is a terminal */
  char progress_id[64]; /* display being updated in place */
  char *progress_text;  /* its latest text, printed at the end when not a tty */
} Terminal;

static void finish_progress(Terminal *t) {
  if (!t->progress_id[0]) return;
  if (t->tty) fputc('\n', stderr);
  else if (t->progress_text) fprintf(stderr, "%s\n", t->progress_text);
  free(t->progress_text);
  t->progress_text = NULL;
  t->progress_id[0] = '\0';
}

static void term_write(void *ud, sl_Stream stream, const char *text, size_t len) {
  Terminal *t = ud;
  if (t->quiet) return;
  finish_progress(t);
  FILE *f = stream == SL_STDERR ? stderr : stdout;
  fwrite(text, 1, len, f);
  fflush(f);
}

static void term_display(void *ud, const sl_Bundle *b, const char *display_id, int update) {
  Terminal *t = ud;
  if (t->quiet) return;
  const sl_MimePart *text = sl_bundle_get(b, "text/plain");
  if (display_id) {
    if (strcmp(display_id, t->progress_id) != 0) {
      finish_progress(t);
      snprintf(t->progress_id, sizeof t->progress_id, "%s", display_id);
    }
    free(t->progress_text);
    t->progress_text = strdup(text ? text->data : "");
    if (t->tty) {
      fprintf(stderr, "\r\033[K%s", t->progress_text);
      fflush(stderr);
    }
    return;
  }
  finish_progress(t);
  if (text) {
    fwrite(text->data, 1, text->len, stdout);
    if (text->len == 0 || text->data[text->len - 1] != '\n') fputc('\n', stdout);
  } else if (b->n > 0) {
    printf("<%s output>\n", b->parts[0].mime);
  }
  fflush(stdout);
}

static void term_clear(void *ud, int wait) { finish_progress(ud); }

static int term_input(void *ud, const char *prompt, int password, char **answer) {
  if (!isatty(STDIN_FILENO)) return -1; /* the script itself may be on stdin */
  finish_progress(ud);
  fputs(prompt, stdout);
  fflush(stdout);
  char *line = NULL;
  size_t cap = 0;
  ssize_t n = getline(&line, &cap, stdin);
  if (n < 0) {
    free(line);
    return -1;
  }
  if (n > 0 && line[n - 1] == '\n') line[n - 1] = '\0';
  *answer = line;
  return 0;
}

static void on_sigint(int sig) {
  (void)sig;
  sl_interrupt();
}

static char *read_all(FILE *f, size_t *len) {
  size_t cap = 4096, n = 0, got;
  char *s = malloc(cap);
  while ((got = fread(s + n, 1, cap - n - 1, f)) > 0) {
    n += got;
    if (n + 1 == cap) s = realloc(s, cap *= 2);
  }
  s[n] = '\0';
  *len = n;
  return s;
}

static int check_no_nul(const char *path, const char *code, size_t len) {
  int line, col;
  char msg[160];
  if (!slj_find_nul(code, len, &line, &col, msg, sizeof msg)) return 0;
  fprintf(stderr, "syslab run: %s: %s\n", path, msg);
  return -1;
}

/* a notebook written for another kernel (Python...) is not run as syslab */
static int check_kernel(const char *path, json_t *nb) {
  json_t *meta = json_object_get(nb, "metadata");
  const char *lang = json_string_value(json_object_get(json_object_get(meta, "kernelspec"), "language"));
  const char *name = json_string_value(json_object_get(json_object_get(meta, "kernelspec"), "name"));
  const char *info = json_string_value(json_object_get(json_object_get(meta, "language_info"), "name"));
  const char *other = lang && strcmp(lang, SYSLAB_LANGUAGE) != 0              ? lang
                      : info && strcmp(info, SYSLAB_LANGUAGE) != 0            ? info
                      : name && strcmp(name, "syslab") != 0 && !lang && !info ? name
                                                                              : NULL;
  if (!other) return 0;
  fprintf(stderr, "syslab run: '%s' is a notebook for %s (kernel %s), not for syslab: run it with its own kernel\n",
          path, other, name ? name : "unknown");
  return -1;
}

/* runs one piece of code; prints its result or its error; returns 0 or -1 */
static int run_code(sl_State *S, Terminal *term, const sl_Host *host, const char *code, const char *where) {
  sl_Value result;
  sl_Error err;
  int rc = sl_execute(S, code, host, &result, &err);
  finish_progress(term);
  if (rc == 0) {
    if (result.type != SL_NIL) {
      sl_Bundle b;
      sl_show(result, &b);
      term_display(term, &b, NULL, 0);
      sl_bundle_free(&b);
    }
    sl_release(result);
    return 0;
  }
  fflush(stdout);
  if (term->quiet) fprintf(stderr, "rank %d: ", sl_job_rank()); /* errors of every rank are shown, marked */
  fprintf(stderr, "%s: %s\n", where, err.traceback ? err.traceback : err.evalue);
  sl_error_free(&err);
  return -1;
}

/* A notebook runs cell by cell, in order, stopping at the first error, as
** `syslab report` runs it: a cell tagged skip-execution is skipped, and the
** error of one tagged raises-exception is shown and the run goes on. */
static int run_notebook(sl_State *S, Terminal *term, const sl_Host *host, const char *path, const char *text) {
  json_error_t jerr;
  json_t *nb = json_loads(text, JSON_ALLOW_NUL, &jerr); /* a NUL in a cell is refused below, by cell */
  json_t *cells = nb ? json_object_get(nb, "cells") : NULL;
  if (!json_is_array(cells)) {
    fprintf(stderr, "syslab run: '%s' is not a notebook (%s)\n", path, nb ? "no cells list" : jerr.text);
    json_decref(nb);
    return -1;
  }
  if (check_kernel(path, nb) != 0) {
    json_decref(nb);
    return -1;
  }
  int rc = 0;
  size_t i;
  json_t *cell;
  json_array_foreach(cells, i, cell) {
    if (rc != 0) break;
    const char *type = json_string_value(json_object_get(cell, "cell_type"));
    if (!type || strcmp(type, "code") != 0) continue;
    json_t *src = json_object_get(cell, "source");
    slU_Text code_text = {0};
    slU_add_len(&code_text, "", 0);
    if (json_is_string(src)) {
      slU_add_len(&code_text, json_string_value(src), json_string_length(src));
    } else {
      size_t k;
      json_t *line;
      json_array_foreach(src, k, line)
          slU_add_len(&code_text, json_string_value(line) ? json_string_value(line) : "", json_string_length(line));
    }
    char *code = code_text.s;
    char where[4096];
    snprintf(where, sizeof where, "%s, cell %zu", path, i + 1);
    if (slR_cell_has_tag(cell, "skip-execution")) { /* the report's tags mean the same here */
      if (!term->quiet) fprintf(stderr, "%s: skipped (skip-execution)\n", where);
      free(code);
      continue;
    }
    if (check_no_nul(where, code, code_text.n) != 0) {
      free(code);
      rc = -1;
      break;
    }
    rc = run_code(S, term, host, code, where);
    free(code);
    if (rc != 0 && !sl_interrupted() && slR_cell_has_tag(cell, "raises-exception")) {
      if (!term->quiet) fprintf(stderr, "%s: the error above was expected (raises-exception); going on\n", where);
      rc = 0;
    }
  }
  json_decref(nb);
  return rc;
}

/* `syslab help NAME` for a command of the language: what `help NAME` shows
** inside, the registry's help text. An unknown name is the language's error
** (with its suggestion) and exit status 2. */
int slc_help_language(const char *name) {
  int plain = name[0] != '\0';
  for (const char *p = name; *p; p++)
    if (!((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') || (*p >= '0' && *p <= '9') || *p == '_')) plain = 0;
  sl_Error err;
  memset(&err, 0, sizeof err);
  int rc = -1;
  if (plain) {
    Terminal term = {0, 0, "", NULL};
    sl_Host host = {&term, term_write, term_display, term_clear, term_input, NULL};
    sl_State *S = sl_new();
    char code[300];
    snprintf(code, sizeof code, "help %.200s", name);
    sl_Value result;
    rc = sl_execute(S, code, &host, &result, &err);
    if (rc == 0) sl_release(result);
    sl_free(S);
  }
  if (rc == 0) return 0;
  const char *why = err.evalue ? err.evalue : "";
  if (strncmp(why, "help: topic: ", 13) == 0) why += 13; /* the language names its command and argument */
  fprintf(stderr, "syslab help: '%s' is neither a subcommand of syslab nor a command of the language%s%s\n\n", name,
          why[0] ? ": " : "", why);
  if (err.evalue) sl_error_free(&err);
  slc_usage_all(stderr);
  return 2;
}

int slc_run_main(int argc, char **argv) {
  const slc_Option *opt = argc == 2 ? slc_option("run", argv[1]) : NULL;
  if (opt && strcmp(opt->name, "-h") == 0) {
    slc_usage(stdout, "run");
    return 0;
  }
  if (argc != 2 || (argv[1][0] == '-' && argv[1][1] != '\0')) {
    slc_usage(stderr, "run");
    return 2;
  }
  const char *path = argv[1];
  size_t len;
  char why[600];
  /* a FIFO or a device is refused, not waited on: standard input is "-" */
  char *code = strcmp(path, "-") == 0 ? read_all(stdin, &len)
                                      : slF_read_file(path, "a script or notebook file", 0, &len, why, sizeof why);
  if (!code) {
    fprintf(stderr, "syslab run: %s\n", why);
    return 2;
  }
  if (check_no_nul(path, code, len) != 0) {
    free(code);
    return 2;
  }

  struct sigaction sa;
  memset(&sa, 0, sizeof sa);
  sa.sa_handler = on_sigint;
  sigaction(SIGINT, &sa, NULL);

  Terminal term = {sl_job_rank() != 0, isatty(STDERR_FILENO), "", NULL};
  sl_Host host = {&term, term_write, term_display, term_clear, term_input, NULL};
  sl_State *S = sl_new();
  size_t plen = strlen(path);
  int rc = plen > 6 && strcmp(path + plen - 6, ".ipynb") == 0 ? run_notebook(S, &term, &host, path, code)
                                                              : run_code(S, &term, &host, code, path);
  sl_free(S);
  free(code);
  sl_job_end(rc == 0 ? 0 : 1);
  return rc == 0 ? 0 : 1;
}
