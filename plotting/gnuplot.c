/*
** gnuplot.c - the gnuplot driver.
**
** Each figure is one gnuplot process, started with posix_spawnp (no shell
** ever sees the script), fed its script on standard input, and read back
** from standard output: the script writes a PNG and then an SVG there, and
** the PNG's own chunk structure says where it ends. So nothing goes through
** files, and two figures rendered at once cannot collide. The process is
** killed if it runs past its time limit; what it says on stderr is kept as
** warnings, or as the error when it fails.
*/
#include "gnuplot.h"

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

typedef struct {
  char *s;
  size_t n, cap;
} Bytes;

static void append(Bytes *b, const char *data, size_t n) {
  if (b->n + n + 1 > b->cap) {
    b->cap = (b->n + n + 1) * 2;
    b->s = realloc(b->s, b->cap);
  }
  memcpy(b->s + b->n, data, n);
  b->n += n;
  b->s[b->n] = '\0';
}

void slP_quote(char **buf, size_t *len, size_t *cap, const char *s) {
  Bytes b = {*buf, *len, *cap};
  append(&b, "'", 1);
  for (; *s; s++) {
    char c = *s;
    if (c == '\'') append(&b, "''", 2);
    else if ((unsigned char)c < 32 || c == 127) append(&b, " ", 1);
    else append(&b, &c, 1);
  }
  append(&b, "'", 1);
  *buf = b.s;
  *len = b.n;
  *cap = b.cap;
}

static unsigned be32(const unsigned char *p) {
  return (unsigned)p[0] << 24 | (unsigned)p[1] << 16 | (unsigned)p[2] << 8 | p[3];
}

static const unsigned char png_signature[8] = {0x89, 'P', 'N', 'G', '\r', '\n', 0x1A, '\n'};

/* length of the PNG at the start of data (through its IEND chunk), or 0 */
static size_t png_length(const char *data, size_t len) {
  const unsigned char *p = (const unsigned char *)data;
  if (len < 8 || memcmp(p, png_signature, 8) != 0) return 0;
  size_t at = 8;
  while (at + 12 <= len) {
    size_t chunk = be32(p + at);
    if (chunk > len - at - 12) return 0;
    int end = memcmp(p + at + 4, "IEND", 4) == 0;
    at += 12 + chunk;
    if (end) return at;
  }
  return 0;
}

int slP_png_size(const char *data, size_t len, unsigned *width, unsigned *height) {
  const unsigned char *p = (const unsigned char *)data;
  if (png_length(data, len) != len || len < 24 || memcmp(p + 12, "IHDR", 4) != 0) return 0;
  *width = be32(p + 16);
  *height = be32(p + 20);
  return 1;
}

static double now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

int slP_run_filter(const char *const *argv, const char *input, double timeout, char **out, size_t *outlen, char **errtext,
                   int *exit_status, char *err, size_t errlen) {
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
    return rc == ENOENT ? SLP_MISSING : SLP_FAILED;
  }
  signal(SIGPIPE, SIG_IGN);  /* the program may exit before reading everything */
  fcntl(in[1], F_SETFL, O_NONBLOCK);
  Bytes o = {0}, e = {0};
  size_t written = 0, total = strlen(input);
  int open_out = 1, open_err = 1, open_in = 1;
  double deadline = now() + timeout;
  int status = SLP_OK;
  while (open_out || open_err) {
    struct pollfd p[3];
    int n = 0, io = -1, oo = -1, eo = -1;
    if (open_in) io = n, p[n++] = (struct pollfd){in[1], POLLOUT, 0};
    if (open_out) oo = n, p[n++] = (struct pollfd){outp[0], POLLIN, 0};
    if (open_err) eo = n, p[n++] = (struct pollfd){errp[0], POLLIN, 0};
    double left = deadline - now();
    if (left <= 0) {
      status = SLP_TIMEOUT;
      break;
    }
    int ready = poll(p, (nfds_t)n, (int)(left * 1000) + 1);
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
      if (r > 0) append(&o, buf, (size_t)r);
      else open_out = 0;
    }
    if (eo >= 0 && (p[eo].revents & (POLLIN | POLLHUP))) {
      ssize_t r = read(errp[0], buf, sizeof buf);
      if (r > 0) append(&e, buf, (size_t)r);
      else open_err = 0;
    }
  }
  if (open_in) close(in[1]);
  close(outp[0]);
  close(errp[0]);
  if (status == SLP_TIMEOUT) kill(pid, SIGKILL);
  int wstatus = 0;
  while (waitpid(pid, &wstatus, 0) < 0 && errno == EINTR) {
  }
  if (status == SLP_TIMEOUT) snprintf(err, errlen, "%s did not finish within %g seconds and was stopped", program, timeout);
  *exit_status = WIFEXITED(wstatus) ? WEXITSTATUS(wstatus) : -1;
  *out = o.s ? o.s : calloc(1, 1);
  *outlen = o.n;
  *errtext = e.s;
  return status;

pipe_failed:
  snprintf(err, errlen, "cannot start %s: %s", program, strerror(errno));
  return SLP_FAILED;
}

slP_Status slP_render(const char *script, double timeout, slP_Image *out, char *err, size_t errlen) {
  memset(out, 0, sizeof *out);
  char *o, *e;
  size_t n;
  int exit_status;
  const char *argv[] = {"gnuplot", NULL};
  int st = slP_run_filter(argv, script, timeout, &o, &n, &e, &exit_status, err, errlen);
  if (st == SLP_MISSING) {
    snprintf(err, errlen, "gnuplot is not installed: install the Debian package gnuplot-nox");
    return SLP_MISSING;
  }
  if (st != SLP_OK) {
    free(o);
    free(e);
    return (slP_Status)st;
  }
  slP_Status status = SLP_OK;
  if (exit_status != 0) {
    snprintf(err, errlen, "gnuplot failed: %s", e ? e : "no message");
    status = SLP_FAILED;
  } else {
    size_t png = png_length(o, n);
    const char *svg = png ? o + png : NULL;
    if (!png || !strstr(svg, "<svg") || !strstr(svg, "</svg>")) {
      snprintf(err, errlen, "gnuplot produced no image%s%s", e ? ": " : "", e ? e : "");
      status = SLP_FAILED;
    } else {
      out->png = malloc(png);
      memcpy(out->png, o, png);
      out->png_len = png;
      out->svg_len = n - png;
      out->svg = malloc(out->svg_len + 1);
      memcpy(out->svg, svg, out->svg_len + 1);
      if (e) out->warnings = strdup(e);
    }
  }
  free(o);
  free(e);
  return status;
}

void slP_image_free(slP_Image *img) {
  free(img->png);
  free(img->svg);
  free(img->warnings);
  memset(img, 0, sizeof *img);
}
