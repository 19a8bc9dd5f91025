/*
** ops_rows.cu - the graph's row-wise operators on the GPU, forward and
** backward, on device pointers: layer norm, RMSNorm, softmax (with the
** causal mask of the fused masked_softmax) and the two cross-entropy losses.
**
** Build and tests: as ops.cu (tests/unit/test_gpu_ops.c against the CPU
** operators of engine/graph/; `make gpu-check` on a GPU machine).
**
** One block of 256 threads per row (a block-stride loop over the rows), the
** row's sums reduced with warp shuffles (ops.h's block_sum). The CPU sums a
** row in binary64 (kernels/reduce.c, softmax.c, ops_lm.c) and so does each
** block here, in another order: the float32 results then differ from the
** CPU's only where a binary64 sum lies next to a float32 rounding boundary.
** Everything after the sums is computed as the CPU's loop computes it. The
** gradients of gains and shifts sum over rows in slK_norm_param_grads's
** chunked order (gpu.h, SLG_SUM_ROWS): the CPU's bits.
*/
#include "module.h"
#include "ops.h"

/* ========================================================== layer norm */

/* ops_core.c's layernorm_rows: the moments in binary64 (slK_norm_moments),
** then y = ((x - m) rs) gamma + beta in float32 */
__global__ void layernorm_fwd(const float *x, const float *gamma, const float *beta, float *y, float *mean, float *rstd,
                              size_t rows, int d, float eps) {
  __shared__ double red[32];
  EACH_ROW(r, rows) {
    const float *a = x + r * d;
    double s = 0, v = 0;
    EACH_COLUMN(j, d) s += a[j];
    double m = block_sum(s, red) / d;
    EACH_COLUMN(j, d) v += (a[j] - m) * (a[j] - m);
    v = block_sum(v, red) / d;
    float rs = (float)(1.0 / sqrt(v + eps)), mf = (float)m;
    if (threadIdx.x == 0) mean[r] = mf, rstd[r] = rs;
    EACH_COLUMN(j, d) y[r * d + j] = add_rn(mul_rn(mul_rn(sub_rn(a[j], mf), rs), gamma[j]), beta[j]);
  }
}

/* layernorm_grad_rows: the means of g = dy gamma and of g xhat
** (slK_norm_grad_means: float32 terms summed in binary64), then
** dx += rs ((g - mg) - xhat mgx) */
__global__ void layernorm_bwd(const float *x, const float *gamma, const float *dy, const float *mean, const float *rstd,
                              float *dx, size_t rows, int d) {
  __shared__ double red[32];
  EACH_ROW(r, rows) {
    const float *a = x + r * d, *gy = dy + r * d;
    float m = mean[r], rs = rstd[r];
    double s = 0, sx = 0;
    EACH_COLUMN(j, d) {
      float xhat = mul_rn(sub_rn(a[j], m), rs), g = mul_rn(gy[j], gamma[j]);
      s += g;
      sx += mul_rn(g, xhat);
    }
    float mg = (float)(block_sum(s, red) / d), mgx = (float)(block_sum(sx, red) / d);
    EACH_COLUMN(j, d) {
      float xhat = mul_rn(sub_rn(a[j], m), rs);
      float t = mul_rn(rs, sub_rn(sub_rn(mul_rn(gy[j], gamma[j]), mg), mul_rn(xhat, mgx)));
      dx[r * d + j] = add_rn(dx[r * d + j], t);
    }
  }
}

/* slK_norm_param_grads: dgain[j] += dy xhat, dshift[j] += dy, in its order
** (gpu.h, SLG_SUM_ROWS), both sums at once through ops.h's
** chunked_column_sums, as column_sums (ops.cu); mean NULL for RMSNorm
** (x - 0 is x) */
struct NormTerms { /* the gain's term dy xhat and the shift's dy */
  const float *x, *dy, *mean, *rstd;
  size_t d;
  __device__ void term(size_t r, size_t j, float *t) const {
    float m = mean ? mean[r] : 0.0f, gy = dy[r * d + j];
    t[0] = mul_rn(gy, mul_rn(sub_rn(x[r * d + j], m), rstd[r]));
    t[1] = gy;
  }
};

