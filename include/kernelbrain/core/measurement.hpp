// What one evaluation of a candidate at one rung produced.
#pragma once
#include <cstddef>
#include <map>
#include <optional>
#include <string>
#include <vector>
#include "kernelbrain/core/statistics.hpp"
#include "kernelbrain/core/verdict.hpp"

namespace kernelbrain {

/// Timed samples for one shape, in seconds.
struct shape_timing {
  std::size_t shape = 0;  ///< index into problem::shapes
  std::vector<double> samples;
  median_ci stats;  ///< filled by summarise()
  void summarise() { stats = median_with_ci(samples); }
};

/// Static resources of a compiled kernel; -1 where a backend cannot tell.
struct resources {
  int registers = -1;
  int spill_bytes = -1;
  int shared_bytes = -1;
  double occupancy = -1;
};

/// Interleaved A/B against the incumbent: ratio = candidate / incumbent time (< 1 is faster).
struct ab_comparison {
  std::string incumbent;  ///< candidate id as hex
  median_ci ratio;
};

struct measurement {
  verdict result;                     ///< pass, or why the measurement was refused
  std::vector<shape_timing> timings;  ///< one per rung shape, in rung order
  std::optional<resources> res;
  std::optional<ab_comparison> vs_incumbent;
  std::map<std::string, double> profile;  ///< profiler metrics, when the rung asked for them
  std::string diagnosis;                  ///< profiler-derived bottleneck, in words
  double device_seconds = 0;              ///< device time this evaluation consumed (charged to the budget)

  [[nodiscard]] shape_timing const* timing_for(std::size_t shape) const noexcept {
    for (auto const& t : timings)
      if (t.shape == shape) return &t;
    return nullptr;
  }
};

}  // namespace kernelbrain
