/*
** ops_cuda.c - the operators on the GPU: the CUDA slot of each record of
** the operator table, for the image models (linear, activations, dropout,
** layer norm, residual adds, attention op by op, patches, pooling, the
** classification loss) and the language model (embedding, RMSNorm, RoPE,
** SwiGLU, the causal mask, the token loss).
**
** Each slot does what its CPU kernel does, through the table of the CUDA
** module (kernels/device.h's slK_gpu(): cuda/'s kernels, checked against
** the CPU operators by test_gpu_ops), on the device tensors of devslots.h: the forward makes or
** reuses its output and saved slots in device memory, the backward adds
** into its inputs' gradient slots (zeroed when the pass first reaches
** them) and its parameters' gradients. A call that fails records why in
** the graph (slM_dev_fault) and the pass stops at the next node.
**
** Three operators have no kernel of their own and are written with the
** ones there are: attention's per-head products are cuBLAS GEMMs on
** strided slices of the token rows, one strided batch over the samples per
** head; the mean over tokens is a batch of GEMMs with a row of ones; the patches are cut on the host
** from the batch being fed, which is on the host anyway, and uploaded. The
** attention mask of this engine's transformer is all ones (every patch is a
** real token), so masked_fill is a copy; the causal mask is a copy too, as
** the softmax after it keeps only each row's first entries on the GPU (the
** fused masked softmax's kernel) and gives the rest a zero gradient.
**
** Under precision bf16 or fp16 the products (linear layers, attention's two
** products) take 16-bit copies of their operands and run on the tensor
** cores with float32 sums; every node's output is then rounded to its
** dtype as on the CPU (precision.c), and parameters, gradients and the
** optimiser stay float32.
*/
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "devgemm.h"
#include "devslots.h"
#include "kernels/device.h"
#include "memory.h"
#include "ops_cuda.h"
#include "slots.h"

/* a device call of the node being run: on failure the pass stops here with the reason */
#define RUN(call) \
  do { \
    char err[200]; \
    size_t errlen = sizeof err; \
    if (slM_dev_fault(g, n, (call), err) != 0) return; \
  } while (0)

#define ENSURE(t, slot, ndim, shape) \
  slM_Tensor *t = slM_dev_ensure(g, n, (slot), (ndim), (shape)); \
  if (!t) return

#define GRAD(t, k) \
  slM_Tensor *t = slM_dev_input_grad(g, n, k); \
  if (!t) return

static float *dev_of(slM_Tensor *t) { return t ? t->dev : NULL; }
static int same_shape(const slM_Tensor *t, int ndim, const int *shape) {
  if (!t || !t->dev || t->ndim != ndim) return 0;
  for (int i = 0; i < ndim; i++)
    if (t->shape[i] != shape[i]) return 0;
  return 1;
}

/* a parameter's gradient, NULL when frozen; *stop when the device failed */
static float *param_grad(slM_Graph *g, slM_Node *n, int k, int *stop) {
  float *d = slM_dev_param_grad(g, n, n->params[k]);
  *stop = g->fault[0] != 0;
  return d;
}

static void nothing(slM_Graph *g, slM_Node *n) { (void)g, (void)n; }

/* ----------------------------------------------------- 16-bit products */

/* Under precision bf16 or fp16 a product's operands are rounded into 16-bit
** copies on the device (counted as temporaries while the node runs) and
** multiplied on the tensor cores with float32 sums, as the CPU rounds them
** into its packed panels; float32 models multiply their float32 arrays. */
typedef struct {
  uint16_t *h;
  size_t n;
} Half;

static void half_free(Half *c) {
  if (c->h) slK_dev_free(c->h, c->n * sizeof *c->h, SLM_MEM_TEMP);
  c->h = NULL;
}

/* x's 16-bit copy in c (c->h NULL for a float32 model); 0, or -1 with the fault set */
static int half_of(slM_Graph *g, const slM_Node *n, const float *x, size_t count, Half *c) {
  char err[200];
  c->h = NULL, c->n = count;
  if (g->precision == SLM_FP32) return 0;
  if (!(c->h = slK_dev_alloc((count ? count : 1) * sizeof *c->h, SLM_MEM_TEMP, err, sizeof err)))
    return slM_dev_fault(g, n, -1, err);
  if (slM_dev_fault(g, n, slK_gpu()->to_half(g->precision, x, c->h, count, err, sizeof err), err) != 0) {
    half_free(c);
    return -1;
  }
  return 0;
}

