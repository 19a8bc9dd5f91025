/*
** layout.c - where the program's own files are: under its install prefix,
** found from the program itself, or in the source and build trees for a
** program run from its build folder.
**
** An installed program is <prefix>/bin/syslab, and the files it ships
** (kernelspec logos, documentation, the MPI module) lie under the same
** prefix: share/syslab/, share/doc/syslab/, lib/syslab/. The prefix is read
** from /proc/self/exe each time, so a package works wherever it is unpacked
** (/usr, /usr/local, a folder a test unpacked it into). A program built
** with SYSLAB_BUILD_TREE_PATHS (the default of a development build) also
** knows its source and build folders, and looks there second; a packaged
** program is built without, so it carries no path of the machine that
** built it.
*/
#include "slutil.h"

#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

int sl_program_file(const char *installed, const char *build_tree, char *out, size_t size) {
  char exe[PATH_MAX];
  ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
  out[0] = '\0';
  if (n > 0) {
    exe[n] = '\0';
    for (int up = 0; up < 2; up++) { /* <prefix>/bin/syslab -> <prefix> */
      char *slash = strrchr(exe, '/');
      if (slash) *slash = '\0';
    }
    snprintf(out, size, "%s/%s", exe, installed);
    if (access(out, R_OK) == 0) return 0;
  }
  if (build_tree && access(build_tree, R_OK) == 0) {
    snprintf(out, size, "%s", build_tree);
    return 0;
  }
  return -1;
}
