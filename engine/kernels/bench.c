/*
** bench.c - one benchmark harness for the CPU and GPU kernels, and the
** table of kernels it can time.
**
** A case is a kernel at one size: set up (operands allocated through
** slK_alloc and filled deterministically), run `warmup` times untimed, then
** `reps` times timed, then torn down. Each run is timed by the harness's
** clock, or, on the GPU, by CUDA events around the kernel after a
** synchronisation (the case's run returns those seconds). Each kernel
** declares its FLOPs and the bytes it must move at the least, so that
** GFLOP/s, GB/s and the arithmetic intensity of the roofline follow from
** the median time. The clock is a parameter so that the statistics can be
** tested on a synthetic clock.
**
** Before a case is timed it is checked, as llm.c checks each kernel
** before timing it: run once at a small size, its outputs are compared with
** its reference's from the same operands (a GPU case's downloaded), and a
** case that differs by more than its kind's tolerance is refused, naming
** the case, the largest difference and the tolerance (the checks, below;
** once for the sizes of one call). The tests check each kernel far more
** widely (test_kernels.c, test_gpu_ops.c); this check stands between a
** wrong kernel and a timing of it.
**
** The table is indexed by an enum of the cases: a case's setup names its
** own row, and a GPU case the kernel version it asks cuda/ for, so that no
** number depends on where a row stands.
*/
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "device.h"
#include "gemm_half.h"
#include "kernels.h"
#include "round.h"
#include "syslab.h"
#include "slutil.h"

double slK_now(void *ud) {
  (void)ud;
  return slU_now();
}

static int by_value(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return x < y ? -1 : x > y;
}

void slK_stats(double *s, int n, slK_Stats *out) {
  memset(out, 0, sizeof *out);
  out->reps = n;
  if (n <= 0) return;
  qsort(s, (size_t)n, sizeof *s, by_value);
  out->min = s[0];
  out->median = n % 2 ? s[n / 2] : 0.5 * (s[n / 2 - 1] + s[n / 2]);
  double sum = 0;
  for (int i = 0; i < n; i++) sum += s[i];
  out->mean = sum / n;
  double var = 0;
  for (int i = 0; i < n; i++) var += (s[i] - out->mean) * (s[i] - out->mean);
  out->std = n > 1 ? sqrt(var / (n - 1)) : 0;
}

/* ------------------------------------------------------------- the cases */

struct slK_Case {
  const slK_Bench *bench;
  int n;
  slK_Attn a;
  float *x[10];
  int8_t *m;
  uint8_t *s;
  uint16_t *h;
  void *gpu;
  void *copy[14]; /* a GPU case's arrays downloaded for its check (on_host) */
};

static void fill(float *x, size_t n, uint64_t seed) {
  uint64_t z = seed * 0x9E3779B97F4A7C15ull + 1;
  for (size_t i = 0; i < n; i++) {
    z ^= z << 13, z ^= z >> 7, z ^= z << 17;
    x[i] = (float)((double)(z >> 11) / 9007199254740992.0 * 2.0 - 1.0);
  }
}

static slK_Case *case_new(int n, const slK_Attn *shape) {
  slK_Case *c = calloc(1, sizeof *c);
  c->n = n;
  if (shape) c->a = *shape;
  return c;
}

static void case_free(slK_Case *c) {
  if (!c) return;
  for (int i = 0; i < 10; i++) slK_free(c->x[i]);
  slK_free(c->m);
  slK_free(c->s);
  slK_free(c->h);
  for (int i = 0; i < 14; i++) free(c->copy[i]);
  if (c->gpu) slK_gpu()->case_free(c->gpu); /* a GPU case was made by the table */
  free(c);
}

/* allocates the operands; NULL with err when the memory is not there */
static float *operand(slK_Case *c, int i, size_t n, uint64_t seed, char *err, size_t errlen) {
  c->x[i] = slK_alloc(n * sizeof(float));
  if (!c->x[i]) {
    snprintf(err, errlen, "could not allocate %.1f MiB for the operands", n * 4.0 / 1048576);
    return NULL;
  }
  if (seed) fill(c->x[i], n, seed);
  else memset(c->x[i], 0, n * sizeof(float));
  return c->x[i];
}

/* set when a case's setup refused it for memory: the harness reports it as
** SLK_BENCH_REFUSED, so that a table can keep the row and go on */
static int refused;

static int refuse(size_t need, const char *what, char *err, size_t errlen) {
  size_t avail = slK_mem_available();
  if (avail && need > avail / 10 * 8) {
    refused = 1;
    snprintf(err, errlen, "%s needs %.2f GiB, more than the budget of %.2f GiB (80%% of the %.2f GiB available)", what,
             need / 1073741824.0, avail / 10 * 8 / 1073741824.0, avail / 1073741824.0);
    return -1;
  }
  return 0;
}

/* GEMM: n x n x n */
static slK_GemmImpl gemm_impl(const slK_Bench *b);

static int half_format(const slK_Bench *b) {
  return strstr(b->name, "bf16") ? SLK_BF16 : strstr(b->name, "fp16") ? SLK_FP16 : SLK_FP32;
}

static void gemm_once(const slK_Bench *b, int n, const float *x, const float *y, float *z) {
  int f = half_format(b);
  if (f == SLK_FP32) slK_sgemm_with(gemm_impl(b), SLK_N, SLK_N, n, n, n, 1.0f, x, n, y, n, 0.0f, z, n);
  else if (strstr(b->name, "emulated"))
    slK_gemm_half_emulated(f, SLK_N, SLK_N, n, n, n, 1.0f, x, n, y, NULL, n, 0.0f, z, n);
  else slK_gemm_half(f, SLK_N, SLK_N, n, n, n, 1.0f, x, n, y, NULL, n, 0.0f, z, n);
}

static slK_GemmImpl gemm_impl(const slK_Bench *b) {
  return strcmp(b->name, "gemm_naive") == 0     ? SLK_GEMM_NAIVE
         : strcmp(b->name, "gemm_blocked") == 0 ? SLK_GEMM_BLOCKED
                                                : SLK_GEMM_OPENBLAS;
}

static slK_Case *gemm_setup_for(const slK_Bench *b, int n, char *err, size_t errlen) {
  if (n < 1 || n > 32768) {
    snprintf(err, errlen, "gemm size must be 1..32768, got %d", n);
    return NULL;
  }
  if (refuse(3 * (size_t)n * n * 4, "this product", err, errlen)) return NULL;
  slK_Case *c = case_new(n, NULL);
  c->bench = b;
  size_t nn = (size_t)n * n;
  if (!operand(c, 0, nn, 1, err, errlen) || !operand(c, 1, nn, 2, err, errlen) || !operand(c, 2, nn, 0, err, errlen)) {
    case_free(c);
    return NULL;
  }
  return c;
}