__global__ void norm_param_grads(const float *x, const float *dy, const float *mean, const float *rstd, size_t rows,
                                 int d, float *dgain, float *dshift) {
  float *const ys[2] = {dgain, dshift};
  chunked_column_sums<2>(NormTerms{x, dy, mean, rstd, (size_t)d}, rows, (size_t)d, ys);
}

static int rows_check(int d, const char *what, char *err, size_t errlen) {
  if (d > 0) return 0;
  snprintf(err, errlen, "%s: the row width must be positive", what);
  return -1;
}

extern "C" int slG_layernorm_forward(const float *x, const float *gamma, const float *beta, float *y, float *mean,
                                     float *rstd, size_t rows, int d, float eps, char *err, size_t errlen) {
  if (rows_check(d, "layer norm", err, errlen)) return -1;
  if (rows == 0) return 0;
  layernorm_fwd<<<grid_rows(rows), THREADS>>>(x, gamma, beta, y, mean, rstd, rows, d, eps);
  return launched("layer norm forward", err, errlen);
}

static int param_grads_launch(const float *x, const float *dy, const float *mean, const float *rstd, size_t rows, int d,
                              float *dgain, float *dshift, char *err, size_t errlen) {
  if (!dgain && !dshift) return 0;
  norm_param_grads<<<sum_grid((size_t)d), SUM_BLOCK>>>(x, dy, mean, rstd, rows, d, dgain, dshift);
  return launched("norm parameter gradients", err, errlen);
}

extern "C" int slG_layernorm_backward(const float *x, const float *gamma, const float *dy, const float *mean,
                                      const float *rstd, float *dx, float *dgamma, float *dbeta, size_t rows, int d,
                                      char *err, size_t errlen) {
  if (rows_check(d, "layer norm", err, errlen)) return -1;
  if (rows == 0) return 0;
  layernorm_bwd<<<grid_rows(rows), THREADS>>>(x, gamma, dy, mean, rstd, dx, rows, d);
  if (launched("layer norm backward", err, errlen)) return -1;
  return param_grads_launch(x, dy, mean, rstd, rows, d, dgamma, dbeta, err, errlen);
}

/* ============================================================= RMSNorm */

/* ops_lm.c's rms_rows: sum of x^2 in binary64 (each square exact), rs =
** 1 / sqrt(ss / d + eps), y = (x rs) gain */
__global__ void rmsnorm_fwd(const float *x, const float *gain, float *y, float *rstd, size_t rows, int d, float eps) {
  __shared__ double red[32];
  EACH_ROW(r, rows) {
    const float *a = x + r * d;
    double ss = 0;
    EACH_COLUMN(j, d) ss += (double)a[j] * a[j];
    float rs = (float)(1.0 / sqrt(block_sum(ss, red) / d + eps));
    if (threadIdx.x == 0) rstd[r] = rs;
    EACH_COLUMN(j, d) y[r * d + j] = mul_rn(mul_rn(a[j], rs), gain[j]);
  }
}

/* rms_grad_rows: dot = sum of dy gain (x rs) in binary64, m = dot / d,
** dx += rs (dy gain - (x rs) m) */
__global__ void rmsnorm_bwd(const float *x, const float *gain, const float *dy, const float *rstd, float *dx,
                            size_t rows, int d) {
  __shared__ double red[32];
  EACH_ROW(r, rows) {
    const float *a = x + r * d, *gy = dy + r * d;
    float rs = rstd[r];
    double dot = 0;
    EACH_COLUMN(j, d) dot += __dmul_rn(__dmul_rn((double)gy[j], (double)gain[j]), (double)mul_rn(a[j], rs));
    float m = (float)(block_sum(dot, red) / d);
    EACH_COLUMN(j, d) {
      float t = mul_rn(rs, sub_rn(mul_rn(gy[j], gain[j]), mul_rn(mul_rn(a[j], rs), m)));
      dx[r * d + j] = add_rn(dx[r * d + j], t);
    }
  }
}

