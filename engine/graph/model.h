/*
** model.h - tensors, data sets, and models as compute graphs.
**
** A model IS its graph: a list of nodes in execution order, each an
** operator with its inputs, parameters and metadata, in the shape of a
** torch.fx graph with MASE metadata (node kinds placeholder / call_module /
** call_function / call_method / output; metadata in common, hardware and
** software parts). Forward, backward, training and evaluation run the
** nodes themselves, so a transform pass changes what runs.
*/
#ifndef SYSLAB_MODEL_H
#define SYSLAB_MODEL_H

#include <stddef.h>
#include <stdint.h>

#include "kernels/round.h"
#include "slcommand.h"
#include "transform.h"

/* ----------------------------------------------------------------- tensors */

#define SLM_MAX_DIMS 4

typedef struct slM_Tensor {
  int ndim;
  int shape[SLM_MAX_DIMS];
  size_t size;
  /* Storage. A float32 tensor (dtype SLM_FP32) holds its values in data;
  ** under a 16-bit precision a node's output (and what it saves beside it)
  ** may hold 16-bit values instead (dtype SLM_BF16 or SLM_FP16: bfloat16 or
  ** IEEE binary16 bits in half, data NULL), half the bytes (slots.h reads
  ** and writes either). Gradients, parameters and optimiser state are
  ** always float32. */
  float *data;
  uint16_t *half;
  int dtype;
  int category, node; /* what it is and which node made it (memory.c) */
  int view;           /* data is another allocation's (plan.c's arena): not owned, not counted */
  /* its copy in device memory (device.c), NULL on the CPU; a tensor made on
  ** the device has no host data (data NULL) unless it is a parameter's, whose
  ** host copy is refreshed when a command ends (slM_device_pull) */
  float *dev;
} slM_Tensor;

slM_Tensor *slM_tensor_new(int ndim, const int *shape); /* zero-filled, float32 */
/* zero-filled, of a dtype (SLM_FP32, SLM_BF16, SLM_FP16) */
slM_Tensor *slM_tensor_new_as(int ndim, const int *shape, int dtype);
slM_Tensor *slM_tensor_aligned(int ndim, const int *shape, size_t align); /* the same, data aligned (a power of two) */
slM_Tensor *slM_tensor_like(const slM_Tensor *t); /* float32, of t's shape (a gradient of any tensor) */
slM_Tensor *slM_tensor_copy(const slM_Tensor *t); /* the same dtype and values */
void slM_tensor_free(slM_Tensor *t);
/* the bytes its values take: 4 or 2 an element (dtype SLM_FP32 is 0) */
static inline size_t slM_tensor_bytes(const slM_Tensor *t) { return t->size * (t->dtype == 0 ? 4 : 2); }
/* element i as a float32 value (exact for every dtype) */
float slM_tensor_at(const slM_Tensor *t, size_t i);
/* a tensor over memory it does not own: freeing it frees only the header */
slM_Tensor *slM_tensor_view(float *data, int ndim, const int *shape);
slM_Tensor *slM_tensor_view_as(void *mem, int ndim, const int *shape, int dtype);
/* bytes of tensor data alive now, and the most alive at once since the last reset */
size_t slM_mem_live(void);
size_t slM_mem_peak(void);

/* deterministic random numbers (splitmix64): same seed, same numbers everywhere */
typedef struct slM_Rng {
  uint64_t state;
} slM_Rng;
void slM_rng_seed(slM_Rng *r, uint64_t seed);
uint64_t slM_rng_next(slM_Rng *r);
void slM_rng_skip(slM_Rng *r, uint64_t draws); /* as if `draws` draws had been taken */
double slM_rng_uniform(slM_Rng *r);            /* [0, 1) */
double slM_rng_normal(slM_Rng *r);

/* --------------------------------------------------------------- data sets */

typedef struct slM_Dataset {
  char name[32];
  int features, classes;
  int height, width; /* images: 28 x 28; 0 otherwise */
  size_t ntrain, ntest;
  float *train_x, *test_x; /* n x features, normalised */
  uint8_t *train_y, *test_y;
  float mean, std; /* the normalisation applied (from the training split) */
  /* its definition, so that another process can load the same set */
  char path[256]; /* fashion_mnist: the folder of the IDX files */
  double spread;  /* synthetic: spread and seed */
  uint64_t seed;
} slM_Dataset;

extern const sl_Class slM_dataset_class;

