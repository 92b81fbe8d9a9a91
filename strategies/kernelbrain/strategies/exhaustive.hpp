// Exhaustive single-fidelity search: every admitted point of every catalogue template, once each.
#pragma once
#include <algorithm>
#include <cstdint>
#include <string>
#include <vector>
#include "kernelbrain/core/action.hpp"
#include "kernelbrain/core/candidate.hpp"
#include "kernelbrain/core/error.hpp"
#include "kernelbrain/core/policies.hpp"
#include "kernelbrain/core/registry.hpp"
#include "kernelbrain/core/rng.hpp"
#include "kernelbrain/core/search_view.hpp"
#include "kernelbrain/core/template_space.hpp"
#include "kernelbrain/defaults/policy_gate.hpp"
#include "kernelbrain/defaults/speedup_scorer.hpp"
#include "kernelbrain/strategies/null_policies.hpp"

namespace kernelbrain {

/// Enumerates every admitted point of every template hint in a seeded random order, ignoring the
/// request's mode: there is nothing to refine, only the next point to try. The order takes the
/// templates in turn (random within each), so a budget that ends early has still sampled every
/// family evenly rather than mostly the one with the largest space. Returns nothing once every
/// point has been proposed.
class exhaustive_generator {
 public:
  void reseed(std::uint64_t seed) {
    rng_.reseed(seed);
    order_.clear();
    next_ = 0;
    built_ = false;
  }

  std::vector<candidate> propose(search_view const& v, proposal_request const& req) {
    if (!built_) build(v.problem());
    std::vector<candidate> out;
    while (out.size() < req.count && next_ < order_.size()) {
      auto const& [h, p] = order_[next_++];
      auto c = instantiate(*h, p, "exhaustive:" + h->name);
      if (!v.contains(c.id)) out.push_back(std::move(c));
    }
    return out;
  }

  /// Points not yet proposed (all of them before the first proposal).
  [[nodiscard]] std::size_t remaining() const noexcept { return built_ ? order_.size() - next_ : 0; }

 private:
  void build(problem const& prob) {
    built_ = true;
    const auto hints = template_hints(prob);
    if (hints.empty())
      throw error("problem '" + prob.name + "' has no catalogue hint with a template: exhaustive search needs one");
    std::vector<std::vector<parameters>> per_hint;
    for (auto const* h : hints) {
      auto pts = h->templ->space.enumerate();
      for (std::size_t i = pts.size(); i > 1; --i) std::swap(pts[i - 1], pts[rng_.below(i)]);
      per_hint.push_back(std::move(pts));
    }
    for (std::size_t k = 0, more = 1; more; ++k) {
      more = 0;
      for (std::size_t i = 0; i < hints.size(); ++i)
        if (k < per_hint[i].size()) {
          order_.emplace_back(hints[i], std::move(per_hint[i][k]));
          more = 1;
        }
    }
  }

  rng rng_{0};
  std::vector<std::pair<expert_hint const*, parameters>> order_;  // the problem outlives the search
  std::size_t next_ = 0;
  bool built_ = false;
};

struct exhaustive_options {
  std::size_t batch = 16;     ///< candidates per generation request
  std::size_t dry_limit = 2;  ///< empty generations in a row that mean "nothing left"

  /// The options "exhaustive" takes besides its ladder's (one_rung_options): dry_limit is not one.
  [[nodiscard]] static option_table<exhaustive_options> describe() {
    return option_table<exhaustive_options>{}.add("batch", &exhaustive_options::batch, 1,
                                                  "candidates per generation request");
  }
};

/// Evaluates fresh candidates in the order they were proposed, each once, at the top rung, asks for
/// more when none is left, and stops when the generator has run dry and nothing is in flight.
class exhaustive_scheduler {
 public:
  explicit exhaustive_scheduler(exhaustive_options o = {}) : opt_(o) {
    if (opt_.batch < 1) opt_.batch = 1;
    if (opt_.dry_limit < 1) opt_.dry_limit = 1;
  }

  /// The settings in use (batch and dry_limit raised to 1 where less was given).
  [[nodiscard]] exhaustive_options const& options() const noexcept { return opt_; }

  action next(search_view const& v) {
    if (!v.fresh().empty()) return evaluate(v[v.fresh().front()].cand.id, v.rungs().size() - 1);
    if (asked_) {
      // The previous request is answered: did it add anything?
      dry_ = v.size() > size_at_request_ ? 0 : dry_ + 1;
      asked_ = false;
    }
    if (dry_ >= opt_.dry_limit) {
      if (v.in_flight_evaluations() > 0) return wait();
      return stop("exhaustive: every admitted point has been evaluated");
    }
    asked_ = true;
    size_at_request_ = v.size();
    return generate(generation_mode::explore, opt_.batch);
  }

 private:
  exhaustive_options opt_;
  std::size_t size_at_request_ = 0, dry_ = 0;
  bool asked_ = false;
};

using exhaustive_policies_t =
    policies<exhaustive_generator, policy_gate, one_rung_ladder, speedup_scorer, exhaustive_scheduler>;

/// Exhaustive search at one rung (every shape, `samples` samples each).
[[nodiscard]] inline exhaustive_policies_t exhaustive_policies(problem const& p, int samples = 10,
                                                               exhaustive_options o = {}) {
  return {exhaustive_generator{}, policy_gate::for_problem(p), one_rung_ladder::all_shapes(p, samples),
          speedup_scorer{}, exhaustive_scheduler{o}};
}
/// The same, with the ladder's samples from `l` (as the registry reads them).
[[nodiscard]] inline exhaustive_policies_t exhaustive_policies(problem const& p, one_rung_options const& l,
                                                               exhaustive_options o = {}) {
  return exhaustive_policies(p, static_cast<int>(l.samples), o);
}

}  // namespace kernelbrain
