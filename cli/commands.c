/*
** commands.c - the table of the `syslab` program's subcommands: each row
** its name, help line, options and other spellings, and the function
** `syslab NAME ...` runs.
**
** main.c hands this table to cli.c (slc_use) before anything else, as the
** engine hands its domains to the registry: the parsers, the lookups and
** the help read it there, so that they, below the subcommands, never name
** this file, which names every subcommand's entry.
*/
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "syslab.h"

/* clang-format off */
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
/* clang-format on */

/* ------------------------------------------------ what the rows run */

/* a search with workers=N made the kernel an MPI process: it ends as one */
static int kernel_main(int argc, char **argv) {
  int rc = slc_kernel_main(argc, argv);
  sl_job_end(rc);
  return rc;
}

/* under mpirun the notebooks were spread over the ranks */
static int report_main(int argc, char **argv) {
  int rc = slc_report_main(argc, argv);
  sl_job_end(rc);
  return rc;
}

/* syslab help [SUBCOMMAND | COMMAND | --commands-markdown]: a subcommand's
** usage, a command of the language's help as `help train` inside, the
** reference of every command, or the usage of all */
static int help_main(int argc, char **argv) {
  const char *word = argc > 1 ? argv[1] : NULL;
  if (word && !slc_option("help", word) && slc_command(word)) {
    slc_usage(stdout, word);
    return 0;
  }
  if (word && !slc_option("help", word)) return slc_help_language(word);
  if (word && strcmp(word, "--commands-markdown") == 0) {
    char *md = sl_registry_markdown();
    fputs(md, stdout);
    free(md);
    return 0;
  }
  slc_usage_all(stdout);
  return 0;
}

/* started by a search with workers=N, which ships it what to run */
static int worker_main(int argc, char **argv) {
  (void)argc, (void)argv;
  return sl_worker_main();
}

static int version_main(int argc, char **argv) {
  (void)argc, (void)argv;
  printf("syslab %s\n", SYSLAB_VERSION);
  return 0;
}

/* in the order `syslab help` lists them */
/* clang-format off */
const slc_Command slc_commands[] = {
    {"kernel", NULL, "run as a Jupyter kernel (Jupyter starts it this way; see `syslab install`)", NULL, kernel_options,
     kernel_main, {NULL}},
    {"install", NULL, "install the kernelspec so Jupyter finds syslab", NULL, install_options, slc_install_main, {NULL}},
    {"run", "FILE", "run a script or a notebook's code cells, outputs as text (FILE may be - for standard input)", NULL,
     run_options, slc_run_main, {NULL}},
    {"report", "[NOTEBOOK ...]", "execute lab notebooks and export the lab report",
     "Executes the notebooks (default: notebooks/*.ipynb) with the syslab kernel and writes the lab\n"
     "report to DIR (default out/report): report.md with figures/, report.html and report.pdf, and the\n"
     "executed notebooks in DIR/notebooks. Notebooks themselves are never modified. Cells are named by\n"
     "their place in the notebook, from 1, Markdown cells included.\n\n"
     "Under mpirun (mpirun -n N syslab report ...) the notebooks are spread over the ranks and\n"
     "rank 0 writes the report.\n",
     report_options, report_main, {NULL}},
    {"help", "[COMMAND]", "this text, one subcommand's help, a command of the language's help (syslab help train), or "
     "the reference of every command", NULL, help_options, help_main, {"--help", "-h"}},
    {"worker", NULL, "a worker process, started by a search with workers=N (not run by hand)", NULL, no_options,
     worker_main, {NULL}},
    {"--version", NULL, "print the version (also `syslab version`)", NULL, no_options, version_main, {"version"}},
    {NULL, NULL, NULL, NULL, NULL, NULL, {NULL}},
};
/* clang-format on */
