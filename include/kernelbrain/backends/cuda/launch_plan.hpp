// Launch plans: the one place where a CUDA candidate's declarative launch plan (JSON text, see
// examples/cuda_problems/README.md) is resolved at a shape and checked against the device's limits
// (the device's own, or one per-architecture table's) and against the kernels its cubin defines.
// Used by the CUDA backend (parent side) and by tools/nvrtc_check.cpp. No CUDA header and no JSON
// library here; bodies in impl/launch_plan.ipp (header-only: included below; else compiled once
// from kernelbrain/src.hpp).
//
// Everything a plan says is untrusted (models write plans): whatever the text, resolve_launch_plan
// returns a plan or throws plan_reject with stage signature (malformed: not JSON, wrong types, unknown
// or missing fields, bad names, an expression that does not evaluate, a plan over the size limits
// below) or resources (well-formed but absurd or unlaunchable values), and nothing else.
#pragma once
#include <cstddef>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include "kernelbrain/backends/cuda/arch_table.hpp"
#include "kernelbrain/backends/cuda/cubin.hpp"
#include "kernelbrain/backends/cuda/detail/protocol.hpp"
#include "kernelbrain/config.hpp"
#include "kernelbrain/core/problem.hpp"
#include "kernelbrain/core/verdict.hpp"

namespace kernelbrain {

/// The device limits a plan is checked against. They come from the device where there is one (the
/// CUDA worker asks the driver: detail::cuda_protocol::device_info, limits_for_device) and from
/// gpu_arch_table (arch_table.hpp) otherwise (limits_for_arch). A default-constructed value admits nothing.
struct device_limits {
  std::string source;  ///< what the numbers describe, named in rejects: "sm_86", "NVIDIA H200 (sm_90)"
  std::int64_t max_threads_per_block = 0;    ///< x * y * z
  std::int64_t max_block[3] = {0, 0, 0};     ///< each block dimension
  std::int64_t max_grid[3] = {0, 0, 0};      ///< each grid dimension
  std::int64_t max_smem_per_block = 0;       ///< static + dynamic shared memory, with the opt-in (the worker opts in)
  std::int64_t max_registers_per_block = 0;  ///< as the hardware allocates them (per warp, in units of 256)
  std::int64_t max_cluster = 0;              ///< blocks per cluster (the portable size); 1: no clusters
  std::int64_t max_scratch_bytes = 0;        ///< KernelBrain's cap on a plan's scratch buffers, not the device's
};

/// KernelBrain's cap on the scratch buffers of one plan (each, and all together): 64 GiB.
inline constexpr std::int64_t max_scratch_bytes = std::int64_t{1} << 36;

/// The architecture a problem without an "arch" targets (problem.options; NVRTC's target too).
inline constexpr std::string_view default_arch = "sm_90";

/// gpu_arch_table's row for `arch` (its launch limits) as device_limits (source: the arch's name). Throws
/// kernelbrain::error naming the known architectures for any other.
[[nodiscard]] KERNELBRAIN_DECL device_limits limits_for_arch(std::string_view arch);

/// The limits plans are checked against: the device's where the worker found one (threads, block,
/// grid, opt-in shared memory and registers as the driver reports them; the portable cluster size
/// where the driver supports cluster launch, else 1), the table's row for `arch` where it found none
/// (device.present == 0). Throws kernelbrain::error for a device that reports a limit below 1, and
/// as limits_for_arch for an unknown `arch`.
[[nodiscard]] KERNELBRAIN_DECL device_limits limits_for_device(detail::cuda_protocol::device_info const& device,
                                                               std::string_view arch);

/// Why a plan cannot be used: the verdict stage (signature or resources) and a message naming the
/// launch/field/expression.
struct plan_reject {
  stage where;
  std::string message;
};

/// Limits on a plan's text and structure (exceeding one is a signature reject).
namespace plan_limits {
inline constexpr std::size_t text_bytes = 65536;  ///< the plan's JSON text
inline constexpr std::size_t json_depth = 16;     ///< nesting of JSON arrays and objects (a plan needs 3)
inline constexpr std::size_t launches = static_cast<std::size_t>(detail::cuda_protocol::max_launches);
inline constexpr std::size_t scratch_buffers = 32;
inline constexpr std::size_t args_per_launch = 128;  ///< 8 bytes each: 1 KiB of kernel parameters
inline constexpr std::size_t name_bytes = 256;       ///< kernel, scratch and argument names
}  // namespace plan_limits

/// Resolves a plan's JSON text at one shape of `p`: every expression evaluated over `dims`.
/// Throws plan_reject (and nothing else) for anything wrong with the text.
///
/// Buffers are numbered inputs, then outputs, then scratch buffers, in order; an argument names a
/// buffer (passed as a device pointer) or one of p.dim_order (passed as a long long). A scratch
/// buffer's `size` counts elements of its `dtype` (f32, the default, or f16); the plan's `scratch`
/// holds bytes. Checks, all before anything is returned: fields known and of the right type at every
/// level, names non-empty and short, no scratch name repeated or equal to a tensor or dim, every
/// expression evaluates (signature); then every size >= 1, block within max_block (each dimension)
/// and max_threads_per_block (x*y*z), grid within max_grid, cluster dims >= 1 with at most
/// max_cluster blocks and dividing the grid, 0 <= smem <= max_smem_per_block, each scratch buffer and
/// all of them together within max_scratch_bytes (resources; the message names the limit and
/// limits.source). plan.cubin stays empty.
///
/// The default limits are sm_90's row of the table, for callers that know no better; the CUDA
/// backend passes limits_for_device's, nvrtc_check the problem's arch's.
[[nodiscard]] KERNELBRAIN_DECL detail::cuda_protocol::plan resolve_launch_plan(
    problem const& p, std::map<std::string, std::int64_t> const& dims, std::string_view text,
    device_limits const& limits = limits_for_arch(default_arch));

/// Checks a resolved plan against the kernels its cubin defines: every launch names an entry point
/// (else signature, listing the entry points), passes exactly as many arguments as the kernel declares
/// and each parameter is 8 bytes (a pointer or a long long dim; else signature), the block fits the
/// kernel's __launch_bounds__ / required block shape and max_registers_per_block (else resources),
/// static + dynamic shared memory fits max_smem_per_block (else resources).
///
/// Registers are counted as the hardware allocates them: per warp, rounded up to 256, so a launch
/// needs ceil(threads / 32) * round_up(registers * 32, 256) <= max_registers_per_block; a kernel
/// above 255 registers per thread is a resources reject too. Signature problems in any launch are
/// reported before resources problems in any launch.
[[nodiscard]] KERNELBRAIN_DECL std::optional<plan_reject> check_plan_against(
    detail::cuda_protocol::plan const& plan, cubin_info const& kernels,
    device_limits const& limits = limits_for_arch(default_arch));

}  // namespace kernelbrain

#if KERNELBRAIN_HEADER_ONLY
#include "kernelbrain/backends/cuda/impl/launch_plan.ipp"
#endif
