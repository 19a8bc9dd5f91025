/*
** attention_fa2.cu - fused attention forward, version 2 on the tensor cores: scores, P and O in registers.
**
** Build: part of the CUDA module when nvcc is found. Run: `bench
** attention_cuda_fa2_bf16 ... dim=64|80|128` and `..._train` (each row
** checks it against the CPU's naive attention before timing), and
** slG_attention_forward / _backward with SLG_ATTN_FA2_BF16, which tests/unit/test_kernels.c (`gpu`) checks against
** the binary64 reference of the same bf16-rounded inputs. Version 1 is the
** WMMA kernel of attention_tc.cu, kept beside it as the step this one is
** measured against; tests/unit/test_gpu_args.c runs this kernel's index
** arithmetic (attention_fa2_layout.h) lane by lane on the CPU, forward and
** backward.
**
** What changes from version 1, after FlashAttention-2: WMMA hides which
** lane holds which element of a product, so version 1 stores the scores
** in shared memory to run the softmax on them, and keeps O there to rescale
** it. PTX's mma.sync m16n8k16 defines the layout (attention_fa2_layout.h),
** so here
**   S = Q K^T      lands in registers: each lane holds 2 rows x 16 of a
**                  warp's 16 x 64 tile; Q's fragments are loaded once
**   softmax        the row max and the rescaling in registers, the four
**                  lanes of a row combined by two shuffles; the row sums
**                  stay per lane until the end
**   O += P V       P goes from S's registers to A's as bf16 pairs, no
**                  shared memory between the two products; O (16 x dim a
**                  warp) stays in registers for the whole walk
** and the next tile of K and V arrives by cp.async while this one is
** multiplied (two stages). Head sizes 64, 80 (the 2.7B model's) and 128.
** Fragments come from shared memory by ldmatrix (V's transposed), four
** 8 x 8 matrices an instruction. The backward (below) is built the same
** way. What it leaves for the next version: Hopper's wgmma, and dQ without
** atomics.
**
** The numbers: as version 1 (numerics §7.7), the scale and log2(e) folded
** into one factor, exp2 of the max-shifted score, P rounded to bf16 for the
** product, the row sum of the unrounded P in float32; the sums run in
** another order, within the same tolerances.
*/
#include "attention.h"
#include "attention_fa2_layout.h"

#include <cuda_bf16.h>
#include <cuda_runtime.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>

#define TQ SLG_TC_TQ
#define TK SLG_TC_TK
#define THREADS SLG_TC_THREADS
#define STAGES SLG_FA2_STAGES

typedef __nv_bfloat16 bf16;

/* rows [row0, row0 + TK) of a head's n x DIM bf16 array into shared rows of LDH, 16 bytes a cp.async; rows past n
** are filled with zeros (a source size of 0) */
template <int DIM>
__device__ void stage_async(bf16 *dst, const bf16 *src, int row0, int n) {
#if !defined(__CUDA_ARCH__) || __CUDA_ARCH__ >= 800
  for (int e = threadIdx.x; e < TK * (DIM / 8); e += THREADS) {
    int r = slG_tc_stage_row(e, DIM), c = slG_tc_stage_col(e, DIM), in = row0 + r < n;
    const bf16 *from = src + slG_tc_at(in ? row0 + r : 0, c, DIM);
    unsigned to = (unsigned)__cvta_generic_to_shared(dst + slG_tc_at(r, c, slG_tc_ldh(DIM)));
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(to), "l"(from), "r"(in ? SLG_FA2_CHUNK : 0));
  }
#endif
}

/* the 64 floats of a query tile from q0 (its L or D) into shared memory, 4 bytes a cp.async, zeros past n */
__device__ void stage_floats_async(float *dst, const float *src, int q0, int n, int first) {
#if !defined(__CUDA_ARCH__) || __CUDA_ARCH__ >= 800
  int i = threadIdx.x - first, in = q0 + i < n;
  if (i < 0 || i >= TQ) return;
  unsigned to = (unsigned)__cvta_generic_to_shared(dst + i);
  asm volatile("cp.async.ca.shared.global [%0], [%1], 4, %2;\n" ::"r"(to), "l"(src + (in ? q0 + i : 0)),
               "r"(in ? 4 : 0));
#endif
}

