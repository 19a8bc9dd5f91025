/*
** install.c - `syslab install`: writes the kernelspec directory `syslab`
** (kernel.json and the logos) where Jupyter looks for kernels.
**
** The kernelspec is how Jupyter starts this program (`syslab kernel -f
** {connection_file}`), so it belongs to the command line; it uses nothing
** of the protocol. It names this program by its absolute path, or by what
** --command gives: the Debian package's system-wide spec says `syslab`,
** found on PATH, so that it holds no path of the machine that built it.
**
** The directory is assembled under a temporary name beside its final place
** and renamed over it, so a Jupyter server reading kernelspecs at the same
** moment sees either the old spec or the new one, never half of one.
*/
#include <errno.h>
#include <jansson.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <dirent.h>

#include "cli.h"
#include "syslab.h"
#include "slutil.h"

static const char *const logos[] = {"logo-32x32.png", "logo-64x64.png", "logo-svg.svg"};

static int mkdirs(const char *path) {
  char buf[PATH_MAX];
  snprintf(buf, sizeof buf, "%s", path);
  for (char *p = buf + 1; *p; p++) {
    if (*p != '/') continue;
    *p = '\0';
    if (mkdir(buf, 0755) != 0 && errno != EEXIST) return -1;
    *p = '/';
  }
  return mkdir(buf, 0755) != 0 && errno != EEXIST ? -1 : 0;
}

static int copy_file(const char *from, const char *to) {
  FILE *in = fopen(from, "rb");
  if (!in) return -1;
  FILE *out = fopen(to, "wb");
  if (!out) {
    fclose(in);
    return -1;
  }
  char buf[8192];
  size_t n;
  int rc = 0;
  while ((n = fread(buf, 1, sizeof buf, in)) > 0)
    if (fwrite(buf, 1, n, out) != n) rc = -1;
  fclose(in);
  if (fclose(out) != 0) rc = -1;
  return rc;
}

static void remove_tree(const char *dir) {
  DIR *d = opendir(dir);
  if (!d) return;
  struct dirent *e;
  char path[PATH_MAX];
  while ((e = readdir(d)) != NULL) {
    if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0) continue;
    snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
    unlink(path);
  }
  closedir(d);
  rmdir(dir);
}

/* the logos ship in share/syslab/kernelspec under the program's prefix,
** and in share/kernelspec of the source tree it was built from */
#ifdef SYSLAB_SOURCE_DIR
#define BUILD_TREE_LOGOS SYSLAB_SOURCE_DIR "/share/kernelspec"
#else
#define BUILD_TREE_LOGOS NULL
#endif

