/*
** attention.cu - fused attention on the GPU: FlashAttention-2 forward and backward, float32.
**
** Build: part of the CUDA module when nvcc is found. Run: the entry points
** and benchmark cases of kernels.cu call these (slG_attention_forward,
** slG_attention_backward, `bench attention_cuda_fused`, ..._train and the
** _v1 versions); tests/unit/test_kernels.c checks every version against
** the binary64 reference (and the naive CUDA path) before anything is timed.
** Contiguous batch x heads x L x dim, dim = 64, equal query and key lengths.
**
**   forward   a block owns a tile of queries and walks key tiles of 64
**             through shared memory: S = Q K^T scaled, the online softmax
**             (row max and sum reduced across the 16 threads of a row with
**             warp shuffles), O += P V; only L = m + log l is written
**             besides O.
**   backward  a block owns 64 keys (dK, dV in registers), walks the query
**             tiles, recomputes P = exp(S - L), dS = P o (dP - D) with
**             D = rowsum(dO O) computed first, and adds its part of dQ with
**             atomicAdd.
**   v1        64 queries per block, a 4 x 4 piece of S and of O per thread,
**             one float per shared-memory read (12 TFLOP/s on an H200).
**   v2 (used) 16-byte shared-memory reads without bank conflicts, 128
**             queries per block in the forward, 8 x 4 pieces per thread
**             (33 TFLOP/s forward, 31 forward and backward on an H200;
**             PyTorch's float32 scaled_dot_product_attention gives 33-35).
*/
#include "attention.h"

#include <cuda_runtime.h>
#include <math.h>
#include <stdio.h>

#define D SLG_ATTN_DIM /* features per head */
#define BR 64          /* queries per block (v1 forward, the backward's query tiles) */
#define BC 64          /* keys per tile */
#define PAD 4          /* floats at the end of each shared row */

