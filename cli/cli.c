/*
** cli.c - the table of the `syslab` program's subcommands and their
** options, and the help text made from it.
**
** One table serves both sides: each subcommand's parser accepts only the
** options it finds here (slc_option), and `syslab help`, `syslab --help`
** and `syslab COMMAND --help` print this same table. An option cannot be
** parsed without being listed, so the help cannot fall behind the parser
** (tests/python/test_cli_help.py checks both directions).
*/
#include "cli.h"

#include <string.h>

#include "syslab.h"

static const slc_Option kernel_options[] = {
    {"-f", "--connection-file", "CONNECTION_FILE", "the connection file Jupyter wrote (also --connection-file=FILE)"},
    {"-h", "--help", NULL, "this text"},
    {NULL, NULL, NULL, NULL},
};

static const slc_Option install_options[] = {
    {"--user", NULL, NULL, "into the user's Jupyter folder (the default; $XDG_DATA_HOME/jupyter or ~/.local/share/jupyter)"},
    {"--prefix", NULL, "DIR", "into DIR/share/jupyter/kernels"},
    {"--sys-prefix", NULL, NULL, "into the active virtualenv or conda environment"},
    {"--command", NULL, "PROGRAM", "the program the kernelspec starts (default: this program's absolute path; the "
                                   "Debian package's spec gives `syslab`, found on PATH)"},
    {"-h", "--help", NULL, "this text"},
    {NULL, NULL, NULL, NULL},
};

static const slc_Option run_options[] = {
    {"-h", "--help", NULL, "this text"},
    {NULL, NULL, NULL, NULL},
};

static const slc_Option report_options[] = {
    {"-o", "--output", "DIR", "output folder (default out/report)"},
    {"-p", NULL, "NAME=VALUE", "override a variable of the cell tagged `parameters` (repeatable; a NAME it does not set is warned about)"},
    {"--allow-errors", NULL, NULL, "keep going after a cell fails (otherwise the notebook stops there); failed cells "
                                   "still count as errors"},
    {"--timeout", NULL, "SECONDS", "stop a cell that runs longer than SECONDS, 1 to 86400 (default 600; a cell's `#| timeout: S` option may raise its own)"},
    {"--no-cache", NULL, NULL, "run every notebook even if nothing changed"},
    {"--no-pdf", NULL, NULL, "write report.md and report.html only"},
    {"--force", NULL, NULL, "write into DIR even if it holds files that are not an earlier report"},
    {"-j", "--jobs", "N", "run N notebooks at once, 1 to 256, each in its own kernel (default 1; also -jN)"},
    {"-h", "--help", NULL, "this text"},
    {NULL, NULL, NULL, NULL},
};

static const slc_Option help_options[] = {
    {"--commands-markdown", NULL, NULL, "the reference of every command of the language, as Markdown"},
    {NULL, NULL, NULL, NULL},
};

static const slc_Option no_options[] = {{NULL, NULL, NULL, NULL}};

const slc_Command slc_commands[] = {
    {"kernel", NULL, "run as a Jupyter kernel (Jupyter starts it this way; see `syslab install`)", NULL, kernel_options},
    {"install", NULL, "install the kernelspec so Jupyter finds syslab", NULL, install_options},
    {"run", "FILE", "run a script or a notebook's code cells, outputs as text (FILE may be - for standard input)", NULL,
     run_options},
    {"report", "[NOTEBOOK ...]", "execute lab notebooks and export the lab report",
     "Executes the notebooks (default: notebooks/*.ipynb) with the syslab kernel and writes the lab\n"
     "report to DIR (default out/report): report.md with figures/, report.html and report.pdf, and the\n"
     "executed notebooks in DIR/notebooks. Notebooks themselves are never modified. Cells are named by\n"
     "their place in the notebook, from 1, Markdown cells included.\n\n"
     "Under mpirun (mpirun -n N syslab report ...) the notebooks are spread over the ranks and\n"
     "rank 0 writes the report.\n",
     report_options},
    {"help", "[COMMAND]", "this text, one subcommand's help, a command of the language's help (syslab help train), or "
     "the reference of every command", NULL, help_options},
    {"worker", NULL, "a worker process, started by a search with workers=N (not run by hand)", NULL, no_options},
    {"--version", NULL, "print the version (also `syslab version`)", NULL, no_options},
    {NULL, NULL, NULL, NULL, NULL},
};

const slc_Command *slc_command(const char *name) {
  for (const slc_Command *c = slc_commands; c->name; c++)
    if (strcmp(c->name, name) == 0) return c;
  return NULL;
}

const slc_Option *slc_option(const char *command, const char *arg) {
  const slc_Command *c = slc_command(command);
  for (const slc_Option *o = c ? c->options : no_options; o->name; o++)
    if (strcmp(o->name, arg) == 0 || (o->alias && strcmp(o->alias, arg) == 0)) return o;
  return NULL;
}

int slc_number(const char *command, const char *option, const char *text, long lo, long hi, const char *unit,
               long *out) {
  if (sl_parse_whole(text, lo, hi, out)) return 0;
  fprintf(stderr, "syslab %s: %s takes a whole number from %ld to %ld (%s), not '%s'\n", command, option, lo, hi, unit,
          text);
  return -1;
}

/* "[-o DIR]" pieces, wrapped under "usage: syslab NAME" */
static void synopsis(FILE *f, const slc_Command *c) {
  char head[64];
  int col = snprintf(head, sizeof head, "usage: syslab %s", c->name), indent = col;
  fputs(head, f);
  if (c->args) col += fprintf(f, " %s", c->args);
  for (const slc_Option *o = c->options; o->name; o++) {
    if (strcmp(o->name, "-h") == 0) continue;
    char piece[128];
    int n = snprintf(piece, sizeof piece, " [%s%s%s]", o->name, o->arg ? " " : "", o->arg ? o->arg : "");
    if (col + n > 100) col = fprintf(f, "\n%*s", indent, "") - 1;
    col += fprintf(f, "%s", piece);
  }
  fputc('\n', f);
}

static void options(FILE *f, const slc_Command *c, int indent) {
  for (const slc_Option *o = c->options; o->name; o++) {
    char left[96];
    snprintf(left, sizeof left, "%s%s%s%s%s", o->name, o->alias ? ", " : "", o->alias ? o->alias : "",
             o->arg ? " " : "", o->arg ? o->arg : "");
    if ((int)strlen(left) > 26) fprintf(f, "%*s%s\n%*s%s\n", indent, "", left, indent + 28, "", o->help);
    else fprintf(f, "%*s%-26s  %s\n", indent, "", left, o->help);
  }
}

void slc_usage(FILE *f, const char *command) {
  const slc_Command *c = slc_command(command);
  if (!c) return;
  synopsis(f, c);
  if (c->details) fprintf(f, "\n%s", c->details);  /* ends with its own newline */
  else fprintf(f, "\n%s\n", c->summary);
  if (c->options[0].name) {
    fputc('\n', f);
    options(f, c, 2);
  }
}

void slc_usage_all(FILE *f) {
  fprintf(f, "usage: syslab COMMAND [ARGS]\n");
  for (const slc_Command *c = slc_commands; c->name; c++) {
    fprintf(f, "\n  %s%s%s\n      %s\n", c->name, c->args ? " " : "", c->args ? c->args : "", c->summary);
    options(f, c, 6);
  }
  fprintf(f, "\n`syslab COMMAND --help` explains one command; `syslab help NAME` also explains a command of the "
             "language, as `help NAME` does inside. Inside the language, type `help` for the list of commands.\n");
}
