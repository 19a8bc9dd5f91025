/*
** kernels.h - compute on plain arrays: the CPU's kernels, the thread
** team, counted memory, the benchmark harness and the machine's roofs.
** Some kernels have headers of their own beside it (gemm_half.h, round.h,
** softmax.h, reduce.h, activation.h, parallel.h, simd.h, blas.h,
** attention_half.h), and the GPU has device.h.
**
** Callers pass raw float arrays, sizes and strides, never tensors or
** models, so a kernel can be tested and timed on its own. Each operation
** has a naive reference and faster versions beside it (docs/kernels.md):
**
**   gemm.c       sgemm: naive, blocked (packed panels, AVX-512 or portable
**                micro-kernel, two threads), OpenBLAS; slK_sgemm dispatches
**   gemm_half.c  products with bf16 or fp16 inputs and float32 sums
**                (gemm_half.h): vdpbf16ps, or the blocked kernel with
**                rounding in its packing, or round-then-sgemm
**   round.c      float32 rounded to bfloat16 and IEEE half
**   simd.c       the micro-kernel, vector exp and the other inner loops,
**                compiled for AVX-512 by target attributes and chosen at run
**                time, with a portable version of each
**   attention.c  scaled dot-product attention: naive op by op, fused
**                FlashAttention-2 forward and backward; attention_half.c
**                the fused version with bf16 products
**   mxint8.c     MXINT8 decode to bfloat16 and float32, the MXINT8 linear
**   mxint8_one.c one MXINT8 element decoded, the reference of every decode
**                (below simd.c, whose portable loops use it)
**   parallel.c   the one thread team every threaded kernel and loop runs on
**   bench.c      the benchmark harness and the table of benchmarked kernels
**   machine.c    what this machine can do (CPU, sgemm peak, bandwidth, GPU)
**   device.c     the GPU: the CUDA module, its table, device memory
**   commands.c   the kernels domain: bench, machine, roofline, kernels
**
** cuda/ is reached only from this folder, through device.h: the CUDA
** module loaded and its table of entry points, so the layers above never
** see whether a GPU exists except through the questions asked there.
*/
#ifndef SYSLAB_KERNELS_H
#define SYSLAB_KERNELS_H

#include <stddef.h>
#include <stdint.h>

/* ------------------------------------------------------------------ GEMM */

/* transposition flags for slK_sgemm */
enum { SLK_N = 0, SLK_T = 1 };

/* C = alpha * op(A) * op(B) + beta * C, float32, row-major; op(A) is M x K,
** op(B) is K x N, and lda/ldb/ldc are row strides as in BLAS. This is the
** dispatch the graph calls: OpenBLAS, one thread per piece of the product,
** the pieces on the thread team (gemm.c). */
void slK_sgemm(int trans_a, int trans_b, int M, int N, int K, float alpha, const float *A, int lda, const float *B,
               int ldb, float beta, float *C, int ldc);

typedef enum {
  SLK_GEMM_NAIVE,    /* triple loop, the reference */
  SLK_GEMM_BLOCKED,  /* packed panels, micro-kernel, two threads */
  SLK_GEMM_OPENBLAS, /* cblas_sgemm on OpenBLAS's own threads */
  SLK_GEMM_NUM
} slK_GemmImpl;

const char *slK_gemm_name(slK_GemmImpl impl);
void slK_sgemm_with(slK_GemmImpl impl, int trans_a, int trans_b, int M, int N, int K, float alpha, const float *A,
                    int lda, const float *B, int ldb, float beta, float *C, int ldc);

/* -------------------------------------------------------------- threads */

/* threads the kernels use (2 on the development machine; SYSLAB_THREADS overrides) */
int slK_threads(void);
/* the thread team's size: slK_threads(), fewer if threads could not be started */
int slK_team_size(void);
/* Runs fn(ctx, job, worker) once for each job = 0 .. njobs-1 and returns
** when all have finished. Up to `threads` workers of the persistent team
** (parallel.c) take part; the caller is worker 0, and worker < threads
** names a scratch slot no other running job uses. Jobs are claimed in
** order, by whichever worker is free: a job's result must depend only on
** its number. A call made from inside a job, or while another thread's
** call runs, runs its jobs in order on its own caller as worker 0. */
typedef void (*slK_JobFn)(void *ctx, int job, int worker);
void slK_parallel(int njobs, int threads, slK_JobFn fn, void *ctx);

/* ------------------------------------------------------------ inner loops */

/* which instruction set the inner loops use: "avx512" or "portable" */
const char *slK_isa(void);
/* 1 when the AVX-512 loops run (slK_isa() is "avx512"): the test the small kernels make on every call */
int slK_isa_avx512(void);
/* force the portable loops (tests compare the two); returns the old value */
int slK_force_portable(int on);
/* y[i] = exp(x[i]): relative error under 2e-7 for x >= -87.3, 0 below (exp(-inf) = 0) */
void slK_vexp(const float *x, float *y, size_t n);

