/*
** budget.c - the memory budget: how many bytes one piece of work may ask
** for, checked before large allocations (tensors, models, data sets, grids,
** plots) so that work that cannot fit is refused with its predicted size
** instead of the kernel being killed by the kernel's OOM killer or aborting.
**
** The budget is the smallest of three limits, read afresh at each check
** because other programs come and go: what the machine has available now
** (MemAvailable in /proc/meminfo); what the process may still map under an
** address-space limit (ulimit -v, RLIMIT_AS, less what it maps already);
** and SYSLAB_MEMORY_BUDGET (bytes, or a number with K, M or G), so a teacher
** can hold a class's kernels to a share of a shared machine and the tests
** can check the refusal without filling the machine.
**
** Memory the process has freed counts as available: sl_memory_budget, read
** once by a command before its work, first hands the C library's free heap
** pages back to the system. glibc keeps them otherwise: after a large block
** is freed it raises its mmap threshold (up to 32 MB), so later tensors come
** from its heaps, and what they free there stays with the process, unseen by
** MemAvailable. A grid of language models left the budget about half what
** it was. The per-allocation check (sl_memory_exceeds) does not trim: it
** runs for every large tensor.
*/
#include "slcommand.h"

#include <math.h>
#ifdef __GLIBC__
#include <malloc.h>
#endif
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

static double parse_size(const char *s) {
  char *end;
  double x = strtod(s, &end);
  if (end == s || !(x > 0) || !isfinite(x)) return 0;
  switch (*end) {
    case 'k':
    case 'K': x *= 1024; break;
    case 'm':
    case 'M': x *= 1024 * 1024; break;
    case 'g':
    case 'G': x *= 1024.0 * 1024 * 1024; break;
    default: break;
  }
  return x;
}

static double mem_available(void) {
  FILE *f = fopen("/proc/meminfo", "r");
  double kb = 0;
  if (f) {
    char line[256];
    while (fgets(line, sizeof line, f))
      if (sscanf(line, "MemAvailable: %lf kB", &kb) == 1) break;
    fclose(f);
  }
  if (kb > 0) return kb * 1024;
  long pages = sysconf(_SC_AVPHYS_PAGES), size = sysconf(_SC_PAGESIZE);
  return pages > 0 && size > 0 ? (double)pages * (double)size : 1e18;
}

/* what an address-space limit leaves: the limit less the bytes mapped now
** (VmSize, /proc/self/statm's first field); 0 when there is no limit */
static double address_space_left(void) {
  struct rlimit rl;
  if (getrlimit(RLIMIT_AS, &rl) != 0 || rl.rlim_cur == RLIM_INFINITY) return 0;
  double mapped = 0, pages;
  FILE *f = fopen("/proc/self/statm", "r");
  if (f && fscanf(f, "%lf", &pages) == 1) mapped = pages * (double)sysconf(_SC_PAGESIZE);
  if (f) fclose(f);
  double left = (double)rl.rlim_cur - mapped;
  return left > 1 ? left : 1; /* nothing left: still a limit, and every request is over it */
}

/* the budget and which limit sets it */
static double budget(const char **source) {
  const char *env = getenv("SYSLAB_MEMORY_BUDGET");
  double b = mem_available(), x = env ? parse_size(env) : 0, as = address_space_left();
  *source = "the memory available on this machine";
  if (as > 0 && as < b) b = as, *source = "the address-space limit of this process (ulimit -v)";
  if (x > 0 && x < b) b = x, *source = "SYSLAB_MEMORY_BUDGET";
  return b;
}

double sl_memory_budget(void) {
  const char *source;
#ifdef __GLIBC__
  malloc_trim(0);
#endif
  return budget(&source);
}

const char *sl_memory_budget_source(void) {
  const char *source;
  budget(&source);
  return source;
}

void sl_format_bytes(double bytes, char *out, size_t size) {
  static const char *const units[] = {"bytes", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB"};
  int u = 0;
  while (fabs(bytes) >= 1024 && u < 6) bytes /= 1024, u++;
  if (u == 0) snprintf(out, size, "%.0f bytes", bytes);
  else snprintf(out, size, "%.*f %s", bytes < 10 ? 2 : bytes < 100 ? 1 : 0, bytes, units[u]);
}

int sl_memory_exceeds(double bytes, const char *what, char *msg, size_t size) {
  const char *source;
  double have_bytes = budget(&source);
  if (bytes <= have_bytes) return 0;
  char need[32], have[32];
  sl_format_bytes(bytes, need, sizeof need);
  sl_format_bytes(have_bytes, have, sizeof have);
  snprintf(msg, size, "%s would need %s, more than the memory budget of %s (%s)", what, need, have, source);
  return 1;
}
