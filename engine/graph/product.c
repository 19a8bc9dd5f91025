/*
** product.c - every product of a graph: float32 through the kernels layer
** (OpenBLAS on the thread team), and under a 16-bit precision in the manner
** of autocast: the inputs bfloat16 or float16 values, the sums float32.
**
** Operands come in either storage (model.h): a node's output held in 16
** bits is read as it is, a float32 one is rounded; a result goes to float32
** (a gradient) or is rounded to 16 bits as it is stored (a 16-bit output).
** Two ways to run a 16-bit product. Where the CPU has the instructions
** (kernels/gemm_half.c: vdpbf16ps for bfloat16), the packed GEMM reads
** 16-bit operands as they are and rounds float32 ones while it packs them.
** Elsewhere (or with SYSLAB_PORTABLE=1) the emulated path widens or rounds
** both operands into two scratch buffers, kept between calls and counted as
** temporaries as autocast's casts are, and calls the float32 GEMM (a third
** buffer takes the float32 result of a 16-bit output before it is rounded
** into place); the product of two 16-bit values is exact in float32, so
** that too is exactly "16-bit inputs, float32 accumulation", the order of
** the sums apart.
**
** Weights. A training run with native products keeps a 16-bit working
** copy of each weight its products read: made at the first use, read again
** by the backward, and rewritten from the float32 master by every
** optimizer step (train.c), so no product converts a weight. Its state says whether it holds the value:
** a copy the optimizer wrote serves the next forward pass and its backward;
** any other pass makes it afresh at first use, so a weight changed between
** passes by anything but the optimizer (a test's perturbation, a pruning
** pass, a loaded checkpoint) is never read stale.
*/
#include <stdlib.h>
#include <string.h>

#include "kernels/blas.h"
#include "kernels/gemm_half.h"
#include "kernels/kernels.h"
#include "kernels/parallel.h"
#include "kernels/round.h"
#include "memory.h"
#include "product.h"

enum { STALE, CURRENT, WRITTEN }; /* a working copy: to be remade; holds the value for this pass; the optimizer's */

/* scratch for the float32 operands of one emulated product, and its float32 result, kept between calls */
static float *scratch[3];
static size_t scratch_cap[3];
/* the float32 copies of an operator's 16-bit inputs (slM_product_widened) */
static float *wide[SLM_MAX_INPUTS];
static size_t wide_cap[SLM_MAX_INPUTS];
/* the bfloat16 copies of a node's float32 operands (slM_product_operand), one buffer a slot */
static uint16_t *operand[SLM_OPERAND_SLOTS];
static size_t operand_cap[SLM_OPERAND_SLOTS];

/* *buf grown to n floats (counted as a temporary); NULL without memory */
static float *grown(float **buf, size_t *cap, size_t n) {
  if (n <= *cap) return *buf;
  float *p = malloc(n * sizeof *p);
  if (!p) return NULL;
  slM_mem_external((long long)((n - *cap) * sizeof(float)));
  free(*buf);
  *buf = p;
  *cap = n;
  return p;
}

static void drop(float **buf, size_t *cap) {
  slM_mem_external(-(long long)(*cap * sizeof(float)));
  free(*buf);
  *buf = NULL;
  *cap = 0;
}

void slM_product_release(void) {
  for (int i = 0; i < 3; i++) drop(&scratch[i], &scratch_cap[i]);
  for (int i = 0; i < SLM_MAX_INPUTS; i++) drop(&wide[i], &wide_cap[i]);
  for (int i = 0; i < SLM_OPERAND_SLOTS; i++) {
    slM_mem_external(-(long long)(operand_cap[i] * sizeof(uint16_t)));
    free(operand[i]);
    operand[i] = NULL;
    operand_cap[i] = 0;
  }
}

int slM_product_native(int precision) { return precision != SLM_FP32 && slK_half_native(precision); }

static int force_copies;
int slM_product_copies(int on) {
  int was = force_copies;
  force_copies = on;
  return was;
}

int slM_product_keeps_copies(int precision) {
  return precision != SLM_FP32 && (force_copies || slK_half_native(precision));
}

/* ------------------------------------------------------ conversions on the team */