static double gemm_run(slK_Case *c) {
  int n = c->n;
  if (strcmp(c->bench->name, "gemm_dispatch") == 0)
    slK_sgemm(SLK_N, SLK_N, n, n, n, 1.0f, c->x[0], n, c->x[1], n, 0.0f, c->x[2], n);
  else if (strcmp(c->bench->name, "gemm_openblas") == 0)
    slK_sgemm_with(SLK_GEMM_OPENBLAS, SLK_N, SLK_N, n, n, n, 1.0f, c->x[0], n, c->x[1], n, 0.0f, c->x[2], n);
  else gemm_once(c->bench, n, c->x[0], c->x[1], c->x[2]);
  return -1;
}

static double gemm_flops(int n, const slK_Attn *a) { return 2.0 * n * n * (double)n; }
static double gemm_bytes(int n, const slK_Attn *a) { return 3.0 * 4.0 * n * (double)n; }

/* attention: batch x heads x L x dim from the shape */
static int is_train(const slK_Bench *b) { return strstr(b->name, "_train") != NULL; }
static slK_AttnImpl attn_impl(const slK_Bench *b) { return strstr(b->name, "naive") ? SLK_ATTN_NAIVE : SLK_ATTN_FUSED; }

static slK_Attn attn_shape(int L, const slK_Attn *s) {
  slK_Attn a;
  slK_attention_contiguous(&a, s ? s->batch : 1, s ? s->heads : 8, L, L, s ? s->dim : 64, s ? s->causal : 0);
  if (s) a.format = s->format;
  return a;
}

static slK_Case *attn_setup_for(const slK_Bench *b, int L, const slK_Attn *shape, char *err, size_t errlen) {
  slK_Attn a = attn_shape(L, shape);
  if (strstr(b->name, "bf16")) a.format = SLK_BF16;
  if (L < 1 || a.batch < 1 || a.heads < 1 || a.dim < 1 || a.dim > 1024) {
    snprintf(err, errlen, "attention needs L >= 1, batch >= 1, heads >= 1 and dim 1..1024");
    return NULL;
  }
  size_t nx = (size_t)a.batch * a.heads * L * a.dim, nl = (size_t)a.batch * a.heads * L;
  int train = is_train(b);
  double need = (train ? 8.0 : 4.0) * nx * 4 + nl * 4 + slK_attention_workspace(attn_impl(b), &a, train);
  char what[128];
  snprintf(what, sizeof what, "%s attention at L = %d (%s)", slK_attention_name(attn_impl(b)), L,
           train ? "forward and backward" : "forward");
  if (refuse((size_t)need, what, err, errlen)) return NULL;
  slK_Case *c = case_new(L, &a);
  c->bench = b;
  int ok = operand(c, 0, nx, 11, err, errlen) && operand(c, 1, nx, 12, err, errlen) &&
           operand(c, 2, nx, 13, err, errlen) && operand(c, 3, nx, 0, err, errlen) && operand(c, 4, nl, 0, err, errlen);
  if (ok && train)
    ok = operand(c, 5, nx, 14, err, errlen) && operand(c, 6, nx, 0, err, errlen) && operand(c, 7, nx, 0, err, errlen) &&
         operand(c, 8, nx, 0, err, errlen);
  if (!ok) {
    case_free(c);
    return NULL;
  }
  return c;
}

static double attn_run(slK_Case *c) {
  slK_Attn *a = &c->a;
  float **x = c->x;
  slK_AttnImpl impl = attn_impl(c->bench);
  if (!is_train(c->bench)) {
    slK_attention_forward(impl, a, x[0], x[1], x[2], x[3], x[4]);
    return -1;
  }
  if (impl == SLK_ATTN_NAIVE) {
    slK_attention_naive_step(a, x[0], x[1], x[2], x[3], x[4], x[5], x[6], x[7], x[8]);
  } else {
    slK_attention_forward(impl, a, x[0], x[1], x[2], x[3], x[4]);
    slK_attention_backward(impl, a, x[0], x[1], x[2], x[3], x[5], x[4], x[6], x[7], x[8]);
  }
  return -1;
}

static double causal_part(const slK_Attn *a) { return a->causal ? (a->nk + 1.0) / (2.0 * a->nk) : 1.0; }

/* FLOPs of the products: forward 4 B H L^2 d; the backward counted as 2.5 forwards (FlashAttention-2's
** convention, recomputation included), the same for every version so that ratios are ratios of time */
static double attn_flops_of(const slK_Bench *b, int L, const slK_Attn *s) {
  slK_Attn a = attn_shape(L, s);
  double f = 4.0 * a.batch * a.heads * (double)L * L * a.dim * causal_part(&a);
  return is_train(b) ? 3.5 * f : f;
}

/* Q, K, V, O (and dO, dQ, dK, dV) once; the naive version also writes and reads its N x N arrays:
** S written, scaled (read, write), softmax (read S, write P), PV (read P): 6 passes; backward 6 more */
static double attn_bytes_of(const slK_Bench *b, int L, const slK_Attn *s) {
  slK_Attn a = attn_shape(L, s);
  double x = (double)a.batch * a.heads * L * a.dim * 4, nn = (double)a.batch * a.heads * L * L * 4;
  double bytes = (is_train(b) ? 8 : 4) * x;
  if (attn_impl(b) == SLK_ATTN_NAIVE) bytes += (is_train(b) ? 12 : 6) * nn;
  return bytes;
}

/* MXINT8: n elements in groups of 32 */
static slK_Case *mx_setup_for(const slK_Bench *b, int n, char *err, size_t errlen) {
  if (n < 32) {
    snprintf(err, errlen, "MXINT8 sizes count elements: at least 32, got %d", n);
    return NULL;
  }
  if (refuse((size_t)n * 9, "this buffer", err, errlen)) return NULL;
  slK_Case *c = case_new(n, NULL);
  c->bench = b;
  c->m = slK_alloc((size_t)n);
  c->s = slK_alloc((size_t)n / 32 + 1);
  c->h = slK_alloc((size_t)n * 2);
  if (!c->m || !c->s || !c->h || !operand(c, 0, (size_t)n, 0, err, errlen) ||
      !operand(c, 1, (size_t)n, 3, err, errlen)) {
    snprintf(err, errlen, "could not allocate the MXINT8 buffers of %d elements", n);
    case_free(c);
    return NULL;
  }
  for (int i = 0; i < n; i++) c->m[i] = (int8_t)(i * 37 % 255 - 127);
  for (int i = 0; i < n / 32 + 1; i++) c->s[i] = (uint8_t)(100 + i % 50);
  memset(c->h, 0, (size_t)n * 2); /* a decoder that wrote nothing is seen by its check, not read uninitialised */
  return c;
}

/* the bandwidth anchor: memcpy, cut into one part per thread as the decoders are */
typedef struct {
  float *dst;
  const float *src;
  size_t n;
  int parts;
} Copy;

static void copy_part(void *ctx, int part, int worker) {
  Copy *C = ctx;
  size_t units = (C->n + 15) / 16, lo = units * part / C->parts * 16, hi = units * (part + 1) / C->parts * 16;
  if (hi > C->n) hi = C->n;
  if (lo < hi) memcpy(C->dst + lo, C->src + lo, (hi - lo) * sizeof(float));
  (void)worker;
}

