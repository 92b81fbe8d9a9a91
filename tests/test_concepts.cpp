// The five policy concepts and their hooks: a minimal model of each, and near misses that must not model it.
#include <doctest/doctest.h>
#include <kernelbrain/core/any_policy.hpp>
#include <kernelbrain/search.hpp>
#include <kernelbrain/strategies/all.hpp>

#include <cstdint>
#include <span>
#include <string>
#include <vector>

namespace kb = kernelbrain;

namespace {

// --- generator ---------------------------------------------------------------------------------
struct minimal_generator {
  std::vector<kb::candidate> propose(kb::search_view const&, kb::proposal_request const&) { return {}; }
};
struct generator_wrong_return {  // ids instead of candidates
  std::vector<kb::candidate_id> propose(kb::search_view const&, kb::proposal_request const&) { return {}; }
};
struct generator_wrong_parameter {  // takes the request by non-const reference: cannot bind a const one
  std::vector<kb::candidate> propose(kb::search_view const&, kb::proposal_request&) { return {}; }
};

// --- gate --------------------------------------------------------------------------------------
struct minimal_gate {
  kb::verdict admit(kb::candidate const&, kb::evaluator&) { return kb::verdict::pass(); }
};
struct gate_wrong_return {  // a bool loses the reject stage
  bool admit(kb::candidate const&, kb::evaluator&) { return true; }
};
struct gate_wrong_parameter {  // no evaluator: it could not build or check anything
  kb::verdict admit(kb::candidate const&) { return kb::verdict::pass(); }
};

// --- fidelity ladder ---------------------------------------------------------------------------
struct minimal_ladder {
  std::vector<kb::rung> rs{kb::rung{}};
  std::span<kb::rung const> rungs() const { return rs; }
};
struct ladder_returning_vector_ref {  // the documented alternative spelling
  std::vector<kb::rung> rs{kb::rung{}};
  std::vector<kb::rung> const& rungs() const { return rs; }
};
struct ladder_missing_const {
  std::vector<kb::rung> rs{kb::rung{}};
  std::span<kb::rung const> rungs() { return rs; }
};
struct ladder_wrong_return {  // names are not rungs
  std::vector<std::string> names;
  std::vector<std::string> const& rungs() const { return names; }
};

// --- scorer ------------------------------------------------------------------------------------
struct minimal_scorer {
  kb::score score(kb::measurement const&, kb::baseline const&) const { return {}; }
};
struct scorer_missing_const {
  kb::score score(kb::measurement const&, kb::baseline const&) { return {}; }
};
struct scorer_wrong_return {  // a bare double is not a score
  double score(kb::measurement const&, kb::baseline const&) const { return 0; }
};

// --- scheduler ---------------------------------------------------------------------------------
struct minimal_scheduler {
  kb::action next(kb::search_view const&) { return kb::stop("done"); }
};
struct scheduler_wrong_return {  // only one kind of action: not an action
  kb::proposal_request next(kb::search_view const&) { return {}; }
};
struct scheduler_wrong_parameter {  // wants to modify the history
  kb::action next(kb::search_view&) { return kb::stop("done"); }
};

// --- hooks -------------------------------------------------------------------------------------
struct with_hooks {
  std::uint64_t seed = 0;
  int events = 0;
  void reseed(std::uint64_t s) { seed = s; }
  void observe(kb::event const&) { ++events; }
};
struct hooks_wrong_parameters {
  void reseed(std::string const&) {}
  void observe(int) {}
};

}  // namespace

TEST_CASE("concepts: a minimal model of each policy models it, near misses do not") {
  static_assert(kb::generator<minimal_generator>);
  static_assert(!kb::generator<generator_wrong_return>);
  static_assert(!kb::generator<generator_wrong_parameter>);

  static_assert(kb::gate<minimal_gate>);
  static_assert(!kb::gate<gate_wrong_return>);
  static_assert(!kb::gate<gate_wrong_parameter>);

  static_assert(kb::fidelity_ladder<minimal_ladder>);
  static_assert(kb::fidelity_ladder<ladder_returning_vector_ref>);
  static_assert(!kb::fidelity_ladder<ladder_missing_const>);
  static_assert(!kb::fidelity_ladder<ladder_wrong_return>);

  static_assert(kb::scorer<minimal_scorer>);
  static_assert(!kb::scorer<scorer_missing_const>);
  static_assert(!kb::scorer<scorer_wrong_return>);

  static_assert(kb::scheduler<minimal_scheduler>);
  static_assert(!kb::scheduler<scheduler_wrong_return>);
  static_assert(!kb::scheduler<scheduler_wrong_parameter>);

  // The minimal models compose.
  using minimal = kb::policies<minimal_generator, minimal_gate, minimal_ladder, minimal_scorer, minimal_scheduler>;
  minimal p{};
  CHECK(p.ladder.rungs().size() == 1);
}

