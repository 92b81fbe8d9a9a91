// Composition of the five policies, with one-axis replacement (CUTLASS-style overridable defaults).
#pragma once
#include <concepts>
#include <utility>
#include "kernelbrain/core/concepts.hpp"

namespace kernelbrain {

template <class Generator, class Gate, class Ladder, class Scorer, class Scheduler>
struct policies {
  // One readable diagnostic per axis that does not model its concept.
  static_assert(check_generator<Generator>());
  static_assert(check_gate<Gate>());
  static_assert(check_fidelity_ladder<Ladder>());
  static_assert(check_scorer<Scorer>());
  static_assert(check_scheduler<Scheduler>());

  using generator_type = Generator;
  using gate_type = Gate;
  using ladder_type = Ladder;
  using scorer_type = Scorer;
  using scheduler_type = Scheduler;

  Generator generator;
  Gate gate;
  Ladder ladder;
  Scorer scorer;
  Scheduler scheduler;

  template <class G>
  [[nodiscard]] policies<G, Gate, Ladder, Scorer, Scheduler> with_generator(G g) && {
    return {std::move(g), std::move(gate), std::move(ladder), std::move(scorer), std::move(scheduler)};
  }
  template <class G>
  [[nodiscard]] policies<Generator, G, Ladder, Scorer, Scheduler> with_gate(G g) && {
    return {std::move(generator), std::move(g), std::move(ladder), std::move(scorer), std::move(scheduler)};
  }
  template <class L>
  [[nodiscard]] policies<Generator, Gate, L, Scorer, Scheduler> with_ladder(L l) && {
    return {std::move(generator), std::move(gate), std::move(l), std::move(scorer), std::move(scheduler)};
  }
  template <class S>
  [[nodiscard]] policies<Generator, Gate, Ladder, S, Scheduler> with_scorer(S s) && {
    return {std::move(generator), std::move(gate), std::move(ladder), std::move(s), std::move(scheduler)};
  }
  template <class S>
  [[nodiscard]] policies<Generator, Gate, Ladder, Scorer, S> with_scheduler(S s) && {
    return {std::move(generator), std::move(gate), std::move(ladder), std::move(scorer), std::move(s)};
  }
};

template <class G, class Ga, class L, class Sc, class Sh>
policies(G, Ga, L, Sc, Sh) -> policies<G, Ga, L, Sc, Sh>;

/// A composition search() can run: a policies<...> (or a type shaped like one) whose five members
/// model their concepts.
template <class P>
concept policy_set = requires(P& p) {
  typename P::generator_type;
  typename P::gate_type;
  typename P::ladder_type;
  typename P::scorer_type;
  typename P::scheduler_type;
  { p.generator } -> std::same_as<typename P::generator_type&>;
  { p.gate } -> std::same_as<typename P::gate_type&>;
  { p.ladder } -> std::same_as<typename P::ladder_type&>;
  { p.scorer } -> std::same_as<typename P::scorer_type&>;
  { p.scheduler } -> std::same_as<typename P::scheduler_type&>;
}
&&generator<typename P::generator_type>&& gate<typename P::gate_type>&& fidelity_ladder<typename P::ladder_type>&&
    scorer<typename P::scorer_type>&& scheduler<typename P::scheduler_type>;

}  // namespace kernelbrain
