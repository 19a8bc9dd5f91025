/*
** attention_tc_layout.h - the index arithmetic of the tensor-core attention
** (attention_tc.cu): its tiles, the shared-memory layouts of the forward
** and the backward, which lane owns which row, how a tile is staged, which
** keys a block visits, and the masks.
**
** Plain C that CUDA C++ compiles as constexpr functions of host and device,
** so that the kernels and tests/unit/test_gpu_args.c, a CPU emulation of
** the kernels' blocks, warps and 16 x 16 x 16 fragments on host arrays, run
** the same arithmetic rather than two copies of it: a wrong stride or
** offset here gives wrong numbers (or a misaligned fragment) there too,
** where CI can see it.
**
** A block is four warps (128 threads) that own 64 rows: queries in the
** forward, keys in the backward, 16 rows a warp; the other side is walked
** in tiles of 64. Shared rows are padded (HPAD bf16, FPAD floats) so that
** every row starts on 16 bytes, every fragment a warp loads starts on 32
** (WMMA's rule: a 256-bit aligned pointer, a leading dimension of a
** multiple of 8 bf16 or 4 floats), and rows fall on staggered banks.
*/
#ifndef SYSLAB_ATTENTION_TC_LAYOUT_H
#define SYSLAB_ATTENTION_TC_LAYOUT_H

#include <stddef.h>

#if defined(__CUDACC__)
#define SLG_TC_FN static __host__ __device__ constexpr inline
#else
#define SLG_TC_FN static inline
#endif

enum {
  SLG_TC_TQ = 64,  /* queries per tile */
  SLG_TC_TK = 64,  /* keys per tile */
  SLG_TC_HPAD = 8, /* bf16 after each bf16 row */
  SLG_TC_FPAD = 4, /* floats after each float row */
  SLG_TC_THREADS = 128,
  SLG_TC_WARP_ROWS = 16, /* a warp's rows, one fragment tall */
  SLG_TC_BF16 = 2,       /* bytes of a bf16 */
};

/* row strides in elements: bf16 rows of dim (Q, K, V, dO), float scores of a tile (S and its kin), bf16 P, float
** accumulators of dim (O, dK, dV, dQ) */
SLG_TC_FN int slG_tc_ldh(int dim) { return dim + SLG_TC_HPAD; }
SLG_TC_FN int slG_tc_lds(void) { return SLG_TC_TK + SLG_TC_FPAD; }
SLG_TC_FN int slG_tc_ldp(void) { return SLG_TC_TK + SLG_TC_HPAD; }
SLG_TC_FN int slG_tc_ldo(int dim) { return dim + SLG_TC_FPAD; }

/* bytes of one 64-row tile of each kind */
SLG_TC_FN size_t slG_tc_tile_h(int dim) { return (size_t)SLG_TC_BF16 * 64 * (size_t)slG_tc_ldh(dim); }
SLG_TC_FN size_t slG_tc_tile_s(void) { return sizeof(float) * 64 * (size_t)slG_tc_lds(); }
SLG_TC_FN size_t slG_tc_tile_p(void) { return (size_t)SLG_TC_BF16 * 64 * (size_t)slG_tc_ldp(); }
SLG_TC_FN size_t slG_tc_tile_o(int dim) { return sizeof(float) * 64 * (size_t)slG_tc_ldo(dim); }

/* The forward's shared memory, in this order: Q, K, V (bf16), S (float), P (bf16), O (float); the byte offset of
** each, and the whole (SLG_TC_FWD_BYTES) */
enum { SLG_TC_FWD_Q, SLG_TC_FWD_K, SLG_TC_FWD_V, SLG_TC_FWD_S, SLG_TC_FWD_P, SLG_TC_FWD_O, SLG_TC_FWD_BYTES };
SLG_TC_FN size_t slG_tc_fwd(int dim, int region) {
  return region <= SLG_TC_FWD_S   ? (size_t)region * slG_tc_tile_h(dim)
         : region == SLG_TC_FWD_P ? 3 * slG_tc_tile_h(dim) + slG_tc_tile_s()
         : region == SLG_TC_FWD_O ? 3 * slG_tc_tile_h(dim) + slG_tc_tile_s() + slG_tc_tile_p()
                                  : 3 * slG_tc_tile_h(dim) + slG_tc_tile_s() + slG_tc_tile_p() + slG_tc_tile_o(dim);
}

