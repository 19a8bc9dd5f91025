/*
** report.c - `syslab report`: execute the lab notebooks through the syslab
** kernel and assemble the lab report.
**
**   syslab report [NOTEBOOK ...] [-o DIR] [-p NAME=VALUE ...] [--allow-errors]
**                 [--timeout SECONDS] [--no-cache] [--no-pdf] [-j N]
**
** Each notebook runs in a kernel of its own, started like any Jupyter
** client would start it. The executed notebooks go to DIR/notebooks, the
** report to DIR/report.md (figures in DIR/figures), DIR/report.html and
** DIR/report.pdf. Notebooks are only read, never written. A notebook whose
** source, parameters and syslab version are unchanged since its last
** successful run is taken from DIR/.cache instead of running again (like
** Quarto's freeze); --no-cache runs everything.
**
** Notebooks may come from anyone (a class's submissions), so nothing is
** written before the whole run has been checked: the output folder must be
** named, must not be /, and must be empty or an earlier report (--force
** overrides the latter); figure labels must be unique in their notebook
** and usable as file names; a symbolic link among the folder's parts
** (figures/, notebooks/, .cache/, the report's files) is refused, with or
** without --force. The previous run's report.md, report.html and
** report.pdf, and the figures its manifest (.syslab-report) lists, are
** removed before anything runs, so a failed run never leaves an old report
** looking current; no other file is ever deleted. SIGINT, SIGTERM and SIGHUP stop the
** run with its kernel shut down (see client.c), then end the process with
** that signal.
**
** In parallel. With -j N, N notebooks run at once, each in its own kernel,
** from N threads (the client keeps no global state). Under mpirun (a
** class's submissions over a cluster), rank 0 reads the notebooks and the
** cache, hands each notebook to run to another rank (as JSON, so the ranks
** need not share a disk) and assembles the report from what comes back; the
** kernels a rank starts are not part of the job (its MPI variables are taken
** out of their environment). Either way the report is assembled in the
** order of the notebooks, from the same executed notebooks, so it is the
** serial report apart from its timing fields. A notebook's progress lines
** are printed together when it ends (live, cell by cell, in a serial run).
*/
#include "report.h"

#include <dirent.h>
#include <signal.h>
#include <errno.h>
#include <fcntl.h>
#include <openssl/evp.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "client.h"
#include "export.h"
#include "inline.h"
#include "notebook.h"
#include "params.h"
#include "syslab.h"

static double now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

/* ------------------------------------------------------------------ cache */

static void cache_key(const char *path, const slR_Options *o, char out[65]) {
  EVP_MD_CTX *ctx = EVP_MD_CTX_new();
  EVP_DigestInit_ex(ctx, EVP_sha256(), NULL);
  size_t n;
  char why[512], *bytes = slF_read_file(path, "a notebook", 0, &n, why, sizeof why);
  if (bytes) EVP_DigestUpdate(ctx, bytes, n);
  free(bytes);
  char *params = json_dumps(o->params, JSON_SORT_KEYS | JSON_COMPACT);
  EVP_DigestUpdate(ctx, "\0", 1);
  EVP_DigestUpdate(ctx, params, strlen(params));
  EVP_DigestUpdate(ctx, "\0" SYSLAB_VERSION, 1 + strlen(SYSLAB_VERSION));
  EVP_DigestUpdate(ctx, o->allow_errors ? "\1" : "\0", 1);
  free(params);
  unsigned char md[32];
  unsigned len = 0;
  EVP_DigestFinal_ex(ctx, md, &len);
  EVP_MD_CTX_free(ctx);
  for (int i = 0; i < 32; i++) snprintf(out + 2 * i, 3, "%02x", md[i]);
}

/* ------------------------------------------------------------ execution */

static void ensure_ids(json_t *nb) {
  size_t i;
  json_t *cell;
  json_array_foreach(json_object_get(nb, "cells"), i, cell) {
    if (json_is_string(json_object_get(cell, "id"))) continue;
    char id[32];
    snprintf(id, sizeof id, "cell-%zu", i + 1);
    json_object_set_new(cell, "id", json_string(id));
  }
  json_object_set_new(nb, "nbformat_minor", json_integer(5));
}

/* A cell's time limit: --timeout, or more where the cell asks for it with
** `#| timeout: SECONDS` (a search at the seeds' scale runs for many minutes;
** the option never shortens the limit the command line gives). What the
** option may hold is checked before anything runs (check_timeouts). */
static double cell_limit(const char *src, double timeout) {
  char v[32];
  long t;
  slR_cell_option(src, "timeout", v, sizeof v);
  return sl_parse_whole(v, 1, SLR_MAX_CELL_SECONDS, &t) && t > timeout ? (double)t : timeout;
}

