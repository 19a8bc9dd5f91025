/*
** op.h - what an operator is: the one record that declares it.
**
** Every operator a graph node can run is one slM_OpDef, in the spirit of
** PyTorch's native_functions.yaml or tinygrad's ops, written the C way: a
** static array of structs. The record says everything the rest of the
** engine asks about an operator, so no pass keeps a switch of its own:
**
**   name, arity      what torch.fx would call it (unique: checkpoints name
**                    operators by it); how many inputs and parameters it takes
**   settings         the node settings it reads (heads, patch, p) and the
**                    values each may take
**   shape            its output shape for a batch of one and its FLOPs per
**                    sample (graph.c's propagation calls it)
**   impl[device]     forward and backward, one pair per device, each named
**                    in full: CPU(...) for the CPU's, which every operator
**                    has, and SLM_CUDA_SLOT(...) for the GPU's (ops_cuda.c),
**                    which every operator of the three model families has
**                    and the fusion pass's lack; a model with an operator
**                    its device does not implement is refused before it
**                    moves there (devices.c)
**   saves, grad_to   what it keeps for the backward, and which inputs its
**                    backward reaches: the memory prediction reads these,
**                    and both devices' backwards call the rule grad_to
**                    names (the rules are here, below)
**   makes            the memory category of what its forward makes
**   autocast         how mixed precision treats it (precision.c)
**   flags            a product (profiles count GEMM time), an O(T^2)
**                    attention tensor, a loss, a cache kept between passes
**
** The model families register their operators in their own files: the
** operators every family uses (ops_core.c), attention (ops_attention.c), the
** language model's (ops_lm.c) and those only the fusion pass makes
** (ops_fused.c). ops.c gathers them into the table (ops.h). An operator
** with both implementations is its record, its CPU pair in its family's
** file, its CUDA pair in ops_cuda.c (declared in ops_cuda.h) and its
** tests.
*/
#ifndef SYSLAB_OP_H
#define SYSLAB_OP_H

#include "memory.h"
#include "model.h"

/* the devices an operator can be implemented for; a node runs where its graph is */
enum { SLM_CPU, SLM_CUDA, SLM_NUM_DEVICES };

typedef void (*slM_Kernel)(slM_Graph *g, slM_Node *n);

/* the values a node setting may take: lo <= x <= hi, or lo <= x < hi when `below` (a probability);
** {0}: the operator does not read the setting */
typedef struct slM_Range {
  double lo, hi;
  int below;
} slM_Range;

typedef struct slM_OpImpl {
  slM_Kernel forward;  /* reads the inputs' outputs; writes n->out (and n->saved, n->saved2) */
  slM_Kernel backward; /* from n->gout: adds into its inputs' gradient slots and its parameters' gradients */
} slM_OpImpl;

/* how mixed precision (autocast) treats an operator's output */
typedef enum {
  SLM_AUTOCAST_LOW,    /* a product: its inputs round to the graph's precision, it accumulates in float32 */
  SLM_AUTOCAST_FP32,   /* kept in float32 (norms, softmax, losses, inputs) */
  SLM_AUTOCAST_WIDEST, /* the widest float dtype of its inputs; float32 when a parameter takes part */
  SLM_AUTOCAST_INT,    /* ids and labels: int64 */
  SLM_AUTOCAST_FIRST,  /* its first input's (the output node) */
} slM_Autocast;

enum {
  SLM_OP_PRODUCT = 1,   /* its work is matrix products (a profile's GEMM share) */
  SLM_OP_QUADRATIC = 2, /* its output is one of attention's batch x heads x T x T tensors */
  SLM_OP_LOSS = 4,      /* the loss: one number, where the backward pass starts */
  SLM_OP_RESIDUAL = 8,  /* its output is as wide as the residual stream (memory prediction's unit) */
  SLM_OP_CACHES = 16,   /* what it saves is a cache its next pass reuses (the rotary table): kept out of the arena */
  /* its CPU kernels read inputs of either storage and store the output in n->store's dtype (slots.h),
  ** so that under a 16-bit precision its output, when its dtype is 16-bit, takes 16 bits a value
  ** (precision.c's slM_node_store); the executor widens 16-bit inputs for an operator without it */
  SLM_OP_HALF = 32,
  SLM_OP_HALF_IN = 128, /* its kernels read 16-bit inputs as they are; its output stays float32 (the fused linear) */
  SLM_OP_SAVES_HALF =
      64, /* what it saves is a mask kept in 16 bits under a 16-bit precision (precision.c's slM_mask_store) */
};

