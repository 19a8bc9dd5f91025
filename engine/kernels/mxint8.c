/*
** mxint8.c - MXINT8 (numerics §5.3-5.4) decoded on the CPU, and the MXINT8
** linear layer.
**
** Build: part of the engine. tests/unit/test_kernels.c checks the decode of
** every mantissa and scale byte against the one-element reference, and the
** fused linear against decode-then-GEMM; bench/bench_kernels.c times them
** beside memcpy (`build/bench_kernels mxint8`).
**
**   v0 one element   slK_mxint8_bf16_one, the ADLS Lab 4 MXINT8 kernel's bit assembly (numerics §5.4),
**                    and slK_mxint8_f32_one, m * 2^(E-133) by ldexpf: in
**                    mxint8_one.c, below simd.c, whose portable loops
**                    decode through them; slK_mxint8_dequant_f32_ref here
**                    runs the float32 one over an array
**   v1 vectorised    16 elements at a time (simd.c): int8 -> int32 -> float
**                    (exact), scalef by E - 133 (exact: the products have
**                    at most 7 significant bits), the top half for bf16;
**                    m = -128 reproduces the +0.0 of the Lab 4 kernel's decode (numerics §5.4). Arrays of
**                    a million elements and more are cut into one part per
**                    thread of the team (parallel.c), on whole groups, so
**                    that each core streams its own share of the bandwidth
**   linear unfused   decode all of W to float32, then OpenBLAS
**   linear fused     the blocked product of gemm.c with W as its packed B
**                    operand: each KC x 48 panel is decoded as it is packed,
**                    so W stays 8.25 bits per weight in memory
*/
#include <stddef.h>

#include "kernels.h"
#include "simd.h"

void slK_mxint8_dequant_f32_ref(const int8_t *m, const uint8_t *scales, size_t n, int g, float *out) {
  for (size_t i = 0; i < n; i++) out[i] = slK_mxint8_f32_one(m[i], scales[i / (size_t)g]);
}

/* below this many elements one thread decodes: a part must outweigh waking a worker */
#define SPLIT_MIN (1u << 20)

typedef struct {
  const int8_t *m;
  const uint8_t *s;
  size_t n;
  int g, bf16, parts;
  void *out;
} Decode;

/* part p of the array: bounds on multiples of 16 groups, so each part starts
** a group and (for an aligned output) a 64-byte line */
static void decode_part(void *ctx, int part, int worker) {
  Decode *D = ctx;
  size_t unit = 16 * (size_t)D->g, units = (D->n + unit - 1) / unit;
  size_t lo = units * part / D->parts * unit, hi = units * (part + 1) / D->parts * unit;
  if (hi > D->n) hi = D->n;
  if (lo < hi) {
    if (D->bf16) slK_simd()->dequant_bf16_n(D->m + lo, D->s + lo / D->g, hi - lo, D->g, (uint16_t *)D->out + lo);
    else slK_simd()->dequant_f32_n(D->m + lo, D->s + lo / D->g, hi - lo, D->g, (float *)D->out + lo);
  }
  (void)worker;
}

static void decode(const int8_t *m, const uint8_t *scales, size_t n, int g, void *out, int bf16) {
  Decode D = {m, scales, n, g, bf16, n >= SPLIT_MIN ? slK_threads() : 1, out};
  slK_parallel(D.parts, D.parts, decode_part, &D);
}

void slK_mxint8_dequant_f32(const int8_t *m, const uint8_t *scales, size_t n, int g, float *out) {
  decode(m, scales, n, g, out, 0);
}

void slK_mxint8_dequant_bf16(const int8_t *m, const uint8_t *scales, size_t n, int g, uint16_t *out) {
  decode(m, scales, n, g, out, 1);
}

void slK_mxint8_linear(int fused, int rows, int in, int out, const float *x, const int8_t *wm, const uint8_t *ws, int g,
                       const float *bias, float *y) {
  if (fused) {
    slK_Operand a = {x, in, 1, NULL, NULL, 0, 0}, b = {NULL, 0, 0, wm, ws, g, in};
    slK_gemm_blocked(rows, out, in, 1.0f, &a, &b, 0.0f, y, out, slK_threads());
  } else {
    float *w = slK_alloc(sizeof(float) * (size_t)out * in);
    slK_mxint8_dequant_f32(wm, ws, (size_t)out * in, g, w);
    slK_sgemm(SLK_N, SLK_T, rows, out, in, 1.0f, x, in, w, in, 0.0f, y, out);
    slK_free(w);
  }
  if (bias)
    for (int r = 0; r < rows; r++)
      for (int j = 0; j < out; j++) y[(size_t)r * out + j] += bias[j];
}
