/*
** fuzz_checkpoint.c - libFuzzer target: the model checkpoint reader
** (slM_graph_decode, graph/checkpoint.c) on any bytes: a model as `save`
** writes it inside a syslab file, and as a search ships it to its workers.
** The seeds in corpus/checkpoint are real models (an MLP, one trained with
** AdamW, quantised, pruned with masks and activation pruning, a
** transformer). A model the reader accepts must be one `save` can write
** again, and what that writes must read back to the same bytes.
*/
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "graph/model.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  sl_init(); /* compress/ installs the decoder of quantisers and activation pruners */
  char err[1024];
  slM_Graph *g = slM_graph_decode((const char *)data, size, err, sizeof err);
  if (!g) {
    if (!err[0]) abort(); /* a refusal says why */
    return 0;
  }
  slU_Text once = {0}, twice = {0};
  if (slM_graph_encode(g, &once, err, sizeof err) != 0) abort();
  slM_Graph *h = slM_graph_decode(once.s, once.n, err, sizeof err);
  if (!h) abort();
  if (slM_graph_encode(h, &twice, err, sizeof err) != 0) abort();
  if (once.n != twice.n || memcmp(once.s, twice.s, once.n) != 0) abort();
  size_t trainable, total;
  slM_param_counts(h, &trainable, &total);
  if (trainable > total) abort();
  free(once.s);
  free(twice.s);
  slM_graph_free(g);
  slM_graph_free(h);
  return 0;
}
