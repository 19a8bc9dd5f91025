/* test_gpu_args.c - the GPU code's index arithmetic, checked on the CPU.
**
** CI never runs a GPU, so the arithmetic that decides what the GPU
** computes is run here on host arrays, through the very functions the GPU
** code calls:
**
**   cuBLAS's arguments  every call site's row-major request (the graph's
**                       per-head products and mean over tokens,
**                       engine/graph/devgemm.c; the linear layer forward
**                       and backward and the naive attention's six
**                       products, cuda/cublas_args.h), mapped to
**                       column-major by slG_cublas_of, checked against
**                       cuBLAS's rules for lda, ldb and ldc
**                       (slG_cublas_check), then executed by an emulation
**                       of cublasSgemmStridedBatched (and of its 16-bit
**                       kin, on bf16 bits) that refuses any read or write
**                       outside its arrays; the result must equal the CPU
**                       operator's (the operator table's CPU slot) or a
**                       direct loop of the formula
**   tensor-core         cuda/attention_tc.cu's forward and backward
**   attention           emulated block by block, warp by warp, lane by
**                       lane on an emulated shared memory, with every
**                       16 x 16 x 16 fragment load checked for WMMA's
**                       alignment (32-byte pointers, leading dimensions of
**                       16 bytes) and the layouts, lane mapping, staging,
**                       loop bounds and masks of attention_tc_layout.h;
**                       against the CPU's attention on the same
**                       bf16-rounded inputs
**   its version 2       cuda/attention_fa2.cu's forward and backward,
**                       emulated lane by
**                       lane with each lane's registers: every mma.sync
**                       m16n8k16 builds its matrices from the registers
**                       by PTX's definition of the fragments (so the maps
**                       of attention_fa2_layout.h are checked against it),
**                       every ldmatrix by PTX's definition too, every
**                       cp.async and ldmatrix row against the layout and
**                       its alignments; dim 64, 80 and 128
**   column sums         ops.cu's column_sums and ops_rows.cu's
**                       norm_param_grads, block by block, warp by warp,
**                       through sums_layout.h, on grids smaller and larger
**                       than the columns' tiles: the bits of reduce.c
**
** Tolerances: the emulated products sum in binary64, the CPU operators in
** float32 (OpenBLAS's order): 1e-5 relative to the terms' scale. The
** emulated attention rounds P (and dS) to bf16 as the kernels do; it is
** held to the GPU test's tolerances (tests/unit/test_kernels.c: O 1e-2,
** L 1e-4, gradients 3e-2). A wrong index gives differences of the order of
** the values themselves. */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "cuda/attention_fa2_layout.h"
#include "cuda/attention_tc_layout.h"
#include "cuda/cublas_args.h"
#include "cuda/sums_layout.h"
#include "graph/devgemm.h"
#include "graph/model.h"
#include "kernels/reduce.h"
#include "kernels/kernels.h"
#include "kernels/round.h"

static slM_Rng rng;
static char tag[200];

static float *randn(size_t n) {
  float *x = malloc((n ? n : 1) * sizeof *x);
  for (size_t i = 0; i < n; i++) x[i] = (float)slM_rng_normal(&rng);
  return x;
}

static float *copy_of(const float *x, size_t n) {
  float *y = malloc((n ? n : 1) * sizeof *y);
  memcpy(y, x, n * sizeof *y);
  return y;
}

static float *nans(size_t n) {
  float *y = malloc((n ? n : 1) * sizeof *y);
  memset(y, 0xff, n * sizeof *y);
  return y;
}

/* got against want within tol (|terms| of about 1: relative to 1 + |want|) */
static void compare(const char *what, const float *got, const float *want, size_t n, double tol) {
  size_t bad = 0, worst = 0;
  double w = 0;
  for (size_t i = 0; i < n; i++) {
    double e = fabs((double)got[i] - want[i]) / (1 + fabs(want[i]));
    if (!(e <= tol)) {
      if (bad++ == 0 || !(e <= w)) w = e, worst = i;
    }
  }
  CHECK_MSG(bad == 0, "%s %s: %zu of %zu values differ; worst item %zu: %.9g, want %.9g", tag, what, bad, n, worst,
            got[worst], want[worst]);
}

/* ------------------------------------------------ cuBLAS, emulated on the CPU */

/* an operand as cuBLAS sees it: elements of float32 or 16-bit bits (format), and how many the array holds */
typedef struct {
  const void *p;
  size_t n;
  int format;
} Arr;

static int outside; /* accesses outside an array, in the last emulated call */

static double element(Arr a, long long i) {
  if (i < 0 || (size_t)i >= a.n) return outside++, NAN;
  if (a.format == SLK_FP32) return ((const float *)a.p)[i];
  uint16_t h = ((const uint16_t *)a.p)[i];
  if (a.format == SLK_FP16) return slK_fp16_value(h);
  uint32_t u = (uint32_t)h << 16;
  float f;
  memcpy(&f, &u, sizeof f);
  return f;
}

/* cublas<t>gemmStridedBatched, column-major, as its documentation defines
** it: C_p = alpha op(A_p) op(B_p) + beta C_p (C not read when beta is 0),
** A_p = A + p stride_a; sums in binary64 */
static void cublas_emulated(const slG_Cublas *c, float alpha, Arr A, Arr B, float beta, float *C, size_t nc) {
  outside = 0;
  for (int p = 0; p < c->batch; p++)
    for (int j = 0; j < c->n; j++)
      for (int i = 0; i < c->m; i++) {
        double sum = 0;
        for (int l = 0; l < c->k; l++) {
          long long ai = p * c->stride_a + (c->transa ? l + (long long)i * c->lda : i + (long long)l * c->lda);
          long long bi = p * c->stride_b + (c->transb ? j + (long long)l * c->ldb : l + (long long)j * c->ldb);
          sum += element(A, ai) * element(B, bi);
        }
        long long ci = p * c->stride_c + i + (long long)j * c->ldc;
        if (ci < 0 || (size_t)ci >= nc) {
          outside++;
          continue;
        }
        C[ci] = (float)(alpha * sum + (beta == 0 ? 0.0 : beta * (double)C[ci]));
      }
}

/* A row-major request as its call site makes it: mapped, checked against
** cuBLAS's rules, and run with the operands swapped as cuBLAS receives
** them. A, B and C are the request's, from their offsets on. */
static void request(const char *what, const slG_Gemm *g, float alpha, Arr A, Arr B, float beta, float *C, size_t nc) {
  char err[200];
  slG_Cublas c = slG_cublas_of(g);
  int rc = slG_cublas_check(&c, err, sizeof err);
  CHECK_MSG(rc == 0, "%s %s: %s", tag, what, err);
  if (rc != 0) return;
  cublas_emulated(&c, alpha, B, A, beta, C, nc);
  CHECK_MSG(outside == 0, "%s %s: %d accesses outside the arrays", tag, what, outside);
}

static Arr at_offset(Arr a, size_t off) {
  a.p = a.format == SLK_FP32 ? (const void *)((const float *)a.p + off) : (const void *)((const uint16_t *)a.p + off);
  a.n = off <= a.n ? a.n - off : 0;
  return a;
}

static Arr f32(const float *p, size_t n) { return (Arr){p, n, SLK_FP32}; }

/* a graph-side request (devgemm.h) as cublas.cu's slG_gemm_batched (the table's gemm_batched) receives its fields */
static void dev_request(const char *what, const slM_DevGemm *d, Arr A, Arr B, float *C, size_t nc) {
  slG_Gemm g = {d->trans_a, d->trans_b, d->M,        d->N,        d->K,        d->lda,
                d->ldb,     d->ldc,     d->stride_a, d->stride_b, d->stride_c, d->batch};
  request(what, &g, d->alpha, at_offset(A, d->a0), at_offset(B, d->b0), d->beta, C + d->c0,
          d->c0 <= nc ? nc - d->c0 : 0);
}

/* every head's request */
static void heads(int which, int B, int T, int D, int H, Arr A, Arr Bm, float *C, size_t nc) {
  for (int j = 0; j < H; j++) {
    slM_DevGemm d = slM_gemm_heads(which, B, T, D, H, j);
    char what[32];
    snprintf(what, sizeof what, "head %d", j);
    dev_request(what, &d, A, Bm, C, nc);
  }
}

/* an operand of attention's products: token rows B x T x D, or the heads' arrays B x H x T x T */
typedef struct {
  int ndim, shape[4];
  const float *x;
  size_t n;
} Operand;

/* One of attention's two products (op: the scores or the context) on the CPU, from inputs a and b, and its three
** requests on the same arrays: the forward into a fresh output, then the input gradients from dout, added to g0
** and g1 as the CPU's backward adds them. The gradient of b is dout against a (the scores': dK += s dS^T Q) or a
** against dout (the context's: dV += P^T dY). */
static void product_case(slM_Op op, const int which[3], const char *const names[3], Operand a, Operand b,
                         const float *dout, size_t nout, float *g0, float *g1, int H) {
  int B = b.shape[0], T = b.shape[1], D = b.shape[2];
  slM_Graph *g = check_graph_new();
  slM_Node *n = check_op_node(g, op, check_input(g, a.ndim, a.shape, a.x), check_input(g, b.ndim, b.shape, b.x));
  n->heads = H;
  check_forward(g, n);
  float *init[2] = {g0, g1};
  check_backward(g, n, dout, init, NULL);
  float *y = nans(nout), *da = copy_of(g0, a.n), *db = copy_of(g1, b.n);
  Arr A = f32(a.x, a.n), Bv = f32(b.x, b.n), G = f32(dout, nout);
  heads(which[0], B, T, D, H, A, Bv, y, nout);
  heads(which[1], B, T, D, H, G, Bv, da, a.n);
  heads(which[2], B, T, D, H, op == OP_SCORES ? G : A, op == OP_SCORES ? A : G, db, b.n);
  compare(names[0], y, n->out->data, nout, 1e-5);
  compare(names[1], da, check_grad_of(g, n, 0), a.n, 1e-5);
  compare(names[2], db, check_grad_of(g, n, 1), b.n, 1e-5);
  slM_graph_free(g);
  free(y), free(da), free(db);
}

