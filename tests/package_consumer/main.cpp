// Uses the installed headers, the strategies and the runtime library: proves the package is complete,
// including the conformance suite a strategy author runs on their own composition.
#include <cstdio>
#include <kernelbrain/search.hpp>
#include <kernelbrain/strategies/all.hpp>
#include <kernelbrain/testing/conformance.hpp>

// A user's own axis (here it only forwards to the default scorer): what a strategy author checks.
struct my_scorer {
  kernelbrain::speedup_scorer inner;
  kernelbrain::score score(kernelbrain::measurement const& m, kernelbrain::baseline const& b) const {
    return inner.score(m, b);
  }
};

int main() {
  kernelbrain::synthetic_landscape land;
  kernelbrain::synthetic_evaluator ev(land);
  kernelbrain::search_options o;
  o.limits.evaluations = 50;
  auto reg = kernelbrain::builtin_strategies();
  auto r = kernelbrain::search(land.get_problem(), reg.make("hyperband", land.get_problem(), {}), ev, o);
  std::printf("%s %zu\n", r.stop_reason.c_str(), r.counters.evaluations);

  kernelbrain::testing::conformance_options quick;
  quick.quality_seeds = 5;
  quick.min_within = 4;
  const auto c = kernelbrain::testing::check_conformance(
      "default with my_scorer",
      [](kernelbrain::problem const& p) { return kernelbrain::default_policies(p).with_scorer(my_scorer{}); }, quick);
  std::fputs(c.report().c_str(), stdout);
  return c.passed() ? 0 : 1;
}