/* Each of the 256 threads is (ty, tx) in 16 x 16: rows ty*4..ty*4+3 of the
** query tile, and keys (for S) or features (for O) tx*4..tx*4+3. The 16
** threads of one ty are one half-warp, so row statistics reduce with
** shuffles over xor offsets 1..8. */
__global__ void __launch_bounds__(256) attention_fused_fwd_v1(const float *Q, const float *K, const float *V, float *O,
                                                              float *Lse, int n, float scale, int causal) {
  extern __shared__ float smem[];
  float *Qs = smem, *Ks = Qs + BR * (D + PAD), *Vs = Ks + BC * (D + PAD), *Ps = Vs + BC * (D + PAD);
  int tx = threadIdx.x % 16, ty = threadIdx.x / 16, q0 = blockIdx.x * BR;
  long head = (long)blockIdx.y * n * D;
  for (int e = threadIdx.x; e < BR * D; e += 256) {
    int r = e / D, f = e % D;
    Qs[r * (D + PAD) + f] = q0 + r < n ? Q[head + (long)(q0 + r) * D + f] * scale : 0.0f;
  }
  float m[4], l[4], acc[4][4];
  for (int u = 0; u < 4; u++) {
    m[u] = -INFINITY, l[u] = 0;
    for (int v = 0; v < 4; v++) acc[u][v] = 0;
  }
  int kend = causal ? min(n, q0 + BR) : n;
  for (int k0 = 0; k0 < kend; k0 += BC) {
    __syncthreads();
    for (int e = threadIdx.x; e < BC * D; e += 256) {
      int r = e / D, f = e % D;
      bool in = k0 + r < n;
      Ks[r * (D + PAD) + f] = in ? K[head + (long)(k0 + r) * D + f] : 0.0f;
      Vs[r * (D + PAD) + f] = in ? V[head + (long)(k0 + r) * D + f] : 0.0f;
    }
    __syncthreads();
    float s[4][4] = {};
    for (int f = 0; f < D; f++) {
      float a[4], b[4];
      for (int u = 0; u < 4; u++) a[u] = Qs[(ty * 4 + u) * (D + PAD) + f], b[u] = Ks[(tx * 4 + u) * (D + PAD) + f];
      for (int u = 0; u < 4; u++)
        for (int v = 0; v < 4; v++) s[u][v] += a[u] * b[v];
    }
    for (int u = 0; u < 4; u++) {
      int q = q0 + ty * 4 + u;
      float mx = m[u];
      for (int v = 0; v < 4; v++) {
        int key = k0 + tx * 4 + v;
        if (key >= n || (causal && key > q)) s[u][v] = -INFINITY;
        mx = fmaxf(mx, s[u][v]);
      }
      for (int o = 1; o < 16; o <<= 1) mx = fmaxf(mx, __shfl_xor_sync(0xffffffff, mx, o));
      float safe = mx == -INFINITY ? 0.0f : mx, c = __expf(m[u] - safe), sum = 0;
      for (int v = 0; v < 4; v++) {
        float p = __expf(s[u][v] - safe);
        Ps[(ty * 4 + u) * (BC + PAD) + tx * 4 + v] = p;
        sum += p;
      }
      for (int o = 1; o < 16; o <<= 1) sum += __shfl_xor_sync(0xffffffff, sum, o);
      l[u] = c * l[u] + sum;
      m[u] = mx;
      for (int v = 0; v < 4; v++) acc[u][v] *= c;
    }
    __syncthreads();
    for (int key = 0; key < BC; key++) {
      float b[4];
      for (int v = 0; v < 4; v++) b[v] = Vs[key * (D + PAD) + tx * 4 + v];
      for (int u = 0; u < 4; u++) {
        float p = Ps[(ty * 4 + u) * (BC + PAD) + key];
        for (int v = 0; v < 4; v++) acc[u][v] += p * b[v];
      }
    }
  }
  for (int u = 0; u < 4; u++) {
    int q = q0 + ty * 4 + u;
    if (q >= n) continue;
    float inv = l[u] > 0 ? 1.0f / l[u] : 0.0f;
    for (int v = 0; v < 4; v++) O[head + (long)q * D + tx * 4 + v] = acc[u][v] * inv;
    if (tx == 0) Lse[(long)blockIdx.y * n + q] = l[u] > 0 ? m[u] + logf(l[u]) : 0.0f;
  }
}

/* D = rowsum(dO O), one warp per row */
__global__ void attention_rowdot(const float *dO, const float *O, float *Dv, long rows) {
  long row = (long)blockIdx.x * (blockDim.x / 32) + threadIdx.x / 32;
  if (row >= rows) return;
  float s = 0;
  for (int f = threadIdx.x % 32; f < D; f += 32) s += dO[row * D + f] * O[row * D + f];
  for (int o = 16; o; o >>= 1) s += __shfl_xor_sync(0xffffffff, s, o);
  if (threadIdx.x % 32 == 0) Dv[row] = s;
}

void slG_attention_rowdot(const float *dO, const float *O, float *Dv, long rows) {
  attention_rowdot<<<(unsigned)((rows + 7) / 8), 256>>>(dO, O, Dv, rows);
}

