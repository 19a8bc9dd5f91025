/* gpu_none.c - the GPU shim for builds without CUDA: no device, ever. */
#include <stdio.h>

#include "gpu.h"

static const char none[] = "no GPU: this syslab was built without CUDA";

int slG_device_count(void) { return 0; }
const char *slG_describe(void) { return none; }
int slG_built_with_cuda(void) { return 0; }

static int fail(char *err, size_t errlen) {
  snprintf(err, errlen, "%s", none);
  return -1;
}

int slG_sgemm(int impl, int M, int N, int K, const float *A, const float *B, float *C, char *err, size_t errlen) {
  return fail(err, errlen);
}
int slG_attention_forward(int impl, int batch, int heads, int n, int dim, int causal, const float *q, const float *k,
                          const float *v, float *o, float *lse, char *err, size_t errlen) {
  return fail(err, errlen);
}
int slG_attention_backward(int impl, int batch, int heads, int n, int dim, int causal, const float *q, const float *k,
                           const float *v, const float *o, const float *dout, const float *lse, float *dq, float *dk,
                           float *dv, char *err, size_t errlen) {
  return fail(err, errlen);
}
int slG_mxint8_dequant_bf16(const int8_t *m, const uint8_t *scales, size_t n, int g, uint16_t *out, char *err,
                            size_t errlen) {
  return fail(err, errlen);
}
void *slG_case_new(int kind, int size, int batch, int heads, int dim, int causal, char *err, size_t errlen) {
  fail(err, errlen);
  return NULL;
}
double slG_case_run(void *c) { return -1; }
const char *slG_case_error(void) { return none; }
size_t slG_case_bytes(void *c) { return 0; }
void slG_case_free(void *c) {}
int slG_machine(double *sgemm_gflops, double *copy_gbs) { return -1; }