/* attention op by op: the scores' and the context's products, forward and backward, against the CPU operators */
static void heads_case(int B, int T, int D, int H) {
  size_t nr = (size_t)B * T * D, nm = (size_t)B * H * T * T;
  snprintf(tag, sizeof tag, "attention products B%d T%d D%d H%d", B, T, D, H);
  float *q = randn(nr), *k = randn(nr), *p = randn(nm), *v = randn(nr), *ds = randn(nm), *dy = randn(nr);
  float *g0 = randn(nm > nr ? nm : nr), *g1 = randn(nr);
  Operand Q = {3, {B, T, D}, q, nr}, K = {3, {B, T, D}, k, nr}, P = {4, {B, H, T, T}, p, nm}, V = {3, {B, T, D}, v, nr};
  static const int scores[3] = {SLM_GEMM_SCORES, SLM_GEMM_SCORES_DQ, SLM_GEMM_SCORES_DK};
  static const int context[3] = {SLM_GEMM_CONTEXT, SLM_GEMM_CONTEXT_DP, SLM_GEMM_CONTEXT_DV};
  static const char *const snames[3] = {"S = s Q K^T", "dQ += s dS K", "dK += s dS^T Q"};
  static const char *const cnames[3] = {"Y = P V", "dP += dY V^T", "dV += P^T dY"};
  product_case(OP_SCORES, scores, snames, Q, K, ds, nm, g0, g1, H);
  product_case(OP_CONTEXT, context, cnames, P, V, dy, nr, g0, g1, H);
  free(q), free(k), free(p), free(v), free(ds), free(dy), free(g0), free(g1);
}

/* the mean over tokens: a strided batch of products with a repeated row of ones */
static void mean_case(int B, int T, int D) {
  size_t nx = (size_t)B * T * D, ny = (size_t)B * D;
  int xs[3] = {B, T, D};
  snprintf(tag, sizeof tag, "mean over tokens B%d T%d D%d", B, T, D);
  float *x = randn(nx), *dy = randn(ny), *gx = randn(nx), *one = malloc((size_t)T * sizeof *one);
  for (int t = 0; t < T; t++) one[t] = 1;
  slM_Graph *g = check_graph_new();
  slM_Node *n = check_op_node(g, OP_MEAN_TOKENS, check_input(g, 3, xs, x), -1);
  check_forward(g, n);
  float *init[1] = {gx};
  check_backward(g, n, dy, init, NULL);
  float *y = nans(ny), *dx = copy_of(gx, nx);
  slM_DevGemm f = slM_gemm_mean_tokens(0, B, T, D), b = slM_gemm_mean_tokens(1, B, T, D);
  dev_request("forward", &f, f32(one, (size_t)T), f32(x, nx), y, ny);
  dev_request("backward", &b, f32(one, (size_t)T), f32(dy, ny), dx, nx);
  compare("y", y, n->out->data, ny, 1e-5);
  compare("dx", dx, check_grad_of(g, n, 0), nx, 1e-5);
  slM_graph_free(g);
  free(x), free(dy), free(gx), free(one), free(y), free(dx);
}

/* 16-bit bits of x in the format (x already rounded to it) */
static uint16_t *bits_of(int format, const float *x, size_t n) {
  uint16_t *h = malloc((n ? n : 1) * sizeof *h);
  for (size_t i = 0; i < n; i++) {
    uint32_t u;
    memcpy(&u, &x[i], sizeof u);
    h[i] = format == SLK_FP16 ? slK_fp16_bits(x[i]) : (uint16_t)(u >> 16);
  }
  return h;
}

/* the linear layer's three products (ops.cu) in float32, bf16 and fp16
** (operands rounded to the format: the CPU's linear on the rounded values
** is the reference of the 16-bit path's products, sums in float32) */
static void linear_case(int format, int rows, int in_f, int out_f) {
  size_t nx = (size_t)rows * in_f, nw = (size_t)out_f * in_f, ny = (size_t)rows * out_f;
  int xs[2] = {rows, in_f}, ws[2] = {out_f, in_f};
  snprintf(tag, sizeof tag, "linear %s %d rows, %d -> %d",
           format == SLK_FP32   ? "float32"
           : format == SLK_BF16 ? "bf16"
                                : "fp16",
           rows, in_f, out_f);
  float *x = randn(nx), *w = randn(nw), *dy = randn(ny), *gx = randn(nx), *gw = randn(nw);
  slK_round_array(format, x, x, nx), slK_round_array(format, w, w, nw), slK_round_array(format, dy, dy, ny);
  slM_Graph *g = check_graph_new();
  slM_Node *n = check_op_node(g, OP_LINEAR, check_input(g, 2, xs, x), -1);
  check_param(n, 2, ws, w);
  check_forward(g, n);
  float *init[1] = {gx}, *pinit[1] = {gw};
  check_backward(g, n, dy, init, pinit);
  uint16_t *xh = bits_of(format, x, nx), *wh = bits_of(format, w, nw), *dyh = bits_of(format, dy, ny);
  Arr X = format ? (Arr){xh, nx, format} : f32(x, nx), W = format ? (Arr){wh, nw, format} : f32(w, nw);
  Arr DY = format ? (Arr){dyh, ny, format} : f32(dy, ny);
  float *y = nans(ny), *dx = copy_of(gx, nx), *dw = copy_of(gw, nw);
  slG_Gemm gy = slG_linear_gemm(SLG_LINEAR_Y, rows, in_f, out_f),
           gdx = slG_linear_gemm(SLG_LINEAR_DX, rows, in_f, out_f);
  slG_Gemm gdw = slG_linear_gemm(SLG_LINEAR_DW, rows, in_f, out_f);
  request("y", &gy, 1.0f, X, W, 0.0f, y, ny);
  request("dx", &gdx, 1.0f, DY, W, 1.0f, dx, nx);
  request("dW", &gdw, 1.0f, DY, X, 1.0f, dw, nw);
  double tol = 1e-5 * sqrt((double)(in_f > rows ? in_f : rows) + out_f);
  compare("y", y, n->out->data, ny, tol);
  compare("dx", dx, check_grad_of(g, n, 0), nx, tol);
  compare("dW", dw, n->params[0]->grad->data, nw, tol);
  slM_graph_free(g);
  free(x), free(w), free(dy), free(gx), free(gw), free(xh), free(wh), free(dyh), free(y), free(dx), free(dw);
}

/* the naive attention's six products over bh contiguous heads of n x dim, against direct loops of their formulas */
static void naive_attention_case(int bh, int n, int dim) {
  size_t nx = (size_t)bh * n * dim, ns = (size_t)bh * n * n;
  snprintf(tag, sizeof tag, "naive attention products %d heads, n %d, dim %d", bh, n, dim);
  float *q = randn(nx), *k = randn(nx), *v = randn(nx), *p = randn(ns), *dO = randn(nx), *dS = randn(ns);
  float *got[6], *want[6];
  const char *names[6] = {"S = Q K^T", "O = P V", "dV = P^T dO", "dP = dO V^T", "dQ = dS K", "dK = dS^T Q"};
  Arr a[6] = {f32(q, nx), f32(p, ns), f32(p, ns), f32(dO, nx), f32(dS, ns), f32(dS, ns)};
  Arr b[6] = {f32(k, nx), f32(v, nx), f32(dO, nx), f32(v, nx), f32(k, nx), f32(q, nx)};
  for (int i = 0; i < 6; i++) {
    int square = i == SLG_ATTN_GEMM_S || i == SLG_ATTN_GEMM_DP;
    size_t nc = square ? ns : nx;
    got[i] = nans(nc), want[i] = calloc(nc, sizeof(float));
    slG_Gemm g = slG_attention_gemm(i, bh, n, dim);
    request(names[i], &g, 1.0f, a[i], b[i], 0.0f, got[i], nc);
  }
  for (int h = 0; h < bh; h++)
    for (int i = 0; i < n; i++) {
      size_t r = (size_t)h * n + i; /* row i of head h */
      for (int j = 0; j < n; j++) { /* the n x n results */
        double s = 0, dp = 0;
        for (int f = 0; f < dim; f++)
          s += (double)q[r * dim + f] * k[((size_t)h * n + j) * dim + f],
              dp += (double)dO[r * dim + f] * v[((size_t)h * n + j) * dim + f];
        want[SLG_ATTN_GEMM_S][r * n + j] = (float)s, want[SLG_ATTN_GEMM_DP][r * n + j] = (float)dp;
      }
      for (int f = 0; f < dim; f++) { /* the n x dim results */
        double o = 0, dv = 0, dq = 0, dk = 0;
        for (int j = 0; j < n; j++) {
          size_t rj = (size_t)h * n + j;
          o += (double)p[r * n + j] * v[rj * dim + f], dv += (double)p[rj * n + i] * dO[rj * dim + f];
          dq += (double)dS[r * n + j] * k[rj * dim + f], dk += (double)dS[rj * n + i] * q[rj * dim + f];
        }
        want[SLG_ATTN_GEMM_O][r * dim + f] = (float)o, want[SLG_ATTN_GEMM_DV][r * dim + f] = (float)dv;
        want[SLG_ATTN_GEMM_DQ][r * dim + f] = (float)dq, want[SLG_ATTN_GEMM_DK][r * dim + f] = (float)dk;
      }
    }
  for (int i = 0; i < 6; i++) {
    int square = i == SLG_ATTN_GEMM_S || i == SLG_ATTN_GEMM_DP;
    compare(names[i], got[i], want[i], square ? ns : nx, 1e-5);
    free(got[i]), free(want[i]);
  }
  free(q), free(k), free(v), free(p), free(dO), free(dS);
}

static void test_cublas_requests(void) {
  slM_rng_seed(&rng, 31);
  static const int hs[][4] = {{1, 1, 2, 1}, {2, 5, 12, 3}, {3, 7, 8, 2}, {2, 17, 64, 4}, {1, 33, 20, 5}};
  for (size_t i = 0; i < sizeof hs / sizeof *hs; i++) heads_case(hs[i][0], hs[i][1], hs[i][2], hs[i][3]);
  static const int ms[][3] = {{1, 1, 1}, {3, 5, 7}, {4, 17, 33}};
  for (size_t i = 0; i < sizeof ms / sizeof *ms; i++) mean_case(ms[i][0], ms[i][1], ms[i][2]);
  static const int ls[][3] = {{1, 1, 1}, {7, 5, 3}, {31, 33, 17}, {5, 64, 130}};
  for (int format = SLK_FP32; format <= SLK_FP16; format++)
    for (size_t i = 0; i < sizeof ls / sizeof *ls; i++) linear_case(format, ls[i][0], ls[i][1], ls[i][2]);
  static const int as[][3] = {{1, 1, 64}, {3, 5, 4}, {2, 17, 64}};
  for (size_t i = 0; i < sizeof as / sizeof *as; i++) naive_attention_case(as[i][0], as[i][1], as[i][2]);
}