/* The backward's: K, V, Q, dO (bf16), S^T, dP^T (float), P^T then dS^T (bf16), dK, dV, dQ (float), then the query
** tile's L and D (64 floats each) */
enum {
  SLG_TC_BWD_K,
  SLG_TC_BWD_V,
  SLG_TC_BWD_Q,
  SLG_TC_BWD_DO,
  SLG_TC_BWD_ST,
  SLG_TC_BWD_DPT,
  SLG_TC_BWD_PT,
  SLG_TC_BWD_DK,
  SLG_TC_BWD_DV,
  SLG_TC_BWD_DQ,
  SLG_TC_BWD_LQ,
  SLG_TC_BWD_DQV,
  SLG_TC_BWD_BYTES
};
SLG_TC_FN size_t slG_tc_bwd(int dim, int region) {
  return region <= SLG_TC_BWD_ST   ? (size_t)region * slG_tc_tile_h(dim)
         : region <= SLG_TC_BWD_PT ? 4 * slG_tc_tile_h(dim) + (size_t)(region - SLG_TC_BWD_ST) * slG_tc_tile_s()
         : region <= SLG_TC_BWD_LQ
             ? 4 * slG_tc_tile_h(dim) + 2 * slG_tc_tile_s() + slG_tc_tile_p() +
                   (size_t)(region - SLG_TC_BWD_DK) * slG_tc_tile_o(dim)
             : 4 * slG_tc_tile_h(dim) + 2 * slG_tc_tile_s() + slG_tc_tile_p() + 3 * slG_tc_tile_o(dim) +
                   sizeof(float) * SLG_TC_TQ * (size_t)(region - SLG_TC_BWD_LQ);
}

/* the lanes of a warp: two a row, each with half of the row's columns */
SLG_TC_FN int slG_tc_row(int warp, int lane) { return warp * SLG_TC_WARP_ROWS + lane / 2; }
SLG_TC_FN int slG_tc_half(int lane) { return lane % 2; }

/* staging: item e of a tile of rows of dim bf16, 8 bf16 (16 bytes) an item: its row, and its first column */
SLG_TC_FN int slG_tc_stage_row(int e, int dim) { return e / (dim / 8); }
SLG_TC_FN int slG_tc_stage_col(int e, int dim) { return e % (dim / 8) * 8; }

/* the forward block of queries [q0, q0 + 64) visits keys [0, end); the backward block of keys from k0 visits
** query tiles from the one holding k0 (the causal mask hides the earlier ones) or from 0 */
SLG_TC_FN int slG_tc_key_end(int n, int q0, int causal) {
  return causal ? (n < q0 + SLG_TC_TQ ? n : q0 + SLG_TC_TQ) : n;
}
SLG_TC_FN int slG_tc_query_start(int k0, int causal) { return causal ? k0 / SLG_TC_TQ * SLG_TC_TQ : 0; }

/* whether a score counts: a real key, and (causal) not after the query; the backward also needs a real query */
SLG_TC_FN int slG_tc_keep(int key, int q, int n, int causal) { return key < n && !(causal && key > q); }
SLG_TC_FN int slG_tc_keep_bwd(int key, int q, int n, int causal) { return q < n && slG_tc_keep(key, q, n, causal); }

/* element offset of row r, column c of a row-major array whose rows are ld apart */
SLG_TC_FN long slG_tc_at(long r, long c, long ld) { return r * ld + c; }

#endif