/* reads the gzipped IDX files in dir; takes the first ntrain / ntest items
** (0 = all); on failure returns NULL with a message naming the problem */
slM_Dataset *slM_fashion_mnist(const char *dir, size_t ntrain, size_t ntest, char *err, size_t errlen);
/* Gaussian blobs: one centre per class, for fast tests */
slM_Dataset *slM_synthetic(size_t ntrain, size_t ntest, int features, int classes, double spread, uint64_t seed);
void slM_dataset_free(slM_Dataset *d);
/* IDX parsing on bytes already read (exposed for tests) */
int slM_idx_parse(const unsigned char *data, size_t len, int want_dims, uint8_t **out, size_t *count, int *rows,
                  int *cols, char *err, size_t errlen);

/* ------------------------------------------------------------------ graphs */

typedef enum { SLM_PLACEHOLDER, SLM_CALL_MODULE, SLM_CALL_FUNCTION, SLM_CALL_METHOD, SLM_OUTPUT } slM_Kind;

typedef enum {
  OP_INPUT,  /* placeholder: images (batch x features) */
  OP_LABELS, /* placeholder: class labels */
  OP_MASK,   /* placeholder: attention mask (batch x tokens), 1 = attend */
  OP_LINEAR, /* y = x W^T + b, over the last dimension */
  OP_RELU,
  OP_GELU,
  OP_TANH,
  OP_DROPOUT,
  OP_LAYERNORM,     /* over the last dimension */
  OP_PATCHIFY,      /* images -> tokens of patch x patch pixels */
  OP_ADD,           /* two inputs, or one input plus a parameter broadcast over the batch */
  OP_SCORES,        /* attention scores q k^T / sqrt(d) per head: batch x heads x tokens x tokens */
  OP_MASK_FILL,     /* scores where the mask is 0 become -1e9 */
  OP_SOFTMAX,       /* over the last dimension */
  OP_CONTEXT,       /* attention-weighted values, heads merged: batch x tokens x width */
  OP_ATTENTION,     /* fused attention (FlashAttention-2) of q, k, v [, mask]: batch x tokens x width */
  OP_MEAN_TOKENS,   /* batch x tokens x width -> batch x width */
  OP_SCALE,         /* y = a * x (LoRA's alpha / rank) */
  OP_CROSS_ENTROPY, /* mean loss of logits against labels */
  OP_OUTPUT,
  /* the language-model family (lm.c) */
  OP_TOKENS,      /* placeholder: token ids (batch x context) */
  OP_TARGETS,     /* placeholder: next-token ids (batch x context) */
  OP_EMBEDDING,   /* token ids -> rows of a vocab x width table */
  OP_RMSNORM,     /* over the last dimension, with a gain */
  OP_ROPE,        /* rotary position embedding of each head's pairs of features */
  OP_SWIGLU,      /* silu(a) * b */
  OP_CAUSAL_MASK, /* scores of later keys become -inf */
  OP_TOKEN_CE,    /* mean cross-entropy of every position's logits against its target */
  /* fused operators, made only by the fusion pass (fuse.c) */
  OP_LINEAR_ACT,     /* linear layer with its bias and activation in one pass */
  OP_ADD_NORM,       /* residual add and layer norm in one pass */
  OP_MASKED_SOFTMAX, /* causal mask and softmax in one pass */
  SLM_NUM_OPS
} slM_Op;

typedef struct slM_Param {
  long refs; /* graphs share parameters: a capture or a pass keeps them */
  char name[96];
  slM_Tensor *value, *grad, *m, *v; /* m, v: optimiser state */
  int frozen;                       /* not trained (LoRA base weights) */
  /* the 16-bit working copy of the value for a training run's products
  ** (product.c): made at its first use in a training pass, read again by
  ** the backward, rewritten from the value by each optimizer step
  ** (train.c), given back when training ends; half_format is its format,
  ** half_state whether it holds the value now (product.h) */
  uint16_t *half;
  int half_format, half_state;
} slM_Param;

#define SLM_MAX_INPUTS 4
#define SLM_MAX_PARAMS 2