__device__ __forceinline__ void async_commit(void) {
#if !defined(__CUDA_ARCH__) || __CUDA_ARCH__ >= 800
  asm volatile("cp.async.commit_group;\n" ::);
#endif
}

/* wait until at most N groups of this thread's copies are still in flight */
template <int N>
__device__ __forceinline__ void async_wait(void) {
#if !defined(__CUDA_ARCH__) || __CUDA_ARCH__ >= 800
  asm volatile("cp.async.wait_group %0;\n" ::"n"(N));
#endif
}

/* d += a b: one m16n8k16 product, bf16 in, float32 sums */
__device__ __forceinline__ void mma16816(float d[4], const uint32_t a[4], const uint32_t b[2]) {
#if !defined(__CUDA_ARCH__) || __CUDA_ARCH__ >= 800
  asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, "
               "{%0, %1, %2, %3};\n"
               : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
               : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
#endif
}

/* four 8 x 8 bf16 matrices of shared memory into a lane's four registers, p the row this lane addresses
** (attention_fa2_layout.h); transposed (.trans) for an operand whose k runs down the rows */
template <bool TRANS>
__device__ __forceinline__ void ldmatrix_x4(uint32_t d[4], const bf16 *p) {
#if !defined(__CUDA_ARCH__) || __CUDA_ARCH__ >= 800
  unsigned at = (unsigned)__cvta_generic_to_shared(p);
  if (TRANS)
    asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0, %1, %2, %3}, [%4];\n"
                 : "=r"(d[0]), "=r"(d[1]), "=r"(d[2]), "=r"(d[3])
                 : "r"(at));
  else
    asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0, %1, %2, %3}, [%4];\n"
                 : "=r"(d[0]), "=r"(d[1]), "=r"(d[2]), "=r"(d[3])
                 : "r"(at));
#endif
}

/* C tiles j and j + 1 += a times the two B tiles of the ldmatrix at p (registers 0-1 and 2-3) */
template <bool TRANS>
__device__ __forceinline__ void mma_pair(float c[][4], int j, const uint32_t a[4], const bf16 *p) {
  uint32_t b[4];
  ldmatrix_x4<TRANS>(b, p);
  mma16816(c[j], a, b);
  mma16816(c[j + 1], a, b + 2);
}

/* two floats rounded to bf16 as one register, the first in the low half */
__device__ __forceinline__ uint32_t pair_round(float lo, float hi) {
  return (uint32_t)__bfloat16_as_ushort(__float2bfloat16_rn(lo)) |
         (uint32_t)__bfloat16_as_ushort(__float2bfloat16_rn(hi)) << 16;
}

