// The default fidelity ladder: smoke, screen, confirm.
#pragma once
#include <algorithm>
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

  /// Correctness shapes C: tier "smoke" or "odd" *and* a weight below half the largest (their
  /// timings are launch overhead that says nothing about the benchmark shapes, and the score barely
  /// counts them; the gate checks them before any timing). The others are the benchmark shapes B.
  /// With such shapes: smoke times the cheapest shape of B (by its roofline floor when the problem
  /// gives costs, else the first), 3 samples; screen every shape of B, 10 samples. Without (every
  /// shape weighs in the score): smoke the first shape, screen the first half of the shapes. confirm:
  /// every shape, 30 samples, interleaved A/B with the incumbent, profiled.
  [[nodiscard]] static multi_rung_ladder standard(problem const& p) {
    const std::size_t n = p.shapes.size();
    double heaviest = 0;
    for (auto const& s : p.shapes) heaviest = std::max(heaviest, s.weight);
    std::vector<std::size_t> all(n), bench;
    for (std::size_t i = 0; i < n; ++i) {
      all[i] = i;
      auto const& s = p.shapes[i];
      const bool check_only = (s.tier == "smoke" || s.tier == "odd") && s.weight < 0.5 * heaviest;
      if (!check_only) bench.push_back(i);
    }
    std::vector<std::size_t> smoke{0}, screen;
    if (bench.size() == n || bench.empty()) {
      for (std::size_t i = 0; i < (n + 1) / 2; ++i) screen.push_back(i);
    } else {
      smoke = {*std::min_element(bench.begin(), bench.end(), [&](std::size_t a, std::size_t b) {
        return p.machine.floor_seconds(p.shapes[a]) < p.machine.floor_seconds(p.shapes[b]);
      })};
      screen = bench;
    }
    return multi_rung_ladder({
        rung{"smoke", smoke, 3, 1, 1, false, false},
        rung{"screen", screen, 10, 2, 1, false, false},
        rung{"confirm", all, 30, 3, 2, true, true},
    });
  }

  [[nodiscard]] std::span<rung const> rungs() const noexcept { return rungs_; }

 private:
  std::vector<rung> rungs_;
};

}  // namespace kernelbrain
