/* test_kernels.c - every kernel version against its reference: GEMM (naive,
** blocked on AVX-512 and portable loops, OpenBLAS), vector exp, attention
** (fused against naive and against a binary64 formula, the contract of the
** CS336 systems assignment's attention tests, numerics §7.6), MXINT8
** decoding over every mantissa and scale byte, the MXINT8 linear, the
** harness's statistics on a synthetic clock, the kernels commands, and the
** GPU versions where a GPU exists (skipped otherwise). */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "check.h"
#include "compress/quant.h"
#include "kernels/device.h"
#include "kernels/kernels.h"
#include "kernels/round.h"
#include "syslab.h"

static uint64_t rng_state;
static void seed(uint64_t s) { rng_state = s * 0x9E3779B97F4A7C15ull + 7; }
static double uniform(void) {
  rng_state ^= rng_state << 13, rng_state ^= rng_state >> 7, rng_state ^= rng_state << 17;
  return (double)(rng_state >> 11) / 9007199254740992.0;
}
static double normal(void) {
  double u = 1 - uniform(), v = uniform();
  return sqrt(-2 * log(u)) * cos(6.283185307179586 * v);
}
static float *randn(size_t n) {
  float *x = malloc(n * sizeof *x);
  for (size_t i = 0; i < n; i++) x[i] = (float)normal();
  return x;
}
static float *zeros(size_t n) { return calloc(n ? n : 1, sizeof(float)); }

/* |a - b| <= atol + rtol |b| everywhere (torch.testing.assert_close) */
static int close_all(const float *a, const float *b, size_t n, double rtol, double atol, const char *what) {
  for (size_t i = 0; i < n; i++)
    if (!(fabs((double)a[i] - b[i]) <= atol + rtol * fabs((double)b[i]))) {
      check_fail(__FILE__, __LINE__, "%s: element %zu is %.9g, expected %.9g", what, i, a[i], b[i]);
      return 0;
    }
  return 1;
}

/* ------------------------------------------------------------------ GEMM */

static void gemm_case(int ta, int tb, int M, int N, int K, float alpha, float beta) {
  int lda = ta ? M : K, ldb = tb ? K : N;
  float *A = randn((size_t)M * K), *B = randn((size_t)K * N), *C0 = randn((size_t)M * N);
  float *want = malloc(sizeof(float) * M * N), *got = malloc(sizeof(float) * M * N);
  /* the reference in binary64 */
  for (int i = 0; i < M; i++)
    for (int j = 0; j < N; j++) {
      double s = 0;
      for (int k = 0; k < K; k++)
        s += (double)(ta ? A[k * lda + i] : A[i * lda + k]) * (tb ? B[j * ldb + k] : B[k * ldb + j]);
      want[i * N + j] = (float)(alpha * s + (beta == 0 ? 0 : beta * C0[i * N + j]));
    }
  for (int impl = 0; impl < SLK_GEMM_NUM; impl++)
    for (int portable = 0; portable < 2; portable++) {
      slK_force_portable(portable);
      memcpy(got, C0, sizeof(float) * M * N);
      slK_sgemm_with((slK_GemmImpl)impl, ta, tb, M, N, K, alpha, A, lda, B, ldb, beta, got, N);
      char what[128];
      snprintf(what, sizeof what, "gemm %s%s %c%c %dx%dx%d", slK_gemm_name((slK_GemmImpl)impl),
               portable ? " portable" : "", ta ? 'T' : 'N', tb ? 'T' : 'N', M, N, K);
      close_all(got, want, (size_t)M * N, 1e-4, 1e-4 * sqrt((double)K + 1), what);
    }
  slK_force_portable(0);
  /* the graph's entry point: OpenBLAS pieces on the thread team (cut by
  ** rows or columns once M N K passes 4 x 65536, whole below) */
  memcpy(got, C0, sizeof(float) * M * N);
  slK_sgemm(ta, tb, M, N, K, alpha, A, lda, B, ldb, beta, got, N);
  char what[128];
  snprintf(what, sizeof what, "slK_sgemm %c%c %dx%dx%d", ta ? 'T' : 'N', tb ? 'T' : 'N', M, N, K);
  close_all(got, want, (size_t)M * N, 1e-4, 1e-4 * sqrt((double)K + 1), what);
  free(A), free(B), free(C0), free(want), free(got);
}

static void test_gemm_versions(void) {
  seed(1);
  int shapes[][3] = {{1, 1, 1},      {7, 5, 3},       {8, 48, 16},  {33, 97, 65},
                     {130, 70, 200}, {200, 300, 250}, {5, 2000, 7}, {64, 1, 513}};
  for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; s++)
    for (int t = 0; t < 4; t++) gemm_case(t & 1, t >> 1, shapes[s][0], shapes[s][1], shapes[s][2], 1.0f, 0.0f);
  gemm_case(0, 0, 50, 60, 70, 0.5f, 1.0f);
  gemm_case(1, 0, 50, 60, 70, -2.0f, 0.25f);
  gemm_case(1, 1, 150, 170, 90, -2.0f, 0.25f); /* cut into pieces, with alpha and beta */
  gemm_case(0, 1, 9, 9, 0, 1.0f, 0.0f);        /* K = 0 writes beta C */
}

static void test_vexp(void) {
  float x[1000], y[1000];
  for (int i = 0; i < 1000; i++) x[i] = -87.0f + 175.0f * i / 999.0f;
  for (int portable = 0; portable < 2; portable++) {
    slK_force_portable(portable);
    slK_vexp(x, y, 1000);
    double worst = 0;
    for (int i = 0; i < 1000; i++) worst = fmax(worst, fabs(y[i] - exp((double)x[i])) / exp((double)x[i]));
    CHECK_MSG(worst < 3e-7, "%s exp: worst relative error %g", slK_isa(), worst);
    float edge[5] = {-INFINITY, -100.0f, 0.0f, -1e-30f, 1.0f}, out[5];
    slK_vexp(edge, out, 5);
    CHECK(out[0] == 0.0f && out[1] == 0.0f && out[2] == 1.0f && out[3] == 1.0f);
    CHECK_NEAR(out[4], 2.718281828, 1e-6);
  }
  slK_force_portable(0);
}

/* ------------------------------------------------------------- attention */

typedef struct {
  slK_Attn a;
  float *q, *k, *v, *o, *lse, *dout, *dq, *dk, *dv;
  size_t nxq, nxk, nl;
} Attn;

/* heads interleaved in the rows, as the graph stores them: (b, t, h*dim + f) */
static void attn_new(Attn *t, int B, int H, int nq, int nk, int d, int causal, int interleaved) {
  memset(t, 0, sizeof *t);
  slK_attention_contiguous(&t->a, B, H, nq, nk, d, causal);
  if (interleaved) {
    t->a.q_row = t->a.k_row = (long)H * d;
    t->a.q_head = t->a.k_head = d;
    t->a.q_batch = (long)nq * H * d, t->a.k_batch = (long)nk * H * d;
  }
  t->nxq = (size_t)B * H * nq * d, t->nxk = (size_t)B * H * nk * d, t->nl = (size_t)B * H * nq;
  t->q = randn(t->nxq), t->k = randn(t->nxk), t->v = randn(t->nxk), t->dout = randn(t->nxq);
  t->o = zeros(t->nxq), t->lse = zeros(t->nl);
  t->dq = zeros(t->nxq), t->dk = zeros(t->nxk), t->dv = zeros(t->nxk);
}

static void attn_free(Attn *t) {
  float *p[] = {t->q, t->k, t->v, t->o, t->lse, t->dout, t->dq, t->dk, t->dv};
  for (int i = 0; i < 9; i++) free(p[i]);
  free((void *)t->a.key_mask);
}

static long at(const slK_Attn *a, int b, int h, int i, int isq) {
  return isq ? a->q_batch * b + a->q_head * h + a->q_row * i : a->k_batch * b + a->k_head * h + a->k_row * i;
}

