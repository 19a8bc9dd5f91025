/* test_gpu_ops.c - the graph's operators on the GPU (cuda/ops.cu,
** ops_rows.cu, ops_train.cu) against the CPU operators of engine/graph/.
**
** Each case builds a graph of placeholders and one operator node and runs
** the node's CPU forward and backward from the operator table
** (slM_op(op)->impl[SLM_CPU]), so the reference is the code the graph runs,
** not a formula written again here; then the GPU entry points on copies of
** the same inputs. A backward starts from gradients that already hold
** values (as when another user of a tensor has added its part first), so
** that the GPU's "adds into" is checked too, and the GPU backward is given
** the CPU forward's saved tensors (statistics, probabilities, the rotary
** table), so that a difference in a forward neither hides nor excuses one
** in its backward. The optimisers run train.c's slM_optimizer_step on an
** MLP's parameters. Shapes are the awkward ones: 1, 31, 33, 257 rows, odd
** widths, sizes that are not multiples of a block.
**
** Tolerances, |gpu - cpu| <= atol + rtol |cpu| (each call names its own):
**   exact      the same float32 operations in the same order (cuda/ops.h):
**              ReLU, the residual add, dropout's mask and output, GELU's
**              forward, the embedding both ways, RoPE from the same table,
**              bfloat16 rounding, the cross-entropy backward, the gradients
**              of biases, gains and shifts (column sums in gpu.h's chunked
**              order; 1,100 rows take three rounds of 8 chunks), SGD
**              and AdamW
**   1e-6       a row's sums in binary64, in another order, then rounded to
**              float32 (norm statistics, softmax's <dy, y>, RMSNorm's dot):
**              equal unless a sum lies within about 1e-16 of a float32
**              rounding boundary, then 1 ulp apart
**   2e-6       through an exponential: CUDA's expf (within 2 ulp) against
**              glibc's expf (softmax, the losses' probabilities, SiLU,
**              SwiGLU) or the kernels' vexp (2e-7, GELU's slope); a few ulp
**   1e-5       products (linear): cuBLAS and OpenBLAS sum K float32
**              products in different orders, each rounding error about
**              6e-8 of a partial sum, so atol is 1e-5 sqrt(K) for unit terms
**   rotary table: cos and sin in binary64 (CUDA's within 2 ulp) rounded to
**              float32, so at most 1 ulp of a value below 1 (atol 1.2e-7)
**
** SYSLAB_GPU_TEST_SMALL=1 (what bench/gpu_check.sh sets under
** compute-sanitizer) keeps the small shapes. The GPU's entry points are
** the CUDA module's table (cuda/gpu.h, loaded by kernels/device.h).
** Without a GPU, the CPU side of every case still runs (the harness
** checked, under ASan too), the module's entry points are checked to
** answer -1 with a message (a build without nvcc has no module, and says
** so), and the GPU side prints that it skipped and why. */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "graph/model.h"
#include "graph/ops.h"
#include "graph/slots.h"
#include "graph/train.h"
#include "kernels/device.h"
#include "kernels/round.h"

static const slG_Backend *G; /* the CUDA module's table (kernels/device.h), NULL without one */
static int gpu;              /* a CUDA device is present: the GPU side of each case runs */
static char err[512];
static char tag[160]; /* the case, for messages */
static slM_Rng rng;

static int small(void) {
  const char *e = getenv("SYSLAB_GPU_TEST_SMALL");
  return e && *e == '1';
}

/* how many of a case list's shapes to run: the first `few` when small */
static int shapes(int all, int few) { return small() ? few : all; }

static float *randn(size_t n, double scale) {
  float *x = malloc((n ? n : 1) * sizeof *x);
  for (size_t i = 0; i < n; i++) x[i] = (float)(slM_rng_normal(&rng) * scale);
  return x;
}

/* integers in [0, k) as floats, as the graph holds ids and labels */
static float *ints(size_t n, int k) {
  float *x = malloc((n ? n : 1) * sizeof *x);
  for (size_t i = 0; i < n; i++) x[i] = (float)(slM_rng_next(&rng) % (uint64_t)k);
  return x;
}

/* the CPU side: one node (check.h's check_op_node and its kin) */

/* ---------------------------------------------------- the GPU side */

/* a case's device buffers, freed together; ok turns 0 at the first failure
** (reported), after which the case's GPU calls are skipped */
typedef struct {
  void *p[40];
  int n, ok;
} Dev;

static void *keep(Dev *d, void *p) {
  if (d->n == (int)(sizeof d->p / sizeof d->p[0])) {
    check_fail(__FILE__, __LINE__, "%s: too many device buffers for one case", tag);
    G->free(p);
    d->ok = 0;
    return NULL;
  }
  return d->p[d->n++] = p;
}

/* a device copy of n floats of host (NULL host: filled with NaN bytes, so
** that an item never written shows) */
static float *up(Dev *d, const float *host, size_t n) {
  void *p = NULL;
  float *fill = NULL;
  if (!d->ok) return NULL;
  if (!host) memset(fill = malloc(n * sizeof *fill), 0xff, n * sizeof *fill);
  if (G->alloc(&p, n * sizeof(float), err, sizeof err) != 0 ||
      G->upload(p, host ? host : fill, n * sizeof(float), err, sizeof err) != 0) {
    check_fail(__FILE__, __LINE__, "%s: device copy of %zu floats: %s", tag, n, err);
    G->free(p);
    d->ok = 0;
    p = NULL;
  }
  free(fill);
  return p ? keep(d, p) : NULL;
}

