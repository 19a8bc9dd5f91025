/* test_quant_simd.c - slQ_apply (AVX2 loops, threads, branch-free binary
** and ternary rows) equals the binary64 reference slQ_apply_reference bit
** for bit, for every format, over random values and the hard ones: NaN,
** infinities, signed zeros, subnormals, ties, the 1e-8 passthrough edge,
** blocks holding a NaN or only zeros, block sizes that do not divide the
** row and rows that do not divide the length. */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "compress/quant.h"
#include "compress/quant_simd.h"
#include "graph/mt19937.h"

/* n values: mostly log-uniform magnitudes over `span` binades around 1,
** with ties, specials and whole special blocks mixed in */
static float *values(size_t n, int span, uint32_t seed) {
  float *x = malloc(n * sizeof *x);
  const float special[] = {0.0f,          -0.0f,       1e-9f,      -1e-9f,    1e-8f,     -1e-8f,
                           1.0000001e-8f, 0x1p-149f,   -0x1p-149f, 0x1p-127f, 0x1p-126f, 0x1.fffffep-127f,
                           INFINITY,      -INFINITY,   NAN,        -NAN,      3.4e38f,   -3.4e38f,
                           0.5f,          1.5f,        2.5f,       -0.5f,     0.25f,     1.4142135f,
                           1.4142137f,    0.70710677f, 448.0f,     6.0f};
  size_t ns = sizeof special / sizeof special[0];
  slM_Mt m;
  slM_mt_seed(&m, seed);
  for (size_t i = 0; i < n; i++) {
    double u = slM_mt_double(&m);
    int e = (int)floor(-span / 2.0 + span * slM_mt_double(&m));
    double v = ldexp(1.0 + slM_mt_double(&m), e);
    if (u < 0.02) v = special[(size_t)(slM_mt_double(&m) * (double)ns)];
    else if (u < 0.10) v = ldexp(floor(slM_mt_double(&m) * 64) + 0.5, e - 6); /* halfway cases */
    else if (u < 0.14) v = ldexp(1.0, e);                                     /* powers of two */
    x[i] = (float)(slM_mt_double(&m) < 0.5 ? -v : v);
  }
  /* whole blocks of zeros, of tiny values, and one with a single NaN */
  for (size_t i = 0; i + 200 < n; i += 997) {
    size_t len = 40 + i % 50;
    for (size_t j = 0; j < len; j++)
      x[i + j] = (i / 997) % 3 == 0 ? 0.0f : (i / 997) % 3 == 1 ? 1e-30f * (float)j : x[i + j];
    if ((i / 997) % 3 == 2) x[i + len / 2] = NAN;
  }
  return x;
}

static size_t differences(const slQ_Format *f, const float *x, size_t n, size_t row, size_t *first, float *fast,
                          float *ref) {
  slQ_apply(f, x, fast, n, row);
  slQ_apply_reference(f, x, ref, n, row);
  size_t bad = 0;
  for (size_t i = 0; i < n; i++)
    if (memcmp(&fast[i], &ref[i], sizeof *fast) != 0 && !(isnan(fast[i]) && isnan(ref[i]))) {
      if (!bad) *first = i;
      bad++;
    }
  return bad;
}

static void same(const slQ_Format *f, const float *x, size_t n, size_t row) {
  char err[160];
  CHECK_MSG(slQ_check(f, err, sizeof err) == 0, "a format the test meant to be valid: %s", err);
  float *a = malloc(n * sizeof *a), *b = malloc(n * sizeof *b);
  size_t first = 0, bad = differences(f, x, n, row, &first, a, b);
  char name[96];
  slQ_describe(f, name, sizeof name);
  CHECK_MSG(bad == 0, "%s row %zu: %zu of %zu values differ, first x[%zu]=%a fast=%a reference=%a", name, row, bad, n,
            first, x[first], a[first], b[first]);
  /* in place, as the graph applies weights */
  float *c = malloc(n * sizeof *c);
  memcpy(c, x, n * sizeof *c);
  slQ_apply(f, c, c, n, row);
  size_t bad2 = 0;
  for (size_t i = 0; i < n; i++) bad2 += memcmp(&c[i], &a[i], sizeof *c) != 0 && !(isnan(c[i]) && isnan(a[i]));
  CHECK_MSG(bad2 == 0, "%s row %zu: in place differs in %zu values", name, row, bad2);
  free(a), free(b), free(c);
}