typedef struct slM_OpDef {
  slM_Op op;
  const char *name; /* as a traced graph names the target ("linear", "matmul_qk") */
  int min_inputs, max_inputs;
  int min_params; /* parameters it cannot run without (a weight; a gain and a shift) */
  /* structure beyond the counts of inputs and parameters; 0, or -1 with err */
  int (*check)(const slM_Graph *g, const slM_Node *n, char *err, size_t errlen);
  /* the node settings it reads and the values each may take: slM_verify refuses a node outside
  ** them (a damaged checkpoint, a faulty pass) before a shape rule or a kernel divides by one */
  slM_Range heads, patch, p;
  /* fills n->ndim, n->shape (a batch of one) and n->flops; 0, or -1 with err. NULL: the shape of its
  ** first input, and flops_per_item FLOPs per item of it */
  int (*shape)(slM_Graph *g, slM_Node *n, char *err, size_t errlen);
  double flops_per_item;
  slM_OpImpl impl[SLM_NUM_DEVICES];
  /* floats its forward keeps beside its output for the backward, for a batch (NULL: none) */
  double (*saves)(const slM_Graph *g, const slM_Node *n, int batch, int training);
  /* does input k receive a gradient (NULL: every input) */
  int (*grad_to)(const slM_Graph *g, const slM_Node *n, int k);
  int backward_temps; /* output-sized temporaries its backward keeps (the fused linear's 1) */
  /* under a 16-bit precision, the floats of the rounded copies of its largest product's two
  ** operands (a, b), and of its forward product's float32 result before it is stored in 16 bits
  ** (c), for a batch (NULL: it makes no product) */
  void (*rounded)(const slM_Graph *g, const slM_Node *n, double items, int training, double *a, double *b, double *c);
  int makes; /* the memory category of its forward's tensors (SLM_MEM_ACT) */
  slM_Autocast autocast;
  unsigned flags;
  const char *kernel; /* what runs it on the CPU, for node metadata ("cblas_sgemm", "loop") */
} slM_OpDef;

/* ranges several operators declare: attention's heads, a norm's epsilon */
#define SLM_RANGE_HEADS \
  { 1, 1 << 16, 0 }
#define SLM_RANGE_EPS \
  { 0, 1, 0 }

/* a record's kernels, named in full: CPU(linear_forward, linear_backward),
** SLM_CUDA_SLOT(slM_cuda_linear_forward, slM_cuda_linear_backward) */
#define CPU(forward, backward) .impl[SLM_CPU] = {forward, backward}
#define SLM_CUDA_SLOT(forward, backward) .impl[SLM_CUDA] = {forward, backward}

/* rules several operators share: nothing to run, no input gradient, a gradient for input 0 only */
static inline void slM_op_nothing(slM_Graph *g, slM_Node *n) { (void)g, (void)n; }
static inline int slM_grad_to_none(const slM_Graph *g, const slM_Node *n, int k) {
  return (void)g, (void)n, (void)k, 0;
}
static inline int slM_grad_to_first(const slM_Graph *g, const slM_Node *n, int k) { return (void)g, (void)n, k == 0; }

/* The linear layers' rule (linear, linear_act): images and their patches
** have nothing upstream to learn, so the first layer skips its input
** gradient, a third of its backward work. Here, beside the record that
** names it, because the backwards of both devices ask it, and a family's
** file and ops_cuda.c cannot call into each other (the records name the
** CUDA slots). */
static inline int slM_linear_grad_to(const slM_Graph *g, const slM_Node *n, int k) {
  slM_Op from = g->nodes[n->inputs[k]].op;
  return from != OP_INPUT && from != OP_PATCHIFY;
}

#endif
