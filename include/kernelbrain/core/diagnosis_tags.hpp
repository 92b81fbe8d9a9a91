// The diagnosis vocabulary: the tag names a measurement's diagnosis may hold (measurement::diagnosis,
// one "NAME [VALUE]: DETAIL" line per tag). The rules that make them, their thresholds and the full
// parser are in backends/cuda/diagnosis.hpp; the names are here, with the standard library only, because
// the core needs them too: problem.json's catalogue declares moves per tag (expert_hint::
// diagnosis_moves) and the expert generator reads the tags of a parent's diagnosis.
#pragma once
#include <algorithm>
#include <iterator>
#include <string>
#include <string_view>
#include <vector>

namespace kernelbrain {

/// Tag names, in the order a diagnosis lists them (roofline, memory, occupancy and waves, stalls).
namespace diagnosis_names {
inline constexpr std::string_view near_bandwidth = "near bandwidth";
inline constexpr std::string_view far_below_bandwidth = "far below bandwidth";
inline constexpr std::string_view near_compute_peak = "near compute peak";
inline constexpr std::string_view far_below_compute_peak = "far below compute peak";
inline constexpr std::string_view compute_bound = "compute bound";
inline constexpr std::string_view latency_bound = "latency bound";
inline constexpr std::string_view excess_memory_traffic = "excess memory traffic";
inline constexpr std::string_view low_l2_hit_rate = "low L2 hit rate";
inline constexpr std::string_view uncoalesced_loads = "uncoalesced loads";
inline constexpr std::string_view uncoalesced_stores = "uncoalesced stores";
inline constexpr std::string_view bank_conflicts = "shared-memory bank conflicts";
inline constexpr std::string_view register_spills = "register spills";
inline constexpr std::string_view limited_by_registers = "occupancy limited by registers";
inline constexpr std::string_view limited_by_shared_memory = "occupancy limited by shared memory";
inline constexpr std::string_view limited_by_block_size = "occupancy limited by block size";
inline constexpr std::string_view low_achieved_occupancy = "low achieved occupancy";
inline constexpr std::string_view small_grid = "small grid";
inline constexpr std::string_view tail_effect = "tail effect";
inline constexpr std::string_view long_scoreboard_stalls = "long-scoreboard stalls";
inline constexpr std::string_view barrier_stalls = "barrier stalls";
inline constexpr std::string_view mio_throttle_stalls = "mio-throttle stalls";
inline constexpr std::string_view short_scoreboard_stalls = "short-scoreboard stalls";
inline constexpr std::string_view lg_throttle_stalls = "lg-throttle stalls";
inline constexpr std::string_view math_pipe_stalls = "math-pipe-throttle stalls";
inline constexpr std::string_view profiler_unavailable = "profiler unavailable";
}  // namespace diagnosis_names

/// Every tag name, in report order.
inline constexpr std::string_view diagnosis_vocabulary[] = {
    diagnosis_names::near_bandwidth,
    diagnosis_names::far_below_bandwidth,
    diagnosis_names::near_compute_peak,
    diagnosis_names::far_below_compute_peak,
    diagnosis_names::compute_bound,
    diagnosis_names::latency_bound,
    diagnosis_names::excess_memory_traffic,
    diagnosis_names::low_l2_hit_rate,
    diagnosis_names::uncoalesced_loads,
    diagnosis_names::uncoalesced_stores,
    diagnosis_names::bank_conflicts,
    diagnosis_names::register_spills,
    diagnosis_names::limited_by_registers,
    diagnosis_names::limited_by_shared_memory,
    diagnosis_names::limited_by_block_size,
    diagnosis_names::low_achieved_occupancy,
    diagnosis_names::small_grid,
    diagnosis_names::tail_effect,
    diagnosis_names::long_scoreboard_stalls,
    diagnosis_names::barrier_stalls,
    diagnosis_names::mio_throttle_stalls,
    diagnosis_names::short_scoreboard_stalls,
    diagnosis_names::lg_throttle_stalls,
    diagnosis_names::math_pipe_stalls,
    diagnosis_names::profiler_unavailable,
};

/// Whether `name` is one of diagnosis_vocabulary.
[[nodiscard]] constexpr bool is_diagnosis_tag(std::string_view name) noexcept {
  return std::find(std::begin(diagnosis_vocabulary), std::end(diagnosis_vocabulary), name) !=
         std::end(diagnosis_vocabulary);
}

/// Whether tag `name` is a finding about the kernel: every tag but "profiler unavailable", which says
/// only why there is no profile. Only findings steer template moves.
[[nodiscard]] constexpr bool is_kernel_finding(std::string_view name) noexcept {
  return name != diagnosis_names::profiler_unavailable && is_diagnosis_tag(name);
}

/// The kernel findings named in a diagnosis text (render's form, one "NAME [VALUE]: DETAIL" line per
/// tag), each once, in the text's order. Lines of another form and names outside the vocabulary are
/// skipped; never throws but for allocation. (parse_diagnosis in backends/cuda/diagnosis.hpp reads the
/// values and details too.)
[[nodiscard]] inline std::vector<std::string> diagnosis_findings(std::string_view text) {
  std::vector<std::string> out;
  while (!text.empty()) {
    const auto nl = text.find('\n');
    const std::string_view line = text.substr(0, nl);
    text = nl == std::string_view::npos ? std::string_view{} : text.substr(nl + 1);
    const auto open = line.find(" [");
    if (open == std::string_view::npos || line.find("]:", open + 2) == std::string_view::npos) continue;
    const auto name = line.substr(0, open);
    if (is_kernel_finding(name) && std::find(out.begin(), out.end(), name) == out.end()) out.emplace_back(name);
  }
  return out;
}

}  // namespace kernelbrain
