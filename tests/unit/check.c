/* check.c - the unit-test harness behind check.h. */
#include "check.h"

#include <stdarg.h>

int check_failures_in_test;
static int passed, failed, skipped;

void check_fail(const char *file, int line, const char *fmt, ...) {
  va_list ap;
  fprintf(stderr, "  FAIL %s:%d: ", file, line);
  va_start(ap, fmt);
  vfprintf(stderr, fmt, ap);
  va_end(ap);
  fputc('\n', stderr);
  check_failures_in_test++;
}

void check_run(const char *name, void (*fn)(void)) {
  check_failures_in_test = 0;
  fn();
  if (check_failures_in_test) {
    failed++;
    printf("not ok - %s\n", name);
  } else {
    passed++;
    printf("ok - %s\n", name);
  }
  fflush(stdout);
}

void check_skip(const char *name, const char *why) {
  skipped++;
  printf("skip - %s: %s\n", name, why);
}

int check_summary(void) {
  if (skipped)
    printf("%d passed, %d failed, %d skipped\n", passed, failed, skipped);
  else
    printf("%d passed, %d failed\n", passed, failed);
  return failed ? 1 : 0;
}