static void copy(float *dst, const float *src, size_t n) {
  Copy C = {dst, src, n, n >= (1u << 20) ? slK_threads() : 1};
  slK_parallel(C.parts, C.parts, copy_part, &C);
}

static double mx_run(slK_Case *c) {
  const char *name = c->bench->name;
  size_t n = (size_t)c->n;
  if (strcmp(name, "memcpy") == 0) copy(c->x[0], c->x[1], n);
  else if (strcmp(name, "mxint8_dequant_bf16") == 0) slK_mxint8_dequant_bf16(c->m, c->s, n, 32, c->h);
  else if (strcmp(name, "mxint8_dequant_ref") == 0) slK_mxint8_dequant_f32_ref(c->m, c->s, n, 32, c->x[0]);
  else slK_mxint8_dequant_f32(c->m, c->s, n, 32, c->x[0]);
  return -1;
}

static double mx_flops(int n, const slK_Attn *a) { return n; }
static double mx_bytes_of(const slK_Bench *b, int n) {
  if (strcmp(b->name, "memcpy") == 0) return 8.0 * n;
  return n * (1.0 + 1.0 / 32) + (strstr(b->name, "bf16") ? 2.0 : 4.0) * n;
}

/* MXINT8 linear: x [128 x n], W [n x n] */
#define LINEAR_ROWS 128
static slK_Case *mxl_setup_for(const slK_Bench *b, int n, char *err, size_t errlen) {
  if (n < 32 || n % 32) {
    snprintf(err, errlen, "the MXINT8 linear needs n a multiple of 32, got %d", n);
    return NULL;
  }
  if (refuse((size_t)n * n * 5, "this layer", err, errlen)) return NULL;
  slK_Case *c = case_new(n, NULL);
  c->bench = b;
  size_t nn = (size_t)n * n;
  c->m = slK_alloc(nn);
  c->s = slK_alloc(nn / 32);
  if (!c->m || !c->s || !operand(c, 0, (size_t)LINEAR_ROWS * n, 5, err, errlen) ||
      !operand(c, 1, (size_t)LINEAR_ROWS * n, 0, err, errlen)) {
    snprintf(err, errlen, "could not allocate the MXINT8 layer of %d x %d", n, n);
    case_free(c);
    return NULL;
  }
  for (size_t i = 0; i < nn; i++) c->m[i] = (int8_t)(i * 37 % 255 - 127);
  for (size_t i = 0; i < nn / 32; i++) c->s[i] = (uint8_t)(120 + i % 8);
  return c;
}

static double mxl_run(slK_Case *c) {
  int n = c->n;
  slK_mxint8_linear(strstr(c->bench->name, "unfused") == NULL, LINEAR_ROWS, n, n, c->x[0], c->m, c->s, 32, NULL,
                    c->x[1]);
  return -1;
}

static double mxl_flops(int n, const slK_Attn *a) { return 2.0 * LINEAR_ROWS * n * (double)n; }
static double mxl_bytes(int n, const slK_Attn *a) { return (double)n * n * (1 + 1.0 / 32) + 2.0 * 4 * LINEAR_ROWS * n; }

/* GPU cases: cuda/ sets them up (the version `kind` of cuda/gpu.h) and times them with events */
static slK_Case *gpu_setup_for(const slK_Bench *b, int kind, int n, const slK_Attn *s, char *err, size_t errlen) {
  if (!slK_dev_available()) {
    snprintf(err, errlen, "needs a GPU; %s", slK_dev_why());
    return NULL;
  }
  slK_Attn a = attn_shape(n, s);
  slK_Case *c = case_new(n, &a);
  c->bench = b;
  c->gpu = slK_gpu()->case_new(kind, n, a.batch, a.heads, a.dim, a.causal, err, errlen);
  if (!c->gpu) {
    free(c);
    return NULL;
  }
  return c;
}

static double gpu_run(slK_Case *c) { return slK_gpu()->case_run(c->gpu); }

/* ------------------------------------------------------------- the checks
**
** Before a case is timed it runs once at a small size (CHECK_SIZE; 1000 for
** the elementwise ones, so that a vector loop's tail is run too) and its
** outputs are compared with its reference's, computed on the CPU from the
** same operands: downloaded from the device for a GPU case, so that one
** comparison (compare) serves both. A reference is another code for the same
** result: OpenBLAS for the products, the naive attention for the fused ones,
** the one-element MXINT8 decode for the vectorised ones, the source for a
** copy; a row that is itself a reference is compared with the code it
** anchors (the naive GEMM with OpenBLAS, OpenBLAS with the naive loop, the
** naive attention with the fused one). */

#define CHECK_SIZE 64

/* |got - want| <= atol + rtol |want| + of_max max|want|, one per kind of kernel; exact when all are 0 */
typedef struct {
  double rtol, atol, of_max;
} Tol;
/* copies and decodes have one right answer, bit for bit (test_kernels: the MXINT8 decoders) */
static const Tol TOL_EXACT = {0, 0, 0};
/* products of K = 64 terms below 2 in magnitude, summed in another order: each rounding is about 6e-8 of a
** partial sum; 1e-4 is test_kernels' bound for the MXINT8 linear (test_gpu_ops' 1e-5 sqrt(K) for cuBLAS
** against OpenBLAS is inside it) */
static const Tol TOL_PRODUCT = {1e-4, 1e-4, 0};
/* float32 attention against the other version: test_kernels' bounds, O and L 1e-4 (exponentials and sums in
** another order), dQ, dK, dV 1e-3 (sums of P-weighted products over the whole sequence) */
static const Tol TOL_ATTN_FORWARD = {1e-4, 1e-4, 0};
static const Tol TOL_ATTN_BACKWARD = {1e-3, 1e-3, 0};
/* bf16 products against the float32 naive version: Q, K, V, P, dO and dS each rounded by u = 2^-9, so every
** output moves by a few u of its scale; test_kernels holds them to 8 u (max |ref| + 1) (numerics: bf16) */
static const Tol TOL_ATTN_BF16 = {0, 0x1p-6, 0x1p-6};

/* got against want: refuses (-1 with err naming the case, the largest difference and the tolerance) when an
** element is outside the tolerance or NaN where the reference is not */
static int compare(const slK_Case *c, const char *what, const float *got, const float *want, size_t n, const Tol *t,
                   char *err, size_t errlen) {
  int exact = t->rtol == 0 && t->atol == 0 && t->of_max == 0;
  double big = 0, excess = -1, worst = 0, worst_tol = 0;
  size_t at = 0;
  for (size_t i = 0; i < n; i++) big = fmax(big, fabs((double)want[i]));
  for (size_t i = 0; i < n; i++) {
    double e = fabs((double)got[i] - want[i]), tol = t->atol + t->rtol * fabs((double)want[i]) + t->of_max * big;
    if (e != e) e = INFINITY; /* NaN: as far off as can be */
    int differs = exact ? memcmp(&got[i], &want[i], sizeof(float)) != 0 : !(e <= tol);
    if (differs && e - tol > excess) excess = e - tol, worst = e, worst_tol = tol, at = i;
  }
  if (excess < 0) return 0;
  snprintf(err, errlen,
           "%s differs from its reference by %g at element %zu (%.9g, the reference %.9g), more than the tolerance "
           "%g, in its check at size %d: not timed",
           what, worst, at, got[at], want[at], worst_tol, c->n);
  return -1;
}