/* a block owns keys k0..k0+63; (ty, tx): keys ty*4.. for dK/dV rows and
** features tx*4..; for S and dP it is queries ty*4.. and keys tx*4.. */
__global__ void __launch_bounds__(256)
    attention_fused_bwd_v1(const float *Q, const float *K, const float *V, const float *dO, const float *Lse,
                           const float *Dv, float *dQ, float *dK, float *dV, int n, float scale, int causal) {
  extern __shared__ float smem[];
  float *Ks = smem, *Vs = Ks + BC * (D + PAD), *Qs = Vs + BC * (D + PAD), *dOs = Qs + BR * (D + PAD);
  float *Ps = dOs + BR * (D + PAD), *dSs = Ps + BR * (BC + PAD), *Ls = dSs + BR * (BC + PAD), *Ds = Ls + BR;
  int tx = threadIdx.x % 16, ty = threadIdx.x / 16, k0 = blockIdx.x * BC;
  long head = (long)blockIdx.y * n * D, lrow = (long)blockIdx.y * n;
  for (int e = threadIdx.x; e < BC * D; e += 256) {
    int r = e / D, f = e % D;
    bool in = k0 + r < n;
    Ks[r * (D + PAD) + f] = in ? K[head + (long)(k0 + r) * D + f] : 0.0f;
    Vs[r * (D + PAD) + f] = in ? V[head + (long)(k0 + r) * D + f] : 0.0f;
  }
  float dk[4][4] = {}, dv[4][4] = {};
  int qstart = causal ? k0 / BR * BR : 0;
  for (int q0 = qstart; q0 < n; q0 += BR) {
    __syncthreads();
    for (int e = threadIdx.x; e < BR * D; e += 256) {
      int r = e / D, f = e % D;
      bool in = q0 + r < n;
      Qs[r * (D + PAD) + f] = in ? Q[head + (long)(q0 + r) * D + f] : 0.0f;
      dOs[r * (D + PAD) + f] = in ? dO[head + (long)(q0 + r) * D + f] : 0.0f;
    }
    for (int r = threadIdx.x; r < BR; r += 256) {
      Ls[r] = q0 + r < n ? Lse[lrow + q0 + r] : INFINITY;
      Ds[r] = q0 + r < n ? Dv[lrow + q0 + r] : 0.0f;
    }
    __syncthreads();
    float s[4][4] = {}, dp[4][4] = {};
    for (int f = 0; f < D; f++) {
      float a[4], b[4], g[4], w[4];
      for (int u = 0; u < 4; u++) {
        a[u] = Qs[(ty * 4 + u) * (D + PAD) + f], g[u] = dOs[(ty * 4 + u) * (D + PAD) + f];
        b[u] = Ks[(tx * 4 + u) * (D + PAD) + f], w[u] = Vs[(tx * 4 + u) * (D + PAD) + f];
      }
      for (int u = 0; u < 4; u++)
        for (int v = 0; v < 4; v++) s[u][v] += a[u] * b[v], dp[u][v] += g[u] * w[v];
    }
    for (int u = 0; u < 4; u++) {
      int qr = ty * 4 + u, q = q0 + qr;
      for (int v = 0; v < 4; v++) {
        int key = k0 + tx * 4 + v;
        bool masked = key >= n || q >= n || (causal && key > q);
        float p = masked ? 0.0f : __expf(s[u][v] * scale - Ls[qr]);
        Ps[qr * (BC + PAD) + tx * 4 + v] = p;
        dSs[qr * (BC + PAD) + tx * 4 + v] = p * (dp[u][v] - Ds[qr]);
      }
    }
    __syncthreads();
    /* dV += P^T dO, dK += scale dS^T Q: keys ty*4.., features tx*4.. */
    for (int qr = 0; qr < BR; qr++) {
      float g[4], a[4];
      for (int v = 0; v < 4; v++) g[v] = dOs[qr * (D + PAD) + tx * 4 + v], a[v] = Qs[qr * (D + PAD) + tx * 4 + v];
      for (int u = 0; u < 4; u++) {
        float p = Ps[qr * (BC + PAD) + ty * 4 + u], ds = dSs[qr * (BC + PAD) + ty * 4 + u];
        for (int v = 0; v < 4; v++) dv[u][v] += p * g[v], dk[u][v] += ds * a[v];
      }
    }
    /* dQ += scale dS K: queries ty*4.., features tx*4.., added atomically across key blocks */
    float dq[4][4] = {};
    for (int key = 0; key < BC; key++) {
      float b[4];
      for (int v = 0; v < 4; v++) b[v] = Ks[key * (D + PAD) + tx * 4 + v];
      for (int u = 0; u < 4; u++) {
        float ds = dSs[(ty * 4 + u) * (BC + PAD) + key];
        for (int v = 0; v < 4; v++) dq[u][v] += ds * b[v];
      }
    }
    for (int u = 0; u < 4; u++) {
      int q = q0 + ty * 4 + u;
      if (q < n)
        for (int v = 0; v < 4; v++) atomicAdd(&dQ[head + (long)q * D + tx * 4 + v], dq[u][v] * scale);
    }
  }
  for (int u = 0; u < 4; u++) {
    int key = k0 + ty * 4 + u;
    if (key >= n) continue;
    for (int v = 0; v < 4; v++) {
      dK[head + (long)key * D + tx * 4 + v] = dk[u][v] * scale;
      dV[head + (long)key * D + tx * 4 + v] = dv[u][v];
    }
  }
}