/* a product's operand: a float32 device array, or its 16-bit copy where there is one */
typedef struct {
  const float *p;
  const uint16_t *h;
} Src;

static Src src_of(const float *p, const Half *c) { return (Src){p, c ? c->h : NULL}; }
static const void *src_at(Src s, size_t off) { return s.h ? (const void *)(s.h + off) : (const void *)(s.p + off); }

/* the request p (devgemm.h) on A, B and C, in the operands' format */
static int product(slM_Graph *g, const slM_Node *n, const slM_DevGemm *p, Src A, Src B, float *C) {
  char err[200];
  if (!A.h != !B.h) return slM_dev_fault(g, n, -1, "a product with one 16-bit operand and one float32");
  int format = A.h ? g->precision : SLM_FP32;
  return slM_dev_fault(
      g, n,
      slK_gpu()->gemm_batched(format, p->trans_a, p->trans_b, p->M, p->N, p->K, p->alpha, src_at(A, p->a0), p->lda,
                              p->stride_a, src_at(B, p->b0), p->ldb, p->stride_b, p->beta, C + p->c0, p->ldc,
                              p->stride_c, p->batch, err, sizeof err),
      err);
}

/* ---------------------------------------------------------- placeholders */

/* floats made on the host uploaded into the node's output */
static void feed(slM_Graph *g, slM_Node *n, int ndim, const int *shape, const float *host) {
  ENSURE(y, &n->out, ndim, shape);
  RUN(slK_gpu()->upload(y->dev, host, slM_dev_bytes(y), err, errlen));
}

void slM_cuda_input_forward(slM_Graph *g, slM_Node *n) {
  int shape[2] = {g->feed_batch, g->features};
  feed(g, n, 2, shape, g->feed_x);
}

/* labels, the mask and token ids are floats holding small integers, as on the CPU */
static void feed_values(slM_Graph *g, slM_Node *n, int ndim, const int *shape, const uint8_t *bytes, const int32_t *ids,
                        float fill) {
  size_t count = 1;
  for (int i = 0; i < ndim; i++) count *= (size_t)shape[i];
  float *host = malloc((count ? count : 1) * sizeof *host);
  if (!host) {
    slM_dev_fault(g, n, -1, "out of host memory for a batch's labels");
    return;
  }
  for (size_t i = 0; i < count; i++) host[i] = bytes ? bytes[i] : ids ? (float)ids[i] : fill;
  feed(g, n, ndim, shape, host);
  free(host);
}

void slM_cuda_labels_forward(slM_Graph *g, slM_Node *n) {
  feed_values(g, n, 1, &g->feed_batch, g->feed_labels, NULL, 0);
}

void slM_cuda_mask_forward(slM_Graph *g, slM_Node *n) {
  int shape[2] = {g->feed_batch, g->tokens};
  feed_values(g, n, 2, shape, NULL, NULL, 1); /* every patch is a real token */
}

void slM_cuda_ids_forward(slM_Graph *g, slM_Node *n) {
  int shape[2] = {g->batch_rows, g->context_now};
  feed_values(g, n, 2, shape, NULL, n->op == OP_TOKENS ? g->tok : g->tgt, 0);
}

void slM_cuda_input_backward(slM_Graph *g, slM_Node *n) { nothing(g, n); }
void slM_cuda_labels_backward(slM_Graph *g, slM_Node *n) { nothing(g, n); }
void slM_cuda_mask_backward(slM_Graph *g, slM_Node *n) { nothing(g, n); }
void slM_cuda_ids_backward(slM_Graph *g, slM_Node *n) { nothing(g, n); }
void slM_cuda_output_forward(slM_Graph *g, slM_Node *n) { nothing(g, n); }
void slM_cuda_output_backward(slM_Graph *g, slM_Node *n) { nothing(g, n); }

/* ----------------------------------------------------------------- linear */

