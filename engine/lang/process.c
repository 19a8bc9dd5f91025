/*
** process.c - running a helper program (gnuplot, Graphviz's dot) as a
** filter: text in on its standard input, text back from its standard output.
**
** The program is started with posix_spawnp, so no shell ever sees its
** arguments or its input; a poll loop feeds standard input while draining
** standard output and error (a program that writes before it has read
** everything cannot deadlock us), and the process is killed when it runs
** past its time limit. Plotting and the graph drawing share it.
*/
#include "process.h"

#include "syslab.h"
#include "slutil.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

extern char **environ;

int slO_run_filter(const char *const *argv, const char *input, double timeout, char **out, size_t *outlen,
                   char **errtext, int *exit_status, char *err, size_t errlen) {
  const char *program = argv[0];
  *out = *errtext = NULL;
  *outlen = 0;
  *exit_status = -1;
  int in[2], outp[2], errp[2];
  if (pipe(in) != 0) goto pipe_failed;
  if (pipe(outp) != 0) {
    close(in[0]), close(in[1]);
    goto pipe_failed;
  }
  if (pipe(errp) != 0) {
    close(in[0]), close(in[1]), close(outp[0]), close(outp[1]);
    goto pipe_failed;
  }
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_adddup2(&fa, in[0], 0);
  posix_spawn_file_actions_adddup2(&fa, outp[1], 1);
  posix_spawn_file_actions_adddup2(&fa, errp[1], 2);
  int fds[6] = {in[0], in[1], outp[0], outp[1], errp[0], errp[1]};
  for (int i = 0; i < 6; i++) posix_spawn_file_actions_addclose(&fa, fds[i]);
  pid_t pid;
  int rc = posix_spawnp(&pid, program, &fa, NULL, (char *const *)argv, environ);
  posix_spawn_file_actions_destroy(&fa);
  close(in[0]);
  close(outp[1]);
  close(errp[1]);
  if (rc != 0) {
    close(in[1]), close(outp[0]), close(errp[0]);
    snprintf(err, errlen, "cannot start %s: %s", program, strerror(rc));
    return rc == ENOENT ? SLO_MISSING : SLO_FAILED;
  }
  signal(SIGPIPE, SIG_IGN); /* the program may exit before reading everything */
  fcntl(in[1], F_SETFL, O_NONBLOCK);
  slU_Text o = {0}, e = {0};
  size_t written = 0, total = strlen(input);
  int open_out = 1, open_err = 1, open_in = 1;
  double deadline = slU_now() + timeout;
  int status = SLO_OK;
  while (open_out || open_err) {
    struct pollfd p[3];
    int n = 0, io = -1, oo = -1, eo = -1;
    if (open_in) io = n, p[n++] = (struct pollfd){in[1], POLLOUT, 0};
    if (open_out) oo = n, p[n++] = (struct pollfd){outp[0], POLLIN, 0};
    if (open_err) eo = n, p[n++] = (struct pollfd){errp[0], POLLIN, 0};
    double left = deadline - slU_now();
    if (left <= 0) {
      status = SLO_TIMEOUT;
      break;
    }
    /* short waits, so that an interrupt stops the program within 50 ms */
    int ready = poll(p, (nfds_t)n, left < 0.05 ? (int)(left * 1000) + 1 : 50);
    if (sl_interrupted()) {
      status = SLO_INTERRUPTED;
      break;
    }
    if (ready < 0 && errno != EINTR) break;
    if (ready <= 0) continue;
    if (io >= 0 && (p[io].revents & (POLLOUT | POLLERR | POLLHUP))) {
      ssize_t w = write(in[1], input + written, total - written);
      if (w > 0) written += (size_t)w;
      if (w < 0 && errno != EAGAIN) written = total;
      if (written == total) {
        close(in[1]);
        open_in = 0;
      }
    }
    char buf[65536];
    if (oo >= 0 && (p[oo].revents & (POLLIN | POLLHUP))) {
      ssize_t r = read(outp[0], buf, sizeof buf);
      if (r > 0) slU_add_len(&o, buf, (size_t)r);
      else open_out = 0;
    }
    if (eo >= 0 && (p[eo].revents & (POLLIN | POLLHUP))) {
      ssize_t r = read(errp[0], buf, sizeof buf);
      if (r > 0) slU_add_len(&e, buf, (size_t)r);
      else open_err = 0;
    }
  }
  if (open_in) close(in[1]);
  close(outp[0]);
  close(errp[0]);
  if (status == SLO_TIMEOUT || status == SLO_INTERRUPTED) kill(pid, SIGKILL);
  int wstatus = 0;
  while (waitpid(pid, &wstatus, 0) < 0 && errno == EINTR) {
  }
  if (status == SLO_TIMEOUT)
    snprintf(err, errlen, "%s did not finish within %g seconds and was stopped", program, timeout);
  if (status == SLO_INTERRUPTED) snprintf(err, errlen, "%s was stopped by an interrupt", program);
  *exit_status = WIFEXITED(wstatus) ? WEXITSTATUS(wstatus) : -1;
  *out = o.s ? o.s : calloc(1, 1);
  *outlen = o.n;
  *errtext = e.s;
  return status;

pipe_failed:
  snprintf(err, errlen, "cannot start %s: %s", program, strerror(errno));
  return SLO_FAILED;
}
