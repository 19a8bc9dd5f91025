/*
** fuzz_idx.c - libFuzzer target: the IDX (MNIST format) parser on any bytes,
** as images (3 dimensions) and as labels (1 dimension). What it accepts must
** hold exactly as many bytes as its sizes say.
*/
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "graph/model.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  for (int dims = 1; dims <= 3; dims += 2) {
    uint8_t *out = NULL;
    size_t count;
    int rows, cols;
    char err[256];
    if (slM_idx_parse(data, size, dims, &out, &count, &rows, &cols, err, sizeof err) == 0) {
      size_t total = count * (size_t)rows * (size_t)cols;
      if (total != size - 4 - 4 * (size_t)dims) abort();
      volatile uint8_t sum = 0;
      for (size_t i = 0; i < total; i++) sum += out[i]; /* every byte read, so ASan checks the size */
      (void)sum;
      free(out);
    }
  }
  return 0;
}