typedef struct slM_Node {
  char name[64];
  slM_Kind kind;
  slM_Op op;
  int inputs[SLM_MAX_INPUTS];
  int ninputs;
  slM_Param *params[SLM_MAX_PARAMS]; /* weight, bias */
  int nparams;
  int heads;  /* OP_SCORES, OP_CONTEXT, OP_ATTENTION, OP_ROPE */
  int causal; /* OP_ATTENTION: key k kept for query q iff k <= q (the language model) */
  int act;    /* OP_LINEAR_ACT: the activation folded in (OP_RELU, OP_GELU, or OP_OUTPUT for none) */
  int patch;  /* OP_PATCHIFY */
  float p;    /* dropout probability, layer-norm epsilon, or scale */
  slM_NodeTransforms comp;
  /* metadata, filled by shape propagation */
  int ndim;
  int shape[SLM_MAX_DIMS]; /* output shape for a batch of one */
  double flops;            /* per sample */
  double bytes;            /* read and written per sample, parameters included (graph.c) */
  /* run time */
  slM_Tensor *out, *gout;
  int gout_live;     /* gout holds this backward pass's gradient (exec.c) */
  slM_Tensor *saved; /* dropout mask, layer-norm statistics, quantised inputs */
  slM_Tensor *saved2;
  int round;   /* a forward's output dtype when 16-bit (exec.c sets it before the forward), else 0 */
  int store;   /* the dtype its forward stores its output in (exec.c sets it: precision.c's slM_node_store) */
  int rounded; /* the forward rounded its output to that dtype itself: precision.c leaves it */
} slM_Node;

typedef struct slM_Graph {
  char family[32]; /* "mlp", "transformer" */
  slM_Node *nodes;
  int n, cap;
  int features, classes, tokens;
  int with_labels, with_mask;
  int training;          /* forward in training mode (dropout active) */
  slM_Rng rng;           /* dropout */
  char description[256]; /* how it was built, for show */
  /* for capture: the builder's arguments */
  int hidden[8], nhidden, activation, depth, width, heads, mlp_ratio, patch;
  float dropout;
  /* the language-model family: builder arguments, and the batch being run */
  int vocab, context, d_ff, layers;
  const int32_t *tok, *tgt;    /* set by slM_lm_forward for its placeholders */
  int batch_rows, context_now; /* their shape */
  int precision;               /* SLM_FP32, SLM_BF16, SLM_FP16: the inputs of products (precision.c) */
  int plan;                    /* buffer planning (fuse.c): a pass's tensors share one arena (plan.c) */
  struct slM_Plan *arena;      /* the placements and the arena held (plan.c) */
  struct slM_Profile *profile; /* when set, every node's time is recorded (profile.c) */
  int fused_attention;         /* transformer: attention as one fused node (OP_ATTENTION) */
  int device; /* where its nodes run: SLM_CPU or SLM_CUDA (op.h); the operator table has a slot per device */
  /* why the last pass on the device stopped (a failed launch, memory that
  ** could not be had); "" otherwise. A pass stops at the node that failed. */
  char fault[256];
  /* the batch of the pass being run (exec.c), read by the placeholders */
  const float *feed_x;
  const uint8_t *feed_labels;
  int feed_batch;
  /* A micro-batch's first row within its step's batch (accumulate.c), 0
  ** otherwise: dropout numbers its elements from there, so a micro-batch
  ** gets the masks its rows have in the whole batch. */
  int feed_row0;
  /* Told after each node's backward while a data-parallel step runs
  ** (accumulate.c): the gradients of parameters first used at that node or
  ** later are complete, and can travel while the rest of the pass runs. */
  void (*grad_ready)(void *ud, int node);
  void *grad_ready_ud;
  /* Asked between the nodes of a pass while training runs (set by the
  ** training loops, NULL otherwise): non-zero cuts the pass short and sets
  ** `stopped`, so the caller skips the update and one large batch stops
  ** within a node's time instead of at its end (exec.c). */
  int (*stop)(void *ud);
  void *stop_ud;
  int stopped; /* the last forward or backward pass was cut short */
} slM_Graph;

/* the inputs of products: the formats of kernels/round.h */
enum { SLM_FP32 = SLK_FP32, SLM_BF16 = SLK_BF16, SLM_FP16 = SLK_FP16 };

extern const sl_Class slM_model_class;

const char *slM_op_name(slM_Op op); /* ops.c */
const char *slM_kind_name(slM_Kind k);

/* builders: NULL with err on bad arguments */
typedef struct slM_MlpSpec {
  int inputs, classes, hidden[8], nhidden;
  int activation; /* OP_RELU, OP_GELU, OP_TANH */
  float dropout;
} slM_MlpSpec;
typedef struct slM_TransformerSpec {
  int height, width_px, classes, patch, depth, width, heads, mlp_ratio;
  float dropout;
  int fused_attention; /* 1: one OP_ATTENTION node per layer (no dropout on the probabilities) */
} slM_TransformerSpec;

