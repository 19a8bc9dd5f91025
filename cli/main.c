/*
** main.c - the `syslab` command line: one program, several subcommands.
**
**   syslab kernel -f CONNECTION_FILE    the Jupyter kernel
**   syslab install [--user | --prefix DIR | --sys-prefix]
**   syslab run FILE | -                 run a script, outputs as text
**   syslab report [...]                 execute the notebooks, export the report
**   syslab help [COMMAND | --commands-markdown]   usage, a subcommand's or a
**                                       language command's help, or the reference
**   syslab worker                       (started by a search with workers=N)
**   syslab --version
**
** The options of each are listed once, in cli.c, for the parsers and the
** help text alike. cli/ is the top of the program: it reads every argv and
** hands on to kernel/ (the kernel) and report/ (the report), which never
** call back up; run.c and install.c are subcommands of cli/'s own.
*/
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"
#include "syslab.h"

int main(int argc, char **argv) {
  sl_init();
  if (argc < 2) {
    slc_usage_all(stderr);
    return 2;
  }
  const char *cmd = argv[1];
  if (strcmp(cmd, "--version") == 0 || strcmp(cmd, "version") == 0) {
    printf("syslab %s\n", SYSLAB_VERSION);
    return 0;
  }
  if (strcmp(cmd, "help") == 0 || strcmp(cmd, "--help") == 0 || strcmp(cmd, "-h") == 0) {
    if (argc > 2 && !slc_option("help", argv[2]) && slc_command(argv[2])) {
      slc_usage(stdout, argv[2]);  /* syslab help report */
      return 0;
    }
    /* syslab help train: a command of the language, as `help train` inside */
    if (argc > 2 && !slc_option("help", argv[2])) return slc_help_language(argv[2]);
    if (argc > 2 && strcmp(argv[2], "--commands-markdown") == 0) {
      char *md = sl_registry_markdown();
      fputs(md, stdout);
      free(md);
      return 0;
    }
    slc_usage_all(stdout);
    return 0;
  }
  if (strcmp(cmd, "run") == 0) return slc_run_main(argc - 1, argv + 1);
  if (strcmp(cmd, "kernel") == 0) {
    int rc = slc_kernel_main(argc - 1, argv + 1);
    sl_job_end(rc);  /* a search with workers=N made the kernel an MPI process */
    return rc;
  }
  if (strcmp(cmd, "install") == 0) return slc_install_main(argc - 1, argv + 1);
  if (strcmp(cmd, "report") == 0) {
    int rc = slc_report_main(argc - 1, argv + 1);
    sl_job_end(rc);  /* under mpirun the notebooks were spread over the ranks */
    return rc;
  }
  if (strcmp(cmd, "worker") == 0) return sl_worker_main();  /* started by a search with workers=N */
  const char *names[32];   /* "did you mean" among the subcommands */
  size_t n = 0;
  for (const slc_Command *c = slc_commands; c->name && n + 1 < sizeof names / sizeof *names; c++)
    if (c->name[0] != '-') names[n++] = c->name;
  names[n] = NULL;
  const char *best = sl_closest(cmd, names);
  fprintf(stderr, "syslab: unknown command '%s'%s%s%s\n\n", cmd, best ? "; did you mean '" : "", best ? best : "",
          best ? "'?" : "");
  slc_usage_all(stderr);
  return 2;
}