/* ---- version 2: the same algorithm, arranged for shared-memory bandwidth.
** Version 1 reads one float per operand per product step, and its K rows
** (tx*4+v, 272 bytes apart) fall in two banks: eight-way conflicts, about
** 12 TFLOP/s on an H200. Here every shared-memory read is 16 bytes; a
** thread's keys are tx + 16 v, so the eight lanes of a quarter-warp read
** eight consecutive 16-byte bank groups of K (rows 68 floats apart), and
** the query rows it reads are the same across its half-warp (a broadcast).
** Forward: 128 queries per block, 8 query rows x 4 keys of S and 8 rows x
** 4 features of O per thread, so each step of 4 features is 12 16-byte
** reads for 128 multiply-adds. */
#define BR2 128
#define ROW4 ((D + PAD) / 4) /* a shared row in float4 */

__device__ inline float dot4(float4 a, float4 b) { return a.x * b.x + a.y * b.y + a.z * b.z + a.w * b.w; }
__device__ inline void axpy4(float4 &acc, float p, float4 v) {
  acc.x += p * v.x, acc.y += p * v.y, acc.z += p * v.z, acc.w += p * v.w;
}

/* acc[u] += sum over the BC keys of P[u][key] X[key][tx*4..tx*4+3], four
** keys per step: P's rows (R of them) and X's as float4 rows of ROW4; a
** quarter-warp reads 8 consecutive float4 of X, and P's row is the same
** across a half-warp */
template <int R>
__device__ __forceinline__ void rows_times_tile(float4 (&acc)[R], const float4 *P, const float4 *X, int tx) {
#pragma unroll 2
  for (int k4 = 0; k4 < BC / 4; k4++) {
    float4 w[4];
    for (int j = 0; j < 4; j++) w[j] = X[(k4 * 4 + j) * ROW4 + tx];
    for (int u = 0; u < R; u++) {
      float4 p = P[u * ROW4 + k4];
      axpy4(acc[u], p.x, w[0]), axpy4(acc[u], p.y, w[1]), axpy4(acc[u], p.z, w[2]), axpy4(acc[u], p.w, w[3]);
    }
  }
}

/* rows [r0, r0 + rows) of a head's x (n x D) into shared memory as float4 rows of ROW4, zero past n, times mul */
__device__ inline void load_rows(float4 *dst, const float *x, int r0, int rows, int n, float mul) {
  for (int e = threadIdx.x; e < rows * (D / 4); e += blockDim.x) {
    int r = e / (D / 4), c = e % (D / 4);
    float4 v = make_float4(0.f, 0.f, 0.f, 0.f);
    if (r0 + r < n) v = ((const float4 *)(x + (long)(r0 + r) * D))[c];
    v.x *= mul, v.y *= mul, v.z *= mul, v.w *= mul;
    dst[r * ROW4 + c] = v;
  }
}