/* the formulas of numerics §7.1 and §7.3 in binary64, row by row: O, L, dQ, dK, dV */
static void attn_reference(const Attn *t, float *o, float *lse, float *dq, float *dk, float *dv) {
  const slK_Attn *a = &t->a;
  double sc = 1.0 / sqrt((double)a->dim);
  double *s = malloc(sizeof(double) * (a->nk + 1)), *dp = malloc(sizeof(double) * (a->nk + 1));
  for (int b = 0; b < a->batch; b++)
    for (int h = 0; h < a->heads; h++)
      for (int i = 0; i < a->nq; i++) {
        const float *qi = t->q + at(a, b, h, i, 1), *gi = t->dout + at(a, b, h, i, 1);
        double m = -INFINITY;
        for (int j = 0; j < a->nk; j++) {
          int keep = !(a->causal && j > i) && (!a->key_mask || a->key_mask[(long)b * a->nk + j] != 0);
          double x = 0;
          for (int f = 0; f < a->dim; f++) x += (double)qi[f] * t->k[at(a, b, h, j, 0) + f];
          s[j] = keep ? x * sc : -INFINITY;
          m = fmax(m, s[j]);
        }
        double sum = 0;
        for (int j = 0; j < a->nk; j++) sum += s[j] = m == -INFINITY ? 0 : exp(s[j] - m);
        long oi = at(a, b, h, i, 1);
        double D = 0;
        for (int f = 0; f < a->dim; f++) {
          double acc = 0;
          for (int j = 0; j < a->nk; j++) acc += s[j] / (sum > 0 ? sum : 1) * t->v[at(a, b, h, j, 0) + f];
          o[oi + f] = (float)acc;
          D += acc * gi[f];
        }
        lse[((long)b * a->heads + h) * a->nq + i] = m == -INFINITY ? 0.0f : (float)(m + log(sum));
        for (int j = 0; j < a->nk; j++) {
          double p = sum > 0 ? s[j] / sum : 0, g = 0;
          for (int f = 0; f < a->dim; f++) g += (double)gi[f] * t->v[at(a, b, h, j, 0) + f];
          dp[j] = p * (g - D);
          for (int f = 0; f < a->dim; f++) dv[at(a, b, h, j, 0) + f] += (float)(p * gi[f]);
        }
        for (int j = 0; j < a->nk; j++)
          for (int f = 0; f < a->dim; f++) {
            dq[oi + f] += (float)(sc * dp[j] * t->k[at(a, b, h, j, 0) + f]);
            dk[at(a, b, h, j, 0) + f] += (float)(sc * dp[j] * qi[f]);
          }
      }
  free(s), free(dp);
}

static void attn_check(int B, int H, int nq, int nk, int d, int causal, int interleaved, int masked) {
  Attn t;
  attn_new(&t, B, H, nq, nk, d, causal, interleaved);
  if (masked) {
    float *mask = malloc(sizeof(float) * (size_t)B * nk);
    for (int i = 0; i < B * nk; i++) mask[i] = uniform() < 0.7;
    for (int j = 0; j < nk; j++) mask[j] = 0; /* batch 0: every key masked, every row fully masked */
    t.a.key_mask = mask;
  }
  float *o = zeros(t.nxq), *lse = zeros(t.nl), *dq = zeros(t.nxq), *dk = zeros(t.nxk), *dv = zeros(t.nxk);
  attn_reference(&t, o, lse, dq, dk, dv);
  for (int impl = 0; impl < SLK_ATTN_NUM; impl++)
    for (int portable = 0; portable < 2; portable++) {
      slK_force_portable(portable);
      memset(t.o, 0, t.nxq * 4), memset(t.dq, 0, t.nxq * 4), memset(t.dk, 0, t.nxk * 4), memset(t.dv, 0, t.nxk * 4);
      char what[160];
      snprintf(what, sizeof what, "%s%s B%d H%d nq%d nk%d d%d%s%s%s", slK_attention_name((slK_AttnImpl)impl),
               portable ? " portable" : "", B, H, nq, nk, d, causal ? " causal" : "", interleaved ? " interleaved" : "",
               masked ? " masked" : "");
      CHECK(slK_attention_forward((slK_AttnImpl)impl, &t.a, t.q, t.k, t.v, t.o, t.lse) == 0);
      char w[200];
      snprintf(w, sizeof w, "%s O", what);
      close_all(t.o, o, t.nxq, 1e-4, 1e-4, w);
      snprintf(w, sizeof w, "%s L", what);
      close_all(t.lse, lse, t.nl, 1e-4, 1e-4, w);
      CHECK(slK_attention_backward((slK_AttnImpl)impl, &t.a, t.q, t.k, t.v, t.o, t.dout, t.lse, t.dq, t.dk, t.dv) == 0);
      snprintf(w, sizeof w, "%s dQ", what);
      close_all(t.dq, dq, t.nxq, 1e-3, 1e-3, w);
      snprintf(w, sizeof w, "%s dK", what);
      close_all(t.dk, dk, t.nxk, 1e-3, 1e-3, w);
      snprintf(w, sizeof w, "%s dV", what);
      close_all(t.dv, dv, t.nxk, 1e-3, 1e-3, w);
    }
  slK_force_portable(0);
  free(o), free(lse), free(dq), free(dk), free(dv);
  attn_free(&t);
}

static void test_attention_versions(void) {
  seed(2);
  attn_check(1, 1, 1, 1, 8, 0, 0, 0); /* L = 1 */
  attn_check(1, 1, 1, 1, 8, 1, 0, 0);
  attn_check(2, 3, 37, 37, 16, 0, 0, 0); /* not a multiple of any tile */
  attn_check(2, 3, 37, 37, 16, 1, 0, 0);
  attn_check(1, 2, 100, 61, 24, 0, 1, 0); /* nq != nk, heads interleaved, odd dim */
  attn_check(1, 2, 61, 100, 24, 1, 1, 0);
  attn_check(1, 1, 200, 450, 64, 1, 0, 0); /* several query and key tiles, causal skipping */
  attn_check(1, 1, 450, 200, 64, 0, 0, 0);
  attn_check(2, 2, 50, 50, 32, 0, 1, 1); /* key masks; batch 0 fully masked: O = 0, L = 0 */
  attn_check(3, 1, 9, 7, 5, 1, 0, 1);
}

/* ---------------------------------------------------- attention in bf16
**
** format = SLK_BF16: Q, K, V, P, dO and dS rounded to bfloat16 (relative
** error u = 2^-9 each), float32 sums and softmax. Against the float32
** formulas (binary64, attn_reference) and the float32 naive version's
** outputs every output moves by a few u times
** its scale: a score s = t q.k moves by at most 2u t sum|q k| (~0.1 for
** these randn inputs, d = 64, worst case; ~0.01 typically), P relatively as
** much, and O, L, dQ, dK, dV are sums weighted by P. Checked as
** |got - ref| <= 8 u (max |ref| + 1) per output array (measured: at most
** 2.1 u on these shapes). Against the same formulas on rounded
** Q, K, V, dO (the emulated path of an autocast graph) only the rounding of
** P and dS and float32's sums remain: L within float32's 1e-4, O, dQ, dK,
** dV within 4 u (max |ref| + 1) (measured: 1.8 u). The naive version with bf16 products
** (slK_gemm_half) is held to the same bounds. */
static double worst_scaled(const float *got, const float *want, size_t n) {
  double big = 0, worst = 0;
  for (size_t i = 0; i < n; i++) big = fmax(big, fabs((double)want[i]));
  for (size_t i = 0; i < n; i++) {
    double e = fabs((double)got[i] - want[i]);
    worst = e > worst || e != e ? e : worst;
  }
  return worst / (big + 1);
}

static void round_all(float *x, size_t n) { slK_round_array(SLK_BF16, x, x, n); }

