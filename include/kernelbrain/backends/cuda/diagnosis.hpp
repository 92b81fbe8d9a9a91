// Diagnoses: why a measured kernel is as fast as it is, as tags with the number that triggered each
// (measurement::diagnosis, as text). Two sources:
//   - static, from what every build and timing already gives: registers, spills and shared memory
//     (the cubin and the ptxas report), the launch's block and grid, and how close the timing is to
//     the shape's roofline floor (problem.json's cost and machine);
//   - profiled, from Nsight Compute (ncu) hardware counters of one run of the candidate at one shape
//     (the CUDA backend's runner: backends/cuda/detail/profiler.hpp; what it collects: ncu_metrics below).
// Also here: reading ncu's CSV output (--csv --page raw), the text form of a diagnosis (render) and
// reading it back (parse_diagnosis), for the journal, LLM prompts and schedulers. No CUDA, no
// processes, no JSON: bodies in impl/diagnosis.ipp. docs/profiling.md describes every tag.
//
// The vocabulary (the value's unit in brackets; thresholds are the constants in diagnosis_thresholds,
// each justified there):
//   near bandwidth             [%]   static: >= 70% of the roofline floor's speed on a bandwidth-bound
//                                    shape; profiled: DRAM throughput >= 70% of its peak
//   far below bandwidth        [%]   static: < 30% of the floor's speed on a bandwidth-bound shape
//   near compute peak          [%]   static: >= 70% of the floor's speed on a compute-bound shape
//   far below compute peak     [%]   static: < 30% of the floor's speed on a compute-bound shape
//   compute bound              [%]   profiled: SM throughput >= 70% of peak while DRAM is < 50%
//   latency bound              [%]   profiled: SM and DRAM throughput both < 60% of peak (the larger one)
//   excess memory traffic      [x]   profiled: DRAM bytes >= 1.5 x the shape's minimal bytes
//   low L2 hit rate            [%]   profiled: L2 sector hit rate < 50% while traffic is in excess
//   uncoalesced loads          [%]   profiled: < 60% of each 32-byte sector of global loads used
//   uncoalesced stores         [%]   the same for global stores
//   shared-memory bank conflicts [%] profiled: >= 25% of shared-memory wavefronts are conflict replays
//   register spills            [B]   static: ptxas reports spill bytes (else a local stack frame)
//   occupancy limited by registers      [%]  theoretical occupancy < 50% and registers set the limit
//   occupancy limited by shared memory  [%]  ... shared memory sets it
//   occupancy limited by block size     [%]  <= 50% and the per-SM block or warp limit sets it
//                                            (blocks too small, or warps per block not dividing the SM's)
//   (occupancy tags: static from the plan's main launch and the cubin, or profiled from ncu's limits)
//   low achieved occupancy     [%]   profiled: achieved < 60% of theoretical occupancy
//   small grid                 [blocks] fewer blocks than SMs
//   tail effect                [waves] > 1 wave and >= 20% of the SM time idle in the last one
//   long-scoreboard stalls     [%]   profiled: >= 40% of warp cycles per issued instruction waiting
//                                    on L1TEX (global, local, texture) results
//   barrier stalls             [%]   >= 25% waiting at __syncthreads / barriers
//   mio-throttle stalls        [%]   >= 25% waiting on the MIO queue (shared memory, special math)
//   short-scoreboard stalls    [%]   >= 25% waiting on MIO results (shared memory loads, MUFU)
//   lg-throttle stalls         [%]   >= 25% waiting on the LSU queue for global/local memory
//   math-pipe-throttle stalls  [%]   >= 40% waiting for a busy math pipe
//   profiler unavailable       [0]   no profile: why (ncu not found, no permission, failed, timeout)
#pragma once
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>
#include "kernelbrain/backends/cuda/arch_table.hpp"
#include "kernelbrain/config.hpp"
#include "kernelbrain/core/diagnosis_tags.hpp"
#include "kernelbrain/core/measurement.hpp"
#include "kernelbrain/core/problem.hpp"