static slQ_Format format(slQ_Kind k) {
  slQ_Format f = {k, 8, 4, 4, 0, 0, 1, 16, 4, 2, 0, 1};
  if (k >= SLQ_MXINT8 && k <= SLQ_MXFP4_E2M1) f.block = 32;
  return f;
}

static const size_t ROWS[] = {0, 784, 128, 100, 37};

static void test_block_fp_equals_reference(void) {
  size_t n = 12000;
  for (int span = 8; span <= 280; span += 136) {
    float *x = values(n, span, 3 + (uint32_t)span);
    int blocks[] = {16, 7, 32, 1, 100};
    for (int w = 2; w <= 24; w += 3)
      for (int e = 2; e <= 10; e += 3)
        for (int bi = 0; bi < 5; bi++)
          for (int bias = 0; bias < 2; bias++) {
            slQ_Format f = format(SLQ_BLOCK_FP);
            f.width = w, f.exponent_width = e, f.block = blocks[bi];
            if (bias) f.has_bias = 1, f.exponent_bias = 3;
            same(&f, x, n, ROWS[(size_t)(w + bi) % 5]);
          }
    free(x);
  }
}

static void test_block_log_and_minifloat_equal_reference(void) {
  size_t n = 10000;
  float *x = values(n, 80, 5);
  int blocks[] = {16, 5, 33};
  for (int w = 2; w <= 12; w++)
    for (int bw = 1; bw <= 8; bw += 2)
      for (int bi = 0; bi < 3; bi++) {
        slQ_Format f = format(SLQ_BLOCK_LOG);
        f.width = w, f.bias_width = bw, f.block = blocks[bi];
        same(&f, x, n, ROWS[(size_t)(w + bw + bi) % 5]);
        if (w >= 3) {
          f.kind = SLQ_BLOCK_MINIFLOAT, f.exponent_width = 1 + w % 3;
          if (w - f.exponent_width - 1 >= 1) same(&f, x, n, ROWS[(size_t)bi % 5]);
        }
      }
  free(x);
}

static void test_mx_formats_equal_reference(void) {
  size_t n = 12000;
  for (int span = 10; span <= 300; span += 290) {
    float *x = values(n, span, 7 + (uint32_t)span);
    int blocks[] = {32, 16, 7, 1, 50};
    for (int k = SLQ_MXINT8; k <= SLQ_MXFP4_E2M1; k++)
      for (int bi = 0; bi < 5; bi++) {
        slQ_Format f = format((slQ_Kind)k);
        f.block = blocks[bi];
        for (size_t r = 0; r < 5; r++) same(&f, x, n, ROWS[r]);
      }
    free(x);
  }
}

static void test_elementwise_formats_equal_reference(void) {
  size_t n = 40000; /* more than one chunk of the thread split */
  float *x = values(n, 90, 9);
  for (int w = 2; w <= 12; w++) {
    slQ_Format f = format(SLQ_LOG);
    f.width = w;
    same(&f, x, n, 0);
    f.has_bias = 1, f.exponent_bias = w * 5 - 20;
    same(&f, x, n, 0);
  }
  for (int w = 4; w <= 16; w += 3) {
    slQ_Format f = format(SLQ_MINIFLOAT_IEEE);
    f.width = w, f.exponent_width = 2;
    same(&f, x, n, 0);
    f.kind = SLQ_MINIFLOAT_DENORM;
    same(&f, x, n, 0);
    f.kind = SLQ_INTEGER, f.frac_width = w / 2;
    same(&f, x, n, 0);
  }
  free(x);
}