int slc_install_main(int argc, char **argv) {
  char base[PATH_MAX] = "";
  const char *command = NULL; /* what the kernelspec starts: this program, unless --command names another */
  const char *home = getenv("HOME");
  const char *xdg = getenv("XDG_DATA_HOME");
  for (int i = 1; i < argc; i++) {
    const slc_Option *opt = slc_option("install", argv[i]);
    if (opt && strcmp(opt->name, "-h") == 0) {
      slc_usage(stdout, "install");
      return 0;
    }
    if (!opt || (opt->arg && i + 1 >= argc)) {
      if (opt) fprintf(stderr, "syslab install: %s must follow '%s'\n\n", opt->arg, argv[i]);
      else fprintf(stderr, "syslab install: unknown option '%s'\n\n", argv[i]);
      slc_usage(stderr, "install");
      return 2;
    }
    if (strcmp(argv[i], "--user") == 0) {
      if (xdg && *xdg) snprintf(base, sizeof base, "%s/jupyter/kernels", xdg);
      else snprintf(base, sizeof base, "%s/.local/share/jupyter/kernels", home ? home : ".");
    } else if (strcmp(argv[i], "--prefix") == 0) {
      snprintf(base, sizeof base, "%s/share/jupyter/kernels", argv[++i]);
    } else if (strcmp(argv[i], "--sys-prefix") == 0) {
      const char *prefix = getenv("VIRTUAL_ENV");
      if (!prefix || !*prefix) prefix = getenv("CONDA_PREFIX");
      if (!prefix || !*prefix) {
        fprintf(stderr, "syslab install: --sys-prefix needs an active Python environment "
                        "(VIRTUAL_ENV or CONDA_PREFIX is not set); use --user or --prefix DIR\n");
        return 2;
      }
      snprintf(base, sizeof base, "%s/share/jupyter/kernels", prefix);
    } else if (strcmp(argv[i], "--command") == 0) {
      command = argv[++i];
      if (!*command) {
        fprintf(stderr, "syslab install: --command needs the program's name or path, not an empty string\n");
        return 2;
      }
    }
  }
  if (!base[0]) {
    if (xdg && *xdg) snprintf(base, sizeof base, "%s/jupyter/kernels", xdg);
    else snprintf(base, sizeof base, "%s/.local/share/jupyter/kernels", home ? home : ".");
  }
  char exe[PATH_MAX];
  ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
  if (n <= 0) {
    fprintf(stderr, "syslab install: cannot find the path of this program\n");
    return 1;
  }
  exe[n] = '\0';
  if (!command) command = exe;
  char share[PATH_MAX];
  if (sl_program_file("share/syslab/kernelspec", BUILD_TREE_LOGOS, share, sizeof share) != 0) {
    fprintf(stderr, "syslab install: cannot find the kernelspec logos: %s is missing (reinstall syslab)\n", share);
    return 1;
  }
  if (mkdirs(base) != 0) {
    fprintf(stderr, "syslab install: cannot create %s: %s\n", base, strerror(errno));
    return 1;
  }
  char final[PATH_MAX + 16], tmp[PATH_MAX + 32], old[PATH_MAX + 32];
  snprintf(final, sizeof final, "%s/syslab", base);
  snprintf(tmp, sizeof tmp, "%s/.syslab.tmp%d", base, (int)getpid());
  snprintf(old, sizeof old, "%s/.syslab.old%d", base, (int)getpid());
  remove_tree(tmp);
  if (mkdir(tmp, 0755) != 0) {
    fprintf(stderr, "syslab install: cannot create %s: %s\n", tmp, strerror(errno));
    return 1;
  }
  json_t *spec =
      json_pack("{s:[s, s, s, s], s:s, s:s, s:s, s:{}}", "argv", command, "kernel", "-f", "{connection_file}",
                "display_name", "syslab", "language", SYSLAB_LANGUAGE, "interrupt_mode", "message", "metadata");
  char path[PATH_MAX + 64];
  snprintf(path, sizeof path, "%s/kernel.json", tmp);
  int rc = json_dump_file(spec, path, JSON_INDENT(2));
  json_decref(spec);
  for (int i = 0; i < 3 && rc == 0; i++) {
    char from[PATH_MAX + 64], to[PATH_MAX + 64];
    snprintf(from, sizeof from, "%s/%s", share, logos[i]);
    snprintf(to, sizeof to, "%s/%s", tmp, logos[i]);
    rc = copy_file(from, to);
  }
  if (rc != 0) {
    fprintf(stderr, "syslab install: cannot write the kernelspec in %s: %s\n", tmp, strerror(errno));
    remove_tree(tmp);
    return 1;
  }
  /* swap the new spec in: the old one moves aside first, then goes */
  int had_old = rename(final, old) == 0;
  if (rename(tmp, final) != 0) {
    fprintf(stderr, "syslab install: cannot move the kernelspec to %s: %s\n", final, strerror(errno));
    if (had_old) rename(old, final);
    remove_tree(tmp);
    return 1;
  }
  if (had_old) remove_tree(old);
  printf("Installed the syslab kernelspec in %s\n", final);
  return 0;
}
