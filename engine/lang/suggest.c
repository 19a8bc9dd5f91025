/*
** suggest.c - "did you mean": the closest command, variable or choice to a
** name that was not found.
**
** It lives apart from the interpreter's entry points because the parser and
** the evaluator both ask for suggestions while the entry points call the
** parser and the evaluator; a leaf file that only reads the registry and the
** session's variables keeps that from becoming a circle.
*/
#include "suggest.h"
#include "state.h"
#include "slcommand.h"

#include <ctype.h>
#include <string.h>

size_t sl_edit_distance(const char *a, const char *b) {
  size_t la = strlen(a), lb = strlen(b);
  if (la > 64 || lb > 64) return (size_t)-1;
  size_t row[65];
  for (size_t j = 0; j <= lb; j++) row[j] = j;
  for (size_t i = 1; i <= la; i++) {
    size_t diag = row[0];
    row[0] = i;
    for (size_t j = 1; j <= lb; j++) {
      size_t up = row[j];
      size_t cost = tolower((unsigned char)a[i - 1]) == tolower((unsigned char)b[j - 1]) ? 0 : 1;
      size_t best = diag + cost;
      if (row[j] + 1 < best) best = row[j] + 1;
      if (row[j - 1] + 1 < best) best = row[j - 1] + 1;
      row[j] = best;
      diag = up;
    }
  }
  return row[lb];
}

/* a suggestion must be close relative to the length of the name */
static int close_enough(const char *name, size_t d) { return d > 0 && d <= 1 + strlen(name) / 3; }

const char *sl_closest(const char *name, const char *const *candidates) {
  const char *best = NULL;
  size_t best_d = (size_t)-1;
  for (; candidates && *candidates; candidates++) {
    size_t d = sl_edit_distance(name, *candidates);
    if (d < best_d) best_d = d, best = *candidates;
  }
  return best && close_enough(name, best_d) ? best : NULL;
}

const char *sl_suggest(sl_State *S, const char *name, int commands, int variables) {
  const char *best = NULL;
  size_t best_d = (size_t)-1;
  if (variables && S)
    for (size_t i = 0; i < sl_record_len(S->vars); i++) {
      size_t d = sl_edit_distance(name, sl_record_key(S->vars, i));
      if (d < best_d) best_d = d, best = sl_record_key(S->vars, i);
    }
  if (commands)
    for (size_t i = 0; sl_command_at(i); i++) {
      size_t d = sl_edit_distance(name, sl_command_at(i)->name);
      if (d < best_d) best_d = d, best = sl_command_at(i)->name;
    }
  return best && close_enough(name, best_d) ? best : NULL;
}
