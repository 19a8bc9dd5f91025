/* test_gemm_half.c - products with 16-bit inputs and float32 sums
** (engine/kernels/gemm_half.c):
**
**   - the vector rounding of slK_to_half against slK_round_bf16 and
**     slK_round_fp16, bit for bit, over every class of float32 value and
**     every tie;
**   - the packed bf16 kernel (vdpbf16ps) against the exact reference, which
**     emulates the instruction, bit for bit (NaN matching any NaN): odd
**     shapes and tails, K odd and K = 1, several K blocks, every
**     transposition, alpha and beta, B already rounded (Bh), NaN, Inf, +-0,
**     subnormals, products that overflow or underflow, the thread split by
**     columns and by rows;
**   - the fp16 kernel against rounding both operands then the blocked
**     float32 kernel, bit for bit, and against the reference;
**   - both against the exact sum of the rounded operands (binary64) within
**     the bound derived below;
**   - the portable path (slK_force_portable, as SYSLAB_PORTABLE=1 does):
**     the emulated path, bit for bit, within the same bound.
**
** The bound. With a = round(A), b = round(B) (products exact in float32)
** and S = sum_k a_ik b_kj, the kernels add K products one at a time into
** float32 accumulators, one K block of SLK_HALF_KC (bf16) or SLK_KC (fp16)
** after another, then combine the blocks into C: at most
** n = K + ceil(K / KC) + 2 roundings, each of relative size u = 2^-24
** (round to nearest), on partial sums bounded by sum |a b|. So (Higham,
** Accuracy and Stability, 3.1, first order)
**     |C - (alpha S + beta C0)| <= n u (|alpha| sum_k |a_ik b_kj| + |beta C0|) + n 2^-126
** the last term for the sums vdpbf16ps flushes to zero (subnormal, below
** 2^-126 each). fp16 folds alpha into a before the sums: one more rounding
** per product, n grows by K.
*/
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "kernels/gemm_half.h"
#include "kernels/kernels.h"
#include "kernels/round.h"
#include "kernels/simd.h"

static uint64_t rng_state;
static void seed(uint64_t s) { rng_state = s * 0x9E3779B97F4A7C15ull + 7; }
static uint64_t next(void) {
  rng_state ^= rng_state << 13, rng_state ^= rng_state >> 7, rng_state ^= rng_state << 17;
  return rng_state;
}
static double uniform(void) { return (double)(next() >> 11) / 9007199254740992.0; }
static double normal(void) {
  double u = 1 - uniform(), v = uniform();
  return sqrt(-2 * log(u)) * cos(6.283185307179586 * v);
}
static float *randn(size_t n) {
  float *x = malloc((n ? n : 1) * sizeof *x);
  for (size_t i = 0; i < n; i++) x[i] = (float)normal();
  return x;
}
static uint32_t bits(float x) {
  uint32_t u;
  memcpy(&u, &x, sizeof u);
  return u;
}
static float from_bits(uint32_t u) {
  float x;
  memcpy(&x, &u, sizeof x);
  return x;
}
static int same(float a, float b) { return bits(a) == bits(b) || (isnan(a) && isnan(b)); }

/* ------------------------------------------------------------ rounding */

static uint16_t scalar_half(int format, float x) {
  if (format == SLK_FP16) return slK_fp16_bits(x);
  return (uint16_t)(bits(slK_round_bf16(x)) >> 16);
}

