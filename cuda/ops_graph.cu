/*
** ops_graph.cu - the operators the image transformer, LoRA and the fused
** attention node add to ops.cu's: tanh (the transformer's pooler) and the
** scale y = a x (LoRA's alpha / rank), forward and backward, on device
** pointers; and the fused attention of the graph's token rows (below).
**
** As in ops.cu, arithmetic the CPU rounds step by step is written with
** the never-contracted intrinsics (ops.h), in the CPU's order; tanhf is
** CUDA's, within a few ulp of the C library's, so tanh is close, not equal.
*/
#include <cuda_bf16.h>

#include "attention.h"
#include "module.h"
#include "ops.h"

__global__ void tanh_fwd(const float *x, float *y, size_t n) { EACH_ITEM(i, n) y[i] = tanhf(x[i]); }

/* dx += dy (1 - y^2), from the output y as the CPU's backward reads it */
__global__ void tanh_bwd(const float *y, const float *dy, float *dx, size_t n) {
  EACH_ITEM(i, n) dx[i] = add_rn(dx[i], mul_rn(dy[i], sub_rn(1.0f, mul_rn(y[i], y[i]))));
}

__global__ void scale_fwd(const float *x, float *y, size_t n, float a) { EACH_ITEM(i, n) y[i] = mul_rn(a, x[i]); }

__global__ void scale_bwd(const float *dy, float *dx, size_t n, float a) {
  EACH_ITEM(i, n) dx[i] = add_rn(dx[i], mul_rn(a, dy[i]));
}

extern "C" int slG_tanh_forward(const float *x, float *y, size_t n, char *err, size_t errlen) {
  if (n == 0) return 0;
  tanh_fwd<<<grid_for(n), THREADS>>>(x, y, n);
  return launched("tanh forward", err, errlen);
}

extern "C" int slG_tanh_backward(const float *y, const float *dy, float *dx, size_t n, char *err, size_t errlen) {
  if (n == 0) return 0;
  tanh_bwd<<<grid_for(n), THREADS>>>(y, dy, dx, n);
  return launched("tanh backward", err, errlen);
}

extern "C" int slG_scale_forward(const float *x, float *y, size_t n, float a, char *err, size_t errlen) {
  if (n == 0) return 0;
  scale_fwd<<<grid_for(n), THREADS>>>(x, y, n, a);
  return launched("scale forward", err, errlen);
}

extern "C" int slG_scale_backward(const float *dy, float *dx, size_t n, float a, char *err, size_t errlen) {
  if (n == 0) return 0;
  scale_bwd<<<grid_for(n), THREADS>>>(dy, dx, n, a);
  return launched("scale backward", err, errlen);
}

/* ============================================ fused attention of the graph */

/* The graph keeps a layer's queries, keys and values as token rows (B x T x
** D, head h in columns h dh .. h dh + dh - 1); the fused kernels of
** attention.cu and attention_tc.cu take each head contiguous (B H x T x
** dh). So a fused node splits its inputs into that layout in scratch (as
** bf16 for the tensor-core kernels), runs the kernels there and merges the
** results back into rows. The copies cost a pass over each tensor at
** memory speed; the kernels' reads and writes are then contiguous.
** Heads of 80 (the 2.7B model's), which version 1 of the tensor-core
** kernels does not take, run version 2 (attention_fa2.cu); 64 and 128 keep
** version 1 until version 2 has been measured against it on a GPU. */
__global__ void heads_split(const float *x, float *y, unsigned short *yh, int T, int H, int dh, size_t n) {
  EACH_ITEM(i, n) {
    size_t d = i % dh, t = i / dh % T, bh = i / ((size_t)dh * T), b = bh / H, h = bh % H;
    float v = x[(b * T + t) * (size_t)H * dh + h * dh + d];
    if (yh) yh[i] = __bfloat16_as_ushort(__float2bfloat16_rn(v));
    else y[i] = v;
  }
}

/* rows (+)= the contiguous heads: add 0 overwrites (a forward's output), 1 adds (a backward's gradient) */
__global__ void heads_merge(const float *y, float *x, int T, int H, int dh, size_t n, int add) {
  EACH_ITEM(i, n) {
    size_t d = i % dh, t = i / dh % T, bh = i / ((size_t)dh * T), b = bh / H, h = bh % H;
    float *dst = x + (b * T + t) * (size_t)H * dh + h * dh + d;
    *dst = add ? add_rn(*dst, y[i]) : y[i];
  }
}

static void split(const float *x, void *dst, int bf16, int B, int T, int H, int dh) {
  size_t n = (size_t)B * T * H * dh;
  heads_split<<<grid_for(n), THREADS>>>(x, bf16 ? NULL : (float *)dst, bf16 ? (unsigned short *)dst : NULL, T, H, dh,
                                        n);
}

static void merge(const float *y, float *x, int B, int T, int H, int dh, int add) {
  size_t n = (size_t)B * T * H * dh;
  heads_merge<<<grid_for(n), THREADS>>>(y, x, T, H, dh, n, add);
}