/* array i of a case (0-9 its floats, 11 the MXINT8 mantissas, 12 the scales, 13 the bf16 output): its own
** on the CPU; on the GPU cuda/'s array i (cuda/gpu.h's case_buffer) downloaded, kept until the case is freed */
static void *on_host(slK_Case *c, int i, size_t bytes, char *err, size_t errlen) {
  if (!c->gpu) return i < 10 ? (void *)c->x[i] : i == 11 ? (void *)c->m : i == 12 ? (void *)c->s : (void *)c->h;
  const slG_Backend *G = slK_gpu();
  void *dev = G->case_buffer(c->gpu, i);
  free(c->copy[i]);
  c->copy[i] = malloc(bytes);
  char why[256] = "";
  if (!dev || !c->copy[i] || G->download(c->copy[i], dev, bytes, why, sizeof why) != 0) {
    snprintf(err, errlen, "its array %d could not be read back from the device for its check%s%s", i,
             why[0] ? ": " : "", why);
    return NULL;
  }
  return c->copy[i];
}

static int is_half_reference(const slK_Bench *b) {
  return strcmp(b->name, "gemm_openblas") == 0 || strcmp(b->name, "gemm_dispatch") == 0 ||
         strcmp(b->name, "gemm_bf16_emulated") == 0;
}

/* n x n products, C = A B (16-bit inputs: on the operands rounded); against OpenBLAS, or the naive loop for
** the rows that are OpenBLAS; the GPU's bf16 linear layer is y = x W^T + bias */
static int gemm_compare(slK_Case *c, char *err, size_t errlen) {
  int n = c->n, linear = strstr(c->bench->name, "linear") != NULL, f = half_format(c->bench);
  size_t nn = (size_t)n * n;
  float *A = on_host(c, 0, nn * 4, err, errlen), *B = A ? on_host(c, 1, nn * 4, err, errlen) : NULL;
  float *C = B ? on_host(c, 2, nn * 4, err, errlen) : NULL,
        *bias = C && linear ? on_host(c, 3, (size_t)n * 4, err, errlen) : C;
  if (!bias) return -1;
  float *ref = malloc(nn * 3 * sizeof *ref), *Ar = ref + nn, *Br = Ar + nn;
  slK_round_array(f, A, Ar, nn); /* a copy for float32 */
  slK_round_array(f, B, Br, nn);
  slK_sgemm_with(is_half_reference(c->bench) ? SLK_GEMM_NAIVE : SLK_GEMM_OPENBLAS, SLK_N, linear ? SLK_T : SLK_N, n, n,
                 n, 1.0f, Ar, n, Br, n, 0.0f, ref, n);
  if (linear)
    for (size_t i = 0; i < nn; i++) ref[i] += bias[i % (size_t)n];
  int rc = compare(c, linear ? "y" : "C", C, ref, nn, &TOL_PRODUCT, err, errlen);
  free(ref);
  return rc;
}

/* O (and L on the CPU), and dQ, dK, dV for the training cases; against the naive version in float32, or the
** fused one for the CPU's naive rows */
static int attn_compare(slK_Case *c, char *err, size_t errlen) {
  const slK_Bench *b = c->bench;
  slK_Attn r;
  slK_attention_contiguous(&r, c->a.batch, c->a.heads, c->n, c->n, c->a.dim, c->a.causal);
  size_t nx = (size_t)r.batch * r.heads * r.nq * r.dim, nl = (size_t)r.batch * r.heads * r.nq;
  /* bf16 products: the CPU's by its shape's format, the GPU's by their name (they take no format) */
  int train = is_train(b), bf16 = c->gpu ? strstr(b->name, "bf16") != NULL : c->a.format == SLK_BF16;
  int outs = train ? 5 : 2;
  slK_AttnImpl impl = !c->gpu && attn_impl(b) == SLK_ATTN_NAIVE ? SLK_ATTN_FUSED : SLK_ATTN_NAIVE;
  float *in[4], *got[5];
  int ok = 1;
  for (int i = 0; i < (train ? 4 : 3) && ok; i++) ok = (in[i] = on_host(c, i < 3 ? i : 5, nx * 4, err, errlen)) != NULL;
  for (int i = 0; i < outs && ok; i++) /* O, L, then dQ, dK, dV: arrays 3, 4, then 6, 7, 8 */
    ok = (got[i] = on_host(c, i < 2 ? 3 + i : 4 + i, i == 1 ? nl * 4 : nx * 4, err, errlen)) != NULL;
  if (!ok) return -1;
  float *ref = calloc(4 * nx + nl, sizeof *ref), *want[5] = {ref, ref + 4 * nx, ref + nx, ref + 2 * nx, ref + 3 * nx};
  int rc = slK_attention_forward(impl, &r, in[0], in[1], in[2], want[0], want[1]);
  if (rc == 0 && train)
    rc = slK_attention_backward(impl, &r, in[0], in[1], in[2], want[0], in[3], want[1], want[2], want[3], want[4]);
  if (rc != 0) snprintf(err, errlen, "could not allocate its reference's workspace");
  const char *names[5] = {"O", "L", "dQ", "dK", "dV"};
  for (int i = 0; i < outs && rc == 0; i++) {
    if (i == 1 && c->gpu) continue; /* L: the GPU's own convention inside its kernels */
    const Tol *t = bf16 ? &TOL_ATTN_BF16 : i < 2 ? &TOL_ATTN_FORWARD : &TOL_ATTN_BACKWARD;
    rc = compare(c, names[i], got[i], want[i], i == 1 ? nl : nx, t, err, errlen);
  }
  free(ref);
  return rc;
}

/* the decoders against the one-element decode (the vectorised one for the one-element row), the copies
** against their source, the MXINT8 linear against the whole decode and OpenBLAS */
static int mx_compare(slK_Case *c, char *err, size_t errlen) {
  const char *name = c->bench->name;
  size_t n = (size_t)c->n;
  if (strcmp(c->bench->group, "memory") == 0) { /* memcpy: x1 into x0; the GPU's copy: x0 into x1 */
    float *dst = on_host(c, c->gpu ? 1 : 0, n * 4, err, errlen), *src = on_host(c, c->gpu ? 0 : 1, n * 4, err, errlen);
    return dst && src ? compare(c, "the copy", dst, src, n, &TOL_EXACT, err, errlen) : -1;
  }
  int8_t *m = on_host(c, 11, n, err, errlen);
  uint8_t *s = m ? on_host(c, 12, n / 32 + 1, err, errlen) : NULL;
  if (!s) return -1;
  float *ref = malloc(n * 2 * sizeof *ref), *got = ref + n;
  int rc = -1;
  if (strstr(name, "bf16") || c->gpu) {
    uint16_t *h = on_host(c, 13, n * 2, err, errlen);
    for (size_t i = 0; h && i < n; i++)
      got[i] = slK_bf16_to_f32(h[i]), ref[i] = slK_bf16_to_f32(slK_mxint8_bf16_one(m[i], s[i / 32]));
    if (h) rc = compare(c, "the decode", got, ref, n, &TOL_EXACT, err, errlen);
  } else {
    if (strcmp(name, "mxint8_dequant_ref") == 0) slK_mxint8_dequant_f32(m, s, n, 32, ref);
    else slK_mxint8_dequant_f32_ref(m, s, n, 32, ref);
    rc = compare(c, "the decode", c->x[0], ref, n, &TOL_EXACT, err, errlen);
  }
  free(ref);
  return rc;
}

