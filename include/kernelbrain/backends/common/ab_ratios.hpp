// ab_ratios: the candidate-versus-incumbent comparison of an interleaved measurement, which the
// host and CUDA backends compute the same way: per shape, sample i's ratio candidate / incumbent;
// over shapes, the weighted geometric mean of each sample's ratios; then their median and its
// interval.
#pragma once
#include <algorithm>
#include <optional>
#include <span>
#include <string>
#include <vector>
#include "kernelbrain/core/measurement.hpp"
#include "kernelbrain/core/statistics.hpp"

namespace kernelbrain::detail {

class ab_ratios {
 public:
  /// One shape's interleaved samples (`incumbent` at least as long as `candidate`) and its weight.
  void add(std::span<double const> candidate, std::span<double const> incumbent, double weight) {
    std::vector<double> rs;
    for (std::size_t i = 0; i < candidate.size(); ++i) rs.push_back(candidate[i] / std::max(incumbent[i], 1e-12));
    ratios_.push_back(std::move(rs));
    weights_.push_back(weight);
  }

  /// The comparison with `incumbent` (its id); nullopt when no shape was added.
  [[nodiscard]] std::optional<ab_comparison> against(std::string incumbent) const {
    if (ratios_.empty()) return std::nullopt;
    std::vector<double> combined;
    for (std::size_t i = 0; i < ratios_.front().size(); ++i) {
      std::vector<double> at;
      for (auto const& rs : ratios_) at.push_back(rs[i]);
      combined.push_back(weighted_geomean(at, weights_));
    }
    return ab_comparison{std::move(incumbent), median_with_ci(combined)};
  }

 private:
  std::vector<std::vector<double>> ratios_;  ///< per shape, per sample
  std::vector<double> weights_;              ///< per shape
};

}  // namespace kernelbrain::detail
