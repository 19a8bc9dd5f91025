/* gpu_none.c - the GPU shim for builds without CUDA: no device, ever. */
#include "gpu.h"

int slG_device_count(void) { return 0; }
const char *slG_describe(void) { return "no GPU: this syslab was built without CUDA"; }
int slG_built_with_cuda(void) { return 0; }