typedef struct {
  int format;
  const float *x;
  const uint16_t *h;
  uint16_t *out;
  float *f;
} Convert;

static void to_half_range(void *ctx, size_t from, size_t to) {
  const Convert *t = ctx;
  slK_to_half(t->format, t->x + from, t->out + from, to - from);
}

static void to_f32_range(void *ctx, size_t from, size_t to) {
  const Convert *t = ctx;
  slK_half_to_f32(t->format, t->h + from, t->f + from, to - from);
}

float *slM_product_widened(int k, const slM_Tensor *t) {
  float *p = grown(&wide[k], &wide_cap[k], t->size);
  if (!p) return NULL;
  Convert c = {t->dtype, NULL, t->half, NULL, p};
  slK_parallel_for(t->size, 1 << 14, to_f32_range, &c);
  return p;
}

/* ----------------------------------------------------------------- weights */

static const uint16_t *weight_half(slM_Param *w, int format) {
  size_t n = w->value->size;
  if (w->half && w->half_format != format) w->half_state = STALE; /* shared with a graph of the other format */
  if (!w->half) {
    w->half = malloc(n * sizeof *w->half);
    if (!w->half) return NULL; /* the product then rounds B as it packs it */
    slM_mem_external((long long)(n * sizeof *w->half));
    w->half_state = STALE;
  }
  if (w->half_state != CURRENT) {
    Convert t = {format, w->value->data, NULL, w->half, NULL};
    slK_parallel_for(n, 1 << 16, to_half_range, &t);
    w->half_format = format;
    w->half_state = CURRENT;
  }
  return w->half;
}

void slM_product_begin_pass(slM_Graph *g) {
  for (int i = 0; i < g->n; i++)
    for (int k = 0; k < g->nodes[i].nparams; k++) {
      slM_Param *p = g->nodes[i].params[k];
      p->half_state = p->half_state == WRITTEN ? CURRENT : STALE;
    }
}

void slM_product_weights_written(slM_Graph *g) {
  for (int i = 0; i < g->n; i++)
    for (int k = 0; k < g->nodes[i].nparams; k++)
      if (g->nodes[i].params[k]->half && !g->nodes[i].params[k]->frozen) g->nodes[i].params[k]->half_state = WRITTEN;
}

void slM_product_free_weights(slM_Graph *g) {
  for (int i = 0; i < g->n; i++)
    for (int k = 0; k < g->nodes[i].nparams; k++) {
      slM_Param *p = g->nodes[i].params[k];
      if (!p->half) continue;
      slM_mem_external(-(long long)(p->value->size * sizeof *p->half));
      free(p->half);
      p->half = NULL;
      p->half_state = STALE;
    }
}

/* --------------------------------------------------------- per-head operands */

int slM_product_operands(const slM_Graph *g) { return g->precision == SLM_BF16 && slK_half_native(SLK_BF16); }

const uint16_t *slM_product_operand(int slot, const float *x, size_t n) {
  if (n > operand_cap[slot]) {
    uint16_t *p = malloc(n * sizeof *p);
    if (!p) return NULL;
    slM_mem_external((long long)((n - operand_cap[slot]) * sizeof *p));
    free(operand[slot]);
    operand[slot] = p;
    operand_cap[slot] = n;
  }
  Convert t = {SLK_BF16, x, NULL, operand[slot], NULL};
  slK_parallel_for(n, 1 << 14, to_half_range, &t);
  return operand[slot];
}

/* The float32 sums of a product whose result is stored in 16 bits on the
** native path: a tile of the calling thread, kept between calls, the
** kernels' kind of workspace (like attention's), not a tensor. */
static _Thread_local struct {
  float *p;
  size_t cap;
} tile;

static float *thread_tile(size_t n) {
  if (n > tile.cap) {
    slK_free(tile.p);
    tile.p = slK_alloc(n * sizeof(float));
    tile.cap = tile.p ? n : 0;
  }
  return tile.p;
}

/* rows x cols of float32 sums (row stride cols) into 16-bit C (row stride ldc), rounded as stored */
static void store_rows(int format, const float *sums, int rows, int cols, uint16_t *C, int ldc) {
  for (int r = 0; r < rows; r++) slK_to_half(format, sums + (size_t)r * cols, C + (size_t)r * ldc, (size_t)cols);
}