/* ------------------------------------------------------------- attention */

/* Multi-head scaled dot-product attention over float32 arrays. Element
** (b, h, i, f) of Q, O, dQ, dO lives at q_batch*b + q_head*h + q_row*i + f;
** K, V, dK, dV use the k_ strides; features are contiguous. lse (and the
** saved logsumexp) is batch x heads x nq, contiguous. key_mask, if given, is
** batch x nk with 0 = masked. Masked scores are -inf; a row with every key
** masked gives O = 0 and L = 0 (numerics §7.4). */
typedef struct slK_Attn {
  int batch, heads, nq, nk, dim;
  long q_batch, q_head, q_row;
  long k_batch, k_head, k_row;
  int causal;            /* key k is kept for query q iff k <= q */
  const float *key_mask; /* NULL: every key is kept */
  float scale;           /* 0: 1/sqrt(dim) */
  int format;            /* SLK_FP32 (0, round.h): float32 products; SLK_BF16: every product's operands
                            ** (Q, K, V, P, dO, dS) rounded to bfloat16, float32 sums, float32 softmax */
} slK_Attn;

typedef enum {
  SLK_ATTN_NAIVE, /* op by op: S = QK^T (OpenBLAS), scale, mask, softmax, PV: each a pass over B*H*N*N */
  SLK_ATTN_FUSED, /* FlashAttention-2: tiles, online softmax, only L saved; threaded */
  SLK_ATTN_NUM
} slK_AttnImpl;

const char *slK_attention_name(slK_AttnImpl impl);
/* fills strides for contiguous batch x heads x n x dim arrays */
void slK_attention_contiguous(slK_Attn *a, int batch, int heads, int nq, int nk, int dim, int causal);
/* O and lse (batch x heads x nq); 0, or -1 when a workspace could not be
** allocated (callers check slK_attention_workspace against the budget first) */
int slK_attention_forward(slK_AttnImpl impl, const slK_Attn *a, const float *q, const float *k, const float *v,
                          float *o, float *lse);
/* adds dL/dQ, dL/dK, dL/dV into dq, dk, dv (zero them first for plain gradients) */
int slK_attention_backward(slK_AttnImpl impl, const slK_Attn *a, const float *q, const float *k, const float *v,
                           const float *o, const float *dout, const float *lse, float *dq, float *dk, float *dv);
/* the naive training step as eager code runs it: the forward keeps P for the backward */
int slK_attention_naive_step(const slK_Attn *a, const float *q, const float *k, const float *v, float *o, float *lse,
                             const float *dout, float *dq, float *dk, float *dv);
/* bytes beyond inputs, outputs and lse that one call needs at its peak */
double slK_attention_workspace(slK_AttnImpl impl, const slK_Attn *a, int backward);

/* ---------------------------------------------------------------- MXINT8 */

/* numerics §5.4: one element as the ADLS Lab 4 MXINT8 kernel decodes it (bfloat16 bits),
** and the float32 decode m * 2^(E-133) */
uint16_t slK_mxint8_bf16_one(int8_t m, uint8_t e);
float slK_mxint8_f32_one(int8_t m, uint8_t e);
float slK_bf16_to_f32(uint16_t b);
/* n values in groups of g (the scale of element i is scales[i / g]); n need
** not be a multiple of g. Vectorised; bit-exact with the one-element decode. */
void slK_mxint8_dequant_bf16(const int8_t *m, const uint8_t *scales, size_t n, int g, uint16_t *out);
void slK_mxint8_dequant_f32(const int8_t *m, const uint8_t *scales, size_t n, int g, float *out);
/* the same one element at a time (the reference the tests and bench compare with) */
void slK_mxint8_dequant_f32_ref(const int8_t *m, const uint8_t *scales, size_t n, int g, float *out);

/* y[rows x out] = x[rows x in] W^T + bias, with W [out x in] packed as MXINT8
** (mantissas row-major, scales [out x in/g]; in % g == 0). fused: each tile
** of W is decoded into the product's packed panel as it is needed, so W is
** never held in float32; otherwise W is decoded whole, then OpenBLAS runs. */
void slK_mxint8_linear(int fused, int rows, int in, int out, const float *x, const int8_t *wm, const uint8_t *ws, int g,
                       const float *bias, float *y);

/* ------------------------------------------------------------ memory count */

