/*
** attention_tc.cu - fused attention forward on the tensor cores: bf16 Q, K, V, float32 sums and softmax.
**
** Build: part of the CMake build when nvcc is found. Run: `bench
** attention_cuda_fused_bf16` (dim = 64 or 128) and slG_attention_forward
** with SLG_ATTN_FUSED_BF16; tests/unit/test_kernels.c checks it against the
** binary64 reference of the same bf16-rounded inputs before anything is
** timed (the float32 kernels of attention.cu stay the reference version).
**
** FlashAttention-2's structure with WMMA fragments (16 x 16 x 16, bf16 in,
** float32 out): a block of four warps owns 64 queries, each warp 16 of
** them, and walks the keys in tiles of 64 staged in shared memory.
**   S = Q K^T      each warp multiplies its 16 rows of Q by the tile's K^T
**                  (4 x dim/16 fragment products) into float32 S in shared
**                  memory
**   softmax        two lanes a row, 32 keys each: the scale, the mask, the
**                  running max and sum (numerics §7: the online softmax,
**                  in base 2 with log2(e) folded into the scale), P = exp2(S
**                  - m) rounded to bf16 as the tensor cores take it, and
**                  the row of the float32 accumulator O rescaled by
**                  exp2(m_old - m_new)
**   O += P V       4 x dim/16 fragment products added to O, which lives in
**                  shared memory between tiles so that the rescaling above
**                  can reach its rows (a WMMA accumulator's layout is
**                  opaque)
** At the end each row is divided by its sum and L = m ln 2 + ln(l) is kept
** for the backward, as attention.cu keeps it. What this version leaves for
** the next: O in registers (mma.sync with a known fragment layout, so the
** rescaling needs no trip through shared memory), K and V tiles loaded
** asynchronously (cp.async) while the previous tile is multiplied, and
** Hopper's wgmma; with them FlashAttention-2 reaches some 70% of the
** tensor cores' peak.
*/
#include "attention.h"

#include <cuda_bf16.h>
#include <cuda_runtime.h>
#include <math.h>
#include <mma.h>
#include <stdio.h>

using namespace nvcuda;

#define TQ 64      /* queries per block: four warps of 16 */
#define TK 64      /* keys per tile */
#define HPAD 8     /* bf16 at the end of each shared row: rows stay 32-byte aligned, banks staggered */
#define FPAD 4     /* floats at the end of each float row */
#define THREADS 128

typedef __nv_bfloat16 bf16;

/* the shared-memory layout of one block, in bytes from the start, for head dimension DIM */
template <int DIM>
struct Layout {
  static const int LDH = DIM + HPAD, LDS = TK + FPAD, LDP = TK + HPAD, LDO = DIM + FPAD;
  static const size_t Q = 0, K = Q + sizeof(bf16) * TQ * LDH, V = K + sizeof(bf16) * TK * LDH;
  static const size_t S = V + sizeof(bf16) * TK * LDH, P = S + sizeof(float) * TQ * LDS;
  static const size_t O = P + sizeof(bf16) * TQ * LDP, BYTES = O + sizeof(float) * TQ * LDO;
};

/* rows [row0, row0 + rows) of a head's n x DIM bf16 array into shared rows of LDH, zeros past n, 16 bytes at a time */
template <int DIM>
__device__ void stage(bf16 *dst, const bf16 *src, int row0, int rows, int n) {
  const int per_row = DIM / 8, LDH = DIM + HPAD;
  for (int e = threadIdx.x; e < rows * per_row; e += THREADS) {
    int r = e / per_row, c = (e % per_row) * 8;
    uint4 v = make_uint4(0, 0, 0, 0);
    if (row0 + r < n) v = *(const uint4 *)(src + (long)(row0 + r) * DIM + c);
    *(uint4 *)(dst + r * LDH + c) = v;
  }
}