/* y = x W^T (+ b): under a 16-bit precision the product from x's and W's
** 16-bit copies (none in float32), the bias added in float32 after it; the
** output is then rounded to its dtype like every node's (precision.c) */
void slM_cuda_linear_forward(slM_Graph *g, slM_Node *n) {
  slM_Tensor *x = slM_input(g, n, 0), *w = n->params[0]->value;
  int out_f = w->shape[0], in_f = w->shape[1], shape[SLM_MAX_DIMS];
  memcpy(shape, x->shape, sizeof shape);
  shape[x->ndim - 1] = out_f;
  ENSURE(y, &n->out, x->ndim, shape);
  const float *b = n->nparams > 1 ? n->params[1]->value->dev : NULL;
  Half xh, wh = {NULL, 0};
  if (half_of(g, n, x->dev, x->size, &xh) == 0 && half_of(g, n, w->dev, w->size, &wh) == 0) {
    char err[200];
    slM_dev_fault(
        g, n,
        slK_gpu()->linear_forward(g->precision, src_at(src_of(x->dev, &xh), 0), src_at(src_of(w->dev, &wh), 0), b,
                                  y->dev, x->size / (size_t)in_f, in_f, out_f, err, sizeof err),
        err);
  }
  half_free(&xh), half_free(&wh);
}

/* dx += dy W and dW += dy^T x from the copies of dy, W and x in the model's precision; db from dy in float32 */
void slM_cuda_linear_backward(slM_Graph *g, slM_Node *n) {
  slM_Tensor *x = slM_input(g, n, 0), *w = n->params[0]->value, *dx = NULL;
  int out_f = w->shape[0], in_f = w->shape[1], stop;
  if (slM_linear_grad_to(g, n, 0) && !(dx = slM_dev_input_grad(g, n, 0))) return;
  float *dw = param_grad(g, n, 0, &stop);
  if (stop) return;
  float *db = n->nparams > 1 ? param_grad(g, n, 1, &stop) : NULL;
  if (stop) return;
  const float *dy = n->gout->dev;
  Half dyh, wh = {NULL, 0}, xh = {NULL, 0};
  if (half_of(g, n, dy, n->gout->size, &dyh) == 0 && (!dx || half_of(g, n, w->dev, w->size, &wh) == 0) &&
      (!dw || half_of(g, n, x->dev, x->size, &xh) == 0)) {
    char err[200];
    slM_dev_fault(g, n,
                  slK_gpu()->linear_backward(g->precision, src_at(src_of(x->dev, &xh), 0),
                                             src_at(src_of(w->dev, &wh), 0), src_at(src_of(dy, &dyh), 0), dy,
                                             dev_of(dx), dw, db, x->size / (size_t)in_f, in_f, out_f, err, sizeof err),
                  err);
  }
  half_free(&dyh), half_free(&wh), half_free(&xh);
}

/* ------------------------------------------------------------ activations */

void slM_cuda_activation_forward(slM_Graph *g, slM_Node *n) {
  slM_Tensor *a = slM_input(g, n, 0);
  ENSURE(y, &n->out, a->ndim, a->shape);
  switch (n->op) {
    case OP_RELU: RUN(slK_gpu()->activation_forward(SLG_RELU, a->dev, y->dev, a->size, err, errlen)); break;
    case OP_GELU: RUN(slK_gpu()->activation_forward(SLG_GELU, a->dev, y->dev, a->size, err, errlen)); break;
    case OP_TANH: RUN(slK_gpu()->tanh_forward(a->dev, y->dev, a->size, err, errlen)); break;
    default: RUN(slK_gpu()->scale_forward(a->dev, y->dev, a->size, n->p, err, errlen)); break;
  }
}

void slM_cuda_activation_backward(slM_Graph *g, slM_Node *n) {
  slM_Tensor *a = slM_input(g, n, 0);
  GRAD(dx, 0);
  const float *dy = n->gout->dev;
  switch (n->op) {
    case OP_RELU: RUN(slK_gpu()->activation_backward(SLG_RELU, a->dev, dy, dx->dev, a->size, err, errlen)); break;
    case OP_GELU: RUN(slK_gpu()->activation_backward(SLG_GELU, a->dev, dy, dx->dev, a->size, err, errlen)); break;
    case OP_TANH: RUN(slK_gpu()->tanh_backward(n->out->dev, dy, dx->dev, a->size, err, errlen)); break;
    default: RUN(slK_gpu()->scale_backward(dy, dx->dev, a->size, n->p, err, errlen)); break;
  }
}

/* ---------------------------------------------------------------- dropout */

