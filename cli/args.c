/*
** args.c - the arguments of `syslab kernel` and `syslab report`, read
** against the one table of options (cli.c) and handed to the folders that
** do the work: kernel/ serves a connection file, report/ takes its
** options as an slR_Options. Neither sees argv, so neither depends on the
** command line above it.
*/
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "kernel/server.h"
#include "report/params.h"
#include "report/report.h"
#include "slutil.h"

/* ------------------------------------------------------------ syslab kernel */

int slc_kernel_main(int argc, char **argv) {
  const char *path = NULL;
  /* other arguments are left alone: a kernelspec may pass more (as ipykernel's do) */
  for (int i = 1; i < argc; i++) {
    const slc_Option *opt = slc_option("kernel", argv[i]);
    if (opt && strcmp(opt->name, "-h") == 0) {
      slc_usage(stdout, "kernel");
      return 0;
    }
    if (opt && strcmp(opt->name, "-f") == 0 && i + 1 < argc) path = argv[++i];
    else if (strncmp(argv[i], "--connection-file=", 18) == 0) path = argv[i] + 18;
  }
  if (!path) {
    slc_usage(stderr, "kernel");
    return 2;
  }
  return slj_kernel_run(path);
}

/* ------------------------------------------------------------ syslab report */

static int cmp_str(const void *a, const void *b) { return strcmp(*(char *const *)a, *(char *const *)b); }

static void default_notebooks(slR_Options *o) {
  DIR *d = opendir("notebooks");
  struct dirent *e;
  while (d && (e = readdir(d)) != NULL) {
    size_t n = strlen(e->d_name);
    if (n > 6 && strcmp(e->d_name + n - 6, ".ipynb") == 0 && e->d_name[0] != '.') {
      o->notebooks = realloc(o->notebooks, (o->count + 1) * sizeof *o->notebooks);
      char path[600];
      snprintf(path, sizeof path, "notebooks/%s", e->d_name);
      o->notebooks[o->count++] = strdup(path);
    }
  }
  if (d) closedir(d);
  qsort(o->notebooks, o->count, sizeof *o->notebooks, cmp_str);
}

/* a -p value as language source: numbers (in the language's own grammar, so
** nan and 0x10 stay strings) and booleans as they are, anything else a string */
static char *value_source(const char *v) {
  if (sl_parse_number(v, NULL) || strcmp(v, "true") == 0 || strcmp(v, "false") == 0) return strdup(v);
  size_t n = strlen(v);
  char *s = malloc(2 * n + 3), *p = s;
  *p++ = '"';
  for (; *v; v++) {
    if (*v == '"' || *v == '\\') *p++ = '\\';
    if (*v == '\n') {
      *p++ = '\\';
      *p++ = 'n';
      continue;
    }
    *p++ = *v;
  }
  *p++ = '"';
  *p = '\0';
  return s;
}

#define MAX_JOBS 256
#define JOBS_UNIT "notebooks to run at once"

static int parse_args(int argc, char **argv, slR_Options *o) {
  o->outdir = "out/report";
  o->params = json_object();
  o->use_cache = 1;
  o->pdf = 1;
  o->timeout = 600;
  o->jobs = 1;
  for (int i = 1; i < argc; i++) {
    const char *a = argv[i];
    if (a[0] != '-') {
      o->notebooks = realloc(o->notebooks, (o->count + 1) * sizeof *o->notebooks);
      o->notebooks[o->count++] = strdup(a);
      continue;
    }
    long n;
    if (strncmp(a, "-j", 2) == 0 && a[2]) { /* -j4 */
      if (slc_number("report", "-j", a + 2, 1, MAX_JOBS, JOBS_UNIT, &n) != 0) return 2;
      o->jobs = (int)n;
      continue;
    }
    /* only what the table in cli.c lists, so `--help` shows every option */
    const slc_Option *opt = slc_option("report", a);
    if (!opt) {
      fprintf(stderr, "syslab report: unknown option '%s'\n\n", a);
      slc_usage(stderr, "report");
      return 2;
    }
    const char *name = opt->name, *v = NULL;
    if (opt->arg) {
      if (i + 1 >= argc) {
        fprintf(stderr, "syslab report: %s needs %s\n", a, opt->arg);
        return 2;
      }
      v = argv[++i];
    }
    if (strcmp(name, "-o") == 0) {
      if (v[0] == '\0') {
        fprintf(stderr, "syslab report: %s needs the name of a folder for the report (an empty name is refused)\n", a);
        return 2;
      }
      o->outdir = v;
    } else if (strcmp(name, "-p") == 0) {
      const char *eq = strchr(v, '=');
      char pname[128] = "";
      if (eq && (size_t)(eq - v) < sizeof pname) snprintf(pname, sizeof pname, "%.*s", (int)(eq - v), v);
      if (!eq || !slR_param_name_ok(pname)) { /* the name becomes code in the injected cell */
        fprintf(stderr,
                "syslab report: -p takes NAME=VALUE, NAME a name of the language (letters, digits and '_', "
                "not starting with a digit, neither a keyword nor a command), got '%s'\n",
                v);
        return 2;
      }
      char *src = value_source(eq + 1);
      json_object_set_new(o->params, pname, json_string(src));
      free(src);
    } else if (strcmp(name, "--allow-errors") == 0) o->allow_errors = 1;
    else if (strcmp(name, "--no-cache") == 0) o->use_cache = 0;
    else if (strcmp(name, "--no-pdf") == 0) o->pdf = 0;
    else if (strcmp(name, "--force") == 0) o->force = 1;
    else if (strcmp(name, "--timeout") == 0) {
      if (slc_number("report", a, v, 1, SLR_MAX_CELL_SECONDS, "seconds a cell may run", &n) != 0) return 2;
      o->timeout = (double)n;
    } else if (strcmp(name, "-j") == 0) {
      if (slc_number("report", a, v, 1, MAX_JOBS, JOBS_UNIT, &n) != 0) return 2;
      o->jobs = (int)n;
    } else if (strcmp(name, "-h") == 0) {
      slc_usage(stdout, "report");
      return 1;
    }
  }
  if (o->count == 0) default_notebooks(o);
  if (o->count == 0) {
    fprintf(stderr, "syslab report: no notebooks given and none in notebooks/\n");
    return 2;
  }
  return 0;
}

static void free_options(slR_Options *o) {
  for (size_t i = 0; i < o->count; i++) free(o->notebooks[i]);
  free(o->notebooks);
  json_decref(o->params);
}

int slc_report_main(int argc, char **argv) {
  slR_Options o;
  memset(&o, 0, sizeof o);
  int rc = parse_args(argc, argv, &o);
  if (rc == 0) rc = slR_report(&o);
  else if (rc == 1) rc = 0; /* --help */
  free_options(&o);
  return rc;
}
