// Hyperband: successive-halving brackets that trade breadth for fidelity, run in turn, cycled.
#pragma once
#include <algorithm>
#include <cstdint>
#include <optional>
#include <utility>
#include <vector>
#include "kernelbrain/core/action.hpp"
#include "kernelbrain/core/policies.hpp"
#include "kernelbrain/core/registry.hpp"
#include "kernelbrain/core/search_view.hpp"
#include "kernelbrain/defaults/expert_generator.hpp"
#include "kernelbrain/defaults/multi_rung_ladder.hpp"
#include "kernelbrain/defaults/policy_gate.hpp"
#include "kernelbrain/defaults/speedup_scorer.hpp"
#include "kernelbrain/strategies/successive_halving.hpp"

namespace kernelbrain {

struct hyperband_options {
  std::size_t eta = 3;            ///< keep the top 1/eta of each rung
  std::size_t scale = 1;          ///< multiplies every bracket's size
  std::size_t explore_batch = 8;  ///< candidates per explore request

  /// The options "hyperband" takes ("hyperband:eta=2,scale=3").
  [[nodiscard]] static option_table<hyperband_options> describe() {
    using o = hyperband_options;
    return option_table<o>{}
        .add("eta", &o::eta, 2, "keep the top 1/eta of each rung")
        .add("scale", &o::scale, 1, "multiplies every bracket's size")
        .add("explore_batch", &o::explore_batch, 1, "candidates per explore request");
  }
};

/// Hyperband over the ladder's R rungs: bracket s (s = R-1 down to 0) starts ceil(R/(s+1) * eta^s)
/// new candidates at rung R-1-s and halves them up to the top, so the first bracket screens many
/// candidates cheaply and the last measures a few at full fidelity only (a hedge against low rungs
/// that mislead). The brackets run one at a time, synchronously, and the cycle repeats until the
/// budget ends; it stops when a new bracket gets no candidate at all.
class hyperband_scheduler {
 public:
  explicit hyperband_scheduler(hyperband_options o = {}) : opt_(o) {
    opt_.eta = std::max<std::size_t>(opt_.eta, 2);
    opt_.scale = std::max<std::size_t>(opt_.scale, 1);
  }

  void reseed(std::uint64_t) {
    bracket_.reset();
    brackets_ = 0;
  }

  action next(search_view const& v) {
    for (;;) {
      if (!bracket_) {
        const auto [start, size] = plan(v.rungs().size(), brackets_);
        bracket_.emplace(start, size, opt_.eta, opt_.explore_batch);
      }
      if (auto a = bracket_->next(v)) return *std::move(a);
      const bool empty = bracket_->entered() == 0;
      bracket_.reset();
      ++brackets_;
      if (empty) return stop("hyperband: the generator has nothing new for a bracket");
    }
  }

  /// The settings in use (eta and scale raised to their least values where less was given).
  [[nodiscard]] hyperband_options const& options() const noexcept { return opt_; }

  /// Brackets finished so far.
  [[nodiscard]] std::size_t brackets() const noexcept { return brackets_; }

  /// Start rung and size of the k-th bracket (0-based) on a ladder of `rungs` rungs.
  [[nodiscard]] std::pair<std::size_t, std::size_t> plan(std::size_t rungs, std::size_t k) const {
    const std::size_t s_max = rungs - 1;
    const std::size_t s = s_max - k % rungs;
    std::size_t power = 1;
    for (std::size_t i = 0; i < s; ++i) power *= opt_.eta;
    const std::size_t n = (rungs * power + s) / (s + 1);  // ceil(rungs * eta^s / (s+1)), in integers
    return {s_max - s, n * opt_.scale};
  }

 private:
  hyperband_options opt_;
  std::optional<detail::halving_bracket> bracket_;
  std::size_t brackets_ = 0;
};

using hyperband_policies_t =
    policies<expert_generator, policy_gate, multi_rung_ladder, speedup_scorer, hyperband_scheduler>;

/// Hyperband as a whole strategy: expert generator (explore only), default gate, standard ladder, speedup scorer.
[[nodiscard]] inline hyperband_policies_t hyperband_policies(problem const& p, hyperband_options o = {},
                                                             ladder_options const& l = {}) {
  return {expert_generator{}, policy_gate::for_problem(p), multi_rung_ladder::standard(p, l), speedup_scorer{},
          hyperband_scheduler{o}};
}

}  // namespace kernelbrain