static void attn_check_bf16(int B, int H, int nq, int nk, int d, int causal, int interleaved, int masked) {
  Attn t, r;
  attn_new(&t, B, H, nq, nk, d, causal, interleaved);
  if (masked) {
    float *mask = malloc(sizeof(float) * (size_t)B * nk);
    for (int i = 0; i < B * nk; i++) mask[i] = uniform() < 0.7;
    for (int j = 0; j < nk; j++) mask[j] = 0;
    t.a.key_mask = mask;
  }
  size_t nxq = t.nxq, nxk = t.nxk, nl = t.nl;
  float *ref[5], *emu[5];
  for (int i = 0; i < 5; i++)
    ref[i] = zeros(i == 0 || i == 2 ? nxq
                   : i == 1         ? nl
                                    : nxk),
    emu[i] = zeros(i == 0 || i == 2 ? nxq
                   : i == 1         ? nl
                                    : nxk);
  attn_reference(&t, ref[0], ref[1], ref[2], ref[3], ref[4]);
  r = t; /* the emulated reference: the same formulas on rounded inputs */
  r.q = malloc(nxq * 4), r.k = malloc(nxk * 4), r.v = malloc(nxk * 4), r.dout = malloc(nxq * 4);
  memcpy(r.q, t.q, nxq * 4), memcpy(r.k, t.k, nxk * 4), memcpy(r.v, t.v, nxk * 4), memcpy(r.dout, t.dout, nxq * 4);
  round_all(r.q, nxq), round_all(r.k, nxk), round_all(r.v, nxk), round_all(r.dout, nxq);
  attn_reference(&r, emu[0], emu[1], emu[2], emu[3], emu[4]);
  /* the float32 naive version's outputs, which the bf16 ones must stay as close to */
  float *f32[5];
  for (int i = 0; i < 5; i++) f32[i] = zeros(i == 0 || i == 2 ? nxq : i == 1 ? nl : nxk);
  CHECK(slK_attention_forward(SLK_ATTN_NAIVE, &t.a, t.q, t.k, t.v, f32[0], f32[1]) == 0);
  CHECK(slK_attention_backward(SLK_ATTN_NAIVE, &t.a, t.q, t.k, t.v, f32[0], t.dout, f32[1], f32[2], f32[3], f32[4]) ==
        0);
  t.a.format = SLK_BF16;
  size_t sizes[5] = {nxq, nl, nxq, nxk, nxk};
  const char *names[5] = {"O", "L", "dQ", "dK", "dV"};
  for (int impl = 0; impl < SLK_ATTN_NUM; impl++)
    for (int portable = 0; portable < 2; portable++) {
      slK_force_portable(portable);
      memset(t.o, 0, nxq * 4), memset(t.dq, 0, nxq * 4), memset(t.dk, 0, nxk * 4), memset(t.dv, 0, nxk * 4);
      CHECK(slK_attention_forward((slK_AttnImpl)impl, &t.a, t.q, t.k, t.v, t.o, t.lse) == 0);
      CHECK(slK_attention_backward((slK_AttnImpl)impl, &t.a, t.q, t.k, t.v, t.o, t.dout, t.lse, t.dq, t.dk, t.dv) == 0);
      float *got[5] = {t.o, t.lse, t.dq, t.dk, t.dv};
      for (int i = 0; i < 5; i++) {
        double e = worst_scaled(got[i], ref[i], sizes[i]), f = worst_scaled(got[i], emu[i], sizes[i]);
        double u = 0x1p-9, te = 8 * u, tf = i == 1 ? 1e-4 : 4 * u, e32 = worst_scaled(got[i], f32[i], sizes[i]);
        CHECK_MSG(e32 <= te, "bf16 %s%s %s: %g of the scale from the float32 naive version",
                  slK_attention_name((slK_AttnImpl)impl), portable ? " portable" : "", names[i], e32);
        CHECK_MSG(e <= te, "bf16 %s%s %s: %g of the scale from float32", slK_attention_name((slK_AttnImpl)impl),
                  portable ? " portable" : "", names[i], e);
        CHECK_MSG(f <= tf, "bf16 %s%s %s: %g of the scale from emulated", slK_attention_name((slK_AttnImpl)impl),
                  portable ? " portable" : "", names[i], f);
      }
    }
  slK_force_portable(0);
  for (int i = 0; i < 5; i++) free(ref[i]), free(emu[i]), free(f32[i]);
  free(r.q), free(r.k), free(r.v), free(r.dout);
  attn_free(&t);
}

static void test_attention_bf16(void) {
  seed(12);
  attn_check_bf16(1, 1, 1, 1, 8, 0, 0, 0); /* L = 1 */
  attn_check_bf16(1, 1, 1, 1, 7, 1, 0, 0); /* odd head dim */
  attn_check_bf16(2, 3, 37, 37, 16, 1, 0, 0);
  attn_check_bf16(1, 2, 100, 61, 24, 0, 1, 0);  /* nq != nk, heads interleaved */
  attn_check_bf16(1, 2, 61, 100, 13, 1, 1, 0);  /* odd dim, causal */
  attn_check_bf16(1, 1, 200, 450, 64, 1, 0, 0); /* several query and key tiles */
  attn_check_bf16(1, 1, 450, 200, 64, 0, 0, 0);
  attn_check_bf16(2, 2, 50, 51, 32, 0, 1, 1); /* key masks; batch 0 fully masked */
  attn_check_bf16(3, 1, 9, 7, 5, 1, 0, 1);
  /* one head's query tiles split between the threads: the same bits every run */
  Attn t;
  attn_new(&t, 1, 1, 600, 600, 64, 1, 0);
  t.a.format = SLK_BF16;
  float *dq1 = zeros(t.nxq), *dk1 = zeros(t.nxk), *dv1 = zeros(t.nxk);
  CHECK(slK_attention_forward(SLK_ATTN_FUSED, &t.a, t.q, t.k, t.v, t.o, t.lse) == 0);
  for (int run = 0; run < 6; run++) {
    float *dq = run ? t.dq : dq1, *dk = run ? t.dk : dk1, *dv = run ? t.dv : dv1;
    memset(dq, 0, sizeof(float) * t.nxq), memset(dk, 0, sizeof(float) * t.nxk), memset(dv, 0, sizeof(float) * t.nxk);
    CHECK(slK_attention_backward(SLK_ATTN_FUSED, &t.a, t.q, t.k, t.v, t.o, t.dout, t.lse, dq, dk, dv) == 0);
    if (run == 0) continue;
    CHECK_MSG(memcmp(t.dq, dq1, sizeof(float) * t.nxq) == 0 && memcmp(t.dk, dk1, sizeof(float) * t.nxk) == 0 &&
                  memcmp(t.dv, dv1, sizeof(float) * t.nxk) == 0,
              "bf16 backward differs in run %d", run);
  }
  free(dq1), free(dk1), free(dv1);
  attn_free(&t);
}

static void test_attention_online_softmax_example(void) {
  /* numerics §7.1: scores [1, 2, 3, 4] and V = [1, 2, 3, 4]: O = 3.492653, L = 4.440190 */
  slK_Attn a;
  slK_attention_contiguous(&a, 1, 1, 1, 4, 1, 0);
  a.scale = 1.0f;
  float q[1] = {1}, k[4] = {1, 2, 3, 4}, v[4] = {1, 2, 3, 4}, o[1], lse[1];
  for (int impl = 0; impl < SLK_ATTN_NUM; impl++) {
    slK_attention_forward((slK_AttnImpl)impl, &a, q, k, v, o, lse);
    CHECK_NEAR(o[0], 3.492653, 2e-6);
    CHECK_NEAR(lse[0], 4.440190, 2e-6);
  }
  /* no keys at all: O = 0 and L = 0 */
  slK_attention_contiguous(&a, 1, 1, 2, 0, 4, 0);
  float q2[8] = {1, 2, 3, 4, 5, 6, 7, 8}, o2[8], l2[2] = {9, 9};
  for (int impl = 0; impl < SLK_ATTN_NUM; impl++) {
    memset(o2, 0xFF, sizeof o2);
    slK_attention_forward((slK_AttnImpl)impl, &a, q2, NULL, NULL, o2, l2);
    CHECK(o2[0] == 0 && o2[7] == 0 && l2[0] == 0 && l2[1] == 0);
  }
}

