/*
** device.cu - GPU detection at run time for builds with CUDA.
**
** Compile: part of the CMake build when nvcc is found (SYSLAB_CUDA=AUTO).
** The CUDA runtime is linked statically, so the binary starts on machines
** without a driver; cudaGetDeviceCount then fails and we report no device.
*/
#include "gpu.h"

#include <cuda_runtime.h>
#include <stdio.h>

static char description[256];

extern "C" int slG_device_count(void) {
  int n = 0;
  if (cudaGetDeviceCount(&n) != cudaSuccess) {
    cudaGetLastError(); /* clear the sticky error so later calls start clean */
    return 0;
  }
  return n;
}

extern "C" const char *slG_describe(void) {
  int n = 0;
  cudaError_t rc = cudaGetDeviceCount(&n);
  if (rc != cudaSuccess || n == 0) {
    snprintf(description, sizeof description, "no GPU: %s",
             rc != cudaSuccess ? cudaGetErrorString(rc) : "no CUDA device");
    cudaGetLastError();
    return description;
  }
  cudaDeviceProp prop;
  cudaGetDeviceProperties(&prop, 0);
  snprintf(description, sizeof description, "%s, %.1f GiB, compute capability %d.%d",
           prop.name, prop.totalGlobalMem / 1073741824.0, prop.major, prop.minor);
  return description;
}

extern "C" int slG_built_with_cuda(void) { return 1; }