extern "C" int slG_rmsnorm_forward(const float *x, const float *gain, float *y, float *rstd, size_t rows, int d,
                                   float eps, char *err, size_t errlen) {
  if (rows_check(d, "RMSNorm", err, errlen)) return -1;
  if (rows == 0) return 0;
  rmsnorm_fwd<<<grid_rows(rows), THREADS>>>(x, gain, y, rstd, rows, d, eps);
  return launched("RMSNorm forward", err, errlen);
}

extern "C" int slG_rmsnorm_backward(const float *x, const float *gain, const float *dy, const float *rstd, float *dx,
                                    float *dgain, size_t rows, int d, char *err, size_t errlen) {
  if (rows_check(d, "RMSNorm", err, errlen)) return -1;
  if (rows == 0) return 0;
  rmsnorm_bwd<<<grid_rows(rows), THREADS>>>(x, gain, dy, rstd, dx, rows, d);
  if (launched("RMSNorm backward", err, errlen)) return -1;
  return param_grads_launch(x, dy, NULL, rstd, rows, d, dgain, NULL, err, errlen);
}

/* ============================================================= softmax */

/* the entries of row r that take part: all n, or under the causal mask the
** first r % n + 1 of each n x n matrix */
__device__ __forceinline__ int kept_of(size_t r, int n, int causal) { return causal ? (int)(r % n) + 1 : n; }

/* kernels/softmax.c's slK_softmax_row: the maximum, exp(x - max) summed in
** binary64, times (float)(1 / sum); masked entries 0 */
__global__ void softmax_fwd(const float *x, float *y, size_t rows, int n, int causal) {
  __shared__ double red[32];
  __shared__ float redf[32];
  EACH_ROW(r, rows) {
    const float *a = x + r * n;
    float *b = y + r * n, mx = -INFINITY;
    int len = kept_of(r, n, causal);
    EACH_COLUMN(j, len) mx = fmaxf(mx, a[j]);
    mx = block_max(mx, redf);
    double s = 0;
    EACH_COLUMN(j, len) s += b[j] = expf(sub_rn(a[j], mx)); /* each thread reads back only what it wrote */
    float inv = (float)(1.0 / block_sum(s, red));
    EACH_COLUMN(j, n) b[j] = j < len ? mul_rn(b[j], inv) : 0.0f;
  }
}

/* slK_softmax_grad_row: dot = <dy, y> (float32 products summed in
** binary64), dx += y (dy - dot) over the kept entries */
__global__ void softmax_bwd(const float *y, const float *dy, float *dx, size_t rows, int n, int causal) {
  __shared__ double red[32];
  EACH_ROW(r, rows) {
    const float *p = y + r * n, *g = dy + r * n;
    int len = kept_of(r, n, causal);
    double dot = 0;
    EACH_COLUMN(j, len) dot += mul_rn(g[j], p[j]);
    float d = (float)block_sum(dot, red);
    EACH_COLUMN(j, len) dx[r * n + j] = add_rn(dx[r * n + j], mul_rn(p[j], sub_rn(g[j], d)));
  }
}

extern "C" int slG_softmax_forward(const float *x, float *y, size_t rows, int n, int causal, char *err, size_t errlen) {
  if (rows_check(n, "softmax", err, errlen)) return -1;
  if (rows == 0) return 0;
  softmax_fwd<<<grid_rows(rows), THREADS>>>(x, y, rows, n, causal);
  return launched("softmax forward", err, errlen);
}

extern "C" int slG_softmax_backward(const float *y, const float *dy, float *dx, size_t rows, int n, int causal,
                                    char *err, size_t errlen) {
  if (rows_check(n, "softmax", err, errlen)) return -1;
  if (rows == 0) return 0;
  softmax_bwd<<<grid_rows(rows), THREADS>>>(y, dy, dx, rows, n, causal);
  return launched("softmax backward", err, errlen);
}

/* ======================================================= cross-entropy */

/* the label as a column, or -1 outside [0, C) (NaN included) */
__device__ __forceinline__ int column_of(float label, int C) {
  return label >= 0.0f && label < (float)C ? (int)label : -1;
}