template <int DIM>
__global__ void __launch_bounds__(THREADS) attention_fa2_fwd(const bf16 *Q, const bf16 *K, const bf16 *V, float *O,
                                                             float *Lse, int n, float scale2, int causal) {
#if !defined(__CUDA_ARCH__) || __CUDA_ARCH__ >= 800
  constexpr int LDH = slG_tc_ldh(DIM), KSTEPS = DIM / 16, DTILES = DIM / 8, STILES = TK / 8;
  extern __shared__ __align__(128) unsigned char smem[];
  bf16 *Qs = (bf16 *)(smem + slG_fa2_q());
  int warp = threadIdx.x / 32, lane = threadIdx.x % 32, q0 = blockIdx.x * TQ;
  long head = (long)blockIdx.y * n * DIM;
  int kend = slG_tc_key_end(n, q0, causal), tiles = (kend + TK - 1) / TK;
  /* Q and the first K and V tiles: one group */
  stage_async<DIM>(Qs, Q + head, q0, n);
  stage_async<DIM>((bf16 *)(smem + slG_fa2_k(DIM, 0)), K + head, 0, n);
  stage_async<DIM>((bf16 *)(smem + slG_fa2_v(DIM, 0)), V + head, 0, n);
  async_commit();

  /* this lane's two rows of the warp's 16 (C's floats 0-1 and 2-3), their running max and their partial sums */
  int rows[2] = {q0 + warp * 16 + slG_fa2_c_row(lane, 0), q0 + warp * 16 + slG_fa2_c_row(lane, 2)};
  float m[2] = {-INFINITY, -INFINITY}, l[2] = {0.0f, 0.0f};
  float o[DTILES][4];
#pragma unroll
  for (int j = 0; j < DTILES; j++) o[j][0] = o[j][1] = o[j][2] = o[j][3] = 0.0f;
  uint32_t qa[KSTEPS][4];

  for (int tile = 0; tile < tiles; tile++) {
    int k0 = tile * TK, stage = tile % STAGES;
    if (tile + 1 < tiles) { /* the next tile into the other stage, which the last iteration finished reading */
      stage_async<DIM>((bf16 *)(smem + slG_fa2_k(DIM, (tile + 1) % STAGES)), K + head, k0 + TK, n);
      stage_async<DIM>((bf16 *)(smem + slG_fa2_v(DIM, (tile + 1) % STAGES)), V + head, k0 + TK, n);
      async_commit();
      async_wait<1>();
    } else {
      async_wait<0>();
    }
    __syncthreads();
    const bf16 *Ks = (const bf16 *)(smem + slG_fa2_k(DIM, stage)), *Vs = (const bf16 *)(smem + slG_fa2_v(DIM, stage));
    if (tile == 0) /* Q's fragments, once */
#pragma unroll
      for (int kk = 0; kk < KSTEPS; kk++)
        ldmatrix_x4<false>(qa[kk],
                           Qs + slG_tc_at(warp * 16 + slG_fa2_ldm_row(lane), kk * 16 + slG_fa2_ldm_col(lane), LDH));

    /* S = Q K^T: B's column n is key n of the tile and its k the head dimension, so K's rows load as they lie,
    ** two tiles of 8 keys an ldmatrix */
    float s[STILES][4];
#pragma unroll
    for (int j = 0; j < STILES; j++) s[j][0] = s[j][1] = s[j][2] = s[j][3] = 0.0f;
#pragma unroll
    for (int j = 0; j < STILES; j += 2)
#pragma unroll
      for (int kk = 0; kk < KSTEPS; kk++)
        mma_pair<false>(s, j, qa[kk],
                        Ks + slG_tc_at(j * 8 + slG_fa2_ldm_k_row(lane), kk * 16 + slG_fa2_ldm_k_col(lane), LDH));

    /* the online softmax of the lane's two rows, in base 2 */
    float alpha[2];
#pragma unroll
    for (int h = 0; h < 2; h++) {
      float mx = -INFINITY;
#pragma unroll
      for (int j = 0; j < STILES; j++)
#pragma unroll
        for (int e = 0; e < 2; e++) {
          int i = 2 * h + e, key = k0 + j * 8 + slG_fa2_c_col(lane, i);
          float x = slG_tc_keep(key, rows[h], n, causal) ? s[j][i] * scale2 : -INFINITY;
          s[j][i] = x;
          mx = fmaxf(mx, x);
        }
      /* the four lanes of a row are t = 0-3 of one group: lanes 4g to 4g + 3 */
      mx = fmaxf(mx, __shfl_xor_sync(0xffffffffu, mx, 1));
      mx = fmaxf(mx, __shfl_xor_sync(0xffffffffu, mx, 2));
      float m_new = fmaxf(m[h], mx), sum = 0.0f;
      /* a row with no key yet (only past n) keeps m = -inf: alpha 1, p 0 */
      alpha[h] = m_new == -INFINITY ? 1.0f : exp2f(m[h] - m_new);
#pragma unroll
      for (int j = 0; j < STILES; j++)
#pragma unroll
        for (int e = 0; e < 2; e++) {
          int i = 2 * h + e;
          float p = m_new == -INFINITY ? 0.0f : exp2f(s[j][i] - m_new);
          s[j][i] = p;
          sum += p;
        }
      l[h] = l[h] * alpha[h] + sum;
      m[h] = m_new;
    }
#pragma unroll
    for (int j = 0; j < DTILES; j++) {
      o[j][0] *= alpha[0], o[j][1] *= alpha[0];
      o[j][2] *= alpha[1], o[j][3] *= alpha[1];
    }

    /* O += P V: P from the score registers; V's k (the key) runs down its rows, so it loads transposed */
#pragma unroll
    for (int kk = 0; kk < TK / 16; kk++) {
      uint32_t pa[4];
#pragma unroll
      for (int r = 0; r < 4; r++) {
        const float *c = s[slG_fa2_p_tile(kk, r)] + slG_fa2_p_elem(r);
        pa[r] = pair_round(c[0], c[1]);
      }
#pragma unroll
      for (int j = 0; j < DTILES; j += 2)
        mma_pair<true>(o, j, pa, Vs + slG_tc_at(kk * 16 + slG_fa2_ldm_row(lane), j * 8 + slG_fa2_ldm_col(lane), LDH));
    }
    __syncthreads(); /* every warp is done with this stage before the next iteration refills it */
  }

  /* the row sums over the four lanes of each row, then O / l and L = m ln 2 + ln l */
  const float ln2 = 0.69314718055994531f;
#pragma unroll
  for (int h = 0; h < 2; h++) {
    l[h] += __shfl_xor_sync(0xffffffffu, l[h], 1);
    l[h] += __shfl_xor_sync(0xffffffffu, l[h], 2);
    if (rows[h] >= n) continue;
    float inv = 1.0f / l[h], *out = O + head + (long)rows[h] * DIM;
#pragma unroll
    for (int j = 0; j < DTILES; j++)
      *(float2 *)(out + j * 8 + slG_fa2_c_col(lane, 2 * h)) = make_float2(o[j][2 * h] * inv, o[j][2 * h + 1] * inv);
    if (slG_fa2_t(lane) == 0) Lse[(long)blockIdx.y * n + rows[h]] = m[h] * ln2 + logf(l[h]);
  }
#endif
}

