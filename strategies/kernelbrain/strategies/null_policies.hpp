// Null policies for ablations: a gate that admits everything and a ladder with a single rung.
#pragma once
#include <numeric>
#include <span>
#include <string>
#include <utility>
#include <vector>
#include "kernelbrain/core/candidate.hpp"
#include "kernelbrain/core/error.hpp"
#include "kernelbrain/core/evaluator.hpp"
#include "kernelbrain/core/problem.hpp"
#include "kernelbrain/core/rung.hpp"
#include "kernelbrain/core/verdict.hpp"
#include "kernelbrain/defaults/multi_rung_ladder.hpp"

namespace kernelbrain {

/// Admits every candidate without calling the evaluator: the "no gate" ablation. Correctness is
/// still checked at every timed shape by the measurement itself, so a wrong kernel is still
/// rejected, only later and at the price of a timing run.
class pass_all_gate {
 public:
  verdict admit(candidate const&, evaluator&) const { return verdict::pass(); }
};

/// A ladder of one rung: every candidate is judged at full fidelity (the "no multi-fidelity" ablation).
class one_rung_ladder {
 public:
  explicit one_rung_ladder(rung r) : rung_{std::move(r)} {
    if (rung_.front().shapes.empty()) throw error("one_rung_ladder: rung '" + rung_.front().name + "' has no shapes");
    if (rung_.front().samples < 1) throw error("one_rung_ladder: rung '" + rung_.front().name + "' needs samples >= 1");
  }

  /// Every shape of `p`, `samples` timed samples each, no A/B and no profile.
  [[nodiscard]] static one_rung_ladder all_shapes(problem const& p, int samples = 10) {
    std::vector<std::size_t> all(p.shapes.size());
    std::iota(all.begin(), all.end(), std::size_t{0});
    return one_rung_ladder(rung{"full", std::move(all), samples, 1, 1, false, false});
  }
  /// The top rung of the standard ladder alone (every shape, its samples, A/B and profile).
  [[nodiscard]] static one_rung_ladder confirm(problem const& p) {
    return one_rung_ladder(multi_rung_ladder::standard(p).rungs().back());
  }

  [[nodiscard]] std::span<rung const> rungs() const noexcept { return rung_; }

 private:
  std::vector<rung> rung_;  // a vector of one, so rungs() is a span over owned storage
};

}  // namespace kernelbrain
