// Every strategy that ships, registered by name: what the CLI's --strategy and the ablation harness pick from.
#pragma once
#include <string>
#include <utility>
#include "kernelbrain/core/any_policy.hpp"
#include "kernelbrain/core/registry.hpp"
#include "kernelbrain/defaults/default_policies.hpp"
#include "kernelbrain/strategies/exhaustive.hpp"
#include "kernelbrain/strategies/hyperband.hpp"
#include "kernelbrain/strategies/null_policies.hpp"
#include "kernelbrain/strategies/random_evolution.hpp"
#include "kernelbrain/strategies/successive_halving.hpp"

namespace kernelbrain {

namespace detail {

/// The default scheduler's settings, shared by "default" and its ablations so they differ in one axis only.
[[nodiscard]] inline coarse_to_fine_options coarse_to_fine_from(strategy_options const& o) {
  coarse_to_fine_options c;
  c.eta = o.get_size("eta", c.eta, 2);
  c.explore_batch = o.get_size("explore_batch", c.explore_batch, 1);
  c.mutate_batch = o.get_size("mutate_batch", c.mutate_batch, 1);
  c.final_explore_share = o.get_double("final_explore_share", c.final_explore_share);
  c.stagnation_limit = o.get_size("stagnation_limit", c.stagnation_limit);
  c.roofline_target = o.get_double("roofline_target", c.roofline_target);
  return c;
}

/// Timed samples per shape for a one-rung ladder: at least one.
[[nodiscard]] inline int samples_from(strategy_options const& o, int fallback) {
  return static_cast<int>(o.get_size("samples", static_cast<std::size_t>(fallback), 1));
}

}  // namespace detail

/// A registry holding every strategy that ships. Options each one reads are listed in its description.
[[nodiscard]] inline strategy_registry builtin_strategies() {
  strategy_registry r;
  r.add("default",
        "the paper's composition: expert generator, policy gate, smoke/screen/confirm ladder, speedup scorer, "
        "coarse-to-fine scheduler (options: eta, explore_batch, mutate_batch, final_explore_share, "
        "stagnation_limit, roofline_target)",
        [](problem const& p, strategy_options const& o) {
          return erase(default_policies(p, detail::coarse_to_fine_from(o)));
        });
  r.add("default-no-gate", "ablation: the default with a gate that admits everything (options: as default)",
        [](problem const& p, strategy_options const& o) {
          return erase(default_policies(p, detail::coarse_to_fine_from(o)).with_gate(pass_all_gate{}));
        });
  r.add("default-one-rung",
        "ablation: the default with one rung of every shape instead of the ladder (options: as default, samples)",
        [](problem const& p, strategy_options const& o) {
          auto ladder = one_rung_ladder::all_shapes(p, detail::samples_from(o, 10));
          return erase(default_policies(p, detail::coarse_to_fine_from(o)).with_ladder(std::move(ladder)));
        });
  r.add("random", "(mu+lambda) random evolution at the confirm rung only (options: population, offspring, tournament)",
        [](problem const& p, strategy_options const& o) {
          evolution_options e;
          e.population = o.get_size("population", e.population, 1);
          e.offspring = o.get_size("offspring", e.offspring, 1);
          e.tournament = o.get_size("tournament", e.tournament, 1);
          return erase(random_evolution_policies(p, e));
        });
  r.add("sha", "synchronous successive halving over the standard ladder (options: eta, bracket_size, explore_batch)",
        [](problem const& p, strategy_options const& o) {
          successive_halving_options s;
          s.eta = o.get_size("eta", s.eta, 2);
          s.bracket_size = o.get_size("bracket_size", s.bracket_size);
          s.explore_batch = o.get_size("explore_batch", s.explore_batch, 1);
          return erase(successive_halving_policies(p, s));
        });
  r.add("hyperband",
        "Hyperband: successive-halving brackets from every rung, cycled (options: eta, scale, explore_batch)",
        [](problem const& p, strategy_options const& o) {
          hyperband_options h;
          h.eta = o.get_size("eta", h.eta, 2);
          h.scale = o.get_size("scale", h.scale, 1);
          h.explore_batch = o.get_size("explore_batch", h.explore_batch, 1);
          return erase(hyperband_policies(p, h));
        });
  r.add("exhaustive",
        "every admitted template point once, in seeded random order, at one rung of every shape (options: samples, "
        "batch)",
        [](problem const& p, strategy_options const& o) {
          exhaustive_options e;
          e.batch = o.get_size("batch", e.batch, 1);
          return erase(exhaustive_policies(p, detail::samples_from(o, 10), e));
        });
  return r;
}

}  // namespace kernelbrain