static int graph_attention_check(int format, int dh, char *err, size_t errlen) {
  if (format == SLG_BF16 && (dh == 64 || dh == 80 || dh == 128)) return 0;
  if (format == 0 && dh == SLG_ATTN_DIM) return 0;
  snprintf(err, errlen,
           "fused attention on the GPU takes heads of %d features in float32, of 64, 80 or 128 in bf16; "
           "these have %d in %s (set_attention m attention=naive runs it op by op)",
           SLG_ATTN_DIM, dh,
           format == SLG_BF16   ? "bf16"
           : format == SLG_FP16 ? "fp16"
                                : "float32");
  return -1;
}

extern "C" size_t slG_attention_graph_scratch(int format, int B, int T, int H, int dh, int backward) {
  size_t nx = (size_t)B * T * H * dh, in = format == SLG_BF16 ? 2 : 4;
  /* forward: q, k, v in the kernels' type, O float; backward also dO (twice in bf16), dQ, dK, dV, D */
  if (!backward) return nx * (3 * in + 4);
  return nx * (4 * in + 4 + (format == SLG_BF16 ? 4 : 0) + 3 * 4) + (size_t)B * H * T * 4;
}

/* q, k and v split into contiguous heads at the start of scratch, in the kernels' type; the rest of the scratch
** follows them */
typedef struct {
  void *q, *k, *v;
  char *rest;
  int bf16, bh;
  size_t nx;
} Heads;

static Heads split_inputs(int format, int B, int T, int H, int dh, const float *q, const float *k, const float *v,
                          void *scratch) {
  Heads h;
  h.bf16 = format == SLG_BF16, h.bh = B * H, h.nx = (size_t)B * T * H * dh;
  size_t in = h.bf16 ? 2 : 4;
  char *s = (char *)scratch;
  h.q = s, h.k = s + h.nx * in, h.v = s + 2 * h.nx * in, h.rest = s + 3 * h.nx * in;
  split(q, h.q, h.bf16, B, T, H, dh), split(k, h.k, h.bf16, B, T, H, dh), split(v, h.v, h.bf16, B, T, H, dh);
  return h;
}

extern "C" int slG_attention_graph_forward(int format, int B, int T, int H, int dh, int causal, const float *q,
                                           const float *k, const float *v, float *out, float *lse, void *scratch,
                                           char *err, size_t errlen) {
  if (graph_attention_check(format, dh, err, errlen)) return -1;
  if ((size_t)B * T * H * dh == 0) return 0;
  Heads h = split_inputs(format, B, T, H, dh, q, k, v, scratch);
  float *oc = (float *)h.rest;
  int rc = h.bf16 ? (dh == 80 ? slG_fa2_forward_bf16 : slG_fused_forward_bf16)(h.bh, T, dh, causal, h.q, h.k, h.v, oc,
                                                                               lse, err, errlen)
                  : slG_fused_forward(2, h.bh, T, causal, (const float *)h.q, (const float *)h.k, (const float *)h.v,
                                      oc, lse, err, errlen);
  if (rc) return -1;
  merge(oc, out, B, T, H, dh, 0);
  return launched("fused attention (heads merged)", err, errlen);
}

/* the scratch after q, k, v: dO in the kernels' type, O in float32 (and dO again in float32 for bf16), then dQ,
** dK, dV and D in float32 */
extern "C" int slG_attention_graph_backward(int format, int B, int T, int H, int dh, int causal, const float *q,
                                            const float *k, const float *v, const float *out, const float *gout,
                                            const float *lse, float *dq, float *dk, float *dv, void *scratch, char *err,
                                            size_t errlen) {
  if (graph_attention_check(format, dh, err, errlen)) return -1;
  if ((size_t)B * T * H * dh == 0) return 0;
  Heads h = split_inputs(format, B, T, H, dh, q, k, v, scratch);
  size_t nx = h.nx;
  void *doc = h.rest;
  float *oc = (float *)(h.rest + nx * (h.bf16 ? 2 : 4)), *do32 = h.bf16 ? oc + nx : (float *)doc;
  float *dqc = oc + (h.bf16 ? 2 : 1) * nx, *dkc = dqc + nx, *dvc = dkc + nx, *Dv = dvc + nx;
  split(gout, doc, h.bf16, B, T, H, dh), split(out, oc, 0, B, T, H, dh);
  if (h.bf16) split(gout, do32, 0, B, T, H, dh);
  int rc = h.bf16 ? (dh == 80 ? slG_fa2_backward_bf16 : slG_fused_backward_bf16)(
                        h.bh, T, dh, causal, h.q, h.k, h.v, doc, oc, do32, lse, Dv, dqc, dkc, dvc, err, errlen)
                  : slG_fused_backward(2, h.bh, T, causal, (const float *)h.q, (const float *)h.k, (const float *)h.v,
                                       oc, do32, lse, Dv, dqc, dkc, dvc, err, errlen);
  if (rc) return -1;
  merge(dqc, dq, B, T, H, dh, 1), merge(dkc, dk, B, T, H, dh, 1), merge(dvc, dv, B, T, H, dh, 1);
  return launched("fused attention backward (heads merged)", err, errlen);
}

void slG_fill_ops_graph(slG_Backend *b) {
  b->tanh_forward = slG_tanh_forward;
  b->tanh_backward = slG_tanh_backward;
  b->scale_forward = slG_scale_forward;
  b->scale_backward = slG_scale_backward;
  b->attention_graph_scratch = slG_attention_graph_scratch;
  b->attention_graph_forward = slG_attention_graph_forward;
  b->attention_graph_backward = slG_attention_graph_backward;
}
