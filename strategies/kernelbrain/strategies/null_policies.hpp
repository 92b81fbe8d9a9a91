// Null policies for ablations: a gate that admits everything and a ladder with a single rung.
#pragma once
#include <span>
#include <string>
#include <utility>
#include <vector>
#include "kernelbrain/core/candidate.hpp"
#include "kernelbrain/core/error.hpp"
#include "kernelbrain/core/evaluator.hpp"
#include "kernelbrain/core/problem.hpp"
#include "kernelbrain/core/registry.hpp"
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

/// The setting of a one-rung ladder built by one_rung_ladder::all_shapes.
struct one_rung_options {
  std::size_t samples = 10;  ///< timed samples per shape

  /// The option a strategy with such a ladder takes ("exhaustive:samples=5").
  [[nodiscard]] static option_table<one_rung_options> describe() {
    return option_table<one_rung_options>{}.add("samples", &one_rung_options::samples, 1,
                                                "timed samples per shape at the one rung");
  }
};

/// A ladder of one rung: every candidate is judged at full fidelity (the "no multi-fidelity" ablation).
class one_rung_ladder {
 public:
  explicit one_rung_ladder(rung r) : rung_{std::move(r)} {
    if (rung_.front().shapes.empty()) throw error("one_rung_ladder: rung '" + rung_.front().name + "' has no shapes");
    if (rung_.front().samples < 1) throw error("one_rung_ladder: rung '" + rung_.front().name + "' needs samples >= 1");
  }

  /// Every timed shape of `p`, `samples` timed samples each, no A/B and no profile.
  /// Shapes of tier "wide" are left out: they are for the gate, never timed (is_timed_shape; replay
  /// found this rung timing them: a recording has no samples there, as a search should not).
  [[nodiscard]] static one_rung_ladder all_shapes(problem const& p, int samples = 10) {
    std::vector<std::size_t> all;
    for (std::size_t i = 0; i < p.shapes.size(); ++i)
      if (is_timed_shape(p.shapes[i])) all.push_back(i);
    return one_rung_ladder(rung{"full", std::move(all), samples, 1, 1, false, false});
  }
  /// Every shape of `p`, `o.samples` timed samples each.
  [[nodiscard]] static one_rung_ladder all_shapes(problem const& p, one_rung_options const& o) {
    return all_shapes(p, static_cast<int>(o.samples));
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