static int mxl_compare(slK_Case *c, char *err, size_t errlen) {
  int n = c->n;
  float *w = malloc(sizeof *w * ((size_t)n * n + (size_t)LINEAR_ROWS * n)), *ref = w + (size_t)n * n;
  slK_mxint8_dequant_f32_ref(c->m, c->s, (size_t)n * n, 32, w);
  slK_sgemm_with(SLK_GEMM_OPENBLAS, SLK_N, SLK_T, LINEAR_ROWS, n, n, 1.0f, c->x[0], n, w, n, 0.0f, ref, n);
  int rc = compare(c, "y", c->x[1], ref, (size_t)LINEAR_ROWS * n, &TOL_PRODUCT, err, errlen);
  free(w);
  return rc;
}

/* the case set up at size n, run once, its outputs compared, torn down */
static int check_at(const slK_Bench *b, int n, const slK_Attn *shape, int (*outputs)(slK_Case *, char *, size_t),
                    char *err, size_t errlen) {
  slK_Case *c = b->setup(n, shape, err, errlen);
  if (!c) return -1;
  double t = b->run(c);
  int rc = t != t ? -1 : outputs(c, err, errlen); /* NaN: a GPU launch failed */
  if (t != t) snprintf(err, errlen, "its check at size %d failed on the GPU: %s", n, slK_gpu()->case_error());
  b->teardown(c);
  return rc;
}

/* the check slots of the table's rows */
static int check_gemm(const slK_Bench *b, const slK_Attn *s, char *err, size_t errlen) {
  return check_at(b, CHECK_SIZE, s, gemm_compare, err, errlen);
}
static int check_attn(const slK_Bench *b, const slK_Attn *s, char *err, size_t errlen) {
  return check_at(b, CHECK_SIZE, s, attn_compare, err, errlen);
}
static int check_elementwise(const slK_Bench *b, const slK_Attn *s, char *err, size_t errlen) {
  return check_at(b, 1000, s, mx_compare, err, errlen);
}
static int check_mxl(const slK_Bench *b, const slK_Attn *s, char *err, size_t errlen) {
  return check_at(b, CHECK_SIZE, s, mxl_compare, err, errlen);
}

/* ------------------------------------------------------------- the table */

/* the cases, in the order `kernels` lists them */
enum {
  GEMM_NAIVE,
  GEMM_BLOCKED,
  GEMM_OPENBLAS,
  GEMM_DISPATCH,
  ATTN_NAIVE,
  ATTN_FUSED,
  ATTN_NAIVE_TRAIN,
  ATTN_FUSED_TRAIN,
  MEMCPY,
  MX_F32,
  MX_BF16,
  MX_REF,
  MXL_FUSED,
  MXL_UNFUSED,
  GEMM_BF16,
  GEMM_FP16,
  GEMM_BF16_EMULATED,
  ATTN_FUSED_BF16,
  ATTN_FUSED_BF16_TRAIN,
  /* on the GPU */
  GEMM_CUDA_NAIVE,
  GEMM_CUDA_TILED,
  GEMM_CUBLAS,
  GEMM_CUBLAS_DIRECT,
  ATTN_CUDA_NAIVE,
  ATTN_CUDA_FUSED,
  ATTN_CUDA_FUSED_TRAIN,
  MX_CUDA,
  COPY_CUDA,
  ATTN_CUDA_NAIVE_TRAIN,
  ATTN_CUDA_FUSED_V1,
  ATTN_CUDA_FUSED_V1_TRAIN,
  GEMM_CUDA_TILED_V1,
  ATTN_CUDA_FUSED_BF16,
  ATTN_CUDA_FUSED_BF16_TRAIN,
  GEMM_CUBLAS_BF16,
  LINEAR_CUDA_BF16,
  ATTN_CUDA_FA2_BF16,
  ATTN_CUDA_FA2_BF16_TRAIN,
  NBENCHES
};

#define SETUP(name, body) \
  static slK_Case *name(int n, const slK_Attn *a, char *err, size_t errlen) { body }

