/*
** device.c - what the engine knows of the GPU, asked through cuda/gpu.h.
**
** cuda/ answers "no device" when the binary was built without CUDA or runs
** on a machine without a GPU, so these calls are always safe.
*/
#include "kernels.h"

#include "cuda/gpu.h"

int slK_gpu_count(void) { return slG_device_count(); }
const char *slK_gpu_describe(void) { return slG_describe(); }

/* syslab.h: the `version` command reports the GPU through this */
const char *sl_gpu_describe(void) { return slG_describe(); }
