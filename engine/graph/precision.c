/*
** precision.c - mixed precision in the manner of autocast: products take
** bfloat16 or float16 inputs and accumulate in float32, while norms, softmax
** and the loss stay float32; and the dtype every node's output has.
**
** This CPU has no bfloat16 or float16 matrix instructions that OpenBLAS
** uses (Debian's OpenBLAS 0.3.21 exports no sbgemm), so a product rounds
** its inputs to the 16-bit format (round to nearest even, as numerics.md
** specifies) and multiplies them with sgemm. The product of two 16-bit
** values is exact in float32 (at most 11 + 11 significant bits), so this is
** exactly "16-bit inputs, float32 accumulation"; only the order of the sums
** may differ from a GPU's. Values are kept in float32 storage after being
** rounded, so activation memory does not halve: the rounded copies of the
** inputs are extra temporaries, as autocast's casts are.
*/
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "kernels/blas.h"
#include "kernels/kernels.h"
#include "memory.h"
#include "precision.h"

const char *const slM_precision_names[] = {"fp32", "bf16", "fp16", NULL};

const char *slM_dtype_name(int dtype) {
  switch (dtype) {
    case SLM_BF16: return "bfloat16";
    case SLM_FP16: return "float16";
    case SLM_INT64: return "int64";
    default: return "float32";
  }
}

float slM_round_bf16(float x) {
  uint32_t u;
  memcpy(&u, &x, sizeof u);
  if ((u & 0x7F800000u) == 0x7F800000u) {  /* Inf stays, NaN stays NaN */
    if (u & 0x007FFFFFu) u |= 0x00400000u;
  } else {
    u += 0x7FFFu + ((u >> 16) & 1u);       /* round to nearest, ties to even */
  }
  u &= 0xFFFF0000u;
  memcpy(&x, &u, sizeof x);
  return x;
}

/* IEEE binary16 by hand rather than _Float16, which not every compiler this
** code is built with supports on x86 (clang 14 does not): round to nearest,
** ties to even, overflow to infinity, subnormals kept. */
static uint16_t fp16_bits(float x) {
  uint32_t u;
  memcpy(&u, &x, sizeof u);
  uint32_t sign = (u >> 16) & 0x8000u, a = u & 0x7FFFFFFFu;
  if (a >= 0x47800000u) return (uint16_t)(sign | (a > 0x7F800000u ? 0x7E00u : 0x7C00u)); /* >= 65536, Inf, NaN */
  if (a < 0x38800000u) {  /* below 2^-14: subnormal; adding 0.5 lines the half's ulp up with the float's */
    float f;
    memcpy(&f, &a, sizeof f);
    f += 0.5f;
    memcpy(&a, &f, sizeof a);
    return (uint16_t)(sign | (a - 0x3F000000u));
  }
  a += 0xC8000FFFu + ((a >> 13) & 1u);  /* rebias the exponent by -112, round to nearest even */
  return (uint16_t)(sign | (a >> 13));
}

static float fp16_value(uint16_t h) {
  uint32_t sign = (uint32_t)(h & 0x8000u) << 16, e = (h >> 10) & 0x1Fu, m = h & 0x3FFu, u;
  if (e == 0) {
    float f = (float)m * 0x1p-24f;
    memcpy(&u, &f, sizeof u);
    u |= sign;
  } else if (e == 31) {
    u = sign | 0x7F800000u | (m << 13);
  } else {
    u = sign | ((e + 112) << 23) | (m << 13);
  }
  float f;
  memcpy(&f, &u, sizeof f);
  return f;
}

float slM_round_fp16(float x) { return fp16_value(fp16_bits(x)); }

void slM_round_array(int precision, const float *in, float *out, size_t n) {
  if (precision == SLM_BF16)
    for (size_t i = 0; i < n; i++) out[i] = slM_round_bf16(in[i]);
  else if (precision == SLM_FP16)
    for (size_t i = 0; i < n; i++) out[i] = slM_round_fp16(in[i]);
  else if (in != out)
    memcpy(out, in, n * sizeof *out);
}

/* scratch for the rounded inputs of one product, kept between calls */
static float *scratch[2];
static size_t scratch_cap[2];

static const float *rounded(int which, int precision, const float *a, int rows, int cols, int ld) {
  size_t need = (size_t)rows * (size_t)cols;
  if (need > scratch_cap[which]) {
    slM_mem_external((long long)((need - scratch_cap[which]) * sizeof(float)));
    free(scratch[which]);
    scratch[which] = malloc(need * sizeof(float));
    scratch_cap[which] = need;
  }
  for (int r = 0; r < rows; r++)
    slM_round_array(precision, a + (size_t)r * ld, scratch[which] + (size_t)r * cols, (size_t)cols);
  return scratch[which];
}

