// driver_api::load (dlopen of libcuda.so.1, each function by cuGetProcAddress) and the worker's one
// driver table, cu.
#include "driver.hpp"

#include <dlfcn.h>

#include <string>

namespace kernelbrain::cuda_worker {

bool driver_api::load() {
  if (loaded) return true;
  if (!missing.empty()) return false;  // tried before
  void* lib = ::dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
  if (!lib) {
    char const* e = ::dlerror();
    missing = std::string("cannot open libcuda.so.1 (no NVIDIA driver?): ") + (e ? e : "?");
    return false;
  }
  using get_proc = CUresult (*)(char const*, void**, int, cuuint64_t, CUdriverProcAddressQueryResult*);
  auto gpa = reinterpret_cast<get_proc>(::dlsym(lib, "cuGetProcAddress_v2"));
  if (!gpa) {
    missing = "libcuda.so.1 has no cuGetProcAddress_v2 (a driver older than CUDA 12)";
    return false;
  }
  auto one = [&](char const* name, void** out) {
    CUdriverProcAddressQueryResult st{};
    if (gpa(name, out, CUDA_VERSION, CU_GET_PROC_ADDRESS_DEFAULT, &st) != CUDA_SUCCESS || !*out) {
      if (missing.empty()) missing = std::string("the driver lacks ") + name;
    }
  };
#define KB_LOAD(f) one(#f, reinterpret_cast<void**>(&f));  // NOLINT(bugprone-macro-parentheses): f names a member
  KB_DRIVER_FUNCTIONS(KB_LOAD)
#undef KB_LOAD
  CUdriverProcAddressQueryResult st{};
  if (gpa("cuProfilerStart", reinterpret_cast<void**>(&profiler_start), CUDA_VERSION, CU_GET_PROC_ADDRESS_DEFAULT,
          &st) != CUDA_SUCCESS)
    profiler_start = nullptr;
  if (gpa("cuProfilerStop", reinterpret_cast<void**>(&profiler_stop), CUDA_VERSION, CU_GET_PROC_ADDRESS_DEFAULT, &st) !=
      CUDA_SUCCESS)
    profiler_stop = nullptr;
  loaded = missing.empty();
  return loaded;
}

driver_api cu;

}  // namespace kernelbrain::cuda_worker
