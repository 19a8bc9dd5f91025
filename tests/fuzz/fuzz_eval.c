/*
** fuzz_eval.c - libFuzzer target: the evaluator, on code that calls only
** commands which touch no files, processes or clocks (a host that captures
** output stands in for the kernel). Inputs naming another command are
** skipped, so every execution is fast and repeatable. Only the language,
** table and compression domains are fuzzed here: the others build models,
** run benchmarks or searches, which take seconds by design; new commands
** there are excluded without this file knowing their names.
*/
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "slcommand.h"

/* commands that read or write files, start programs, sleep, or take seconds */
static const char *const unsafe[] = {"load",      "save",           "image",      "plot",  "dataset", "sleep",
                                     "countdown", "train",          "model",      "input", "show",    "evaluate",
                                     "help",      "sweep",          "lora",       "copy",  "capture", "prune",
                                     "compress",  "quantize_model", "difference", NULL};

static size_t out_bytes;
static void cap_write(void *ud, sl_Stream s, const char *t, size_t n) { out_bytes += n; }
static void cap_display(void *ud, const sl_Bundle *b, const char *id, int update) { out_bytes += b->n; }
static sl_Host host = {NULL, cap_write, cap_display, NULL, NULL, NULL};

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  sl_init();
  if (size > 4096) return 0;
  char *code = malloc(size + 1);
  memcpy(code, data, size);
  code[size] = '\0';
  for (int i = 0; unsafe[i]; i++)
    if (strstr(code, unsafe[i])) {
      free(code);
      return 0;
    }
  for (size_t i = 0; sl_command_at(i); i++) {
    const sl_Command *c = sl_command_at(i);
    const sl_Domain *d = sl_command_domain(c);
    if (d == &slB_domain || d == &slT_domain || d == &slQ_domain) continue;
    if (strstr(code, c->name)) {
      free(code);
      return 0;
    }
  }
  setenv("SYSLAB_MEMORY_BUDGET", "256M", 1);
  sl_State *S = sl_new();
  sl_Value v;
  sl_Error e;
  if (sl_execute(S, code, &host, &v, &e) == 0) {
    sl_Bundle b;
    sl_show(v, &b);
    sl_bundle_free(&b);
    sl_release(v);
  } else {
    sl_error_free(&e);
  }
  sl_free(S);
  free(code);
  return 0;
}
