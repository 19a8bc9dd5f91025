/*
** test_layers.c - the layering of the code, checked on every #include "...".
**
** The engine is seven folders, each allowed to use only itself and the
** folders to its left:
**
**     lang  <-  table  <-  kernels  <-  graph  <-  systems  <-  compress  <-  search
**
** and engine/engine.c above them all, the one file that knows every domain.
** plotting/ draws tables (it may use lang and table); cuda/ is reached only
** from engine/kernels/, mpi/ (the MPI transport) only from engine/search/; kernel/, report/ and cli/ drive the engine
** through engine/syslab.h alone, in three layers: kernel/ (the kernel) <-
** report/ (a protocol client of the kernel) <- cli/ (the command line over
** both). The engine's interface headers need no folder in an include:
** every file may include syslab.h (the driver API) and slutil.h (the
** helpers everyone shares), and every file but a driver's slcommand.h (the
** command-author API: a driver runs cells, it does not write commands).
** Any other include without a folder names a file of the including file's
** own folder.
**
** The rule is one list, tests/layers.txt (read into may_use), and one
** function (violation); the test
** checks the function on planted wrong includes, then runs it over the tree
** and names the file and line of every include that breaks the rule.
*/
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "check.h"

/* folder -> the folders its files may include (besides itself and the
** interface headers), read from tests/layers.txt, the one statement of the layers
** (tests/structure.py reads it too) */
#define MAX_FOLDERS 32
#define MAX_USES 16
static struct {
  char folder[64];
  char may_use[MAX_USES][64];
  int nuses;
} may_use[MAX_FOLDERS];
static size_t nfolders;

static void read_layers(void) {
  char path[4096];
  snprintf(path, sizeof path, "%s/tests/layers.txt", SYSLAB_SOURCE_DIR);
  FILE *f = fopen(path, "r");
  if (!f) {
    check_fail(__FILE__, __LINE__, "cannot read %s", path);
    return;
  }
  char line[1024];
  while (fgets(line, sizeof line, f) && nfolders < MAX_FOLDERS) {
    line[strcspn(line, "#\n")] = '\0';
    char *colon = strchr(line, ':');
    if (!colon) continue;
    *colon = '\0';
    if (sscanf(line, "%63s", may_use[nfolders].folder) != 1) continue;
    int n = 0;
    for (char *w = strtok(colon + 1, " \t"); w && n < MAX_USES; w = strtok(NULL, " \t"))
      snprintf(may_use[nfolders].may_use[n++], 64, "%s", w);
    may_use[nfolders++].nuses = n;
  }
  fclose(f);
}

/* the engine's interface headers (engine/), included without a folder */
static int is_interface(const char *inc) {
  return strcmp(inc, "syslab.h") == 0 || strcmp(inc, "slutil.h") == 0 || strcmp(inc, "slcommand.h") == 0;
}

/* A driver of the engine: a folder outside engine/ whose layer reaches the
** engine's top (kernel/, report/, cli/ in tests/layers.txt). */
static int is_driver(const char *dir) {
  if (strncmp(dir, "engine", 6) == 0) return 0;
  for (size_t i = 0; i < nfolders; i++)
    if (strcmp(may_use[i].folder, dir) == 0)
      for (int k = 0; k < may_use[i].nuses; k++)
        if (strcmp(may_use[i].may_use[k], "engine") == 0) return 1;
  return 0;
}

/* "graph/model.h" -> "engine/graph"; "cuda/gpu.h" -> "cuda"; NULL if the
** include names no folder of ours (a bare name, or something else) */
static const char *folder_of_include(const char *inc, char *buf, size_t size) {
  const char *slash = strrchr(inc, '/');
  if (!slash) return NULL;
  snprintf(buf, size, "%.*s", (int)(slash - inc), inc);
  static const char *const engine_folders[] = {"lang", "table", "kernels", "graph", "systems", "compress", "search"};
  for (size_t i = 0; i < sizeof engine_folders / sizeof *engine_folders; i++)
    if (strcmp(buf, engine_folders[i]) == 0) {
      snprintf(buf, size, "engine/%s", engine_folders[i]);
      return buf;
    }
  return buf;
}

