// Robust statistics for timing samples: median and a distribution-free confidence interval.
#pragma once
#include <algorithm>
#include <cmath>
#include <span>
#include <vector>

namespace kernelbrain {

struct median_ci {
  double median = 0;
  double low = 0;   ///< lower bound of the ~95% interval of the median
  double high = 0;  ///< upper bound
};

/// Median with a ~95% confidence interval from binomial order statistics (no normality assumed:
/// GPU timings are skewed). With fewer than 6 samples the interval is the sample range.
[[nodiscard]] inline median_ci median_with_ci(std::span<double const> samples) {
  if (samples.empty()) return {};
  std::vector<double> s(samples.begin(), samples.end());
  std::sort(s.begin(), s.end());
  const std::size_t n = s.size();
  median_ci r;
  r.median = n % 2 ? s[n / 2] : 0.5 * (s[n / 2 - 1] + s[n / 2]);
  if (n < 6) {
    r.low = s.front();
    r.high = s.back();
    return r;
  }
  // Normal approximation to Binomial(n, 1/2): ranks n/2 -+ 1.96 sqrt(n)/2.
  const double half = 1.96 * std::sqrt(static_cast<double>(n)) / 2.0;
  const auto lo = static_cast<std::ptrdiff_t>(std::floor(static_cast<double>(n) / 2.0 - half));
  const auto hi = static_cast<std::ptrdiff_t>(std::ceil(static_cast<double>(n) / 2.0 + half));
  r.low = s[static_cast<std::size_t>(std::clamp<std::ptrdiff_t>(lo, 0, static_cast<std::ptrdiff_t>(n) - 1))];
  r.high = s[static_cast<std::size_t>(std::clamp<std::ptrdiff_t>(hi - 1, 0, static_cast<std::ptrdiff_t>(n) - 1))];
  return r;
}

/// Weighted geometric mean; weights need not sum to one.
[[nodiscard]] inline double weighted_geomean(std::span<double const> values, std::span<double const> weights) {
  double acc = 0, wsum = 0;
  for (std::size_t i = 0; i < values.size(); ++i) {
    acc += weights[i] * std::log(values[i]);
    wsum += weights[i];
  }
  return wsum > 0 ? std::exp(acc / wsum) : 0.0;
}

}  // namespace kernelbrain
