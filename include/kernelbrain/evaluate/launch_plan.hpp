// Launch plans: the one place where a CUDA candidate's declarative launch plan (JSON text, see
// examples/cuda_problems/README.md) is resolved at a shape and checked against the device's limits
// and against the kernels its cubin defines. Used by the CUDA backend (parent side) and by
// tools/nvrtc_check.cpp. No CUDA header and no JSON library here; bodies in impl/launch_plan.ipp,
// compiled once from kernelbrain/src.hpp.
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
#include "kernelbrain/core/problem.hpp"
#include "kernelbrain/core/verdict.hpp"
#include "kernelbrain/evaluate/cubin.hpp"
#include "kernelbrain/evaluate/cuda_protocol.hpp"

namespace kernelbrain {

/// The device limits a plan is checked against (one home for them; H200 / sm_90 defaults).
struct device_limits {
  std::int64_t max_threads_per_block = 1024;
  std::int64_t max_dynamic_smem = 232448;   // opt-in maximum per block (227 KiB)
  std::int64_t max_block_smem = 232448;     // static + dynamic per block
  std::int64_t max_grid_x = 2147483647, max_grid_yz = 65535;
  std::int64_t max_block_z = 64;
  std::int64_t max_cluster = 8;             // portable cluster size
  std::int64_t max_scratch_bytes = std::int64_t{1} << 36;
};

/// Why a plan cannot be used: the verdict stage (signature or resources) and a message naming the
/// launch/field/expression.
struct plan_reject {
  stage where;
  std::string message;
};

/// Limits on a plan's text and structure (exceeding one is a signature reject).
namespace plan_limits {
inline constexpr std::size_t text_bytes = 65536;       ///< the plan's JSON text
inline constexpr std::size_t json_depth = 16;          ///< nesting of JSON arrays and objects (a plan needs 3)
inline constexpr std::size_t launches = static_cast<std::size_t>(cuda_protocol::max_launches);
inline constexpr std::size_t scratch_buffers = 32;
inline constexpr std::size_t args_per_launch = 128;    ///< 8 bytes each: 1 KiB of kernel parameters
inline constexpr std::size_t name_bytes = 256;         ///< kernel, scratch and argument names
}  // namespace plan_limits

/// Resolves a plan's JSON text at one shape of `p`: every expression evaluated over `dims`.
/// Throws plan_reject (and nothing else) for anything wrong with the text.
///
/// Buffers are numbered inputs, then outputs, then scratch buffers, in order; an argument names a
/// buffer (passed as a device pointer) or one of p.dim_order (passed as a long long). A scratch
/// buffer's `size` counts elements of its `dtype` (f32, the default, or f16); the plan's `scratch`
/// holds bytes. Checks, all before anything is returned: fields known and of the right type at every
/// level, names non-empty and short, no scratch name repeated or equal to a tensor or dim, every
/// expression evaluates (signature); then every size >= 1, block within max_threads_per_block (x, y and
/// x*y*z) and max_block_z, grid within max_grid_x / max_grid_yz, cluster dims >= 1 with at most
/// max_cluster blocks and dividing the grid, 0 <= smem <= max_dynamic_smem, each scratch buffer and
/// all of them together within max_scratch_bytes (resources). plan.cubin stays empty.
[[nodiscard]] cuda_protocol::plan resolve_launch_plan(problem const& p, std::map<std::string, std::int64_t> const& dims,
                                                      std::string_view text, device_limits const& limits = {});

/// Checks a resolved plan against the kernels its cubin defines: every launch names an entry point
/// (else signature, listing the entry points), passes exactly as many arguments as the kernel declares
/// and each parameter is 8 bytes (a pointer or a long long dim; else signature), the block fits the
/// kernel's __launch_bounds__ / required block shape and a register budget of 65536 per block
/// (else resources), static + dynamic shared memory fits max_block_smem (else resources).
///
/// Registers are counted as the hardware allocates them: per warp, rounded up to 256, so a launch
/// needs ceil(threads / 32) * round_up(registers * 32, 256) <= 65536; a kernel above 255 registers per
/// thread is a resources reject too. Signature problems in any launch are reported before resources
/// problems in any launch.
[[nodiscard]] std::optional<plan_reject> check_plan_against(cuda_protocol::plan const& plan, cubin_info const& kernels,
                                                           device_limits const& limits = {});

}  // namespace kernelbrain