/* cuBLAS's rules, and the overlap of a batch's products, refuse what cuBLAS would refuse (or race on) */
static void test_cublas_rules(void) {
  char err[200];
  slG_Gemm ok = slG_linear_gemm(SLG_LINEAR_DW, 7, 5, 3);
  slG_Cublas c = slG_cublas_of(&ok);
  CHECK_EQ_INT(slG_cublas_check(&c, err, sizeof err), 0);
  /* dW = dy^T x: cuBLAS gets x first (N: m = in_f = 5, lda 5), dy second (T: n = out_f = 3, ldb 3), k = rows */
  CHECK(c.transa == 0 && c.transb == 1 && c.m == 5 && c.n == 3 && c.k == 7 && c.lda == 5 && c.ldb == 3);
  static const struct {
    slG_Gemm g;
    const char *rule;
  } bad[] = {
      /* B is 5 x 6, so ldb >= 6: B is cuBLAS's first operand, its lda */
      {{0, 0, 4, 6, 5, 5, 5, 6, 0, 0, 0, 1}, "lda 5 < max(1, 6)"},
      /* A is 4 x 5, so lda >= 5: A is cuBLAS's second operand, its ldb */
      {{0, 0, 4, 6, 5, 4, 6, 6, 0, 0, 0, 1}, "ldb 4 < max(1, 5)"},
      /* op(A) = A^T with A stored 5 x 4, so lda >= 4 */
      {{1, 0, 4, 6, 5, 3, 6, 6, 0, 0, 0, 1}, "ldb 3 < max(1, 4)"},
      {{0, 0, 4, 6, 5, 5, 6, 5, 0, 0, 0, 1}, "ldc 5 < max(1, m = 6)"},
      {{0, 0, 4, 6, 5, 5, 6, 6, 0, 0, 20, 2}, "overlap"}, /* one C spans 24 elements, the stride is 20 */
      {{0, 0, -1, 6, 5, 5, 6, 6, 0, 0, 0, 1}, "negative"},
  };
  for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
    c = slG_cublas_of(&bad[i].g);
    err[0] = '\0';
    CHECK_MSG(slG_cublas_check(&c, err, sizeof err) == -1, "case %zu passed", i);
    CHECK_CONTAINS(err, bad[i].rule);
  }
  /* every call site's request at the edges: one token, one feature a head, one row */
  for (int which = SLM_GEMM_SCORES; which <= SLM_GEMM_CONTEXT_DV; which++) {
    slM_DevGemm d = slM_gemm_heads(which, 1, 1, 3, 3, 2);
    slG_Gemm g = {d.trans_a, d.trans_b, d.M,        d.N,        d.K,        d.lda,
                  d.ldb,     d.ldc,     d.stride_a, d.stride_b, d.stride_c, d.batch};
    c = slG_cublas_of(&g);
    CHECK_MSG(slG_cublas_check(&c, err, sizeof err) == 0, "heads request %d: %s", which, err);
  }
}

/* ---------------------------------------- the tensor-core attention, emulated */

/* A block's shared memory, and the head's arrays in global memory, each
** access checked: a fragment must start on 32 bytes and have a leading
** dimension of 16 bytes (WMMA), and lie inside the block's layout. */
typedef struct {
  unsigned char *base;
  size_t bytes;
  int dim, bad;
  char why[160];
} Smem;

static void smem_fail(Smem *s, const char *what, size_t off, int ld) {
  if (s->bad++ == 0) snprintf(s->why, sizeof s->why, "%s at byte %zu, leading dimension %d", what, off, ld);
}

/* the byte offset of p in shared memory, after the fragment checks (es: the element's bytes; span: elements from
** p to the fragment's last) */
static size_t frag_at(Smem *s, const void *p, int ld, size_t es, long span) {
  size_t off = (size_t)((const unsigned char *)p - s->base);
  if (off % 32 != 0) smem_fail(s, "a fragment not on 32 bytes", off, ld);
  if ((size_t)ld * es % 16 != 0) smem_fail(s, "a leading dimension not a multiple of 16 bytes", off, ld);
  if (off + (size_t)(span + 1) * es > s->bytes) smem_fail(s, "a fragment past the layout", off, ld);
  return off;
}

static float bf16_value(uint16_t h) {
  uint32_t u = (uint32_t)h << 16;
  float f;
  memcpy(&f, &u, sizeof f);
  return f;
}

static uint16_t bf16_of(float x) {
  float r = slK_round_bf16(x);
  uint32_t u;
  memcpy(&u, &r, sizeof u);
  return (uint16_t)(u >> 16);
}

typedef float Frag[16][16];

/* load_matrix_sync of a 16 x 16 bf16 fragment: element (i, j) at p[i ld + j] (row-major) or p[i + j ld] */
static void load_bf16(Smem *s, Frag f, const uint16_t *p, int ld, int col_major) {
  frag_at(s, p, ld, 2, 15L * ld + 15);
  for (int i = 0; i < 16; i++)
    for (int j = 0; j < 16; j++) f[i][j] = bf16_value(col_major ? p[i + (long)j * ld] : p[(long)i * ld + j]);
}

/* acc += A B over `steps` steps of 16 along k (the kernel's mma_steps): A from a + kk a_step, B from b + kk b_step;
** A is matrix_a (col_major: element (i, k) at a[i + k lda]), B matrix_b (col_major: (k, j) at b[k + j ldb]) */
static void mma_steps(Smem *s, Frag acc, const uint16_t *a, int lda, long a_step, int a_col, const uint16_t *b, int ldb,
                      long b_step, int b_col, int steps) {
  for (int kk = 0; kk < steps; kk++) {
    Frag fa, fb;
    load_bf16(s, fa, a + kk * a_step, lda, a_col);
    load_bf16(s, fb, b + kk * b_step, ldb, b_col);
    for (int i = 0; i < 16; i++)
      for (int j = 0; j < 16; j++) {
        float sum = acc[i][j];
        for (int k = 0; k < 16; k++) sum += fa[i][k] * fb[k][j];
        acc[i][j] = sum;
      }
  }
}

static void acc_load(Smem *s, Frag acc, const float *c, int ldc) {
  frag_at(s, c, ldc, 4, 15L * ldc + 15);
  for (int i = 0; i < 16; i++)
    for (int j = 0; j < 16; j++) acc[i][j] = c[(long)i * ldc + j];
}

static void acc_store(Smem *s, float *c, Frag acc, int ldc) {
  frag_at(s, c, ldc, 4, 15L * ldc + 15);
  for (int i = 0; i < 16; i++)
    for (int j = 0; j < 16; j++) c[(long)i * ldc + j] = acc[i][j];
}

/* the kernel's add_product: a warp's 16 rows of C (floats, LDO apart) += A (16 x 64 bf16, LDP apart) B (64 x dim
** bf16, LDH apart) */
static void add_product(Smem *s, float *c, const uint16_t *a, const uint16_t *b) {
  int dim = s->dim;
  for (int j = 0; j < dim / 16; j++) {
    Frag acc;
    acc_load(s, acc, c + j * 16, slG_tc_ldo(dim));
    mma_steps(s, acc, a, slG_tc_ldp(), 16, 0, b + j * 16, slG_tc_ldh(dim), 16L * slG_tc_ldh(dim), 0, 64 / 16);
    acc_store(s, c + j * 16, acc, slG_tc_ldo(dim));
  }
}

/* a head's bf16 array in global memory, n rows of dim */
typedef struct {
  const uint16_t *p;
  long n;
} Rows;

/* the kernel's stage: rows [row0, row0 + rows) into shared rows of LDH, zeros past n, 16 bytes an item */
static void stage(Smem *s, uint16_t *dst, Rows src, int row0, int rows, int n) {
  int dim = s->dim;
  for (int e = 0; e < rows * (dim / 8); e++) {
    int r = slG_tc_stage_row(e, dim), c = slG_tc_stage_col(e, dim);
    long from = slG_tc_at(row0 + r, c, dim), to = slG_tc_at(r, c, slG_tc_ldh(dim));
    size_t off = (size_t)((unsigned char *)(dst + to) - s->base);
    if (off % 16 || off + 16 > s->bytes || from % 8) smem_fail(s, "a staged item off its 16 bytes", off, 0);
    for (int i = 0; i < 8; i++) {
      int in = row0 + r < n && from + i < src.n;
      if (row0 + r < n && from + i >= src.n) smem_fail(s, "a staged read past the head", (size_t)from, 0);
      dst[to + i] = in ? src.p[from + i] : 0;
    }
  }
}

