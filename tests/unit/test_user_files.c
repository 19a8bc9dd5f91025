/*
** test_user_files.c - a path a user names may be anything: a FIFO (whose
** open blocks for ever, where no interrupt reaches), a device that never
** ends, a folder. `lm_train data=` and `dataset ... path=` blocked for ever
** on a FIFO and trained on /dev/zero; every command that reads or writes a
** named file now goes through the one opener (lang/file.c) and refuses
** these at once, naming the path and what is allowed. A watchdog ends the
** test if anything blocks.
*/
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "check.h"
#include "syslab.h"

static const char *watched;        /* what runs now, for the watchdog's message */
static _Atomic unsigned long runs; /* odd while a piece of code runs */

static void *watchdog(void *arg) {
  (void)arg;
  for (;;) {
    unsigned long was = runs;
    struct timespec ts = {20, 0};
    nanosleep(&ts, NULL);
    if (was % 2 == 1 && was == runs) {
      fprintf(stderr, "FAIL: blocked for 20 s on: %s\n", watched);
      _exit(1);
    }
  }
  return NULL;
}

static const char *eval(sl_State *S, const char *code) {
  watched = code;
  runs++;
  const char *got = check_eval(S, code);
  runs++;
  return got;
}

static char dir[] = "/tmp/syslab-user-files-XXXXXX";

static void test_named_paths_never_block(void) {
  sl_State *S = sl_new();
  char fifo[400], code[600], data_dir[300];
  snprintf(fifo, sizeof fifo, "%s/fifo", dir);
  CHECK(mkfifo(fifo, 0600) == 0);
  CHECK_STREQ(eval(S, "m = lm tiny vocab=256 context=16"), "nil");
  /* lm_train data= : a FIFO, and devices that never end */
  snprintf(code, sizeof code, "lm_train m data=\"%s\" steps=1 batch=1", fifo);
  const char *got = eval(S, code);
  CHECK_CONTAINS(got, "ArgumentError");
  CHECK_CONTAINS(got, "is not a regular file (a pipe, socket or device): the text to train on must be a regular file");
  CHECK_CONTAINS(eval(S, "lm_train m data=\"/dev/zero\" steps=1 batch=1"), "'/dev/zero' is not a regular file");
  CHECK_CONTAINS(eval(S, "lm_train m data=\"/dev/urandom\" steps=1 batch=1"), "'/dev/urandom' is not a regular file");
  snprintf(code, sizeof code, "lm_train m data=\"%s\" steps=1 batch=1", dir);
  CHECK_CONTAINS(eval(S, code), "is a folder, not the text to train on");
  /* dataset fashion_mnist path= : a FIFO under one of the IDX names */
  snprintf(data_dir, sizeof data_dir, "%s/idx", dir);
  CHECK(mkdir(data_dir, 0700) == 0);
  snprintf(fifo, sizeof fifo, "%s/train-images-idx3-ubyte.gz", data_dir);
  CHECK(mkfifo(fifo, 0600) == 0);
  snprintf(code, sizeof code, "d = dataset fashion_mnist path=\"%s\"", data_dir);
  CHECK_CONTAINS(eval(S, code), "train-images-idx3-ubyte.gz' is not a regular file");
  /* load, save and image: a FIFO is refused in both directions */
  snprintf(fifo, sizeof fifo, "%s/fifo", dir);
  snprintf(code, sizeof code, "load \"%s\"", fifo);
  CHECK_CONTAINS(eval(S, code), "is not a regular file");
  snprintf(code, sizeof code, "image \"%s\"", fifo);
  CHECK_CONTAINS(eval(S, code), "is not a regular file");
  snprintf(code, sizeof code, "image \"%s\"", "/dev/zero");
  CHECK_CONTAINS(eval(S, code), "is not a regular file");
  CHECK(unlink(fifo) == 0);
  snprintf(code, sizeof code, "save (table a=[1]) \"%s/t.csv\"\nprint (load \"%s/t.csv\").a", dir, dir);
  CHECK_STREQ(eval(S, code), "nil");
  CHECK_STREQ(check_cap.out.s, "[1]\n");
  sl_free(S);
}

/* a gzipped IDX file is read whole and inflated in memory: a damaged one
** is named, an uncompressed one is read as it is */
static void test_idx_files_are_read_whole(void) {
  sl_State *S = sl_new();
  char path[300], code[512];
  snprintf(path, sizeof path, "%s/gz", dir);
  CHECK(mkdir(path, 0700) == 0);
  snprintf(path, sizeof path, "%s/gz/train-images-idx3-ubyte.gz", dir);
  FILE *f = fopen(path, "wb");
  static const unsigned char cut[] = {0x1f, 0x8b, 8, 0, 0, 0, 0, 0, 0, 3, 0x63, 0x60}; /* a gzip header, cut */
  fwrite(cut, 1, sizeof cut, f);
  fclose(f);
  snprintf(code, sizeof code, "d = dataset fashion_mnist path=\"%s/gz\"", dir);
  CHECK_CONTAINS(eval(S, code), "train-images-idx3-ubyte.gz is corrupt");
  f = fopen(path, "wb");
  static const unsigned char idx[] = {0, 0, 8, 3, 0, 0, 0, 1, 0, 0, 0, 2, 0, 0, 0, 2, 1, 2, 3, 4}; /* 1 image of 2x2 */
  fwrite(idx, 1, sizeof idx, f);
  fclose(f);
  CHECK_CONTAINS(eval(S, code), "images are not 28x28");
  sl_free(S);
}

int main(void) {
  pthread_t dog;
  pthread_create(&dog, NULL, watchdog, NULL);
  pthread_detach(dog);
  if (!mkdtemp(dir)) return 1;
  RUN(test_named_paths_never_block);
  RUN(test_idx_files_are_read_whole);
  if (check_tmpdir_remove(dir) != 0) fprintf(stderr, "could not remove %s\n", dir);
  check_reset();
  return check_summary();
}
