// The five policy concepts, their optional hooks, and readable diagnostics for near misses.
#pragma once
#include <concepts>
#include <cstdint>
#include <span>
#include <vector>
#include "kernelbrain/core/action.hpp"
#include "kernelbrain/core/candidate.hpp"
#include "kernelbrain/core/evaluator.hpp"
#include "kernelbrain/core/event.hpp"
#include "kernelbrain/core/measurement.hpp"
#include "kernelbrain/core/model_exchange.hpp"
#include "kernelbrain/core/rung.hpp"
#include "kernelbrain/core/score.hpp"
#include "kernelbrain/core/search_view.hpp"
#include "kernelbrain/core/verdict.hpp"

namespace kernelbrain {

/// Proposes candidates: explore the catalogue, or mutate given parents.
template <class G>
concept generator = requires(G& g, search_view const& v, proposal_request const& r) {
  { g.propose(v, r) } -> std::same_as<std::vector<candidate>>;
};

/// Decides, before any timing, whether a candidate may be benchmarked at all.
template <class G>
concept gate = requires(G& g, candidate const& c, evaluator& e) {
  { g.admit(c, e) } -> std::same_as<verdict>;
};

/// The fidelity levels, cheapest first.
template <class L>
concept fidelity_ladder = requires(L const& l) {
  { l.rungs() } -> std::convertible_to<std::span<rung const>>;
};

/// Turns a measurement into a comparable score (higher is better).
template <class S>
concept scorer = requires(S const& s, measurement const& m, baseline const& b) {
  { s.score(m, b) } -> std::same_as<score>;
};

/// Chooses the next action: generate, evaluate at a rung, wait, or stop. Owns promotion and pruning.
template <class S>
concept scheduler = requires(S& s, search_view const& v) {
  { s.next(v) } -> std::same_as<action>;
};

/// Optional hook: the driver calls reseed(seed) once before the search with a per-axis seed.
template <class P>
concept reseedable = requires(P& p, std::uint64_t seed) {
  p.reseed(seed);
};

/// Optional hook: the driver calls observe(e) for every event (generator, scorer and scheduler only:
/// the gate runs on the evaluation plane and is never called from two threads).
template <class P>
concept observing = requires(P& p, event const& e) {
  p.observe(e);
};

/// Optional hook: a generator that talks to a model hands over its exchanges (prompt, reply, tokens,
/// cost) after each propose(); the engine charges their tokens and cost to the budget, emits a
/// model_reply event for each and journals them.
template <class P>
concept reporting_exchanges = requires(P& p) {
  { p.take_exchanges() } -> std::same_as<std::vector<model_exchange>>;
};

/// Optional hook: a generator with work still in flight when the search stops (model requests sent
/// ahead of need) hands over what came of it; the engine records those candidates, which are never
/// evaluated, and their exchanges, so that nothing paid for is missing from the journal.
template <class P>
concept settling = requires(P& p) {
  { p.settle() } -> std::same_as<std::vector<candidate>>;
};

/// One static_assert per requirement, with the signature spelled out. Used by policies<...>, the
/// any_* wrappers and search(). Each returns true whatever the outcome, so that a caller's own
/// `static_assert(check_x<T>())` adds no second, bare "static assertion failed" to the message.
template <class G>
constexpr bool check_generator() {
  static_assert(generator<G>,
                "kernelbrain: a generator needs a member "
                "`std::vector<kernelbrain::candidate> propose(kernelbrain::search_view const&, "
                "kernelbrain::proposal_request const&)` (non-const is fine)");
  return true;
}
template <class G>
constexpr bool check_gate() {
  static_assert(gate<G>,
                "kernelbrain: a gate needs a member "
                "`kernelbrain::verdict admit(kernelbrain::candidate const&, kernelbrain::evaluator&)`");
  return true;
}
template <class L>
constexpr bool check_fidelity_ladder() {
  static_assert(fidelity_ladder<L>,
                "kernelbrain: a fidelity_ladder needs a const member "
                "`std::span<kernelbrain::rung const> rungs() const` (a std::vector<rung> const& also works)");
  return true;
}
template <class S>
constexpr bool check_scorer() {
  static_assert(scorer<S>,
                "kernelbrain: a scorer needs a const member "
                "`kernelbrain::score score(kernelbrain::measurement const&, kernelbrain::baseline const&) const`");
  return true;
}
template <class S>
constexpr bool check_scheduler() {
  static_assert(scheduler<S>,
                "kernelbrain: a scheduler needs a member "
                "`kernelbrain::action next(kernelbrain::search_view const&)`");
  return true;
}

/// Calls p.reseed(seed) when P has the hook; nothing otherwise.
template <class P>
void reseed_if_able(P& p, std::uint64_t seed) {
  if constexpr (reseedable<P>) p.reseed(seed);
}
/// p.take_exchanges() when P has the hook; nothing otherwise.
template <class P>
std::vector<model_exchange> take_exchanges_if_able(P& p) {
  if constexpr (reporting_exchanges<P>)
    return p.take_exchanges();
  else
    return {};
}
/// p.settle() when P has the hook; nothing otherwise.
template <class P>
std::vector<candidate> settle_if_able(P& p) {
  if constexpr (settling<P>)
    return p.settle();
  else
    return {};
}
/// A gate that says at which shapes admit() runs correctness trials (policy_gate::checked_shapes).
template <class G>
concept checking_gate = requires(G const& g) {
  { g.checked_shapes() } -> std::convertible_to<std::vector<std::size_t>>;
};
/// g.checked_shapes() when G has the hook; none otherwise.
template <class G>
std::vector<std::size_t> gate_checked_shapes_if_able(G const& g) {
  if constexpr (checking_gate<G>)
    return g.checked_shapes();
  else
    return {};
}
/// Calls p.observe(e) when P has the hook; nothing otherwise.
template <class P>
void observe_if_able(P& p, event const& e) {
  if constexpr (observing<P>) p.observe(e);
}

}  // namespace kernelbrain
