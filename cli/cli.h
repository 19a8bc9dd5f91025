/*
** cli.h - the subcommands of the `syslab` program, each a main of its own,
** and the one table of their options (cli.c) that both the parsers and the
** help text read. argv[0] is the subcommand's name.
*/
#ifndef SYSLAB_CLI_CLI_H
#define SYSLAB_CLI_CLI_H

#include <stdio.h>

int slc_run_main(int argc, char **argv);      /* run.c */
int slc_help_language(const char *name);      /* run.c: `syslab help train` */
int slc_install_main(int argc, char **argv);  /* install.c */
int slc_kernel_main(int argc, char **argv);   /* args.c: jupyter/ does the work */
int slc_report_main(int argc, char **argv);   /* args.c: report/ does the work */

typedef struct {
  const char *name;   /* "-o"; NULL ends a list */
  const char *alias;  /* "--output", or NULL */
  const char *arg;    /* what follows it ("DIR"), NULL for a flag */
  const char *help;
} slc_Option;

typedef struct {
  const char *name;     /* "report"; NULL ends the table */
  const char *args;     /* positional arguments for the synopsis, or NULL */
  const char *summary;  /* one line for `syslab help` */
  const char *details;  /* more for `syslab NAME --help`, or NULL */
  const slc_Option *options;
} slc_Command;

extern const slc_Command slc_commands[];
const slc_Command *slc_command(const char *name);
/* the option of command that arg names (by name or alias), or NULL: parsers
** accept nothing else, so what they parse is what the help lists */
const slc_Option *slc_option(const char *command, const char *arg);
void slc_usage(FILE *f, const char *command);  /* one command, every option */
void slc_usage_all(FILE *f);                   /* every command, every option */

#endif