/* The mean of -log(p[label] + eps) over the rows in binary64, as both CPU
** losses sum it, by one block (a single sum: deterministic, and no scratch
** array); (float)(sum / rows) as the CPU rounds it. */
__global__ void cross_entropy_loss(const float *probs, const float *labels, float *loss, size_t rows, int C,
                                   double eps) {
  __shared__ double red[32];
  double s = 0;
  for (size_t r = threadIdx.x; r < rows; r += blockDim.x) {
    int c = column_of(labels[r], C);
    s += c < 0 ? NAN : -log((double)probs[r * C + c] + eps);
  }
  s = block_sum(s, red);
  if (threadIdx.x == 0) loss[0] = (float)(s / (double)rows);
}

/* ops_core.c's cross_entropy_backward: dx += (g (p - onehot)) / B */
__global__ void classes_bwd(const float *probs, const float *labels, const float *dloss, float *dx, size_t rows,
                            int C) {
  float g = dloss[0], B = (float)(int)rows;
  EACH_ITEM(e, rows * (size_t)C) {
    int c = (int)(e % (size_t)C), label = column_of(labels[e / (size_t)C], C);
    float t = div_rn(mul_rn(g, sub_rn(probs[e], c == label ? 1.0f : 0.0f)), B);
    dx[e] = add_rn(dx[e], t);
  }
}

/* ops_lm.c's ce_grad_rows: s = g / rows; dx += s p, then dx[target] -= s */
__global__ void tokens_bwd(const float *probs, const float *labels, const float *dloss, float *dx, size_t rows, int C) {
  float s = div_rn(dloss[0], (float)rows);
  EACH_ITEM(e, rows * (size_t)C) {
    int c = (int)(e % (size_t)C), label = column_of(labels[e / (size_t)C], C);
    float v = add_rn(dx[e], mul_rn(s, probs[e]));
    dx[e] = c == label ? sub_rn(v, s) : v;
  }
}

static int loss_check(int kind, int C, size_t rows, char *err, size_t errlen) {
  if (kind != SLG_LOSS_CLASSES && kind != SLG_LOSS_TOKENS) return refuse(err, errlen, "unknown cross-entropy kind");
  if (kind == SLG_LOSS_CLASSES && rows > 0x7fffffff) return refuse(err, errlen, "cross-entropy: too many rows");
  return rows_check(C, "cross-entropy", err, errlen);
}

extern "C" int slG_cross_entropy_forward(int kind, const float *logits, const float *labels, float *probs, float *loss,
                                         size_t rows, int C, char *err, size_t errlen) {
  if (loss_check(kind, C, rows, err, errlen)) return -1;
  if (rows == 0) return 0;
  softmax_fwd<<<grid_rows(rows), THREADS>>>(logits, probs, rows, C, 0);
  if (launched("cross-entropy softmax", err, errlen)) return -1;
  cross_entropy_loss<<<1, THREADS>>>(probs, labels, loss, rows, C, kind == SLG_LOSS_CLASSES ? 1e-12 : 1e-30);
  return launched("cross-entropy loss", err, errlen);
}

extern "C" int slG_cross_entropy_backward(int kind, const float *probs, const float *labels, const float *dloss,
                                          float *dx, size_t rows, int C, char *err, size_t errlen) {
  if (loss_check(kind, C, rows, err, errlen)) return -1;
  if (rows == 0) return 0;
  if (kind == SLG_LOSS_CLASSES) classes_bwd<<<grid_for(rows * (size_t)C), THREADS>>>(probs, labels, dloss, dx, rows, C);
  else tokens_bwd<<<grid_for(rows * (size_t)C), THREADS>>>(probs, labels, dloss, dx, rows, C);
  return launched("cross-entropy backward", err, errlen);
}

void slG_fill_ops_rows(slG_Backend *b) {
  b->layernorm_forward = slG_layernorm_forward;
  b->layernorm_backward = slG_layernorm_backward;
  b->rmsnorm_forward = slG_rmsnorm_forward;
  b->rmsnorm_backward = slG_rmsnorm_backward;
  b->softmax_forward = slG_softmax_forward;
  b->softmax_backward = slG_softmax_backward;
  b->cross_entropy_forward = slG_cross_entropy_forward;
  b->cross_entropy_backward = slG_cross_entropy_backward;
}
