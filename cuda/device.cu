/*
** device.cu - the module's table (gpu.h), and GPU detection at run time.
**
** slG_backend is the one symbol the module exports (the others are hidden:
** CMake builds it with hidden visibility and keeps the static CUDA
** runtime's symbols inside it); every file of cuda/ fills the members of
** its entry points (module.h). The CUDA runtime is linked statically into
** the module, so loading it needs no toolkit; without a driver
** cudaGetDeviceCount fails, and the module reports no device.
*/
#include "module.h"

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
  snprintf(description, sizeof description, "%s, %.1f GiB, compute capability %d.%d", prop.name,
           prop.totalGlobalMem / 1073741824.0, prop.major, prop.minor);
  return description;
}

static slG_Backend filled(void) {
  slG_Backend b = {};
  b.version = SLG_BACKEND_VERSION;
  b.device_count = slG_device_count;
  b.describe = slG_describe;
  slG_fill_kernels(&b);
  slG_fill_cublas(&b);
  slG_fill_ops(&b);
  slG_fill_ops_graph(&b);
  slG_fill_ops_rows(&b);
  slG_fill_ops_train(&b);
  return b;
}

extern "C" __attribute__((visibility("default"))) const slG_Backend *slG_backend(void) {
  static const slG_Backend table = filled(); /* made once, by the first caller (C++ guards it) */
  return &table;
}
