/*
** attention_tc.cu - fused attention on the tensor cores: bf16 Q, K, V (and dO), float32 sums and softmax.
**
** Build: part of the CUDA module when nvcc is found. Run: `bench
** attention_cuda_fused_bf16` and `..._bf16_train` (dim = 64 or 128), and
** slG_attention_forward / _backward with SLG_ATTN_FUSED_BF16;
** tests/unit/test_kernels.c checks both against the binary64 reference of
** the same bf16-rounded inputs before anything is timed (the float32
** kernels of attention.cu stay the reference version).
**
** FlashAttention-2's structure with WMMA fragments (16 x 16 x 16, bf16 in,
** float32 out): a block of four warps owns 64 queries, each warp 16 of
** them, and walks the keys in tiles of 64 staged in shared memory.
**   S = Q K^T      each warp multiplies its 16 rows of Q by the tile's K^T
**                  (4 x dim/16 fragment products) into float32 S in shared
**                  memory
**   softmax        two lanes a row, 32 keys each: the scale, the mask, the
**                  running max and sum (numerics §7.1 and §7.7: the online
**                  softmax, in base 2 with log2(e) folded into the scale),
**                  P = exp2(S - m) rounded to bf16 as the tensor cores take
**                  it, and the row of the float32 accumulator O rescaled by
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
#include "attention_tc_layout.h"

#include <cuda_bf16.h>
#include <cuda_runtime.h>
#include <math.h>
#include <mma.h>
#include <stdio.h>

using namespace nvcuda;

/* tiles, padding and layouts: attention_tc_layout.h, shared with the CPU emulation of these kernels */
#define TQ SLG_TC_TQ
#define TK SLG_TC_TK
#define THREADS SLG_TC_THREADS

typedef __nv_bfloat16 bf16;

/* The shared tiles of a block (TQ = TK = 64 rows each) for head dimension
** DIM: their row strides, in elements, and their sizes in bytes: H rows of
** DIM bf16, S rows of 64 floats (scores), P rows of 64 bf16, O rows of DIM
** floats (accumulators). */
template <int DIM>
struct Tiles {
  static constexpr int LDH = slG_tc_ldh(DIM), LDS = slG_tc_lds(), LDP = slG_tc_ldp(), LDO = slG_tc_ldo(DIM);
};

/* the forward's layout in bytes from the start: Q, K, V, S, P, O */
template <int DIM>
struct Layout : Tiles<DIM> {
  static constexpr size_t Q = slG_tc_fwd(DIM, SLG_TC_FWD_Q), K = slG_tc_fwd(DIM, SLG_TC_FWD_K);
  static constexpr size_t V = slG_tc_fwd(DIM, SLG_TC_FWD_V), S = slG_tc_fwd(DIM, SLG_TC_FWD_S);
  static constexpr size_t P = slG_tc_fwd(DIM, SLG_TC_FWD_P), O = slG_tc_fwd(DIM, SLG_TC_FWD_O);
  static constexpr size_t BYTES = slG_tc_fwd(DIM, SLG_TC_FWD_BYTES);
};

/* rows [row0, row0 + rows) of a head's n x DIM bf16 array into shared rows of LDH, zeros past n, 16 bytes at a time */
template <int DIM>
__device__ void stage(bf16 *dst, const bf16 *src, int row0, int rows, int n) {
  for (int e = threadIdx.x; e < rows * (DIM / 8); e += THREADS) {
    int r = slG_tc_stage_row(e, DIM), c = slG_tc_stage_col(e, DIM);
    uint4 v = make_uint4(0, 0, 0, 0);
    if (row0 + r < n) v = *(const uint4 *)(src + slG_tc_at(row0 + r, c, DIM));
    *(uint4 *)(dst + slG_tc_at(r, c, slG_tc_ldh(DIM))) = v;
  }
}

typedef wmma::fragment<wmma::accumulator, 16, 16, 16, float> Acc;

/* acc += A B over STEPS steps of 16 along k: A (16 x 16, layout AL) from a + kk a_step, B (layout BL) from
** b + kk b_step */
template <typename AL, typename BL, int STEPS>
__device__ void mma_steps(Acc &acc, const bf16 *a, int lda, int a_step, const bf16 *b, int ldb, int b_step) {
  for (int kk = 0; kk < STEPS; kk++) {
    wmma::fragment<wmma::matrix_a, 16, 16, 16, bf16, AL> fa;
    wmma::fragment<wmma::matrix_b, 16, 16, 16, bf16, BL> fb;
    wmma::load_matrix_sync(fa, a + kk * a_step, lda);
    wmma::load_matrix_sync(fb, b + kk * b_step, ldb);
    wmma::mma_sync(acc, fa, fb, acc);
  }
}

