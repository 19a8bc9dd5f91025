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