static void test_to_half_matches_scalar_rounding(void) {
  /* every high half with low halves at and around the ties of both formats, and random patterns */
  static const uint32_t low[] = {0, 1, 0x0FFF, 0x1000, 0x1001, 0x1FFF, 0x2000, 0x3000, 0x7FFF, 0x8000, 0x8001, 0xFFFF};
  size_t nl = sizeof low / sizeof low[0], n = 65536 * nl + 200000 + 3;
  float *x = malloc(n * sizeof *x);
  uint16_t *got = malloc(n * sizeof *got);
  size_t at = 0;
  for (uint32_t hi = 0; hi < 65536; hi++)
    for (size_t l = 0; l < nl; l++) x[at++] = from_bits(hi << 16 | low[l]);
  seed(11);
  while (at < n) x[at++] = from_bits((uint32_t)next());
  for (int format = SLK_BF16; format <= SLK_FP16; format++)
    for (int portable = 0; portable < 2; portable++) {
      slK_force_portable(portable);
      slK_to_half(format, x, got, n);
      size_t bad = 0, first = 0;
      for (size_t i = 0; i < n; i++)
        if (got[i] != scalar_half(format, x[i]) && bad++ == 0) first = i;
      CHECK_MSG(bad == 0, "%s%s: %zu values differ, first %08x -> %04x, expected %04x",
                format == SLK_BF16 ? "bf16" : "fp16", portable ? " portable" : "", bad, bits(x[first]), got[first],
                scalar_half(format, x[first]));
    }
  /* slK_round_values, the rounding of a node's output: the same bits as round.c's slK_round_array */
  float *r = malloc(n * sizeof *r), *want = malloc(n * sizeof *want);
  for (int format = SLK_BF16; format <= SLK_FP16; format++)
    for (int portable = 0; portable < 2; portable++) {
      slK_force_portable(portable);
      slK_round_values(format, x, r, n - 3); /* a tail shorter than a vector */
      slK_round_array(format, x, want, n - 3);
      size_t bad = 0;
      for (size_t i = 0; i < n - 3; i++) bad += !same(r[i], want[i]);
      CHECK_MSG(bad == 0, "round_values %s%s: %zu values differ", format == SLK_BF16 ? "bf16" : "fp16",
                portable ? " portable" : "", bad);
    }
  free(r), free(want);
  slK_force_portable(0);
  free(x), free(got);
}

/* ------------------------------------------------------------ products */

typedef struct {
  int format, ta, tb, M, N, K;
  float alpha, beta;
  int lda, ldb;
  float *A, *B, *C0;
  uint16_t *Bh;
} Case;

static void case_new(Case *c, int format, int ta, int tb, int M, int N, int K, float alpha, float beta) {
  memset(c, 0, sizeof *c);
  c->format = format, c->ta = ta, c->tb = tb, c->M = M, c->N = N, c->K = K, c->alpha = alpha, c->beta = beta;
  c->lda = ta ? M : K, c->ldb = tb ? K : N;
  if (c->lda < 1) c->lda = 1;
  if (c->ldb < 1) c->ldb = 1;
  c->A = randn((size_t)M * K), c->B = randn((size_t)K * N), c->C0 = randn((size_t)M * N);
  c->Bh = malloc(((size_t)K * N + 1) * sizeof *c->Bh);
}

static void case_free(Case *c) { free(c->A), free(c->B), free(c->C0), free(c->Bh); }

static void run(const Case *c, float *out, int use_bh,
                void (*fn)(int, int, int, int, int, int, float, const float *, int, const float *, const uint16_t *,
                           int, float, float *, int)) {
  memcpy(out, c->C0, sizeof(float) * c->M * c->N);
  fn(c->format, c->ta, c->tb, c->M, c->N, c->K, c->alpha, c->A, c->lda, use_bh ? NULL : c->B, use_bh ? c->Bh : NULL,
     c->ldb, c->beta, out, c->N);
}

static float rounded(int format, float x) { return format == SLK_BF16 ? slK_round_bf16(x) : slK_round_fp16(x); }

/* every element within the bound of the header against the exact sum of the rounded operands */
static void within_bound(const Case *c, const float *got, const char *what) {
  int kc = c->format == SLK_BF16 ? SLK_HALF_KC : SLK_KC;
  double n = c->K + (c->K + kc - 1) / kc + 2 + (c->format == SLK_FP16 ? c->K : 0), u = 0x1p-24;
  for (int i = 0; i < c->M; i++)
    for (int j = 0; j < c->N; j++) {
      double s = 0, mag = 0;
      for (int k = 0; k < c->K; k++) {
        double p = (double)rounded(c->format, c->ta ? c->A[k * c->lda + i] : c->A[i * c->lda + k]) *
                   rounded(c->format, c->tb ? c->B[j * c->ldb + k] : c->B[k * c->ldb + j]);
        s += p, mag += fabs(p);
      }
      double c0 = c->C0[i * c->N + j], want = c->alpha * s + (c->beta == 0 ? 0 : c->beta * c0);
      double bound = n * u * (fabs(c->alpha) * mag + fabs(c->beta * c0)) + n * 0x1p-126;
      if (!(fabs(got[i * c->N + j] - want) <= bound)) {
        check_fail(__FILE__, __LINE__, "%s: (%d, %d) is %.9g, exact %.9g, bound %.3g", what, i, j, got[i * c->N + j],
                   want, bound);
        return;
      }
    }
}

