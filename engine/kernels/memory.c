/*
** memory.c - counted allocation for the kernels' buffers, and what the
** process and the machine say about memory.
**
** Workspaces and benchmark operands go through slK_alloc so that a
** benchmark can report the peak bytes of each case, and attention can
** check its predicted size against what the machine still has before it
** allocates. The process's resident peak comes from /proc (VmHWM), reset
** by writing 5 to /proc/self/clear_refs.
*/
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kernels.h"

static atomic_size_t live, peak;

/* the block's size sits in the 64 bytes before it, so slK_free can count it */
void *slK_alloc(size_t bytes) {
  void *p = NULL;
  if (posix_memalign(&p, 64, bytes + 64) != 0) return NULL;
  *(size_t *)p = bytes;
  size_t now = atomic_fetch_add(&live, bytes) + bytes, old = atomic_load(&peak);
  while (now > old && !atomic_compare_exchange_weak(&peak, &old, now)) {
  }
  return (char *)p + 64;
}

void slK_free(void *q) {
  if (!q) return;
  char *p = (char *)q - 64;
  atomic_fetch_sub(&live, *(size_t *)p);
  free(p);
}

/* A thread's scratch, kept from one call to the next: the blocked products'
** packed panels (a megabyte or more) would otherwise come fresh from mmap on
** every call and be cleared page by page by the kernel, which cost 7% of a
** bf16 product at n = 1024 on this VM. It stays counted as live. A second
** use on the same thread while the first holds it gets a block of its own. */
static _Thread_local struct {
  void *p;
  size_t cap;
  int busy;
} scratch;

void *slK_scratch(size_t bytes) {
  if (scratch.busy) return slK_alloc(bytes);
  if (bytes > scratch.cap) {
    slK_free(scratch.p);
    scratch.p = slK_alloc(bytes);
    scratch.cap = scratch.p ? bytes : 0;
    if (!scratch.p) return NULL;
  }
  scratch.busy = 1;
  return scratch.p;
}

void slK_scratch_release(void *p) {
  if (p && p == scratch.p) scratch.busy = 0;
  else slK_free(p);
}

size_t slK_mem_live(void) { return atomic_load(&live); }
size_t slK_mem_peak(void) { return atomic_load(&peak); }
void slK_mem_reset_peak(void) { atomic_store(&peak, atomic_load(&live)); }

/* a "Key:   123 kB" line of a /proc file, in bytes; 0 if absent */
static size_t proc_kb(const char *file, const char *key) {
  FILE *f = fopen(file, "r");
  if (!f) return 0;
  char line[256];
  size_t kb = 0, n = strlen(key);
  while (fgets(line, sizeof line, f))
    if (strncmp(line, key, n) == 0 && line[n] == ':') {
      kb = strtoull(line + n + 1, NULL, 10);
      break;
    }
  fclose(f);
  return kb * 1024;
}

size_t slK_rss_now(void) { return proc_kb("/proc/self/status", "VmRSS"); }
size_t slK_rss_peak(void) { return proc_kb("/proc/self/status", "VmHWM"); }
size_t slK_mem_available(void) { return proc_kb("/proc/meminfo", "MemAvailable"); }

void slK_rss_reset_peak(void) {
  FILE *f = fopen("/proc/self/clear_refs", "w");
  if (!f) return;
  fputs("5", f);
  fclose(f);
}