static const slK_Bench benches[];
SETUP(setup_gemm_naive, return gemm_setup_for(&benches[GEMM_NAIVE], n, err, errlen);)
SETUP(setup_gemm_blocked, return gemm_setup_for(&benches[GEMM_BLOCKED], n, err, errlen);)
SETUP(setup_gemm_openblas, return gemm_setup_for(&benches[GEMM_OPENBLAS], n, err, errlen);)
SETUP(setup_gemm_dispatch, return gemm_setup_for(&benches[GEMM_DISPATCH], n, err, errlen);)
SETUP(setup_attn_naive, return attn_setup_for(&benches[ATTN_NAIVE], n, a, err, errlen);)
SETUP(setup_attn_fused, return attn_setup_for(&benches[ATTN_FUSED], n, a, err, errlen);)
SETUP(setup_attn_naive_train, return attn_setup_for(&benches[ATTN_NAIVE_TRAIN], n, a, err, errlen);)
SETUP(setup_attn_fused_train, return attn_setup_for(&benches[ATTN_FUSED_TRAIN], n, a, err, errlen);)
SETUP(setup_memcpy, return mx_setup_for(&benches[MEMCPY], n, err, errlen);)
SETUP(setup_mx_f32, return mx_setup_for(&benches[MX_F32], n, err, errlen);)
SETUP(setup_mx_bf16, return mx_setup_for(&benches[MX_BF16], n, err, errlen);)
SETUP(setup_mx_ref, return mx_setup_for(&benches[MX_REF], n, err, errlen);)
SETUP(setup_mxl_fused, return mxl_setup_for(&benches[MXL_FUSED], n, err, errlen);)
SETUP(setup_mxl_unfused, return mxl_setup_for(&benches[MXL_UNFUSED], n, err, errlen);)
SETUP(setup_gemm_bf16, return gemm_setup_for(&benches[GEMM_BF16], n, err, errlen);)
SETUP(setup_gemm_fp16, return gemm_setup_for(&benches[GEMM_FP16], n, err, errlen);)
SETUP(setup_gemm_bf16_emulated, return gemm_setup_for(&benches[GEMM_BF16_EMULATED], n, err, errlen);)
SETUP(setup_attn_fused_bf16, return attn_setup_for(&benches[ATTN_FUSED_BF16], n, a, err, errlen);)
SETUP(setup_attn_fused_bf16_train, return attn_setup_for(&benches[ATTN_FUSED_BF16_TRAIN], n, a, err, errlen);)
/* a GPU case's row and the kernel version it runs */
#define GPU_SETUP(name, row, kind) SETUP(name, return gpu_setup_for(&benches[row], kind, n, a, err, errlen);)
GPU_SETUP(setup_gemm_cuda_naive, GEMM_CUDA_NAIVE, SLG_GEMM_NAIVE)
GPU_SETUP(setup_gemm_cuda_tiled, GEMM_CUDA_TILED, SLG_GEMM_TILED)
GPU_SETUP(setup_gemm_cublas, GEMM_CUBLAS, SLG_GEMM_CUBLAS)
GPU_SETUP(setup_gemm_cublas_direct, GEMM_CUBLAS_DIRECT, SLG_GEMM_CUBLAS_DIRECT)
GPU_SETUP(setup_attn_cuda_naive, ATTN_CUDA_NAIVE, SLG_ATTN_NAIVE)
GPU_SETUP(setup_attn_cuda_fused, ATTN_CUDA_FUSED, SLG_ATTN_FUSED)
GPU_SETUP(setup_attn_cuda_fused_train, ATTN_CUDA_FUSED_TRAIN, SLG_ATTN_FUSED_TRAIN)
GPU_SETUP(setup_mx_cuda, MX_CUDA, SLG_MXINT8_DEQUANT)
GPU_SETUP(setup_copy_cuda, COPY_CUDA, SLG_COPY)
GPU_SETUP(setup_attn_cuda_naive_train, ATTN_CUDA_NAIVE_TRAIN, SLG_ATTN_NAIVE_TRAIN)
GPU_SETUP(setup_attn_cuda_fused_v1, ATTN_CUDA_FUSED_V1, SLG_ATTN_FUSED_V1)
GPU_SETUP(setup_attn_cuda_fused_v1_train, ATTN_CUDA_FUSED_V1_TRAIN, SLG_ATTN_FUSED_V1_TRAIN)
GPU_SETUP(setup_gemm_cuda_tiled_v1, GEMM_CUDA_TILED_V1, SLG_GEMM_TILED_V1)
GPU_SETUP(setup_attn_cuda_fused_bf16, ATTN_CUDA_FUSED_BF16, SLG_ATTN_FUSED_BF16)
GPU_SETUP(setup_attn_cuda_fused_bf16_train, ATTN_CUDA_FUSED_BF16_TRAIN, SLG_ATTN_FUSED_BF16_TRAIN)
GPU_SETUP(setup_gemm_cublas_bf16, GEMM_CUBLAS_BF16, SLG_GEMM_CUBLAS_BF16)
GPU_SETUP(setup_linear_cuda_bf16, LINEAR_CUDA_BF16, SLG_LINEAR_BF16)
GPU_SETUP(setup_attn_cuda_fa2_bf16, ATTN_CUDA_FA2_BF16, SLG_ATTN_FA2_BF16)
GPU_SETUP(setup_attn_cuda_fa2_bf16_train, ATTN_CUDA_FA2_BF16_TRAIN, SLG_ATTN_FA2_BF16_TRAIN)

static double attn_flops(int n, const slK_Attn *a) { return attn_flops_of(&benches[ATTN_FUSED], n, a); }
static double attn_flops_train(int n, const slK_Attn *a) { return attn_flops_of(&benches[ATTN_FUSED_TRAIN], n, a); }
static double attn_bytes_naive(int n, const slK_Attn *a) { return attn_bytes_of(&benches[ATTN_NAIVE], n, a); }
static double attn_bytes_fused(int n, const slK_Attn *a) { return attn_bytes_of(&benches[ATTN_FUSED], n, a); }
static double attn_bytes_naive_train(int n, const slK_Attn *a) {
  return attn_bytes_of(&benches[ATTN_NAIVE_TRAIN], n, a);
}
static double attn_bytes_fused_train(int n, const slK_Attn *a) {
  return attn_bytes_of(&benches[ATTN_FUSED_TRAIN], n, a);
}
static double memcpy_bytes(int n, const slK_Attn *a) { return mx_bytes_of(&benches[MEMCPY], n); }
static double mx_f32_bytes(int n, const slK_Attn *a) { return mx_bytes_of(&benches[MX_F32], n); }
static double mx_bf16_bytes(int n, const slK_Attn *a) { return mx_bytes_of(&benches[MX_BF16], n); }
/* bf16 Q, K, V read once, float32 O written; the backward also reads bf16 dO and float32 O and dO, and writes
** float32 dQ, dK, dV */
static double attn_bytes_bf16(int n, const slK_Attn *a) { return attn_bytes_fused(n, a) * (3 * 2 + 4) / 16.0; }
static double attn_bytes_bf16_train(int n, const slK_Attn *a) {
  return attn_bytes_fused(n, a) * (3 * 2 + 4 + 2 + 4 + 4 + 3 * 4) / 16.0;
}
/* bf16 A and B read once, float32 C written */
static double gemm_bf16_bytes(int n, const slK_Attn *a) { return (2 * 2 + 4) * (double)n * n; }
static double copy_flops(int n, const slK_Attn *a) { return 0; }
static double gcopy_bytes(int n, const slK_Attn *a) { return 2.0 * 4 * n; }

#define GEMM_SIZE "n (n x n times n x n)"
#define ATTN_SIZE "L (sequence length; batch, heads, dim and causal from the arguments)"
#define MX_SIZE "n (elements, groups of 32)"
#define MXL_SIZE "n (x 128 x n, W n x n)"