static void test_binary_and_ternary_rows_equal_reference(void) {
  size_t n = 10000;
  float *x = values(n, 30, 11);
  for (size_t r = 0; r < 5; r++)
    for (int v = 0; v < 2; v++) {
      slQ_Format f = format(SLQ_TERNARY);
      f.scaled = v;
      same(&f, x, n, ROWS[r]);
      f.kind = SLQ_BINARY, f.bipolar = v;
      same(&f, x, n, ROWS[r]);
      f.kind = SLQ_BINARY_RESIDUAL, f.levels = 1 + (int)r % 3;
      same(&f, x, n, ROWS[r]);
    }
  /* rows without NaN or infinity, where the threshold and scale are finite and matter */
  for (size_t i = 0; i < n; i++)
    if (!isfinite(x[i])) x[i] = 0.75f;
  for (size_t r = 1; r < 5; r++) {
    slQ_Format f = format(SLQ_TERNARY);
    same(&f, x, n, ROWS[r]);
    f.scaled = 0;
    same(&f, x, n, ROWS[r]);
  }
  free(x);
}

/* enough rows of 128 for slQ_apply to split them over the thread team */
static void test_thread_split_equals_reference(void) {
  size_t n = 70000;
  float *x = values(n, 40, 13);
  slQ_Kind kinds[] = {SLQ_BLOCK_FP, SLQ_BLOCK_LOG, SLQ_MXFP8_E4M3, SLQ_MXINT8, SLQ_TERNARY, SLQ_BINARY, SLQ_INTEGER};
  for (size_t k = 0; k < sizeof kinds / sizeof kinds[0]; k++) {
    slQ_Format f = format(kinds[k]);
    same(&f, x, n, 128);
  }
  free(x);
}

/* binary and ternary take eight whole rows at a time, four columns at a
** time: every row length from 1 to 21 (the column tails) and row counts
** that leave 1 to 7 rows over, each row with its own NaN, infinity or
** neither; and the row-at-a-time block loops on short rows and blocks */
static void test_row_groups_and_tails(void) {
  float *x = values(21 * 23, 20, 17);
  for (size_t len = 1; len <= 21; len++)
    for (size_t rows = 1; rows <= 23; rows += 5) {
      size_t n = len * rows;
      slQ_Format f = format(SLQ_TERNARY);
      same(&f, x, n, len);
      f.scaled = 0;
      same(&f, x, n, len);
      f.kind = SLQ_BINARY, f.bipolar = 0;
      same(&f, x, n, len);
      f = format(SLQ_BLOCK_FP);
      f.block = (int)(1 + rows % 9);
      same(&f, x, n, len);
      f = format(SLQ_BLOCK_LOG);
      f.block = (int)(1 + rows % 11);
      same(&f, x, n, len);
    }
  free(x);
}

/* the QAT shapes: a batch of activations and a weight matrix, rows of 784 */
static void test_qat_shapes(void) {
  size_t n = 48 * 784;
  float *x = values(n, 12, 19);
  slQ_Kind kinds[] = {SLQ_TERNARY,        SLQ_BINARY,           SLQ_BLOCK_FP, SLQ_BLOCK_LOG,
                      SLQ_MINIFLOAT_IEEE, SLQ_MINIFLOAT_DENORM, SLQ_LOG};
  for (size_t k = 0; k < sizeof kinds / sizeof kinds[0]; k++) {
    slQ_Format f = format(kinds[k]);
    if (kinds[k] == SLQ_BLOCK_FP) f.exponent_width = 8;
    same(&f, x, n, 784);
  }
  free(x);
}