/* acc loaded from a float row-major tile of shared memory, then A B added as above, then stored back */
template <typename AL, typename BL, int STEPS>
__device__ void mma_into(float *c, int ldc, const bf16 *a, int lda, int a_step, const bf16 *b, int ldb, int b_step) {
  Acc acc;
  wmma::load_matrix_sync(acc, c, ldc, wmma::mem_row_major);
  mma_steps<AL, BL, STEPS>(acc, a, lda, a_step, b, ldb, b_step);
  wmma::store_matrix_sync(c, acc, ldc, wmma::mem_row_major);
}

/* a warp's 16 rows of C (16 x DIM floats, rows LDO apart) += A (its 16 rows of 64 bf16, LDP apart) B (64 x DIM
** bf16, LDH apart): O += P V, dV += P^T dO, dK += dS^T Q */
template <int DIM>
__device__ void add_product(float *c, const bf16 *a, const bf16 *b) {
  typedef Tiles<DIM> T;
  for (int j = 0; j < DIM / 16; j++)
    mma_into<wmma::row_major, wmma::row_major, 64 / 16>(c + j * 16, T::LDO, a, T::LDP, 16, b + j * 16, T::LDH,
                                                        16 * T::LDH);
}

template <int DIM>
__global__ void __launch_bounds__(THREADS) attention_tc_fwd(const bf16 *Q, const bf16 *K, const bf16 *V, float *O,
                                                            float *Lse, int n, float scale2, int causal) {
#if !defined(__CUDA_ARCH__) || __CUDA_ARCH__ >= 800 /* bf16 fragments need sm_80 */
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
  int row = slG_tc_row(warp, lane), half = slG_tc_half(lane), q = q0 + row;
  float m = -INFINITY, l = 0.0f;
  int kend = slG_tc_key_end(n, q0, causal);
  for (int k0 = 0; k0 < kend; k0 += TK) {
    __syncthreads(); /* the previous tile's K and V are no longer read */
    stage<DIM>(Ks, K + head, k0, TK, n);
    stage<DIM>(Vs, V + head, k0, TK, n);
    __syncthreads();
    /* S (16 x 64 of this warp) = Q K^T */
    for (int j = 0; j < TK / 16; j++) {
      Acc s;
      wmma::fill_fragment(s, 0.0f);
      /* K^T column-major is K's rows as they lie */
      mma_steps<wmma::row_major, wmma::col_major, DIM / 16>(s, Qs + warp * 16 * L::LDH, L::LDH, 16,
                                                            Ks + j * 16 * L::LDH, L::LDH, 16);
      wmma::store_matrix_sync(Ss + warp * 16 * L::LDS + j * 16, s, L::LDS, wmma::mem_row_major);
    }
    __syncwarp();
    /* the online softmax of this lane's 32 keys, in base 2 */
    float *srow = Ss + row * L::LDS + half * 32;
    float mx = -INFINITY;
    for (int c = 0; c < 32; c++) {
      int key = k0 + half * 32 + c;
      float x = slG_tc_keep(key, q, n, causal) ? srow[c] * scale2 : -INFINITY;
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
      prow[c] = __float2bfloat16_rn(p); /* P as the tensor cores take it; the sum keeps float32 */
      sum += p;
    }
    sum += __shfl_xor_sync(0xffffffffu, sum, 1);
    l = l * alpha + sum;
    m = m_new;
    float *orow = Os + row * L::LDO + half * (DIM / 2);
    for (int d = 0; d < DIM / 2; d++) orow[d] *= alpha;
    __syncwarp();
    /* O (16 x DIM of this warp) += P V */
    add_product<DIM>(Os + warp * 16 * L::LDO, Ps + warp * 16 * L::LDP, Vs);
    __syncwarp();
  }
  if (q >= n) return;
  const float ln2 = 0.69314718055994531f;
  float inv = 1.0f / l, *orow = Os + row * L::LDO + half * (DIM / 2),
        *out = O + head + (long)q * DIM + half * (DIM / 2);
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

/* ------------------------------------------------------------ backward */

/* The backward's block: four warps own 64 keys, 16 each, and walk the
** query tiles of 64 (from the block's first key on under the causal mask).
** Per tile, each warp, on its 16 keys (transposed, so that rows are keys):
**   S^T = K Q^T, P^T = exp(S^T scale - L) (P recomputed from the saved
**   logsumexp), dV += P^T dO, dP^T = V dO^T, dS^T = P^T o (dP^T - Dq) with
**   Dq = rowsum(dO o O), dK += dS^T Q;
** then each warp takes 16 of the 64 queries for dQ = dS K over the block's
** keys (dS read column-major from dS^T) and adds them to dQ in global
** memory with atomicAdd (other blocks add theirs). dK and dV accumulate in
** shared memory; scale multiplies dQ and dK at the end, as in attention.cu. */
/* the backward's layout: K, V, Q, dO, S^T, dP^T, P^T (then dS^T), dK, dV, dQ, then L and D of the query tile */
template <int DIM>
struct BwdLayout : Tiles<DIM> {
  static constexpr size_t K = slG_tc_bwd(DIM, SLG_TC_BWD_K), V = slG_tc_bwd(DIM, SLG_TC_BWD_V);
  static constexpr size_t Q = slG_tc_bwd(DIM, SLG_TC_BWD_Q), DO = slG_tc_bwd(DIM, SLG_TC_BWD_DO);
  static constexpr size_t ST = slG_tc_bwd(DIM, SLG_TC_BWD_ST), DPT = slG_tc_bwd(DIM, SLG_TC_BWD_DPT);
  static constexpr size_t PT = slG_tc_bwd(DIM, SLG_TC_BWD_PT), DK = slG_tc_bwd(DIM, SLG_TC_BWD_DK);
  static constexpr size_t DV = slG_tc_bwd(DIM, SLG_TC_BWD_DV), DQ = slG_tc_bwd(DIM, SLG_TC_BWD_DQ);
  static constexpr size_t LQ = slG_tc_bwd(DIM, SLG_TC_BWD_LQ), DQV = slG_tc_bwd(DIM, SLG_TC_BWD_DQV);
  static constexpr size_t BYTES = slG_tc_bwd(DIM, SLG_TC_BWD_BYTES);
};

template <int DIM>
__global__ void __launch_bounds__(THREADS)
    attention_tc_bwd(const bf16 *Q, const bf16 *K, const bf16 *V, const bf16 *dO, const float *Lse, const float *Dv,
                     float *dQ, float *dK, float *dV, int n, float scale, int causal) {
#if !defined(__CUDA_ARCH__) || __CUDA_ARCH__ >= 800
  typedef BwdLayout<DIM> L;
  extern __shared__ __align__(128) unsigned char smem[];
  bf16 *Ks = (bf16 *)(smem + L::K), *Vs = (bf16 *)(smem + L::V), *Qs = (bf16 *)(smem + L::Q);
  bf16 *dOs = (bf16 *)(smem + L::DO), *Pt = (bf16 *)(smem + L::PT);
  float *St = (float *)(smem + L::ST), *dPt = (float *)(smem + L::DPT), *dKs = (float *)(smem + L::DK);
  float *dVs = (float *)(smem + L::DV), *dQs = (float *)(smem + L::DQ), *Lq = (float *)(smem + L::LQ);
  float *Dq = (float *)(smem + L::DQV);
  const float log2e = 1.4426950408889634f;
  int warp = threadIdx.x / 32, lane = threadIdx.x % 32, k0 = blockIdx.x * TK;
  long head = (long)blockIdx.y * n * DIM, rows = (long)blockIdx.y * n;
  stage<DIM>(Ks, K + head, k0, TK, n);
  stage<DIM>(Vs, V + head, k0, TK, n);
  for (int e = threadIdx.x; e < TK * L::LDO; e += THREADS) dKs[e] = 0.0f, dVs[e] = 0.0f;
  /* this lane's key (a row of the transposed tiles) and its half of the 64 queries */
  int row = slG_tc_row(warp, lane), half = slG_tc_half(lane), key = k0 + row;
  for (int q0 = slG_tc_query_start(k0, causal); q0 < n; q0 += TQ) {
    __syncthreads(); /* the previous tile's Q, dO, dS^T and dQ rows are no longer read */
    stage<DIM>(Qs, Q + head, q0, TQ, n);
    stage<DIM>(dOs, dO + head, q0, TQ, n);
    for (int i = threadIdx.x; i < TQ; i += THREADS) {
      bool in = q0 + i < n;
      Lq[i] = in ? Lse[rows + q0 + i] * log2e : INFINITY; /* a query past n: P = 0 */
      Dq[i] = in ? Dv[rows + q0 + i] : 0.0f;
    }
    __syncthreads();
    /* S^T (16 keys x 64 queries) = K Q^T and dP^T = V dO^T */
    for (int j = 0; j < TQ / 16; j++) {
      Acc st, dpt;
      wmma::fill_fragment(st, 0.0f);
      wmma::fill_fragment(dpt, 0.0f);
      mma_steps<wmma::row_major, wmma::col_major, DIM / 16>(st, Ks + warp * 16 * L::LDH, L::LDH, 16,
                                                            Qs + j * 16 * L::LDH, L::LDH, 16);
      mma_steps<wmma::row_major, wmma::col_major, DIM / 16>(dpt, Vs + warp * 16 * L::LDH, L::LDH, 16,
                                                            dOs + j * 16 * L::LDH, L::LDH, 16);
      wmma::store_matrix_sync(St + warp * 16 * L::LDS + j * 16, st, L::LDS, wmma::mem_row_major);
      wmma::store_matrix_sync(dPt + warp * 16 * L::LDS + j * 16, dpt, L::LDS, wmma::mem_row_major);
    }
    __syncwarp();
    /* P^T, as the forward made it, into Pt for dV += P^T dO */
    float *srow = St + row * L::LDS + half * 32;
    bf16 *prow = Pt + row * L::LDP + half * 32;
    for (int c = 0; c < 32; c++) {
      int q = q0 + half * 32 + c;
      float p = slG_tc_keep_bwd(key, q, n, causal) ? exp2f(srow[c] * scale * log2e - Lq[half * 32 + c]) : 0.0f;
      srow[c] = p;
      prow[c] = __float2bfloat16_rn(p);
    }
    __syncwarp();
    add_product<DIM>(dVs + warp * 16 * L::LDO, Pt + warp * 16 * L::LDP, dOs);
    __syncwarp();
    /* dS^T = P^T o (dP^T - Dq), in place of P^T, for dK += dS^T Q */
    const float *dprow = dPt + row * L::LDS + half * 32;
    for (int c = 0; c < 32; c++) prow[c] = __float2bfloat16_rn(srow[c] * (dprow[c] - Dq[half * 32 + c]));
    __syncwarp();
    add_product<DIM>(dKs + warp * 16 * L::LDO, Pt + warp * 16 * L::LDP, Qs);
    __syncthreads(); /* every warp's rows of dS^T are written */
    /* dQ, queries warp*16.. (16 x DIM) = dS (column-major view of dS^T) K over the block's 64 keys */
    for (int j = 0; j < DIM / 16; j++) {
      Acc dq;
      wmma::fill_fragment(dq, 0.0f);
      mma_steps<wmma::col_major, wmma::row_major, TK / 16>(dq, Pt + warp * 16, L::LDP, 16 * L::LDP, Ks + j * 16, L::LDH,
                                                           16 * L::LDH);
      wmma::store_matrix_sync(dQs + warp * 16 * L::LDO + j * 16, dq, L::LDO, wmma::mem_row_major);
    }
    __syncwarp();
    /* the warp's 16 query rows added to dQ: two lanes a row */
    int qr = slG_tc_row(warp, lane), q = q0 + qr;
    if (q < n) {
      const float *src = dQs + qr * L::LDO + half * (DIM / 2);
      float *dst = dQ + head + (long)q * DIM + half * (DIM / 2);
      for (int d = 0; d < DIM / 2; d++) atomicAdd(dst + d, src[d] * scale);
    }
  }
  __syncthreads();
  if (key >= n) return;
  const float *gk = dKs + row * L::LDO + half * (DIM / 2), *gv = dVs + row * L::LDO + half * (DIM / 2);
  float *outk = dK + head + (long)key * DIM + half * (DIM / 2), *outv = dV + head + (long)key * DIM + half * (DIM / 2);
  for (int d = 0; d < DIM / 2; d++) outk[d] = gk[d] * scale, outv[d] = gv[d];
#endif
}

/* Dv = rowsum(dO o O) over rows of dim floats, one warp a row */
__global__ void rowdot(const float *dO, const float *O, float *Dv, long rows, int dim) {
  long r = (long)blockIdx.x * (blockDim.x / 32) + threadIdx.x / 32;
  if (r >= rows) return;
  float s = 0;
  for (int f = threadIdx.x % 32; f < dim; f += 32) s += dO[r * dim + f] * O[r * dim + f];
  for (int o = 16; o; o >>= 1) s += __shfl_xor_sync(0xffffffffu, s, o);
  if (threadIdx.x % 32 == 0) Dv[r] = s;
}

void slG_attention_backward_start(float *dq, const float *dO, const float *O, float *Dv, long rows, int dim) {
  cudaMemset(dq, 0, sizeof(float) * rows * dim);
  rowdot<<<(unsigned)((rows + 7) / 8), 256>>>(dO, O, Dv, rows, dim);
}

int slG_attention_launched(const char *what, char *err, size_t errlen) {
  cudaError_t e = cudaGetLastError();
  if (e == cudaSuccess) return 0;
  snprintf(err, errlen, "%s: %s", what, cudaGetErrorString(e));
  return -1;
}

template <int DIM>
static void launch_bwd(int bh, int n, int causal, const bf16 *q, const bf16 *k, const bf16 *v, const bf16 *dout,
                       const float *lse, const float *Dv, float *dq, float *dk, float *dv) {
  const size_t bytes = BwdLayout<DIM>::BYTES;
  cudaFuncSetAttribute(attention_tc_bwd<DIM>, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)bytes);
  attention_tc_bwd<DIM><<<dim3((n + TK - 1) / TK, bh), THREADS, bytes>>>(q, k, v, dout, lse, Dv, dq, dk, dv, n,
                                                                         1.0f / sqrtf((float)DIM), causal);
}

