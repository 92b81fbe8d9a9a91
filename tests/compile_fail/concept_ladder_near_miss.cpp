// expect: kernelbrain: a fidelity_ladder needs a const member
// A ladder whose rungs() is not const must be refused by policies<...>.
#include <kernelbrain/search.hpp>

struct near_miss_ladder {
  std::span<kernelbrain::rung const> rungs();
};

using composition = kernelbrain::policies<kernelbrain::expert_generator, kernelbrain::policy_gate, near_miss_ladder,
                                          kernelbrain::speedup_scorer, kernelbrain::coarse_to_fine_scheduler>;
constexpr auto size = sizeof(composition);  // completes the type, which runs the static_asserts