/* the same draw from the graph's generator as the CPU's forward, so the same mask (numerics §9) */
void slM_cuda_dropout_forward(slM_Graph *g, slM_Node *n) {
  slM_Tensor *a = slM_input(g, n, 0);
  ENSURE(y, &n->out, a->ndim, a->shape);
  if (g->training && n->p > 0) {
    ENSURE(mask, &n->saved, a->ndim, a->shape);
    uint64_t base = slM_rng_next(&g->rng);
    RUN(slK_gpu()->dropout_forward(a->dev, y->dev, mask->dev, a->size, n->p, base, err, errlen));
  } else {
    RUN(slK_gpu()->dropout_forward(a->dev, y->dev, NULL, a->size, 0.0f, 0, err, errlen));
  }
}

void slM_cuda_dropout_backward(slM_Graph *g, slM_Node *n) {
  slM_Tensor *a = slM_input(g, n, 0);
  GRAD(dx, 0);
  const float *mask = g->training && n->p > 0 ? n->saved->dev : NULL;
  RUN(slK_gpu()->dropout_backward(n->gout->dev, mask, dx->dev, a->size, err, errlen));
}

/* ------------------------------------------------------------------ norms */

/* layer norm (a gain and a shift; saved: the mean, saved2: 1 / std per row)
** and RMSNorm (a gain; saved: 1 / rms per row), over the last dimension */
void slM_cuda_norm_forward(slM_Graph *g, slM_Node *n) {
  slM_Tensor *x = slM_input(g, n, 0), *rstd;
  int d = x->shape[x->ndim - 1], rows = (int)(x->size / (size_t)d), layer = n->op == OP_LAYERNORM;
  ENSURE(y, &n->out, x->ndim, x->shape);
  ENSURE(first, &n->saved, 1, &rows);
  if (!(rstd = layer ? slM_dev_ensure(g, n, &n->saved2, 1, &rows) : first)) return;
  const float *gain = n->params[0]->value->dev;
  if (layer)
    RUN(slK_gpu()->layernorm_forward(x->dev, gain, n->params[1]->value->dev, y->dev, first->dev, rstd->dev,
                                     (size_t)rows, d, n->p, err, errlen));
  else RUN(slK_gpu()->rmsnorm_forward(x->dev, gain, y->dev, rstd->dev, (size_t)rows, d, n->p, err, errlen));
}

void slM_cuda_norm_backward(slM_Graph *g, slM_Node *n) {
  slM_Tensor *x = slM_input(g, n, 0);
  int d = x->shape[x->ndim - 1], stop, layer = n->op == OP_LAYERNORM;
  GRAD(dx, 0);
  float *dgain = param_grad(g, n, 0, &stop), *dshift = NULL;
  if (!stop && layer) dshift = param_grad(g, n, 1, &stop);
  if (stop) return;
  const float *gain = n->params[0]->value->dev;
  size_t rows = x->size / (size_t)d;
  if (layer)
    RUN(slK_gpu()->layernorm_backward(x->dev, gain, n->gout->dev, n->saved->dev, n->saved2->dev, dx->dev, dgain, dshift,
                                      rows, d, err, errlen));
  else
    RUN(slK_gpu()->rmsnorm_backward(x->dev, gain, n->gout->dev, n->saved->dev, dx->dev, dgain, rows, d, err, errlen));
}

/* -------------------------------------------------------------------- add */

void slM_cuda_add_forward(slM_Graph *g, slM_Node *n) {
  slM_Tensor *a = slM_input(g, n, 0), *b = n->ninputs == 2 ? slM_input(g, n, 1) : n->params[0]->value;
  ENSURE(y, &n->out, a->ndim, a->shape);
  RUN(slK_gpu()->add_forward(a->dev, b->dev, y->dev, a->size, b->size, err, errlen));
}

void slM_cuda_add_backward(slM_Graph *g, slM_Node *n) {
  slM_Tensor *a = slM_input(g, n, 0);
  int stop = 0;
  GRAD(da, 0);
  float *db;
  size_t bn = a->size;
  if (n->ninputs == 2) {
    GRAD(t, 1);
    db = t->dev;
  } else {
    db = param_grad(g, n, 0, &stop);
    bn = n->params[0]->value->size;
  }
  if (stop) return;
  RUN(slK_gpu()->add_backward(n->gout->dev, da->dev, db, a->size, bn, err, errlen));
}

