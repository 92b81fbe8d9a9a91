// The GPU architectures KernelBrain knows, one row each with every per-architecture fact the CUDA
// backend uses, for when there is no device to ask: the launch limits plans are checked against
// (launch_plan.hpp: limits_for_arch), one SM's resources for the static occupancy (diagnosis.hpp:
// sm_resources_for_arch), and the shared memory the driver reserves per block, which the cubin
// reader subtracts (cubin.hpp). The one place these numbers are written. No CUDA header here.
#pragma once
#include <cstdint>
#include <string_view>

namespace kernelbrain {

/// Blocks per cluster that every architecture with clusters (sm_90 and later) guarantees.
inline constexpr std::int64_t portable_cluster_size = 8;

/// One row of gpu_arch_table.
struct gpu_arch {
  std::string_view arch;   ///< the NVRTC target (--gpu-architecture)
  int compute_capability;  ///< 10 * major + minor
  /// What one launch may ask for.
  struct launch_limits {
    std::int64_t max_threads_per_block;  ///< x * y * z
    std::int64_t max_block[3];           ///< each block dimension
    std::int64_t max_grid[3];            ///< each grid dimension
    std::int64_t max_smem_per_block;  ///< the opt-in maximum per block (the driver's MAX_SHARED_MEMORY_PER_BLOCK_OPTIN)
    std::int64_t max_registers_per_block;
    std::int64_t max_cluster;  ///< blocks per cluster (the portable size); 1: no clusters
  } launch;
  /// One SM's resources, for the occupancy calculation.
  struct sm_facts {
    int max_warps;                         ///< resident warps per SM
    int max_blocks;                        ///< resident blocks per SM
    std::int64_t registers;                ///< 32-bit registers per SM
    int register_unit;                     ///< registers are allocated per warp in units of this
    std::int64_t shared_bytes;             ///< shared memory per SM (the largest carve-out)
    std::int64_t reserved_smem_per_block;  ///< shared memory per block reserved by the driver
    int count;                             ///< SMs of the common part (H100/H200 SXM: 132); 0 unknown
  } sm;
};

/// Sources: the CUDA C++ Programming Guide's table of technical specifications per compute
/// capability, and NVIDIA's CCCL (libcudacxx cuda/__device/arch_traits.h: opt-in shared memory per
/// block = shared memory per SM - 1 KiB reserved by the driver; 164 KiB per SM on 8.0 and 8.7,
/// 100 KiB on 8.6, 8.9 and 12.0, 228 KiB on 9.0 and 10.0). Every listed architecture has 1024
/// threads per block, blocks up to 1024 x 1024 x 64, grids up to (2^31 - 1) x 65535 x 65535 and
/// 64 K registers per block; clusters start at sm_90. An "a" target (sm_90a, sm_100a) runs on the
/// same hardware as its base.
// clang-format off
inline constexpr gpu_arch gpu_arch_table[] = {
    // arch     cc   launch: threads  block             grid                          smem opt-in  registers  cluster
    //               SM:     warps  blocks  registers  unit  shared  reserved  SMs
    {"sm_80",   80,  {1024, {1024, 1024, 64}, {2147483647, 65535, 65535}, 163 * 1024, 65536, 1},
                     {64, 32, 65536, 256, 167936, 1024, 108}},  // A100
    {"sm_86",   86,  {1024, {1024, 1024, 64}, {2147483647, 65535, 65535}, 99 * 1024, 65536, 1},
                     {48, 16, 65536, 256, 102400, 1024, 0}},
    {"sm_87",   87,  {1024, {1024, 1024, 64}, {2147483647, 65535, 65535}, 163 * 1024, 65536, 1},
                     {48, 16, 65536, 256, 167936, 1024, 0}},
    {"sm_89",   89,  {1024, {1024, 1024, 64}, {2147483647, 65535, 65535}, 99 * 1024, 65536, 1},
                     {48, 24, 65536, 256, 102400, 1024, 0}},
    {"sm_90",   90,  {1024, {1024, 1024, 64}, {2147483647, 65535, 65535}, 227 * 1024, 65536, portable_cluster_size},
                     {64, 32, 65536, 256, 233472, 1024, 132}},  // H100 / H200 SXM
    {"sm_90a",  90,  {1024, {1024, 1024, 64}, {2147483647, 65535, 65535}, 227 * 1024, 65536, portable_cluster_size},
                     {64, 32, 65536, 256, 233472, 1024, 132}},
    {"sm_100",  100, {1024, {1024, 1024, 64}, {2147483647, 65535, 65535}, 227 * 1024, 65536, portable_cluster_size},
                     {64, 32, 65536, 256, 233472, 1024, 0}},
    {"sm_100a", 100, {1024, {1024, 1024, 64}, {2147483647, 65535, 65535}, 227 * 1024, 65536, portable_cluster_size},
                     {64, 32, 65536, 256, 233472, 1024, 0}},
    {"sm_120",  120, {1024, {1024, 1024, 64}, {2147483647, 65535, 65535}, 99 * 1024, 65536, portable_cluster_size},
                     {48, 32, 65536, 256, 102400, 1024, 0}},
};
// clang-format on

/// The table's row for `arch`; nullptr for an architecture it does not list.
[[nodiscard]] constexpr gpu_arch const* find_gpu_arch(std::string_view arch) noexcept {
  for (auto const& row : gpu_arch_table)
    if (row.arch == arch) return &row;
  return nullptr;
}

// Every row: the opt-in shared memory per block is the SM's less what the driver reserves per block.
static_assert([] {
  for (auto const& row : gpu_arch_table)
    if (row.launch.max_smem_per_block != row.sm.shared_bytes - row.sm.reserved_smem_per_block) return false;
  return true;
}());

}  // namespace kernelbrain