/* float32 to bf16, round to nearest even */
__global__ void to_bf16_rn(const float *x, bf16 *y, size_t n) {
  for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x)
    y[i] = __float2bfloat16_rn(x[i]);
}

void slG_attention_to_bf16(const float *x, void *out, size_t n) {
  if (n) to_bf16_rn<<<(unsigned)(n / 256 + 1 < 65535 ? n / 256 + 1 : 65535), 256>>>(x, (bf16 *)out, n);
}

int slG_tc_fits(const char *what, int dim, size_t bytes, char *err, size_t errlen) {
  int dev = 0, major = 0, most = 0;
  cudaGetDevice(&dev);
  if (cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, dev) != cudaSuccess || major < 8) {
    cudaGetLastError();
    snprintf(err, errlen, "%s needs compute capability 8.0 or later (this GPU: %d.x)", what, major);
    return -1;
  }
  cudaDeviceGetAttribute(&most, cudaDevAttrMaxSharedMemoryPerBlockOptin, dev);
  if ((size_t)most < bytes) {
    snprintf(err, errlen, "%s at dim %d needs %zu bytes of shared memory a block; this GPU allows %d", what, dim, bytes,
             most);
    return -1;
  }
  return 0;
}

/* 0 when the forward (or the backward) can run this head dimension on this GPU; else -1 with why */
static int usable(int dim, int backward, char *err, size_t errlen) {
  if (dim != 64 && dim != 128) {
    snprintf(err, errlen, "the bf16 tensor-core attention is built for dim = 64 and 128, got %d", dim);
    return -1;
  }
  size_t need = backward ? (dim == 64 ? BwdLayout<64>::BYTES : BwdLayout<128>::BYTES)
                         : (dim == 64 ? Layout<64>::BYTES : Layout<128>::BYTES);
  return slG_tc_fits(backward ? "the bf16 tensor-core attention backward" : "the bf16 tensor-core attention forward",
                     dim, need, err, errlen);
}