static void dev_free(Dev *d) {
  for (int i = 0; i < d->n; i++) G->free(d->p[i]);
  d->n = 0;
}

#define ON_GPU(d, call) \
  do { \
    if ((d)->ok && (call) != 0) { \
      check_fail(__FILE__, __LINE__, "%s: %s: %s", tag, #call, err); \
      (d)->ok = 0; \
    } \
  } while (0)

/* got against want: bit for bit when rtol and atol are 0, else within atol + rtol |want| */
static void compare(const char *what, const float *got, const float *want, size_t n, double rtol, double atol) {
  size_t bad = 0, worst = 0;
  double worst_excess = -1;
  int exact = rtol == 0 && atol == 0;
  for (size_t i = 0; i < n; i++) {
    double e = fabs((double)got[i] - want[i]), tol = atol + rtol * fabs(want[i]);
    int differs = exact ? memcmp(&got[i], &want[i], sizeof(float)) != 0 : !(e <= tol);
    if (!differs) continue;
    bad++;
    double excess = isnan(e) ? INFINITY : e - tol;
    if (excess > worst_excess) worst_excess = excess, worst = i;
  }
  if (!bad) return;
  uint32_t gb, wb;
  memcpy(&gb, &got[worst], 4), memcpy(&wb, &want[worst], 4);
  check_fail(__FILE__, __LINE__, "%s %s: %zu of %zu items %s; worst item %zu: %.9g (0x%08x), the CPU's %.9g (0x%08x)",
             tag, what, bad, n, exact ? "differ" : "outside the tolerance", worst, got[worst], gb, want[worst], wb);
}

/* downloads n floats of dev and compares them with want */
static void expect(Dev *d, const char *what, const float *dev, const float *want, size_t n, double rtol, double atol) {
  if (!d->ok) return;
  float *got = malloc(n * sizeof *got);
  if (G->download(got, dev, n * sizeof *got, err, sizeof err) != 0) {
    check_fail(__FILE__, __LINE__, "%s: download of %s: %s", tag, what, err);
    d->ok = 0;
  } else {
    compare(what, got, want, n, rtol, atol);
  }
  free(got);
}

/* ------------------------------------------------------- elementwise */

/* ReLU, GELU and SiLU (the CPU's SwiGLU with b = 1: a sigmoid(a) times 1,
** and its da, are SiLU's arithmetic exactly), then SwiGLU itself */
static void activation_case(size_t n) {
  static const struct {
    int act;
    slM_Op op;
    const char *name;
  } acts[] = {{SLG_RELU, OP_RELU, "ReLU"}, {SLG_GELU, OP_GELU, "GELU"}, {SLG_SILU, OP_SWIGLU, "SiLU"}};
  float *x = randn(n, 3), *b = randn(n, 1), *dy = randn(n, 1), *g0 = randn(n, 0.5), *g1 = randn(n, 0.5);
  float *ones = malloc(n * sizeof *ones);
  for (size_t i = 0; i < n; i++) ones[i] = 1;
  if (n > 2) x[0] = 0.0f, x[1] = -0.0f; /* ReLU's slope at zero, and the sign of its zeros */
  int shape[1] = {(int)n};
  for (int a = 0; a < 4; a++) {
    int swiglu = a == 3, act = swiglu ? SLG_SILU : acts[a].act;
    slM_Graph *g = check_graph_new();
    int ia = check_input(g, 1, shape, x),
        ib = swiglu || act == SLG_SILU ? check_input(g, 1, shape, swiglu ? b : ones) : -1;
    slM_Node *nd = check_op_node(g, swiglu ? OP_SWIGLU : acts[a].op, ia, ib);
    float *init[2] = {g0, swiglu ? g1 : NULL};
    check_forward(g, nd);
    check_backward(g, nd, dy, init, NULL);
    snprintf(tag, sizeof tag, "%s n = %zu", swiglu ? "SwiGLU" : acts[a].name, n);
    Dev d = {.ok = gpu};
    float *dx = up(&d, x, n), *db = up(&d, b, n), *ddy = up(&d, dy, n), *y = up(&d, NULL, n);
    float *dg0 = up(&d, g0, n), *dg1 = up(&d, g1, n);
    if (swiglu) {
      ON_GPU(&d, G->swiglu_forward(dx, db, y, n, err, sizeof err));
      ON_GPU(&d, G->swiglu_backward(dx, db, ddy, dg0, dg1, n, err, sizeof err));
      expect(&d, "db", dg1, check_grad_of(g, nd, 1), n, 1e-6, 2e-6);
    } else {
      ON_GPU(&d, G->activation_forward(act, dx, y, n, err, sizeof err));
      ON_GPU(&d, G->activation_backward(act, dx, ddy, dg0, n, err, sizeof err));
    }
    int exp_fwd = act == SLG_SILU, exp_bwd = act != SLG_RELU;
    expect(&d, "y", y, nd->out->data, n, exp_fwd ? 1e-6 : 0, exp_fwd ? 1e-7 : 0);
    expect(&d, "dx", dg0, check_grad_of(g, nd, 0), n, exp_bwd ? 1e-6 : 0, exp_bwd ? 2e-6 : 0);
    dev_free(&d);
    slM_graph_free(g);
  }
  free(x), free(b), free(dy), free(g0), free(g1), free(ones);
}

static void test_activations(void) {
  static const size_t ns[] = {1, 3, 31, 33, 257, 4099, 100003};
  for (int i = 0; i < shapes(7, 4); i++) activation_case(ns[i]);
}

/* the mask from the forward's one draw (g->rng's next), numerics §9 */
static void dropout_case(size_t n, float p) {
  float *x = randn(n, 1), *dy = randn(n, 1), *g0 = randn(n, 0.5);
  int shape[1] = {(int)n};
  slM_Graph *g = check_graph_new();
  g->training = 1;
  slM_Node *nd = check_op_node(g, OP_DROPOUT, check_input(g, 1, shape, x), -1);
  nd->p = p;
  slM_Rng draws = g->rng;
  check_forward(g, nd);
  uint64_t base = slM_rng_next(&draws);
  float *init[1] = {g0};
  check_backward(g, nd, dy, init, NULL);
  snprintf(tag, sizeof tag, "dropout n = %zu p = %g", n, p);
  Dev d = {.ok = gpu};
  float *dx = up(&d, x, n), *y = up(&d, NULL, n), *mask = up(&d, NULL, n), *ddy = up(&d, dy, n), *dg = up(&d, g0, n);
  ON_GPU(&d, G->dropout_forward(dx, y, mask, n, p, base, err, sizeof err));
  ON_GPU(&d, G->dropout_backward(ddy, p > 0 ? mask : NULL, dg, n, err, sizeof err));
  expect(&d, "y", y, nd->out->data, n, 0, 0);
  if (p > 0) expect(&d, "mask", mask, nd->saved->data, n, 0, 0);
  expect(&d, "dx", dg, check_grad_of(g, nd, 0), n, 0, 0);
  dev_free(&d);
  slM_graph_free(g);
  free(x), free(dy), free(g0);
}

static void test_dropout(void) {
  static const size_t ns[] = {1, 2, 31, 33, 4097, 100003};
  for (int i = 0; i < shapes(6, 4); i++) dropout_case(ns[i], 0.3f);
  dropout_case(257, 0.5f);
  dropout_case(33, 0.0f); /* evaluation's copy: dx += dy */
}

/* two tensors, or one plus a parameter row broadcast over the rows */
static void add_case(int rows, int width, int broadcast) {
  size_t n = (size_t)rows * width, bn = broadcast ? (size_t)width : n;
  float *a = randn(n, 1), *b = randn(bn, 1), *dy = randn(n, 1), *ga = randn(n, 0.5), *gb = randn(bn, 0.5);
  int shape[2] = {rows, width};
  slM_Graph *g = check_graph_new();
  int ia = check_input(g, 2, shape, a);
  slM_Node *nd = check_op_node(g, OP_ADD, ia, broadcast ? -1 : check_input(g, 2, shape, b));
  if (broadcast) check_param(nd, 1, &width, b);
  float *init[2] = {ga, gb}, *pinit[1] = {gb};
  check_forward(g, nd);
  check_backward(g, nd, dy, init, broadcast ? pinit : NULL);
  snprintf(tag, sizeof tag, "add %d x %d%s", rows, width, broadcast ? " (a row broadcast)" : "");
  Dev d = {.ok = gpu};
  float *da = up(&d, a, n), *db = up(&d, b, bn), *ddy = up(&d, dy, n), *y = up(&d, NULL, n);
  float *dga = up(&d, ga, n), *dgb = up(&d, gb, bn);
  ON_GPU(&d, G->add_forward(da, db, y, n, bn, err, sizeof err));
  ON_GPU(&d, G->add_backward(ddy, dga, dgb, n, bn, err, sizeof err));
  expect(&d, "y", y, nd->out->data, n, 0, 0);
  expect(&d, "da", dga, check_grad_of(g, nd, 0), n, 0, 0);
  expect(&d, "db", dgb, broadcast ? nd->params[0]->grad->data : check_grad_of(g, nd, 1), bn, 0, 0);
  dev_free(&d);
  slM_graph_free(g);
  free(a), free(b), free(dy), free(ga), free(gb);
}

static void test_add(void) {
  static const int s[][2] = {{1, 1}, {31, 7}, {33, 33}, {257, 129}, {3, 1000}};
  for (int i = 0; i < shapes(5, 3); i++)
    for (int broadcast = 0; broadcast < 2; broadcast++) add_case(s[i][0], s[i][1], broadcast);
}

/* bfloat16 rounding: every upper half under low halves at, around and
** between the ties, and random ones; NaNs, infinities and subnormals included */
static void test_bf16(void) {
  static const uint32_t lows[] = {0x0000, 0x0001, 0x7FFF, 0x8000, 0x8001, 0xFFFF};
  size_t n = 65536 * 7;
  uint32_t *bits = malloc(n * sizeof *bits);
  float *x = malloc(n * sizeof *x), *want = malloc(n * sizeof *want);
  for (size_t i = 0; i < n; i++) {
    uint32_t lo = i % 7 < 6 ? lows[i % 7] : (uint32_t)(slM_rng_next(&rng) & 0xFFFF);
    bits[i] = (uint32_t)(i / 7) << 16 | lo;
  }
  memcpy(x, bits, n * sizeof *x);
  slK_round_array(SLK_BF16, x, want, n);
  snprintf(tag, sizeof tag, "bfloat16 rounding of %zu patterns", n);
  Dev d = {.ok = gpu};
  float *dx = up(&d, x, n), *y = up(&d, NULL, n);
  ON_GPU(&d, G->round_bf16(dx, y, n, err, sizeof err));
  ON_GPU(&d, G->round_bf16(dx, dx, n, err, sizeof err));
  expect(&d, "y", y, want, n, 0, 0);
  expect(&d, "in place", dx, want, n, 0, 0);
  dev_free(&d);
  free(bits), free(x), free(want);
}

/* ------------------------------------------------------- the products */

static void linear_case(int rows, int in_f, int out_f) {
  size_t nx = (size_t)rows * in_f, nw = (size_t)out_f * in_f, ny = (size_t)rows * out_f;
  float *x = randn(nx, 1), *w = randn(nw, 1 / sqrt(in_f)), *b = randn(out_f, 0.5), *dy = randn(ny, 1);
  float *gx = randn(nx, 0.5), *gw = randn(nw, 0.5), *gb = randn(out_f, 0.5);
  int xs[2] = {rows, in_f}, ws[2] = {out_f, in_f};
  slM_Graph *g = check_graph_new();
  slM_Node *nd = check_op_node(g, OP_LINEAR, check_input(g, 2, xs, x), -1);
  check_param(nd, 2, ws, w);
  check_param(nd, 1, &out_f, b);
  float *init[1] = {gx}, *pinit[2] = {gw, gb};
  check_forward(g, nd);
  check_backward(g, nd, dy, init, pinit);
  snprintf(tag, sizeof tag, "linear %d rows, %d -> %d", rows, in_f, out_f);
  Dev d = {.ok = gpu};
  float *dx = up(&d, x, nx), *dw = up(&d, w, nw), *db = up(&d, b, out_f), *ddy = up(&d, dy, ny), *y = up(&d, NULL, ny);
  float *dgx = up(&d, gx, nx), *dgw = up(&d, gw, nw), *dgb = up(&d, gb, out_f);
  ON_GPU(&d, G->linear_forward(0, dx, dw, db, y, rows, in_f, out_f, err, sizeof err));
  ON_GPU(&d, G->linear_backward(0, dx, dw, ddy, ddy, dgx, dgw, dgb, rows, in_f, out_f, err, sizeof err));
  expect(&d, "y", y, nd->out->data, ny, 1e-5, 1e-5 * sqrt(in_f));
  expect(&d, "dx", dgx, check_grad_of(g, nd, 0), nx, 1e-5, 1e-5 * sqrt(out_f));
  expect(&d, "dW", dgw, nd->params[0]->grad->data, nw, 1e-5, 1e-5 * sqrt(rows));
  expect(&d, "db", dgb, nd->params[1]->grad->data, out_f, 0, 0);
  dev_free(&d);
  slM_graph_free(g);
  free(x), free(w), free(b), free(dy), free(gx), free(gw), free(gb);
}

static void test_linear(void) {
  static const int s[][3] = {{1, 1, 1}, {31, 33, 7}, {33, 17, 65}, {257, 129, 31}, {64, 256, 130}, {1100, 33, 70}};
  for (int i = 0; i < shapes(6, 3); i++) linear_case(s[i][0], s[i][1], s[i][2]);
}

/* ---------------------------------------------------------- the rows */

/* layer norm (rms = 0) or RMSNorm (rms = 1), eps 1e-5; the GPU backward
** from the CPU's statistics */
static void norm_case(int rows, int d, int rms) {
  size_t n = (size_t)rows * d;
  float *x = randn(n, 2), *gamma = randn(d, 1), *beta = randn(d, 1), *dy = randn(n, 1), *g0 = randn(n, 0.5);
  float *gg = randn(d, 0.5), *gbeta = randn(d, 0.5);
  for (size_t i = 0; i < n; i++) x[i] += 0.5f;
  int shape[2] = {rows, d};
  slM_Graph *g = check_graph_new();
  slM_Node *nd = check_op_node(g, rms ? OP_RMSNORM : OP_LAYERNORM, check_input(g, 2, shape, x), -1);
  nd->p = 1e-5f;
  check_param(nd, 1, &d, gamma);
  if (!rms) check_param(nd, 1, &d, beta);
  float *init[1] = {g0}, *pinit[2] = {gg, gbeta};
  check_forward(g, nd);
  check_backward(g, nd, dy, init, pinit);
  snprintf(tag, sizeof tag, "%s %d x %d", rms ? "RMSNorm" : "layer norm", rows, d);
  Dev dv = {.ok = gpu};
  float *dx = up(&dv, x, n), *dgam = up(&dv, gamma, d), *dbeta = up(&dv, beta, d), *y = up(&dv, NULL, n);
  float *mean = up(&dv, NULL, rows), *rstd = up(&dv, NULL, rows), *ddy = up(&dv, dy, n), *dg0 = up(&dv, g0, n);
  float *dgg = up(&dv, gg, d), *dgb = up(&dv, gbeta, d);
  const float *cpu_rstd = rms ? nd->saved->data : nd->saved2->data;
  float *cmean = rms ? NULL : up(&dv, nd->saved->data, rows), *crstd = up(&dv, cpu_rstd, rows);
  if (rms) {
    ON_GPU(&dv, G->rmsnorm_forward(dx, dgam, y, rstd, rows, d, 1e-5f, err, sizeof err));
    ON_GPU(&dv, G->rmsnorm_backward(dx, dgam, ddy, crstd, dg0, dgg, rows, d, err, sizeof err));
  } else {
    ON_GPU(&dv, G->layernorm_forward(dx, dgam, dbeta, y, mean, rstd, rows, d, 1e-5f, err, sizeof err));
    ON_GPU(&dv, G->layernorm_backward(dx, dgam, ddy, cmean, crstd, dg0, dgg, dgb, rows, d, err, sizeof err));
    expect(&dv, "mean", mean, nd->saved->data, rows, 1e-6, 1e-7);
    expect(&dv, "dbeta", dgb, nd->params[1]->grad->data, d, 0, 0);
  }
  expect(&dv, "1/std", rstd, cpu_rstd, rows, 1e-6, 0);
  expect(&dv, "y", y, nd->out->data, n, 1e-6, 1e-6);
  expect(&dv, "dx", dg0, check_grad_of(g, nd, 0), n, 1e-6, 1e-6);
  expect(&dv, "dgain", dgg, nd->params[0]->grad->data, d, 0, 0);
  dev_free(&dv);
  slM_graph_free(g);
  free(x), free(gamma), free(beta), free(dy), free(g0), free(gg), free(gbeta);
}

static void test_norms(void) {
  static const int s[][2] = {{1, 1}, {31, 7}, {33, 33}, {257, 129}, {5, 1000}, {2, 4097}, {1100, 65}};
  for (int i = 0; i < shapes(7, 3); i++)
    for (int rms = 0; rms < 2; rms++) norm_case(s[i][0], s[i][1], rms);
}

/* plain rows (OP_SOFTMAX), or the causal T x T matrices of the fused
** masked_softmax (mats of them, n = T) */
static void softmax_case(int rows, int n, int causal) {
  size_t items = (size_t)rows * n;
  float *x = randn(items, 3), *dy = randn(items, 1), *g0 = randn(items, 0.5);
  int plain[2] = {rows, n}, square[4] = {1, rows / (n ? n : 1), n, n};
  slM_Graph *g = check_graph_new();
  slM_Node *nd = check_op_node(g, causal ? OP_MASKED_SOFTMAX : OP_SOFTMAX,
                               causal ? check_input(g, 4, square, x) : check_input(g, 2, plain, x), -1);
  float *init[1] = {g0};
  check_forward(g, nd);
  check_backward(g, nd, dy, init, NULL);
  snprintf(tag, sizeof tag, "softmax %d x %d%s", rows, n, causal ? " causal" : "");
  Dev d = {.ok = gpu};
  float *dx = up(&d, x, items), *y = up(&d, NULL, items), *cy = up(&d, nd->out->data, items);
  float *ddy = up(&d, dy, items), *dg0 = up(&d, g0, items);
  ON_GPU(&d, G->softmax_forward(dx, y, rows, n, causal, err, sizeof err));
  ON_GPU(&d, G->softmax_backward(cy, ddy, dg0, rows, n, causal, err, sizeof err));
  expect(&d, "y", y, nd->out->data, items, 2e-6, 1e-12);
  expect(&d, "dx", dg0, check_grad_of(g, nd, 0), items, 1e-6, 2e-7);
  dev_free(&d);
  slM_graph_free(g);
  free(x), free(dy), free(g0);
}

static void test_softmax(void) {
  static const int s[][2] = {{1, 1}, {31, 7}, {33, 33}, {257, 129}, {4, 10000}};
  static const int c[][2] = {{1, 1}, {2, 31}, {3, 33}, {1, 257}}; /* matrices, T */
  for (int i = 0; i < shapes(5, 3); i++) softmax_case(s[i][0], s[i][1], 0);
  for (int i = 0; i < shapes(4, 3); i++) softmax_case(c[i][0] * c[i][1], c[i][1], 1);
}

/* the image models' loss (rows x C logits) or the language model's
** (B x T x V, rows = B T); the GPU backward from the CPU's probabilities */
static void loss_case(int kind, int B, int T, int C) {
  int rows = B * T;
  size_t items = (size_t)rows * C;
  float *z = randn(items, 2), *labels = ints(rows, C), *g0 = randn(items, 0.5), dloss = 0.75f;
  int zs2[2] = {rows, C}, zs3[3] = {B, T, C}, ls2[2] = {B, T};
  slM_Graph *g = check_graph_new();
  int tokens = kind == SLG_LOSS_TOKENS;
  int iz = tokens ? check_input(g, 3, zs3, z) : check_input(g, 2, zs2, z),
      il = tokens ? check_input(g, 2, ls2, labels) : check_input(g, 1, &rows, labels);
  slM_Node *nd = check_op_node(g, tokens ? OP_TOKEN_CE : OP_CROSS_ENTROPY, iz, il);
  float *init[2] = {g0, NULL};
  check_forward(g, nd);
  check_backward(g, nd, &dloss, init, NULL);
  snprintf(tag, sizeof tag, "cross-entropy (%s) %d rows x %d", tokens ? "tokens" : "classes", rows, C);
  Dev d = {.ok = gpu};
  float *dz = up(&d, z, items), *dl = up(&d, labels, rows), *p = up(&d, NULL, items), *loss = up(&d, NULL, 1);
  float *cp = up(&d, nd->saved->data, items), *ddl = up(&d, &dloss, 1), *dg0 = up(&d, g0, items);
  ON_GPU(&d, G->cross_entropy_forward(kind, dz, dl, p, loss, rows, C, err, sizeof err));
  ON_GPU(&d, G->cross_entropy_backward(kind, cp, dl, ddl, dg0, rows, C, err, sizeof err));
  expect(&d, "probabilities", p, nd->saved->data, items, 2e-6, 1e-12);
  expect(&d, "loss", loss, nd->out->data, 1, 1e-6, 1e-6);
  expect(&d, "dlogits", dg0, check_grad_of(g, nd, 0), items, 0, 0);
  dev_free(&d);
  slM_graph_free(g);
  free(z), free(labels), free(g0);
}

static void test_cross_entropy(void) {
  static const int s[][3] = {{1, 1, 1}, {31, 1, 10}, {257, 1, 33}, {3, 1, 1000}};
  static const int t[][3] = {{1, 1, 1}, {2, 33, 257}, {3, 31, 1000}};
  for (int i = 0; i < shapes(4, 3); i++) loss_case(SLG_LOSS_CLASSES, s[i][0], s[i][1], s[i][2]);
  for (int i = 0; i < shapes(3, 2); i++) loss_case(SLG_LOSS_TOKENS, t[i][0], t[i][1], t[i][2]);
}

/* --------------------------------------------------- the language model */

static void embedding_case(int vocab, int width, int B, int T) {
  size_t n = (size_t)B * T, items = n * width, nt = (size_t)vocab * width;
  float *ids = ints(n, vocab), *table = randn(nt, 1), *dy = randn(items, 1), *gt = randn(nt, 0.5);
  int is[2] = {B, T}, ts[2] = {vocab, width};
  slM_Graph *g = check_graph_new();
  slM_Node *nd = check_op_node(g, OP_EMBEDDING, check_input(g, 2, is, ids), -1);
  check_param(nd, 2, ts, table);
  float *pinit[1] = {gt};
  check_forward(g, nd);
  check_backward(g, nd, dy, NULL, pinit);
  snprintf(tag, sizeof tag, "embedding %d x %d, %d x %d ids", vocab, width, B, T);
  Dev d = {.ok = gpu};
  float *di = up(&d, ids, n), *dt = up(&d, table, nt), *y = up(&d, NULL, items), *ddy = up(&d, dy, items);
  float *dgt = up(&d, gt, nt);
  ON_GPU(&d, G->embedding_forward(di, dt, y, n, vocab, width, err, sizeof err));
  ON_GPU(&d, G->embedding_backward(di, ddy, dgt, n, vocab, width, err, sizeof err));
  expect(&d, "y", y, nd->out->data, items, 0, 0);
  expect(&d, "dtable", dgt, nd->params[0]->grad->data, nt, 0, 0);
  dev_free(&d);
  slM_graph_free(g);
  free(ids), free(table), free(dy), free(gt);
}

static void test_embedding(void) {
  /* small vocabularies repeat ids many times: the scatter-add's order shows */
  static const int s[][4] = {{1, 1, 1, 1}, {37, 33, 2, 31}, {1000, 65, 3, 257}, {300, 257, 2, 129}, {10000, 16, 2, 33}};
  for (int i = 0; i < shapes(5, 3); i++) embedding_case(s[i][0], s[i][1], s[i][2], s[i][3]);
}

/* theta 10000, the CS336 model's */
static void rope_case(int B, int T, int D, int heads) {
  size_t n = (size_t)B * T * D;
  int dh = D / heads, shape[3] = {B, T, D};
  float *x = randn(n, 1), *dy = randn(n, 1), *g0 = randn(n, 0.5);
  slM_Graph *g = check_graph_new();
  slM_Node *nd = check_op_node(g, OP_ROPE, check_input(g, 3, shape, x), -1);
  nd->heads = heads, nd->p = 10000.0f;
  float *init[1] = {g0};
  check_forward(g, nd);
  check_backward(g, nd, dy, init, NULL);
  snprintf(tag, sizeof tag, "RoPE %d x %d x %d, %d heads", B, T, D, heads);
  Dev d = {.ok = gpu};
  float *dx = up(&d, x, n), *tab = up(&d, NULL, (size_t)T * dh), *ctab = up(&d, nd->saved->data, (size_t)T * dh);
  float *y = up(&d, NULL, n), *y2 = up(&d, NULL, n), *ddy = up(&d, dy, n), *dg0 = up(&d, g0, n);
  ON_GPU(&d, G->rope_table(tab, T, dh, 10000.0f, err, sizeof err));
  ON_GPU(&d, G->rope_forward(dx, y, ctab, B, T, D, heads, err, sizeof err));
  ON_GPU(&d, G->rope_forward(dx, y2, tab, B, T, D, heads, err, sizeof err));
  ON_GPU(&d, G->rope_backward(ddy, dg0, ctab, B, T, D, heads, err, sizeof err));
  expect(&d, "table", tab, nd->saved->data, (size_t)T * dh, 0, 1.2e-7);
  expect(&d, "y (the CPU's table)", y, nd->out->data, n, 0, 0);
  expect(&d, "y (the GPU's table)", y2, nd->out->data, n, 0, 2e-6);
  expect(&d, "dx", dg0, check_grad_of(g, nd, 0), n, 0, 0);
  dev_free(&d);
  slM_graph_free(g);
  free(x), free(dy), free(g0);
}

static void test_rope(void) {
  static const int s[][4] = {{1, 1, 2, 1}, {2, 33, 24, 3}, {3, 31, 64, 2}, {1, 257, 12, 1}, {2, 129, 128, 4}};
  for (int i = 0; i < shapes(5, 3); i++) rope_case(s[i][0], s[i][1], s[i][2], s[i][3]);
}

/* --------------------------------------------------------- optimisers */

/* three steps of train.c's update on an MLP's weights and biases (the
** weights decay, the biases do not), the same gradients on both sides */
static void optimizer_case(int adamw) {
  slM_MlpSpec ms = {20, 10, {301, 77}, 2, OP_RELU, 0};
  slM_Graph *g = slM_mlp(&ms, 3, 0, err, sizeof err);
  CHECK_MSG(g != NULL, "%s", err);
  if (!g) return;
  slM_TrainConfig c = {.lr = adamw ? 1e-3 : 0.05,
                       .momentum = 0.9,
                       .weight_decay = adamw ? 0.01 : 5e-4,
                       .optimizer = adamw ? SLM_ADAMW : SLM_SGD};
  slM_Param *ps[16];
  slG_ParamRef refs[16];
  int count = 0;
  for (int i = 0; i < g->n; i++)
    for (int k = 0; k < g->nodes[i].nparams && count < 16; k++) ps[count++] = g->nodes[i].params[k];
  snprintf(tag, sizeof tag, "%s on %d parameters", adamw ? "AdamW" : "SGD", count);
  Dev d = {.ok = gpu};
  for (int k = 0; k < count; k++) {
    size_t n = ps[k]->value->size;
    float *zero = calloc(n, sizeof *zero);
    slG_ParamRef r = {up(&d, ps[k]->value->data, n),
                      up(&d, NULL, n),
                      up(&d, zero, n),
                      up(&d, zero, n),
                      n,
                      ps[k]->value->ndim >= 2 ? (float)c.weight_decay : 0.0f};
    refs[k] = r;
    free(zero);
  }
  void *table = d.ok ? G->params_new(refs, count, err, sizeof err) : NULL;
  if (d.ok && !table) {
    check_fail(__FILE__, __LINE__, "%s: params_new: %s", tag, err);
    d.ok = 0;
  }
  for (long step = 0; step < 3; step++) {
    for (int k = 0; k < count; k++) {
      slM_Tensor *gr = slM_param_grad(ps[k]);
      for (size_t i = 0; i < gr->size; i++) gr->data[i] = (float)(slM_rng_normal(&rng) * 0.1);
      if (d.ok) ON_GPU(&d, G->upload(refs[k].g, gr->data, gr->size * sizeof(float), err, sizeof err));
    }
    slM_optimizer_step(g, &c, c.lr, step);
    slG_Optimizer o = {adamw, c.lr, c.momentum, 0.9, 0.999, 1e-8f, step};
    ON_GPU(&d, G->optimizer_step(table, &o, err, sizeof err));
  }
  for (int k = 0; k < count; k++) {
    size_t n = ps[k]->value->size;
    expect(&d, ps[k]->name, refs[k].w, ps[k]->value->data, n, 0, 0);
    expect(&d, "m", refs[k].m, ps[k]->m->data, n, 0, 0);
    if (adamw) expect(&d, "v", refs[k].v, ps[k]->v->data, n, 0, 0);
  }
  if (table) G->params_free(table);
  dev_free(&d);
  slM_graph_free(g);
}

static void test_optimizers(void) {
  optimizer_case(0);
  optimizer_case(1);
}

/* ------------------------------------------------------------ refusals */

#define REFUSED(call, says) \
  do { \
    err[0] = 0; \
    CHECK_MSG((call) == -1 && err[0], "%s: expected -1 with a message, got \"%s\"", #call, err); \
    if ((says)[0]) CHECK_CONTAINS(err, says); \
  } while (0)

/* The module of a build with nvcc loads (here too, without a device) and
** is of this program's version; a build without has none and says so */
static void test_the_module(void) {
#ifdef SYSLAB_HAVE_CUDA
  CHECK_MSG(G != NULL, "the CUDA module of this build did not load: %s", slK_dev_why());
#else
  CHECK(G == NULL);
  CHECK_CONTAINS(slK_dev_why(), "built without CUDA");
#endif
  if (G) CHECK_EQ_INT(G->version, SLG_BACKEND_VERSION);
}

/* arguments the kernels do not take are errors with a message, before any launch */
static void test_refusals(void) {
  float *none = NULL;
  REFUSED(G->rope_forward(none, none, none, 1, 4, 6, 2, err, sizeof err), "even");
  REFUSED(G->rope_table(none, 4, 5, 1e4f, err, sizeof err), "even");
  REFUSED(G->add_forward(none, none, none, 10, 3, err, sizeof err), "divide");
  REFUSED(G->activation_forward(99, none, none, 4, err, sizeof err), "unknown activation");
  REFUSED(G->cross_entropy_forward(7, none, none, none, none, 4, 3, err, sizeof err), "unknown");
  REFUSED(G->embedding_forward(none, none, none, 4, 0, 8, err, sizeof err), "positive");
  REFUSED(G->layernorm_forward(none, none, none, none, none, none, 4, 0, 1e-5f, err, sizeof err), "positive");
  REFUSED(G->linear_forward(0, none, none, none, none, 4, 0, 3, err, sizeof err), "positive");
  REFUSED(G->dropout_forward(none, none, none, 4, NAN, 0, err, sizeof err), "p must");
  slG_Optimizer o = {1, 1e-3, 0, 0.9, 0.999, 1e-8f, 0};
  REFUSED(G->optimizer_step(NULL, &o, err, sizeof err), "no parameters");
  if (!gpu) return;
  Dev d = {.ok = 1};
  float *buf = up(&d, NULL, 4);
  slG_ParamRef r = {buf, buf, buf, NULL, 4, 0};
  void *table = d.ok ? G->params_new(&r, 1, err, sizeof err) : NULL;
  CHECK_MSG(table != NULL, "params_new: %s", err);
  if (table) REFUSED(G->optimizer_step(table, &o, err, sizeof err), "second moment");
  G->params_free(table);
  dev_free(&d);
}

/* without a device every entry point of the module answers -1 with a
** message (CUDA's reason), and none crashes */
static void test_without_a_device(void) {
  float *none = NULL, f[4] = {0};
  void *p = &p;
  REFUSED(G->alloc(&p, 16, err, sizeof err), "");
  CHECK(p == NULL);
  REFUSED(G->upload(none, f, sizeof f, err, sizeof err), "");
  REFUSED(G->download(f, none, sizeof f, err, sizeof err), "");
  REFUSED(G->zero(none, sizeof f, err, sizeof err), "");
  REFUSED(G->sync(err, sizeof err), "");
  REFUSED(G->activation_forward(SLG_GELU, none, none, 4, err, sizeof err), "");
  REFUSED(G->activation_backward(SLG_RELU, none, none, none, 4, err, sizeof err), "");
  REFUSED(G->swiglu_forward(none, none, none, 4, err, sizeof err), "");
  REFUSED(G->add_forward(none, none, none, 4, 2, err, sizeof err), "");
  REFUSED(G->dropout_forward(none, none, none, 4, 0.5f, 1, err, sizeof err), "");
  REFUSED(G->dropout_forward(none, f, none, 4, 0.0f, 1, err, sizeof err), "");
  REFUSED(G->round_bf16(none, none, 4, err, sizeof err), "");
  REFUSED(G->embedding_backward(none, none, none, 4, 10, 3, err, sizeof err), "");
  REFUSED(G->rope_table(none, 4, 8, 1e4f, err, sizeof err), "");
  REFUSED(G->layernorm_backward(none, none, none, none, none, none, none, none, 4, 3, err, sizeof err), "");
  REFUSED(G->rmsnorm_forward(none, none, none, none, 4, 3, 1e-5f, err, sizeof err), "");
  REFUSED(G->softmax_forward(none, none, 4, 3, 1, err, sizeof err), "");
  REFUSED(G->cross_entropy_backward(SLG_LOSS_TOKENS, none, none, none, none, 4, 3, err, sizeof err), "");
  slG_ParamRef r = {none, none, none, none, 4, 0};
  err[0] = 0;
  CHECK(G->params_new(&r, 1, err, sizeof err) == NULL && err[0]);
}

/* the CPU side of every case, as the GPU tests run it */
static void test_cpu_side_of_every_case(void) {
  test_activations();
  test_dropout();
  test_add();
  test_bf16();
  test_linear();
  test_norms();
  test_softmax();
  test_cross_entropy();
  test_embedding();
  test_rope();
  test_optimizers();
}

int main(void) {
  G = slK_gpu();
  gpu = slK_dev_available();
  slM_rng_seed(&rng, 2024);
  RUN(test_the_module);
  if (G) RUN(test_refusals);
  if (!gpu) {
    if (G) RUN(test_without_a_device);
    RUN(test_cpu_side_of_every_case);
    check_skip("test_gpu_ops's GPU side (each operator against the CPU's)", slK_dev_why());
    return check_summary();
  }
  RUN(test_activations);
  RUN(test_dropout);
  RUN(test_add);
  RUN(test_bf16);
  RUN(test_linear);
  RUN(test_norms);
  RUN(test_softmax);
  RUN(test_cross_entropy);
  RUN(test_embedding);
  RUN(test_rope);
  RUN(test_optimizers);
  return check_summary();
}
