/*
** folder.c - the report folder kept safe: what may be written there, what
** the previous run leaves to be removed, and the manifest.
**
** Notebooks may come from anyone (a class's submissions), so the folder is
** checked before anything is written: it must be named, must not be /,
** and must be empty or an earlier report (--force overrides the latter);
** a symbolic link among its parts (figures/, notebooks/, .cache/, the
** report's files) is refused, with or without --force. The previous
** run's report files (outputs.c) and the figures its manifest lists are
** removed before anything runs, so a failed run never leaves an old report
** looking current; no other file is ever deleted.
*/
#include "folder.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "notebook.h"
#include "outputs.h"
#include "slutil.h"

/* The files a run wrote into the report folder, one path a line under a
** header line; the next run deletes those and nothing else. */
#define MANIFEST ".syslab-report"
#define MANIFEST_HEADER "# syslab report: the files the last run wrote (the next run deletes these)"

/* the report's folders, beside its files (outputs.c) */
static const char *const folders[] = {"figures", "notebooks", ".cache", NULL};

/* what a report folder holds; anything else means it is someone's folder */
static int report_entry(const char *name) {
  if (strcmp(name, ".") == 0 || strcmp(name, "..") == 0 || strcmp(name, MANIFEST) == 0 || slR_is_output(name)) return 1;
  for (int i = 0; folders[i]; i++)
    if (strcmp(name, folders[i]) == 0) return 1;
  /* a temporary file left by an interrupted earlier run */
  return (strncmp(name, "report.", 7) == 0 || strncmp(name, MANIFEST ".", sizeof MANIFEST) == 0) &&
         strstr(name, ".tmp") != NULL;
}

/* The report writes and deletes only in its own folder: a symbolic link
** there (figures/ pointing at someone's pictures, notebooks/ at their
** notebooks) is refused before anything is written. 0, or -1 printed. */
static int check_link(const char *outdir, const char *name, int folder) {
  char path[4400], target[4096];
  struct stat st;
  snprintf(path, sizeof path, "%s/%s", outdir, name);
  if (lstat(path, &st) != 0) return 0;
  if (S_ISLNK(st.st_mode)) {
    ssize_t n = readlink(path, target, sizeof target - 1);
    target[n > 0 ? n : 0] = '\0';
    fprintf(stderr,
            "syslab report: %s is a symbolic link (to %s); the report writes and deletes only in its own "
            "folder, never through a link: remove the link, or choose another folder with -o\n",
            path, target[0] ? target : "?");
    return 1;
  }
  if (folder && !S_ISDIR(st.st_mode)) {
    fprintf(stderr,
            "syslab report: %s is not a folder; a report folder's %s must be one: remove it, or choose "
            "another folder with -o\n",
            path, name);
    return 1;
  }
  return 0;
}

static int check_links(const char *outdir) {
  int found = 0;
  for (int i = 0; i < SLR_NOUTPUTS; i++) found += check_link(outdir, slR_outputs[i].name, 0);
  for (int i = 0; folders[i]; i++) found += check_link(outdir, folders[i], 1);
  found += check_link(outdir, MANIFEST, 0);
  return found ? -1 : 0;
}

/* "report.md, report.html, report.pdf, figures/, notebooks/ and .cache/" */
static void holds(char *buf, size_t size) {
  size_t l = 0;
  buf[0] = '\0';
  for (int i = 0; i < SLR_NOUTPUTS; i++) l += (size_t)snprintf(buf + l, size - l, "%s, ", slR_outputs[i].name);
  for (int i = 0; folders[i] && l < size; i++)
    l += (size_t)snprintf(buf + l, size - l, "%s/%s", folders[i],
                          !folders[i + 1]   ? ""
                          : !folders[i + 2] ? " and "
                                            : ", ");
}

