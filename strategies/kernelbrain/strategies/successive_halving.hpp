// Synchronous successive halving (SHA): brackets of candidates climb the ladder, the top 1/eta per rung.
#pragma once
#include <algorithm>
#include <cstdint>
#include <optional>
#include <string>
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

namespace kernelbrain {

namespace detail {

/// One synchronous successive-halving bracket: `size` new candidates enter at rung `start`; once
/// every member of a rung has reported, the best max(1, measured/eta) of them go up one rung; the
/// bracket ends after the top rung. It only asks for explore generations (no mutation).
class halving_bracket {
 public:
  halving_bracket(std::size_t start, std::size_t size, std::size_t eta, std::size_t explore_batch)
      : rung_(start),
        size_(std::max<std::size_t>(size, 1)),
        eta_(std::max<std::size_t>(eta, 2)),
        batch_(std::max<std::size_t>(explore_batch, 1)) {}

  /// The bracket's next action, or nullopt once it has finished.
  std::optional<action> next(search_view const& v) {
    for (;;) {
      if (filling_) {
        if (members_.size() < size_) {
          if (!v.fresh().empty()) return enter(v[v.fresh().front()].cand.id);
          if (asked_) {  // the last generation is answered: did it add anything?
            dry_ = v.size() > size_at_request_ ? 0 : dry_ + 1;
            asked_ = false;
          }
          if (dry_ < dry_limit) {
            asked_ = true;
            size_at_request_ = v.size();
            return generate(generation_mode::explore, std::min(batch_, size_ - members_.size()));
          }
          // The generator has run dry: run the bracket with whoever entered.
        }
        filling_ = false;
        entered_ = members_.size();
      }
      while (!queue_.empty()) {
        const auto id = queue_.front();
        queue_.erase(queue_.begin());
        if (auto const* r = v.find(id); r && r->state == candidate_state::measured) return enter(id);
      }
      // Synchronous: the rung is decided only when every member has reported.
      for (auto id : members_)
        if (auto const* r = v.find(id); r && r->state == candidate_state::in_flight) return wait();
      if (rung_ + 1 >= v.rungs().size()) return std::nullopt;
      std::vector<std::pair<double, candidate_id>> ranked;
      for (auto id : members_)
        if (auto const* r = v.find(id); r && r->state != candidate_state::rejected && r->scores[rung_])
          ranked.emplace_back(r->scores[rung_]->value, id);
      if (ranked.empty()) return std::nullopt;
      std::sort(ranked.begin(), ranked.end(), [](auto const& a, auto const& b) {
        return a.first > b.first || (a.first == b.first && a.second < b.second);
      });
      ranked.resize(std::max<std::size_t>(1, ranked.size() / eta_));
      ++rung_;
      members_.clear();
      for (auto const& [value, id] : ranked) queue_.push_back(id);
    }
  }

  /// Candidates that entered the bracket (known once filling is over).
  [[nodiscard]] std::size_t entered() const noexcept { return filling_ ? members_.size() : entered_; }

 private:
  static constexpr std::size_t dry_limit = 2;  // empty generations in a row that mean "no more candidates"

  action enter(candidate_id id) {
    members_.push_back(id);
    return evaluate(id, rung_);
  }

  std::size_t rung_, size_, eta_, batch_;
  std::vector<candidate_id> members_;  // dispatched at rung_
  std::vector<candidate_id> queue_;    // promoted to rung_, not yet dispatched (best first)
  bool filling_ = true, asked_ = false;
  std::size_t size_at_request_ = 0, dry_ = 0, entered_ = 0;
};

}  // namespace detail

struct successive_halving_options {
  std::size_t eta = 3;  ///< keep the top 1/eta of each rung
  /// Candidates entering rung 0 per bracket. 0: eta^rungs, so that eta candidates reach the top rung
  /// and the most faithful rung still has a choice to make (the low rungs are imperfect proxies).
  std::size_t bracket_size = 0;
  std::size_t explore_batch = 8;  ///< candidates per explore request

  /// The options "sha" takes ("sha:eta=4,bracket_size=27").
  [[nodiscard]] static option_table<successive_halving_options> describe() {
    using o = successive_halving_options;
    return option_table<o>{}
        .add("eta", &o::eta, 2, "keep the top 1/eta of each rung")
        .add("bracket_size", &o::bracket_size, "candidates entering rung 0 per bracket (0 = eta^rungs)")
        .add("explore_batch", &o::explore_batch, 1, "candidates per explore request");
  }
};

/// Successive halving, one bracket at a time, all at rung 0: a bracket's rung is complete before
/// anyone is promoted (unlike the default's asynchronous halving), and a new bracket starts when one
/// ends. Stops when a new bracket gets no candidate at all.
class successive_halving_scheduler {
 public:
  explicit successive_halving_scheduler(successive_halving_options o = {}) : opt_(o) {
    opt_.eta = std::max<std::size_t>(opt_.eta, 2);
  }

  void reseed(std::uint64_t) {
    bracket_.reset();
    brackets_ = 0;
  }

  action next(search_view const& v) {
    for (;;) {
      if (!bracket_) bracket_.emplace(0, bracket_size(v), opt_.eta, opt_.explore_batch);
      if (auto a = bracket_->next(v)) return *std::move(a);
      const bool empty = bracket_->entered() == 0;
      bracket_.reset();
      ++brackets_;
      if (empty) return stop("successive halving: the generator has nothing new for a bracket");
    }
  }

  /// The settings in use (eta raised to 2 where less was given).
  [[nodiscard]] successive_halving_options const& options() const noexcept { return opt_; }

  /// Brackets finished so far.
  [[nodiscard]] std::size_t brackets() const noexcept { return brackets_; }

 private:
  std::size_t bracket_size(search_view const& v) const {
    if (opt_.bracket_size) return opt_.bracket_size;
    std::size_t n = 1;
    for (std::size_t i = 0; i < v.rungs().size(); ++i) n *= opt_.eta;
    return n;
  }

  successive_halving_options opt_;
  std::optional<detail::halving_bracket> bracket_;
  std::size_t brackets_ = 0;
};

using successive_halving_policies_t =
    policies<expert_generator, policy_gate, multi_rung_ladder, speedup_scorer, successive_halving_scheduler>;

/// SHA as a whole strategy: expert generator (explore only), default gate, standard ladder, speedup scorer.
[[nodiscard]] inline successive_halving_policies_t successive_halving_policies(problem const& p,
                                                                               successive_halving_options o = {},
                                                                               ladder_options const& l = {}) {
  return {expert_generator{}, policy_gate::for_problem(p), multi_rung_ladder::standard(p, l), speedup_scorer{},
          successive_halving_scheduler{o}};
}

}  // namespace kernelbrain