/* the forward's online softmax for one tile of keys from k0, the rows of the block's warps (two lanes a row, each
** 32 keys, as the kernel's shuffles combine them), then O += P V */
static void tc_forward_tile(Smem *s, int q0, int k0, int n, int causal, float scale2, float *m, float *l) {
  int dim = s->dim, lds = slG_tc_lds(), ldp = slG_tc_ldp(), ldo = slG_tc_ldo(dim);
  float *Ss = (float *)(s->base + slG_tc_fwd(dim, SLG_TC_FWD_S)),
        *Os = (float *)(s->base + slG_tc_fwd(dim, SLG_TC_FWD_O));
  uint16_t *Ps = (uint16_t *)(s->base + slG_tc_fwd(dim, SLG_TC_FWD_P));
  for (int warp = 0; warp < SLG_TC_THREADS / 32; warp++)
    for (int lane = 0; lane < 32; lane += 2) {
      int row = slG_tc_row(warp, lane), q = q0 + row;
      float mx[2] = {-INFINITY, -INFINITY}, sum[2] = {0, 0};
      for (int h = 0; h < 2; h++) {
        int half = slG_tc_half(lane + h);
        float *srow = Ss + slG_tc_at(row, half * 32, lds);
        for (int c = 0; c < 32; c++) {
          int key = k0 + half * 32 + c;
          float x = slG_tc_keep(key, q, n, causal) ? srow[c] * scale2 : -INFINITY;
          srow[c] = x;
          mx[h] = fmaxf(mx[h], x);
        }
      }
      float m_new = fmaxf(m[row], fmaxf(mx[0], mx[1]));
      float alpha = m_new == -INFINITY ? 1.0f : exp2f(m[row] - m_new);
      for (int h = 0; h < 2; h++) {
        int half = slG_tc_half(lane + h);
        float *srow = Ss + slG_tc_at(row, half * 32, lds), *orow = Os + slG_tc_at(row, half * (dim / 2), ldo);
        uint16_t *prow = Ps + slG_tc_at(row, half * 32, ldp);
        for (int c = 0; c < 32; c++) {
          float p = m_new == -INFINITY ? 0.0f : exp2f(srow[c] - m_new);
          prow[c] = bf16_of(p);
          sum[h] += p;
        }
        for (int d = 0; d < dim / 2; d++) orow[d] *= alpha;
      }
      l[row] = l[row] * alpha + (sum[0] + sum[1]);
      m[row] = m_new;
    }
  for (int warp = 0; warp < SLG_TC_THREADS / 32; warp++)
    add_product(s, Os + slG_tc_at(warp * 16, 0, ldo), Ps + slG_tc_at(warp * 16, 0, ldp),
                (uint16_t *)(s->base + slG_tc_fwd(dim, SLG_TC_FWD_V)));
}

/* attention_tc_fwd: every block of 64 queries of every head */
static void tc_forward(Smem *s, int bh, int n, int causal, const uint16_t *Q, const uint16_t *K, const uint16_t *V,
                       float *O, float *Lse) {
  int dim = s->dim, ldh = slG_tc_ldh(dim), lds = slG_tc_lds(), ldo = slG_tc_ldo(dim);
  long nx = (long)bh * n * dim;
  float scale2 = 1.4426950408889634f / sqrtf((float)dim), m[64], l[64];
  uint16_t *Qs = (uint16_t *)(s->base + slG_tc_fwd(dim, SLG_TC_FWD_Q)),
           *Ks = (uint16_t *)(s->base + slG_tc_fwd(dim, SLG_TC_FWD_K));
  uint16_t *Vs = (uint16_t *)(s->base + slG_tc_fwd(dim, SLG_TC_FWD_V));
  float *Ss = (float *)(s->base + slG_tc_fwd(dim, SLG_TC_FWD_S)),
        *Os = (float *)(s->base + slG_tc_fwd(dim, SLG_TC_FWD_O));
  for (int h = 0; h < bh; h++)
    for (int q0 = 0; q0 < n; q0 += SLG_TC_TQ) {
      long head = (long)h * n * dim;
      memset(s->base, 0xff, s->bytes); /* what a block finds: nothing it may rely on */
      stage(s, Qs, (Rows){Q + head, nx - head}, q0, SLG_TC_TQ, n);
      for (int e = 0; e < SLG_TC_TQ * ldo; e++) Os[e] = 0.0f;
      for (int r = 0; r < 64; r++) m[r] = -INFINITY, l[r] = 0.0f;
      for (int k0 = 0; k0 < slG_tc_key_end(n, q0, causal); k0 += SLG_TC_TK) {
        stage(s, Ks, (Rows){K + head, nx - head}, k0, SLG_TC_TK, n);
        stage(s, Vs, (Rows){V + head, nx - head}, k0, SLG_TC_TK, n);
        for (int warp = 0; warp < SLG_TC_THREADS / 32; warp++)
          for (int j = 0; j < SLG_TC_TK / 16; j++) {
            Frag acc = {{0}};
            /* K^T column-major is K's rows as they lie */
            mma_steps(s, acc, Qs + slG_tc_at(warp * 16, 0, ldh), ldh, 16, 0, Ks + slG_tc_at(j * 16, 0, ldh), ldh, 16, 1,
                      dim / 16);
            acc_store(s, Ss + slG_tc_at(warp * 16, j * 16, lds), acc, lds);
          }
        tc_forward_tile(s, q0, k0, n, causal, scale2, m, l);
      }
      for (int lane = 0; lane < 64 * 2; lane++) { /* every lane of the block: the row's half it writes */
        int row = slG_tc_row(lane / 32, lane % 32), half = slG_tc_half(lane % 32), q = q0 + row;
        if (q >= n) continue;
        const float *orow = Os + slG_tc_at(row, half * (dim / 2), ldo);
        float *out = O + head + slG_tc_at(q, half * (dim / 2), dim);
        for (int d = 0; d < dim / 2; d++) out[d] = orow[d] * (1.0f / l[row]);
        if (half == 0) Lse[(long)h * n + q] = m[row] * 0.69314718055994531f + logf(l[row]);
      }
    }
}

/* the backward's work on one query tile from q0, for the block of keys from k0 (attention_tc_bwd's loop body) */
static void tc_backward_tile(Smem *s, int k0, int q0, int n, int causal, float scale, float *dQ, long head) {
  int dim = s->dim, ldh = slG_tc_ldh(dim), lds = slG_tc_lds(), ldp = slG_tc_ldp(), ldo = slG_tc_ldo(dim);
  const float log2e = 1.4426950408889634f;
#define AT(region, type) ((type *)(s->base + slG_tc_bwd(dim, region)))
  uint16_t *Ks = AT(SLG_TC_BWD_K, uint16_t), *Vs = AT(SLG_TC_BWD_V, uint16_t), *Qs = AT(SLG_TC_BWD_Q, uint16_t);
  uint16_t *dOs = AT(SLG_TC_BWD_DO, uint16_t), *Pt = AT(SLG_TC_BWD_PT, uint16_t);
  float *St = AT(SLG_TC_BWD_ST, float), *dPt = AT(SLG_TC_BWD_DPT, float), *dKs = AT(SLG_TC_BWD_DK, float);
  float *dVs = AT(SLG_TC_BWD_DV, float), *dQs = AT(SLG_TC_BWD_DQ, float), *Lq = AT(SLG_TC_BWD_LQ, float);
  float *Dq = AT(SLG_TC_BWD_DQV, float);
#undef AT
  for (int warp = 0; warp < SLG_TC_THREADS / 32; warp++) /* S^T = K Q^T and dP^T = V dO^T */
    for (int j = 0; j < SLG_TC_TQ / 16; j++) {
      Frag st = {{0}}, dpt = {{0}};
      mma_steps(s, st, Ks + slG_tc_at(warp * 16, 0, ldh), ldh, 16, 0, Qs + slG_tc_at(j * 16, 0, ldh), ldh, 16, 1,
                dim / 16);
      mma_steps(s, dpt, Vs + slG_tc_at(warp * 16, 0, ldh), ldh, 16, 0, dOs + slG_tc_at(j * 16, 0, ldh), ldh, 16, 1,
                dim / 16);
      acc_store(s, St + slG_tc_at(warp * 16, j * 16, lds), st, lds);
      acc_store(s, dPt + slG_tc_at(warp * 16, j * 16, lds), dpt, lds);
    }
  for (int t = 0; t < SLG_TC_THREADS; t++) { /* P^T as the forward made it */
    int row = slG_tc_row(t / 32, t % 32), half = slG_tc_half(t % 32), key = k0 + row;
    float *srow = St + slG_tc_at(row, half * 32, lds);
    uint16_t *prow = Pt + slG_tc_at(row, half * 32, ldp);
    for (int c = 0; c < 32; c++) {
      int q = q0 + half * 32 + c;
      float p = slG_tc_keep_bwd(key, q, n, causal) ? exp2f(srow[c] * scale * log2e - Lq[half * 32 + c]) : 0.0f;
      srow[c] = p;
      prow[c] = bf16_of(p);
    }
  }
  for (int warp = 0; warp < SLG_TC_THREADS / 32; warp++)
    add_product(s, dVs + slG_tc_at(warp * 16, 0, ldo), Pt + slG_tc_at(warp * 16, 0, ldp), dOs);
  for (int t = 0; t < SLG_TC_THREADS; t++) { /* dS^T = P^T o (dP^T - Dq) in place of P^T */
    int row = slG_tc_row(t / 32, t % 32), half = slG_tc_half(t % 32);
    const float *srow = St + slG_tc_at(row, half * 32, lds), *dprow = dPt + slG_tc_at(row, half * 32, lds);
    uint16_t *prow = Pt + slG_tc_at(row, half * 32, ldp);
    for (int c = 0; c < 32; c++) prow[c] = bf16_of(srow[c] * (dprow[c] - Dq[half * 32 + c]));
  }
  for (int warp = 0; warp < SLG_TC_THREADS / 32; warp++)
    add_product(s, dKs + slG_tc_at(warp * 16, 0, ldo), Pt + slG_tc_at(warp * 16, 0, ldp), Qs);
  for (int warp = 0; warp < SLG_TC_THREADS / 32; warp++) /* dQ = dS K over the block's keys */
    for (int j = 0; j < dim / 16; j++) {
      Frag dq = {{0}};
      mma_steps(s, dq, Pt + warp * 16, ldp, 16L * ldp, 1, Ks + j * 16, ldh, 16L * ldh, 0, SLG_TC_TK / 16);
      acc_store(s, dQs + slG_tc_at(warp * 16, j * 16, ldo), dq, ldo);
    }
  for (int t = 0; t < SLG_TC_THREADS; t++) { /* the atomicAdds into dQ */
    int qr = slG_tc_row(t / 32, t % 32), half = slG_tc_half(t % 32), q = q0 + qr;
    if (q >= n) continue;
    const float *src = dQs + slG_tc_at(qr, half * (dim / 2), ldo);
    float *dst = dQ + head + slG_tc_at(q, half * (dim / 2), dim);
    for (int d = 0; d < dim / 2; d++) dst[d] += src[d] * scale;
  }
}

/* rowdot's D = rowsum(dO o O), rows of dim (malloc'd) */
static float *rowdots(const float *dO32, const float *O, long rows, int dim) {
  float *Dv = malloc(sizeof(float) * (size_t)(rows ? rows : 1));
  for (long r = 0; r < rows; r++) {
    float d = 0;
    for (int f = 0; f < dim; f++) d += dO32[r * dim + f] * O[r * dim + f];
    Dv[r] = d;
  }
  return Dv;
}