int slG_fused_forward_bf16(int bh, int n, int dim, int causal, const void *q, const void *k, const void *v, float *o,
                           float *lse, char *err, size_t errlen) {
  if (usable(dim, 0, err, errlen)) return -1;
  if (n <= 0 || bh <= 0) return 0;
  const bf16 *Q = (const bf16 *)q, *K = (const bf16 *)k, *V = (const bf16 *)v;
  if (dim == 64) launch<64>(bh, n, causal, Q, K, V, o, lse);
  else launch<128>(bh, n, causal, Q, K, V, o, lse);
  return slG_attention_launched("bf16 fused attention forward", err, errlen);
}

int slG_fused_backward_bf16(int bh, int n, int dim, int causal, const void *q, const void *k, const void *v,
                            const void *dout, const float *o, const float *dout32, const float *lse, float *Dv,
                            float *dq, float *dk, float *dv, char *err, size_t errlen) {
  if (usable(dim, 1, err, errlen)) return -1;
  if (n <= 0 || bh <= 0) return 0;
  slG_attention_backward_start(dq, dout32, o, Dv, (long)bh * n, dim);
  const bf16 *Q = (const bf16 *)q, *K = (const bf16 *)k, *V = (const bf16 *)v, *dO = (const bf16 *)dout;
  if (dim == 64) launch_bwd<64>(bh, n, causal, Q, K, V, dO, lse, Dv, dq, dk, dv);
  else launch_bwd<128>(bh, n, causal, Q, K, V, dO, lse, Dv, dq, dk, dv);
  return slG_attention_launched("bf16 fused attention backward", err, errlen);
}