/* ---------------------------------------------------------------- softmax */

/* after the causal mask, the GPU's softmax keeps each row's first entries itself */
static int after_causal_mask(const slM_Graph *g, const slM_Node *n) {
  return g->nodes[n->inputs[0]].op == OP_CAUSAL_MASK;
}

void slM_cuda_softmax_forward(slM_Graph *g, slM_Node *n) {
  slM_Tensor *a = slM_input(g, n, 0);
  int d = a->shape[a->ndim - 1];
  ENSURE(y, &n->out, a->ndim, a->shape);
  RUN(slK_gpu()->softmax_forward(a->dev, y->dev, a->size / (size_t)d, d, after_causal_mask(g, n), err, errlen));
}

void slM_cuda_softmax_backward(slM_Graph *g, slM_Node *n) {
  slM_Tensor *a = slM_input(g, n, 0);
  int d = a->shape[a->ndim - 1];
  GRAD(dx, 0);
  RUN(slK_gpu()->softmax_backward(n->out->dev, n->gout->dev, dx->dev, a->size / (size_t)d, d, after_causal_mask(g, n),
                                  err, errlen));
}

/* a copy forward and the gradient passed through (masked_fill under an all-ones mask, the causal mask) */
static void copy_forward(slM_Graph *g, slM_Node *n) {
  slM_Tensor *a = slM_input(g, n, 0);
  ENSURE(y, &n->out, a->ndim, a->shape);
  RUN(slK_gpu()->copy(y->dev, a->dev, slM_dev_bytes(a), err, errlen));
}

static void pass_backward(slM_Graph *g, slM_Node *n) {
  slM_Tensor *a = slM_input(g, n, 0);
  GRAD(dx, 0);
  RUN(slK_gpu()->add_backward(n->gout->dev, dx->dev, NULL, a->size, a->size, err, errlen));
}

void slM_cuda_mask_fill_forward(slM_Graph *g, slM_Node *n) {
  if (g->nodes[n->inputs[1]].op != OP_MASK) {
    slM_dev_fault(g, n, -1, "the GPU's masked_fill takes the model's own attention mask (all ones) only");
    return;
  }
  copy_forward(g, n);
}
void slM_cuda_mask_fill_backward(slM_Graph *g, slM_Node *n) { pass_backward(g, n); }

void slM_cuda_causal_mask_forward(slM_Graph *g, slM_Node *n) {
  for (int i = n - g->nodes + 1; i < g->n; i++)
    for (int k = 0; k < g->nodes[i].ninputs; k++)
      if (g->nodes[i].inputs[k] == n - g->nodes && g->nodes[i].op != OP_SOFTMAX) {
        slM_dev_fault(g, n, -1, "on the GPU the causal mask must feed a softmax, which applies it");
        return;
      }
  copy_forward(g, n);
}
void slM_cuda_causal_mask_backward(slM_Graph *g, slM_Node *n) { pass_backward(g, n); }

/* ---------------------------------------------- patches, pooling, the loss */

/* the CPU's loop, on the batch being fed (the input node's rows on the host) */
void slM_cuda_patchify_forward(slM_Graph *g, slM_Node *n) {
  if (g->nodes[n->inputs[0]].op != OP_INPUT || !g->feed_x) {
    slM_dev_fault(g, n, -1, "the GPU cuts patches from the model's input images only");
    return;
  }
  int batch = g->feed_batch, side = (int)lround(sqrt((double)g->features)), P = n->patch, per = side / P;
  int shape[3] = {batch, per * per, P * P};
  size_t count = (size_t)batch * per * per * P * P;
  float *host = malloc((count ? count : 1) * sizeof *host);
  if (!host) {
    slM_dev_fault(g, n, -1, "out of host memory for a batch's patches");
    return;
  }
  const float *x = g->feed_x;
  for (int b = 0; b < batch; b++)
    for (int t = 0; t < per * per; t++)
      for (int i = 0; i < P; i++)
        for (int j = 0; j < P; j++)
          host[((size_t)b * per * per + t) * P * P + i * P + j] =
              x[(size_t)b * g->features + ((t / per) * P + i) * side + (t % per) * P + j];
  feed(g, n, 3, shape, host);
  free(host);
}
void slM_cuda_patchify_backward(slM_Graph *g, slM_Node *n) { nothing(g, n); }