/* acc += A B over STEPS steps of 16 along k: A row-major (16 x 16 from a + 16 kk), B in layout BL from b + kk b_step */
template <typename BL, int STEPS>
__device__ void mma_steps(wmma::fragment<wmma::accumulator, 16, 16, 16, float> &acc, const bf16 *a, int lda,
                          const bf16 *b, int ldb, int b_step) {
  for (int kk = 0; kk < STEPS; kk++) {
    wmma::fragment<wmma::matrix_a, 16, 16, 16, bf16, wmma::row_major> fa;
    wmma::fragment<wmma::matrix_b, 16, 16, 16, bf16, BL> fb;
    wmma::load_matrix_sync(fa, a + kk * 16, lda);
    wmma::load_matrix_sync(fb, b + kk * b_step, ldb);
    wmma::mma_sync(acc, fa, fb, acc);
  }
}

template <int DIM>
__global__ void __launch_bounds__(THREADS) attention_tc_fwd(const bf16 *Q, const bf16 *K, const bf16 *V, float *O,
                                                            float *Lse, int n, float scale2, int causal) {
#if !defined(__CUDA_ARCH__) || __CUDA_ARCH__ >= 800   /* bf16 fragments need sm_80 */
  typedef Layout<DIM> L;
  extern __shared__ __align__(128) unsigned char smem[];
  bf16 *Qs = (bf16 *)(smem + L::Q), *Ks = (bf16 *)(smem + L::K), *Vs = (bf16 *)(smem + L::V);
  float *Ss = (float *)(smem + L::S), *Os = (float *)(smem + L::O);
  bf16 *Ps = (bf16 *)(smem + L::P);
  int warp = threadIdx.x / 32, lane = threadIdx.x % 32, q0 = blockIdx.x * TQ;
  long head = (long)blockIdx.y * n * DIM;
  stage<DIM>(Qs, Q + head, q0, TQ, n);
  for (int e = threadIdx.x; e < TQ * L::LDO; e += THREADS) Os[e] = 0.0f;
  /* this lane's row of the warp's 16 and its half of the columns */
  int row = warp * 16 + lane / 2, half = lane % 2, q = q0 + row;
  float m = -INFINITY, l = 0.0f;
  int kend = causal ? min(n, q0 + TQ) : n;
  for (int k0 = 0; k0 < kend; k0 += TK) {
    __syncthreads();   /* the previous tile's K and V are no longer read */
    stage<DIM>(Ks, K + head, k0, TK, n);
    stage<DIM>(Vs, V + head, k0, TK, n);
    __syncthreads();
    /* S (16 x 64 of this warp) = Q K^T */
    for (int j = 0; j < TK / 16; j++) {
      wmma::fragment<wmma::accumulator, 16, 16, 16, float> s;
      wmma::fill_fragment(s, 0.0f);
      /* K^T column-major is K's rows as they lie */
      mma_steps<wmma::col_major, DIM / 16>(s, Qs + warp * 16 * L::LDH, L::LDH, Ks + j * 16 * L::LDH, L::LDH, 16);
      wmma::store_matrix_sync(Ss + warp * 16 * L::LDS + j * 16, s, L::LDS, wmma::mem_row_major);
    }
    __syncwarp();
    /* the online softmax of this lane's 32 keys, in base 2 */
    float *srow = Ss + row * L::LDS + half * 32;
    float mx = -INFINITY;
    for (int c = 0; c < 32; c++) {
      int key = k0 + half * 32 + c;
      float x = key < n && !(causal && key > q) ? srow[c] * scale2 : -INFINITY;
      srow[c] = x;
      mx = fmaxf(mx, x);
    }
    mx = fmaxf(mx, __shfl_xor_sync(0xffffffffu, mx, 1));
    float m_new = fmaxf(m, mx);
    /* a row with no key yet (only past n) keeps m = -inf: alpha 1, p 0 */
    float alpha = m_new == -INFINITY ? 1.0f : exp2f(m - m_new), sum = 0.0f;
    bf16 *prow = Ps + row * L::LDP + half * 32;
    for (int c = 0; c < 32; c++) {
      float p = m_new == -INFINITY ? 0.0f : exp2f(srow[c] - m_new);
      prow[c] = __float2bfloat16_rn(p);   /* P as the tensor cores take it; the sum keeps float32 */
      sum += p;
    }
    sum += __shfl_xor_sync(0xffffffffu, sum, 1);
    l = l * alpha + sum;
    m = m_new;
    float *orow = Os + row * L::LDO + half * (DIM / 2);
    for (int d = 0; d < DIM / 2; d++) orow[d] *= alpha;
    __syncwarp();
    /* O (16 x DIM of this warp) += P V */
    for (int j = 0; j < DIM / 16; j++) {
      wmma::fragment<wmma::accumulator, 16, 16, 16, float> o;
      wmma::load_matrix_sync(o, Os + warp * 16 * L::LDO + j * 16, L::LDO, wmma::mem_row_major);
      mma_steps<wmma::row_major, TK / 16>(o, Ps + warp * 16 * L::LDP, L::LDP, Vs + j * 16, L::LDH, 16 * L::LDH);
      wmma::store_matrix_sync(Os + warp * 16 * L::LDO + j * 16, o, L::LDO, wmma::mem_row_major);
    }
    __syncwarp();
  }
  if (q >= n) return;
  const float ln2 = 0.69314718055994531f;
  float inv = 1.0f / l, *orow = Os + row * L::LDO + half * (DIM / 2), *out = O + head + (long)q * DIM + half * (DIM / 2);
  for (int d = 0; d < DIM / 2; d += 4)
    *(float4 *)(out + d) = make_float4(orow[d] * inv, orow[d + 1] * inv, orow[d + 2] * inv, orow[d + 3] * inv);
  if (half == 0) Lse[(long)blockIdx.y * n + q] = m * ln2 + logf(l);
#endif
}

