// cuda_build: what the CUDA backend reads from a compiled candidate besides its launch plans: the
// built record itself, the cubin's view of each launched kernel (for the worker to cross-check),
// device-code calls candidates may not make, and the static resources (registers, spills, shared
// memory, occupancy) reported with each measurement.
#pragma once
#include <algorithm>
#include <cstdint>
#include <string>
#include <vector>
#include "kernelbrain/backends/cuda/cubin.hpp"
#include "kernelbrain/backends/cuda/detail/protocol.hpp"
#include "kernelbrain/backends/cuda/ptxas_report.hpp"
#include "kernelbrain/core/measurement.hpp"
#include "kernelbrain/core/verdict.hpp"

namespace kernelbrain::detail::cuda {

/// A candidate, built: pass with its cubin, a resolved plan per shape and its resources, or why not.
struct built {
  verdict result;
  std::string cubin;
  std::vector<cuda_protocol::plan> plans;  ///< per shape
  resources res;
  double compile_seconds = 0;  ///< wall seconds of its NVRTC run; 0 for a cached cubin
};

/// What the worker cross-checks against cuFuncGetAttribute: the cubin's view of each kernel.
inline void annotate(cuda_protocol::plan& p, cubin_info const& info) {
  for (auto& l : p.launches)
    if (auto const* k = info.find(l.kernel)) {
      l.registers = k->registers;
      l.local_bytes = k->local_bytes;
      l.static_smem = k->static_smem;
    }
}

/// State that would outlive the candidate (the device heap) or flood the worker (printf): a
/// stage::policy reject naming the first such call in the cubin's imports, else pass.
inline verdict device_code_policy(cubin_info const& info) {
  for (auto const& f : info.imports)
    if (f == "malloc" || f == "free" || f == "__nv_aligned_device_malloc" || f == "vprintf")
      return verdict::reject(stage::policy,
                             "the kernel calls " + f + " in device code, which candidates may not: " +
                                 "use a scratch buffer of the launch plan instead of the device heap, and no printf");
  return verdict::pass();
}

/// The resources of `largest` (the plan at the last, largest shape; its kernels must be in `info`):
/// the most registers, spills and shared memory of any launch, and the occupancy of the first launch.
/// Spill counts are only in the ptxas report (`ptxas_log`), which NVRTC leaves empty on a
/// compute-cache hit; the report is taken where it agrees with the cubin, else local memory is the
/// spill signal.
inline resources static_resources(cuda_protocol::plan const& largest, cubin_info const& info,
                                  std::string const& ptxas_log) {
  const auto report = parse_ptxas_log(ptxas_log);
  int regs = 0, spill = 0, smem = 0;
  for (auto const& l : largest.launches) {
    auto const* k = info.find(l.kernel);
    regs = std::max(regs, k->registers);
    int spilled = k->local_bytes;
    for (auto const& [name, r] : report)
      if (name == l.kernel && r.registers == k->registers && r.stack == k->local_bytes)
        spilled = r.spill_stores + r.spill_loads;
    spill = std::max(spill, spilled);
    smem = std::max<int>(smem, k->static_smem + static_cast<int>(l.smem));
  }
  auto const& l = largest.launches.front();
  auto const* k = info.find(l.kernel);
  const std::int64_t threads = l.block[0] * l.block[1] * l.block[2];
  const std::int64_t warps = (threads + 31) / 32;
  const std::int64_t regs_warp = ((std::max(k->registers, 1) * 32 + 255) / 256) * 256;
  const std::int64_t by_regs = 65536 / std::max<std::int64_t>(1, regs_warp * warps);
  const std::int64_t by_smem = 233472 / (k->static_smem + l.smem + 1024);
  const std::int64_t by_threads = 2048 / std::max<std::int64_t>(1, threads);
  const std::int64_t blocks = std::min({by_regs, by_smem, by_threads, std::int64_t{32}});
  return resources{regs, spill, smem, static_cast<double>(blocks * warps) / 64.0};
}

}  // namespace kernelbrain::detail::cuda