__global__ void __launch_bounds__(256, 2) attention_fused_fwd(const float *Q, const float *K, const float *V, float *O,
                                                              float *Lse, int n, float scale, int causal) {
  extern __shared__ float4 sm4[];
  float4 *Qs = sm4, *Ks = Qs + BR2 * ROW4, *Vs = Ks + BC * ROW4, *Ps = Vs + BC * ROW4;
  float *Pf = (float *)Ps;
  int tx = threadIdx.x % 16, ty = threadIdx.x / 16, q0 = blockIdx.x * BR2;
  long head = (long)blockIdx.y * n * D;
  load_rows(Qs, Q + head, q0, BR2, n, scale);
  float m[8], l[8];
  float4 acc[8];
  for (int u = 0; u < 8; u++) m[u] = -INFINITY, l[u] = 0, acc[u] = make_float4(0.f, 0.f, 0.f, 0.f);
  int kend = causal ? min(n, q0 + BR2) : n;
  for (int k0 = 0; k0 < kend; k0 += BC) {
    __syncthreads(); /* the last tile's K, V and P are no longer read */
    load_rows(Ks, K + head, k0, BC, n, 1.0f);
    load_rows(Vs, V + head, k0, BC, n, 1.0f);
    __syncthreads();
    float s[8][4];
    for (int u = 0; u < 8; u++)
      for (int v = 0; v < 4; v++) s[u][v] = 0;
#pragma unroll 2
    for (int f = 0; f < D / 4; f++) {
      float4 b[4];
      for (int v = 0; v < 4; v++) b[v] = Ks[(tx + 16 * v) * ROW4 + f];
      for (int u = 0; u < 8; u++) {
        float4 a = Qs[(ty * 8 + u) * ROW4 + f];
        for (int v = 0; v < 4; v++) s[u][v] += dot4(a, b[v]);
      }
    }
    for (int u = 0; u < 8; u++) {
      int q = q0 + ty * 8 + u;
      float mx = m[u];
      for (int v = 0; v < 4; v++) {
        int key = k0 + tx + 16 * v;
        if (key >= n || (causal && key > q)) s[u][v] = -INFINITY;
        mx = fmaxf(mx, s[u][v]);
      }
      for (int o = 1; o < 16; o <<= 1) mx = fmaxf(mx, __shfl_xor_sync(0xffffffff, mx, o));
      float safe = mx == -INFINITY ? 0.0f : mx, c = __expf(m[u] - safe), sum = 0;
      for (int v = 0; v < 4; v++) {
        float p = __expf(s[u][v] - safe);
        Pf[(ty * 8 + u) * (D + PAD) + tx + 16 * v] = p;
        sum += p;
      }
      for (int o = 1; o < 16; o <<= 1) sum += __shfl_xor_sync(0xffffffff, sum, o);
      l[u] = c * l[u] + sum;
      m[u] = mx;
      acc[u].x *= c, acc[u].y *= c, acc[u].z *= c, acc[u].w *= c;
    }
    __syncthreads();
    rows_times_tile(acc, Ps + ty * 8 * ROW4, Vs, tx); /* O += P V */
  }
  for (int u = 0; u < 8; u++) {
    int q = q0 + ty * 8 + u;
    if (q >= n) continue;
    float inv = l[u] > 0 ? 1.0f / l[u] : 0.0f;
    float4 o = acc[u];
    o.x *= inv, o.y *= inv, o.z *= inv, o.w *= inv;
    ((float4 *)(O + head + (long)q * D))[tx] = o;
    if (tx == 0) Lse[(long)blockIdx.y * n + q] = l[u] > 0 ? m[u] + logf(l[u]) : 0.0f;
  }
}