/* attention_tc_bwd with rowdot's D = rowsum(dO o O) first: every block of 64 keys of every head */
static void tc_backward(Smem *s, int bh, int n, int causal, const uint16_t *Q, const uint16_t *K, const uint16_t *V,
                        const uint16_t *dO, const float *O, const float *dO32, const float *Lse, float *dQ, float *dK,
                        float *dV) {
  int dim = s->dim, ldo = slG_tc_ldo(dim);
  long nx = (long)bh * n * dim;
  float scale = 1.0f / sqrtf((float)dim), *Dv = rowdots(dO32, O, (long)bh * n, dim);
  memset(dQ, 0, sizeof(float) * (size_t)nx);
  float *dKs = (float *)(s->base + slG_tc_bwd(dim, SLG_TC_BWD_DK)),
        *dVs = (float *)(s->base + slG_tc_bwd(dim, SLG_TC_BWD_DV));
  float *Lq = (float *)(s->base + slG_tc_bwd(dim, SLG_TC_BWD_LQ)),
        *Dq = (float *)(s->base + slG_tc_bwd(dim, SLG_TC_BWD_DQV));
  for (int h = 0; h < bh; h++)
    for (int k0 = 0; k0 < n; k0 += SLG_TC_TK) {
      long head = (long)h * n * dim, rows = (long)h * n;
      memset(s->base, 0xff, s->bytes);
      stage(s, (uint16_t *)(s->base + slG_tc_bwd(dim, SLG_TC_BWD_K)), (Rows){K + head, nx - head}, k0, SLG_TC_TK, n);
      stage(s, (uint16_t *)(s->base + slG_tc_bwd(dim, SLG_TC_BWD_V)), (Rows){V + head, nx - head}, k0, SLG_TC_TK, n);
      for (int e = 0; e < SLG_TC_TK * ldo; e++) dKs[e] = 0.0f, dVs[e] = 0.0f;
      for (int q0 = slG_tc_query_start(k0, causal); q0 < n; q0 += SLG_TC_TQ) {
        stage(s, (uint16_t *)(s->base + slG_tc_bwd(dim, SLG_TC_BWD_Q)), (Rows){Q + head, nx - head}, q0, SLG_TC_TQ, n);
        stage(s, (uint16_t *)(s->base + slG_tc_bwd(dim, SLG_TC_BWD_DO)), (Rows){dO + head, nx - head}, q0, SLG_TC_TQ,
              n);
        for (int i = 0; i < SLG_TC_TQ; i++) {
          int in = q0 + i < n;
          Lq[i] = in ? Lse[rows + q0 + i] * 1.4426950408889634f : INFINITY;
          Dq[i] = in ? Dv[rows + q0 + i] : 0.0f;
        }
        tc_backward_tile(s, k0, q0, n, causal, scale, dQ, head);
      }
      for (int t = 0; t < SLG_TC_THREADS; t++) {
        int row = slG_tc_row(t / 32, t % 32), half = slG_tc_half(t % 32), key = k0 + row;
        if (key >= n) continue;
        const float *gk = dKs + slG_tc_at(row, half * (dim / 2), ldo),
                    *gv = dVs + slG_tc_at(row, half * (dim / 2), ldo);
        long out = head + slG_tc_at(key, half * (dim / 2), dim);
        for (int d = 0; d < dim / 2; d++) dK[out + d] = gk[d] * scale, dV[out + d] = gv[d];
      }
    }
  free(Dv);
}

/* ------------------------------- version 2: mma.sync m16n8k16, emulated lane by lane
**
** attention_fa2.cu keeps its scores, P and O in the registers of the lanes
** that mma.sync gives them to. Its emulation holds each lane's registers,
** builds every product's matrices from them by PTX's definition of the
** m16n8k16 fragments (written out below, apart from attention_fa2_layout.h,
** whose maps it thereby checks), and runs every shared-memory access of the
** kernel (16-byte cp.async copies, ldmatrix's rows, plain and transposed)
** through the layout's bounds and alignments, one lane at a time. */

/* PTX ISA, "Matrix fragments for mma.m16n8k16" (.bf16 A and B, .f32 C): element i of a lane */
static void ptx_a(int lane, int i, int *row, int *col) { /* i 0-7: a0..a7 */
  *row = lane / 4 + ((i / 2) % 2) * 8;
  *col = lane % 4 * 2 + i % 2 + (i / 4) * 8;
}
static void ptx_b(int lane, int i, int *k, int *col) { /* i 0-3: b0..b3 */
  *k = lane % 4 * 2 + i % 2 + (i / 2) * 8;
  *col = lane / 4;
}
static void ptx_c(int lane, int i, int *row, int *col) { /* i 0-3: c0..c3 */
  *row = lane / 4 + (i / 2) * 8;
  *col = lane % 4 * 2 + i % 2;
}

/* one warp's d += a b: a[lane][4] and b[lane][2] registers of two bf16 (the first in the low half), d[lane][4]
** floats; every element of A and B must come from exactly one lane's register */
static void mma_emulated(Smem *s, float d[32][4], const uint32_t a[32][4], const uint32_t b[32][2]) {
  float A[16][16], B[16][8], C[16][8];
  int seen_a[16][16] = {{0}}, seen_b[16][8] = {{0}};
  for (int lane = 0; lane < 32; lane++) {
    for (int i = 0; i < 8; i++) {
      int r, c;
      ptx_a(lane, i, &r, &c);
      A[r][c] = bf16_value((uint16_t)(a[lane][i / 2] >> (16 * (i % 2)))), seen_a[r][c]++;
    }
    for (int i = 0; i < 4; i++) {
      int k, c;
      ptx_b(lane, i, &k, &c);
      B[k][c] = bf16_value((uint16_t)(b[lane][i / 2] >> (16 * (i % 2)))), seen_b[k][c]++;
    }
    for (int i = 0; i < 4; i++) {
      int r, c;
      ptx_c(lane, i, &r, &c);
      C[r][c] = d[lane][i];
    }
  }
  for (int r = 0; r < 16; r++)
    for (int c = 0; c < 16; c++)
      if (seen_a[r][c] != 1 || (c < 8 && seen_b[r][c] != 1))
        smem_fail(s, "a fragment element held twice or never", 0, 0);
  for (int lane = 0; lane < 32; lane++)
    for (int i = 0; i < 4; i++) {
      int r, c;
      ptx_c(lane, i, &r, &c);
      double sum = C[r][c];
      for (int k = 0; k < 16; k++) sum += (double)A[r][k] * B[k][c];
      d[lane][i] = (float)sum;
    }
}

/* PTX's ldmatrix.sync.aligned.m8n8.x4(.trans).shared.b16: lane 8 i + r gives the address of row r of matrix i (16
** bytes, on 16); lane L receives in register i matrix i's elements (L / 4, 2 (L % 4)) and (L / 4, 2 (L % 4) + 1), or
** with .trans (2 (L % 4), L / 4) and (2 (L % 4) + 1, L / 4), the first in the low half */
static void ldmatrix_emulated(Smem *s, const uint16_t *const addr[32], int trans, uint32_t d[32][4]) {
  uint16_t M[4][8][8] = {{{0}}};
  for (int lane = 0; lane < 32; lane++) {
    size_t off = (size_t)((const unsigned char *)addr[lane] - s->base);
    if (off % 16 || off + 16 > s->bytes) smem_fail(s, "an ldmatrix row off 16 bytes or past the layout", off, 0);
    else memcpy(M[lane / 8][lane % 8], addr[lane], 16);
  }
  for (int lane = 0; lane < 32; lane++)
    for (int i = 0; i < 4; i++) {
      int g = lane / 4, t = lane % 4;
      uint16_t lo = trans ? M[i][2 * t][g] : M[i][g][2 * t], hi = trans ? M[i][2 * t + 1][g] : M[i][g][2 * t + 1];
      d[lane][i] = (uint32_t)lo | (uint32_t)hi << 16;
    }
}

/* the kernel's stage_async: 16-byte copies into a tile of LDH rows, zeros for rows past n (source size 0) */
static void fa2_stage(Smem *s, size_t at, Rows src, int row0, int n) {
  int dim = s->dim;
  uint16_t *dst = (uint16_t *)(s->base + at);
  for (int e = 0; e < SLG_TC_TK * (dim / 8); e++) {
    int r = slG_tc_stage_row(e, dim), c = slG_tc_stage_col(e, dim), in = row0 + r < n;
    long from = slG_tc_at(in ? row0 + r : 0, c, dim), to = slG_tc_at(r, c, slG_tc_ldh(dim));
    size_t off = (size_t)((unsigned char *)(dst + to) - s->base);
    if (off % SLG_FA2_CHUNK || off + SLG_FA2_CHUNK > s->bytes || from % 8 || from + 8 > src.n)
      smem_fail(s, "a cp.async off its 16 bytes, past the layout or past the head", off, 0);
    for (int i = 0; i < 8; i++) dst[to + i] = in ? src.p[from + i] : 0;
  }
}

/* one lane's registers */
typedef struct {
  uint32_t qa[8][4];
  float s[SLG_TC_TK / 8][4], o[128 / 8][4], m[2], l[2];
} Lane;

