// Which measurements at a profiling rung get a profiler run: the rule the CUDA backend applies to its ncu
// runs, and the replay backend to the ncu runs it charges for, so that a replayed search spends as a
// real one does (issue 28). One ncu run costs 2-3 device seconds on an H100, ten to thirty times a
// lean top-rung measurement, so profiling every one made the profiler most of a search's device time.
// The rule: profile a measurement only when it is the fastest made so far at its rung's profiled shape
// (a candidate that may become the incumbent, whose diagnosis steers the moves and the prompts), and
// only while the profiler's runs, this one included, stay within a share of the device seconds spent.
#pragma once
#include <cstddef>
#include <map>
#include <string>
#include <utility>
#include "kernelbrain/core/problem.hpp"
#include "kernelbrain/core/rung.hpp"

namespace kernelbrain::detail {

/// The shape of rung `r` a profiler run is made at, in both backends: the one that moves the most bytes
/// (shape::bytes, the roofline's count; the last of equals), where a kernel's behaviour is closest to its
/// behaviour on real sizes.
[[nodiscard]] inline std::size_t profiled_shape(problem const& p, rung const& r) {
  std::size_t sh = r.shapes.empty() ? 0 : r.shapes.front();
  for (auto x : r.shapes)
    if (x < p.shapes.size() && sh < p.shapes.size() && p.shapes[x].bytes >= p.shapes[sh].bytes) sh = x;
  return sh;
}

class profile_rationing {
 public:
  profile_rationing() = default;
  /// `share`: the most of the device seconds spent that profiler runs may take (0.1: a tenth);
  /// `first_estimate`: what one run is expected to cost before any has been made.
  profile_rationing(double share, double first_estimate) : share_(share), estimate_(first_estimate) {}

  /// Device seconds the search was charged (every evaluation's, profiler runs included), as the backend
  /// hands them over: the total the share is taken of.
  void charged(double seconds) { charged_ += seconds; }

  /// Whether to profile a measurement whose median at the rung's profiled shape `shape` is `median`,
  /// with `pending` device seconds spent and not yet charged (this measurement's included) and `all` set
  /// to profile every measurement that is the fastest so far or not. Records the median either way.
  [[nodiscard]] bool should_profile(std::string const& rung, std::size_t shape, double median, double pending,
                                    bool all) {
    auto [f, first] = fastest_.try_emplace({rung, shape}, median);
    const bool fastest = first || (median > 0 && median < f->second);
    if (median > 0 && median < f->second) f->second = median;
    if (all) return true;
    return fastest && profiled_ + expected() <= share_ * (charged_ + pending + expected());
  }
  /// A profiler run made, and what it cost.
  void ran(double seconds) {
    profiled_ += seconds;
    ++runs_;
  }
  [[nodiscard]] double expected() const { return runs_ ? profiled_ / static_cast<double>(runs_) : estimate_; }

 private:
  double share_ = 0.1, estimate_ = 2.5;
  double charged_ = 0;
  double profiled_ = 0;
  std::size_t runs_ = 0;
  std::map<std::pair<std::string, std::size_t>, double> fastest_;
};

}  // namespace kernelbrain::detail