/* a row of T ones, kept in the node's saved slot */
static slM_Tensor *ones(slM_Graph *g, slM_Node *n, int T) {
  if (same_shape(n->saved, 1, &T)) return n->saved;
  slM_Tensor *t = slM_dev_ensure(g, n, &n->saved, 1, &T);
  float *host = t ? malloc((size_t)T * sizeof *host) : NULL;
  if (!host) return t ? (slM_dev_fault(g, n, -1, "out of host memory"), NULL) : NULL;
  for (int i = 0; i < T; i++) host[i] = 1;
  char err[200];
  int rc = slM_dev_fault(g, n, slK_gpu()->upload(t->dev, host, slM_dev_bytes(t), err, sizeof err), err);
  free(host);
  return rc ? NULL : t;
}

/* y[b] = (1 / T) ones^T a[b]: the samples as one strided batch of GEMMs (the row of ones repeated, stride 0) */
void slM_cuda_mean_tokens_forward(slM_Graph *g, slM_Node *n) {
  slM_Tensor *a = slM_input(g, n, 0), *one = ones(g, n, a->shape[1]);
  int B = a->shape[0], T = a->shape[1], D = a->shape[2], shape[2] = {B, D};
  if (!one) return;
  ENSURE(y, &n->out, 2, shape);
  slM_DevGemm p = slM_gemm_mean_tokens(0, B, T, D);
  product(g, n, &p, src_of(one->dev, NULL), src_of(a->dev, NULL), y->dev);
}

/* dx[b] += (1 / T) ones gout[b] */
void slM_cuda_mean_tokens_backward(slM_Graph *g, slM_Node *n) {
  slM_Tensor *a = slM_input(g, n, 0);
  GRAD(dx, 0);
  slM_DevGemm p = slM_gemm_mean_tokens(1, a->shape[0], a->shape[1], a->shape[2]);
  product(g, n, &p, src_of(n->saved->dev, NULL), src_of(n->gout->dev, NULL), dx->dev);
}

static void loss_forward(slM_Graph *g, slM_Node *n, int kind) {
  slM_Tensor *z = slM_input(g, n, 0), *labels = slM_input(g, n, 1);
  int C = z->shape[z->ndim - 1], one = 1;
  ENSURE(probs, &n->saved, z->ndim, z->shape);
  ENSURE(loss, &n->out, 1, &one);
  RUN(slK_gpu()->cross_entropy_forward(kind, z->dev, labels->dev, probs->dev, loss->dev, z->size / (size_t)C, C, err,
                                       errlen));
}

static void loss_backward(slM_Graph *g, slM_Node *n, int kind) {
  slM_Tensor *z = slM_input(g, n, 0);
  int C = z->shape[z->ndim - 1];
  GRAD(dz, 0);
  RUN(slK_gpu()->cross_entropy_backward(kind, n->saved->dev, slM_input(g, n, 1)->dev, n->gout->dev, dz->dev,
                                        z->size / (size_t)C, C, err, errlen));
}

void slM_cuda_cross_entropy_forward(slM_Graph *g, slM_Node *n) { loss_forward(g, n, SLG_LOSS_CLASSES); }
void slM_cuda_cross_entropy_backward(slM_Graph *g, slM_Node *n) { loss_backward(g, n, SLG_LOSS_CLASSES); }
void slM_cuda_token_ce_forward(slM_Graph *g, slM_Node *n) { loss_forward(g, n, SLG_LOSS_TOKENS); }
void slM_cuda_token_ce_backward(slM_Graph *g, slM_Node *n) { loss_backward(g, n, SLG_LOSS_TOKENS); }

/* ------------------------------------------------- attention op by op */

/* head by head, the request `which` (devgemm.h) over token rows B x T x D in n's heads; 0, or -1 with the fault set */
static int per_head(slM_Graph *g, slM_Node *n, int which, const slM_Tensor *rows, Src A, Src B, float *C) {
  for (int j = 0; j < n->heads; j++) {
    slM_DevGemm p = slM_gemm_heads(which, rows->shape[0], rows->shape[1], rows->shape[2], n->heads, j);
    if (product(g, n, &p, A, B, C) != 0) return -1;
  }
  return 0;
}