/* numerics §7.6: batch 4, 128 x 64, rtol = atol = 1e-2, causal and not. The
** reference masks with -inf where the CS336 tests' reference uses -1e6: no row is fully masked
** here, so the two give the same numbers. */
static void test_cs336_contract(void) {
  seed(0);
  for (int causal = 0; causal < 2; causal++) {
    Attn t;
    attn_new(&t, 4, 1, 128, 128, 64, causal, 0);
    float *o = zeros(t.nxq), *lse = zeros(t.nl), *dq = zeros(t.nxq), *dk = zeros(t.nxk), *dv = zeros(t.nxk);
    attn_reference(&t, o, lse, dq, dk, dv);
    CHECK(slK_attention_forward(SLK_ATTN_FUSED, &t.a, t.q, t.k, t.v, t.o, t.lse) == 0);
    /* the forward saves exactly one tensor besides O: L of shape (batch, nq) */
    CHECK_EQ_INT(t.nl, 4 * 128);
    close_all(t.o, o, t.nxq, 1e-2, 1e-2, "CS336 O");
    close_all(t.lse, lse, t.nl, 1e-2, 1e-2, "CS336 L");
    CHECK(slK_attention_backward(SLK_ATTN_FUSED, &t.a, t.q, t.k, t.v, t.o, t.dout, t.lse, t.dq, t.dk, t.dv) == 0);
    close_all(t.dq, dq, t.nxq, 1e-2, 1e-2, "CS336 dQ");
    close_all(t.dk, dk, t.nxk, 1e-2, 1e-2, "CS336 dK");
    close_all(t.dv, dv, t.nxk, 1e-2, 1e-2, "CS336 dV");
    free(o), free(lse), free(dq), free(dk), free(dv);
    attn_free(&t);
  }
}

static void test_attention_naive_step_equals_parts(void) {
  seed(3);
  Attn t;
  attn_new(&t, 1, 2, 70, 70, 16, 1, 0);
  float *o = zeros(t.nxq), *lse = zeros(t.nl), *dq = zeros(t.nxq), *dk = zeros(t.nxk), *dv = zeros(t.nxk);
  slK_attention_naive_step(&t.a, t.q, t.k, t.v, o, lse, t.dout, dq, dk, dv);
  slK_attention_forward(SLK_ATTN_FUSED, &t.a, t.q, t.k, t.v, t.o, t.lse);
  slK_attention_backward(SLK_ATTN_FUSED, &t.a, t.q, t.k, t.v, t.o, t.dout, t.lse, t.dq, t.dk, t.dv);
  close_all(t.o, o, t.nxq, 1e-4, 1e-5, "step O");
  close_all(t.dq, dq, t.nxq, 1e-3, 1e-4, "step dQ");
  close_all(t.dk, dk, t.nxk, 1e-3, 1e-4, "step dK");
  close_all(t.dv, dv, t.nxk, 1e-3, 1e-4, "step dV");
  free(o), free(lse), free(dq), free(dk), free(dv);
  attn_free(&t);
}

/* Threaded results do not depend on which thread ran what: the fused
** backward of a single head (its query tiles split between the threads,
** each group with its own dK, dV added in group order) and the blocked GEMM,
** run again and again, give the same bits. */
static void test_threaded_results_repeat_bitwise(void) {
  seed(5);
  Attn t;
  attn_new(&t, 1, 1, 600, 600, 64, 0, 0);
  float *o = zeros(t.nxq), *lse = zeros(t.nl), *dk0 = randn(t.nxk), *dv0 = randn(t.nxk);
  float *dq1 = zeros(t.nxq), *dk1 = zeros(t.nxk), *dv1 = zeros(t.nxk);
  CHECK(slK_attention_forward(SLK_ATTN_FUSED, &t.a, t.q, t.k, t.v, o, lse) == 0);
  for (int run = 0; run < 12; run++) {
    float *dq = run ? t.dq : dq1, *dk = run ? t.dk : dk1, *dv = run ? t.dv : dv1;
    memset(dq, 0, sizeof(float) * t.nxq);
    memcpy(dk, dk0, sizeof(float) * t.nxk); /* the backward adds: start from values, so the order shows */
    memcpy(dv, dv0, sizeof(float) * t.nxk);
    CHECK(slK_attention_backward(SLK_ATTN_FUSED, &t.a, t.q, t.k, t.v, o, t.dout, lse, dq, dk, dv) == 0);
    if (run == 0) continue;
    CHECK_MSG(memcmp(t.dq, dq1, sizeof(float) * t.nxq) == 0, "dQ differs in run %d", run);
    CHECK_MSG(memcmp(t.dk, dk1, sizeof(float) * t.nxk) == 0, "dK differs in run %d", run);
    CHECK_MSG(memcmp(t.dv, dv1, sizeof(float) * t.nxk) == 0, "dV differs in run %d", run);
  }
  free(o), free(lse), free(dk0), free(dv0), free(dq1), free(dk1), free(dv1);
  attn_free(&t);
  int n = 300;
  float *A = randn((size_t)n * n), *B = randn((size_t)n * n), *C = zeros((size_t)n * n), *C1 = zeros((size_t)n * n);
  slK_sgemm_with(SLK_GEMM_BLOCKED, 0, 0, n, n, n, 1.0f, A, n, B, n, 0.0f, C1, n);
  for (int run = 0; run < 12; run++) {
    slK_sgemm_with(SLK_GEMM_BLOCKED, 0, 1, n, n, n, 1.0f, A, n, B, n, 0.0f, C, n);
    slK_sgemm_with(SLK_GEMM_BLOCKED, 0, 0, n, n, n, 1.0f, A, n, B, n, 0.0f, C, n);
    CHECK_MSG(memcmp(C, C1, sizeof(float) * n * n) == 0, "blocked GEMM differs in run %d", run);
  }
  free(A), free(B), free(C), free(C1);
}

static void test_attention_memory_is_linear(void) {
  slK_Attn a, b;
  slK_attention_contiguous(&a, 1, 8, 1024, 1024, 64, 0);
  slK_attention_contiguous(&b, 1, 8, 4096, 4096, 64, 0);
  double nf = slK_attention_workspace(SLK_ATTN_NAIVE, &a, 0), nf4 = slK_attention_workspace(SLK_ATTN_NAIVE, &b, 0);
  double ff = slK_attention_workspace(SLK_ATTN_FUSED, &a, 1), ff4 = slK_attention_workspace(SLK_ATTN_FUSED, &b, 1);
  CHECK_NEAR(nf4 / nf, 16.0, 1e-9); /* N x N: 4x the length, 16x the bytes */
  CHECK(ff4 / ff < 4.01);           /* O(N) */
  CHECK_NEAR(nf, 2.0 * 8 * 1024 * 1024 * 4, 1);
  /* the allocator agrees with the prediction */
  Attn t;
  seed(4);
  attn_new(&t, 1, 2, 300, 300, 32, 0, 0);
  slK_mem_reset_peak();
  size_t base = slK_mem_live();
  slK_attention_forward(SLK_ATTN_NAIVE, &t.a, t.q, t.k, t.v, t.o, t.lse);
  CHECK_EQ_INT(slK_mem_peak() - base, (size_t)slK_attention_workspace(SLK_ATTN_NAIVE, &t.a, 0));
  slK_mem_reset_peak();
  slK_attention_forward(SLK_ATTN_FUSED, &t.a, t.q, t.k, t.v, t.o, t.lse);
  CHECK(slK_mem_peak() - base <= (size_t)slK_attention_workspace(SLK_ATTN_FUSED, &t.a, 0) + 4096);
  attn_free(&t);
}

/* ---------------------------------------------------------------- MXINT8 */

static uint16_t bf16_of_exact(double v) {
  float f = (float)v; /* exact: every value checked has at most 8 significant bits */
  uint32_t u;
  memcpy(&u, &f, 4);
  return (uint16_t)(u >> 16);
}