TEST_CASE("concepts: optional hooks are detected by signature") {
  static_assert(kb::reseedable<with_hooks>);
  static_assert(kb::observing<with_hooks>);
  static_assert(!kb::reseedable<minimal_generator>);
  static_assert(!kb::observing<minimal_generator>);
  static_assert(!kb::reseedable<hooks_wrong_parameters>);
  static_assert(!kb::observing<hooks_wrong_parameters>);

  // What ships: the default scheduler and generator have both hooks, the scorer neither.
  static_assert(kb::reseedable<kb::coarse_to_fine_scheduler> && kb::observing<kb::coarse_to_fine_scheduler>);
  static_assert(kb::reseedable<kb::expert_generator> && kb::observing<kb::expert_generator>);
  static_assert(!kb::reseedable<kb::speedup_scorer> && !kb::observing<kb::speedup_scorer>);

  with_hooks h;
  kb::reseed_if_able(h, 42);
  kb::observe_if_able(h, kb::event{});
  kb::observe_if_able(h, kb::event{});
  CHECK(h.seed == 42);
  CHECK(h.events == 2);
  minimal_generator g;  // no hooks: both calls compile and do nothing
  kb::reseed_if_able(g, 42);
  kb::observe_if_able(g, kb::event{});
}

TEST_CASE("concepts: the any_* wrappers model their concept and take only models of it") {
  static_assert(kb::generator<kb::any_generator> && kb::reseedable<kb::any_generator> &&
                kb::observing<kb::any_generator>);
  static_assert(kb::gate<kb::any_gate> && kb::reseedable<kb::any_gate>);
  static_assert(kb::fidelity_ladder<kb::any_ladder>);
  static_assert(kb::scorer<kb::any_scorer> && kb::observing<kb::any_scorer>);
  static_assert(kb::scheduler<kb::any_scheduler> && kb::reseedable<kb::any_scheduler>);

  static_assert(std::constructible_from<kb::any_generator, minimal_generator>);
  static_assert(!kb::detail::erasable_into<generator_wrong_return, kb::any_generator>);
  static_assert(!kb::detail::erasable_into<kb::any_gate, kb::any_generator>);
  static_assert(std::constructible_from<kb::any_gate, minimal_gate>);
  static_assert(!kb::detail::erasable_into<gate_wrong_return, kb::any_gate>);
  static_assert(std::constructible_from<kb::any_ladder, minimal_ladder>);
  static_assert(!kb::detail::erasable_into<ladder_missing_const, kb::any_ladder>);
  static_assert(std::constructible_from<kb::any_scorer, minimal_scorer>);
  static_assert(!kb::detail::erasable_into<scorer_missing_const, kb::any_scorer>);
  static_assert(std::constructible_from<kb::any_scheduler, minimal_scheduler>);
  static_assert(!kb::detail::erasable_into<scheduler_wrong_parameter, kb::any_scheduler>);
  // Move-only: an erased policy owns its state, so a copy would silently fork it.
  static_assert(std::move_constructible<kb::any_scheduler> && !std::copy_constructible<kb::any_scheduler>);
}

TEST_CASE("concepts: every shipped strategy's policies model their concepts") {
  static_assert(kb::generator<kb::exhaustive_generator> && kb::scheduler<kb::exhaustive_scheduler>);
  static_assert(kb::generator<kb::evolution_generator> && kb::scheduler<kb::evolution_scheduler>);
  static_assert(kb::scheduler<kb::successive_halving_scheduler> && kb::scheduler<kb::hyperband_scheduler>);
  static_assert(kb::gate<kb::pass_all_gate> && kb::fidelity_ladder<kb::one_rung_ladder>);
  // Seeded where they draw random numbers.
  static_assert(kb::reseedable<kb::exhaustive_generator> && kb::reseedable<kb::evolution_generator>);
  static_assert(kb::reseedable<kb::evolution_scheduler> && kb::observing<kb::evolution_scheduler>);
}
