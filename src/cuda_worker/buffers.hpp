// Device memory of kernelbrain-cuda-worker: buffers, their allocation (a failure ends the request,
// not the worker) and release, and the poison values written into outputs and scratch before a run.
#pragma once
#include <cuda.h>

#include <cstdint>
#include <string>
#include <vector>
#include "kernelbrain/backends/cuda/detail/protocol.hpp"

namespace kernelbrain::cuda_worker {

namespace cp = kernelbrain::detail::cuda_protocol;

inline constexpr std::uint32_t f32_p1 = 0x7fc0deadU, f32_p2 = 0x7f7fdeadU;  // a NaN, then a huge finite value
inline constexpr std::uint32_t f16_p1 = 0x7e5aU, f16_p2 = 0x7bfeU;

struct buffer {
  CUdeviceptr p = 0;
  std::uint64_t bytes = 0;
};
inline std::uint64_t bytes_of(cp::tensor const& t) { return t.count * (t.dtype ? 2 : 4); }

/// Allocates `bytes` (at least `min_bytes`): an allocation failure ends the request, not the worker.
buffer alloc(std::uint64_t bytes, std::string const& what, std::uint64_t min_bytes = 256);
/// Frees every buffer of `v` and empties it.
void release(std::vector<buffer>& v);

}  // namespace kernelbrain::cuda_worker