/* clang-format off */
static const slK_Bench benches[] = {
  [GEMM_NAIVE] = {"gemm_naive", "cpu", "gemm", GEMM_SIZE, "triple loop, the reference", setup_gemm_naive, gemm_run, case_free, gemm_flops, gemm_bytes, check_gemm},
  [GEMM_BLOCKED] = {"gemm_blocked", "cpu", "gemm", GEMM_SIZE, "packed panels, 8x48 micro-kernel (AVX-512 or portable), threads",
   setup_gemm_blocked, gemm_run, case_free, gemm_flops, gemm_bytes, check_gemm},
  [GEMM_OPENBLAS] = {"gemm_openblas", "cpu", "gemm", GEMM_SIZE, "cblas_sgemm called directly", setup_gemm_openblas, gemm_run, case_free, gemm_flops, gemm_bytes, check_gemm},
  [GEMM_DISPATCH] = {"gemm_dispatch", "cpu", "gemm", GEMM_SIZE, "slK_sgemm, the graph's entry point (OpenBLAS behind it)", setup_gemm_dispatch,
   gemm_run, case_free, gemm_flops, gemm_bytes, check_gemm},
  [ATTN_NAIVE] = {"attention_naive", "cpu", "attention", ATTN_SIZE, "forward op by op: QK^T, scale, mask, softmax, PV (N x N arrays)",
   setup_attn_naive, attn_run, case_free, attn_flops, attn_bytes_naive, check_attn},
  [ATTN_FUSED] = {"attention_fused", "cpu", "attention", ATTN_SIZE, "forward FlashAttention-2: tiles, online softmax, only L saved",
   setup_attn_fused, attn_run, case_free, attn_flops, attn_bytes_fused, check_attn},
  [ATTN_NAIVE_TRAIN] = {"attention_naive_train", "cpu", "attention", ATTN_SIZE, "forward and backward op by op, P kept from the forward",
   setup_attn_naive_train, attn_run, case_free, attn_flops_train, attn_bytes_naive_train, check_attn},
  [ATTN_FUSED_TRAIN] = {"attention_fused_train", "cpu", "attention", ATTN_SIZE, "forward and backward FlashAttention-2 (recomputation)",
   setup_attn_fused_train, attn_run, case_free, attn_flops_train, attn_bytes_fused_train, check_attn},
  [MEMCPY] = {"memcpy", "cpu", "memory", MX_SIZE, "memcpy of n float32, one part per thread (the bandwidth anchor)", setup_memcpy, mx_run, case_free, copy_flops, memcpy_bytes, check_elementwise},
  [MX_F32] = {"mxint8_dequant_f32", "cpu", "mxint8", MX_SIZE, "MXINT8 to float32, vectorised", setup_mx_f32, mx_run, case_free, mx_flops, mx_f32_bytes, check_elementwise},
  [MX_BF16] = {"mxint8_dequant_bf16", "cpu", "mxint8", MX_SIZE, "MXINT8 to bfloat16, vectorised (the decode of the ADLS Lab 4 kernel)", setup_mx_bf16, mx_run,
   case_free, mx_flops, mx_bf16_bytes, check_elementwise},
  [MX_REF] = {"mxint8_dequant_ref", "cpu", "mxint8", MX_SIZE, "MXINT8 to float32 one element at a time (ldexpf)", setup_mx_ref, mx_run,
   case_free, mx_flops, mx_f32_bytes, check_elementwise},
  [MXL_FUSED] = {"mxint8_linear_fused", "cpu", "mxint8", MXL_SIZE, "MXINT8 weights decoded panel by panel inside the product",
   setup_mxl_fused, mxl_run, case_free, mxl_flops, mxl_bytes, check_mxl},
  [MXL_UNFUSED] = {"mxint8_linear_unfused", "cpu", "mxint8", MXL_SIZE, "MXINT8 weights decoded whole to float32, then OpenBLAS",
   setup_mxl_unfused, mxl_run, case_free, mxl_flops, mxl_bytes, check_mxl},
  [GEMM_BF16] = {"gemm_bf16", "cpu", "gemm", GEMM_SIZE, "bf16 inputs, float32 sums: rounded while packed, 8x48 vdpbf16ps micro-kernel",
   setup_gemm_bf16, gemm_run, case_free, gemm_flops, gemm_bytes, check_gemm},
  [GEMM_FP16] = {"gemm_fp16", "cpu", "gemm", GEMM_SIZE, "fp16 inputs, float32 sums: rounded while packed, the float32 micro-kernel",
   setup_gemm_fp16, gemm_run, case_free, gemm_flops, gemm_bytes, check_gemm},
  [GEMM_BF16_EMULATED] = {"gemm_bf16_emulated", "cpu", "gemm", GEMM_SIZE, "bf16 inputs rounded into float32 copies, then slK_sgemm (OpenBLAS)",
   setup_gemm_bf16_emulated, gemm_run, case_free, gemm_flops, gemm_bytes, check_gemm},
  [ATTN_FUSED_BF16] = {"attention_fused_bf16", "cpu", "attention", ATTN_SIZE, "forward FlashAttention-2, bf16 products (vdpbf16ps), float32 softmax",
   setup_attn_fused_bf16, attn_run, case_free, attn_flops, attn_bytes_fused, check_attn},
  [ATTN_FUSED_BF16_TRAIN] = {"attention_fused_bf16_train", "cpu", "attention", ATTN_SIZE, "forward and backward FlashAttention-2, bf16 products",
   setup_attn_fused_bf16_train, attn_run, case_free, attn_flops_train, attn_bytes_fused_train, check_attn},
  [GEMM_CUDA_NAIVE] = {"gemm_cuda_naive", "gpu", "gemm", GEMM_SIZE, "one thread per output element", setup_gemm_cuda_naive, gpu_run, case_free, gemm_flops, gemm_bytes, check_gemm},
  [GEMM_CUDA_TILED] = {"gemm_cuda_tiled", "gpu", "gemm", GEMM_SIZE, "shared-memory tiles, 8x8 outputs per thread", setup_gemm_cuda_tiled, gpu_run, case_free, gemm_flops, gemm_bytes, check_gemm},
  [GEMM_CUBLAS] = {"gemm_cublas", "gpu", "gemm", GEMM_SIZE, "cuBLAS through syslab's dispatch", setup_gemm_cublas, gpu_run, case_free, gemm_flops, gemm_bytes, check_gemm},
  [GEMM_CUBLAS_DIRECT] = {"gemm_cublas_direct", "gpu", "gemm", GEMM_SIZE, "cublasSgemm called directly", setup_gemm_cublas_direct, gpu_run, case_free, gemm_flops, gemm_bytes, check_gemm},
  [ATTN_CUDA_NAIVE] = {"attention_cuda_naive", "gpu", "attention", ATTN_SIZE, "cuBLAS products and a softmax kernel", setup_attn_cuda_naive, gpu_run, case_free,
   attn_flops, attn_bytes_naive, check_attn},
  [ATTN_CUDA_FUSED] = {"attention_cuda_fused", "gpu", "attention", ATTN_SIZE, "fused forward kernel, online softmax in shared memory", setup_attn_cuda_fused,
   gpu_run, case_free, attn_flops, attn_bytes_fused, check_attn},
  [ATTN_CUDA_FUSED_TRAIN] = {"attention_cuda_fused_train", "gpu", "attention", ATTN_SIZE, "fused forward and backward kernels", setup_attn_cuda_fused_train, gpu_run,
   case_free, attn_flops_train, attn_bytes_fused_train, check_attn},
  [MX_CUDA] = {"mxint8_cuda_dequant", "gpu", "mxint8", MX_SIZE, "MXINT8 to bfloat16 on the GPU", setup_mx_cuda, gpu_run, case_free, mx_flops,
   mx_bf16_bytes, check_elementwise},
  [COPY_CUDA] = {"copy_cuda", "gpu", "memory", MX_SIZE, "device-to-device cudaMemcpy of n float32", setup_copy_cuda, gpu_run, case_free, copy_flops,
   gcopy_bytes, check_elementwise},
  [ATTN_CUDA_NAIVE_TRAIN] = {"attention_cuda_naive_train", "gpu", "attention", ATTN_SIZE, "naive forward and backward: cuBLAS products, N x N arrays",
   setup_attn_cuda_naive_train, gpu_run, case_free, attn_flops_train, attn_bytes_naive_train, check_attn},
  [ATTN_CUDA_FUSED_V1] = {"attention_cuda_fused_v1", "gpu", "attention", ATTN_SIZE, "the first fused forward: one float per shared-memory read",
   setup_attn_cuda_fused_v1, gpu_run, case_free, attn_flops, attn_bytes_fused, check_attn},
  [ATTN_CUDA_FUSED_V1_TRAIN] = {"attention_cuda_fused_v1_train", "gpu", "attention", ATTN_SIZE, "the first fused forward and backward", setup_attn_cuda_fused_v1_train,
   gpu_run, case_free, attn_flops_train, attn_bytes_fused_train, check_attn},
  [GEMM_CUDA_TILED_V1] = {"gemm_cuda_tiled_v1", "gpu", "gemm", GEMM_SIZE, "the first tiled kernel: 64x64 tiles, 4x4 outputs per thread", setup_gemm_cuda_tiled_v1,
   gpu_run, case_free, gemm_flops, gemm_bytes, check_gemm},
  [ATTN_CUDA_FUSED_BF16] = {"attention_cuda_fused_bf16", "gpu", "attention", ATTN_SIZE,
   "fused forward on the tensor cores: bf16 Q, K, V (WMMA), float32 softmax and O; dim 64 or 128", setup_attn_cuda_fused_bf16, gpu_run,
   case_free, attn_flops, attn_bytes_bf16, check_attn},
  [ATTN_CUDA_FUSED_BF16_TRAIN] = {"attention_cuda_fused_bf16_train", "gpu", "attention", ATTN_SIZE,
   "fused forward and backward on the tensor cores: bf16 Q, K, V, dO; dQ by atomicAdd; dim 64 or 128", setup_attn_cuda_fused_bf16_train,
   gpu_run, case_free, attn_flops_train, attn_bytes_bf16_train, check_attn},
  [GEMM_CUBLAS_BF16] = {"gemm_cublas_bf16", "gpu", "gemm", GEMM_SIZE,
   "cuBLAS on the tensor cores: bf16 operands (rounded once, beforehand), float32 sums and C", setup_gemm_cublas_bf16, gpu_run,
   case_free, gemm_flops, gemm_bf16_bytes, check_gemm},
  [LINEAR_CUDA_BF16] = {"linear_cuda_bf16", "gpu", "gemm", GEMM_SIZE,
   "the linear layer as a bf16 model runs it on the GPU: x and W rounded into bf16 copies in each call, cuBLAS on "
   "the tensor cores, the float32 bias (n rows, n -> n)", setup_linear_cuda_bf16, gpu_run, case_free, gemm_flops, gemm_bytes, check_gemm},
  [ATTN_CUDA_FA2_BF16] = {"attention_cuda_fa2_bf16", "gpu", "attention", ATTN_SIZE,
   "fused forward on the tensor cores, version 2: scores, P and O in registers (mma.sync), K and V by cp.async; dim 64, 80 or 128",
   setup_attn_cuda_fa2_bf16, gpu_run, case_free, attn_flops, attn_bytes_bf16, check_attn},
  [ATTN_CUDA_FA2_BF16_TRAIN] = {"attention_cuda_fa2_bf16_train", "gpu", "attention", ATTN_SIZE,
   "fused forward and backward on the tensor cores, version 2: registers, ldmatrix, cp.async; dQ by atomicAdd; dim 64, 80 or 128",
   setup_attn_cuda_fa2_bf16_train, gpu_run, case_free, attn_flops_train, attn_bytes_bf16_train, check_attn},
  [NBENCHES] = {NULL},
};
/* clang-format on */
/* every case has its row, in the enum's order (a row left out would end the list early: test_kernels checks the
** names) */
_Static_assert(sizeof benches / sizeof benches[0] == NBENCHES + 1, "one row per case");

