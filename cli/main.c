/*
** main.c - the `syslab` program: one program, several subcommands.
**
** `syslab NAME ...` runs the function of NAME's row in the table of
** subcommands (commands.c), which also holds each one's options, help line
** and other spellings; `syslab help` prints that table (cli.c). cli/ is the top of the
** program: it reads every argv and hands on to kernel/ (the kernel) and
** report/ (the report), which never call back up; run.c and install.c are
** subcommands of cli/'s own.
*/
#include <stdio.h>

#include "cli.h"
#include "syslab.h"
#include "slutil.h"

int main(int argc, char **argv) {
  sl_init();
  slc_use(slc_commands);
  if (argc < 2) {
    slc_usage_all(stderr);
    return 2;
  }
  const slc_Command *run = slc_command_to_run(argv[1]);
  if (run) return run->main(argc - 1, argv + 1);
  const char *names[32]; /* "did you mean" among the subcommands */
  size_t n = 0;
  for (const slc_Command *c = slc_commands; c->name && n + 1 < sizeof names / sizeof *names; c++)
    if (c->name[0] != '-') names[n++] = c->name;
  names[n] = NULL;
  const char *best = sl_closest(argv[1], names);
  fprintf(stderr, "syslab: unknown command '%s'%s%s%s\n\n", argv[1], best ? "; did you mean '" : "", best ? best : "",
          best ? "'?" : "");
  slc_usage_all(stderr);
  return 2;
}
