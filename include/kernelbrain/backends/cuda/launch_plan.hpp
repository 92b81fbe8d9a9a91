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
#include "kernelbrain/backends/cuda/cubin.hpp"
#include "kernelbrain/backends/cuda/detail/protocol.hpp"
#include "kernelbrain/config.hpp"
#include "kernelbrain/core/problem.hpp"
#include "kernelbrain/core/verdict.hpp"

namespace kernelbrain {

/// The device limits a plan is checked against. They come from the device where there is one (the
/// CUDA worker asks the driver: detail::cuda_protocol::device_info, limits_for_device) and from
/// arch_limits_table otherwise (limits_for_arch). A default-constructed value admits nothing.
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

/// Blocks per cluster that every architecture with clusters (sm_90 and later) guarantees.
inline constexpr std::int64_t portable_cluster_size = 8;
/// KernelBrain's cap on the scratch buffers of one plan (each, and all together): 64 GiB.
inline constexpr std::int64_t max_scratch_bytes = std::int64_t{1} << 36;

/// One row of arch_limits_table.
struct arch_limits {
  std::string_view arch;   ///< the NVRTC target (--gpu-architecture)
  int compute_capability;  ///< 10 * major + minor
  std::int64_t max_threads_per_block;
  std::int64_t max_block[3];
  std::int64_t max_grid[3];
  std::int64_t max_smem_per_block;  ///< the opt-in maximum per block (the driver's MAX_SHARED_MEMORY_PER_BLOCK_OPTIN)
  std::int64_t max_registers_per_block;
  std::int64_t max_cluster;
};

/// The limits of each architecture KernelBrain knows, for when there is no device to ask: the one
/// place these numbers are written. Sources: the CUDA C++ Programming Guide's table of technical
/// specifications per compute capability, and NVIDIA's CCCL (libcudacxx cuda/__device/arch_traits.h:
/// opt-in shared memory per block = shared memory per SM - 1 KiB reserved by the driver; 164 KiB per
/// SM on 8.0 and 8.7, 100 KiB on 8.6, 8.9 and 12.0, 228 KiB on 9.0 and 10.0). Every listed
/// architecture has 1024 threads per block, blocks up to 1024 x 1024 x 64, grids up to
/// (2^31 - 1) x 65535 x 65535 and 64 K registers per block; clusters start at sm_90. An "a" target
/// (sm_90a, sm_100a) runs on the same hardware as its base.
inline constexpr arch_limits arch_limits_table[] = {
    // arch     cc   threads  block              grid                          smem opt-in      registers  cluster
    {"sm_80", 80, 1024, {1024, 1024, 64}, {2147483647, 65535, 65535}, 163 * 1024, 65536, 1},
    {"sm_86", 86, 1024, {1024, 1024, 64}, {2147483647, 65535, 65535}, 99 * 1024, 65536, 1},
    {"sm_87", 87, 1024, {1024, 1024, 64}, {2147483647, 65535, 65535}, 163 * 1024, 65536, 1},
    {"sm_89", 89, 1024, {1024, 1024, 64}, {2147483647, 65535, 65535}, 99 * 1024, 65536, 1},
    {"sm_90", 90, 1024, {1024, 1024, 64}, {2147483647, 65535, 65535}, 227 * 1024, 65536, portable_cluster_size},
    {"sm_90a", 90, 1024, {1024, 1024, 64}, {2147483647, 65535, 65535}, 227 * 1024, 65536, portable_cluster_size},
    {"sm_100", 100, 1024, {1024, 1024, 64}, {2147483647, 65535, 65535}, 227 * 1024, 65536, portable_cluster_size},
    {"sm_100a", 100, 1024, {1024, 1024, 64}, {2147483647, 65535, 65535}, 227 * 1024, 65536, portable_cluster_size},
    {"sm_120", 120, 1024, {1024, 1024, 64}, {2147483647, 65535, 65535}, 99 * 1024, 65536, portable_cluster_size},
};

/// The architecture a problem without an "arch" targets (problem.options; NVRTC's target too).
inline constexpr std::string_view default_arch = "sm_90";

/// The table's row for `arch` as device_limits (source: the arch's name). Throws kernelbrain::error
/// naming the known architectures for any other.
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
