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
int slc_kernel_main(int argc, char **argv);   /* args.c: kernel/ does the work */
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
/* The one reader of the command line's numbers: a whole number from lo to
** hi, written in digits alone; 0 and *out, or -1 after an error naming the
** subcommand, the option as given, the range, what the number counts
** (`unit`) and the text (-j 3x, -j 2.9 and -j1000 are refused, not read as
** 3, 2 or 256) */
int slc_number(const char *command, const char *option, const char *text, long lo, long hi, const char *unit,
               long *out);
void slc_usage(FILE *f, const char *command);  /* one command, every option */
void slc_usage_all(FILE *f);                   /* every command, every option */

#endif
