/*
** simd.h - the inner loops of the kernels folder, each in a portable C
** version and an AVX-512 version chosen at run time (simd.c).
**
** Panels. The blocked products work on packed operands: A in panels of
** SLK_MR rows (element (i, k) of a panel at a[k*MR + i]) and B in panels of
** SLK_NR columns (element (k, j) at b[k*NR + j]), zero-padded to whole
** panels, so the micro-kernel reads both with unit stride. Attention keeps
** its scores transposed, one "lane panel" of NR queries per row of keys
** (s[key*NR + lane]), so that softmax statistics run across queries, one
** vector lane per query.
*/
#ifndef SYSLAB_KERNELS_SIMD_H
#define SYSLAB_KERNELS_SIMD_H

#include <stddef.h>
#include <stdint.h>

#define SLK_MR 8
#define SLK_NR 48

typedef struct slK_Simd {
  const char *isa;
  /* C[MR x NR] (row stride ldc) = (acc ? C : 0) + A_panel * B_panel over kc */
  void (*micro)(int kc, const float *a, const float *b, float *c, long ldc, int acc);
  void (*vexp)(const float *x, float *y, size_t n);
  /* forward online softmax over one lane panel s[rows][NR] (masked = -inf),
  ** in base 2 (the scores come multiplied by log2 e): m, l are the running
  ** max and sum per lane; c receives 2^(m_old - m_new); s becomes
  ** P = 2^(s - m_new) (0 where masked) */
  void (*softmax_panel)(float *s, int rows, float *m, float *l, float *c);
  /* x[rows][NR] *= c[lane] */
  void (*scale_panel)(float *x, int rows, const float *c);
  /* backward: s[rows][NR] = 2^(s - lse[lane]) (0 where -inf), lse in base 2 */
  void (*exp_sub_panel)(float *s, int rows, const float *lse);
  /* backward: dp[rows][NR] = p * (dp - d[lane]) */
  void (*ds_panel)(const float *p, float *dp, int rows, const float *d);
  /* dst[j][i] = src[i][j] for a 48 x 48 block, both with rows of 48 floats */
  void (*transpose48)(const float *src, float *dst);
  /* MXINT8 decode of n elements sharing one scale byte e */
  void (*dequant_f32)(const int8_t *m, uint8_t e, size_t n, float *out);
  void (*dequant_bf16)(const int8_t *m, uint8_t e, size_t n, uint16_t *out);
  /* whole arrays: n elements in groups of g (16 or 32; scales[i / g]); large
  ** outputs go out by streaming stores, past the caches */
  void (*dequant_f32_n)(const int8_t *m, const uint8_t *scales, size_t n, int g, float *out);
  void (*dequant_bf16_n)(const int8_t *m, const uint8_t *scales, size_t n, int g, uint16_t *out);
  /* micro with A unpacked: element (i, k) of the 8 x kc block at a[i*ars + k*acs]
  ** (acs == 1: eight rows; otherwise ars == 1 and eight consecutive floats a step) */
  void (*micro_a)(int kc, const float *a, long ars, long acs, const float *b, float *c, long ldc, int acc);
  /* the blocked product's packing (gemm.c): mc x kc of alpha op(A), element (i, k) at a[i*rs + k*cs]
  ** (one of rs, cs is 1), into MR-row panels, zero-padded; fp16: each value rounded to half first */
  void (*pack_a)(const float *a, long rs, long cs, int mc, int kc, float alpha, int fp16, float *dst);
  /* kc x nc of op(B), element (k, j) at b[k*rs + j*cs] (or half bits at h[...]), into NR-column panels */
  void (*pack_b)(const float *b, const uint16_t *h, long rs, long cs, int kc, int nc, int fp16, float *dst);
  /* kc x nc of op(B) = W^T from k0, W's row j as MXINT8 (mantissas m + j*mrs, one scale of s per g) */
  void (*pack_mx)(const int8_t *m, const uint8_t *s, int g, long mrs, int k0, int kc, int nc, float *dst);
  /* micro on an edge panel with only its first 16 nv columns in use (nv = 1 or 2): C[MR x 16 nv] =
  ** A_panel B_panel, each element the same sums as micro's */
  void (*micro_narrow)(int kc, const float *a, const float *b, float *c, long ldc, int nv);
} slK_Simd;

/* An operand of the blocked product: element (r, c) of op(X) at
** p[r*rs + c*cs]; or, for B only, MXINT8 weights W [N x K] packed as
** mantissas m (row stride mrs) and one scale byte per g along K, so that
** op(B)(k, j) = W[j][k] is decoded while it is packed (gemm.c). With
** round = SLK_FP16 (round.h) the values are rounded to IEEE half as they
** are packed; h (B only, instead of p) holds them already as half bits,
** with the same strides. */
typedef struct slK_Operand {
  const float *p;
  long rs, cs;
  const int8_t *m;
  const uint8_t *s;
  int g;
  long mrs;
  int round;
  const uint16_t *h;
} slK_Operand;

/* the blocked float32 kernel's K per block (gemm.c; the fp16 reference of gemm_half.c follows it) */
#ifndef SLK_KC
#define SLK_KC 384
#endif

/* C = alpha op(A) op(B) + beta C with the micro-kernel, on `threads` threads */
void slK_gemm_blocked(int M, int N, int K, float alpha, const slK_Operand *A, const slK_Operand *B, float beta,
                      float *C, long ldc, int threads);

/* the loops this machine runs (AVX-512 when the CPU has it) */
const slK_Simd *slK_simd(void);

#endif
