/*
** test_passes.c - the pass registry: `passes` lists every pass once, in
** order, with its kind and what it does; `pass` takes exactly those names
** (its help and its error list them), and `pass m NAME` runs the pass's
** own command.
*/
#include <stdio.h>
#include <string.h>

#include "check.h"
#include "slcommand.h"

static const char *const names[] = {"count_nodes", "report", "verify", "remove_dropout", "set_attention", "lora"};
static const char *const kinds[] = {"analysis", "analysis", "analysis", "transform", "transform", "transform"};
static const char *const does[] = {
    "count the nodes by operator",
    "parameters, FLOPs and activation bytes per node",
    "structure and shape checks",
    "delete dropout nodes, rewiring their users",
    "attention as one fused node (attention=fused) or op by op (naive)",
    "add low-rank adapters, freeze the rest",
};
#define NPASSES (sizeof names / sizeof names[0])

static void test_passes_lists_every_pass_once(void) {
  sl_State *S = sl_new();
  check_eval(S, "p = passes");
  CHECK_STREQ(check_eval(S, "len(p.pass)"), "6");
  char code[64], want[160];
  for (size_t i = 0; i < NPASSES; i++) {
    snprintf(code, sizeof code, "p.pass[%zu]", i);
    snprintf(want, sizeof want, "\"%s\"", names[i]);
    CHECK_STREQ(check_eval(S, code), want);
    snprintf(code, sizeof code, "p.kind[%zu]", i);
    snprintf(want, sizeof want, "\"%s\"", kinds[i]);
    CHECK_STREQ(check_eval(S, code), want);
    snprintf(code, sizeof code, "p.does[%zu]", i);
    snprintf(want, sizeof want, "\"%s\"", does[i]);
    CHECK_STREQ(check_eval(S, code), want);
  }
  sl_free(S);
}

static void test_pass_takes_the_listed_names(void) {
  const sl_Arg *a = sl_command_arg(sl_command_find("pass"), "name");
  CHECK(a != NULL && a->type == SL_ARG_ENUM);
  if (!a) return;
  size_t n = 0;
  while (a->choices[n]) n++;
  CHECK_EQ_INT(n, NPASSES);
  for (size_t i = 0; i < n && i < NPASSES; i++) CHECK_STREQ(a->choices[i], names[i]);
  sl_State *S = sl_new();
  CHECK_STREQ(check_eval(S, "m = model mlp hidden=[8]\npass m nosuch"),
              "ArgumentError: 'nosuch' is not a choice for name: allowed are count_nodes, report, verify, "
              "remove_dropout, set_attention, lora");
  sl_free(S);
}

/* each pass is a command of its own name, and `pass` runs it */
static void test_pass_runs_the_passes_command(void) {
  sl_State *S = sl_new();
  check_eval(S, "data = dataset synthetic train=32 test=8 features=4 classes=2\n"
                "m = model mlp data=data hidden=[8]\nt = model transformer depth=1 width=16 heads=2");
  char code[256];
  for (size_t i = 0; i < NPASSES; i++) {
    CHECK_MSG(sl_command_find(names[i]) != NULL, "the pass %s is no command", names[i]);
    const char *model = strcmp(names[i], "set_attention") == 0 ? "t" : "m";
    snprintf(code, sizeof code, "a = pass %s %s\nb = %s %s\n(type a) == (type b) and (format a) == (format b)", model,
             names[i], names[i], model);
    CHECK_MSG(strcmp(check_eval(S, code), "true") == 0, "pass %s: %s", names[i], check_eval(S, code));
  }
  sl_free(S);
}

int main(void) {
  RUN(test_passes_lists_every_pass_once);
  RUN(test_pass_takes_the_listed_names);
  RUN(test_pass_runs_the_passes_command);
  return check_summary();
}