static void test_mxint8_decode_exhaustive(void) {
  int8_t m[256];
  uint8_t scale[1];
  uint16_t got[256];
  float f32[256];
  for (int i = 0; i < 256; i++) m[i] = (int8_t)(i - 128);
  int bad_exact = 0, bad_vec = 0, bad_f32 = 0;
  for (int portable = 0; portable < 2; portable++) {
    slK_force_portable(portable);
    for (int e = 0; e < 256; e++) {
      scale[0] = (uint8_t)e;
      slK_mxint8_dequant_bf16(m, scale, 256, 256, got);
      slK_mxint8_dequant_f32(m, scale, 256, 256, f32);
      for (int i = 0; i < 256; i++) {
        int mm = i - 128;
        uint16_t one = slK_mxint8_bf16_one((int8_t)mm, (uint8_t)e);
        bad_vec += got[i] != one;
        if (e >= 1 && e <= 254 && mm != -128) bad_exact += one != bf16_of_exact(ldexp(mm / 64.0, e - 127));
        if (e == 0) bad_exact += one != 0;
        if (e == 255) bad_exact += one != 0x7FC0;
        if (mm == -128 && e != 255) bad_exact += one != 0; /* the Lab 4 kernel's +0.0 (numerics §5.4) */
        float want = e == 0 ? 0.0f : e == 255 ? NAN : (float)ldexp(mm, e - 133);
        bad_f32 += !(f32[i] == want || (isnan(want) && isnan(f32[i])));
        if (e == 0) bad_f32 += signbit(f32[i]) != 0;
      }
    }
  }
  slK_force_portable(0);
  CHECK_EQ_INT(bad_exact, 0);
  CHECK_EQ_INT(bad_vec, 0);
  CHECK_EQ_INT(bad_f32, 0);
  /* the worked examples of numerics §5.4 */
  CHECK_EQ_INT(slK_mxint8_bf16_one(64, 127), 0x3F80);
  CHECK_EQ_INT(slK_mxint8_bf16_one(127, 127), 0x3FFE);
  CHECK_EQ_INT(slK_mxint8_bf16_one(63, 127), 0x3F7C);
  CHECK_EQ_INT(slK_mxint8_bf16_one(1, 127), 0x3C80);
  CHECK_EQ_INT(slK_mxint8_bf16_one(0, 127), 0x0000);
  CHECK_EQ_INT(slK_mxint8_bf16_one(-96, 127), 0xBFC0);
  CHECK_EQ_INT(slK_mxint8_bf16_one(-16, 130), 0xC000);
}

static void test_mxint8_groups_and_tails(void) {
  /* groups of 16 and 32, lengths that are not multiples of 16 */
  seed(5);
  int8_t m[1000];
  uint8_t s[64];
  for (int i = 0; i < 1000; i++) m[i] = (int8_t)(uniform() * 255 - 127);
  for (int i = 0; i < 64; i++) s[i] = (uint8_t)(uniform() * 256);
  int gs[2] = {16, 32}, ns[4] = {1, 17, 33, 999};
  for (int gi = 0; gi < 2; gi++)
    for (int ni = 0; ni < 4; ni++) {
      float a[1000], b[1000];
      uint16_t h[1000];
      slK_mxint8_dequant_f32(m, s, (size_t)ns[ni], gs[gi], a);
      slK_mxint8_dequant_f32_ref(m, s, (size_t)ns[ni], gs[gi], b);
      slK_mxint8_dequant_bf16(m, s, (size_t)ns[ni], gs[gi], h);
      int bad = 0;
      for (int i = 0; i < ns[ni]; i++) {
        bad += memcmp(&a[i], &b[i], 4) != 0 && !(isnan(a[i]) && isnan(b[i]));
        bad += h[i] != slK_mxint8_bf16_one(m[i], s[i / gs[gi]]);
      }
      CHECK_MSG(bad == 0, "g = %d, n = %d: %d elements differ", gs[gi], ns[ni], bad);
    }
}

/* outputs past 8 MiB go out by streaming stores: the same bits */
static void test_mxint8_large_streaming(void) {
  size_t n = (4u << 20) + 17;
  int8_t *m = malloc(n);
  uint8_t *s = malloc(n / 32 + 1);
  float *f = slK_alloc(n * sizeof *f);
  uint16_t *h = slK_alloc(n * sizeof *h);
  for (size_t i = 0; i < n; i++) m[i] = (int8_t)(i * 37 % 256);
  for (size_t i = 0; i < n / 32 + 1; i++) s[i] = (uint8_t)(i * 13 % 256);
  slK_mxint8_dequant_f32(m, s, n, 32, f);
  slK_mxint8_dequant_bf16(m, s, n, 32, h);
  size_t bad = 0;
  for (size_t i = 0; i < n; i++) {
    float want = slK_mxint8_f32_one(m[i], s[i / 32]);
    bad += memcmp(&f[i], &want, 4) != 0 && !(isnan(want) && isnan(f[i]));
    bad += h[i] != slK_mxint8_bf16_one(m[i], s[i / 32]);
  }
  CHECK_EQ_INT(bad, 0);
  free(m), free(s), slK_free(f), slK_free(h);
}

static void test_mxint8_linear(void) {
  seed(6);
  int rows = 37, in = 96, out = 53, g = 32;
  float *w = randn((size_t)out * in), *x = randn((size_t)rows * in), *bias = randn((size_t)out);
  int8_t *wm = malloc((size_t)out * in);
  uint8_t *ws = malloc((size_t)out * in / g);
  char err[128];
  CHECK(slQ_mxint8_pack(w, (size_t)out * in, g, wm, ws, err, sizeof err) == 0);
  float *fused = zeros((size_t)rows * out), *unfused = zeros((size_t)rows * out), *want = zeros((size_t)rows * out);
  float *wd = zeros((size_t)out * in);
  slK_mxint8_dequant_f32_ref(wm, ws, (size_t)out * in, g, wd);
  for (int r = 0; r < rows; r++)
    for (int j = 0; j < out; j++) {
      double s = bias[j];
      for (int k = 0; k < in; k++) s += (double)x[r * in + k] * wd[j * in + k];
      want[r * out + j] = (float)s;
    }
  for (int portable = 0; portable < 2; portable++) {
    slK_force_portable(portable);
    slK_mxint8_linear(1, rows, in, out, x, wm, ws, g, bias, fused);
    slK_mxint8_linear(0, rows, in, out, x, wm, ws, g, bias, unfused);
    close_all(fused, want, (size_t)rows * out, 1e-4, 1e-4, "MXINT8 linear fused");
    close_all(unfused, want, (size_t)rows * out, 1e-4, 1e-4, "MXINT8 linear unfused");
  }
  slK_force_portable(0);
  free(w), free(x), free(bias), free(wm), free(ws), free(fused), free(unfused), free(want), free(wd);
}

/* ---------------------------------------------------------- the harness */

static double script[64];
static int ticks, runs;
static double fake_clock(void *ud) { return script[ticks++]; }
static slK_Case *fake_setup(int size, const slK_Attn *a, char *err, size_t errlen) { return (slK_Case *)&runs; }
static double fake_run(slK_Case *c) {
  runs++;
  return -1;
}
static double fake_gpu_run(slK_Case *c) {
  runs++;
  return 0.5;
}
static void fake_teardown(slK_Case *c) {}
static double fake_flops(int n, const slK_Attn *a) { return 1e9; }
static double fake_bytes(int n, const slK_Attn *a) { return 4e9; }

static void test_harness_statistics(void) {
  slK_Bench b = {"fake", "cpu", "test", "n", "synthetic", fake_setup, fake_run, fake_teardown, fake_flops, fake_bytes};
  /* five timed runs of 3, 1, 2, 5, 4 seconds */
  double d[5] = {3, 1, 2, 5, 4}, t = 100;
  for (int i = 0; i < 5; i++) script[2 * i] = t, script[2 * i + 1] = t += d[i], t += 7;
  ticks = runs = 0;
  slK_Result r;
  char err[128];
  CHECK(slK_bench_run(&b, 1, NULL, 3, 5, fake_clock, NULL, &r, err, sizeof err) == 0);
  CHECK_EQ_INT(runs, 8); /* three warm-up runs, untimed */
  CHECK_EQ_INT(ticks, 10);
  CHECK_NEAR(r.t.min, 1, 1e-12);
  CHECK_NEAR(r.t.median, 3, 1e-12);
  CHECK_NEAR(r.t.mean, 3, 1e-12);
  CHECK_NEAR(r.t.std, sqrt(2.5), 1e-12);
  CHECK_NEAR(r.flops / r.t.median / 1e9, 1.0 / 3, 1e-12);
  CHECK_NEAR(r.flops / r.bytes, 0.25, 1e-12);
  /* an even count takes the mean of the middle two */
  double e[4] = {4, 1, 3, 2};
  slK_Stats st;
  slK_stats(e, 4, &st);
  CHECK_NEAR(st.median, 2.5, 1e-12);
  /* a kernel that times itself (GPU events) is believed over the host clock */
  b.run = fake_gpu_run;
  ticks = runs = 0;
  CHECK(slK_bench_run(&b, 1, NULL, 0, 5, fake_clock, NULL, &r, err, sizeof err) == 0);
  CHECK_NEAR(r.t.median, 0.5, 1e-12);
  CHECK(slK_bench_run(&b, 1, NULL, 0, 0, fake_clock, NULL, &r, err, sizeof err) != 0);
}