/* attention_fa2_fwd for every block of every head */
static void fa2_forward(Smem *s, int bh, int n, int causal, const uint16_t *Q, const uint16_t *K, const uint16_t *V,
                        float *O, float *Lse) {
  enum { WARPS = SLG_TC_THREADS / 32, STILES = SLG_TC_TK / 8 };
  int dim = s->dim, ldh = slG_tc_ldh(dim), ksteps = dim / 16, dtiles = dim / 8;
  long nx = (long)bh * n * dim;
  float scale2 = 1.4426950408889634f / sqrtf((float)dim);
  static Lane lanes[WARPS][32];
  for (int h = 0; h < bh; h++)
    for (int q0 = 0; q0 < n; q0 += SLG_TC_TQ) {
      long head = (long)h * n * dim;
      Rows rq = {Q + head, nx - head}, rk = {K + head, nx - head}, rv = {V + head, nx - head};
      int kend = slG_tc_key_end(n, q0, causal), tiles = (kend + SLG_TC_TK - 1) / SLG_TC_TK;
      memset(s->base, 0xff, s->bytes);
      memset(lanes, 0, sizeof lanes);
      fa2_stage(s, slG_fa2_q(), rq, q0, n);
      fa2_stage(s, slG_fa2_k(dim, 0), rk, 0, n);
      fa2_stage(s, slG_fa2_v(dim, 0), rv, 0, n);
      for (int w = 0; w < WARPS; w++)
        for (int lane = 0; lane < 32; lane++) lanes[w][lane].m[0] = lanes[w][lane].m[1] = -INFINITY;
      for (int tile = 0; tile < tiles; tile++) {
        int k0 = tile * SLG_TC_TK, stage = tile % SLG_FA2_STAGES;
        if (tile + 1 < tiles) { /* the next tile lands in the other stage before this one is read */
          fa2_stage(s, slG_fa2_k(dim, (tile + 1) % SLG_FA2_STAGES), rk, k0 + SLG_TC_TK, n);
          fa2_stage(s, slG_fa2_v(dim, (tile + 1) % SLG_FA2_STAGES), rv, k0 + SLG_TC_TK, n);
        }
        const uint16_t *Qs = (const uint16_t *)(s->base + slG_fa2_q());
        const uint16_t *Ks = (const uint16_t *)(s->base + slG_fa2_k(dim, stage));
        const uint16_t *Vs = (const uint16_t *)(s->base + slG_fa2_v(dim, stage));
        for (int w = 0; w < WARPS; w++) {
          Lane *L = lanes[w];
          const uint16_t *addr[32];
          uint32_t ld[32][4];
          if (tile == 0)
            for (int kk = 0; kk < ksteps; kk++) {
              for (int lane = 0; lane < 32; lane++)
                addr[lane] = Qs + slG_tc_at(w * 16 + slG_fa2_ldm_row(lane), kk * 16 + slG_fa2_ldm_col(lane), ldh);
              ldmatrix_emulated(s, addr, 0, ld);
              for (int lane = 0; lane < 32; lane++) memcpy(L[lane].qa[kk], ld[lane], sizeof ld[lane]);
            }
          for (int j = 0; j < STILES; j += 2) { /* S = Q K^T, two tiles of 8 keys an ldmatrix */
            float d[2][32][4] = {{{0}}};
            for (int kk = 0; kk < ksteps; kk++) {
              uint32_t a[32][4], b[2][32][2];
              for (int lane = 0; lane < 32; lane++)
                addr[lane] = Ks + slG_tc_at(j * 8 + slG_fa2_ldm_k_row(lane), kk * 16 + slG_fa2_ldm_k_col(lane), ldh);
              ldmatrix_emulated(s, addr, 0, ld);
              for (int lane = 0; lane < 32; lane++) {
                memcpy(a[lane], L[lane].qa[kk], sizeof a[lane]);
                for (int r = 0; r < 4; r++) b[r / 2][lane][r % 2] = ld[lane][r];
              }
              mma_emulated(s, d[0], a, b[0]);
              mma_emulated(s, d[1], a, b[1]);
            }
            for (int lane = 0; lane < 32; lane++)
              memcpy(L[lane].s[j], d[0][lane], sizeof d[0][lane]),
                  memcpy(L[lane].s[j + 1], d[1][lane], sizeof d[1][lane]);
          }
          for (int hh = 0; hh < 2;
               hh++) { /* the online softmax, the four lanes of a row as the shuffles combine them */
            float mx[32], alpha[32];
            for (int lane = 0; lane < 32; lane++) {
              int row = q0 + w * 16 + slG_fa2_c_row(lane, 2 * hh);
              mx[lane] = -INFINITY;
              for (int j = 0; j < STILES; j++)
                for (int e = 0; e < 2; e++) {
                  int i = 2 * hh + e, key = k0 + j * 8 + slG_fa2_c_col(lane, i);
                  float x = slG_tc_keep(key, row, n, causal) ? L[lane].s[j][i] * scale2 : -INFINITY;
                  L[lane].s[j][i] = x;
                  mx[lane] = fmaxf(mx[lane], x);
                }
            }
            for (int x = 1; x <= 2; x *= 2) { /* __shfl_xor_sync(mask, mx, x) */
              float was[32];
              memcpy(was, mx, sizeof was);
              for (int lane = 0; lane < 32; lane++) mx[lane] = fmaxf(was[lane], was[lane ^ x]);
            }
            for (int lane = 0; lane < 32; lane++) {
              float m_new = fmaxf(L[lane].m[hh], mx[lane]), sum = 0.0f;
              alpha[lane] = m_new == -INFINITY ? 1.0f : exp2f(L[lane].m[hh] - m_new);
              for (int j = 0; j < STILES; j++)
                for (int e = 0; e < 2; e++) {
                  int i = 2 * hh + e;
                  float p = m_new == -INFINITY ? 0.0f : exp2f(L[lane].s[j][i] - m_new);
                  L[lane].s[j][i] = p;
                  sum += p;
                }
              L[lane].l[hh] = L[lane].l[hh] * alpha[lane] + sum;
              L[lane].m[hh] = m_new;
              for (int j = 0; j < dtiles; j++)
                L[lane].o[j][2 * hh] *= alpha[lane], L[lane].o[j][2 * hh + 1] *= alpha[lane];
            }
          }
          for (int kk = 0; kk < SLG_TC_TK / 16; kk++) /* O += P V, V transposed by ldmatrix */
            for (int j = 0; j < dtiles; j += 2) {
              uint32_t a[32][4], b[2][32][2];
              float d[2][32][4];
              for (int lane = 0; lane < 32; lane++)
                addr[lane] = Vs + slG_tc_at(kk * 16 + slG_fa2_ldm_row(lane), j * 8 + slG_fa2_ldm_col(lane), ldh);
              ldmatrix_emulated(s, addr, 1, ld);
              for (int lane = 0; lane < 32; lane++) {
                for (int r = 0; r < 4; r++) {
                  const float *c = L[lane].s[slG_fa2_p_tile(kk, r)] + slG_fa2_p_elem(r);
                  a[lane][r] = (uint32_t)bf16_of(c[0]) | (uint32_t)bf16_of(c[1]) << 16;
                  b[r / 2][lane][r % 2] = ld[lane][r];
                }
                memcpy(d[0][lane], L[lane].o[j], sizeof d[0][lane]),
                    memcpy(d[1][lane], L[lane].o[j + 1], sizeof d[1][lane]);
              }
              mma_emulated(s, d[0], a, b[0]);
              mma_emulated(s, d[1], a, b[1]);
              for (int lane = 0; lane < 32; lane++)
                memcpy(L[lane].o[j], d[0][lane], sizeof d[0][lane]),
                    memcpy(L[lane].o[j + 1], d[1][lane], sizeof d[1][lane]);
            }
        }
      }
      for (int w = 0; w < WARPS; w++) /* the row sums over a row's four lanes, then O / l and L */
        for (int hh = 0; hh < 2; hh++) {
          float l[32];
          for (int lane = 0; lane < 32; lane++) l[lane] = lanes[w][lane].l[hh];
          for (int x = 1; x <= 2; x *= 2) {
            float was[32];
            memcpy(was, l, sizeof was);
            for (int lane = 0; lane < 32; lane++) l[lane] = was[lane] + was[lane ^ x];
          }
          for (int lane = 0; lane < 32; lane++) {
            int row = q0 + w * 16 + slG_fa2_c_row(lane, 2 * hh);
            if (row >= n) continue;
            for (int j = 0; j < dtiles; j++)
              for (int e = 0; e < 2; e++)
                O[head + slG_tc_at(row, j * 8 + slG_fa2_c_col(lane, 2 * hh + e), dim)] =
                    lanes[w][lane].o[j][2 * hh + e] * (1.0f / l[lane]);
            if (slG_fa2_t(lane) == 0)
              Lse[(long)h * n + row] = lanes[w][lane].m[hh] * 0.69314718055994531f + logf(l[lane]);
          }
        }
    }
}

/* acc tile j of every lane (acc: 32 lanes x tiles x 4 floats) += a b */
static void mma_tile(Smem *s, float *acc, int tiles, int j, const uint32_t a[32][4], const uint32_t b[32][2]) {
  float d[32][4];
  for (int lane = 0; lane < 32; lane++) memcpy(d[lane], acc + ((size_t)lane * tiles + j) * 4, sizeof d[lane]);
  mma_emulated(s, d, a, b);
  for (int lane = 0; lane < 32; lane++) memcpy(acc + ((size_t)lane * tiles + j) * 4, d[lane], sizeof d[lane]);
}

/* the ldmatrix of a warp: lane L addresses row row0 + rows(L), column col0 + cols(L) of a tile of ld */
static void ldm_at(Smem *s, const uint16_t *tile, int ld, int row0, int col0, int (*rows)(int), int (*cols)(int),
                   int trans, uint32_t d[32][4]) {
  const uint16_t *addr[32];
  for (int lane = 0; lane < 32; lane++) addr[lane] = tile + slG_tc_at(row0 + rows(lane), col0 + cols(lane), ld);
  ldmatrix_emulated(s, addr, trans, d);
}
static int ldm_row(int lane) { return slG_fa2_ldm_row(lane); }
static int ldm_col(int lane) { return slG_fa2_ldm_col(lane); }
static int ldm_k_row(int lane) { return slG_fa2_ldm_k_row(lane); }
static int ldm_k_col(int lane) { return slG_fa2_ldm_k_col(lane); }

/* registers i of an x4 load as the B operands of two tiles: (0, 1) and (2, 3) */
static void split_b(const uint32_t ld[32][4], uint32_t b[2][32][2]) {
  for (int lane = 0; lane < 32; lane++)
    for (int r = 0; r < 4; r++) b[r / 2][lane][r % 2] = ld[lane][r];
}

/* the kernel's stage_floats_async: a query tile's 64 floats from q0, zeros past n */
static void fa2_stage_floats(Smem *s, size_t at, const float *src, int q0, int n) {
  float *dst = (float *)(s->base + at);
  for (int i = 0; i < SLG_TC_TQ; i++) {
    if ((at + 4 * (size_t)i) % 4 || at + 4 * (size_t)i + 4 > s->bytes)
      smem_fail(s, "a float copy past the layout", at, 0);
    dst[i] = q0 + i < n ? src[q0 + i] : 0.0f;
  }
}

