/*
** budget.c - the memory budget: how many bytes one piece of work may ask
** for, checked before large allocations (tensors, models, data sets, grids,
** plots) so that work that cannot fit is refused with its predicted size
** instead of the kernel being killed by the kernel's OOM killer or aborting.
**
** The budget is what the machine has available now (MemAvailable in
** /proc/meminfo), read afresh at each check because other programs come and
** go. SYSLAB_MEMORY_BUDGET overrides it (bytes, or a number with K, M or G),
** so a teacher can hold a class's kernels to a share of a shared machine and
** the tests can check the refusal without filling the machine.
*/
#include "syslab.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static double parse_size(const char *s) {
  char *end;
  double x = strtod(s, &end);
  if (end == s || !(x > 0) || !isfinite(x)) return 0;
  switch (*end) {
    case 'k': case 'K': x *= 1024; break;
    case 'm': case 'M': x *= 1024 * 1024; break;
    case 'g': case 'G': x *= 1024.0 * 1024 * 1024; break;
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

double sl_memory_budget(void) {
  const char *env = getenv("SYSLAB_MEMORY_BUDGET");
  double x = env ? parse_size(env) : 0;
  return x > 0 ? x : mem_available();
}

void sl_format_bytes(double bytes, char *out, size_t size) {
  static const char *const units[] = {"bytes", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB"};
  int u = 0;
  while (fabs(bytes) >= 1024 && u < 6) bytes /= 1024, u++;
  if (u == 0) snprintf(out, size, "%.0f bytes", bytes);
  else snprintf(out, size, "%.*f %s", bytes < 10 ? 2 : bytes < 100 ? 1 : 0, bytes, units[u]);
}

int sl_memory_check(sl_Call *call, const char *arg, double bytes, const char *what) {
  double budget = sl_memory_budget();
  if (bytes <= budget) return 0;
  char need[32], have[32];
  sl_format_bytes(bytes, need, sizeof need);
  sl_format_bytes(budget, have, sizeof have);
  const char *source = getenv("SYSLAB_MEMORY_BUDGET") ? "SYSLAB_MEMORY_BUDGET" : "the memory available on this machine";
  if (arg)
    return sl_arg_error(call, arg, "%s would need %s, more than the memory budget of %s (%s): choose smaller sizes",
                        what, need, have, source);
  return sl_error(call, "%s would need %s, more than the memory budget of %s (%s): choose smaller sizes", what, need,
                  have, source);
}
