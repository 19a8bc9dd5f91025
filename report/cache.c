/*
** cache.c - the report's cache key and the notebooks it lets a run reuse.
**
** Like Quarto's freeze: a notebook whose source, parameters, syslab version
** and --allow-errors are unchanged since its last successful run is taken
** from DIR/.cache (its key) and DIR/notebooks (the executed notebook)
** instead of running again. The key is a SHA-256 of those four, so any
** change to one of them runs the notebook afresh. What the cache holds is
** read like any notebook: a reader may have opened and saved it since.
*/
#include "cache.h"

#include <openssl/evp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "notebook.h"
#include "syslab.h"
#include "slutil.h"

void slR_cache_key(const char *path, const slR_Options *o, char out[65]) {
  EVP_MD_CTX *ctx = EVP_MD_CTX_new();
  EVP_DigestInit_ex(ctx, EVP_sha256(), NULL);
  size_t n;
  char why[512], *bytes = slF_read_file(path, "a notebook", 0, &n, why, sizeof why);
  if (bytes) EVP_DigestUpdate(ctx, bytes, n);
  free(bytes);
  char *params = json_dumps(o->params, JSON_SORT_KEYS | JSON_COMPACT);
  EVP_DigestUpdate(ctx, "\0", 1);
  EVP_DigestUpdate(ctx, params, strlen(params));
  EVP_DigestUpdate(ctx, "\0" SYSLAB_VERSION, 1 + strlen(SYSLAB_VERSION));
  EVP_DigestUpdate(ctx, o->allow_errors ? "\1" : "\0", 1);
  free(params);
  unsigned char md[32];
  unsigned len = 0;
  EVP_DigestFinal_ex(ctx, md, &len);
  EVP_MD_CTX_free(ctx);
  for (int i = 0; i < 32; i++) snprintf(out + 2 * i, 3, "%02x", md[i]);
}

json_t *slR_cache_take(const char *key_path, const char *key, const char *executed) {
  struct stat st;
  /* what a link in the folder points at is not this report's */
  if (lstat(executed, &st) != 0 || !S_ISREG(st.st_mode) || lstat(key_path, &st) != 0 || !S_ISREG(st.st_mode))
    return NULL;
  size_t n;
  char cerr[512], *old = slF_read_file(key_path, "a cache key", 1, &n, cerr, sizeof cerr);
  int same = old && strcmp(old, key) == 0;
  free(old);
  return same ? slR_notebook_read(executed, cerr, sizeof cerr) : NULL;
}
