/*
** cache.h - the report's cache: an executed notebook reused while its
** source, parameters and syslab version are unchanged (see cache.c).
*/
#ifndef SYSLAB_REPORT_CACHE_H
#define SYSLAB_REPORT_CACHE_H

#include <jansson.h>

#include "options.h"

/* the notebook's key under these options: 64 hex digits and a '\0' */
void slR_cache_key(const char *path, const slR_Options *o, char out[65]);
/* the executed notebook at `executed` when the key saved at key_path is
** `key`, else NULL */
json_t *slR_cache_take(const char *key_path, const char *key, const char *executed);

#endif