/* Backward, version 2: a block owns 64 keys and walks the query tiles of
** 64, as version 1, with 16-byte reads throughout. For S and dP a thread
** holds queries ty*4.. and keys tx + 16 v; for dK and dV keys ty*4.. and
** features tx*4..; for dQ queries ty*4.. and features tx*4.. */
__global__ void __launch_bounds__(256, 2)
    attention_fused_bwd(const float *Q, const float *K, const float *V, const float *dO, const float *Lse,
                        const float *Dv, float *dQ, float *dK, float *dV, int n, float scale, int causal) {
  extern __shared__ float4 sm4[];
  float4 *Ks = sm4, *Vs = Ks + BC * ROW4, *Qs = Vs + BC * ROW4, *dOs = Qs + BR * ROW4;
  float4 *Ps = dOs + BR * ROW4, *dSs = Ps + BR * ROW4;
  float *Pf = (float *)Ps, *dSf = (float *)dSs, *Ls = (float *)(dSs + BR * ROW4), *Ds = Ls + BR;
  int tx = threadIdx.x % 16, ty = threadIdx.x / 16, k0 = blockIdx.x * BC;
  long head = (long)blockIdx.y * n * D, lrow = (long)blockIdx.y * n;
  load_rows(Ks, K + head, k0, BC, n, 1.0f);
  load_rows(Vs, V + head, k0, BC, n, 1.0f);
  float4 dk[4], dv[4];
  for (int u = 0; u < 4; u++) dk[u] = dv[u] = make_float4(0.f, 0.f, 0.f, 0.f);
  int qstart = causal ? k0 / BR * BR : 0;
  for (int q0 = qstart; q0 < n; q0 += BR) {
    __syncthreads(); /* the last tile's Q, dO, P and dS are no longer read */
    load_rows(Qs, Q + head, q0, BR, n, 1.0f);
    load_rows(dOs, dO + head, q0, BR, n, 1.0f);
    for (int r = threadIdx.x; r < BR; r += blockDim.x) {
      Ls[r] = q0 + r < n ? Lse[lrow + q0 + r] : INFINITY;
      Ds[r] = q0 + r < n ? Dv[lrow + q0 + r] : 0.0f;
    }
    __syncthreads();
    float s[4][4], dp[4][4];
    for (int u = 0; u < 4; u++)
      for (int v = 0; v < 4; v++) s[u][v] = dp[u][v] = 0;
#pragma unroll 2
    for (int f = 0; f < D / 4; f++) {
      float4 b[4], w[4];
      for (int v = 0; v < 4; v++) b[v] = Ks[(tx + 16 * v) * ROW4 + f], w[v] = Vs[(tx + 16 * v) * ROW4 + f];
      for (int u = 0; u < 4; u++) {
        float4 a = Qs[(ty * 4 + u) * ROW4 + f], g = dOs[(ty * 4 + u) * ROW4 + f];
        for (int v = 0; v < 4; v++) s[u][v] += dot4(a, b[v]), dp[u][v] += dot4(g, w[v]);
      }
    }
    for (int u = 0; u < 4; u++) {
      int qr = ty * 4 + u, q = q0 + qr;
      for (int v = 0; v < 4; v++) {
        int kc = tx + 16 * v, key = k0 + kc;
        bool masked = key >= n || q >= n || (causal && key > q);
        float p = masked ? 0.0f : __expf(s[u][v] * scale - Ls[qr]);
        Pf[qr * (D + PAD) + kc] = p;
        dSf[qr * (D + PAD) + kc] = p * (dp[u][v] - Ds[qr]);
      }
    }
    __syncthreads();
    /* dV += P^T dO, dK += dS^T Q (scaled at the end): keys ty*4.., features tx*4.. */
#pragma unroll 4
    for (int qr = 0; qr < BR; qr++) {
      float4 p = Ps[qr * ROW4 + ty], ds = dSs[qr * ROW4 + ty], g = dOs[qr * ROW4 + tx], a = Qs[qr * ROW4 + tx];
      axpy4(dv[0], p.x, g), axpy4(dv[1], p.y, g), axpy4(dv[2], p.z, g), axpy4(dv[3], p.w, g);
      axpy4(dk[0], ds.x, a), axpy4(dk[1], ds.y, a), axpy4(dk[2], ds.z, a), axpy4(dk[3], ds.w, a);
    }
    /* dQ += scale dS K: queries ty*4.., features tx*4.., added atomically across key blocks */
    float4 dq[4];
    for (int u = 0; u < 4; u++) dq[u] = make_float4(0.f, 0.f, 0.f, 0.f);
    rows_times_tile(dq, dSs + ty * 4 * ROW4, Ks, tx);
    for (int u = 0; u < 4; u++) {
      int q = q0 + ty * 4 + u;
      if (q >= n) continue;
      float *row = dQ + head + (long)q * D + tx * 4;
      atomicAdd(row, dq[u].x * scale), atomicAdd(row + 1, dq[u].y * scale);
      atomicAdd(row + 2, dq[u].z * scale), atomicAdd(row + 3, dq[u].w * scale);
    }
  }
  for (int u = 0; u < 4; u++) {
    int key = k0 + ty * 4 + u;
    if (key >= n) continue;
    float4 a = dk[u];
    a.x *= scale, a.y *= scale, a.z *= scale, a.w *= scale;
    ((float4 *)(dK + head + (long)key * D))[tx] = a;
    ((float4 *)(dV + head + (long)key * D))[tx] = dv[u];
  }
}

