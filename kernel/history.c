/*
** history.c - the session's input history, kept in memory, answering
** history_request with its three access types: tail, range and search.
**
** Entries are (session, line, input) with session always 1: a kernel
** process is one session, and a restart starts a new process.
*/
#include "history.h"

#include <fnmatch.h>
#include <stdlib.h>
#include <string.h>

#define SESSION 1

void slj_history_add(slj_History *h, int line, const char *input, const char *output) {
  if (h->n == h->cap) {
    h->cap = h->cap ? h->cap * 2 : 64;
    h->entries = realloc(h->entries, h->cap * sizeof *h->entries);
  }
  slj_HistoryEntry *e = &h->entries[h->n++];
  e->line = line;
  e->input = strdup(input);
  e->output = output ? strdup(output) : NULL;
}

void slj_history_free(slj_History *h) {
  for (size_t i = 0; i < h->n; i++) {
    free(h->entries[i].input);
    free(h->entries[i].output);
  }
  free(h->entries);
  memset(h, 0, sizeof *h);
}

static json_t *entry_json(const slj_HistoryEntry *e, int output) {
  json_t *item = output ? json_pack("[s, s?]", e->input, e->output) : json_string(e->input);
  return json_pack("[i, i, o]", SESSION, e->line, item);
}

json_t *slj_history_reply(const slj_History *h, const json_t *req) {
  const char *type = json_string_value(json_object_get(req, "hist_access_type"));
  int output = json_is_true(json_object_get(req, "output"));
  json_int_t n = json_integer_value(json_object_get(req, "n"));
  json_t *list = json_array();
  if (!type) type = "range";
  if (strcmp(type, "tail") == 0) {
    size_t first = n > 0 && (size_t)n < h->n ? h->n - (size_t)n : 0;
    for (size_t i = first; i < h->n; i++) json_array_append_new(list, entry_json(&h->entries[i], output));
  } else if (strcmp(type, "range") == 0) {
    json_int_t session = json_integer_value(json_object_get(req, "session"));
    json_int_t start = json_integer_value(json_object_get(req, "start"));
    json_t *stop_j = json_object_get(req, "stop");
    json_int_t stop = json_is_integer(stop_j) ? json_integer_value(stop_j) : (json_int_t)1 << 40;
    /* 0 and negative sessions are relative to this one, which is the only one */
    if (session <= 0 || session == SESSION)
      for (size_t i = 0; i < h->n; i++)
        if (h->entries[i].line >= start && h->entries[i].line < stop)
          json_array_append_new(list, entry_json(&h->entries[i], output));
  } else if (strcmp(type, "search") == 0) {
    const char *pattern = json_string_value(json_object_get(req, "pattern"));
    int unique = json_is_true(json_object_get(req, "unique"));
    if (!pattern) pattern = "*";
    /* newest first while collecting, so "unique" keeps the latest of each input */
    json_t *found = json_array();
    for (size_t i = h->n; i-- > 0;) {
      const slj_HistoryEntry *e = &h->entries[i];
      if (fnmatch(pattern, e->input, 0) != 0) continue;
      int seen = 0;
      for (size_t k = 0; unique && k < json_array_size(found); k++) {
        const char *prev = h->entries[json_integer_value(json_array_get(found, k))].input;
        if (strcmp(prev, e->input) == 0) seen = 1;
      }
      if (!seen) json_array_append_new(found, json_integer((json_int_t)i));
      if (n > 0 && (json_int_t)json_array_size(found) >= n) break;
    }
    for (size_t k = json_array_size(found); k-- > 0;)
      json_array_append_new(list, entry_json(&h->entries[json_integer_value(json_array_get(found, k))], output));
    json_decref(found);
  }
  return json_pack("{s:s, s:o}", "status", "ok", "history", list);
}