namespace kernelbrain {

/// One finding: a name from diagnosis_vocabulary (core/diagnosis_tags.hpp, with the names in
/// diagnosis_names), the number that triggered it (unit per tag, see the table above) and one line of
/// detail in words, with the numbers behind it.
struct diagnosis_tag {
  std::string name;
  double value = 0;
  std::string detail;
  friend bool operator==(diagnosis_tag const&, diagnosis_tag const&) = default;
};

/// Where each rule fires. Percentages are of peak (ncu's pct_of_peak metrics) unless said otherwise.
namespace diagnosis_thresholds {
/// Roofline fraction (floor seconds / measured seconds) at or above which a kernel is "near" its
/// roof. The H200's best copy kernels reach 3.9-4.2 TB/s of the datasheet's 4.8 (82-88%), so 70% of
/// the datasheet figure is within ~20% of what is reachable at all.
inline constexpr double near_roofline = 0.70;
/// Below this roofline fraction a kernel is "far below": at least 3.3x slower than the floor, more
/// than any launch overhead or clock variation explains at the benchmark shapes.
inline constexpr double far_below_roofline = 0.30;
/// DRAM throughput (% of peak) for "near bandwidth" from a profile: as near_roofline.
inline constexpr double dram_near_pct = 70;
/// SM throughput (% of peak) for "compute bound", with DRAM below compute_bound_dram_pct: the SM's
/// busiest pipe, not memory, sets the pace.
inline constexpr double compute_bound_sm_pct = 70;
inline constexpr double compute_bound_dram_pct = 50;
/// Both SM and DRAM throughput below this: neither unit is busy, warps wait (latency, too little
/// parallelism). Nsight Compute's own speed-of-light rule uses 60% for "latency issues".
inline constexpr double latency_bound_pct = 60;
/// DRAM bytes over the shape's minimal bytes (problem cost.bytes) for "excess memory traffic": half
/// again as much as needed is beyond what partial-sector reads at odd sizes explain.
inline constexpr double excess_traffic_ratio = 1.5;
/// L2 hit rate (%) below which "low L2 hit rate" accompanies excess traffic (streaming kernels that
/// move the minimal bytes sit near 50% from write hits alone, so the tag needs the excess too).
inline constexpr double low_l2_hit_pct = 50;
/// Global load/store efficiency (% of each 32-byte sector used: smsp__sass_average_data_bytes_per_
/// sector_mem_global_op_*.pct) below which accesses are uncoalesced. Coalesced accesses of any width
/// give 100%, a stride of two words 50%, one word per thread at a large stride 12.5%; misaligned rows
/// at odd sizes cost a few percent. 60% separates a stride >= 2 from alignment losses.
inline constexpr double coalesced_pct = 60;
/// Without the efficiency metric: sectors per request above this are uncoalesced for any access
/// width up to 16 bytes (a warp's 32 x 16 bytes cover 16 sectors at most when contiguous).
inline constexpr double max_coalesced_sectors_per_request = 16;
/// Shared-memory bank conflicts: conflict wavefronts over all shared-memory wavefronts. An n-way
/// conflict gives (n-1)/n: 25% is an average of 1.33-way, beyond noise from occasional conflicts.
inline constexpr double bank_conflict_fraction = 0.25;
/// Theoretical occupancy (fraction of the SM's warps) below which its limiter is reported. Below
/// half, latency hiding depends on instruction-level parallelism; tuned GEMMs sit there by design,
/// and the tag says so with the numbers, it does not judge.
inline constexpr double limited_occupancy = 0.50;
/// Achieved over theoretical occupancy below which "low achieved occupancy" fires (imbalance, tail,
/// or too few blocks).
inline constexpr double achieved_over_theoretical = 0.60;
/// "tail effect": the share of SM time left idle by a partial last wave, (ceil(w) - w) / ceil(w).
inline constexpr double tail_idle_fraction = 0.20;
/// Stall shares (a reason's cycles per issued instruction over all of them) that make a tag. Memory
/// waits dominate memory-bound kernels, so long-scoreboard and math-pipe need 40%; the others are
/// unusual enough to name at 25%.
inline constexpr double long_scoreboard_share = 0.40;
inline constexpr double other_stall_share = 0.25;
inline constexpr double math_pipe_share = 0.40;
}  // namespace diagnosis_thresholds

/// One SM's resources, for the occupancy calculation: an architecture's row of gpu_arch_table
/// (arch_table.hpp: the CUDA C++ Programming Guide's table of technical specifications per compute
/// capability; the driver reserves 1 KiB of shared memory per block), by sm_resources_for_arch.
struct sm_resources {
  std::string_view arch;
  int compute_capability = 0;
  int max_warps = 0;                    ///< resident warps per SM
  int max_blocks = 0;                   ///< resident blocks per SM
  std::int64_t registers = 0;           ///< 32-bit registers per SM
  int register_unit = 256;              ///< registers are allocated per warp in units of this
  std::int64_t shared_bytes = 0;        ///< shared memory per SM (the largest carve-out)
  std::int64_t reserved_shared = 1024;  ///< per block, reserved by the driver
  int sm_count = 0;                     ///< SMs of the common part (H100/H200 SXM: 132); 0 unknown
};

/// gpu_arch_table's row for `arch` (its SM facts); sm_90's for an architecture it does not list.
[[nodiscard]] KERNELBRAIN_DECL sm_resources sm_resources_for_arch(std::string_view arch);

/// One kernel launch as the static diagnosis sees it (the main launch of a plan: the one with the
/// most threads).
struct launch_facts {
  std::string kernel;
  int registers = -1;                  ///< per thread; -1 unknown
  std::int64_t threads_per_block = 0;  ///< 0 unknown
  std::int64_t blocks = 0;             ///< grid x * y * z; 0 unknown
  std::int64_t shared_bytes = 0;       ///< static + dynamic shared memory per block
};

/// Resident blocks per SM under each limit, the smallest, and the theoretical occupancy.
struct occupancy_estimate {
  std::int64_t by_registers = 0, by_shared = 0, by_warps = 0, by_blocks = 0;
  std::int64_t blocks = 0;  ///< per SM: the smallest of the four
  std::int64_t warps_per_block = 0;
  double occupancy = 0;  ///< resident warps / max_warps
};

/// The occupancy of `l` on one SM of `sm`; nullopt when registers or the block size are unknown.
[[nodiscard]] KERNELBRAIN_DECL std::optional<occupancy_estimate> estimate_occupancy(launch_facts const& l,
                                                                                    sm_resources const& sm);

/// How close one timing is to its shape's roofline floor.
struct roofline_position {
  double fraction = -1;      ///< floor seconds / measured seconds; < 0: unknown (no cost or machine)
  bool memory_bound = true;  ///< the floor is set by bytes / bandwidth (else by flops / rate)
  double floor_seconds = 0;
  double measured_seconds = 0;
  double bytes = 0;  ///< the shape's minimal bytes (0: unknown)
  double flops = 0;
};

/// `measured_seconds` (a median) at shape `s` against the floor of `machine`.
[[nodiscard]] KERNELBRAIN_DECL roofline_position roofline_at(shape const& s, roofline const& machine,
                                                             double measured_seconds);

/// Tags from static facts alone: the roofline position, spills, the main launch's occupancy limiter,
/// and (with `sm_count` > 0) small grids and tail effects. Rules without their inputs are skipped.
[[nodiscard]] KERNELBRAIN_DECL std::vector<diagnosis_tag> diagnose_static(
    resources const& res, sm_resources const& sm, roofline_position const& roof,
    std::optional<launch_facts> const& launch = std::nullopt, int sm_count = 0);

/// Tags from ncu metrics (names as in ncu_metrics, aggregated over a plan's launches by
/// aggregate_ncu); `roof` adds "excess memory traffic" (with the shape's minimal bytes). Metrics that
/// are missing skip their rules.
[[nodiscard]] KERNELBRAIN_DECL std::vector<diagnosis_tag> diagnose_profile(std::map<std::string, double> const& metrics,
                                                                           roofline_position const& roof = {});

/// Profiled and static tags together, in vocabulary order: a name both give is the profile's, and the
/// static occupancy, grid and wave tags give way when the profile's `metrics` hold what they estimate
/// (the launch's occupancy limits, waves, grid and SM count).
[[nodiscard]] KERNELBRAIN_DECL std::vector<diagnosis_tag> merge_diagnoses(std::vector<diagnosis_tag> const& profiled,
                                                                          std::vector<diagnosis_tag> const& statics,
                                                                          std::map<std::string, double> const& metrics);

/// A measurement's diagnosis: `statics` merged with the tags of a profile (`metrics`, at the shape of
/// `roof`) when `why_not` is empty, else `statics` and a "profiler unavailable" tag saying `why_not`.
[[nodiscard]] KERNELBRAIN_DECL std::vector<diagnosis_tag> diagnose(std::vector<diagnosis_tag> const& statics,
                                                                   std::map<std::string, double> const& metrics,
                                                                   roofline_position const& roof,
                                                                   std::string const& why_not);

/// One line per tag: "NAME [VALUE]: DETAIL" (VALUE in the shortest form that reads back exactly;
/// line breaks in a detail become spaces). Empty for no tags.
[[nodiscard]] KERNELBRAIN_DECL std::string render(std::vector<diagnosis_tag> const& tags);

/// Reads render's text back (parse_diagnosis(render(t)) == t for tags with single-line details).
/// Lines of another form are skipped; never throws.
[[nodiscard]] KERNELBRAIN_DECL std::vector<diagnosis_tag> parse_diagnosis(std::string_view text);

/// The metrics the CUDA backend asks Nsight Compute for (names for ncu 2023 and later, sm_70+).
inline constexpr std::string_view ncu_metrics[] = {
    "gpu__time_duration.sum",
    "dram__throughput.avg.pct_of_peak_sustained_elapsed",
    "sm__throughput.avg.pct_of_peak_sustained_elapsed",
    "dram__bytes_read.sum",
    "dram__bytes_write.sum",
    "sm__warps_active.avg.pct_of_peak_sustained_active",
    "sm__maximum_warps_per_active_cycle_pct",
    "launch__occupancy_limit_registers",
    "launch__occupancy_limit_shared_mem",
    "launch__occupancy_limit_blocks",
    "launch__occupancy_limit_warps",
    "launch__registers_per_thread",
    "launch__block_size",
    "launch__grid_size",
    "launch__waves_per_multiprocessor",
    "device__attribute_multiprocessor_count",
    "smsp__average_warp_latency_per_inst_issued.ratio",
    "smsp__average_warps_issue_stalled_long_scoreboard_per_issue_active.ratio",
    "smsp__average_warps_issue_stalled_barrier_per_issue_active.ratio",
    "smsp__average_warps_issue_stalled_mio_throttle_per_issue_active.ratio",
    "smsp__average_warps_issue_stalled_short_scoreboard_per_issue_active.ratio",
    "smsp__average_warps_issue_stalled_lg_throttle_per_issue_active.ratio",
    "smsp__average_warps_issue_stalled_math_pipe_throttle_per_issue_active.ratio",
    "l1tex__t_sector_hit_rate.pct",
    "lts__t_sector_hit_rate.pct",
    "l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum",
    "l1tex__t_requests_pipe_lsu_mem_global_op_ld.sum",
    "l1tex__t_sectors_pipe_lsu_mem_global_op_st.sum",
    "l1tex__t_requests_pipe_lsu_mem_global_op_st.sum",
    "smsp__sass_average_data_bytes_per_sector_mem_global_op_ld.pct",
    "smsp__sass_average_data_bytes_per_sector_mem_global_op_st.pct",
    "l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_ld.sum",
    "l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_st.sum",
    "l1tex__data_pipe_lsu_wavefronts_mem_shared_op_ld.sum",
    "l1tex__data_pipe_lsu_wavefronts_mem_shared_op_st.sum",
};

/// One profiled kernel launch: a row of ncu's raw page.
struct ncu_launch {
  std::string kernel;
  std::map<std::string, double> metrics;  ///< numeric values only ("n/a" and text are left out)
};

/// What parse_ncu_csv read: the launches in order, and each metric's unit (from the units row).
struct ncu_table {
  std::vector<ncu_launch> launches;
  std::map<std::string, std::string> units;
};

/// Reads the output of `ncu --csv --page raw` (possibly mixed with ==PROF== lines and the profiled
/// program's own output): the header row (first field "ID", with a "Kernel Name" column), the units
/// row, then one row per launch. Fields are quoted CSV (commas inside quotes, "" for a quote);
/// numbers may carry thousands separators ("1,234,567"). Values in scaled units (Kbyte, usecond, ...)
/// are converted to the base unit (byte, nsecond). Never throws: no header gives no launches.
[[nodiscard]] KERNELBRAIN_DECL ncu_table parse_ncu_csv(std::string_view text);

/// The metrics of a plan's launches as one set: counters (".sum") added up; launch__* and
/// sm__maximum_warps_per_active_cycle_pct from the longest launch (its configuration is the one that
/// matters); global load/store efficiency weighted by each launch's sectors; everything else
/// (percentages, ratios, hit rates) weighted by each launch's duration (gpu__time_duration.sum;
/// equal weights without it). Non-finite values are left out.
[[nodiscard]] KERNELBRAIN_DECL std::map<std::string, double> aggregate_ncu(std::vector<ncu_launch> const& launches);

}  // namespace kernelbrain

#if KERNELBRAIN_HEADER_ONLY
#include "kernelbrain/backends/cuda/impl/diagnosis.ipp"
#endif
