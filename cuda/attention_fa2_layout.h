/*
** attention_fa2_layout.h - the index arithmetic of the register-resident
** tensor-core attention (attention_fa2.cu): its shared memory, which
** element of a 16 x 16 x 16 product each lane holds in which register,
** and how a tile of scores becomes the left operand of the next product.
**
** Plain C that CUDA C++ compiles as constexpr functions of host and device,
** so that the kernel and tests/unit/test_gpu_args.c, a CPU emulation of the
** kernel lane by lane against PTX's own definition of the mma.sync
** fragments, run the same arithmetic: a wrong row or column here gives
** wrong numbers there, where CI can see it.
**
** The product is PTX's mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32:
** A 16 x 16 bf16, B 16 x 8 bf16, C and D 16 x 8 float32, per warp. A lane
** is a group g = lane / 4 (a row, or a column of B) and a place t = lane % 4
** in it (a pair of columns, or a pair of rows of B). Each register of A or
** B holds two bf16 that are neighbours along k; each of C's four floats is
** one element. The operands come from shared memory by ldmatrix.
*/
#ifndef SYSLAB_ATTENTION_FA2_LAYOUT_H
#define SYSLAB_ATTENTION_FA2_LAYOUT_H

#include "attention_tc_layout.h" /* the tiles, staging, key ranges and masks it shares */

enum {
  SLG_FA2_STAGES = 2, /* K and V tiles in flight: one read, the next arriving (cp.async) */
  SLG_FA2_CHUNK = 16, /* bytes a cp.async copies */
};

/* the head dimensions it is built for: 64 (the labs), 80 (the 2.7B model) and 128 */
SLG_TC_FN int slG_fa2_dim_ok(int dim) { return dim == 64 || dim == 80 || dim == 128; }

/* The shared memory: Q, then STAGES pairs of K and V tiles, each 64 rows of dim bf16 padded to slG_tc_ldh(dim) (so
** that every row starts on 16 bytes for cp.async). The byte offset of each tile and the whole. */
SLG_TC_FN size_t slG_fa2_q(void) { return 0; }
SLG_TC_FN size_t slG_fa2_k(int dim, int stage) { return (size_t)(1 + 2 * stage) * slG_tc_tile_h(dim); }
SLG_TC_FN size_t slG_fa2_v(int dim, int stage) { return (size_t)(2 + 2 * stage) * slG_tc_tile_h(dim); }
SLG_TC_FN size_t slG_fa2_bytes(int dim) { return (size_t)(1 + 2 * SLG_FA2_STAGES) * slG_tc_tile_h(dim); }

/* The backward's: K and V of the block's 64 keys, then STAGES of the query tile's Q and dO (bf16 rows as above) and
** its L and D (64 floats each), then dS^T (64 keys x 64 queries of bf16, rows of slG_tc_ldp()). */
enum { SLG_FA2_BWD_K, SLG_FA2_BWD_V, SLG_FA2_BWD_Q, SLG_FA2_BWD_DO, SLG_FA2_BWD_L, SLG_FA2_BWD_D, SLG_FA2_BWD_DS };
SLG_TC_FN size_t slG_fa2_stage_bytes(int dim) { return 2 * slG_tc_tile_h(dim) + 2 * sizeof(float) * SLG_TC_TQ; }
SLG_TC_FN size_t slG_fa2_bwd(int dim, int region, int stage) {
  return region <= SLG_FA2_BWD_V ? (size_t)region * slG_tc_tile_h(dim)
         : region == SLG_FA2_BWD_DS
             ? 2 * slG_tc_tile_h(dim) + SLG_FA2_STAGES * slG_fa2_stage_bytes(dim)
             : 2 * slG_tc_tile_h(dim) + (size_t)stage * slG_fa2_stage_bytes(dim) +
                   (region <= SLG_FA2_BWD_DO
                        ? (size_t)(region - SLG_FA2_BWD_Q) * slG_tc_tile_h(dim)
                        : 2 * slG_tc_tile_h(dim) + sizeof(float) * SLG_TC_TQ * (size_t)(region - SLG_FA2_BWD_L));
}
SLG_TC_FN size_t slG_fa2_bwd_bytes(int dim) { return slG_fa2_bwd(dim, SLG_FA2_BWD_DS, 0) + slG_tc_tile_p(); }

/* a lane's group and place */
SLG_TC_FN int slG_fa2_g(int lane) { return lane / 4; }
SLG_TC_FN int slG_fa2_t(int lane) { return lane % 4; }

/* float i (0-3) of C is C[row][col]. (Each register of A or B holds two neighbours along k, the first in the low
** half; which two is PTX's definition, which test_gpu_args.c writes out; the ldmatrix loads below put them there.) */
SLG_TC_FN int slG_fa2_c_row(int lane, int i) { return slG_fa2_g(lane) + (i / 2) * 8; }
SLG_TC_FN int slG_fa2_c_col(int lane, int i) { return slG_fa2_t(lane) * 2 + i % 2; }

/* ldmatrix.x4 loads four 8 x 8 matrices of bf16, lanes 8 i to 8 i + 7 giving the addresses of matrix i's rows; a
** lane's register i is then its A (or B) pair from matrix i. The row (from the fragment's first) and column whose
** address a lane gives:
**   Q as A (16 x 16)            matrices: rows 0-7 and 8-15 of columns 0-7, then of columns 8-15
**   V as B, two n tiles (.trans) matrices: keys 0-7 and 8-15 of columns 0-7, then of columns 8-15
**   K as B, two n tiles          matrices: keys 0-7 (n) of columns (k) 0-7 and 8-15, then keys 8-15
** The backward loads K and V as A the way Q is, Q and dO as B the ways K and V are, and dS as A (.trans) from
** dS^T the way K is: matrices of keys 0-7 of queries 0-7 and 8-15, then keys 8-15. */
SLG_TC_FN int slG_fa2_ldm_row(int lane) { return (lane / 8 % 2) * 8 + lane % 8; }
SLG_TC_FN int slG_fa2_ldm_col(int lane) { return (lane / 16) * 8; }
SLG_TC_FN int slG_fa2_ldm_k_row(int lane) { return (lane / 16) * 8 + lane % 8; }
SLG_TC_FN int slG_fa2_ldm_k_col(int lane) { return (lane / 8 % 2) * 8; }

/* P as A without a trip through shared memory: a lane's scores of key tiles 2 kk and 2 kk + 1 (two C tiles of
** 8 keys) are the 16 keys of step kk of P V. Register r of that A is the pair of floats from C tile
** slG_fa2_p_tile(kk, r), its floats slG_fa2_p_elem(r) and + 1 (the same row, the same two columns). */
SLG_TC_FN int slG_fa2_p_tile(int kk, int r) { return 2 * kk + r / 2; }
SLG_TC_FN int slG_fa2_p_elem(int r) { return (r % 2) * 2; }

#endif
