// expect: kernelbrain: a scheduler needs a member
// A scheduler that wants a mutable history (search_view&) must be refused by policies<...>.
#include <kernelbrain/search.hpp>

struct near_miss_scheduler {
  kernelbrain::action next(kernelbrain::search_view&);
};

using composition =
    kernelbrain::policies<kernelbrain::expert_generator, kernelbrain::policy_gate, kernelbrain::multi_rung_ladder,
                          kernelbrain::speedup_scorer, near_miss_scheduler>;
constexpr auto size = sizeof(composition);  // completes the type, which runs the static_asserts
