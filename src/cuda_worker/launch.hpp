// Running a candidate's plan in kernelbrain-cuda-worker: loading its cubin (load_module), its
// functions checked against the cubin and the device (functions_of), and every launch of the plan
// (launch_all). Shared by the serving worker and the sanitizer mode.
#pragma once
#include <cuda.h>

#include <cstdint>
#include <string>
#include <vector>
#include "buffers.hpp"
#include "kernelbrain/backends/cuda/detail/protocol.hpp"

namespace kernelbrain::cuda_worker {

namespace cp = kernelbrain::detail::cuda_protocol;

/// A loaded module and what belongs to it (scratch buffers), freed together.
struct loaded_module {
  CUmodule mod = nullptr;
  std::vector<buffer> scratch;
};

/// Loads a cubin. Out of memory (large __device__ arrays) is a resources failure, anything else a
/// load failure; a sticky error ends the worker.
CUmodule load_module(std::string const& path);

/// The functions of a plan, each checked against what the parent read from the cubin and against the
/// device's limits, and prepared for its launch (static + dynamic shared memory above the device's
/// default per block, 48 KiB, needs an opt-in).
std::vector<CUfunction> functions_of(CUmodule m, cp::plan const& p, std::string const& who, cp::device_info const& dev);

/// Launches every launch of `p` on `stream` (buffers: inputs, outputs, scratch, by index).
void launch_all(cp::plan const& p, std::vector<CUfunction> const& fns, std::vector<CUdeviceptr>& ptrs,
                std::vector<std::int64_t> const& dims, CUstream stream, std::string const& who);

}  // namespace kernelbrain::cuda_worker