static void all_same(const Case *c, const float *got, const float *want, const char *what) {
  for (int i = 0; i < c->M * c->N; i++)
    if (!same(got[i], want[i])) {
      check_fail(__FILE__, __LINE__, "%s: element %d is %.9g (%08x), expected %.9g (%08x)", what, i, got[i],
                 bits(got[i]), want[i], bits(want[i]));
      return;
    }
}

/* B's storage (K x N, or N x K transposed) as half bits */
static void round_b(Case *c) { slK_to_half(c->format, c->B, c->Bh, (size_t)c->K * c->N); }

static void check_case(Case *c, int bounded) {
  size_t mn = (size_t)c->M * c->N;
  float *got = malloc((mn + 1) * sizeof *got), *want = malloc((mn + 1) * sizeof *want),
        *other = malloc((mn + 1) * sizeof *other);
  char what[160];
  snprintf(what, sizeof what, "%s %c%c %dx%dx%d alpha %g beta %g", c->format == SLK_BF16 ? "bf16" : "fp16",
           c->ta ? 'T' : 'N', c->tb ? 'T' : 'N', c->M, c->N, c->K, c->alpha, c->beta);
  round_b(c);
  run(c, want, 0, slK_gemm_half_reference);
  if (slK_half_native(c->format)) {
    run(c, got, 0, slK_gemm_half);
    all_same(c, got, want, what);
    run(c, other, 1, slK_gemm_half); /* B already rounded */
    all_same(c, other, got, what);
    if (bounded) within_bound(c, got, what);
  }
  if (c->format == SLK_FP16 && slK_half_native(SLK_FP16)) {
    /* round both operands, then the blocked float32 kernel */
    float *ra = malloc(((size_t)c->M * c->K + 1) * 4), *rb = malloc(((size_t)c->K * c->N + 1) * 4);
    slK_round_array(SLK_FP16, c->A, ra, (size_t)c->M * c->K);
    slK_round_array(SLK_FP16, c->B, rb, (size_t)c->K * c->N);
    memcpy(other, c->C0, mn * sizeof *other);
    slK_Operand a = {ra, c->ta ? 1 : c->lda, c->ta ? c->lda : 1, NULL, NULL, 0, 0, 0, NULL};
    slK_Operand b = {rb, c->tb ? 1 : c->ldb, c->tb ? c->ldb : 1, NULL, NULL, 0, 0, 0, NULL};
    slK_gemm_blocked(c->M, c->N, c->K, c->alpha, &a, &b, c->beta, other, c->N, slK_threads());
    all_same(c, got, other, what);
    free(ra), free(rb);
  }
  /* the portable loops: the emulated path, bit for bit */
  slK_force_portable(1);
  CHECK(!slK_half_native(c->format));
  run(c, got, 0, slK_gemm_half);
  run(c, other, 0, slK_gemm_half_emulated);
  all_same(c, got, other, what);
  run(c, other, 1, slK_gemm_half);
  all_same(c, got, other, what);
  if (bounded) within_bound(c, got, what);
  slK_force_portable(0);
  free(got), free(want), free(other);
}

static void check_shape(int format, int ta, int tb, int M, int N, int K, float alpha, float beta) {
  Case c;
  case_new(&c, format, ta, tb, M, N, K, alpha, beta);
  check_case(&c, 1);
  case_free(&c);
}