/* P as A: step kk of a lane's scores (tiles of 8 columns x 4 floats), rounded to bf16 pairs */
static void p_as_a(const float *sc, uint32_t a[4]) {
  for (int r = 0; r < 4; r++) {
    const float *c = sc + slG_fa2_p_tile(0, r) * 4 + slG_fa2_p_elem(r);
    a[r] = (uint32_t)bf16_of(c[0]) | (uint32_t)bf16_of(c[1]) << 16;
  }
}

/* attention_fa2_bwd with D = rowsum(dO o O) first: every block of 64 keys of every head */
static void fa2_backward(Smem *s, int bh, int n, int causal, const uint16_t *Q, const uint16_t *K, const uint16_t *V,
                         const uint16_t *dO, const float *O, const float *dO32, const float *Lse, float *dQ, float *dK,
                         float *dV) {
  enum { WARPS = SLG_TC_THREADS / 32, QT = SLG_TC_TQ / 8, DT = 128 / 8 };
  int dim = s->dim, ldh = slG_tc_ldh(dim), ldp = slG_tc_ldp(), ksteps = dim / 16, dtiles = dim / 8;
  long nx = (long)bh * n * dim;
  const float log2e = 1.4426950408889634f, scale = 1.0f / sqrtf((float)dim), scale2 = scale * log2e;
  float *Dv = rowdots(dO32, O, (long)bh * n, dim);
  static float dk[WARPS][32][DT][4], dv[WARPS][32][DT][4];
  memset(dQ, 0, sizeof(float) * (size_t)nx);
#define AT(region, stage) (s->base + slG_fa2_bwd(dim, region, stage))
  for (int h = 0; h < bh; h++)
    for (int k0 = 0; k0 < n; k0 += SLG_TC_TK) {
      long head = (long)h * n * dim, rows = (long)h * n;
      Rows rq = {Q + head, nx - head}, rk = {K + head, nx - head}, rv = {V + head, nx - head};
      Rows rd = {dO + head, nx - head};
      int qstart = slG_tc_query_start(k0, causal), tiles = (n - qstart + SLG_TC_TQ - 1) / SLG_TC_TQ;
      memset(s->base, 0xff, s->bytes);
      memset(dk, 0, sizeof dk), memset(dv, 0, sizeof dv);
      fa2_stage(s, slG_fa2_bwd(dim, SLG_FA2_BWD_K, 0), rk, k0, n);
      fa2_stage(s, slG_fa2_bwd(dim, SLG_FA2_BWD_V, 0), rv, k0, n);
      const uint16_t *Ks = (const uint16_t *)AT(SLG_FA2_BWD_K, 0), *Vs = (const uint16_t *)AT(SLG_FA2_BWD_V, 0);
      uint16_t *dSs = (uint16_t *)AT(SLG_FA2_BWD_DS, 0);
      for (int tile = -1; tile < tiles; tile++) {
        int next = tile + 1; /* tile -1: the first stage, staged with K and V */
        if (next < tiles) {
          int q1 = qstart + next * SLG_TC_TQ, st = next % SLG_FA2_STAGES;
          fa2_stage(s, slG_fa2_bwd(dim, SLG_FA2_BWD_Q, st), rq, q1, n);
          fa2_stage(s, slG_fa2_bwd(dim, SLG_FA2_BWD_DO, st), rd, q1, n);
          fa2_stage_floats(s, slG_fa2_bwd(dim, SLG_FA2_BWD_L, st), Lse + rows, q1, n);
          fa2_stage_floats(s, slG_fa2_bwd(dim, SLG_FA2_BWD_D, st), Dv + rows, q1, n);
        }
        if (tile < 0) continue;
        int q0 = qstart + tile * SLG_TC_TQ, st = tile % SLG_FA2_STAGES;
        const uint16_t *Qs = (const uint16_t *)AT(SLG_FA2_BWD_Q, st), *dOs = (const uint16_t *)AT(SLG_FA2_BWD_DO, st);
        const float *Ls = (const float *)AT(SLG_FA2_BWD_L, st), *Ds = (const float *)AT(SLG_FA2_BWD_D, st);
        for (int w = 0; w < WARPS; w++) {
          static float sc[32][QT][4], dp[32][QT][4];
          memset(sc, 0, sizeof sc), memset(dp, 0, sizeof dp);
          for (int kk = 0; kk < ksteps; kk++) { /* S^T = K Q^T, dP^T = V dO^T */
            uint32_t ka[32][4], va[32][4], ld[32][4], b[2][32][2];
            ldm_at(s, Ks, ldh, w * 16, kk * 16, ldm_row, ldm_col, 0, ka);
            ldm_at(s, Vs, ldh, w * 16, kk * 16, ldm_row, ldm_col, 0, va);
            for (int j = 0; j < QT; j += 2) {
              ldm_at(s, Qs, ldh, j * 8, kk * 16, ldm_k_row, ldm_k_col, 0, ld);
              split_b(ld, b);
              mma_tile(s, &sc[0][0][0], QT, j, ka, b[0]), mma_tile(s, &sc[0][0][0], QT, j + 1, ka, b[1]);
              ldm_at(s, dOs, ldh, j * 8, kk * 16, ldm_k_row, ldm_k_col, 0, ld);
              split_b(ld, b);
              mma_tile(s, &dp[0][0][0], QT, j, va, b[0]), mma_tile(s, &dp[0][0][0], QT, j + 1, va, b[1]);
            }
          }
          for (int lane = 0; lane < 32; lane++) /* P^T, then dS^T = P^T o (dP^T - D) */
            for (int j = 0; j < QT; j++)
              for (int i = 0; i < 4; i++) {
                int c = j * 8 + slG_fa2_c_col(lane, i), q = q0 + c, key = k0 + w * 16 + slG_fa2_c_row(lane, i);
                float p = slG_tc_keep_bwd(key, q, n, causal) ? exp2f(sc[lane][j][i] * scale2 - Ls[c] * log2e) : 0.0f;
                sc[lane][j][i] = p;
                dp[lane][j][i] = p * (dp[lane][j][i] - Ds[c]);
              }
          for (int kk = 0; kk < SLG_TC_TQ / 16; kk++) /* dV += P^T dO, dK += dS^T Q */
            for (int j = 0; j < dtiles; j += 2) {
              uint32_t pa[32][4], da[32][4], ld[32][4], b[2][32][2];
              for (int lane = 0; lane < 32; lane++)
                p_as_a(sc[lane][2 * kk], pa[lane]), p_as_a(dp[lane][2 * kk], da[lane]);
              ldm_at(s, dOs, ldh, kk * 16, j * 8, ldm_row, ldm_col, 1, ld);
              split_b(ld, b);
              mma_tile(s, &dv[w][0][0][0], DT, j, pa, b[0]), mma_tile(s, &dv[w][0][0][0], DT, j + 1, pa, b[1]);
              ldm_at(s, Qs, ldh, kk * 16, j * 8, ldm_row, ldm_col, 1, ld);
              split_b(ld, b);
              mma_tile(s, &dk[w][0][0][0], DT, j, da, b[0]), mma_tile(s, &dk[w][0][0][0], DT, j + 1, da, b[1]);
            }
          for (int lane = 0; lane < 32; lane++) /* dS^T into shared memory, bf16 pairs */
            for (int j = 0; j < QT; j++)
              for (int hh = 0; hh < 2; hh++) {
                uint16_t *to =
                    dSs + slG_tc_at(w * 16 + slG_fa2_c_row(lane, 2 * hh), j * 8 + slG_fa2_c_col(lane, 2 * hh), ldp);
                size_t off = (size_t)((unsigned char *)to - s->base);
                if (off % 4 || off + 4 > s->bytes) smem_fail(s, "a dS^T pair off 4 bytes or past the layout", off, 0);
                to[0] = bf16_of(dp[lane][j][2 * hh]), to[1] = bf16_of(dp[lane][j][2 * hh + 1]);
              }
        }
        for (int w = 0; w < WARPS; w++) { /* dQ = dS K, dS read transposed from dS^T, then the atomicAdds */
          static float dq[32][DT][4];
          memset(dq, 0, sizeof dq);
          for (int kk = 0; kk < SLG_TC_TK / 16; kk++) {
            uint32_t a[32][4], ld[32][4], b[2][32][2];
            ldm_at(s, dSs, ldp, kk * 16, w * 16, ldm_k_row, ldm_k_col, 1, a);
            for (int j = 0; j < dtiles; j += 2) {
              ldm_at(s, Ks, ldh, kk * 16, j * 8, ldm_row, ldm_col, 1, ld);
              split_b(ld, b);
              mma_tile(s, &dq[0][0][0], DT, j, a, b[0]), mma_tile(s, &dq[0][0][0], DT, j + 1, a, b[1]);
            }
          }
          for (int lane = 0; lane < 32; lane++)
            for (int i = 0; i < 4; i++) {
              int q = q0 + w * 16 + slG_fa2_c_row(lane, i);
              if (q < n)
                for (int j = 0; j < dtiles; j++)
                  dQ[head + slG_tc_at(q, j * 8 + slG_fa2_c_col(lane, i), dim)] += dq[lane][j][i] * scale;
            }
        }
      }
      for (int w = 0; w < WARPS; w++)
        for (int lane = 0; lane < 32; lane++)
          for (int i = 0; i < 4; i++) {
            int key = k0 + w * 16 + slG_fa2_c_row(lane, i);
            if (key >= n) continue;
            for (int j = 0; j < dtiles; j++) {
              long at = head + slG_tc_at(key, j * 8 + slG_fa2_c_col(lane, i), dim);
              dK[at] = dk[w][lane][j][i] * scale, dV[at] = dv[w][lane][j][i];
            }
          }
    }
#undef AT
  free(Dv);
}

/* an emulated version of the tensor-core attention: its layouts' sizes, forward and backward */
typedef struct {
  const char *name, *rules;
  size_t (*forward_bytes)(int dim), (*backward_bytes)(int dim);
  void (*forward)(Smem *s, int bh, int n, int causal, const uint16_t *Q, const uint16_t *K, const uint16_t *V, float *O,
                  float *Lse);
  void (*backward)(Smem *s, int bh, int n, int causal, const uint16_t *Q, const uint16_t *K, const uint16_t *V,
                   const uint16_t *dO, const float *O, const float *dO32, const float *Lse, float *dQ, float *dK,
                   float *dV);
} Emulated;