/* 0 when the report may be written to outdir; nothing is written here */
int slR_check_outdir(const slR_Options *o) {
  char abs[4096];
  if (realpath(o->outdir, abs) && strcmp(abs, "/") == 0) {
    fprintf(stderr, "syslab report: refusing to write the report into / (-o %s); name a folder of its own\n",
            o->outdir);
    return -1;
  }
  struct stat st;
  if (stat(o->outdir, &st) != 0) return 0; /* created later */
  if (!S_ISDIR(st.st_mode)) {
    fprintf(stderr, "syslab report: %s exists and is not a folder; -o takes a folder\n", o->outdir);
    return -1;
  }
  if (check_links(o->outdir) != 0) return -1; /* --force or not */
  if (o->force) return 0;
  DIR *d = opendir(o->outdir);
  if (!d) {
    fprintf(stderr, "syslab report: cannot read %s: %s\n", o->outdir, strerror(errno));
    return -1;
  }
  char found[600] = "";
  int foreign = 0;
  struct dirent *e;
  while ((e = readdir(d)) != NULL) {
    if (report_entry(e->d_name)) continue;
    if (foreign++ < 3) {
      size_t l = strlen(found);
      snprintf(found + l, sizeof found - l, "%s'%s'", l ? ", " : "", e->d_name);
    }
  }
  closedir(d);
  if (!foreign) return 0;
  char all[256];
  holds(all, sizeof all);
  fprintf(stderr,
          "syslab report: %s is not empty and does not look like an earlier report: it holds %s%s (a report folder "
          "holds only %s). Choose another folder with -o, or pass --force to write into it anyway\n",
          o->outdir, found, foreign > 3 ? " and more" : "", all);
  return -1;
}

/* a path the manifest may name: one of the report's files, or a figure
** (figures/NAME.png or .svg, NAME a plain file name) */
static int manifest_path(const char *p) {
  if (slR_is_output(p)) return 1;
  if (strncmp(p, "figures/", 8) != 0) return 0;
  const char *name = p + 8;
  size_t n = strlen(name);
  return n > 4 && name[0] != '.' && !strchr(name, '/') &&
         (strcmp(name + n - 4, ".png") == 0 || strcmp(name + n - 4, ".svg") == 0);
}

/* The previous run's report goes before anything runs, so that a run that
** fails cannot leave it looking like this run's: report.md, report.html and
** report.pdf, and the figures its manifest lists; no other file, and never
** through a link (unlinking a link removes the link). The manifest is then
** emptied until this run writes its own. */
void slR_remove_previous(const char *outdir) {
  char path[4400];
  slR_remove_outputs(outdir);
  snprintf(path, sizeof path, "%s/" MANIFEST, outdir);
  char line[1200], why[512];
  int fd = slF_open(path, O_RDONLY | O_NOFOLLOW, "the report's manifest", NULL, why, sizeof why);
  FILE *f = fd >= 0 ? fdopen(fd, "r") : NULL;
  if (fd >= 0 && !f) close(fd);
  snprintf(path, sizeof path, "%s/figures", outdir);
  int figures = open(path, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
  if (f && fgets(line, sizeof line, f) && strncmp(line, MANIFEST_HEADER, strlen(MANIFEST_HEADER)) == 0)
    while (fgets(line, sizeof line, f)) {
      line[strcspn(line, "\r\n")] = '\0';
      if (!manifest_path(line) || strncmp(line, "figures/", 8) != 0 || figures < 0) continue;
      struct stat st;
      if (fstatat(figures, line + 8, &st, AT_SYMLINK_NOFOLLOW) == 0 && (S_ISREG(st.st_mode) || S_ISLNK(st.st_mode)))
        unlinkat(figures, line + 8, 0);
    }
  if (f) fclose(f);
  if (figures >= 0) close(figures);
  char err[512];
  snprintf(path, sizeof path, "%s/" MANIFEST, outdir);
  slR_write_atomic(path, MANIFEST_HEADER "\n", strlen(MANIFEST_HEADER) + 1, err, sizeof err);
}

/* this run's manifest: the paths it wrote, in order */
void slR_write_manifest(const char *outdir, json_t *written) {
  slU_Text t = {0};
  slU_add(&t, "%s\n", MANIFEST_HEADER);
  size_t i;
  json_t *p;
  json_array_foreach(written, i, p) if (manifest_path(json_string_value(p))) slU_add(&t, "%s\n", json_string_value(p));
  char path[4400], err[512];
  snprintf(path, sizeof path, "%s/" MANIFEST, outdir);
  if (slR_write_atomic(path, t.s, t.n, err, sizeof err) != 0) fprintf(stderr, "syslab report: %s\n", err);
  free(t.s);
}