static void test_products_against_reference(void) {
  seed(1);
  CHECK_MSG(slK_half_native(SLK_BF16) || !__builtin_cpu_supports("avx512bf16"),
            "the CPU has avx512_bf16: bf16 is native");
  int shapes[][3] = {{1, 1, 1},
                     {1, 1, 2},
                     {7, 5, 3},
                     {8, 48, 32},
                     {9, 49, 33},
                     {16, 96, 64},
                     {33, 97, 65},
                     {5, 130, 1},
                     {64, 1, 513},
                     {130, 70, 200},
                     {17, 50, 2 * SLK_HALF_KC + 3},
                     {200, 300, 250},
                     {96, 64, 2 * SLK_HALF_KC + 40}}; /* last: a weight's gradient, threads split K's blocks */
  for (int format = SLK_BF16; format <= SLK_FP16; format++)
    for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; s++)
      for (int t = 0; t < 4; t++)
        check_shape(format, t & 1, t >> 1, shapes[s][0], shapes[s][1], shapes[s][2], 1.0f, 0.0f);
  for (int format = SLK_BF16; format <= SLK_FP16; format++) {
    check_shape(format, 0, 0, 50, 60, 71, 0.5f, 1.0f);
    check_shape(format, 1, 0, 50, 60, 70, -2.0f, 0.25f);
    check_shape(format, 0, 1, 31, 45, 801, 0.3f, -1.5f); /* several K blocks, alpha not a power of two */
    check_shape(format, 1, 1, 150, 170, 90, -2.0f, 0.25f);
    check_shape(format, 0, 0, 9, 9, 0, 1.0f, 0.0f); /* K = 0: beta C */
    check_shape(format, 0, 1, 9, 9, 0, 1.0f, 0.5f);
    check_shape(format, 0, 0, 300, 400, 200, 1.0f, 0.0f);                 /* threads split the columns */
    check_shape(format, 1, 0, 500, 40, 1000, 1.0f, 0.0f);                 /* threads split the rows */
    check_shape(format, 1, 0, 96, 64, 2 * SLK_HALF_KC + 40, 0.5f, 0.25f); /* K's blocks split, then beta */
    check_shape(format, 0, 1, 70, 90, 3 * SLK_HALF_KC + 1, -1.5f, 1.0f);
  }
}

/* Both operands rounded beforehand (slK_gemm_bf16_rounded, attention's
** per-head products): the bits of slK_gemm_half on the float32 operands,
** for every split of the work and on both dispatch paths. */
static void test_prerounded_operands(void) {
  seed(4);
  int shapes[][3] = {{17, 17, 32},
                     {17, 32, 17},
                     {1, 1, 1},
                     {9, 49, 33},
                     {300, 400, 200},
                     {500, 40, 1000},
                     {96, 64, 2 * SLK_HALF_KC + 40}};
  for (int portable = 0; portable < 2; portable++)
    for (size_t k = 0; k < sizeof shapes / sizeof shapes[0]; k++)
      for (int t = 0; t < 4; t++) {
        Case c;
        case_new(&c, SLK_BF16, t & 1, t >> 1, shapes[k][0], shapes[k][1], shapes[k][2], 0.5f, t == 2 ? 0.0f : 1.0f);
        size_t na = (size_t)c.M * c.K;
        uint16_t *Ah = malloc((na + 1) * sizeof *Ah);
        slK_to_half(SLK_BF16, c.A, Ah, na);
        round_b(&c);
        size_t mn = (size_t)c.M * c.N;
        float *got = malloc(mn * sizeof *got), *want = malloc(mn * sizeof *want);
        slK_force_portable(portable);
        run(&c, want, 0, slK_gemm_half);
        memcpy(got, c.C0, mn * sizeof *got);
        slK_gemm_bf16_rounded(c.ta, c.tb, c.M, c.N, c.K, c.alpha, Ah, c.lda, c.Bh, c.ldb, c.beta, got, c.N);
        slK_force_portable(0);
        char what[120];
        snprintf(what, sizeof what, "pre-rounded %dx%dx%d t%d, portable %d", c.M, c.N, c.K, t, portable);
        all_same(&c, got, want, what);
        free(got), free(want), free(Ah);
        case_free(&c);
      }
}

