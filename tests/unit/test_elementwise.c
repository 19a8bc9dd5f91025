/* test_elementwise.c - the vectorised elementwise passes (kernels/activation.c, graph/ops_core.c)
** against their scalar references: GELU and its slope (eight at a time
** where the CPU has AVX2) give the scalar functions' numbers bit for bit and
** agree with erf and exp in binary64; dropout's mask (sixteen at a time with
** AVX-512) is the reference hash's, element for element. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "graph/model.h"
#include "kernels/activation.h"
#include "graph/train.h"

enum { N = 200003 }; /* not a multiple of 8: the scalar tail runs too */

static float value(size_t i) { return (float)((double)i / N * 24.0 - 12.0) + (i % 3 ? 1e-3f : 0.0f); }

static void test_items_match_scalar_bit_for_bit(void) {
  float *x = malloc(N * sizeof *x), *y = malloc(N * sizeof *y), *dy = malloc(N * sizeof *dy);
  float *acc = malloc(N * sizeof *acc), *set = malloc(N * sizeof *set);
  for (size_t i = 0; i < N; i++) x[i] = value(i), dy[i] = (float)sin((double)i), acc[i] = 0.5f;
  slK_gelu_items(x, y, 0, N);
  slK_gelu_grad_items(x, dy, acc, 0, N, 1);
  slK_gelu_grad_items(x, dy, set, 3, N, 0); /* an unaligned start */
  int bad = 0;
  for (size_t i = 0; i < N && bad < 5; i++) {
    float g = dy[i] * slK_gelu_grad(x[i]);
    if (memcmp(&y[i], &(float){slK_gelu(x[i])}, 4) != 0 || memcmp(&acc[i], &(float){0.5f + g}, 4) != 0 ||
        (i >= 3 && memcmp(&set[i], &g, 4) != 0)) {
      check_fail(__FILE__, __LINE__, "item %zu (x = %.9g): %.9g %.9g against the scalar %.9g %.9g", i, x[i], y[i],
                 acc[i], slK_gelu(x[i]), 0.5f + g);
      bad++;
    }
  }
  float nan = NAN;
  slK_gelu_items(&nan, y, 0, 1);
  CHECK(isnan(y[0]));
  free(x), free(y), free(dy), free(acc), free(set);
}

static void test_against_binary64(void) {
  double worst = 0, worst_grad = 0;
  for (size_t i = 0; i < N; i++) {
    double v = value(i);
    double ref = 0.5 * v * (1 + erf(v / sqrt(2.0)));
    double ref_grad = 0.5 * (1 + erf(v / sqrt(2.0))) + v * exp(-0.5 * v * v) / sqrt(2 * M_PI);
    double e = fabs(slK_gelu((float)v) - ref), eg = fabs(slK_gelu_grad((float)v) - ref_grad);
    worst = e > worst ? e : worst;
    worst_grad = eg > worst_grad ? eg : worst_grad;
  }
  CHECK_MSG(worst < 5e-6, "gelu is %.3g from erf's", worst);
  CHECK_MSG(worst_grad < 5e-6, "gelu' is %.3g from erf's and exp's", worst_grad);
}

/* every element of every dropout node's mask against the reference rule:
** element i is dropped when half (i & 1) of splitmix64(base + (i / 2) * gold)
** is below p * 2^32, base being the node's draw from the graph's generator */
static void test_dropout_mask_is_the_reference(void) {
  slM_MlpSpec ms = {20, 10, {301, 77}, 2, OP_RELU, 0.3f}; /* odd widths: ranges start at odd items */
  char err[256];
  slM_Graph *g = slM_mlp(&ms, 1, 0, err, sizeof err);
  CHECK_MSG(g != NULL, "%s", err);
  enum { B = 97 };
  float x[B * 20];
  for (int i = 0; i < B * 20; i++) x[i] = (float)cos(i * 0.1);
  slM_rng_seed(&g->rng, 11);
  slM_Rng draws = g->rng;
  slM_forward(g, x, NULL, B, 1);
  uint64_t threshold = (uint64_t)(0.3 * 4294967296.0);
  float keep = 1.0f / (1.0f - 0.3f);
  int nodes = 0, bad = 0;
  size_t dropped = 0, total = 0;
  for (int k = 0; k < g->n; k++) {
    slM_Node *n = &g->nodes[k];
    if (n->op != OP_DROPOUT) continue;
    nodes++;
    uint64_t base = slM_rng_next(&draws);
    const slM_Tensor *in = g->nodes[n->inputs[0]].out;
    for (size_t i = 0; i < n->saved->size && bad < 5; i++) {
      slM_Rng r = {base + (i >> 1) * 0x9E3779B97F4A7C15ull};
      uint64_t h = slM_rng_next(&r);
      float z = ((h >> (32 * (i & 1))) & 0xFFFFFFFFull) < threshold ? 0.0f : keep;
      if (n->saved->data[i] != z || n->out->data[i] != in->data[i] * z) {
        check_fail(__FILE__, __LINE__, "%s item %zu: mask %g, reference %g", n->name, i, n->saved->data[i], z);
        bad++;
      }
      dropped += z == 0, total++;
    }
  }
  CHECK_EQ_INT(nodes, 2);
  CHECK_MSG(fabs((double)dropped / (double)total - 0.3) < 0.02, "dropped %zu of %zu", dropped, total);
  slM_graph_free(g);
}

int main(void) {
  RUN(test_dropout_mask_is_the_reference);
  RUN(test_items_match_scalar_bit_for_bit);
  RUN(test_against_binary64);
  return check_summary();
}