static size_t tc_forward_bytes(int dim) { return slG_tc_fwd(dim, SLG_TC_FWD_BYTES); }
static size_t tc_backward_bytes(int dim) { return slG_tc_bwd(dim, SLG_TC_BWD_BYTES); }
static const Emulated VERSION1 = {"tensor-core attention",
                                  "WMMA's rules or the layout",
                                  tc_forward_bytes,
                                  tc_backward_bytes,
                                  tc_forward,
                                  tc_backward};
static const Emulated VERSION2 = {"attention version 2", "the layout or the fragments' rules",
                                  slG_fa2_bytes,         slG_fa2_bwd_bytes,
                                  fa2_forward,           fa2_backward};

/* the emulated kernels against the CPU's attention on the same bf16-rounded inputs */
static void emulated_case(const Emulated *e, int bh, int n, int dim, int causal) {
  size_t nx = (size_t)bh * n * dim, nl = (size_t)bh * n;
  snprintf(tag, sizeof tag, "%s %d heads, n %d, dim %d%s", e->name, bh, n, dim, causal ? ", causal" : "");
  float *in[4];
  uint16_t *h[4];
  for (int i = 0; i < 4; i++) { /* Q K V dO */
    in[i] = randn(nx);
    slK_round_array(SLK_BF16, in[i], in[i], nx);
    h[i] = bits_of(SLK_BF16, in[i], nx);
  }
  float *o = nans(nx), *lse = nans(nl), *dq = nans(nx), *dk = nans(nx), *dv = nans(nx);
  float *ro = calloc(nx, sizeof *ro), *rl = calloc(nl, sizeof *rl), *rq = calloc(nx, sizeof *rq);
  float *rk = calloc(nx, sizeof *rk), *rv = calloc(nx, sizeof *rv);
  slK_Attn a;
  slK_attention_contiguous(&a, 1, bh, n, n, dim, causal);
  CHECK(slK_attention_forward(SLK_ATTN_NAIVE, &a, in[0], in[1], in[2], ro, rl) == 0);
  CHECK(slK_attention_backward(SLK_ATTN_NAIVE, &a, in[0], in[1], in[2], ro, in[3], rl, rq, rk, rv) == 0);
  size_t fwd = e->forward_bytes(dim), bwd = e->backward_bytes(dim), most = fwd > bwd ? fwd : bwd;
  Smem s = {aligned_alloc(128, (most + 127) / 128 * 128), fwd, dim, 0, ""};
  e->forward(&s, bh, n, causal, h[0], h[1], h[2], o, lse);
  s.bytes = bwd;
  /* the backward from the reference's O and L, as the GPU test gives it */
  e->backward(&s, bh, n, causal, h[0], h[1], h[2], h[3], ro, in[3], rl, dq, dk, dv);
  CHECK_MSG(s.bad == 0, "%s: %d shared-memory accesses broke %s; the first: %s", tag, s.bad, e->rules, s.why);
  compare("O", o, ro, nx, 1e-2);
  compare("L", lse, rl, nl, 1e-4);
  compare("dQ", dq, rq, nx, 3e-2);
  compare("dK", dk, rk, nx, 3e-2);
  compare("dV", dv, rv, nx, 3e-2);
  for (int i = 0; i < 4; i++) free(in[i]), free(h[i]);
  free(o), free(lse), free(dq), free(dk), free(dv), free(ro), free(rl), free(rq), free(rk), free(rv), free(s.base);
}

static void test_tensor_core_attention(void) {
  slM_rng_seed(&rng, 37);
  static const int ns[] = {1, 63, 65, 150};
  for (int dim = 64; dim <= 128; dim += 64)
    for (size_t i = 0; i < sizeof ns / sizeof *ns; i++)
      for (int causal = 0; causal < 2; causal++) emulated_case(&VERSION1, 2, ns[i], dim, causal);
  /* the layouts fit the most shared memory a Hopper block may have (227 KiB; the backward at dim 128, 210.5 KiB,
  ** does not fit an A100's 163, where attention_tc.cu refuses it with the figures) */
  CHECK(slG_tc_bwd(128, SLG_TC_BWD_BYTES) <= 227 * 1024 && slG_tc_fwd(128, SLG_TC_FWD_BYTES) <= 227 * 1024);
}

static void test_register_attention(void) {
  slM_rng_seed(&rng, 41);
  static const int ns[] = {1, 63, 65, 150};
  static const int dims[] = {64, 80, 128};
  for (size_t d = 0; d < 3; d++)
    for (size_t i = 0; i < sizeof ns / sizeof *ns; i++)
      for (int causal = 0; causal < 2; causal++) emulated_case(&VERSION2, 2, ns[i], dims[d], causal);
  /* the layouts fit the shared memory an A100 block may have (163 KiB) at every head size */
  CHECK(slG_fa2_bytes(128) <= 163 * 1024 && slG_fa2_bwd_bytes(128) <= 163 * 1024);
  CHECK(!slG_fa2_dim_ok(96) && slG_fa2_dim_ok(80));
}

/* ---------------------------------------------------------- column sums */

/* ops.h's chunked_column_sums as column_sums (norm: norm_param_grads, y the gain's and y2 the shift's gradient) on a grid
** of `grid` blocks: each round's partials by every warp, then warp 0's adds, as the two __syncthreads part them */
static void emulated_sums(const float *a, const float *x, const float *mean, const float *rstd, size_t rows,
                          size_t cols, float *y, float *y2, unsigned grid, int norm) {
  float part[SLG_SUM_WARPS][SLG_SUM_LANES], part2[SLG_SUM_WARPS][SLG_SUM_LANES];
  float acc[SLG_SUM_LANES], acc2[SLG_SUM_LANES];
  const size_t chunks = slG_sum_chunks(rows);
  for (unsigned block = 0; block < grid; block++)
    for (size_t tile = block; tile < slG_sum_tiles(cols); tile += grid) {
      for (int l = 0; l < SLG_SUM_LANES; l++) {
        size_t j = tile * SLG_SUM_LANES + l;
        acc[l] = j < cols ? y[j] : 0.0f, acc2[l] = j < cols && norm ? y2[j] : 0.0f;
      }
      for (size_t k = 0; slG_sum_chunk(k, 0) < chunks; k++) {
        for (int w = 0; w < SLG_SUM_WARPS; w++)
          for (int l = 0; l < SLG_SUM_LANES; l++) {
            const size_t j = tile * SLG_SUM_LANES + l, c = slG_sum_chunk(k, w);
            float p = 0.0f, p2 = 0.0f;
            if (j < cols && c < chunks)
              for (size_t r = slG_sum_first(c); r < slG_sum_end(c, rows); r++) {
                CHECK(r < rows);
                float gy = a[r * cols + j];
                if (norm) p += gy * ((x[r * cols + j] - (mean ? mean[r] : 0.0f)) * rstd[r]), p2 += gy;
                else p += gy;
              }
            part[w][l] = p, part2[w][l] = p2;
          }
        for (int l = 0; l < SLG_SUM_LANES; l++)
          for (int v = 0; v < SLG_SUM_WARPS && slG_sum_chunk(k, v) < chunks; v++)
            acc[l] += part[v][l], acc2[l] += part2[v][l];
      }
      for (int l = 0; l < SLG_SUM_LANES; l++) {
        size_t j = tile * SLG_SUM_LANES + l;
        if (j < cols) y[j] = acc[l];
        if (j < cols && norm) y2[j] = acc2[l];
      }
    }
}

static int bits_equal(const float *a, const float *b, size_t n) { return memcmp(a, b, n * sizeof *a) == 0; }

static void test_column_sums(void) {
  slM_rng_seed(&rng, 43);
  static const size_t shapes[][2] = {{1, 1}, {64, 31}, {65, 32}, {511, 33}, {513, 70}, {1100, 100}, {3000, 7}};
  for (size_t s = 0; s < sizeof shapes / sizeof *shapes; s++)
    for (unsigned grid = 1; grid <= 5; grid += 4) {
      size_t rows = shapes[s][0], cols = shapes[s][1];
      float *a = malloc(rows * cols * sizeof *a), *x = malloc(rows * cols * sizeof *x), *st = malloc(2 * rows * 4);
      float *y[4], *z[4];
      for (size_t i = 0; i < rows * cols; i++) a[i] = (float)slM_rng_normal(&rng), x[i] = (float)slM_rng_normal(&rng);
      for (size_t i = 0; i < 2 * rows; i++) st[i] = (float)slM_rng_normal(&rng);
      for (int k = 0; k < 4; k++) {
        y[k] = malloc(cols * sizeof *y[k]), z[k] = malloc(cols * sizeof *z[k]);
        for (size_t j = 0; j < cols; j++) y[k][j] = z[k][j] = (float)slM_rng_normal(&rng);
      }
      emulated_sums(a, NULL, NULL, NULL, rows, cols, y[0], NULL, grid, 0);
      slK_column_sums(a, rows, cols, z[0]);
      CHECK_MSG(bits_equal(y[0], z[0], cols), "column sums, %zu x %zu, grid %u", rows, cols, grid);
      emulated_sums(a, x, st, st + rows, rows, cols, y[1], y[2], grid, 1);
      slK_norm_param_grads(x, a, st, st + rows, 1, rows, (int)cols, z[1], z[2]);
      CHECK_MSG(bits_equal(y[1], z[1], cols) && bits_equal(y[2], z[2], cols), "layer norm's gradients, %zu x %zu", rows,
                cols);
      emulated_sums(a, x, NULL, st + rows, rows, cols, y[3], y[2], grid, 1);
      slK_norm_param_grads(x, a, NULL, st + rows, 1, rows, (int)cols, z[3], NULL);
      CHECK_MSG(bits_equal(y[3], z[3], cols), "RMSNorm's gain gradient, %zu x %zu", rows, cols);
      for (int k = 0; k < 4; k++) free(y[k]), free(z[k]);
      free(a), free(x), free(st);
    }
}

int main(void) {
  RUN(test_column_sums);
  RUN(test_cublas_rules);
  RUN(test_cublas_requests);
  RUN(test_tensor_core_attention);
  RUN(test_register_attention);
  return check_summary();
}
