/*
** module.h - what the files of cuda/ share to make the module: each file's
** part of the table of gpu.h, and the entry points kernels.cu calls in
** ops.cu. CUDA C++ only.
**
** Each file fills the members of the entry points it defines, next to
** their definitions, so that an entry point is its member in gpu.h, its
** definition and one line of its file's fill; device.cu's slG_backend, the
** module's one exported symbol, calls every fill once.
*/
#ifndef SYSLAB_CUDA_MODULE_H
#define SYSLAB_CUDA_MODULE_H

#include "gpu.h"

void slG_fill_kernels(slG_Backend *b);   /* kernels.cu: host arrays, benchmark cases, the roofs */
void slG_fill_cublas(slG_Backend *b);    /* cublas.cu: the graph's products */
void slG_fill_ops(slG_Backend *b);       /* ops.cu: memory, rounding, linear, elementwise, embedding, RoPE */
void slG_fill_ops_graph(slG_Backend *b); /* ops_graph.cu: tanh, scale, the fused attention node */
void slG_fill_ops_rows(slG_Backend *b);  /* ops_rows.cu: norms, softmax, cross-entropy */
void slG_fill_ops_train(slG_Backend *b); /* ops_train.cu: the optimisers */

/* the benchmark case of the linear layer as a bf16 model runs it (kernels.cu) */
extern "C" int slG_to_half(int format, const float *x, uint16_t *y, size_t n, char *err, size_t errlen);
extern "C" int slG_linear_forward(int format, const void *x, const void *w, const float *b, float *y, size_t rows,
                                  int in_f, int out_f, char *err, size_t errlen);

#endif
