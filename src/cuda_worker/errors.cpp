// The worker's failures: which CUDA errors are sticky, their text, and ending the process on one.
#include "errors.hpp"

#include <cstdio>
#include <cstdlib>
#include <string>
#include "driver.hpp"

namespace kernelbrain::cuda_worker {

bool sticky(CUresult r) {
  switch (r) {
    case CUDA_ERROR_ILLEGAL_ADDRESS:
    case CUDA_ERROR_LAUNCH_FAILED:
    case CUDA_ERROR_ILLEGAL_INSTRUCTION:
    case CUDA_ERROR_MISALIGNED_ADDRESS:
    case CUDA_ERROR_INVALID_ADDRESS_SPACE:
    case CUDA_ERROR_INVALID_PC:
    case CUDA_ERROR_HARDWARE_STACK_ERROR:
    case CUDA_ERROR_ASSERT:
    case CUDA_ERROR_LAUNCH_TIMEOUT:
    case CUDA_ERROR_ECC_UNCORRECTABLE:
    case CUDA_ERROR_CONTEXT_IS_DESTROYED:
      return true;
    default:
      return false;
  }
}
std::string err_text(CUresult r) {
  char const* n = nullptr;
  char const* s = nullptr;
  if (cu.cuGetErrorName) cu.cuGetErrorName(r, &n);
  if (cu.cuGetErrorString) cu.cuGetErrorString(r, &s);
  return std::string(n ? n : "CUDA error " + std::to_string(static_cast<int>(r))) + " (" + (s ? s : "?") + ")";
}

[[noreturn]] void die(std::string const& what) {
  std::fprintf(stderr, "kernelbrain-cuda-worker: sticky CUDA error: %s\n", what.c_str());
  std::fflush(stderr);
  std::_Exit(70);
}
void die_if(CUresult r, char const* what) {
  if (r != CUDA_SUCCESS) die(std::string(what) + ": " + err_text(r));
}

}  // namespace kernelbrain::cuda_worker
