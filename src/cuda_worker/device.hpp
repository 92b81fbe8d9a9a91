// Device 0 for kernelbrain-cuda-worker: its limits as the driver reports them (query_device, asked
// without a context), why a launch falls outside them (outside_device), and the worker process's
// context on it (device_context: the primary context and one stream).
#pragma once
#include <cuda.h>

#include <cstdint>
#include <string>
#include "kernelbrain/backends/cuda/detail/protocol.hpp"

namespace kernelbrain::cuda_worker {

namespace cp = kernelbrain::detail::cuda_protocol;

/// Device 0 as the driver reports it, asked without creating a context: the reply to request::device
/// (the parent checks plans against these limits), and what the worker checks each launch against.
/// present == 0, with the reason, when there is no usable driver or device.
cp::device_info query_device();

/// Why launch `l` of a kernel with `static_smem` bytes of static shared memory cannot run on the
/// device `d`, or "" (also when `d` is unknown). The parent checked the plan against the same
/// limits when it has them: this catches a parent that checked against other ones.
std::string outside_device(cp::launch const& l, std::int64_t static_smem, cp::device_info const& d);

/// The device context of a worker process: device 0, its primary context, one stream.
struct device_context {
  CUdevice dev = 0;
  CUcontext ctx = nullptr;
  CUstream stream = nullptr;
  /// Loads the driver and makes device 0's primary context current; any failure ends the process.
  device_context();
};

}  // namespace kernelbrain::cuda_worker
