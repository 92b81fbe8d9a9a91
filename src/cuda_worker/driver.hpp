// The CUDA driver API of kernelbrain-cuda-worker, opened at run time (dlopen of libcuda.so.1): the
// table of driver functions the worker calls (driver_api) and the one instance of it (cu), so that
// --compile and --version work on machines without a driver.
#pragma once
#include <cuda.h>

#include <string>

namespace kernelbrain::cuda_worker {

// Every driver function the worker calls. A member is named after cuda.h's macro (cuMemAlloc is
// cuMemAlloc_v2), so it has the type of the version this file was compiled against, and
// cuGetProcAddress is asked for that version by its base name.
// clang-format 14 indents each continuation line of this list further than the last: keep it by hand.
// clang-format off
#define KB_DRIVER_FUNCTIONS(X)                                                                                   \
  X(cuInit) X(cuDriverGetVersion) X(cuDeviceGet) X(cuDeviceGetCount) X(cuDeviceGetName) X(cuDeviceGetAttribute)  \
  X(cuDevicePrimaryCtxRetain) X(cuCtxSetCurrent) X(cuCtxResetPersistingL2Cache) X(cuStreamCreate)                \
  X(cuStreamSynchronize) X(cuEventCreate) X(cuEventRecord) X(cuEventElapsedTime) X(cuGetErrorName)               \
  X(cuGetErrorString) X(cuMemAlloc) X(cuMemFree) X(cuMemsetD32Async) X(cuMemsetD16Async) X(cuMemcpyDtoHAsync)    \
  X(cuMemcpyHtoDAsync) X(cuMemcpyDtoDAsync) X(cuModuleLoad) X(cuModuleLoadData) X(cuModuleUnload)               \
  X(cuModuleGetFunction) X(cuFuncSetAttribute) X(cuFuncGetAttribute) X(cuLaunchKernel) X(cuLaunchKernelEx)
// clang-format on

struct driver_api {
#define KB_MEMBER(f) decltype(&::f) f = nullptr;  // NOLINT(bugprone-macro-parentheses): f names a member
  KB_DRIVER_FUNCTIONS(KB_MEMBER)
#undef KB_MEMBER
  std::string missing;  ///< why the driver is unusable; empty once loaded
  bool loaded = false;
  /// cuProfilerStart / cuProfilerStop (cudaProfiler.h), for --profile-once only: looked up, not required.
  CUresult (*profiler_start)() = nullptr;
  CUresult (*profiler_stop)() = nullptr;

  /// Opens libcuda.so.1 and looks up every function (once); false, with `missing` set, when it cannot.
  bool load();
};

/// The worker's driver table (loaded on first use).
extern driver_api cu;

}  // namespace kernelbrain::cuda_worker
