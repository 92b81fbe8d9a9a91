// The default scorer S(p, r): weighted geometric-mean speedup over the baseline on the measured
// shapes, discounted by the width of the confidence intervals (unstable timings rank lower).
#pragma once
#include <algorithm>
#include <vector>
#include "kernelbrain/core/measurement.hpp"
#include "kernelbrain/core/score.hpp"
#include "kernelbrain/core/statistics.hpp"

namespace kernelbrain {

class speedup_scorer {
 public:
  explicit speedup_scorer(double instability_weight = 0.5) : instability_weight_(instability_weight) {}

  kernelbrain::score score(measurement const& m, baseline const& b) const {
    std::vector<double> ratios, weights;
    double width = 0;
    for (auto const& t : m.timings) {
      if (t.shape >= b.seconds.size() || !(t.stats.median > 0)) continue;
      ratios.push_back(b.seconds[t.shape] / t.stats.median);
      weights.push_back(b.weights.empty() ? 1.0 : b.weights[t.shape]);
      width += (t.stats.high - t.stats.low) / t.stats.median;
    }
    if (ratios.empty()) return {};
    kernelbrain::score s;
    s.speedup = weighted_geomean(ratios, weights);
    const double mean_width = width / static_cast<double>(ratios.size());
    s.value = s.speedup / (1.0 + instability_weight_ * std::max(0.0, mean_width));
    return s;
  }

 private:
  double instability_weight_;
};

}  // namespace kernelbrain