/* The table of cases (bench.c, indexed by an enum of them): every row is
** whole and named once, the GPU's after the CPU's, and a case found by its
** name is that row; without a GPU each GPU case refuses to set up, naming
** itself and why, whatever its place in the table. */
static void test_bench_table(void) {
  size_t count = 0, gpu_rows = 0;
  for (const slK_Bench *b; (b = slK_bench_at(count)); count++) {
    CHECK_MSG(b->name && b->device && b->group && b->what && b->setup && b->run && b->teardown && b->flops &&
                  b->bytes && b->check,
              "row %zu is not whole (every case is checked against its reference)", count);
    if (!b->name) return;
    CHECK_MSG(slK_bench_find(b->name) == b, "%s is not found as itself", b->name);
    int gpu_row = strcmp(b->device, "gpu") == 0;
    CHECK_MSG(gpu_row || strcmp(b->device, "cpu") == 0, "%s: device %s", b->name, b->device);
    CHECK_MSG(!gpu_row || strstr(b->name, "cuda") || strstr(b->name, "cublas"), "%s is a GPU case", b->name);
    CHECK_MSG(gpu_row || gpu_rows == 0, "%s, a CPU case, after the GPU's", b->name);
    gpu_rows += gpu_row;
    if (gpu_row && slK_dev_count() == 0) {
      char err[512] = "";
      CHECK(b->setup(64, NULL, err, sizeof err) == NULL);
      CHECK_MSG(strstr(err, "needs a GPU") && strstr(err, slK_dev_why()), "%s: %s", b->name, err);
    }
  }
  CHECK_EQ_INT((int)count, 38);
  CHECK_EQ_INT((int)gpu_rows, 19);
}

/* Every case is checked against its reference before it is timed
** (bench.c): each CPU case passes its check, on the default shape and on a
** causal bf16 one; the same case with a kernel that writes nothing is
** refused by the harness before its warm-up, naming the output, the
** difference and the tolerance (the caller names the case); a GPU case
** without a GPU is refused for that. */
static int skipped_runs;
static double writes_nothing(slK_Case *c) {
  skipped_runs++;
  return -1;
}

static void test_bench_checks(void) {
  slK_Attn causal;
  slK_attention_contiguous(&causal, 2, 3, 1, 1, 32, 1);
  causal.format = SLK_BF16;
  for (size_t i = 0; slK_bench_at(i); i++) {
    const slK_Bench *b = slK_bench_at(i);
    char err[512] = "";
    if (strcmp(b->device, "gpu") == 0) {
      if (slK_dev_count() > 0) {
        printf("  %s: checked on the GPU\n", b->name);
        CHECK_MSG(b->check(b, NULL, err, sizeof err) == 0, "%s", err);
      } else {
        CHECK(b->check(b, NULL, err, sizeof err) != 0);
        CHECK_MSG(strstr(err, "needs a GPU"), "%s: %s", b->name, err);
      }
      continue;
    }
    CHECK_MSG(b->check(b, NULL, err, sizeof err) == 0, "%s", err);
    if (strcmp(b->group, "attention") == 0 && !strstr(b->name, "bf16"))
      CHECK_MSG(b->check(b, &causal, err, sizeof err) == 0, "%s causal bf16: %s", b->name, err);
    slK_Bench wrong = *b;
    wrong.run = writes_nothing;
    skipped_runs = 0;
    slK_Result r;
    int rc = slK_bench_run(&wrong, strcmp(b->group, "gemm") == 0 || strcmp(b->group, "attention") == 0 ? 32 : 1024,
                           NULL, 2, 3, NULL, NULL, &r, err, sizeof err);
    CHECK_MSG(rc == -1, "%s: a kernel that writes nothing was timed", b->name);
    CHECK_EQ_INT(skipped_runs, 1); /* the check's one run: no warm-up, no timing */
    CHECK_MSG(strstr(err, "differs from its reference by") && strstr(err, "tolerance") &&
                  strstr(err, "in its check at size") && strstr(err, "not timed") && !strstr(err, b->name),
              "%s: %s", b->name, err);
  }
}

/* -------------------------------------------------------------- commands */

/* what a notebook shows: the printed text, then the result as Markdown */
static const char *run(sl_State *S, const char *code) { return check_show(S, code, "text/markdown"); }

static void test_commands(void) {
  sl_State *S = sl_new();
  const char *t = run(
      S,
      "bench [\"gemm_blocked\", \"attention_fused\", \"mxint8_dequant_f32\"] sizes=[64] reps=3 warmup=1 heads=2 dim=16");
  CHECK_CONTAINS(t, "gemm_blocked");
  CHECK_CONTAINS(t, "attention_fused");
  CHECK_CONTAINS(t, "syslab-timing"); /* timing columns are marked as measurements */
  CHECK_CONTAINS(run(S, "bench nosuch"), "no kernel named 'nosuch'");
  CHECK_CONTAINS(run(S, "bench gemm_blocked sizes=[0]"), "whole numbers from 1");
  CHECK_CONTAINS(run(S, "bench attention_naive sizes=[1000000] heads=64"), "more than the budget");
  /* a refused case is a row saying so; the other sizes still run, and speedup leaves the refused size out */
  t = run(
      S,
      "r = bench [\"attention_naive\", \"attention_fused\"] sizes=[32, 100000000] heads=2 dim=16 reps=1 warmup=0\n"
      "print r.note[1]\n[r.median_ms[0] > 0, r.median_ms[1] == nil, len((speedup r baseline=attention_naive kernel=attention_fused).size)]");
  CHECK_CONTAINS(t, "naive attention at L = 100000000 (forward) needs");
  CHECK_CONTAINS(t, "[true, true, 1]");
  if (slK_dev_count() == 0) {
    CHECK_CONTAINS(run(S, "bench gemm_cuda_tiled sizes=[64]"),
                   "'gemm_cuda_tiled' runs on a GPU, and here there is no GPU");
    /* refused before the CPU kernel is timed (at n = 2048, 20 times, it would run for many seconds) */
    double t0 = slK_now(NULL);
    t = run(S, "bench [\"gemm_blocked\", \"gemm_cublas\"] sizes=[2048] reps=20");
    CHECK_CONTAINS(t, "'gemm_cublas' runs on a GPU");
    CHECK_CONTAINS(t, "nothing was run");
    CHECK_MSG(slK_now(NULL) - t0 < 2, "the refusal took %.1f s: the CPU kernel ran first", slK_now(NULL) - t0);
    /* a GPU's figure without a GPU is no measurement of 0 */
    CHECK_STREQ(run(S, "machine get=gpus"), "0");
    CHECK_CONTAINS(run(S, "machine get=gpu_sgemm_gflops"),
                   "gpu_sgemm_gflops is a figure of a GPU, and here there is none");
    CHECK_CONTAINS(run(S, "machine get=gpu_copy_gbs"), "`machine get=gpus` is 0");
  }
  t = run(S, "r = bench gemm_blocked sizes=[64, 128] reps=2\nrf = roofline r\nlen(rf.series)");
  CHECK_MSG(atoi(t) >= 2 + 17, "roofline rows: %s", t);
  /* the roofs are measured beside each kernel: every row has its own, and no share is above 100% (a kernel
  ** faster than its roof is flagged instead) */
  t = run(
      S,
      "r = bench [\"gemm_blocked\", \"attention_naive\", \"mxint8_dequant_f32\"] sizes=[128] reps=2 warmup=0 heads=2 dim=16\n"
      "ok = 0\nfor i in 0..2 {\n  x = r[i]\n  if x.peak_gflops > 0 and x.bandwidth_gbs > 0 and x.roof_gflops <= x.peak_gflops {\n"
      "    if x.above_roof { if x.of_roof == nil and x.gflops > x.roof_gflops { ok = ok + 1 } } else {\n"
      "      if x.of_roof <= 1 and x.of_peak <= 1 and x.gflops <= x.roof_gflops * 1.01 { ok = ok + 1 }\n    }\n  }\n}\nok");
  CHECK_MSG(strcmp(t, "3") == 0, "rows with consistent roofs: %s", t);
  /* memcpy does no arithmetic: no roof is measured for it */
  t = run(S, "r = bench memcpy sizes=[64] reps=1\nlen(r.columns)");
  CHECK_MSG(atoi(t) > 0, "memcpy table: %s", t);
  /* a point above its roof is its own series, and the roof drawn is the one the table measured */
  t = run(
      S,
      "r = table kernel=[\"k\"] device=[\"cpu\"] intensity=[1] gflops=[100] peak_gflops=[50] bandwidth_gbs=[10] "
      "above_roof=[true]\nrf = roofline r\nprint rf.series[0]\nmax((where rf \"series\" \"==\" \"cpu roof\").gflops)");
  CHECK_CONTAINS(t, "k (above its roof)");
  CHECK_CONTAINS(t, "\n50");
  t = run(S, "attention_memory sizes=[128, 4096] heads=2 dim=16 budget_gib=0.1");
  CHECK_CONTAINS(t, "refused: needs");
  CHECK_CONTAINS(t, "budget 0.10 GiB");
  CHECK_CONTAINS(run(S, "machine"), "sgemm peak");
  CHECK_MSG(atof(run(S, "machine get=sgemm_gflops")) > 0.5, "sgemm peak measured");
  sl_free(S);
}

