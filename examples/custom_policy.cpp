// Replaces exactly one policy of the paper's composition: the scorer ranks by the largest shape only.
#include <cstdio>
#include <kernelbrain/search.hpp>

namespace kb = kernelbrain;

// --- the whole custom policy: 9 lines ---------------------------------------------------------
struct largest_shape_scorer {
  kb::score score(kb::measurement const& m, kb::baseline const& b) const {
    auto const& t = m.timings.back();  // rungs list shapes smallest first
    const double speedup = b.seconds[t.shape] / t.stats.median;
    return {speedup, speedup};
  }
};
// ------------------------------------------------------------------------------------------------

int main() {
  kb::synthetic_landscape land;
  kb::synthetic_evaluator backend(land);
  auto const& problem = land.get_problem();
  auto policies = kb::default_policies(problem).with_scorer(largest_shape_scorer{});
  kb::search_options options;
  options.limits.evaluations = 300;
  auto result = kb::search(problem, std::move(policies), backend, options);
  if (!result.best) return 1;
  std::printf("best %s %s: %.2fx over the reference (%s)\n", result.best->cand.family.c_str(),
              result.best->cand.params.to_string().c_str(), result.best_score->speedup, result.stop_reason.c_str());
}
