// expect: kernelbrain: a scorer needs a const member
// A scorer whose score() is not const must be refused by policies<...>.
#include <kernelbrain/search.hpp>

struct near_miss_scorer {
  kernelbrain::score score(kernelbrain::measurement const&, kernelbrain::baseline const&);
};

using composition =
    kernelbrain::policies<kernelbrain::expert_generator, kernelbrain::policy_gate, kernelbrain::multi_rung_ladder,
                          near_miss_scorer, kernelbrain::coarse_to_fine_scheduler>;
constexpr auto size = sizeof(composition);  // completes the type, which runs the static_asserts