/* ------------------------------------------------------------------- GPU */

/* Each CUDA version against the CPU references: binary64 for GEMM and
** attention (attn_reference), the scalar decoder for MXINT8. The shapes are
** the awkward ones: sizes that are not multiples of the 64 x 64 x 16 GEMM
** tiles or of the 64-row attention tiles, L = 1, causal and not, several
** batches and heads. The CUDA attention takes equal query and key lengths,
** contiguous heads, dim = 64 and no key mask (cuda/gpu.h), and each is
** reached through the CUDA module's table (kernels/device.h); the masked and
** interleaved cases are the graph operator's (the GPU graph issue).
** SYSLAB_GPU_TEST_SMALL=1 (what bench/gpu_check.sh sets under
** compute-sanitizer, which runs kernels far slower) keeps the small shapes. */
static int gpu_small(void) {
  const char *e = getenv("SYSLAB_GPU_TEST_SMALL");
  return e && *e == '1';
}

static void gpu_gemm_case(int M, int N, int K) {
  char err[256], what[96];
  float *A = randn((size_t)M * K), *B = randn((size_t)K * N), *want = zeros((size_t)M * N), *got = zeros((size_t)M * N);
  for (int i = 0; i < M; i++)
    for (int j = 0; j < N; j++) {
      double acc = 0;
      for (int k = 0; k < K; k++) acc += (double)A[(size_t)i * K + k] * B[(size_t)k * N + j];
      want[(size_t)i * N + j] = (float)acc;
    }
  static const int impls[] = {SLG_GEMM_NAIVE, SLG_GEMM_TILED_V1, SLG_GEMM_TILED, SLG_GEMM_CUBLAS};
  static const char *names[] = {"naive", "tiled v1", "tiled v2", "cuBLAS"};
  for (int i = 0; i < 4; i++) {
    int impl = impls[i];
    memset(got, 0xff, sizeof(float) * (size_t)M * N); /* NaN: an element never written fails */
    snprintf(what, sizeof what, "GPU gemm %s %d x %d x %d", names[i], M, N, K);
    CHECK_MSG(slK_gpu()->sgemm(impl, M, N, K, A, B, got, err, sizeof err) == 0, "%s: %s", what, err);
    /* float32 sums of K products: |error| <= K u sum|a b|, about 1e-4 relative here */
    close_all(got, want, (size_t)M * N, 1e-4, 1e-4 * sqrt((double)K), what);
  }
  free(A), free(B), free(want), free(got);
}

static void gpu_attention_case(int B, int H, int L, int causal) {
  char err[256], what[96], w[128];
  Attn t;
  attn_new(&t, B, H, L, L, 64, causal, 0);
  float *o = zeros(t.nxq), *lse = zeros(t.nl), *dq = zeros(t.nxq), *dk = zeros(t.nxk), *dv = zeros(t.nxk);
  attn_reference(&t, o, lse, dq, dk, dv);
  static const int impls[] = {SLG_ATTN_NAIVE, SLG_ATTN_FUSED_V1, SLG_ATTN_FUSED};
  static const char *names[] = {"naive", "fused v1", "fused v2"};
  for (int i = 0; i < 3; i++) {
    int impl = impls[i];
    snprintf(what, sizeof what, "GPU attention %s B%d H%d L%d%s", names[i], B, H, L, causal ? " causal" : "");
    memset(t.o, 0xff, t.nxq * 4), memset(t.lse, 0xff, t.nl * 4);
    CHECK_MSG(slK_gpu()->attention_forward(impl, B, H, L, 64, causal, t.q, t.k, t.v, t.o, t.lse, err, sizeof err) == 0,
              "%s: %s", what, err);
    snprintf(w, sizeof w, "%s O", what), close_all(t.o, o, t.nxq, 1e-4, 1e-4, w);
    snprintf(w, sizeof w, "%s L", what), close_all(t.lse, lse, t.nl, 1e-4, 1e-4, w);
  }
  /* the backward from the reference's O and L, as the CPU tests do */
  for (int i = 0; i < 3; i++) {
    int impl = impls[i];
    snprintf(what, sizeof what, "GPU attention backward %s B%d H%d L%d%s", names[i], B, H, L, causal ? " causal" : "");
    memset(t.dq, 0xff, t.nxq * 4), memset(t.dk, 0xff, t.nxk * 4), memset(t.dv, 0xff, t.nxk * 4);
    CHECK_MSG(slK_gpu()->attention_backward(impl, B, H, L, 64, causal, t.q, t.k, t.v, o, t.dout, lse, t.dq, t.dk, t.dv,
                                            err, sizeof err) == 0,
              "%s: %s", what, err);
    snprintf(w, sizeof w, "%s dQ", what), close_all(t.dq, dq, t.nxq, 1e-3, 1e-3, w);
    snprintf(w, sizeof w, "%s dK", what), close_all(t.dk, dk, t.nxk, 1e-3, 1e-3, w);
    snprintf(w, sizeof w, "%s dV", what), close_all(t.dv, dv, t.nxk, 1e-3, 1e-3, w);
  }
  free(o), free(lse), free(dq), free(dk), free(dv);
  attn_free(&t);
}

/* The tensor-core forward and backward (impl: version 1, SLG_ATTN_FUSED_BF16,
** or 2, SLG_ATTN_FA2_BF16) against the binary64 reference of the same
** bf16-rounded inputs. P is rounded to bf16 before P V (2^-9
** relative, each weight), so O is held to 1e-2; L comes from float32 sums
** of exact products and the float32 row sums, so 1e-4. The backward rounds
** P and dS to bf16 for its products: dQ, dK, dV within 3e-2. */
static void gpu_attention_bf16_case(int impl, int B, int H, int L, int dim, int causal) {
  char err[256], what[96], w[128];
  Attn t;
  attn_new(&t, B, H, L, L, dim, causal, 0);
  slK_round_array(SLK_BF16, t.q, t.q, t.nxq);
  slK_round_array(SLK_BF16, t.k, t.k, t.nxk);
  slK_round_array(SLK_BF16, t.v, t.v, t.nxk);
  slK_round_array(SLK_BF16, t.dout, t.dout, t.nxq);
  float *o = zeros(t.nxq), *lse = zeros(t.nl), *dq = zeros(t.nxq), *dk = zeros(t.nxk), *dv = zeros(t.nxk);
  attn_reference(&t, o, lse, dq, dk, dv);
  snprintf(what, sizeof what, "GPU attention bf16%s B%d H%d L%d dim %d%s", impl == SLG_ATTN_FA2_BF16 ? " v2" : "", B, H,
           L, dim, causal ? " causal" : "");
  memset(t.o, 0xff, t.nxq * 4), memset(t.lse, 0xff, t.nl * 4);
  CHECK_MSG(slK_gpu()->attention_forward(impl, B, H, L, dim, causal, t.q, t.k, t.v, t.o, t.lse, err, sizeof err) == 0,
            "%s: %s", what, err);
  snprintf(w, sizeof w, "%s O", what), close_all(t.o, o, t.nxq, 1e-2, 1e-2, w);
  snprintf(w, sizeof w, "%s L", what), close_all(t.lse, lse, t.nl, 1e-4, 1e-4, w);
  memset(t.dq, 0xff, t.nxq * 4), memset(t.dk, 0xff, t.nxk * 4), memset(t.dv, 0xff, t.nxk * 4);
  CHECK_MSG(slK_gpu()->attention_backward(impl, B, H, L, dim, causal, t.q, t.k, t.v, o, t.dout, lse, t.dq, t.dk, t.dv,
                                          err, sizeof err) == 0,
            "%s backward: %s", what, err);
  snprintf(w, sizeof w, "%s dQ", what), close_all(t.dq, dq, t.nxq, 3e-2, 3e-2, w);
  snprintf(w, sizeof w, "%s dK", what), close_all(t.dk, dk, t.nxk, 3e-2, 3e-2, w);
  snprintf(w, sizeof w, "%s dV", what), close_all(t.dv, dv, t.nxk, 3e-2, 3e-2, w);
  free(o), free(lse), free(dq), free(dk), free(dv);
  attn_free(&t);
}

