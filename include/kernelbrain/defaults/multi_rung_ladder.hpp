// The default fidelity ladder: smoke, screen, confirm (each lower rung only where it pays).
#pragma once
#include <algorithm>
#include <cstddef>
#include <span>
#include <string>
#include <utility>
#include <vector>
#include "kernelbrain/core/error.hpp"
#include "kernelbrain/core/option_table.hpp"
#include "kernelbrain/core/problem.hpp"
#include "kernelbrain/core/rung.hpp"

namespace kernelbrain {

/// How the standard ladder is built: what the top rung costs, and whether the middle rung exists. The
/// defaults are the lean ladder of issue 28 (docs/design-notes.md, "The default's device time,
/// redesigned"); `top_samples=30,top_trials=3,ab=true,screen=always` is the ladder before it.
struct ladder_options {
  std::size_t top_samples = 5;   ///< timed samples per shape at the top rung
  std::size_t top_trials = 1;    ///< fresh-input correctness trials per shape at the top rung
  bool ab = false;               ///< time the top rung interleaved A/B with the incumbent (doubles its runs)
  std::string screen = "auto";   ///< the middle rung: "auto" (only where it pays), "always", "never"
  std::string smoke = "always";  ///< the first rung: "always", "auto" (only where it pays in timing), "never"

  [[nodiscard]] static option_table<ladder_options> describe() {
    using o = ladder_options;
    return option_table<o>{}
        .add("top_samples", &o::top_samples, 1, "timed samples per shape at the top rung")
        .add("top_trials", &o::top_trials, 1, "fresh-input correctness trials per shape at the top rung")
        .add("ab", &o::ab, "time the top rung interleaved A/B with the incumbent")
        .add("screen", &o::screen, "the middle rung: auto (only where much cheaper than the top), always, never")
        .add("smoke", &o::smoke,
             "the first rung: always (it also decides which families pay for the memory-safety tools), auto (only "
             "where much cheaper than the next in timing), never");
  }
};

class multi_rung_ladder {
 public:
  explicit multi_rung_ladder(std::vector<rung> rs) : rungs_(std::move(rs)) {
    if (rungs_.empty()) throw error("a fidelity ladder needs at least one rung");
  }

  /// Shapes of tier "wide" are never timed (see is_timed_shape): no rung names them, the gate checks
  /// them. Of the timed shapes T, the correctness shapes C: tier "smoke" or "odd" *and* a weight
  /// below half the largest (their timings are launch overhead that says nothing about the benchmark
  /// shapes, and the score barely counts them; the gate checks them before any timing). The others
  /// are the benchmark shapes B. With such shapes: smoke times the cheapest shape of B (by its
  /// roofline floor when the problem gives costs, else the first), 3 samples; screen every shape of
  /// B, 5 samples after 1 warm-up. Without (every timed shape weighs in the score): smoke the first
  /// shape of T, screen the first half of T. The screen is kept only as `o.screen` says (auto: where it
  /// pays, below), and the smoke as `o.smoke` says: always by default, since it screens template families
  /// before the top rung runs them under the memory-safety tools (about 1.3 s a family on an H100, tens of
  /// smoke measurements; auto: only where its timing costs at most a quarter of the rung above it, which
  /// drops it where it times the top rung's one heavy shape, as on sdpa_fp16). confirm: every shape of T,
  /// `o.top_samples` samples (5) after 1 warm-up, `o.top_trials` trials (1) at the shapes the candidate has not passed
  /// yet, A/B with the incumbent only with `o.ab`, profiled.
  ///
  /// The screen's 5 samples were chosen on recorded H200 sweeps (kernelbrain fidelity,
  /// docs/results.md): they rank as well as 10 (Spearman within 0.01 on every recorded problem) for
  /// 27-40% less device time (before: 10 samples after 2 warm-ups). Screening every timed shape where
  /// all of them weigh in the score was tried and measured on the synthetic landscape: 35% more device
  /// time for the default to reach 2% of the optimum, so that branch keeps the first half until host
  /// recordings say otherwise (docs/design-notes.md).
  [[nodiscard]] static multi_rung_ladder standard(problem const& p, ladder_options const& o = {}) {
    for (auto const& [name, value] : {std::pair{"screen", &o.screen}, std::pair{"smoke", &o.smoke}})
      if (*value != "auto" && *value != "always" && *value != "never")
        throw error(std::string("strategy option '") + name + "' is '" + *value +
                    "', which is not auto, always or never");
    double heaviest = 0;
    for (auto const& s : p.shapes)
      if (is_timed_shape(s)) heaviest = std::max(heaviest, s.weight);
    std::vector<std::size_t> all, bench;
    for (std::size_t i = 0; i < p.shapes.size(); ++i) {
      auto const& s = p.shapes[i];
      if (!is_timed_shape(s)) continue;
      all.push_back(i);
      const bool check_only = (s.tier == "smoke" || s.tier == "odd") && s.weight < 0.5 * heaviest;
      if (!check_only) bench.push_back(i);
    }
    if (all.empty()) throw error("problem '" + p.name + "': no shape to time (a shape of tier 'wide' is never timed)");
    std::vector<std::size_t> smoke{all.front()}, screen;
    if (bench.size() == all.size() || bench.empty()) {
      screen.assign(all.begin(), all.begin() + static_cast<std::ptrdiff_t>((all.size() + 1) / 2));
    } else {
      smoke = {*std::min_element(bench.begin(), bench.end(), [&](std::size_t a, std::size_t b) {
        return p.machine.floor_seconds(p.shapes[a]) < p.machine.floor_seconds(p.shapes[b]);
      })};
      screen = bench;
    }
    rung top{"confirm", all, static_cast<int>(o.top_samples), o.ab ? 2 : 1, static_cast<int>(o.top_trials), o.ab, true};
    // A middle rung pays only where it is much cheaper than the top (else a candidate pays for most of a
    // top measurement twice) and times something the smoke does not. Its cost is estimated by the roofline
    // floors of its shapes (by the shape count where the problem gives no costs).
    auto cost = [&](std::vector<std::size_t> const& shapes, int runs) {
      double c = 0;
      for (auto s : shapes) {
        const double f = p.machine.floor_seconds(p.shapes[s]);
        c += runs * (f > 0 ? f : 1.0);
      }
      return c;
    };
    // The same test keeps the smoke: where it costs more than a quarter of the rung above it (one heavy
    // benchmark shape, as on sdpa_fp16), a candidate would pay most of a top measurement twice to climb.
    const bool screen_pays = screen != smoke && cost(screen, 6) * 4 <= cost(all, top.samples + top.warmup);
    std::vector<rung> rs;
    // The rungs below the top screen without the memory-safety tools (rung::assure): a template family is
    // run under compute-sanitizer only once one of its points climbs to the top.
    rs.push_back(rung{"smoke", std::move(smoke), 3, 1, 1, false, false, false});
    if (o.screen == "always" || (o.screen == "auto" && screen_pays))
      rs.push_back(rung{"screen", std::move(screen), 5, 1, 1, false, false, false});
    rs.push_back(std::move(top));
    auto const& above = rs[1];
    const bool smoke_pays = cost(rs[0].shapes, 4) * 4 <= cost(above.shapes, above.samples + above.warmup);
    if (o.smoke == "never" || (o.smoke == "auto" && !smoke_pays)) rs.erase(rs.begin());
    return multi_rung_ladder(std::move(rs));
  }

  [[nodiscard]] std::span<rung const> rungs() const noexcept { return rungs_; }

 private:
  std::vector<rung> rungs_;
};

}  // namespace kernelbrain