/* A linear layer's forward (slK_gemm_half_bias): the bias and the rounding
** in the store give the bits of the product, a pass adding the bias and a
** pass rounding, on both dispatch paths, whichever way threads split C. */
static void test_bias_and_rounding_in_the_store(void) {
  seed(3);
  int shapes[][3] = {{1, 1, 1},       {9, 49, 33},     {33, 97, 65},
                     {2176, 192, 64}, {300, 400, 200}, {17, 50, 2 * SLK_HALF_KC + 3}};
  for (int portable = 0; portable < 2; portable++)
    for (int format = SLK_BF16; format <= SLK_FP16; format++)
      for (size_t k = 0; k < sizeof shapes / sizeof shapes[0]; k++)
        for (int t = 0; t < 4; t++)
          for (int with = 0; with < 4; with++) { /* bias or not, rounding or not */
            Case c;
            case_new(&c, format, t & 1, t >> 1, shapes[k][0], shapes[k][1], shapes[k][2], 1.0f, 0.0f);
            float *bias = (with & 1) ? randn((size_t)c.N) : NULL;
            size_t mn = (size_t)c.M * c.N;
            float *got = malloc(mn * sizeof *got), *want = malloc(mn * sizeof *want);
            slK_force_portable(portable);
            run(&c, want, 0, slK_gemm_half);
            for (int i = 0; i < c.M; i++) {
              float *w = want + (size_t)i * c.N;
              if (bias)
                for (int j = 0; j < c.N; j++) w[j] += bias[j];
              if (with & 2) slK_round_values(format, w, w, (size_t)c.N);
            }
            memcpy(got, c.C0, mn * sizeof *got);
            slK_gemm_half_bias(format, c.ta, c.tb, c.M, c.N, c.K, c.A, c.lda, c.B, NULL, c.ldb, bias, with >> 1, got,
                               c.N);
            slK_force_portable(0);
            char what[120];
            snprintf(what, sizeof what, "%s %dx%dx%d t%d, bias %d, rounding %d, portable %d",
                     format == SLK_BF16 ? "bf16" : "fp16", c.M, c.N, c.K, t, with & 1, with >> 1, portable);
            all_same(&c, got, want, what);
            free(got), free(want), free(bias);
            case_free(&c);
          }
}

/* a value of every class: NaN, +-Inf, +-0, subnormals (as float32 and as bf16), huge and tiny normals */
static float special(void) {
  switch (next() % 12) {
    case 0: return NAN;
    case 1: return (next() & 1) ? INFINITY : -INFINITY;
    case 2: return (next() & 1) ? 0.0f : -0.0f;
    case 3: return from_bits((uint32_t)(next() & 0x807FFFFFu));               /* float32 subnormal */
    case 4: return from_bits((uint32_t)(next() & 0x807F0000u) | 0x8000u);     /* rounds to a bf16 subnormal */
    case 5: return (float)normal() * 1e30f;                                   /* products overflow */
    case 6: return (float)normal() * 1e-25f;                                  /* products underflow */
    case 7: return (float)normal() * 6e4f;                                    /* near half's largest */
    case 8: return (float)normal() * 1e-6f;                                   /* half subnormals */
    case 9: return from_bits(0x7F800001u | (uint32_t)(next() & 0x803FFFFFu)); /* signalling NaN, payload */
    default: return (float)normal();
  }
}

static void test_special_values(void) {
  seed(3);
  for (int format = SLK_BF16; format <= SLK_FP16; format++)
    for (int t = 0; t < 4; t++)
      for (int density = 0; density < 2; density++) {
        Case c;
        case_new(&c, format, t & 1, t >> 1, 21, 53, 37 + 300 * density, t == 3 ? -0.75f : 1.0f, t == 2 ? 2.0f : 0.0f);
        /* a few specials per row (density 0), or many */
        size_t na = (size_t)c.M * c.K, nb = (size_t)c.K * c.N;
        for (size_t i = 0; i < na; i++)
          if (next() % (density ? 3 : 97) == 0) c.A[i] = special();
        for (size_t i = 0; i < nb; i++)
          if (next() % (density ? 3 : 97) == 0) c.B[i] = special();
        for (size_t i = 0; i < (size_t)c.M * c.N; i++)
          if (next() % 11 == 0) c.C0[i] = special();
        check_case(&c, 0);
        case_free(&c);
      }
  /* subnormal sums flushed: 2^-70 x 2^-70 = 2^-140 vanishes, and 2^-125 - 1.5 x 2^-126 is 0, not 2^-127 */
  float a[4] = {0x1p-70f, 0x1p-70f, 1.0f, 1.0f}, b[4] = {0x1p-70f, 0x1p-70f, 0x1p-125f, -0x1.8p-126f}, out[2] = {1, 1};
  if (slK_half_native(SLK_BF16)) {
    slK_gemm_half(SLK_BF16, 0, 0, 1, 1, 2, 1.0f, a, 2, b, NULL, 1, 0.0f, out, 1);
    CHECK_MSG(bits(out[0]) == 0, "2^-140 as the sum: got %a", out[0]);
    slK_gemm_half(SLK_BF16, 0, 1, 1, 1, 2, 1.0f, a + 2, 2, b + 2, NULL, 2, 0.0f, out + 1, 1);
    CHECK_MSG(out[1] == 0.0f, "2^-125 - 1.5 x 2^-126: got %a", out[1]);
    /* the odd element of a pair first: after the first pair the sum is 1; then 1 + 2^-24 rounds
    ** to 1 (ties to even) and 1 - 1 = 0, where the even element first would give 2^-24 */
    float x[4] = {1.0f, 0.0f, -1.0f, 0x1p-12f}, y[4] = {1.0f, 0.0f, 1.0f, 0x1p-12f}, acc = 5;
    slK_gemm_half(SLK_BF16, 0, 0, 1, 1, 4, 1.0f, x, 4, y, NULL, 1, 0.0f, &acc, 1);
    CHECK_MSG(bits(acc) == 0, "odd element first: got %a", acc);
  }
}