/* the 16-bit copies of a per-head product's two operands (none for a float32 model) */
static int halves(slM_Graph *g, slM_Node *n, const slM_Tensor *a, const slM_Tensor *b, Half *ah, Half *bh) {
  bh->h = NULL;
  if (half_of(g, n, a->dev, a->size, ah) != 0) return -1;
  if (half_of(g, n, b->dev, b->size, bh) != 0) return half_free(ah), -1;
  return 0;
}

/* scores q k^T / sqrt(dh) per head: batch x heads x T x T */
void slM_cuda_scores_forward(slM_Graph *g, slM_Node *n) {
  slM_Tensor *q = slM_input(g, n, 0), *k = slM_input(g, n, 1);
  int shape[4] = {q->shape[0], n->heads, q->shape[1], q->shape[1]};
  ENSURE(s, &n->out, 4, shape);
  Half qh, kh;
  if (halves(g, n, q, k, &qh, &kh) != 0) return;
  per_head(g, n, SLM_GEMM_SCORES, q, src_of(q->dev, &qh), src_of(k->dev, &kh), s->dev);
  half_free(&qh), half_free(&kh);
}

/* the attention-weighted values, heads merged: batch x T x D */
void slM_cuda_context_forward(slM_Graph *g, slM_Node *n) {
  slM_Tensor *p = slM_input(g, n, 0), *v = slM_input(g, n, 1);
  ENSURE(y, &n->out, 3, v->shape);
  Half ph, vh;
  if (halves(g, n, p, v, &ph, &vh) != 0) return;
  per_head(g, n, SLM_GEMM_CONTEXT, v, src_of(p->dev, &ph), src_of(v->dev, &vh), y->dev);
  half_free(&ph), half_free(&vh);
}

/* The two input gradients of either product: the scores' (dq += s dS k,
** dk += s dS^T q) or the context's (dP += dO v^T, dv += P^T dO). */
static void heads_backward(slM_Graph *g, slM_Node *n) {
  slM_Tensor *a = slM_input(g, n, 0), *b = slM_input(g, n, 1);
  int scores = n->op == OP_SCORES;
  const slM_Tensor *rows = scores ? a : b;
  GRAD(d0, 0);
  GRAD(d1, 1);
  Half ah, bh, gh;
  if (halves(g, n, a, b, &ah, &bh) != 0) return;
  if (half_of(g, n, n->gout->dev, n->gout->size, &gh) == 0) {
    Src gout = src_of(n->gout->dev, &gh);
    if (scores) {
      if (per_head(g, n, SLM_GEMM_SCORES_DQ, rows, gout, src_of(b->dev, &bh), d0->dev) == 0)
        per_head(g, n, SLM_GEMM_SCORES_DK, rows, gout, src_of(a->dev, &ah), d1->dev);
    } else {
      if (per_head(g, n, SLM_GEMM_CONTEXT_DP, rows, gout, src_of(b->dev, &bh), d0->dev) == 0)
        per_head(g, n, SLM_GEMM_CONTEXT_DV, rows, src_of(a->dev, &ah), gout, d1->dev);
    }
    half_free(&gh);
  }
  half_free(&ah), half_free(&bh);
}

void slM_cuda_scores_backward(slM_Graph *g, slM_Node *n) { heads_backward(g, n); }
void slM_cuda_context_backward(slM_Graph *g, slM_Node *n) { heads_backward(g, n); }

/* --------------------------------------------------- FlashAttention-2 */

/* The fused node on the GPU (kernels/device.h): float32 with heads of 64,
** or under bf16 on the tensor cores with heads of 64, 80 or 128; another width
** or fp16 is refused with the reason when the pass reaches the node. The
** inputs are split into contiguous heads in scratch and the results merged
** back (cuda/ops_graph.cu). Only the model's own attention mask (all ones)
** is taken, as by masked_fill above. */
static int fused_format(const slM_Graph *g) { return g->precision == SLM_BF16 ? SLK_BF16 : g->precision; }

static int fused_mask_ok(slM_Graph *g, slM_Node *n) {
  if (n->ninputs <= 3 || g->nodes[n->inputs[3]].op == OP_MASK) return 1;
  slM_dev_fault(g, n, -1, "the GPU's fused attention takes the model's own attention mask (all ones) only");
  return 0;
}

