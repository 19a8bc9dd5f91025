/*
** ops_graph.cu - the elementwise operators the image transformer and LoRA
** add to ops.cu's: tanh (the transformer's pooler) and the scale y = a x
** (LoRA's alpha / rank), forward and backward, on device pointers.
**
** As in ops.cu, arithmetic the CPU rounds step by step is written with
** the never-contracted intrinsics (ops.h), in the CPU's order; tanhf is
** CUDA's, within a few ulp of the C library's, so tanh is close, not equal.
*/
#include "gpu.h"
#include "ops.h"

__global__ void tanh_fwd(const float *x, float *y, size_t n) {
  EACH_ITEM(i, n) y[i] = tanhf(x[i]);
}

/* dx += dy (1 - y^2), from the output y as the CPU's backward reads it */
__global__ void tanh_bwd(const float *y, const float *dy, float *dx, size_t n) {
  EACH_ITEM(i, n) dx[i] = add_rn(dx[i], mul_rn(dy[i], sub_rn(1.0f, mul_rn(y[i], y[i]))));
}

__global__ void scale_fwd(const float *x, float *y, size_t n, float a) {
  EACH_ITEM(i, n) y[i] = mul_rn(a, x[i]);
}

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