template <int DIM>
static int launch(int bh, int n, int causal, const bf16 *q, const bf16 *k, const bf16 *v, float *o, float *lse) {
  const size_t bytes = Layout<DIM>::BYTES;
  /* scale and log2(e) in one factor: exp2(x scale log2 e) = exp(x scale) */
  float scale2 = 1.4426950408889634f / sqrtf((float)DIM);
  cudaFuncSetAttribute(attention_tc_fwd<DIM>, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)bytes);
  attention_tc_fwd<DIM><<<dim3((n + TQ - 1) / TQ, bh), THREADS, bytes>>>(q, k, v, o, lse, n, scale2, causal);
  return 0;
}

/* float32 to bf16, round to nearest even (the inputs of the float32 entry below) */
__global__ void to_bf16_rn(const float *x, bf16 *y, size_t n) {
  for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x)
    y[i] = __float2bfloat16_rn(x[i]);
}

void slG_attention_to_bf16(const float *x, void *out, size_t n) {
  if (n) to_bf16_rn<<<(unsigned)(n / 256 + 1 < 65535 ? n / 256 + 1 : 65535), 256>>>(x, (bf16 *)out, n);
}

int slG_fused_forward_bf16_f32(int bh, int n, int dim, int causal, const float *q, const float *k, const float *v,
                               void *halves, float *o, float *lse, char *err, size_t errlen) {
  size_t nx = (size_t)bh * n * dim;
  bf16 *h = (bf16 *)halves;
  slG_attention_to_bf16(q, h, nx), slG_attention_to_bf16(k, h + nx, nx), slG_attention_to_bf16(v, h + 2 * nx, nx);
  return slG_fused_forward_bf16(bh, n, dim, causal, h, h + nx, h + 2 * nx, o, lse, err, errlen);
}

int slG_fused_forward_bf16(int bh, int n, int dim, int causal, const void *q, const void *k, const void *v, float *o,
                           float *lse, char *err, size_t errlen) {
  if (dim != 64 && dim != 128) {
    snprintf(err, errlen, "the bf16 tensor-core attention is built for dim = 64 and 128, got %d", dim);
    return -1;
  }
  int dev = 0, major = 0;
  cudaGetDevice(&dev);
  if (cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, dev) != cudaSuccess || major < 8) {
    cudaGetLastError();
    snprintf(err, errlen, "the bf16 tensor-core attention needs compute capability 8.0 or later (this GPU: %d.x)", major);
    return -1;
  }
  if (n <= 0 || bh <= 0) return 0;
  const bf16 *Q = (const bf16 *)q, *K = (const bf16 *)k, *V = (const bf16 *)v;
  if (dim == 64) launch<64>(bh, n, causal, Q, K, V, o, lse);
  else launch<128>(bh, n, causal, Q, K, V, o, lse);
  cudaError_t e = cudaGetLastError();
  if (e != cudaSuccess) {
    snprintf(err, errlen, "bf16 fused attention forward: %s", cudaGetErrorString(e));
    return -1;
  }
  return 0;
}