static void test_gpu_attention_bf16(void) {
  seed(9);
  static const int shapes[][3] = {{1, 1, 1}, {1, 2, 63}, {2, 3, 65}, {1, 1, 128}, {2, 2, 150}, {1, 1, 257}};
  static const int fa2_dims[] = {64, 80, 128};
  int n = gpu_small() ? 3 : (int)(sizeof shapes / sizeof shapes[0]);
  for (int i = 0; i < n; i++)
    for (int causal = 0; causal < 2; causal++) {
      for (int dim = 64; dim <= 128; dim += 64)
        gpu_attention_bf16_case(SLG_ATTN_FUSED_BF16, shapes[i][0], shapes[i][1], shapes[i][2], dim, causal);
      /* version 2 (attention_fa2.cu), at the head size it adds (80) too */
      for (int d = 0; d < 3; d++)
        gpu_attention_bf16_case(SLG_ATTN_FA2_BF16, shapes[i][0], shapes[i][1], shapes[i][2], fa2_dims[d], causal);
    }
}

static void test_gpu_gemm(void) {
  seed(7);
  static const int sizes[][3] = {{1, 1, 1},      {1, 64, 64},   {64, 64, 16},   {65, 63, 17},
                                 {131, 77, 200}, {7, 300, 129}, {256, 128, 64}, {300, 257, 511}};
  int n = gpu_small() ? 4 : (int)(sizeof sizes / sizeof sizes[0]);
  for (int i = 0; i < n; i++) gpu_gemm_case(sizes[i][0], sizes[i][1], sizes[i][2]);
}

static void test_gpu_attention(void) {
  seed(8);
  static const int shapes[][3] = {{1, 1, 1}, {1, 1, 2}, {1, 2, 63}, {2, 3, 65}, {1, 1, 64}, {2, 2, 150}, {1, 1, 257}};
  int n = gpu_small() ? 4 : (int)(sizeof shapes / sizeof shapes[0]);
  for (int i = 0; i < n; i++)
    for (int causal = 0; causal < 2; causal++) gpu_attention_case(shapes[i][0], shapes[i][1], shapes[i][2], causal);
}

/* the CS336 FlashAttention-2 contract on the GPU: batch 4, one head, 128 x 64; the forward saves O and L only */
static void test_gpu_cs336_contract(void) {
  seed(0);
  gpu_attention_case(4, 1, 128, 0);
  gpu_attention_case(4, 1, 128, 1);
}

/* every mantissa under every scale byte, then groups of 16 and 32 over lengths that are not multiples of 16 */
static void test_gpu_mxint8(void) {
  char err[256];
  int8_t m[256 * 32];
  uint8_t s[256];
  uint16_t h[256 * 32];
  for (int i = 0; i < 256 * 32; i++) m[i] = (int8_t)(i % 256 - 128);
  for (int e = 0; e < 256; e++) s[e] = (uint8_t)e;
  int bad = 0;
  /* group g holds the mantissas of block g mod 8 under scale byte g: shifting
  ** the scales by 0..7 brings every mantissa under every scale byte */
  for (int shift = 0; shift < (gpu_small() ? 1 : 8); shift++) {
    uint8_t sh[256];
    for (int e = 0; e < 256; e++) sh[e] = (uint8_t)(s[e] + shift);
    CHECK_MSG(slK_gpu()->mxint8_dequant_bf16(m, sh, 256 * 32, 32, h, err, sizeof err) == 0, "%s", err);
    for (int i = 0; i < 256 * 32; i++) bad += h[i] != slK_mxint8_bf16_one(m[i], sh[i / 32]);
  }
  CHECK_EQ_INT(bad, 0);
  int gs[2] = {16, 32}, ns[5] = {1, 15, 17, 33, 8191};
  for (int gi = 0; gi < 2; gi++)
    for (int ni = 0; ni < 5; ni++) {
      memset(h, 0xff, sizeof h);
      CHECK_MSG(slK_gpu()->mxint8_dequant_bf16(m, s, (size_t)ns[ni], gs[gi], h, err, sizeof err) == 0, "%s", err);
      int wrong = 0;
      for (int i = 0; i < ns[ni]; i++) wrong += h[i] != slK_mxint8_bf16_one(m[i], s[i / gs[gi]]);
      CHECK_MSG(wrong == 0, "GPU MXINT8 g = %d, n = %d: %d elements differ", gs[gi], ns[ni], wrong);
    }
}

/* an argument the kernels do not support is an error with a message, not a crash */
static void test_gpu_refusals(void) {
  char err[256] = "";
  float x[32 * 16] = {0}, y[32 * 16], l[16];
  CHECK(slK_gpu()->attention_forward(SLG_ATTN_FUSED, 1, 1, 16, 32, 0, x, x, x, y, l, err, sizeof err) != 0);
  CHECK_CONTAINS(err, "dim");
  err[0] = 0;
  CHECK(slK_gpu()->attention_forward(SLG_ATTN_FUSED_BF16, 1, 1, 16, 32, 0, x, x, x, y, l, err, sizeof err) != 0);
  CHECK_CONTAINS(err, "dim");
  err[0] = 0;
  CHECK(slK_gpu()->attention_forward(SLG_ATTN_FA2_BF16, 1, 1, 16, 32, 0, x, x, x, y, l, err, sizeof err) != 0);
  CHECK_CONTAINS(err, "64, 80 and 128");
}

/* `version` on a machine without NVIDIA's driver said "CUDA driver version
** is insufficient", as if an old driver were installed */
static void test_gpu_description_names_what_is_missing(void) {
  const char *d = slK_dev_why();
  CHECK(d && *d);
  if (slK_dev_count() > 0) return;
  CHECK_CONTAINS(d, "no GPU");
  if (access("/proc/driver/nvidia/version", F_OK) != 0) CHECK_MSG(!strstr(d, "insufficient"), "got \"%s\"", d);
}

static void run_gpu_tests(void) {
  if (slK_dev_count() == 0) {
    check_skip("test_gpu_* (CUDA versions against the CPU references)", slK_dev_why());
    return;
  }
  RUN(test_gpu_gemm);
  RUN(test_gpu_attention);
  RUN(test_gpu_attention_bf16);
  RUN(test_gpu_cs336_contract);
  RUN(test_gpu_mxint8);
  RUN(test_gpu_refusals);
}

/* `test_kernels gpu` runs the GPU tests alone (bench/gpu_check.sh, under compute-sanitizer) */
int main(int argc, char **argv) {
  if (argc > 1 && strcmp(argv[1], "gpu") == 0) {
    run_gpu_tests();
    return check_summary();
  }
  RUN(test_gpu_description_names_what_is_missing);
  RUN(test_gemm_versions);
  RUN(test_vexp);
  RUN(test_attention_versions);
  RUN(test_attention_bf16);
  RUN(test_attention_online_softmax_example);
  RUN(test_cs336_contract);
  RUN(test_attention_naive_step_equals_parts);
  RUN(test_attention_memory_is_linear);
  RUN(test_threaded_results_repeat_bitwise);
  RUN(test_mxint8_decode_exhaustive);
  RUN(test_mxint8_groups_and_tails);
  RUN(test_mxint8_large_streaming);
  RUN(test_mxint8_linear);
  RUN(test_harness_statistics);
  RUN(test_bench_table);
  RUN(test_bench_checks);
  RUN(test_commands);
  run_gpu_tests();
  return check_summary();
}
