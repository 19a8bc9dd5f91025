/*
** gpu.h - what the engine asks of the GPU, whether or not one exists.
**
** The CPU build links gpu_none.c, which always answers "no device". A build
** with nvcc links the CUDA sources of cuda/ instead, which find a device at run
** time; with no driver or no device they answer the same as gpu_none.c, so
** one binary runs everywhere and every caller keeps a CPU path.
*/
#ifndef SYSLAB_GPU_H
#define SYSLAB_GPU_H

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

/* number of usable CUDA devices; 0 without a GPU or a CUDA build */
int slG_device_count(void);
/* one line: device name and memory, or why there is none */
const char *slG_describe(void);
/* 1 if this binary was built with CUDA kernels */
int slG_built_with_cuda(void);

#ifdef __cplusplus
}
#endif

#endif
