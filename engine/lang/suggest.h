/*
** suggest.h - "did you mean" for unknown names (suggest.c).
*/
#ifndef SYSLAB_SUGGEST_H
#define SYSLAB_SUGGEST_H

#include "syslab.h"

/* Levenshtein distance, case-insensitive; (size_t)-1 for names over 64 bytes */
size_t sl_edit_distance(const char *a, const char *b);
/* The command (commands=1) or session variable (variables=1, S may be NULL)
** closest to `name`, or NULL when none is close enough. */
const char *sl_suggest(sl_State *S, const char *name, int commands, int variables);

#endif
