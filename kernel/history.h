/*
** history.h - the session's input history (history.c), kept in memory for
** history_request.
*/
#ifndef SYSLAB_JUPYTER_HISTORY_H
#define SYSLAB_JUPYTER_HISTORY_H

#include <jansson.h>
#include <stddef.h>

typedef struct slj_HistoryEntry {
  int line;
  char *input;
  char *output; /* text/plain of the execute_result, or NULL */
} slj_HistoryEntry;

typedef struct slj_History {
  slj_HistoryEntry *entries;
  size_t n, cap;
} slj_History;

void slj_history_add(slj_History *h, int line, const char *input, const char *output);
/* the content of a history_reply to a request's content */
json_t *slj_history_reply(const slj_History *h, const json_t *request_content);
void slj_history_free(slj_History *h);

#endif