void slM_gemm_rounded(int trans_a, int trans_b, int M, int N, int K, float alpha, const uint16_t *Ah, int lda,
                      const uint16_t *Bh, int ldb, float beta, slM_Dst C, int ldc) {
  if (!C.h) {
    slK_gemm_bf16_rounded(trans_a, trans_b, M, N, K, alpha, Ah, lda, Bh, ldb, beta, C.p, ldc);
    return;
  }
  float *t = thread_tile((size_t)M * N);
  if (!t) return;
  slK_gemm_bf16_rounded(trans_a, trans_b, M, N, K, alpha, Ah, lda, Bh, ldb, 0.0f, t, N);
  store_rows(SLK_BF16, t, M, N, C.h, ldc);
}

/* ------------------------------------------------------------------ products */

/* Where the emulated path's float32 operands and result go: the scratch
** buffers (counted), or for attention's per-head products, which run on
** every thread at once, the calling thread's tiles (the kernels' kind of
** workspace, as the native path's result tile) */
static _Thread_local struct {
  float *p;
  size_t cap;
} tiles[3];

static float *buffer(int local, int which, size_t n) {
  if (!local) return grown(&scratch[which], &scratch_cap[which], n);
  if (which == 2) return thread_tile(n);
  if (n > tiles[which].cap) {
    slK_free(tiles[which].p);
    tiles[which].p = slK_alloc(n * sizeof(float));
    tiles[which].cap = tiles[which].p ? n : 0;
  }
  return tiles[which].p;
}

/* rows x cols of an operand as float32 values: 16-bit bits widened, float32 rounded */
typedef struct {
  int format, cols, ld;
  slM_Mat X;
  float *s;
} Operand;

static void operand_rows(void *ctx, size_t r0, size_t r1) {
  const Operand *o = ctx;
  for (size_t r = r0; r < r1; r++) {
    float *to = o->s + r * (size_t)o->cols;
    if (o->X.h) slK_half_to_f32(o->format, o->X.h + r * (size_t)o->ld, to, (size_t)o->cols);
    else slK_round_values(o->format, o->X.p + r * (size_t)o->ld, to, (size_t)o->cols);
  }
}

static const float *operand_f32(int local, int which, int format, slM_Mat X, int rows, int cols, int ld) {
  float *s = buffer(local, which, (size_t)rows * (size_t)cols);
  if (!s) return NULL;
  Operand o = {format, cols, ld, X, s};
  if (local) operand_rows(&o, 0, (size_t)rows); /* a head's, on the thread that runs it */
  else slK_parallel_for((size_t)rows, 16384 / (size_t)(cols > 0 ? cols : 1) + 1, operand_rows, &o);
  return s;
}

/* the bias added and the rounding, rows of C on the thread team: in place (to != NULL: into 16 bits) */
typedef struct {
  float *c;
  long ldc;
  int cols, format;
  const float *bias;
  uint16_t *to;
  long ldt;
} Finish;

static void finish_rows(void *ctx, size_t r0, size_t r1) {
  const Finish *f = ctx;
  for (size_t r = r0; r < r1; r++) {
    float *restrict c = f->c + (long)r * f->ldc;
    const float *restrict b = f->bias;
    if (b)
      for (int j = 0; j < f->cols; j++) c[j] += b[j];
    if (f->to) slK_to_half(f->format, c, f->to + (long)r * f->ldt, (size_t)f->cols);
    else if (f->format) slK_round_values(f->format, c, c, (size_t)f->cols);
  }
}

static void finish(int local, float *c, long ldc, int rows, int cols, int format, const float *bias, uint16_t *to,
                   long ldt) {
  Finish f = {c, ldc, cols, format, bias, to, ldt};
  if (local) finish_rows(&f, 0, (size_t)rows);
  else slK_parallel_for((size_t)rows, 16384 / (size_t)(cols > 0 ? cols : 1) + 1, finish_rows, &f);
}

