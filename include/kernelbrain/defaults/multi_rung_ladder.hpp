// The default fidelity ladder: smoke, screen, confirm.
#pragma once
#include <span>
#include <utility>
#include <vector>
#include "kernelbrain/core/error.hpp"
#include "kernelbrain/core/problem.hpp"
#include "kernelbrain/core/rung.hpp"

namespace kernelbrain {

class multi_rung_ladder {
 public:
  explicit multi_rung_ladder(std::vector<rung> rs) : rungs_(std::move(rs)) {
    if (rungs_.empty()) throw error("a fidelity ladder needs at least one rung");
  }

  /// smoke: the first shape, 3 samples; screen: the first half of the shapes, 10 samples;
  /// confirm: every shape, 30 samples, interleaved A/B with the incumbent, profiled.
  [[nodiscard]] static multi_rung_ladder standard(problem const& p) {
    const std::size_t n = p.shapes.size();
    std::vector<std::size_t> all(n), half((n + 1) / 2);
    for (std::size_t i = 0; i < n; ++i) all[i] = i;
    for (std::size_t i = 0; i < half.size(); ++i) half[i] = i;
    return multi_rung_ladder({
        rung{"smoke", {0}, 3, 1, 1, false, false},
        rung{"screen", half, 10, 2, 1, false, false},
        rung{"confirm", all, 30, 3, 2, true, true},
    });
  }

  [[nodiscard]] std::span<rung const> rungs() const noexcept { return rungs_; }

 private:
  std::vector<rung> rungs_;
};

}  // namespace kernelbrain
