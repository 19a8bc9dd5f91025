/*
** cli.c - what is read from the table of the `syslab` program's
** subcommands (commands.c, handed over by main.c): the row a word names,
** a subcommand's options, the help text, and the command line's numbers.
**
** One table serves every side: main.c runs the function a row names (it
** compares no name of its own), each subcommand's parser accepts only the
** options it finds in the table (slc_option), and `syslab help`, `syslab
** --help` and `syslab COMMAND --help` print this same table. A subcommand
** cannot be run or an option parsed without being listed, so the help
** cannot fall behind the program (tests/python/test_cli_help.py checks
** both directions).
*/
#include "cli.h"

#include <string.h>

#include "slutil.h"

static const slc_Option no_options[] = {{NULL, NULL, NULL, NULL}};
static const slc_Command no_commands[] = {{NULL, NULL, NULL, NULL, NULL, NULL, {NULL}}};
static const slc_Command *commands = no_commands;

void slc_use(const slc_Command *table) { commands = table; }

const slc_Command *slc_command(const char *name) {
  for (const slc_Command *c = commands; c->name; c++)
    if (strcmp(c->name, name) == 0) return c;
  return NULL;
}

const slc_Command *slc_command_to_run(const char *word) {
  for (const slc_Command *c = commands; c->name; c++) {
    if (strcmp(c->name, word) == 0) return c;
    for (size_t i = 0; i < sizeof c->aliases / sizeof *c->aliases; i++)
      if (c->aliases[i] && strcmp(c->aliases[i], word) == 0) return c;
  }
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
  if (c->details) fprintf(f, "\n%s", c->details); /* ends with its own newline */
  else fprintf(f, "\n%s\n", c->summary);
  if (c->options[0].name) {
    fputc('\n', f);
    options(f, c, 2);
  }
}

void slc_usage_all(FILE *f) {
  fprintf(f, "usage: syslab COMMAND [ARGS]\n");
  for (const slc_Command *c = commands; c->name; c++) {
    fprintf(f, "\n  %s%s%s\n      %s\n", c->name, c->args ? " " : "", c->args ? c->args : "", c->summary);
    options(f, c, 6);
  }
  fprintf(f, "\n`syslab COMMAND --help` explains one command; `syslab help NAME` also explains a command of the "
             "language, as `help NAME` does inside. Inside the language, type `help` for the list of commands.\n");
}
