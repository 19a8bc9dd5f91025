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
#include <unistd.h>

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
    /* Without NVIDIA's driver the runtime says its version is "insufficient",
    ** which reads as if a driver were there but old: say what is missing. */
    int driver = access("/proc/driver/nvidia/version", F_OK) == 0;
    const char *why = rc == cudaSuccess || rc == cudaErrorNoDevice ? "no CUDA device was found"
                      : rc == cudaErrorInsufficientDriver && !driver
                          ? "this machine has no NVIDIA driver (no NVIDIA GPU)"
                          : cudaGetErrorString(rc);
    snprintf(description, sizeof description, "no GPU: %s", why);
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