void slM_cuda_attention_forward(slM_Graph *g, slM_Node *n) {
  slM_Tensor *q = slM_input(g, n, 0);
  int B = q->shape[0], T = q->shape[1], H = n->heads, dh = q->shape[2] / H, lshape[3] = {B, H, T};
  if (!fused_mask_ok(g, n)) return;
  ENSURE(o, &n->out, 3, q->shape);
  ENSURE(lse, &n->saved, 3, lshape);
  RUN(slK_dev_attention_forward(fused_format(g), B, T, H, dh, n->causal, q->dev, slM_input(g, n, 1)->dev,
                                slM_input(g, n, 2)->dev, o->dev, lse->dev, SLM_MEM_TEMP, err, errlen));
}

void slM_cuda_attention_backward(slM_Graph *g, slM_Node *n) {
  slM_Tensor *q = slM_input(g, n, 0);
  int B = q->shape[0], T = q->shape[1], H = n->heads, dh = q->shape[2] / H;
  GRAD(dq, 0);
  GRAD(dk, 1);
  GRAD(dv, 2);
  RUN(slK_dev_attention_backward(fused_format(g), B, T, H, dh, n->causal, q->dev, slM_input(g, n, 1)->dev,
                                 slM_input(g, n, 2)->dev, n->out->dev, n->gout->dev, n->saved->dev, dq->dev, dk->dev,
                                 dv->dev, SLM_MEM_TEMP, err, errlen));
}

/* --------------------------------------------------- the language model */

void slM_cuda_embedding_forward(slM_Graph *g, slM_Node *n) {
  slM_Tensor *ids = slM_input(g, n, 0), *w = n->params[0]->value;
  int shape[3] = {ids->shape[0], ids->shape[1], w->shape[1]};
  ENSURE(y, &n->out, 3, shape);
  RUN(slK_gpu()->embedding_forward(ids->dev, w->dev, y->dev, ids->size, w->shape[0], w->shape[1], err, errlen));
}

void slM_cuda_embedding_backward(slM_Graph *g, slM_Node *n) {
  slM_Tensor *ids = slM_input(g, n, 0), *w = n->params[0]->value;
  int stop;
  float *dw = param_grad(g, n, 0, &stop);
  if (stop || !dw) return;
  RUN(slK_gpu()->embedding_backward(ids->dev, n->gout->dev, dw, ids->size, w->shape[0], w->shape[1], err, errlen));
}

/* the table of angles is made once per context length and kept (SLM_OP_CACHES) */
void slM_cuda_rope_forward(slM_Graph *g, slM_Node *n) {
  slM_Tensor *x = slM_input(g, n, 0);
  int T = x->shape[1], D = x->shape[2], tshape[2] = {T, D / n->heads};
  ENSURE(y, &n->out, x->ndim, x->shape);
  if (!same_shape(n->saved, 2, tshape)) {
    ENSURE(table, &n->saved, 2, tshape);
    RUN(slK_gpu()->rope_table(table->dev, T, tshape[1], n->p, err, errlen));
  }
  RUN(slK_gpu()->rope_forward(x->dev, y->dev, n->saved->dev, (size_t)x->shape[0], T, D, n->heads, err, errlen));
}

void slM_cuda_rope_backward(slM_Graph *g, slM_Node *n) {
  slM_Tensor *x = slM_input(g, n, 0);
  GRAD(dx, 0);
  RUN(slK_gpu()->rope_backward(n->gout->dev, dx->dev, n->saved->dev, (size_t)x->shape[0], x->shape[1], x->shape[2],
                               n->heads, err, errlen));
}

void slM_cuda_swiglu_forward(slM_Graph *g, slM_Node *n) {
  slM_Tensor *a = slM_input(g, n, 0), *b = slM_input(g, n, 1);
  ENSURE(y, &n->out, a->ndim, a->shape);
  RUN(slK_gpu()->swiglu_forward(a->dev, b->dev, y->dev, a->size, err, errlen));
}

void slM_cuda_swiglu_backward(slM_Graph *g, slM_Node *n) {
  slM_Tensor *a = slM_input(g, n, 0), *b = slM_input(g, n, 1);
  GRAD(da, 0);
  GRAD(db, 1);
  RUN(slK_gpu()->swiglu_backward(a->dev, b->dev, n->gout->dev, da->dev, db->dev, a->size, err, errlen));
}