/* ------------------------------------------------------------ backward */

/* The backward's block: four warps own 64 keys, 16 each, and walk the
** query tiles of 64 (from the block's first key on under the causal mask),
** each tile's Q, dO, L and D arriving by cp.async while the last is used.
** Per tile each warp, on its 16 keys, in registers:
**   S^T = K Q^T, P^T = exp(S^T scale - L) (P recomputed from the saved
**   logsumexp), dV += P^T dO (P^T's registers as A), dP^T = V dO^T,
**   dS^T = P^T o (dP^T - D), dK += dS^T Q;
** dS^T goes to shared memory as bf16, and each warp then takes 16 of the
** 64 queries for dQ = dS K over the block's keys (dS read transposed from
** dS^T by ldmatrix), added to dQ in global memory by atomicAdd (other
** blocks add theirs). dK and dV stay in registers for the whole walk; the
** scale multiplies dQ and dK, as in version 1. */
template <int DIM>
__global__ void __launch_bounds__(THREADS)
    attention_fa2_bwd(const bf16 *Q, const bf16 *K, const bf16 *V, const bf16 *dO, const float *Lse, const float *Dv,
                      float *dQ, float *dK, float *dV, int n, float scale, int causal) {
#if !defined(__CUDA_ARCH__) || __CUDA_ARCH__ >= 800
  constexpr int LDH = slG_tc_ldh(DIM), LDP = slG_tc_ldp(), KSTEPS = DIM / 16, DTILES = DIM / 8, QTILES = TQ / 8;
  extern __shared__ __align__(128) unsigned char smem[];
#define AT(region, stage) (smem + slG_fa2_bwd(DIM, region, stage))
  const bf16 *Ks = (const bf16 *)AT(SLG_FA2_BWD_K, 0), *Vs = (const bf16 *)AT(SLG_FA2_BWD_V, 0);
  bf16 *dSs = (bf16 *)AT(SLG_FA2_BWD_DS, 0);
  const float log2e = 1.4426950408889634f, scale2 = scale * log2e;
  int warp = threadIdx.x / 32, lane = threadIdx.x % 32, k0 = blockIdx.x * TK;
  long head = (long)blockIdx.y * n * DIM, rows = (long)blockIdx.y * n;
  int qstart = slG_tc_query_start(k0, causal), tiles = (n - qstart + TQ - 1) / TQ;
  stage_async<DIM>((bf16 *)AT(SLG_FA2_BWD_K, 0), K + head, k0, n);
  stage_async<DIM>((bf16 *)AT(SLG_FA2_BWD_V, 0), V + head, k0, n);
  stage_async<DIM>((bf16 *)AT(SLG_FA2_BWD_Q, 0), Q + head, qstart, n);
  stage_async<DIM>((bf16 *)AT(SLG_FA2_BWD_DO, 0), dO + head, qstart, n);
  stage_floats_async((float *)AT(SLG_FA2_BWD_L, 0), Lse + rows, qstart, n, 0);
  stage_floats_async((float *)AT(SLG_FA2_BWD_D, 0), Dv + rows, qstart, n, TQ);
  async_commit();

  /* this lane's two keys of the warp's 16, and its part of their dK and dV rows */
  int keys[2] = {k0 + warp * 16 + slG_fa2_c_row(lane, 0), k0 + warp * 16 + slG_fa2_c_row(lane, 2)};
  float dk[DTILES][4], dv[DTILES][4];
#pragma unroll
  for (int j = 0; j < DTILES; j++)
#pragma unroll
    for (int i = 0; i < 4; i++) dk[j][i] = dv[j][i] = 0.0f;

  for (int tile = 0; tile < tiles; tile++) {
    int q0 = qstart + tile * TQ, stage = tile % STAGES;
    if (tile + 1 < tiles) {
      int next = (tile + 1) % STAGES;
      stage_async<DIM>((bf16 *)AT(SLG_FA2_BWD_Q, next), Q + head, q0 + TQ, n);
      stage_async<DIM>((bf16 *)AT(SLG_FA2_BWD_DO, next), dO + head, q0 + TQ, n);
      stage_floats_async((float *)AT(SLG_FA2_BWD_L, next), Lse + rows, q0 + TQ, n, 0);
      stage_floats_async((float *)AT(SLG_FA2_BWD_D, next), Dv + rows, q0 + TQ, n, TQ);
      async_commit();
      async_wait<1>();
    } else {
      async_wait<0>();
    }
    __syncthreads();
    const bf16 *Qs = (const bf16 *)AT(SLG_FA2_BWD_Q, stage), *dOs = (const bf16 *)AT(SLG_FA2_BWD_DO, stage);
    const float *Ls = (const float *)AT(SLG_FA2_BWD_L, stage), *Ds = (const float *)AT(SLG_FA2_BWD_D, stage);

    /* S^T = K Q^T and dP^T = V dO^T (the warp's 16 keys x 64 queries) */
    float s[QTILES][4], dp[QTILES][4];
#pragma unroll
    for (int j = 0; j < QTILES; j++)
#pragma unroll
      for (int i = 0; i < 4; i++) s[j][i] = dp[j][i] = 0.0f;
#pragma unroll
    for (int kk = 0; kk < KSTEPS; kk++) {
      uint32_t ka[4], va[4];
      ldmatrix_x4<false>(ka, Ks + slG_tc_at(warp * 16 + slG_fa2_ldm_row(lane), kk * 16 + slG_fa2_ldm_col(lane), LDH));
      ldmatrix_x4<false>(va, Vs + slG_tc_at(warp * 16 + slG_fa2_ldm_row(lane), kk * 16 + slG_fa2_ldm_col(lane), LDH));
#pragma unroll
      for (int j = 0; j < QTILES; j += 2) {
        long at = slG_tc_at(j * 8 + slG_fa2_ldm_k_row(lane), kk * 16 + slG_fa2_ldm_k_col(lane), LDH);
        mma_pair<false>(s, j, ka, Qs + at);
        mma_pair<false>(dp, j, va, dOs + at);
      }
    }

    /* P^T as the forward made it, then dS^T = P^T o (dP^T - D) in dP^T's registers */
#pragma unroll
    for (int j = 0; j < QTILES; j++) {
#pragma unroll
      for (int i = 0; i < 4; i++) {
        int c = j * 8 + slG_fa2_c_col(lane, i), q = q0 + c;
        float p = slG_tc_keep_bwd(keys[i / 2], q, n, causal) ? exp2f(s[j][i] * scale2 - Ls[c] * log2e) : 0.0f;
        s[j][i] = p;
        dp[j][i] = p * (dp[j][i] - Ds[c]);
      }
    }

    /* dV += P^T dO and dK += dS^T Q: the queries are k, so dO and Q load transposed */
#pragma unroll
    for (int kk = 0; kk < TQ / 16; kk++) {
      uint32_t pa[4], da[4];
#pragma unroll
      for (int r = 0; r < 4; r++) {
        const float *c = s[slG_fa2_p_tile(kk, r)] + slG_fa2_p_elem(r),
                    *d = dp[slG_fa2_p_tile(kk, r)] + slG_fa2_p_elem(r);
        pa[r] = pair_round(c[0], c[1]);
        da[r] = pair_round(d[0], d[1]);
      }
#pragma unroll
      for (int j = 0; j < DTILES; j += 2) {
        long at = slG_tc_at(kk * 16 + slG_fa2_ldm_row(lane), j * 8 + slG_fa2_ldm_col(lane), LDH);
        mma_pair<true>(dv, j, pa, dOs + at);
        mma_pair<true>(dk, j, da, Qs + at);
      }
    }

    /* dS^T into shared memory as bf16, for every warp's dQ */
#pragma unroll
    for (int j = 0; j < QTILES; j++)
#pragma unroll
      for (int h = 0; h < 2; h++)
        *(uint32_t *)(dSs + slG_tc_at(warp * 16 + slG_fa2_c_row(lane, 2 * h), j * 8 + slG_fa2_c_col(lane, 2 * h),
                                      LDP)) = pair_round(dp[j][2 * h], dp[j][2 * h + 1]);
    __syncthreads();

    /* dQ of queries warp * 16.. (16 x DIM) = dS K over the block's 64 keys, then added to dQ */
    float dq[DTILES][4];
#pragma unroll
    for (int j = 0; j < DTILES; j++) dq[j][0] = dq[j][1] = dq[j][2] = dq[j][3] = 0.0f;
#pragma unroll
    for (int kk = 0; kk < TK / 16; kk++) {
      uint32_t a[4];
      ldmatrix_x4<true>(a,
                        dSs + slG_tc_at(kk * 16 + slG_fa2_ldm_k_row(lane), warp * 16 + slG_fa2_ldm_k_col(lane), LDP));
#pragma unroll
      for (int j = 0; j < DTILES; j += 2)
        mma_pair<true>(dq, j, a, Ks + slG_tc_at(kk * 16 + slG_fa2_ldm_row(lane), j * 8 + slG_fa2_ldm_col(lane), LDH));
    }
#pragma unroll
    for (int h = 0; h < 2; h++) {
      int q = q0 + warp * 16 + slG_fa2_c_row(lane, 2 * h);
      if (q >= n) continue;
#pragma unroll
      for (int j = 0; j < DTILES; j++)
#pragma unroll
        for (int e = 0; e < 2; e++)
          atomicAdd(dQ + head + slG_tc_at(q, j * 8 + slG_fa2_c_col(lane, 2 * h + e), DIM), dq[j][2 * h + e] * scale);
    }
    __syncthreads(); /* this stage and dS^T are read: the next iteration may refill them */
  }
#undef AT

#pragma unroll
  for (int h = 0; h < 2; h++) {
    if (keys[h] >= n) continue;
    float *outk = dK + head + (long)keys[h] * DIM, *outv = dV + head + (long)keys[h] * DIM;
#pragma unroll
    for (int j = 0; j < DTILES; j++) {
      int c = j * 8 + slG_fa2_c_col(lane, 2 * h);
      *(float2 *)(outk + c) = make_float2(dk[j][2 * h] * scale, dk[j][2 * h + 1] * scale);
      *(float2 *)(outv + c) = make_float2(dv[j][2 * h], dv[j][2 * h + 1]);
    }
  }
#endif
}