/* Every `#| timeout:` is a whole number of seconds in range: `10s`, `1e9`
** or an empty value would otherwise leave the cell under --timeout without
** a word. Returns the number of problems, each printed. */
static int check_timeouts(const char *path, json_t *nb) {
  int problems = 0;
  size_t i;
  json_t *cell, *cells = json_object_get(nb, "cells");
  json_array_foreach(cells, i, cell) {
    if (strcmp(json_string_value(json_object_get(cell, "cell_type")), "code") != 0) continue;
    char *src = slR_cell_source(cell), v[64];
    long t;
    if (slR_cell_option(src, "timeout", v, sizeof v) && !sl_parse_whole(v, 1, SLR_MAX_CELL_SECONDS, &t)) {
      fprintf(stderr, "  error: %s, cell %zu: `#| timeout: %s` is not a whole number of seconds from 1 to %d\n", path,
              slR_cell_number(cells, i), v, SLR_MAX_CELL_SECONDS);
      problems++;
    }
    free(src);
  }
  return problems;
}

static const char *first_line(json_t *outputs) {
  size_t i;
  json_t *o;
  json_array_foreach(outputs, i, o) {
    if (strcmp(json_string_value(json_object_get(o, "output_type")), "error") != 0) continue;
    json_t *tb = json_object_get(o, "traceback");
    const char *line = json_string_value(json_array_get(tb, 0));
    return line && strncmp(line, "line ", 5) == 0 ? line : json_string_value(json_object_get(o, "evalue"));
  }
  return "";
}

/* "ename: evalue" of a cell's error output */
static void error_summary(json_t *outputs, char *out, size_t size) {
  size_t i;
  json_t *o;
  out[0] = '\0';
  json_array_foreach(outputs, i, o) if (strcmp(json_string_value(json_object_get(o, "output_type")), "error") == 0) {
    snprintf(out, size, "%s: %s", json_string_value(json_object_get(o, "ename")),
             json_string_value(json_object_get(o, "evalue")));
    return;
  }
}

/* The errors an executed notebook records: cells with an error output that
** were not expected to fail (raises-exception). Without --allow-errors the
** first such cell stops the notebook; with it they are counted here, from
** the notebook itself, so a notebook from the cache counts the same. */
static size_t recorded_errors(json_t *nb, const char *path, int print) {
  size_t n = 0, i;
  json_t *cell, *cells = json_object_get(nb, "cells");
  json_array_foreach(cells, i, cell) {
    char what[600];
    if (slR_cell_has_tag(cell, "raises-exception")) continue;
    error_summary(json_object_get(cell, "outputs"), what, sizeof what);
    if (!what[0]) continue;
    n++;
    if (print) fprintf(stderr, "syslab report: %s, cell %zu: error (kept going: --allow-errors): %s\n", path,
                       slR_cell_number(cells, i), what);
  }
  return n + slR_inline_errors(nb, path, print);
}

