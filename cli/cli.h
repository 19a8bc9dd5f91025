/*
** cli.h - the subcommands of the `syslab` program, each a main of its own,
** and the one table of them and their options (commands.c) that main.c
** runs them from and both the parsers and the help text read (cli.c).
** argv[0] is the subcommand's name.
*/
#ifndef SYSLAB_CLI_CLI_H
#define SYSLAB_CLI_CLI_H

#include <stdio.h>

int slc_run_main(int argc, char **argv);     /* run.c */
int slc_help_language(const char *name);     /* run.c: `syslab help train` */
int slc_install_main(int argc, char **argv); /* install.c */
int slc_kernel_main(int argc, char **argv);  /* args.c: kernel/ does the work */
int slc_report_main(int argc, char **argv);  /* args.c: report/ does the work */

typedef struct {
  const char *name;  /* "-o"; NULL ends a list */
  const char *alias; /* "--output", or NULL */
  const char *arg;   /* what follows it ("DIR"), NULL for a flag */
  const char *help;
} slc_Option;

typedef struct {
  const char *name;    /* "report"; NULL ends the table */
  const char *args;    /* positional arguments for the synopsis, or NULL */
  const char *summary; /* one line for `syslab help` */
  const char *details; /* more for `syslab NAME --help`, or NULL */
  const slc_Option *options;
  /* what `syslab NAME ...` runs: argv[0] is the name as typed; returns the
  ** program's exit status */
  int (*main)(int argc, char **argv);
  /* other spellings that run it (`syslab version`, `syslab -h`), which help
  ** does not list; NULL when fewer */
  const char *aliases[2];
} slc_Command;

/* the table (commands.c), which main.c hands to cli.c's lookups and help
** before anything else: the parsers read it without naming the file that
** names their entries */
extern const slc_Command slc_commands[];
void slc_use(const slc_Command *table);
/* the row of that name (not an alias: `syslab help version` is the
** language's version), or NULL */
const slc_Command *slc_command(const char *name);
/* the row that `syslab WORD` runs: by name or alias, or NULL */
const slc_Command *slc_command_to_run(const char *word);
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
void slc_usage(FILE *f, const char *command); /* one command, every option */
void slc_usage_all(FILE *f);                  /* every command, every option */

#endif