slM_Graph *slM_mlp(const slM_MlpSpec *s, uint64_t seed, int labels, char *err, size_t errlen);
slM_Graph *slM_transformer(const slM_TransformerSpec *s, uint64_t seed, int labels, int mask, char *err, size_t errlen);
/* the same model traced again with other inputs; parameters are shared */
slM_Graph *slM_capture(const slM_Graph *g, int labels, int mask, char *err, size_t errlen);
/* structure copy sharing parameters (passes), or a deep copy (compression) */
slM_Graph *slM_graph_copy(const slM_Graph *g, int deep);
void slM_graph_free(slM_Graph *g);

/* the IR's vocabulary (nodes.c) */
int slM_add_node(slM_Graph *g, const char *name, slM_Kind kind, slM_Op op, const int *inputs, int ninputs);
/* inserts a node at position `at`, shifting later nodes and their references; returns at */
int slM_insert_node(slM_Graph *g, int at, const char *name, slM_Kind kind, slM_Op op, const int *inputs, int ninputs);
/* deletes node i, rewiring its users to its first input */
void slM_remove_node(slM_Graph *g, int i);
/* frees what a node owns: its references to parameters, transforms, tensors */
void slM_node_clear(slM_Node *n);
/* a pruning mask of n bytes, counted as parameter memory while its node holds it */
unsigned char *slM_mask_new(size_t n);
void slM_mask_free(unsigned char *mask, size_t n);
slM_Param *slM_param_new(const char *name, int ndim, const int *shape);
slM_Param *slM_param_clone(const slM_Param *p); /* a copy of the values, not the gradients */
void slM_param_release(slM_Param *p);
void slM_param_normal(slM_Param *p, slM_Rng *rng, double std); /* normal values of standard deviation std */
void slM_param_fill(slM_Param *p, float v);
int slM_find_node(const slM_Graph *g, const char *name);
int slM_loss_node(const slM_Graph *g);   /* -1 for an inference graph */
int slM_logits_node(const slM_Graph *g); /* what the output returns (before any loss) */
/* nodes that take node i as an input; fills users (size >= g->n), returns the count */
int slM_users(const slM_Graph *g, int i, int *users);
/* checks structure and shapes; 0, or -1 with err */
int slM_verify(slM_Graph *g, char *err, size_t errlen);
/* metadata: shapes, FLOPs, parameter counts (fills node shape/flops) */
int slM_propagate(slM_Graph *g, char *err, size_t errlen);
size_t slM_node_params(const slM_Node *n);
void slM_param_counts(const slM_Graph *g, size_t *trainable, size_t *total);

/* ------------------------------------------------------------ checkpoints */

/* A model as bytes (graph/checkpoint.c): its structure, builder arguments,
** every parameter with its optimiser state, pruning masks and the dropout
** random state, and its node transforms (quantisers, activation pruners),
** so that decode(encode(g)) runs bit for bit like g. */
int slM_graph_encode(const slM_Graph *g, slU_Text *out, char *err, size_t errlen);
slM_Graph *slM_graph_decode(const char *bytes, size_t n, char *err, size_t errlen);
/* the dataset's definition (not its numbers), from which a decode (data.c) loads the set again */
int slM_dataset_encode(const slM_Dataset *d, slU_Text *out, char *err, size_t errlen);

/* ------------------------------------------------------------- execution */

/* forward on a batch; labels may be NULL for inference graphs. Returns
** the logits node's output (owned by the graph). */
slM_Tensor *slM_forward(slM_Graph *g, const float *x, const uint8_t *labels, int batch, int training);
/* the input node's own rows for a batch (owned by the graph; NULL if it
** has no input node or plans its buffers, fuse.c): a caller that fills
** them and passes them as x to slM_forward saves the copy of the batch */
float *slM_input_rows(slM_Graph *g, int batch);
/* backward from d(loss)/d(logits) = softmax - onehot (or from the loss node);
** accumulates parameter gradients; returns the mean loss of the batch */
double slM_backward(slM_Graph *g, const uint8_t *labels, int batch);
void slM_zero_grads(slM_Graph *g);
void slM_release_activations(slM_Graph *g);
void slM_release_grads(slM_Graph *g); /* back to a fresh model's: no parameter gradients */

#endif