/* runs every code cell; returns 0, or -1 with err naming notebook and cell */
/* progress lines: to stderr as they come, or kept in log to be printed together */
static void say(slU_Text *log, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void say(slU_Text *log, const char *fmt, ...) {
  char line[1024];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(line, sizeof line, fmt, ap);
  va_end(ap);
  if (log) slU_add(log, "%s", line);
  else fputs(line, stderr);
}

static int execute_notebook(const char *path, json_t *nb, const slR_Options *o, int *ncells, slU_Text *log, char *err,
                            size_t errlen) {
  char exe[4096];
  ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
  if (n <= 0) {
    snprintf(err, errlen, "cannot find the syslab program to start the kernel");
    return -1;
  }
  exe[n] = '\0';
  const char *argv[] = {exe, "kernel", "-f", "{connection_file}", NULL};
  slR_Kernel *k = slR_kernel_start(argv, 30, err, errlen);
  if (!k) return -1;
  json_t *meta = json_object_get(nb, "metadata");
  if (!json_is_object(meta)) json_object_set_new(nb, "metadata", meta = json_object());
  json_object_set_new(meta, "kernelspec", json_pack("{s:s, s:s, s:s}", "display_name", "syslab", "language", "syslab", "name", "syslab"));
  json_object_set(meta, "language_info", json_object_get(slR_kernel_info(k), "language_info"));
  json_t *cells = json_object_get(nb, "cells");
  size_t total = 0, i;
  json_t *cell;
  json_array_foreach(cells, i, cell) total += strcmp(json_string_value(json_object_get(cell, "cell_type")), "code") == 0;
  int rc = 0, done = 0;
  json_array_foreach(cells, i, cell) {
    if (strcmp(json_string_value(json_object_get(cell, "cell_type")), "code") != 0) continue;
    done++;
    /* progress and errors name a cell by the same number, the reader's */
    char which[64];
    if (slR_cell_injected(cell)) snprintf(which, sizeof which, "parameters (injected)");
    else snprintf(which, sizeof which, "cell %zu", slR_cell_number(cells, i));
    json_object_set_new(cell, "outputs", json_array());
    json_object_set_new(cell, "execution_count", json_null());
    if (slR_cell_has_tag(cell, "skip-execution")) {
      say(log, "  [%d/%zu] %s: skipped (skip-execution)\n", done, total, which);
      continue;
    }
    char *src = slR_cell_source(cell);
    double limit = cell_limit(src, o->timeout), t0 = now();
    json_t *outputs;
    int count;
    slR_CellStatus st = slR_execute(k, src, limit, &outputs, &count);
    free(src);
    json_object_set_new(cell, "outputs", outputs);
    json_object_set_new(cell, "execution_count", count > 0 ? json_integer(count) : json_null());
    (*ncells)++;
    char what[600] = "";
    if (st == SLR_CELL_ERROR) error_summary(outputs, what, sizeof what);
    say(log, "  [%d/%zu] %s: %.2f s%s%s\n", done, total, which, now() - t0,
        st == SLR_CELL_OK ? "" : st == SLR_CELL_ERROR ? "  error: " : st == SLR_CELL_TIMEOUT ? "  timed out" : "  kernel died",
        what);
    if (st == SLR_CELL_DIED) {
      snprintf(err, errlen, "%s, %s: the kernel died while running it", path, which);
      rc = -1;
      break;
    }
    if (st == SLR_CELL_TIMEOUT) {
      snprintf(err, errlen, "%s, %s: still running after %g seconds (%s); it was interrupted", path, which, limit,
               limit > o->timeout ? "its `#| timeout:` option" : "--timeout");
      rc = -1;
      break;
    }
    if (st == SLR_CELL_ERROR && !o->allow_errors && !slR_cell_has_tag(cell, "raises-exception")) {
      const char *where = first_line(outputs);
      size_t wl = strlen(where);
      if (wl && where[wl - 1] == ':') wl--;  /* "line 2, column 9:" */
      snprintf(err, errlen, "%s, %s, %.*s: %s", path, which, (int)wl, where, what);
      rc = -1;
      break;
    }
  }
  if (rc == 0 && !slR_stop_requested()) {  /* the Markdown's inline values, once every cell has run */
    size_t values, failed;
    double t0 = now();
    rc = slR_inline_run(k, path, nb, o->allow_errors, o->timeout, &values, &failed, err, errlen);
    if (values) say(log, "  inline values: %zu in %.2f s%s\n", values, now() - t0, failed ? "  (some failed)" : "");
  }
  slR_kernel_stop(k);
  return rc;
}

/* ----------------------------------------------------------- the folder */

/* The files a run wrote into the report folder, one path a line under a
** header line; the next run deletes those and nothing else. */
#define MANIFEST ".syslab-report"
#define MANIFEST_HEADER "# syslab report: the files the last run wrote (the next run deletes these)"

/* what a report folder holds; anything else means it is someone's folder */
static int report_entry(const char *name) {
  static const char *const names[] = {".", "..", "report.md", "report.html", "report.pdf", "figures", "notebooks",
                                      ".cache", MANIFEST, NULL};
  for (int i = 0; names[i]; i++)
    if (strcmp(name, names[i]) == 0) return 1;
  /* a temporary file left by an interrupted earlier run */
  return (strncmp(name, "report.", 7) == 0 || strncmp(name, MANIFEST ".", sizeof MANIFEST) == 0) &&
         strstr(name, ".tmp") != NULL;
}

/* The report writes and deletes only in its own folder: a symbolic link
** there (figures/ pointing at someone's pictures, notebooks/ at their
** notebooks) is refused before anything is written. 0, or -1 printed. */
static int check_links(const char *outdir) {
  static const char *const names[] = {"report.md", "report.html", "report.pdf", "figures", "notebooks", ".cache",
                                      MANIFEST, NULL};
  int found = 0;
  for (int i = 0; names[i]; i++) {
    char path[4400], target[4096];
    struct stat st;
    snprintf(path, sizeof path, "%s/%s", outdir, names[i]);
    if (lstat(path, &st) != 0) continue;
    if (S_ISLNK(st.st_mode)) {
      ssize_t n = readlink(path, target, sizeof target - 1);
      target[n > 0 ? n : 0] = '\0';
      fprintf(stderr, "syslab report: %s is a symbolic link (to %s); the report writes and deletes only in its own "
              "folder, never through a link: remove the link, or choose another folder with -o\n", path,
              target[0] ? target : "?");
      found++;
    } else if (i >= 3 && i <= 5 && !S_ISDIR(st.st_mode)) {
      fprintf(stderr, "syslab report: %s is not a folder; a report folder's %s must be one: remove it, or choose "
              "another folder with -o\n", path, names[i]);
      found++;
    }
  }
  return found ? -1 : 0;
}

/* 0 when the report may be written to outdir; nothing is written here */
static int check_outdir(const slR_Options *o) {
  char abs[4096];
  if (realpath(o->outdir, abs) && strcmp(abs, "/") == 0) {
    fprintf(stderr, "syslab report: refusing to write the report into / (-o %s); name a folder of its own\n", o->outdir);
    return -1;
  }
  struct stat st;
  if (stat(o->outdir, &st) != 0) return 0;  /* created later */
  if (!S_ISDIR(st.st_mode)) {
    fprintf(stderr, "syslab report: %s exists and is not a folder; -o takes a folder\n", o->outdir);
    return -1;
  }
  if (check_links(o->outdir) != 0) return -1;  /* --force or not */
  if (o->force) return 0;
  DIR *d = opendir(o->outdir);
  if (!d) {
    fprintf(stderr, "syslab report: cannot read %s: %s\n", o->outdir, strerror(errno));
    return -1;
  }
  char found[600] = "";
  int foreign = 0;
  struct dirent *e;
  while ((e = readdir(d)) != NULL) {
    if (report_entry(e->d_name)) continue;
    if (foreign++ < 3) {
      size_t l = strlen(found);
      snprintf(found + l, sizeof found - l, "%s'%s'", l ? ", " : "", e->d_name);
    }
  }
  closedir(d);
  if (!foreign) return 0;
  fprintf(stderr,
          "syslab report: %s is not empty and does not look like an earlier report: it holds %s%s (a report folder "
          "holds only report.md, report.html, report.pdf, figures/, notebooks/ and .cache/). Choose another folder "
          "with -o, or pass --force to write into it anyway\n",
          o->outdir, found, foreign > 3 ? " and more" : "");
  return -1;
}

/* a path the manifest may name: one of the report's files, or a figure
** (figures/NAME.png or .svg, NAME a plain file name) */
static int manifest_path(const char *p) {
  if (strcmp(p, "report.md") == 0 || strcmp(p, "report.html") == 0 || strcmp(p, "report.pdf") == 0) return 1;
  if (strncmp(p, "figures/", 8) != 0) return 0;
  const char *name = p + 8;
  size_t n = strlen(name);
  return n > 4 && name[0] != '.' && !strchr(name, '/') &&
         (strcmp(name + n - 4, ".png") == 0 || strcmp(name + n - 4, ".svg") == 0);
}

/* The previous run's report goes before anything runs, so that a run that
** fails cannot leave it looking like this run's: report.md, report.html and
** report.pdf, and the figures its manifest lists; no other file, and never
** through a link (unlinking a link removes the link). The manifest is then
** emptied until this run writes its own. */
static void remove_previous(const char *outdir) {
  static const char *const names[] = {"report.md", "report.html", "report.pdf", NULL};
  char path[4400];
  for (int i = 0; names[i]; i++) {
    snprintf(path, sizeof path, "%s/%s", outdir, names[i]);
    unlink(path);
  }
  snprintf(path, sizeof path, "%s/" MANIFEST, outdir);
  char line[1200], why[512];
  int fd = slF_open(path, O_RDONLY | O_NOFOLLOW, "the report's manifest", NULL, why, sizeof why);
  FILE *f = fd >= 0 ? fdopen(fd, "r") : NULL;
  if (fd >= 0 && !f) close(fd);
  snprintf(path, sizeof path, "%s/figures", outdir);
  int figures = open(path, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
  if (f && fgets(line, sizeof line, f) && strncmp(line, MANIFEST_HEADER, strlen(MANIFEST_HEADER)) == 0)
    while (fgets(line, sizeof line, f)) {
      line[strcspn(line, "\r\n")] = '\0';
      if (!manifest_path(line) || strncmp(line, "figures/", 8) != 0 || figures < 0) continue;
      struct stat st;
      if (fstatat(figures, line + 8, &st, AT_SYMLINK_NOFOLLOW) == 0 && (S_ISREG(st.st_mode) || S_ISLNK(st.st_mode)))
        unlinkat(figures, line + 8, 0);
    }
  if (f) fclose(f);
  if (figures >= 0) close(figures);
  char err[512];
  snprintf(path, sizeof path, "%s/" MANIFEST, outdir);
  slR_write_atomic(path, MANIFEST_HEADER "\n", strlen(MANIFEST_HEADER) + 1, err, sizeof err);
}

/* this run's manifest: the paths it wrote, in order */
static void write_manifest(const char *outdir, json_t *written) {
  slU_Text t = {0};
  slU_add(&t, "%s\n", MANIFEST_HEADER);
  size_t i;
  json_t *p;
  json_array_foreach(written, i, p) if (manifest_path(json_string_value(p))) slU_add(&t, "%s\n", json_string_value(p));
  char path[4400], err[512];
  snprintf(path, sizeof path, "%s/" MANIFEST, outdir);
  if (slR_write_atomic(path, t.s, t.n, err, sizeof err) != 0) fprintf(stderr, "syslab report: %s\n", err);
  free(t.s);
}

/* ------------------------------------------------------------- labels */

static void stem_of(const char *path, char *stem, size_t size) {
  const char *base = strrchr(path, '/') ? strrchr(path, '/') + 1 : path;
  snprintf(stem, size, "%s", base);
  char *dot = strrchr(stem, '.');
  if (dot && strcmp(dot, ".ipynb") == 0) *dot = '\0';
}

/* Labels name figure files (<notebook>-<label>.png) and @references, so in
** one notebook each must be unique and a plain name; checked before any
** cell runs. Returns the number of problems, each printed. */
static int check_labels(const char *path, json_t *nb) {
  json_t *seen = json_object();
  int problems = 0;
  size_t i;
  json_t *cell;
  json_array_foreach(json_object_get(nb, "cells"), i, cell) {
    if (strcmp(json_string_value(json_object_get(cell, "cell_type")), "code") != 0) continue;
    char *src = slR_cell_source(cell), label[256];
    slR_cell_option(src, "label", label, sizeof label);
    free(src);
    if (!label[0]) continue;
    if (!slR_label_valid(label)) {
      fprintf(stderr, "  error: %s, cell %zu: the label '%s' may only use letters, digits, '-' and '_' (at most 100)\n",
              path, i + 1, label);
      problems++;
      continue;
    }
    json_t *first = json_object_get(seen, label);
    if (first) {
      fprintf(stderr, "  error: %s: cells %d and %zu both have the label '%s'; a label names one figure, so each "
              "must be unique in its notebook\n", path, (int)json_integer_value(first), i + 1, label);
      problems++;
    } else {
      json_object_set_new(seen, label, json_integer((json_int_t)(i + 1)));
    }
  }
  json_decref(seen);
  return problems;
}

/* a signal stopped the run: the kernel is already shut down; end the way
** the signal would have ended the process */
static void die_of_signal(int sig) {
  fprintf(stderr, "syslab report: stopped by signal %d (%s); the kernel was shut down\n", sig, strsignal(sig));
  signal(sig, SIG_DFL);
  raise(sig);
  exit(128 + sig);
}

/* ------------------------------------------------------------ in parallel */

typedef struct {
  const char *path;        /* the notebook */
  size_t slot;             /* its place in the report */
  json_t *nb;              /* in: parameters injected; out: executed */
  char executed[4600], key_path[4600], key[65];
  double t0;
  int ran, rc, cells;      /* ran: 0 when a stop came before its turn */
  char err[2048];
} Run;

typedef struct {
  const slR_Options *o;
  Run *runs;
  size_t n, next;
  pthread_mutex_t lock;
  int cells;
} Runner;

/* runs one notebook; live: print progress as it comes (else all at the end) */
static void run_one(Runner *rn, Run *r, int live) {
  slU_Text log = {0};
  int cells = 0;
  r->t0 = now();
  r->ran = 1;
  if (live) fprintf(stderr, "syslab report: %s\n", r->path);
  r->rc = execute_notebook(r->path, r->nb, rn->o, &cells, live ? NULL : &log, r->err, sizeof r->err);
  pthread_mutex_lock(&rn->lock);
  rn->cells += cells;
  if (!live) fprintf(stderr, "syslab report: ran %s\n%s", r->path, log.s ? log.s : "");
  if (r->rc == 0) fprintf(stderr, "  done in %.2f s\n", now() - r->t0);
  pthread_mutex_unlock(&rn->lock);
  free(log.s);
}

static void *run_thread(void *arg) {
  Runner *rn = arg;
  for (;;) {
    pthread_mutex_lock(&rn->lock);
    size_t i = rn->next++;
    pthread_mutex_unlock(&rn->lock);
    if (i >= rn->n || slR_stop_requested()) return NULL;
    run_one(rn, &rn->runs[i], 0);
  }
}

static void run_threads(Runner *rn) {
  int n = rn->o->jobs < (int)rn->n ? rn->o->jobs : (int)rn->n;
  pthread_t *t = calloc((size_t)n, sizeof *t);
  for (int i = 0; i < n; i++) pthread_create(&t[i], NULL, run_thread, rn);
  for (int i = 0; i < n; i++) pthread_join(t[i], NULL);
  free(t);
}

/* The kernels a rank starts are plain processes, not part of the job: they
** must not see the launcher's variables (they would take themselves for
** ranks of it). */
static void leave_the_job(void) {
  extern char **environ;
  static const char *const prefixes[] = {"OMPI_", "PMIX_", "PMI_", NULL};
  for (int again = 1; again;) {
    again = 0;
    for (char **e = environ; *e && !again; e++)
      for (int k = 0; prefixes[k]; k++)
        if (strncmp(*e, prefixes[k], strlen(prefixes[k])) == 0) {
          char name[256];
          snprintf(name, sizeof name, "%.*s", (int)(strchr(*e, '=') ? strchr(*e, '=') - *e : (long)strlen(*e)), *e);
          unsetenv(name);
          again = 1;
          break;
        }
  }
}

/* a rank's task: the notebook as JSON; its result: rc, cells, err, progress, executed notebook */
static void mpi_task(void *ud, long id, const char *task, size_t n, slU_Text *result) {
  Runner *rn = ud;
  static int left;
  if (!left) leave_the_job(), left = 1;
  json_error_t jerr;
  Run r;
  memset(&r, 0, sizeof r);
  const char *nl = memchr(task, '\n', n);  /* the notebook's path, then the notebook */
  char path[4096];
  snprintf(path, sizeof path, "%.*s", nl ? (int)(nl - task) : 0, task);
  r.nb = nl ? json_loadb(nl + 1, n - (size_t)(nl + 1 - task), 0, &jerr) : NULL;
  slU_Text log = {0};
  int cells = 0;
  r.rc = r.nb ? execute_notebook(path, r.nb, rn->o, &cells, &log, r.err, sizeof r.err) : -1;
  if (!r.nb) snprintf(r.err, sizeof r.err, "the notebook did not arrive whole");
  char *json = r.nb ? json_dumps(r.nb, JSON_COMPACT) : strdup("null");
  slU_add(result, "%d %d ", r.rc, cells);
  slU_put_str(result, r.err);
  slU_put_str(result, log.s ? log.s : "");
  slU_add(result, "%s", json);
  free(json);
  free(log.s);
  json_decref(r.nb);
}

static void mpi_done(void *ud, long id, const char *result, size_t n) {
  Runner *rn = ud;
  Run *r = &rn->runs[id];
  int rc = -1, cells = 0, used = 0;
  if (sscanf(result, "%d %d %n", &rc, &cells, &used) < 2) {
    snprintf(r->err, sizeof r->err, "a rank sent a malformed result");
    r->rc = -1;
    return;
  }
  slU_Reader rd = {result + used, n - (size_t)used, 0, 0};
  char log[16384];
  slU_get_str(&rd, r->err, sizeof r->err);
  slU_get_str(&rd, log, sizeof log);
  json_error_t jerr;
  json_decref(r->nb);
  r->nb = rd.bad ? NULL : json_loadb(rd.p + rd.at, rd.n - rd.at, 0, &jerr);
  r->rc = rd.bad || !r->nb ? -1 : rc;
  if (rd.bad || !r->nb) snprintf(r->err, sizeof r->err, "a rank sent back a damaged notebook");
  rn->cells += cells;
  fprintf(stderr, "syslab report: ran %s\n%s", r->path, log);
  if (r->rc == 0) fprintf(stderr, "  done in %.2f s\n", now() - r->t0);
}

static void run_mpi(Runner *rn) {
  char **tasks = calloc(rn->n + 1, sizeof *tasks);
  size_t *lens = calloc(rn->n + 1, sizeof *lens);
  for (size_t i = 0; i < rn->n; i++) {
    rn->runs[i].ran = 1;
    rn->runs[i].t0 = now();
    char *json = json_dumps(rn->runs[i].nb, JSON_COMPACT);
    slU_Text t = {0};
    slU_add(&t, "%s\n%s", rn->runs[i].path, json);
    free(json);
    tasks[i] = t.s;
    lens[i] = t.n;
  }
  char err[1024];
  if (sl_job_farm(rn->n, tasks, lens, mpi_task, mpi_done, rn, err, sizeof err) < 0)
    for (size_t i = 0; i < rn->n; i++)
      if (rn->runs[i].rc == 0 && !rn->runs[i].err[0] && rn->runs[i].nb) {
        rn->runs[i].rc = -1;
        snprintf(rn->runs[i].err, sizeof rn->runs[i].err, "%s", err);
      }
  for (size_t i = 0; i < rn->n; i++) free(tasks[i]);
  free(tasks);
  free(lens);
}

/* ------------------------------------------------------------ the run */

/* One `syslab report` run, phase by phase (each a helper below); what it
** holds is released in one place, report_free, whichever phase it ends in. */
typedef struct {
  const slR_Options *o;
  char dir[4200], cache_dir[4200];  /* DIR/notebooks and DIR/.cache */
  json_t **read;           /* per notebook: as read; NULL once taken (or unreadable) */
  json_t *read_errors;     /* per notebook: why it cannot be read, or null */
  json_t *failures;        /* what went wrong, for the report's notice */
  json_t *written;         /* paths this run wrote in the folder, for its manifest */
  slR_Notebook *done;      /* the report's notebooks, in order */
  Run *runs;               /* those that run (the others come from the cache) */
  size_t ndone, nruns;
  int cells, cached;
} Report;

static void report_free(Report *R) {
  for (size_t i = 0; R->read && i < R->o->count; i++) json_decref(R->read[i]);
  free(R->read);
  json_decref(R->read_errors);
  for (size_t i = 0; i < R->ndone; i++) json_decref(R->done[i].nb);
  free(R->done);
  free(R->runs);  /* their notebooks belong to done[], or were released when they failed */
  json_decref(R->failures);
  json_decref(R->written);
}

/* Every notebook read and its name and labels checked before anything is
** written or run. Returns the number of problems, each printed. */
static int read_notebooks(Report *R) {
  const slR_Options *o = R->o;
  char err[2048];
  int refused = 0;
  R->read = calloc(o->count, sizeof *R->read);
  R->read_errors = json_array();
  for (size_t i = 0; i < o->count; i++) {
    char stem[256];
    stem_of(o->notebooks[i], stem, sizeof stem);
    for (size_t j = 0; j < i; j++) {
      char other[256];
      stem_of(o->notebooks[j], other, sizeof other);
      if (strcmp(stem, other) == 0) {
        fprintf(stderr, "syslab report: %s and %s have the same name '%s'; the executed notebooks and figures are "
                "named after it, so rename one\n", o->notebooks[j], o->notebooks[i], stem);
        refused++;
        break;
      }
    }
    R->read[i] = slR_notebook_read(o->notebooks[i], err, sizeof err);
    json_array_append_new(R->read_errors, R->read[i] ? json_null() : json_string(err));
    if (!R->read[i]) continue;
    refused += check_labels(o->notebooks[i], R->read[i]) + check_timeouts(o->notebooks[i], R->read[i]) +
               slR_inline_check(o->notebooks[i], R->read[i]);
    slR_params_check(o->notebooks[i], R->read[i], o->params);
  }
  return refused;
}

/* The executed notebook from the last run, when its cache key still
** matches; read as any notebook is: it may have been opened and saved since. */
static json_t *from_cache(const char *key_path, const char *key, const char *executed) {
  struct stat st;
  /* what a link in the folder points at is not this report's */
  if (lstat(executed, &st) != 0 || !S_ISREG(st.st_mode) || lstat(key_path, &st) != 0 || !S_ISREG(st.st_mode))
    return NULL;
  size_t n;
  char cerr[512], *old = slF_read_file(key_path, "a cache key", 1, &n, cerr, sizeof cerr);
  int same = old && strcmp(old, key) == 0;
  free(old);
  return same ? slR_notebook_read(executed, cerr, sizeof cerr) : NULL;
}

/* Each readable notebook takes its place in the report: from the cache, or
** as a Run to execute (its parameters injected). A stop ends the walk. */
static void plan_runs(Report *R) {
  const slR_Options *o = R->o;
  R->done = calloc(o->count, sizeof *R->done);
  R->runs = calloc(o->count, sizeof *R->runs);
  for (size_t i = 0; i < o->count && !slR_stop_requested(); i++) {
    const char *path = o->notebooks[i];
    char stem[256];
    stem_of(path, stem, sizeof stem);
    json_t *nb = R->read[i];
    R->read[i] = NULL;
    if (!nb) {
      const char *why = json_string_value(json_array_get(R->read_errors, i));
      fprintf(stderr, "syslab report: %s\n  error: %s\n", path, why);
      json_array_append_new(R->failures, json_string(why));
      continue;
    }
    char key[65], key_path[4600], executed[4600];
    cache_key(path, o, key);
    snprintf(key_path, sizeof key_path, "%s/%s.key", R->cache_dir, stem);
    snprintf(executed, sizeof executed, "%s/%s.ipynb", R->dir, stem);
    slR_Notebook *d = &R->done[R->ndone++];
    d->path = path;
    snprintf(d->stem, sizeof d->stem, "%s", stem);
    json_t *prev = o->use_cache ? from_cache(key_path, key, executed) : NULL;
    if (prev) {
      fprintf(stderr, "syslab report: %s\n  unchanged since the last run: taken from the cache\n", path);
      json_decref(nb);
      d->nb = prev;
      R->cached++;
      continue;
    }
    unlink(key_path);
    slR_params_inject(nb, o->params);
    ensure_ids(nb);
    Run *r = &R->runs[R->nruns++];
    r->path = path;
    r->slot = R->ndone - 1;
    r->nb = nb;
    snprintf(r->executed, sizeof r->executed, "%s", executed);
    snprintf(r->key_path, sizeof r->key_path, "%s", key_path);
    memcpy(r->key, key, sizeof r->key);
    d->nb = NULL;  /* filled when it has run */
  }
  for (size_t i = 0; i < o->count; i++) json_decref(R->read[i]);  /* those a stop left unread */
  free(R->read);
  R->read = NULL;
  json_decref(R->read_errors);
  R->read_errors = NULL;
}

/* Each run's outcome into its place, in the order of the notebooks,
** whatever order they ran in: an executed notebook is written (even one
** that stopped early, so its outputs can be read) and its cache key saved;
** a failed one leaves the report with its error. */
static void collect_runs(Report *R) {
  char err[2048];
  size_t kept = 0;
  for (size_t i = 0, ri = 0; i < R->ndone; i++) {
    Run *r = ri < R->nruns && R->runs[ri].slot == i ? &R->runs[ri++] : NULL;
    if (r) {
      int rc = r->ran ? r->rc : -1;
      char werr[512];
      if (!r->ran) snprintf(r->err, sizeof r->err, "not run: the report was stopped");
      if (r->ran && r->nb && slR_write_json_atomic(r->executed, r->nb, werr, sizeof werr) != 0 && rc == 0) {
        snprintf(r->err, sizeof r->err, "%s", werr);
        rc = -1;
      }
      if (rc != 0) {
        fprintf(stderr, "syslab report: %s: error: %s\n", R->done[i].path, r->err);
        json_array_append_new(R->failures, json_string(r->err));
        json_decref(r->nb);
        r->nb = NULL;
        continue;
      }
      slR_write_atomic(r->key_path, r->key, 64, err, sizeof err);
      R->done[i].nb = r->nb;
    }
    R->done[kept++] = R->done[i];
  }
  R->ndone = kept;
}

/* report.md, report.html and (unless --no-pdf) report.pdf from the
** executed notebooks; what fails joins the failures and is printed. A
** stop removes whatever was half made: such a run wrote no report. Sets
** which files this run wrote; returns the signal that stopped the run, or 0. */
static int export_report(Report *R, int *md_ok, int *pdf_ok, char *md_path, size_t md_size) {
  const slR_Options *o = R->o;
  char err[2048];
  char *md = NULL;
  snprintf(md_path, md_size, "%s/report.md", o->outdir);
  *md_ok = *pdf_ok = 0;
  size_t failed_before = json_array_size(R->failures);
  int stopped = slR_stop_requested();
  if (!stopped && R->ndone > 0 &&
      slR_export_markdown(R->done, R->ndone, o->outdir, R->failures, R->written, &md, err, sizeof err) == 0 &&
      slR_write_atomic(md_path, md, strlen(md), err, sizeof err) == 0) {
    *md_ok = 1;
    json_array_append_new(R->written, json_string("report.md"));
    if (slR_export_html(md, o->outdir, err, sizeof err) != 0) {
      json_array_append_new(R->failures, json_string(err));
    } else {
      json_array_append_new(R->written, json_string("report.html"));
      if (o->pdf && !(*pdf_ok = slR_export_pdf(o->outdir, 120, err, sizeof err) == 0))
        json_array_append_new(R->failures, json_string(err));
      if (*pdf_ok) json_array_append_new(R->written, json_string("report.pdf"));
    }
  } else if (!stopped && R->ndone > 0) {
    json_array_append_new(R->failures, json_string(err));
  }
  for (size_t i = failed_before; i < json_array_size(R->failures); i++)
    fprintf(stderr, "syslab report: %s\n", json_string_value(json_array_get(R->failures, i)));
  free(md);
  stopped = slR_stop_requested();
  if (stopped) {
    const char *names[] = {"report.md", "report.html", "report.pdf"};
    for (int i = 0; i < 3; i++) {
      char path[4300];
      snprintf(path, sizeof path, "%s/%s", o->outdir, names[i]);
      unlink(path);
    }
    *md_ok = *pdf_ok = 0;
  }
  return stopped;
}

/* a rank of an mpirun job other than 0: runs what rank 0 hands it */
static int serve_rank(const slR_Options *o) {
  Runner rn = {o, NULL, 0, 0, PTHREAD_MUTEX_INITIALIZER, 0};
  char err[1024];
  int rc = sl_job_farm(0, NULL, NULL, mpi_task, mpi_done, &rn, err, sizeof err);
  if (rc < 0) fprintf(stderr, "syslab report (rank %d): %s\n", sl_job_rank(), err);
  return rc < 0 ? 1 : 0;
}

int slR_report(const slR_Options *o) {
  double start = now();
  if (sl_job_size() > 1 && sl_job_rank() != 0) return serve_rank(o);
  if (check_outdir(o) != 0) return 2;
  Report R = {.o = o, .failures = json_array(), .written = json_array()};
  int refused = read_notebooks(&R);
  if (refused) {
    fprintf(stderr, "syslab report: nothing was run; fix the %s above first\n", refused == 1 ? "problem" : "problems");
    report_free(&R);
    return 1;
  }
  snprintf(R.dir, sizeof R.dir, "%s/notebooks", o->outdir);
  snprintf(R.cache_dir, sizeof R.cache_dir, "%s/.cache", o->outdir);
  if (slR_mkdirs(R.dir) != 0 || slR_mkdirs(R.cache_dir) != 0) {
    fprintf(stderr, "syslab report: cannot create %s: %s\n", o->outdir, strerror(errno));
    report_free(&R);
    return 1;
  }
  remove_previous(o->outdir);
  slR_catch_stop_signals();
  plan_runs(&R);
  Runner rn = {o, R.runs, R.nruns, 0, PTHREAD_MUTEX_INITIALIZER, 0};
  if (sl_job_size() > 1) run_mpi(&rn);
  else if (o->jobs > 1 && R.nruns > 1) run_threads(&rn);
  else
    for (size_t i = 0; i < R.nruns && !slR_stop_requested(); i++) run_one(&rn, &R.runs[i], 1);
  R.cells += rn.cells;
  collect_runs(&R);
  /* the errors the report's notebooks record count as errors too, even
  ** though --allow-errors let the notebooks go on */
  size_t cell_errors = 0;
  for (size_t i = 0; i < R.ndone; i++) cell_errors += recorded_errors(R.done[i].nb, R.done[i].path, 1);
  int md_ok, pdf_ok;
  char md_path[4200];
  int stopped = export_report(&R, &md_ok, &pdf_ok, md_path, sizeof md_path);
  write_manifest(o->outdir, R.written);
  size_t nfail = json_array_size(R.failures), nerr = nfail + cell_errors;
  char kept_going[96] = "";
  if (cell_errors)
    snprintf(kept_going, sizeof kept_going, " (%zu in cell%s, kept going: --allow-errors)", cell_errors,
             cell_errors == 1 ? "" : "s");
  fprintf(stderr, "\n%zu notebook%s (%d from the cache), %d cells run, %zu error%s%s, %.1f s\n", o->count,
          o->count == 1 ? "" : "s", R.cached, R.cells, nerr, nerr == 1 ? "" : "s", kept_going, now() - start);
  /* only the paths of files this run wrote */
  if (md_ok) printf("%s\n", md_path);
  if (pdf_ok) printf("%s/report.pdf\n", o->outdir);
  fflush(stdout);
  report_free(&R);
  if (stopped) die_of_signal(stopped);
  return nfail ? 1 : 0;
}