static void emulated(const slM_Graph *g, int local, int ta, int tb, int M, int N, int K, float alpha, slM_Mat A,
                     int lda, slM_Mat B, int ldb, float beta, const float *bias, int round, slM_Dst C, int ldc) {
  int f = g->precision, ar = ta ? K : M, ac = ta ? M : K, br = tb ? N : K, bc = tb ? K : N;
  const float *a = operand_f32(local, 0, f, A, ar, ac, lda), *b = operand_f32(local, 1, f, B, br, bc, ldb);
  float *c = C.h ? buffer(local, 2, (size_t)M * N) : C.p;
  if (!a || !b || !c) return;
  slK_sgemm(ta, tb, M, N, K, alpha, a, ac > 0 ? ac : 1, b, bc > 0 ? bc : 1, C.h ? 0.0f : beta, c, C.h ? N : ldc);
  if (C.h || bias || round) finish(local, c, C.h ? N : ldc, M, N, round || C.h ? f : 0, bias, C.h, ldc);
}

static void native(const slM_Graph *g, int ta, int tb, int M, int N, int K, float alpha, slM_Mat A, int lda, slM_Mat B,
                   int ldb, float beta, const float *bias, int round, slM_Dst C, int ldc) {
  int f = g->precision;
  if (!C.h) {
    slK_gemm_half_ex(f, ta, tb, M, N, K, alpha, A.p, A.h, lda, B.p, B.h, ldb, beta, bias, round, C.p, ldc);
    return;
  }
  float *t = thread_tile((size_t)M * N);
  if (!t) return;
  slK_gemm_half_ex(f, ta, tb, M, N, K, alpha, A.p, A.h, lda, B.p, B.h, ldb, 0.0f, bias, 0, t, N);
  store_rows(f, t, M, N, C.h, ldc);
}

static void product(const slM_Graph *g, int local, int ta, int tb, int M, int N, int K, float alpha, slM_Mat A, int lda,
                    slM_Param *w, slM_Mat B, int ldb, float beta, const float *bias, int round, slM_Dst C, int ldc) {
  slK_blas_init();
  if (!g || g->precision == SLM_FP32) { /* float32 storage throughout */
    slK_sgemm(ta, tb, M, N, K, alpha, A.p, lda, B.p, ldb, beta, C.p, ldc);
    if (bias) finish(local, C.p, ldc, M, N, 0, bias, NULL, 0);
    return;
  }
  /* a training pass reads the weight's working copy; an inference pass reads each weight once, so
  ** rounding it as it is packed or copied costs no more than a copy would */
  if (w && g->training && B.p && B.p == w->value->data && slM_product_keeps_copies(g->precision)) {
    const uint16_t *wh = weight_half(w, g->precision);
    if (wh) B = (slM_Mat){NULL, wh};
  }
  if (slK_half_native(g->precision)) native(g, ta, tb, M, N, K, alpha, A, lda, B, ldb, beta, bias, round, C, ldc);
  else emulated(g, local, ta, tb, M, N, K, alpha, A, lda, B, ldb, beta, bias, round, C, ldc);
}

void slM_product(const slM_Graph *g, int ta, int tb, int M, int N, int K, float alpha, slM_Mat A, int lda, slM_Param *w,
                 slM_Mat B, int ldb, float beta, const float *bias, int round, slM_Dst C, int ldc) {
  product(g, 0, ta, tb, M, N, K, alpha, A, lda, w, B, ldb, beta, bias, round, C, ldc);
}

void slM_product_head(const slM_Graph *g, int ta, int tb, int M, int N, int K, float alpha, slM_Mat A, int lda,
                      slM_Mat B, int ldb, float beta, int round, slM_Dst C, int ldc) {
  product(g, 1, ta, tb, M, N, K, alpha, A, lda, NULL, B, ldb, beta, NULL, round, C, ldc);
}

void slM_gemm_w(const slM_Graph *g, int trans_a, int trans_b, int M, int N, int K, float alpha, const float *A, int lda,
                slM_Param *w, const float *B, int ldb, float beta, float *C, int ldc) {
  slM_product(g, trans_a, trans_b, M, N, K, alpha, slM_f32(A), lda, w, slM_f32(B), ldb, beta, NULL, 0,
              (slM_Dst){C, NULL}, ldc);
}
