/*
** pdf.c - the lab report's PDF: headless Chromium prints report.html, in a
** private folder of its own, under a time limit (export.h).
*/
#include "export.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "client.h"
#include "notebook.h"
#include "slutil.h"

extern char **environ;

/* the last line with text in the file (its tail only: Chromium can be
** talkative), without its newline; "" when there is none */
static void last_line(const char *path, char *out, size_t size) {
  out[0] = '\0';
  int fd = open(path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
  if (fd < 0) return;
  char buf[4096];
  off_t end = lseek(fd, 0, SEEK_END);
  off_t from = end > (off_t)sizeof buf - 1 ? end - (off_t)sizeof buf + 1 : 0;
  ssize_t n = pread(fd, buf, sizeof buf - 1, from);
  close(fd);
  if (n <= 0) return;
  buf[n] = '\0';
  while (n > 0 && (buf[n - 1] == '\n' || buf[n - 1] == '\r' || buf[n - 1] == ' ')) buf[--n] = '\0';
  char *line = strrchr(buf, '\n');
  line = line ? line + 1 : buf;
  size_t len = strlen(line) < size - 1 ? strlen(line) : size - 1;
  memcpy(out, line, len);
  out[len] = '\0';
  for (char *c = out; *c; c++)
    if ((unsigned char)*c < 0x20) *c = ' ';
}

/* why the browser printed nothing: its exit status or signal, and its last words */
static void browser_failure(int status, const char *log, char *out, size_t size) {
  char said[600];
  last_line(log, said, sizeof said);
  int n;
  if (WIFSIGNALED(status))
    n = snprintf(out, size, ": it was killed by signal %d (%s)", WTERMSIG(status), strsignal(WTERMSIG(status)));
  else if (WEXITSTATUS(status) != 0) n = snprintf(out, size, ": it exited with status %d", WEXITSTATUS(status));
  else n = snprintf(out, size, ": it exited with status 0 but wrote no PDF");
  if (said[0] && n > 0 && (size_t)n < size) n += snprintf(out + n, size - (size_t)n, "; its last message: %s", said);
  /* Chromium reserves far more address space than it uses (tens of GiB)
  ** and dies of a signal at start under any `ulimit -v` */
  struct rlimit as;
  if (WIFSIGNALED(status) && getrlimit(RLIMIT_AS, &as) == 0 && as.rlim_cur != RLIM_INFINITY && n > 0 &&
      (size_t)n < size)
    snprintf(out + n, size - (size_t)n,
             " (the address space is limited, ulimit -v %llu KiB, and Chromium reserves far more than it uses: "
             "lift the limit for the report, or pass --no-pdf)",
             (unsigned long long)(as.rlim_cur / 1024));
}

int slR_export_pdf(const char *outdir, double timeout, char *err, size_t errlen) {
  const char *browser = getenv("SYSLAB_CHROMIUM");
  if (!browser || !*browser) browser = "/usr/bin/chromium";
  if (access(browser, X_OK) != 0) {
    snprintf(err, errlen,
             "cannot make report.pdf: %s is not installed (install the Debian package chromium, or set "
             "SYSLAB_CHROMIUM); report.md and report.html were written",
             browser);
    return -1;
  }
  char html[4300], tmp[4300], final[4300], out_arg[4400], url[4400];
  char abs[4096];
  if (!realpath(outdir, abs)) {
    snprintf(err, errlen, "cannot resolve %s: %s", outdir, strerror(errno));
    return -1;
  }
  snprintf(html, sizeof html, "%s/report.html", abs);
  snprintf(final, sizeof final, "%s/report.pdf", abs);
  snprintf(url, sizeof url, "file://%s", html);
  char profile[] = "/tmp/syslab-chromium-XXXXXX";
  if (!mkdtemp(profile)) {
    snprintf(err, errlen, "cannot create a temporary folder: %s", strerror(errno));
    return -1;
  }
  /* Chromium prints into its private folder (0700, made just now), not into
  ** the report's, where it would follow a link planted at its file name;
  ** the PDF is then written in like every other file (slR_write_atomic) */
  snprintf(tmp, sizeof tmp, "%s/report.pdf", profile);
  snprintf(out_arg, sizeof out_arg, "--print-to-pdf=%s", tmp);
  char profile_arg[128];
  snprintf(profile_arg, sizeof profile_arg, "--user-data-dir=%s", profile);
  /* No --allow-file-access-from-files: the page may not read files with
  ** fetch or XHR. Chromium's sandbox stays on, except as root, where
  ** Chromium refuses to start with it (crbug.com/638180). */
  char *argv[12];
  int argc = 0;
  argv[argc++] = (char *)browser;
  argv[argc++] = "--headless";
  if (geteuid() == 0) argv[argc++] = "--no-sandbox";
  argv[argc++] = "--disable-gpu";
  argv[argc++] = "--no-pdf-header-footer";
  argv[argc++] = "--virtual-time-budget=5000";
  argv[argc++] = profile_arg;
  argv[argc++] = out_arg;
  argv[argc++] = url;
  argv[argc] = NULL;
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_addopen(&fa, 1, "/dev/null", O_WRONLY, 0);
  /* its messages go to the profile folder, for the reason when it fails */
  char log[160];
  snprintf(log, sizeof log, "%s/stderr.log", profile);
  posix_spawn_file_actions_addopen(&fa, 2, log, O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW, 0600);
  /* its own process group, so a stop takes its helper processes too */
  posix_spawnattr_t attr;
  posix_spawnattr_init(&attr);
  posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETPGROUP);
  posix_spawnattr_setpgroup(&attr, 0);
  pid_t pid;
  int rc = posix_spawn(&pid, browser, &fa, &attr, argv, environ);
  posix_spawnattr_destroy(&attr);
  posix_spawn_file_actions_destroy(&fa);
  if (rc != 0) {
    snprintf(err, errlen, "cannot start %s: %s", browser, strerror(rc));
    rmdir(profile);
    return -1;
  }
  double deadline = slU_now() + timeout;
  int status = 0, done = 0;
  while (!done && slU_now() < deadline && !slR_stop_requested()) {
    if (waitpid(pid, &status, WNOHANG) == pid) done = 1;
    else {
      struct timespec ts = {0, 20 * 1000 * 1000};
      nanosleep(&ts, NULL);
    }
  }
  if (!done) {
    kill(-pid, SIGKILL);
    kill(pid, SIGKILL);
    while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
    }
  }
  char why[800] = "";
  if (done && (!WIFEXITED(status) || WEXITSTATUS(status) != 0)) browser_failure(status, log, why, sizeof why);
  /* the PDF, read before the browser's profile folder (scratch) goes */
  char *pdf = NULL;
  size_t pdf_len = 0;
  int fd = open(tmp, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
  if (fd >= 0) {
    slU_Text t = {0};
    char buf[65536];
    ssize_t n;
    while ((n = read(fd, buf, sizeof buf)) > 0 || (n < 0 && errno == EINTR))
      if (n > 0) slU_add_len(&t, buf, (size_t)n);
    close(fd);
    pdf = t.s;
    pdf_len = t.n;
  }
  char cmd_dir[200];
  snprintf(cmd_dir, sizeof cmd_dir, "%s", profile);
  pid_t rm;
  char *rm_argv[] = {"rm", "-rf", cmd_dir, NULL};
  if (posix_spawnp(&rm, "rm", NULL, NULL, rm_argv, environ) == 0) waitpid(rm, NULL, 0);
  if (!done || !WIFEXITED(status) || WEXITSTATUS(status) != 0 || pdf_len < 4 || strncmp(pdf, "%PDF", 4) != 0) {
    free(pdf);
    if (done && !why[0]) snprintf(why, sizeof why, ": it exited with status 0 but wrote no PDF");
    snprintf(err, errlen, "%s could not print report.html to PDF%s", browser,
             done                   ? why
             : slR_stop_requested() ? " (stopped by a signal)"
                                    : " in time");
    return -1;
  }
  rc = slR_write_atomic(final, pdf, pdf_len, err, errlen);
  free(pdf);
  if (rc != 0) return -1;
  return 0;
}
