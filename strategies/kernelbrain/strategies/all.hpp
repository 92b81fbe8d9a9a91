// Every strategy that ships, registered by name: what the CLI's --strategy and the ablation harness pick from.
#pragma once
#include "kernelbrain/core/any_policy.hpp"
#include "kernelbrain/core/registry.hpp"
#include "kernelbrain/defaults/default_policies.hpp"
#include "kernelbrain/strategies/exhaustive.hpp"
#include "kernelbrain/strategies/hyperband.hpp"
#include "kernelbrain/strategies/null_policies.hpp"
#include "kernelbrain/strategies/random_evolution.hpp"
#include "kernelbrain/strategies/successive_halving.hpp"

namespace kernelbrain {

/// A registry holding every strategy that ships. Each entry names the option table it reads (declared
/// next to the strategy's options struct); the registry lists those options in the description,
/// refuses any other, and documents them in help(name).
[[nodiscard]] inline strategy_registry builtin_strategies() {
  strategy_registry r;
  // The default family shares the coarse-to-fine scheduler's options, so the ablations differ in one axis only.
  r.add("default",
        "the paper's composition: expert generator, policy gate, smoke/screen/confirm ladder, speedup scorer, "
        "coarse-to-fine scheduler",
        coarse_to_fine_options::describe(),
        [](problem const& p, coarse_to_fine_options const& c) { return default_policies(p, c); });
  r.add("default-no-gate", "ablation: the default with a gate that admits everything",
        coarse_to_fine_options::describe(), [](problem const& p, coarse_to_fine_options const& c) {
          return default_policies(p, c).with_gate(pass_all_gate{});
        });
  r.add("default-one-rung", "ablation: the default with one rung of every shape instead of the ladder",
        option_table(coarse_to_fine_options::describe(), one_rung_options::describe()),
        [](problem const& p, coarse_to_fine_options const& c, one_rung_options const& l) {
          return default_policies(p, c).with_ladder(one_rung_ladder::all_shapes(p, l));
        });
  r.add("random", "(mu+lambda) random evolution at the confirm rung only", evolution_options::describe(),
        [](problem const& p, evolution_options const& e) { return random_evolution_policies(p, e); });
  r.add("sha", "synchronous successive halving over the standard ladder", successive_halving_options::describe(),
        [](problem const& p, successive_halving_options const& s) { return successive_halving_policies(p, s); });
  r.add("hyperband", "Hyperband: successive-halving brackets from every rung, cycled", hyperband_options::describe(),
        [](problem const& p, hyperband_options const& h) { return hyperband_policies(p, h); });
  r.add("exhaustive", "every admitted template point once, in seeded random order, at one rung of every shape",
        option_table(one_rung_options::describe(), exhaustive_options::describe()),
        [](problem const& p, one_rung_options const& l, exhaustive_options const& e) {
          return exhaustive_policies(p, l, e);
        });
  return r;
}

}  // namespace kernelbrain
