/*
** transpose16.h - the 16 x 16 transpose of 32-bit words held in sixteen
** AVX-512 registers, written once for the float32 packing of simd.c and the
** bf16 pair words of gemm_half.c. Its callers carry the AVX-512 target
** (this function's is a subset of theirs, so it inlines into them).
*/
#ifndef SYSLAB_TRANSPOSE16_H
#define SYSLAB_TRANSPOSE16_H

#include <immintrin.h>

/* r[0..15], the rows of a 16 x 16 block, transposed in place: unpack pairs,
** then shuffle within and across 128-bit lanes */
static inline __attribute__((always_inline, target("avx512f"))) void slK_transpose16(__m512 *r) {
  __m512 t[16];
#pragma GCC unroll 8
  for (int i = 0; i < 16; i += 2)
    t[i] = _mm512_unpacklo_ps(r[i], r[i + 1]), t[i + 1] = _mm512_unpackhi_ps(r[i], r[i + 1]);
#pragma GCC unroll 4
  for (int i = 0; i < 16; i += 4) {
    r[i] = _mm512_shuffle_ps(t[i], t[i + 2], 0x44);
    r[i + 1] = _mm512_shuffle_ps(t[i], t[i + 2], 0xEE);
    r[i + 2] = _mm512_shuffle_ps(t[i + 1], t[i + 3], 0x44);
    r[i + 3] = _mm512_shuffle_ps(t[i + 1], t[i + 3], 0xEE);
  }
#pragma GCC unroll 2
  for (int h = 0; h < 16; h += 8)
#pragma GCC unroll 4
    for (int i = 0; i < 4; i++) {
      t[h + i] = _mm512_shuffle_f32x4(r[h + i], r[h + i + 4], 0x88);
      t[h + i + 4] = _mm512_shuffle_f32x4(r[h + i], r[h + i + 4], 0xDD);
    }
#pragma GCC unroll 8
  for (int i = 0; i < 8; i++) {
    r[i] = _mm512_shuffle_f32x4(t[i], t[i + 8], 0x88);
    r[i + 8] = _mm512_shuffle_f32x4(t[i], t[i + 8], 0xDD);
  }
}

#endif