/* the kernels' own buffers (workspaces, benchmark operands): counted so the
** harness can report the peak of each case */
void *slK_alloc(size_t bytes); /* 64-byte aligned; NULL if the memory is not there */
void slK_free(void *p);
/* the calling thread's scratch of at least `bytes` (64-byte aligned), kept
** for its next call; give it back with slK_scratch_release before returning */
void *slK_scratch(size_t bytes);
void slK_scratch_release(void *p);
size_t slK_mem_live(void);
size_t slK_mem_peak(void);
void slK_mem_reset_peak(void);
/* the process: resident bytes now and at the peak (VmHWM); the peak can be
** reset (Linux clear_refs); 0 where unknown */
size_t slK_rss_now(void);
size_t slK_rss_peak(void);
void slK_rss_reset_peak(void);
/* bytes the machine could still give (MemAvailable) */
size_t slK_mem_available(void);

/* ------------------------------------------------------------ the harness */

typedef struct slK_Stats {
  int reps;
  double min, median, mean, std; /* seconds; std is the sample standard deviation */
} slK_Stats;

/* statistics of n samples (sorted in place) */
void slK_stats(double *samples, int n, slK_Stats *out);

/* A benchmarked kernel: set up for a size, run once, declare its work. */
typedef struct slK_Case slK_Case;
typedef struct slK_Bench {
  const char *name;
  const char *device;     /* "cpu" or "gpu" */
  const char *group;      /* "gemm", "attention", "mxint8", "memory" */
  const char *size_means; /* what the size is: "n (n x n x n)", "L (sequence length)", ... */
  const char *what;       /* one line */
  /* returns NULL and fills err if the case cannot be set up (too large, no GPU) */
  slK_Case *(*setup)(int size, const slK_Attn *shape, char *err, size_t errlen);
  /* runs once; returns seconds measured by the kernel itself (GPU events), or < 0 to use the host clock */
  double (*run)(slK_Case *c);
  void (*teardown)(slK_Case *c);
  double (*flops)(int size, const slK_Attn *shape);
  double (*bytes)(int size, const slK_Attn *shape); /* least traffic to and from memory */
  /* sets the case up at a small size, runs it once and compares its outputs with its reference's; 0, or -1
  ** with err naming the case, the largest difference and the tolerance. slK_bench_run calls it before it
  ** times anything; every case of the table has one (NULL: a harness caller's own case, not checked) */
  int (*check)(const struct slK_Bench *b, const slK_Attn *shape, char *err, size_t errlen);
} slK_Bench;

const slK_Bench *slK_bench_at(size_t i);
const slK_Bench *slK_bench_find(const char *name);

/* a clock for the harness: the real one, or a synthetic one in tests */
typedef double (*slK_Clock)(void *ud);
double slK_now(void *ud);

typedef struct slK_Result {
  slK_Stats t;
  double flops, bytes;
  size_t peak_bytes; /* kernels' allocator: operands and workspace */
  size_t rss_peak;   /* process resident peak during the case */
} slK_Result;

/* the case checked (b->check), then warmup untimed runs, then reps timed ones; 0, or -1 with err (a check
** that failed included), or SLK_BENCH_INTERRUPTED when
** sl_interrupted() stopped it between repetitions (nothing in out), or SLK_BENCH_REFUSED with err
** when the case would not fit in memory (nothing was allocated) */
enum { SLK_BENCH_INTERRUPTED = -2, SLK_BENCH_REFUSED = -3 };
int slK_bench_run(const slK_Bench *b, int size, const slK_Attn *shape, int warmup, int reps, slK_Clock clock,
                  void *clock_ud, slK_Result *out, char *err, size_t errlen);

/* ----------------------------------------------------------- the machine */

typedef struct slK_Machine {
  char cpu[128];
  char features[256]; /* the vector extensions found at run time */
  int cores, threads;
  double sgemm_gflops;    /* the peak: the faster of the two below */
  double openblas_gflops; /* OpenBLAS n = 1024, best of several, all threads */
  double blocked_gflops;  /* the blocked kernel, the same way */
  double sgemm1_gflops;   /* OpenBLAS on one thread */
  double memcpy_gbs;      /* bytes copied per second, 64 MiB, one thread */
  double stream_gbs;      /* read + write bytes per second of a triad, all threads */
  size_t mem_total;
  int gpus;
  char gpu[256];
  double gpu_sgemm_gflops, gpu_copy_gbs;
} slK_Machine;

/* measured once per process, then cached */
const slK_Machine *slK_machine(void);

/* The roofs measured now, as often as asked: the sgemm peak (the faster of
** OpenBLAS and the blocked kernel at n = 1024) and the triad's bandwidth,
** each the best of `reps` runs. The meter holds their operands (about
** 200 MB); NULL when they cannot be allocated. */
typedef struct slK_Roofs {
  double sgemm_gflops, stream_gbs;
} slK_Roofs;
typedef struct slK_RoofMeter slK_RoofMeter;
slK_RoofMeter *slK_roofs_begin(void);
void slK_roofs_measure(slK_RoofMeter *m, int reps, slK_Roofs *out);
void slK_roofs_end(slK_RoofMeter *m);

#endif