/* every test at the CPU's widest loops; the scalar loops (cap 0) skip the
** long block and MX sweeps, which those loops share with the wider ones */
/* slQ_simd_abs_sum_exact claims a row's sum only where adding in any order
** gives the reference's bits: rows whose exponents span just below, at and
** above the widest such range (29 - ceil(log2 len) binades), half the row
** at the top (so the sum grows to about len) and half at the bottom, with
** random mantissas. Where it claims the sum, it must equal the ordered sum
** bit for bit (the outputs alone would rarely show a last-bit difference
** of a binary64 sum), and so must the kept sum; within the range it must
** claim it; and the rows must still quantise as the reference does. */
static void test_exact_sum_boundary(void) {
  slM_Mt m;
  slM_mt_seed(&m, 23);
  const size_t lens[] = {16, 100, 784};
  size_t claimed = 0, refused = 0;
  for (size_t li = 0; li < 3; li++) {
    size_t len = lens[li], rows = 24, n = len * rows;
    float *x = malloc(n * sizeof *x);
    int log2len = 0;
    while (((size_t)1 << log2len) < len) log2len++;
    for (int span = 29 - log2len - 2; span <= 29 - log2len + 4; span++)
      for (int scale = 0; scale < 2;
           scale++) { /* near 2^-100, where the widest spans reach the subnormals, and near 1 */
        for (size_t i = 0; i < n; i++) {
          int e = i % len == 0 || (i % len > 1 && slM_mt_double(&m) < 0.5) ? 0 : -span;
          double v = ldexp(1.0 + slM_mt_double(&m), e - (scale ? 0 : 100));
          x[i] = (float)(slM_mt_double(&m) < 0.5 ? -v : v);
        }
        for (size_t r = 0; r < rows && slQ_simd_available(); r++) {
          const float *row = x + r * len;
          double ordered = 0, sum, delta, kept = 0, kept_fast;
          size_t nk = 0, nk_fast;
          for (size_t i = 0; i < len; i++) ordered += fabs((double)row[i]);
          int exact = slQ_simd_abs_sum_exact(row, len, &sum);
          CHECK_MSG(exact || span > 29 - log2len, "len %zu span %d: an exact sum refused", len, span);
          if (!exact) {
            refused++;
            continue;
          }
          claimed++;
          CHECK_MSG(memcmp(&sum, &ordered, sizeof sum) == 0, "len %zu span %d: sum %a, in order %a", len, span, sum,
                    ordered);
          delta = 0.75 * ordered / (double)len;
          for (size_t i = 0; i < len; i++)
            if (fabs((double)row[i]) > delta) kept += fabs((double)row[i]), nk++;
          slQ_simd_kept_sum(row, len, delta, &kept_fast, &nk_fast);
          CHECK_MSG(memcmp(&kept, &kept_fast, sizeof kept) == 0 && nk == nk_fast,
                    "len %zu span %d: kept %a (%zu), in order %a (%zu)", len, span, kept_fast, nk_fast, kept, nk);
        }
        slQ_Format f = format(SLQ_TERNARY);
        same(&f, x, n, len);
        f.kind = SLQ_BINARY, f.bipolar = 0;
        same(&f, x, n, len);
      }
    free(x);
  }
  CHECK_MSG(!slQ_simd_available() || (claimed > 0 && refused > 0), "rows summed across columns %zu, refused %zu",
            claimed, refused);
}

/* the float32 minifloat loop's one binary64 step, a + 1e-9 crossing into
** the next binade: in every binade the floats just below the next power of
** two, those whose distance to it is near 1e-9, and the powers of two (the
** ceiling of minifloat_denorm keeps the 1e-9 below 2^24 and loses it from
** there), both signs; formats from the labs' to the edges of the range
** where the float32 loop is used (biases up to 126 - M, exponents to 127) */
static void test_minifloat_binade_edges(void) {
  size_t cap = 40000, n = 0;
  float *x = malloc(cap * sizeof *x);
  for (int e = -27; e <= 127 && n + 64 < cap; e++) {
    float p = ldexpf(1.0f, e), ulp = ldexpf(1.0f, e - 24); /* the spacing just below p */
    x[n++] = p, x[n++] = -p;
    if (e > -126) x[n++] = nextafterf(p, INFINITY);
    for (int j = 1; j <= 6; j++) x[n++] = p - (float)j * ulp;
    double m = floor(1e-9 / (double)ulp); /* the floats whose distance to p is near 1e-9 */
    for (int j = -3; j <= 3 && e <= -6; j++)
      if (m + j >= 1 && m + j < 1 << 23) {
        float v = (float)((double)p - (m + j) * (double)ulp);
        x[n++] = v, x[n++] = -v;
      }
  }
  const int cfg[][3] = {{8, 4, 0},  {8, 4, 7},   {6, 2, 0},   {8, 5, 0},   {12, 4, 0},  {10, 7, 0},
                        {16, 8, 0}, {9, 7, 120}, {8, 4, 122}, {5, 3, -60}, {24, 4, 20}, {12, 7, 3}};
  for (size_t c = 0; c < sizeof cfg / sizeof cfg[0]; c++)
    for (int k = 0; k < 2; k++) {
      slQ_Format f = format(k ? SLQ_MINIFLOAT_IEEE : SLQ_MINIFLOAT_DENORM);
      f.width = cfg[c][0], f.exponent_width = cfg[c][1];
      if (cfg[c][2]) f.has_bias = 1, f.exponent_bias = cfg[c][2];
      char err[160];
      if (slQ_check(&f, err, sizeof err) == 0) same(&f, x, n, 0);
    }
  free(x);
}