/* the operators on device pointers (ops.cu, ops_rows.cu, ops_train.cu) */
int slG_alloc(void **p, size_t bytes, char *err, size_t errlen) {
  *p = NULL;
  return fail(err, errlen);
}
void slG_free(void *p) {}
int slG_upload(void *dev, const void *host, size_t bytes, char *err, size_t errlen) { return fail(err, errlen); }
int slG_download(void *host, const void *dev, size_t bytes, char *err, size_t errlen) { return fail(err, errlen); }
int slG_zero(void *dev, size_t bytes, char *err, size_t errlen) { return fail(err, errlen); }
int slG_copy(void *dst, const void *src, size_t bytes, char *err, size_t errlen) { return fail(err, errlen); }
int slG_mem_info(size_t *free_bytes, size_t *total_bytes) {
  *free_bytes = *total_bytes = 0;
  return -1;
}
int slG_sync(char *err, size_t errlen) { return fail(err, errlen); }
int slG_gemm_run(int format, const slG_Gemm *g, float alpha, const void *A, const void *B, float beta, float *C,
                 char *err, size_t errlen) {
  return fail(err, errlen);
}
int slG_linear_forward(int format, const void *x, const void *w, const float *b, float *y, size_t rows, int in_f,
                       int out_f, char *err, size_t errlen) {
  return fail(err, errlen);
}
int slG_linear_backward(int format, const void *x, const void *w, const void *dy, const float *dy32, float *dx,
                        float *dw, float *db, size_t rows, int in_f, int out_f, char *err, size_t errlen) {
  return fail(err, errlen);
}
int slG_activation_forward(int act, const float *x, float *y, size_t n, char *err, size_t errlen) {
  return fail(err, errlen);
}
int slG_activation_backward(int act, const float *x, const float *dy, float *dx, size_t n, char *err,
                            size_t errlen) {
  return fail(err, errlen);
}
int slG_swiglu_forward(const float *a, const float *b, float *y, size_t n, char *err, size_t errlen) {
  return fail(err, errlen);
}
int slG_swiglu_backward(const float *a, const float *b, const float *dy, float *da, float *db, size_t n, char *err,
                        size_t errlen) {
  return fail(err, errlen);
}
int slG_add_forward(const float *a, const float *b, float *y, size_t n, size_t bn, char *err, size_t errlen) {
  return fail(err, errlen);
}
int slG_add_backward(const float *dy, float *da, float *db, size_t n, size_t bn, char *err, size_t errlen) {
  return fail(err, errlen);
}
int slG_dropout_forward(const float *x, float *y, float *mask, size_t n, float p, uint64_t base, char *err,
                        size_t errlen) {
  return fail(err, errlen);
}
int slG_dropout_backward(const float *dy, const float *mask, float *dx, size_t n, char *err, size_t errlen) {
  return fail(err, errlen);
}
int slG_round_bf16(const float *x, float *y, size_t n, char *err, size_t errlen) { return fail(err, errlen); }
int slG_round_half(int format, const float *x, float *y, size_t n, char *err, size_t errlen) { return fail(err, errlen); }
int slG_to_half(int format, const float *x, uint16_t *y, size_t n, char *err, size_t errlen) { return fail(err, errlen); }
int slG_gemm_batched(int format, int trans_a, int trans_b, int M, int N, int K, float alpha, const void *A, int lda,
                     long long stride_a, const void *B, int ldb, long long stride_b, float beta, float *C, int ldc,
                     long long stride_c, int batch, char *err, size_t errlen) {
  return fail(err, errlen);
}
int slG_embedding_forward(const float *ids, const float *table, float *y, size_t n, int vocab, int width, char *err,
                          size_t errlen) {
  return fail(err, errlen);
}
int slG_embedding_backward(const float *ids, const float *dy, float *dtable, size_t n, int vocab, int width,
                           char *err, size_t errlen) {
  return fail(err, errlen);
}
int slG_rope_table(float *table, int T, int dh, float theta, char *err, size_t errlen) { return fail(err, errlen); }
int slG_rope_forward(const float *x, float *y, const float *table, size_t B, int T, int D, int heads, char *err,
                     size_t errlen) {
  return fail(err, errlen);
}
int slG_rope_backward(const float *dy, float *dx, const float *table, size_t B, int T, int D, int heads, char *err,
                      size_t errlen) {
  return fail(err, errlen);
}
int slG_layernorm_forward(const float *x, const float *gamma, const float *beta, float *y, float *mean, float *rstd,
                          size_t rows, int d, float eps, char *err, size_t errlen) {
  return fail(err, errlen);
}
int slG_layernorm_backward(const float *x, const float *gamma, const float *dy, const float *mean, const float *rstd,
                           float *dx, float *dgamma, float *dbeta, size_t rows, int d, char *err, size_t errlen) {
  return fail(err, errlen);
}
int slG_rmsnorm_forward(const float *x, const float *gain, float *y, float *rstd, size_t rows, int d, float eps,
                        char *err, size_t errlen) {
  return fail(err, errlen);
}
int slG_rmsnorm_backward(const float *x, const float *gain, const float *dy, const float *rstd, float *dx,
                         float *dgain, size_t rows, int d, char *err, size_t errlen) {
  return fail(err, errlen);
}
int slG_softmax_forward(const float *x, float *y, size_t rows, int n, int causal, char *err, size_t errlen) {
  return fail(err, errlen);
}
int slG_softmax_backward(const float *y, const float *dy, float *dx, size_t rows, int n, int causal, char *err,
                         size_t errlen) {
  return fail(err, errlen);
}
int slG_cross_entropy_forward(int kind, const float *logits, const float *labels, float *probs, float *loss,
                              size_t rows, int C, char *err, size_t errlen) {
  return fail(err, errlen);
}
int slG_cross_entropy_backward(int kind, const float *probs, const float *labels, const float *dloss, float *dx,
                               size_t rows, int C, char *err, size_t errlen) {
  return fail(err, errlen);
}
void *slG_params_new(const slG_ParamRef *refs, int count, char *err, size_t errlen) {
  fail(err, errlen);
  return NULL;
}
void slG_params_free(void *params) {}
int slG_optimizer_step(void *params, const slG_Optimizer *o, char *err, size_t errlen) { return fail(err, errlen); }
int slG_tanh_forward(const float *x, float *y, size_t n, char *err, size_t errlen) { return fail(err, errlen); }
int slG_tanh_backward(const float *y, const float *dy, float *dx, size_t n, char *err, size_t errlen) {
  return fail(err, errlen);
}
int slG_scale_forward(const float *x, float *y, size_t n, float a, char *err, size_t errlen) {
  return fail(err, errlen);
}
int slG_scale_backward(const float *dy, float *dx, size_t n, float a, char *err, size_t errlen) {
  return fail(err, errlen);
}
size_t slG_attention_graph_scratch(int format, int B, int T, int H, int dh, int backward) { return 0; }
int slG_attention_graph_forward(int format, int B, int T, int H, int dh, int causal, const float *q, const float *k,
                                const float *v, float *out, float *lse, void *scratch, char *err, size_t errlen) {
  return fail(err, errlen);
}
int slG_attention_graph_backward(int format, int B, int T, int H, int dh, int causal, const float *q, const float *k,
                                 const float *v, const float *out, const float *gout, const float *lse, float *dq,
                                 float *dk, float *dv, void *scratch, char *err, size_t errlen) {
  return fail(err, errlen);
}
