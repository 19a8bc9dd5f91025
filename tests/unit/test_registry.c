/* test_registry.c - every command is described completely, and the
** generated reference in docs/commands.md matches the registry. */
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "lang/parse.h"
#include "slcommand.h"

static void test_every_command_is_documented(void) {
  size_t n = 0;
  for (size_t i = 0; sl_command_at(i); i++, n++) {
    const sl_Command *c = sl_command_at(i);
    CHECK_MSG(c->summary && *c->summary, "%s has no summary", c->name);
    CHECK_MSG(c->example && *c->example, "%s has no example", c->name);
    CHECK_MSG(c->group && *c->group, "%s has no group", c->name);
    CHECK_MSG(sl_command_find(c->name) == c, "%s is registered twice", c->name);
    int seen_keyword_only = 0;
    for (int a = 0; c->args[a].name; a++) {
      const sl_Arg *arg = &c->args[a];
      CHECK_MSG(arg->help && *arg->help, "%s.%s has no help", c->name, arg->name);
      if (arg->flags & SL_POSITIONAL)
        CHECK_MSG(!seen_keyword_only, "%s.%s: positional after keyword-only", c->name, arg->name);
      else if (arg->type != SL_ARG_BLOCK) seen_keyword_only = 1;
      if (arg->type == SL_ARG_ENUM)
        CHECK_MSG(arg->choices && arg->choices[0], "%s.%s: enum without choices", c->name, arg->name);
      if (arg->type == SL_ARG_OBJECT) CHECK_MSG(arg->cls != NULL, "%s.%s: object without class", c->name, arg->name);
      if (arg->defval) {
        slY_Error e;
        slY_Tree *t = slY_parse(arg->defval, strlen(arg->defval), &e);
        CHECK_MSG(t != NULL, "%s.%s: default '%s' does not parse", c->name, arg->name, arg->defval);
        slY_free(t);
      }
    }
  }
  CHECK(n >= 10);
}

static void test_examples_parse(void) {
  for (size_t i = 0; sl_command_at(i); i++) {
    const sl_Command *c = sl_command_at(i);
    slY_Error e;
    slY_Tree *t = slY_parse(c->example, strlen(c->example), &e);
    CHECK_MSG(t != NULL, "example of %s does not parse: %s", c->name, e.message);
    slY_free(t);
  }
}

static void test_docs_are_current(void) {
  char path[4096];
  snprintf(path, sizeof path, "%s/docs/commands.md", SYSLAB_SOURCE_DIR);
  FILE *f = fopen(path, "rb");
  CHECK_MSG(f != NULL, "cannot open %s", path);
  if (!f) return;
  static char committed[1 << 20];
  size_t n = fread(committed, 1, sizeof committed - 1, f);
  committed[n] = '\0';
  fclose(f);
  char *generated = sl_registry_markdown();
  CHECK_MSG(strcmp(committed, generated) == 0, "docs/commands.md is out of date: regenerate it with "
                                               "`build/syslab help --commands-markdown > docs/commands.md`");
  free(generated);
}

int main(void) {
  RUN(test_every_command_is_documented);
  RUN(test_examples_parse);
  RUN(test_docs_are_current);
  return check_summary();
}