/* Why `file` (a path from the top of the source tree) may not include
** `inc`, or NULL when it may. */
static const char *violation(const char *file, const char *inc, char *why, size_t size) {
  char dir[256], target[256];
  snprintf(dir, sizeof dir, "%s", file);
  char *slash = strrchr(dir, '/');
  if (!slash) return NULL;
  *slash = '\0';
  if (strcmp(inc, "slcommand.h") == 0 && is_driver(dir)) {
    snprintf(why, size, "%s drives the engine through syslab.h; slcommand.h is the command-author API", dir);
    return why;
  }
  if (is_interface(inc)) return NULL;
  if (!folder_of_include(inc, target, sizeof target)) return NULL; /* own folder */
  if (strcmp(target, dir) == 0) return NULL;
  for (size_t i = 0; i < nfolders; i++) {
    if (strcmp(may_use[i].folder, dir) != 0) continue;
    for (int k = 0; k < may_use[i].nuses; k++)
      if (strcmp(may_use[i].may_use[k], target) == 0) return NULL;
    snprintf(why, size, "%s may not include %s/ (its layer is below or beside)", dir, target);
    return why;
  }
  return NULL; /* a folder the rule does not cover (tests, bench) */
}

static void test_planted_wrong_includes_are_caught(void) {
  char why[1024];
  /* allowed */
  CHECK(!violation("engine/graph/exec.c", "kernels/kernels.h", why, sizeof why));
  CHECK(!violation("engine/graph/exec.c", "model.h", why, sizeof why));
  CHECK(!violation("engine/compress/quant.h", "graph/transform.h", why, sizeof why));
  CHECK(!violation("engine/kernels/machine.c", "cuda/gpu.h", why, sizeof why));
  CHECK(!violation("plotting/plot.c", "table/table.h", why, sizeof why));
  CHECK(!violation("engine/search/dist.c", "mpi/transport.h", why, sizeof why));
  CHECK(!violation("kernel/shell.c", "syslab.h", why, sizeof why));
  CHECK(!violation("report/inline.c", "slutil.h", why, sizeof why));
  CHECK(!violation("engine/graph/commands.c", "slcommand.h", why, sizeof why));
  CHECK(!violation("plotting/plot.c", "slcommand.h", why, sizeof why));
  CHECK(!violation("engine/engine.c", "slcommand.h", why, sizeof why));
  CHECK(!violation("report/client.c", "kernel/wire.h", why, sizeof why));
  CHECK(!violation("cli/main.c", "report/report.h", why, sizeof why));
  CHECK(!violation("cli/run.c", "kernel/shell.h", why, sizeof why));
  /* upward, sideways, or past the interface: refused */
  CHECK(violation("engine/graph/model.h", "compress/quant.h", why, sizeof why));
  CHECK_CONTAINS(why, "engine/graph may not include engine/compress/");
  CHECK(violation("engine/graph/exec.c", "systems/predict.h", why, sizeof why));
  CHECK(!violation("engine/systems/predict.c", "graph/ops.h", why, sizeof why));
  CHECK(violation("engine/lang/eval.c", "table/table.h", why, sizeof why));
  CHECK(violation("engine/graph/commands.c", "plotting/gnuplot.h", why, sizeof why));
  CHECK(violation("engine/graph/exec.c", "cuda/gpu.h", why, sizeof why));
  CHECK(violation("engine/table/table.c", "kernels/kernels.h", why, sizeof why));
  CHECK(violation("kernel/shell.c", "lang/eval.h", why, sizeof why));
  CHECK(violation("kernel/server.c", "report/report.h", why, sizeof why));
  CHECK_CONTAINS(why, "kernel may not include report/");
  CHECK(violation("kernel/server.c", "cli/cli.h", why, sizeof why));
  CHECK(violation("kernel/shell.c", "slcommand.h", why, sizeof why));
  CHECK_CONTAINS(why, "kernel drives the engine through syslab.h");
  CHECK(violation("report/highlight.c", "slcommand.h", why, sizeof why));
  CHECK(violation("cli/main.c", "slcommand.h", why, sizeof why));
  CHECK(violation("report/report.c", "cli/cli.h", why, sizeof why));
  CHECK(violation("report/export.c", "graph/model.h", why, sizeof why));
  CHECK(violation("plotting/plot.c", "graph/model.h", why, sizeof why));
  CHECK(violation("engine/graph/graph.c", "mpi/transport.h", why, sizeof why));
  CHECK(violation("cli/run.c", "mpi/transport.h", why, sizeof why));
  CHECK(violation("mpi/mpi.c", "search/dist.h", why, sizeof why));
}