/* the float32 log loop's thresholds: for a bias B, the floats within a few
** steps of each point where nlog2(|x| + 0.1 2^-B) steps up (|x| near
** 2 sqrt(1/2) 2^j - tau, in every binade j of the format), and near -tau,
** where the sign of x + tau turns; log formats with many biases, and
** block_log blocks whose largest value sets B (16 values: the largest
** first, then 15 from the edges for that B) */
static size_t log_edges(float *x, int B, int emax) {
  size_t n = 0;
  double tau = 0.1 * ldexp(1.0, -B);
  for (int j = -B - 1; j <= emax && j <= 127; j++) {
    float f = (float)(2 * 0.70710678118654752440 * ldexp(1.0, j) - tau);
    for (int k = 0; k < 4; k++) f = nextafterf(f, 0.0f);
    for (int k = 0; k < 9; k++, f = nextafterf(f, INFINITY)) x[n++] = f, x[n++] = -f;
  }
  float t = (float)tau;
  for (int k = 0; k < 4; k++) t = nextafterf(t, 0.0f);
  for (int k = 0; k < 9; k++, t = nextafterf(t, INFINITY)) x[n++] = -t, x[n++] = t;
  return n;
}

static void test_log_thresholds(void) {
  float *x = malloc(200000 * sizeof *x);
  for (int w = 3; w <= 9; w += 2)
    for (int B = -40; B <= 126; B += 7) {
      slQ_Format f = format(SLQ_LOG);
      f.width = w, f.has_bias = 1, f.exponent_bias = B;
      same(&f, x, log_edges(x, B, (1 << (w - 1)) - 1 - B), 0);
    }
  for (int bw = 1; bw <= 7; bw += 2) {
    size_t n = 0;
    for (int top = -30; top <= 40; top += 3) { /* block maxima 1.5 2^top: B = 2^(w-1) - 1 - clog2(max), clamped */
      float edges[8192];
      int B = 127 - (top + 1);
      B = B < 0 ? 0 : B > (1 << bw) - 1 ? (1 << bw) - 1 : B;
      size_t ne = log_edges(edges, B, 127 - B);
      for (size_t e = 0; e < ne && n + 16 <= 200000; e += 15) {
        x[n++] = ldexpf(1.5f, top);
        for (size_t k = 0; k < 15; k++)
          x[n++] = fabsf(edges[(e + k) % ne]) < ldexpf(1.5f, top) ? edges[(e + k) % ne] : 0.0f;
      }
    }
    slQ_Format f = format(SLQ_BLOCK_LOG);
    f.width = 8, f.bias_width = bw, f.block = 16;
    same(&f, x, n, 0);
  }
  free(x);
}

static void all_tests(int cap) {
  if (cap != 0) {
    RUN(test_block_fp_equals_reference);
    RUN(test_block_log_and_minifloat_equal_reference);
    RUN(test_mx_formats_equal_reference);
  }
  RUN(test_elementwise_formats_equal_reference);
  RUN(test_binary_and_ternary_rows_equal_reference);
  RUN(test_thread_split_equals_reference);
  RUN(test_row_groups_and_tails);
  RUN(test_qat_shapes);
  RUN(test_exact_sum_boundary);
  RUN(test_minifloat_binade_edges);
  RUN(test_log_thresholds);
}

int main(void) {
  int native = slQ_simd_cap(3);
  if (native < 2) check_skip("AVX2 loops", "this CPU has no AVX2: slQ_apply runs the scalar loops, still compared");
  if (native < 3)
    check_skip("AVX-512 loops", "this CPU has no AVX-512: the binary64 loops run four lanes, still compared");
  all_tests(native);
  /* the narrower loops a CPU without AVX-512 (or without AVX2) would run */
  for (int cap = native - 1; cap >= 0; cap--)
    if (slQ_simd_cap(cap) == cap && (cap == 0 || cap == 2)) all_tests(cap);
  return check_summary();
}
