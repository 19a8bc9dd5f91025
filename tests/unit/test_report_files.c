/* test_report_files.c - what the report writes into its folder: files
** written whole and never through a symbolic link. */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "check.h"
#include "report/notebook.h"

static char dir[] = "/tmp/syslab-test-report-files-XXXXXX";

static char *slurp(const char *path) {
  FILE *f = fopen(path, "rb");
  if (!f) return NULL;
  static char buf[4096];
  size_t n = fread(buf, 1, sizeof buf - 1, f);
  buf[n] = '\0';
  fclose(f);
  return buf;
}

static void put(const char *path, const char *text) {
  FILE *f = fopen(path, "wb");
  fputs(text, f);
  fclose(f);
}

/* A link planted at the temporary name (PATH.tmpPID) or at the final name
** leads elsewhere: the write goes to PATH itself, the other file is left as
** it was, and PATH ends as a plain file. */
static void test_write_atomic_never_follows_a_link(void) {
  char victim[256], path[256], tmp[300], err[512];
  snprintf(victim, sizeof victim, "%s/victim.txt", dir);
  snprintf(path, sizeof path, "%s/report.md", dir);
  snprintf(tmp, sizeof tmp, "%s.tmp%d", path, (int)getpid());
  put(victim, "someone's file");
  CHECK(symlink(victim, tmp) == 0);
  CHECK_EQ_INT(slR_write_atomic(path, "the report", 10, err, sizeof err), 0);
  CHECK_STREQ(slurp(victim), "someone's file");
  CHECK_STREQ(slurp(path), "the report");
  struct stat st;
  CHECK(lstat(path, &st) == 0 && S_ISREG(st.st_mode));
  CHECK(lstat(tmp, &st) != 0);  /* no temporary file left behind */
  /* a link at the final name is replaced, not written through */
  unlink(path);
  CHECK(symlink(victim, path) == 0);
  CHECK_EQ_INT(slR_write_atomic(path, "again", 5, err, sizeof err), 0);
  CHECK_STREQ(slurp(victim), "someone's file");
  CHECK(lstat(path, &st) == 0 && S_ISREG(st.st_mode));
  CHECK_STREQ(slurp(path), "again");
  unlink(path);
  unlink(victim);
}

static void test_write_atomic_says_why_it_failed(void) {
  char path[256], err[512] = "";
  snprintf(path, sizeof path, "%s/no-such-folder/report.md", dir);
  CHECK_EQ_INT(slR_write_atomic(path, "x", 1, err, sizeof err), -1);
  CHECK_CONTAINS(err, "cannot write");
  CHECK_CONTAINS(err, "No such file or directory");
}

int main(void) {
  if (!mkdtemp(dir)) return 1;
  RUN(test_write_atomic_never_follows_a_link);
  RUN(test_write_atomic_says_why_it_failed);
  rmdir(dir);
  return check_summary();
}