static int nviolations, nincludes;

static void check_file(const char *root, const char *rel) {
  char path[4096];
  snprintf(path, sizeof path, "%s/%s", root, rel);
  FILE *f = fopen(path, "r");
  if (!f) {
    check_fail(__FILE__, __LINE__, "cannot read %s", path);
    return;
  }
  char line[4096], inc[512], why[1024];
  for (int no = 1; fgets(line, sizeof line, f); no++) {
    const char *p = line;
    while (*p == ' ' || *p == '\t') p++;
    if (sscanf(p, "#include \"%511[^\"]\"", inc) != 1) continue;
    nincludes++;
    if (!strchr(inc, '/') && !is_interface(inc)) {
      /* a bare name must be a file of this folder, not one found on the
      ** include path elsewhere (which would hide a crossing of layers) */
      char dir[1024], own[2048];
      struct stat st;
      snprintf(dir, sizeof dir, "%s", rel);
      *strrchr(dir, '/') = '\0';
      snprintf(own, sizeof own, "%s/%s/%s", root, dir, inc);
      if (stat(own, &st) != 0) {
        check_fail(rel, no, "#include \"%s\": no such file in %s/; name its folder", inc, dir);
        nviolations++;
      }
    } else if (violation(rel, inc, why, sizeof why)) {
      check_fail(rel, no, "#include \"%s\": %s", inc, why);
      nviolations++;
    }
  }
  fclose(f);
}

static int is_source(const char *name) {
  const char *dot = strrchr(name, '.');
  return dot &&
         (strcmp(dot, ".c") == 0 || strcmp(dot, ".h") == 0 || strcmp(dot, ".cu") == 0 || strcmp(dot, ".cuh") == 0);
}

static void walk(const char *root, const char *rel) {
  char path[4096];
  snprintf(path, sizeof path, "%s/%s", root, rel);
  DIR *d = opendir(path);
  if (!d) return;
  for (struct dirent *e; (e = readdir(d));) {
    if (e->d_name[0] == '.') continue;
    char sub[1024];
    snprintf(sub, sizeof sub, "%s/%s", rel, e->d_name);
    snprintf(path, sizeof path, "%s/%s", root, sub);
    struct stat st;
    if (stat(path, &st) != 0) continue;
    if (S_ISDIR(st.st_mode)) walk(root, sub);
    else if (is_source(e->d_name)) check_file(root, sub);
  }
  closedir(d);
}

static void test_the_tree_keeps_the_layers(void) {
  const char *tops[] = {"engine", "plotting", "kernel", "report", "cli", "cuda", "mpi"};
  for (size_t i = 0; i < sizeof tops / sizeof *tops; i++) walk(SYSLAB_SOURCE_DIR, tops[i]);
  CHECK_MSG(nincludes > 50, "only %d includes were read under %s: is the tree there?", nincludes, SYSLAB_SOURCE_DIR);
  CHECK_EQ_INT(nviolations, 0);
}

static void test_every_engine_folder_exists(void) {
  const char *folders[] = {"lang", "table", "kernels", "graph", "compress", "search"};
  for (size_t i = 0; i < sizeof folders / sizeof *folders; i++) {
    char path[4096];
    struct stat st;
    snprintf(path, sizeof path, "%s/engine/%s", SYSLAB_SOURCE_DIR, folders[i]);
    CHECK_MSG(stat(path, &st) == 0 && S_ISDIR(st.st_mode), "engine/%s is missing", folders[i]);
  }
}

int main(void) {
  read_layers();
  CHECK_MSG(nfolders >= 12, "tests/layers.txt names %zu folders", nfolders);
  RUN(test_planted_wrong_includes_are_caught);
  RUN(test_the_tree_keeps_the_layers);
  RUN(test_every_engine_folder_exists);
  return check_summary();
}
