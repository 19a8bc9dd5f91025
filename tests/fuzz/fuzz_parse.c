/*
** fuzz_parse.c - libFuzzer target: the lexer and the parser on any bytes,
** and the editor questions that work on half-typed code (is it complete,
** what completes the cursor's word, what is under it).
**
** Build and run: make fuzz (tests/fuzz/README in docs/reliability.md).
*/
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "lang/parse.h"
#include "syslab.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  sl_init();
  char *code = malloc(size + 1);
  memcpy(code, data, size);
  code[size] = '\0';
  size_t len = strlen(code); /* the engine takes C strings, as the kernel hands them over */
  slY_Error err;
  slY_Tree *tree = slY_parse(code, len, &err);
  slY_free(tree);
  char indent[16];
  sl_is_complete(code, indent, sizeof indent);
  static sl_State *S;
  if (!S) S = sl_new();
  sl_Completion c;
  sl_complete(S, code, len / 2, &c);
  sl_completion_free(&c);
  sl_Bundle b;
  sl_inspect(S, code, len, 1, &b);
  sl_bundle_free(&b);
  free(code);
  return 0;
}
