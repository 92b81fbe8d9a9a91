// alloc and release of the worker's device buffers.
#include "buffers.hpp"

#include <algorithm>
#include <string>
#include <vector>
#include "driver.hpp"
#include "errors.hpp"

namespace kernelbrain::cuda_worker {

buffer alloc(std::uint64_t bytes, std::string const& what, std::uint64_t min_bytes) {
  buffer b;
  b.bytes = bytes;
  const CUresult r = cu.cuMemAlloc(&b.p, std::max<std::uint64_t>(bytes, min_bytes));
  if (r != CUDA_SUCCESS) {
    if (sticky(r)) die("cuMemAlloc: " + err_text(r));
    throw request_failure{cp::status::out_of_memory,
                          "cannot allocate " + std::to_string(bytes) + " bytes for " + what + ": " + err_text(r)};
  }
  return b;
}
void release(std::vector<buffer>& v) {
  for (auto& b : v)
    if (b.p) cu.cuMemFree(b.p);
  v.clear();
}

}  // namespace kernelbrain::cuda_worker
