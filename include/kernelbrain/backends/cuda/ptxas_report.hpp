// The ptxas -v report in an NVRTC log, read for the one figure a cubin does not hold: spill bytes.
// Advice only: NVRTC prints no report on a CUDA compute-cache hit, and a candidate can put
// ptxas-like lines into the log (#warning). Entry points and resources come from the cubin
// (backends/cuda/cubin.hpp). Bodies: impl/ptxas_report.ipp.
#pragma once
#include <string>
#include <utility>
#include <vector>
#include "kernelbrain/config.hpp"

namespace kernelbrain {

/// Static resources of one entry point as the ptxas report gives them.
struct cuda_kernel_resources {
  int registers = 0, spill_stores = 0, spill_loads = 0, stack = 0, static_smem = 0;
};

/// The resources per entry point in an NVRTC log, in the order first reported; a later report of the
/// same name replaces an earlier one (NVRTC prints #warning text before ptxas runs). Never throws,
/// whatever the text: numbers that do not parse are left at zero.
[[nodiscard]] KERNELBRAIN_DECL std::vector<std::pair<std::string, cuda_kernel_resources>> parse_ptxas_log(
    std::string const& log);

}  // namespace kernelbrain

#if KERNELBRAIN_HEADER_ONLY
#include "kernelbrain/backends/cuda/impl/ptxas_report.ipp"
#endif