static void test_to_half_rounds_as_the_packing(void) {
  /* a product with Bh from slK_to_half equals one that rounds B itself (check_case), and
  ** the bits of a few values are the documented ones */
  float x[6] = {1.0f, 1.00390625f, 1.01171875f, -0.0f, INFINITY, 65520.0f};
  uint16_t h[6];
  slK_to_half(SLK_BF16, x, h, 6);
  CHECK_EQ_INT(h[0], 0x3F80);
  CHECK_EQ_INT(h[1], 0x3F80); /* 1 + 2^-8: the tie goes to even */
  CHECK_EQ_INT(h[2], 0x3F82); /* 1 + 3 x 2^-8: the tie goes up, to even */
  CHECK_EQ_INT(h[3], 0x8000);
  CHECK_EQ_INT(h[4], 0x7F80);
  slK_to_half(SLK_FP16, x, h, 6);
  CHECK_EQ_INT(h[0], 0x3C00);
  CHECK_EQ_INT(h[5], 0x7C00); /* 65520 rounds up past half's largest */
}

/* operands inside larger arrays (lda, ldb, ldc past the widths), as a graph's views pass them */
static void test_padded_strides(void) {
  seed(7);
  for (int format = SLK_BF16; format <= SLK_FP16; format++)
    for (int t = 0; t < 4; t++) {
      int ta = t & 1, tb = t >> 1, M = 37, N = 61, K = 45;
      int lda = (ta ? M : K) + 5, ldb = (tb ? K : N) + 3, ldc = N + 7;
      size_t na = (size_t)(ta ? K : M) * lda, nb = (size_t)(tb ? N : K) * ldb, nc = (size_t)M * ldc;
      float *A = randn(na), *B = randn(nb), *C0 = randn(nc), *got = malloc(nc * 4), *want = malloc(nc * 4);
      uint16_t *Bh = malloc(nb * 2);
      slK_to_half(format, B, Bh, nb);
      memcpy(want, C0, nc * 4);
      slK_gemm_half_reference(format, ta, tb, M, N, K, 0.5f, A, lda, B, NULL, ldb, -1.0f, want, ldc);
      for (int bh = 0; bh < 2; bh++) {
        memcpy(got, C0, nc * 4);
        slK_gemm_half(format, ta, tb, M, N, K, 0.5f, A, lda, bh ? NULL : B, bh ? Bh : NULL, ldb, -1.0f, got, ldc);
        size_t bad = 0;
        for (size_t i = 0; i < nc; i++)
          bad += !(slK_half_native(format) ? same(got[i], want[i]) : fabsf(got[i] - want[i]) < 1e-3f);
        CHECK_MSG(bad == 0, "%s %c%c padded strides%s: %zu elements differ", format == SLK_BF16 ? "bf16" : "fp16",
                  ta ? 'T' : 'N', tb ? 'T' : 'N', bh ? " (Bh)" : "", bad);
      }
      free(A), free(B), free(C0), free(got), free(want), free(Bh);
    }
}

int main(void) {
  RUN(test_to_half_matches_scalar_rounding);
  RUN(test_to_half_rounds_as_the_packing);
  RUN(test_products_against_reference);
  RUN(test_bias_and_rounding_in_the_store);
  RUN(test_prerounded_operands);
  RUN(test_special_values);
  RUN(test_padded_strides);
  return check_summary();
}
