/*
** test_examples.c - every example in the command reference (docs/commands.md,
** generated from the registry) runs as it stands, each in a fresh session,
** as a reader would paste it into an empty notebook.
*/
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "check.h"
#include "slcommand.h"
#include "slutil.h"

static void quiet_write(void *ud, sl_Stream s, const char *t, size_t n) {}
static void quiet_display(void *ud, const sl_Bundle *b, const char *id, int update) {}
/* a reader in JupyterLab types an answer */
static int answer(void *ud, const char *prompt, int password, char **out) {
  *out = strdup("Ada");
  return 0;
}

/* image "figure.png" stands for the reader's own figure: a 1x1 PNG */
static void write_figure(void) {
  static const unsigned char png[] =
      "\x89\x50\x4e\x47\x0d\x0a\x1a\x0a\x00\x00\x00\x0d\x49\x48\x44\x52\x00\x00\x00\x01\x00\x00\x00\x01\x08\x00"
      "\x00\x00\x00\x3a\x7e\x9b\x55\x00\x00\x00\x0a\x49\x44\x41\x54\x78\x9c\x63\x60\x00\x00\x00\x02\x00\x01"
      "\x48\xaf\xa4\x71\x00\x00\x00\x00\x49\x45\x4e\x44\xae\x42\x60\x82";
  FILE *f = fopen("figure.png", "wb");
  fwrite(png, 1, sizeof png - 1, f);
  fclose(f);
}

static void test_every_example_runs(void) {
  sl_Host host = {NULL, quiet_write, quiet_display, NULL, answer, NULL};
  write_figure();
  int examples = 0;
  for (size_t i = 0; sl_command_at(i); i++) {
    const sl_Command *c = sl_command_at(i);
    if (!c->example || !*c->example) continue;
    examples++;
    sl_State *S = sl_new();
    sl_Value v;
    sl_Error e;
    double t0 = slU_now();
    if (sl_execute(S, c->example, &host, &v, &e) != 0) {
      CHECK_MSG(0, "the example of %s fails: %s: %s\n%s", c->name, e.ename, e.evalue, c->example);
      sl_error_free(&e);
    } else {
      sl_release(v);
    }
    sl_free(S);
    double took = slU_now() - t0;
    if (took > 5) printf("  the example of %s took %.0f s\n", c->name, took); /* what a timeout waited on */
  }
  printf("  %d examples run\n", examples);
  CHECK(examples > 50);
}

int main(void) {
  /* examples that save files write them here */
  char dir[64];
  if (!check_tmpdir(dir, sizeof dir, "examples") || chdir(dir) != 0) return 1;
  RUN(test_every_example_runs);
  if (chdir("/") != 0 || check_tmpdir_remove(dir) != 0) return 1;
  return check_summary();
}