static const size_t FWD_SMEM = sizeof(float) * (BR2 + 2 * BC + BR2) * (D + PAD);
static const size_t BWD_SMEM = sizeof(float) * ((2 * BC + 4 * BR) * (D + PAD) + 2 * BR);

static const size_t FWD1_SMEM = sizeof(float) * ((BR + 2 * BC) * (D + PAD) + BR * (BC + PAD));
static const size_t BWD1_SMEM = sizeof(float) * ((2 * BC + 2 * BR) * (D + PAD) + 2 * BR * (BC + PAD) + 2 * BR);

/* version 2, or version 1 (kept beside it as the step it is measured against) */
int slG_fused_forward(int version, int bh, int n, int causal, const float *q, const float *k, const float *v, float *o,
                      float *lse, char *err, size_t errlen) {
  float scale = 1.0f / sqrtf((float)D);
  if (version == 1) {
    cudaFuncSetAttribute(attention_fused_fwd_v1, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)FWD1_SMEM);
    attention_fused_fwd_v1<<<dim3((n + BR - 1) / BR, bh), 256, FWD1_SMEM>>>(q, k, v, o, lse, n, scale, causal);
  } else {
    cudaFuncSetAttribute(attention_fused_fwd, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)FWD_SMEM);
    attention_fused_fwd<<<dim3((n + BR2 - 1) / BR2, bh), 256, FWD_SMEM>>>(q, k, v, o, lse, n, scale, causal);
  }
  cudaError_t e = cudaGetLastError();
  if (e != cudaSuccess) {
    snprintf(err, errlen, "fused attention forward: %s", cudaGetErrorString(e));
    return -1;
  }
  return 0;
}

int slG_fused_backward(int version, int bh, int n, int causal, const float *q, const float *k, const float *v,
                       const float *o, const float *dout, const float *lse, float *Dv, float *dq, float *dk, float *dv,
                       char *err, size_t errlen) {
  long rows = (long)bh * n;
  float scale = 1.0f / sqrtf((float)D);
  cudaMemset(dq, 0, sizeof(float) * rows * D);
  slG_attention_rowdot(dout, o, Dv, rows);
  dim3 grid((n + BC - 1) / BC, bh);
  if (version == 1) {
    cudaFuncSetAttribute(attention_fused_bwd_v1, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)BWD1_SMEM);
    attention_fused_bwd_v1<<<grid, 256, BWD1_SMEM>>>(q, k, v, dout, lse, Dv, dq, dk, dv, n, scale, causal);
  } else {
    cudaFuncSetAttribute(attention_fused_bwd, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)BWD_SMEM);
    attention_fused_bwd<<<grid, 256, BWD_SMEM>>>(q, k, v, dout, lse, Dv, dq, dk, dv, n, scale, causal);
  }
  cudaError_t e = cudaGetLastError();
  if (e != cudaSuccess) {
    snprintf(err, errlen, "fused attention backward: %s", cudaGetErrorString(e));
    return -1;
  }
  return 0;
}