const slK_Bench *slK_bench_at(size_t i) { return i < sizeof benches / sizeof benches[0] - 1 ? &benches[i] : NULL; }

const slK_Bench *slK_bench_find(const char *name) {
  for (size_t i = 0; benches[i].name; i++)
    if (strcmp(benches[i].name, name) == 0) return &benches[i];
  return NULL;
}

/* the last case that passed its check, and its shape: the sizes of one `bench` call run the check once */
static slK_Bench last_row;
static slK_Attn last_shape;
static int last_valid;

static slK_Attn shape_of(const slK_Attn *s) { return attn_shape(CHECK_SIZE, s); }

static int checked_last(const slK_Bench *b, const slK_Attn *shape) {
  slK_Attn a = shape_of(shape);
  return last_valid && memcmp(&last_row, b, sizeof *b) == 0 && a.batch == last_shape.batch &&
         a.heads == last_shape.heads && a.dim == last_shape.dim && a.causal == last_shape.causal &&
         a.format == last_shape.format;
}

static void remember_checked(const slK_Bench *b, const slK_Attn *shape) {
  last_row = *b, last_shape = shape_of(shape), last_valid = 1;
}

int slK_bench_run(const slK_Bench *b, int size, const slK_Attn *shape, int warmup, int reps, slK_Clock clock,
                  void *clock_ud, slK_Result *out, char *err, size_t errlen) {
  memset(out, 0, sizeof *out);
  if (reps < 1 || reps > 100000 || warmup < 0) {
    snprintf(err, errlen, "reps must be 1..100000 and warmup at least 0");
    return -1;
  }
  if (!clock) clock = slK_now;
  if (b->check && !checked_last(b, shape)) {
    int rc = b->check(b, shape, err, errlen);
    if (sl_interrupted()) { /* a naive loop cut short differs from its reference: that is no mismatch */
      snprintf(err, errlen, "interrupted");
      return SLK_BENCH_INTERRUPTED;
    }
    if (rc != 0) return -1;
    remember_checked(b, shape);
  }
  slK_mem_reset_peak();
  slK_rss_reset_peak();
  size_t base = slK_mem_live();
  refused = 0;
  slK_Case *c = b->setup(size, shape, err, errlen);
  if (!c) return refused ? SLK_BENCH_REFUSED : -1;
  double *t = malloc(sizeof *t * (size_t)reps);
  /* an interrupt is polled between repetitions (and inside the naive loops): the run stops
  ** within one repetition and reports nothing */
  int stopped = 0;
  for (int i = 0; i < warmup && !(stopped = sl_interrupted()); i++) b->run(c);
  int failed = 0;
  for (int i = 0; i < reps && !stopped && !failed; i++) {
    double t0 = clock(clock_ud), own = b->run(c), t1 = clock(clock_ud);
    failed = own != own; /* a GPU launch failed: NaN, never a time */
    t[i] = own >= 0 ? own : t1 - t0;
    stopped = sl_interrupted();
  }
  if (failed) {
    b->teardown(c);
    free(t);
    snprintf(err, errlen, "failed on the GPU: %s", slK_gpu()->case_error());
    return -1;
  }
  if (stopped) {
    b->teardown(c);
    free(t);
    snprintf(err, errlen, "interrupted");
    return SLK_BENCH_INTERRUPTED;
  }
  /* a GPU case's memory is on the device (only this table's GPU entries are known to hold one: a
  ** harness caller's case is opaque) */
  out->peak_bytes = b->run == gpu_run ? slK_gpu()->case_bytes(c->gpu) : slK_mem_peak() - base;
  out->rss_peak = slK_rss_peak();
  b->teardown(c);
  slK_stats(t, reps, &out->t);
  free(t);
  out->flops = b->flops(size, shape);
  out->bytes = b->bytes(size, shape);
  return 0;
}
