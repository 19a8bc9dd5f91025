/*
** registry.c - the one description of every command, and the help texts
** generated from it.
**
** Each domain exports a table of sl_Command records. The language knows no
** domain above itself: the engine's start (engine/engine.c, sl_init) hands
** this file the domains in the order of the layers (which is also the order
** of `help` and of docs/commands.md). This file looks commands up in them
** and renders help as plain text for terminals and the pager, and as
** Markdown for notebooks and the docs.
*/
#include "registry.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const sl_Domain *const *domains; /* set once by sl_registry_use, before any interpreter */
static size_t NDOMAINS;

void sl_registry_use(const sl_Domain *const *list, size_t n) {
  domains = list;
  NDOMAINS = n;
}

int sl_registry_ready(void) { return NDOMAINS > 0; }

const sl_Domain *sl_domain_at(size_t i) { return i < NDOMAINS ? domains[i] : NULL; }

const sl_Domain *sl_command_domain(const sl_Command *cmd) {
  for (size_t d = 0; d < NDOMAINS; d++)
    for (const sl_Command *c = domains[d]->commands; c->name; c++)
      if (c == cmd) return domains[d];
  return NULL;
}

const sl_Command *sl_command_at(size_t i) {
  for (size_t d = 0; d < NDOMAINS; d++)
    for (const sl_Command *c = domains[d]->commands; c->name; c++)
      if (i-- == 0) return c;
  return NULL;
}

const sl_Command *sl_command_find(const char *name) {
  for (size_t d = 0; d < NDOMAINS; d++)
    for (const sl_Command *c = domains[d]->commands; c->name; c++)
      if (strcmp(c->name, name) == 0) return c;
  return NULL;
}

const sl_Arg *sl_command_arg(const sl_Command *cmd, const char *name) {
  for (int i = 0; i < SL_MAX_ARGS && cmd->args[i].name; i++)
    if (strcmp(cmd->args[i].name, name) == 0) return &cmd->args[i];
  return NULL;
}

/* ----------------------------------------------------------------- text */

const char *slH_type_name(const sl_Arg *arg) {
  switch (arg->type) {
    case SL_ARG_ANY: return "value";
    case SL_ARG_NUMBER: return "number";
    case SL_ARG_INT: return "integer";
    case SL_ARG_BOOL: return "true/false";
    case SL_ARG_STRING: return "string";
    case SL_ARG_ENUM: return "choice";
    case SL_ARG_LIST: return "list";
    case SL_ARG_RECORD: return "record";
    case SL_ARG_OBJECT: return arg->cls;
    case SL_ARG_BLOCK: return "block";
  }
  return "value";
}

static void add_type(slU_Text *t, const sl_Arg *arg) {
  if (arg->type != SL_ARG_ENUM) {
    slU_add(t, "%s", slH_type_name(arg));
    return;
  }
  for (int i = 0; arg->choices && arg->choices[i]; i++) slU_add(t, "%s%s", i ? "|" : "", arg->choices[i]);
}

static void add_signature(slU_Text *t, const sl_Command *cmd) {
  slU_add(t, "%s", cmd->name);
  for (int i = 0; cmd->args[i].name; i++) {
    const sl_Arg *a = &cmd->args[i];
    if (a->type == SL_ARG_BLOCK) {
      slU_add(t, (a->flags & SL_REQUIRED) ? " { ... }" : " [{ ... }]");
    } else if (a->flags & SL_VARIADIC) {
      slU_add(t, " [%s...]", a->name);
    } else if (a->flags & SL_POSITIONAL) {
      slU_add(t, (a->flags & SL_REQUIRED) ? " %s" : " [%s]", a->name);
    } else {
      slU_add(t, (a->flags & SL_REQUIRED) ? " %s=" : " [%s=", a->name);
      if (a->defval) slU_add(t, "%s", a->defval);
      else add_type(t, a);
      if (!(a->flags & SL_REQUIRED)) slU_add(t, "]");
    }
  }
  if (cmd->flags & SL_CMD_EXTRA_KEYWORDS) slU_add(t, " [name=value ...]");
}

char *slH_arg_text(const sl_Command *cmd, const sl_Arg *a, int markdown) {
  slU_Text t = {0};
  slU_add_len(&t, "", 0);
  if (markdown) slU_add(&t, "`%s` (", a->name);
  else slU_add(&t, "%s: ", a->name);
  add_type(&t, a);
  if (a->flags & SL_REQUIRED) slU_add(&t, ", required");
  else if (a->defval) slU_add(&t, ", default %s", a->defval);
  if (markdown) slU_add(&t, ")");
  slU_add(&t, " - %s (argument of %s)", a->help ? a->help : "", cmd->name);
  return t.s;
}