template <int DIM>
static void launch_bwd(int bh, int n, int causal, const bf16 *q, const bf16 *k, const bf16 *v, const bf16 *dout,
                       const float *lse, const float *Dv, float *dq, float *dk, float *dv) {
  const size_t bytes = slG_fa2_bwd_bytes(DIM);
  cudaFuncSetAttribute(attention_fa2_bwd<DIM>, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)bytes);
  attention_fa2_bwd<DIM><<<dim3((n + TK - 1) / TK, bh), THREADS, bytes>>>(q, k, v, dout, lse, Dv, dq, dk, dv, n,
                                                                          1.0f / sqrtf((float)DIM), causal);
}

template <int DIM>
static void launch(int bh, int n, int causal, const bf16 *q, const bf16 *k, const bf16 *v, float *o, float *lse) {
  const size_t bytes = slG_fa2_bytes(DIM);
  cudaFuncSetAttribute(attention_fa2_fwd<DIM>, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)bytes);
  attention_fa2_fwd<DIM><<<dim3((n + TQ - 1) / TQ, bh), THREADS, bytes>>>(
      q, k, v, o, lse, n, 1.4426950408889634f / sqrtf((float)DIM), causal);
}

/* 0 when this GPU can run the kernel at this head dimension; else -1 with why */
static int usable(int dim, int backward, char *err, size_t errlen) {
  if (!slG_fa2_dim_ok(dim)) {
    snprintf(err, errlen, "the bf16 attention (version 2) is built for dim = 64, 80 and 128, got %d", dim);
    return -1;
  }
  return slG_tc_fits(backward ? "the bf16 attention (version 2) backward" : "the bf16 attention (version 2) forward",
                     dim, backward ? slG_fa2_bwd_bytes(dim) : slG_fa2_bytes(dim), err, errlen);
}