size_t slM_precision_scratch_bytes(void) { return (scratch_cap[0] + scratch_cap[1]) * sizeof(float); }

void slM_precision_release(void) {
  for (int i = 0; i < 2; i++) {
    slM_mem_external(-(long long)(scratch_cap[i] * sizeof(float)));
    free(scratch[i]);
    scratch[i] = NULL;
    scratch_cap[i] = 0;
  }
}

void slM_gemm(const slM_Graph *g, int trans_a, int trans_b, int M, int N, int K, float alpha, const float *A, int lda,
              const float *B, int ldb, float beta, float *C, int ldc) {
  slK_blas_init();
  if (g && g->precision != SLM_FP32) {
    int ar = trans_a ? K : M, ac = trans_a ? M : K, br = trans_b ? N : K, bc = trans_b ? K : N;
    A = rounded(0, g->precision, A, ar, ac, lda);
    B = rounded(1, g->precision, B, br, bc, ldb);
    lda = ac, ldb = bc;
  }
  slK_sgemm(trans_a, trans_b, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc);
}

/* The autocast rules: products run in the low precision; norms, softmax and
** losses in float32; an elementwise operation keeps the widest dtype of its
** inputs. Parameters and their gradients stay float32 in every mode. */
int slM_node_dtype(const slM_Graph *g, int i, const int *dtypes) {
  const slM_Node *n = &g->nodes[i];
  switch (n->op) {
    case OP_LABELS: case OP_TOKENS: case OP_TARGETS: return SLM_INT64;
    case OP_INPUT: case OP_MASK: case OP_EMBEDDING: case OP_PATCHIFY: return SLM_FP32;
    case OP_LINEAR: case OP_LINEAR_ACT: case OP_SCORES: case OP_CONTEXT: case OP_ATTENTION: return g->precision;
    case OP_LAYERNORM: case OP_RMSNORM: case OP_ADD_NORM: case OP_SOFTMAX: case OP_MASKED_SOFTMAX:
    case OP_CROSS_ENTROPY: case OP_TOKEN_CE: case OP_MEAN_TOKENS:
      return SLM_FP32;
    case OP_OUTPUT: return dtypes[n->inputs[0]];
    default: {
      int widest = -1;
      for (int k = 0; k < n->ninputs; k++) {
        int d = dtypes[n->inputs[k]];
        if (d == SLM_INT64) continue;
        if (widest < 0 || d == SLM_FP32) widest = d;
      }
      if (n->nparams) widest = SLM_FP32;  /* a float32 parameter takes part */
      return widest < 0 ? SLM_FP32 : widest;
    }
  }
}

void slM_dtypes(const slM_Graph *g, int *dtypes) {
  for (int i = 0; i < g->n; i++) dtypes[i] = slM_node_dtype(g, i, dtypes);
}

/* after a node ran: an output whose dtype is 16-bit holds 16-bit values */
void slM_precision_after(slM_Graph *g, int i) {
  slM_Node *n = &g->nodes[i];
  if (g->precision == SLM_FP32 || !n->out) return;
  int d;
  switch (n->op) {
    case OP_LINEAR: case OP_LINEAR_ACT: case OP_SCORES: case OP_CONTEXT: case OP_ATTENTION: d = g->precision; break;
    case OP_RELU: case OP_GELU: case OP_TANH: case OP_SWIGLU: case OP_ROPE: case OP_DROPOUT: case OP_CAUSAL_MASK:
    case OP_SCALE: {
      int *dt = malloc((size_t)(i + 1) * sizeof *dt);
      slM_dtypes_upto(g, i, dt);
      d = dt[i];
      free(dt);
      break;
    }
    default: d = SLM_FP32;
  }
  if (d == SLM_BF16 || d == SLM_FP16) slM_round_array(d, n->out->data, n->out->data, n->out->size);
}

void slM_dtypes_upto(const slM_Graph *g, int last, int *dtypes) {
  for (int i = 0; i <= last; i++) dtypes[i] = slM_node_dtype(g, i, dtypes);
}

/* the seed's experiment: 1000 additions of 0.01 */
void slM_accumulation(double out[3]) {
  volatile float s32 = 0, s_mixed = 0, s16 = 0;
  float h = slM_round_fp16(0.01f);
  for (int i = 0; i < 1000; i++) s32 += 0.01f;
  /* two halves add exactly in float (their exponents are close), so one
  ** rounding gives the correctly rounded float16 sum */
  for (int i = 0; i < 1000; i++) s16 = slM_round_fp16(s16 + h);
  for (int i = 0; i < 1000; i++) s_mixed += h;
  out[0] = s32, out[1] = (double)s16, out[2] = s_mixed;
}