/* escapes '|' so help text cannot break a Markdown table */
static void add_cell(slU_Text *t, const char *s) {
  for (; s && *s; s++) slU_add(t, *s == '|' ? "\\|" : *s == '\n' ? " " : "%c", *s);
}

char *slH_help_text(const sl_Command *cmd, int markdown) {
  slU_Text t = {0};
  slU_add_len(&t, "", 0);
  if (markdown) {
    slU_add(&t, "### %s\n\n`", cmd->name);
    add_signature(&t, cmd);
    slU_add(&t, "`\n\n%s\n\n", cmd->summary);
    if (cmd->help && *cmd->help) slU_add(&t, "%s\n\n", cmd->help);
    if (cmd->args[0].name) {
      slU_add(&t, "| argument | type | default | description |\n|---|---|---|---|\n");
      for (int i = 0; cmd->args[i].name; i++) {
        const sl_Arg *a = &cmd->args[i];
        slU_add(&t, "| `%s`%s | ", a->name, (a->flags & SL_POSITIONAL) ? " (positional)" : "");
        slU_Text ty = {0};
        slU_add_len(&ty, "", 0);
        add_type(&ty, a);
        add_cell(&t, ty.s);
        free(ty.s);
        slU_add(&t, " | ");
        if (a->flags & SL_REQUIRED) slU_add(&t, "required");
        else if (a->defval) slU_add(&t, "`"), add_cell(&t, a->defval), slU_add(&t, "`");
        slU_add(&t, " | ");
        add_cell(&t, a->help);
        slU_add(&t, " |\n");
      }
      slU_add(&t, "\n");
    }
    if (cmd->example && *cmd->example) slU_add(&t, "Example:\n\n```syslab\n%s\n```\n", cmd->example);
    return t.s;
  }
  add_signature(&t, cmd);
  slU_add(&t, "\n\n%s\n", cmd->summary);
  if (cmd->help && *cmd->help) slU_add(&t, "\n%s\n", cmd->help);
  if (cmd->args[0].name) {
    slU_add(&t, "\nArguments:\n");
    for (int i = 0; cmd->args[i].name; i++) {
      const sl_Arg *a = &cmd->args[i];
      slU_Text ty = {0};
      slU_add_len(&ty, "", 0);
      add_type(&ty, a);
      if (a->flags & SL_REQUIRED) slU_add(&ty, ", required");
      else if (a->defval) slU_add(&ty, " = %s", a->defval);
      slU_add(&t, "  %-12s %-24s %s\n", a->name, ty.s, a->help ? a->help : "");
      free(ty.s);
    }
  }
  if (cmd->example && *cmd->example) {
    slU_add(&t, "\nExample:\n");
    const char *p = cmd->example;
    while (*p) {
      const char *e = strchr(p, '\n');
      size_t n = e ? (size_t)(e - p) : strlen(p);
      slU_add(&t, "  %.*s\n", (int)n, p);
      p += n + (e != NULL);
    }
  }
  return t.s;
}

/* Every domain once, in layer order; inside a domain, its commands under
** their topics (groups) in the order the topics first appear. */
char *slH_index_text(int markdown) {
  slU_Text t = {0};
  slU_add_len(&t, "", 0);
  if (!markdown) slU_add(&t, "Commands (type NAME? or help NAME for details):\n");
  for (size_t d = 0; d < NDOMAINS; d++) {
    const sl_Command *cs = domains[d]->commands;
    if (markdown) slU_add(&t, "\n**%s**\n", domains[d]->name);
    else slU_add(&t, "\n%s\n", domains[d]->name);
    for (const sl_Command *g = cs; g->name; g++) {
      const sl_Command *first = cs;
      while (strcmp(first->group, g->group) != 0) first++;
      if (first != g) continue; /* this topic was listed already */
      if (markdown) slU_add(&t, "\n*%s*\n\n", g->group);
      else slU_add(&t, "  %s:\n", g->group);
      for (const sl_Command *c = g; c->name; c++) {
        if (strcmp(c->group, g->group) != 0) continue;
        if (markdown) slU_add(&t, "- `%s` - %s\n", c->name, c->summary);
        else slU_add(&t, "    %-14s %s\n", c->name, c->summary);
      }
    }
  }
  return t.s;
}

char *sl_registry_markdown(void) {
  slU_Text t = {0};
  slU_add(&t, "# syslab commands\n\n"
              "Generated from the command registry by `syslab help --commands-markdown`; do not edit by hand.\n"
              "The language itself is described in [language.md](language.md).\n");
  for (size_t d = 0; d < NDOMAINS; d++) {
    slU_add(&t, "\n## %s\n\n%s\n", domains[d]->name, domains[d]->intro);
    for (const sl_Command *c = domains[d]->commands; c->name; c++) {
      char *h = slH_help_text(c, 1);
      slU_add(&t, "\n%s", h);
      free(h);
    }
  }
  return t.s;
}