int slG_fa2_forward_bf16(int bh, int n, int dim, int causal, const void *q, const void *k, const void *v, float *o,
                         float *lse, char *err, size_t errlen) {
  if (usable(dim, 0, err, errlen)) return -1;
  if (n <= 0 || bh <= 0) return 0;
  const bf16 *Q = (const bf16 *)q, *K = (const bf16 *)k, *V = (const bf16 *)v;
  if (dim == 64) launch<64>(bh, n, causal, Q, K, V, o, lse);
  else if (dim == 80) launch<80>(bh, n, causal, Q, K, V, o, lse);
  else launch<128>(bh, n, causal, Q, K, V, o, lse);
  return slG_attention_launched("bf16 attention (version 2) forward", err, errlen);
}

int slG_fa2_backward_bf16(int bh, int n, int dim, int causal, const void *q, const void *k, const void *v,
                          const void *dout, const float *o, const float *dout32, const float *lse, float *Dv, float *dq,
                          float *dk, float *dv, char *err, size_t errlen) {
  if (usable(dim, 1, err, errlen)) return -1;
  if (n <= 0 || bh <= 0) return 0;
  slG_attention_backward_start(dq, dout32, o, Dv, (long)bh * n, dim);
  const bf16 *Q = (const bf16 *)q, *K = (const bf16 *)k, *V = (const bf16 *)v, *dO = (const bf16 *)dout;
  if (dim == 64) launch_bwd<64>(bh, n, causal, Q, K, V, dO, lse, Dv, dq, dk, dv);
  else if (dim == 80) launch_bwd<80>(bh, n, causal, Q, K, V, dO, lse, Dv, dq, dk, dv);
  else launch_bwd<128>(bh, n, causal, Q, K, V, dO, lse, Dv, dq, dk, dv);
  return slG_attention_launched("bf16 attention (version 2) backward", err, errlen);
}
