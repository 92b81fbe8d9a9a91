// expect: kernelbrain: a gate needs a member
// A gate that answers bool (losing the reject stage) must be refused by policies<...>.
#include <kernelbrain/search.hpp>

struct near_miss_gate {
  bool admit(kernelbrain::candidate const&, kernelbrain::evaluator&);
};

using composition = kernelbrain::policies<kernelbrain::expert_generator, near_miss_gate, kernelbrain::multi_rung_ladder,
                                          kernelbrain::speedup_scorer, kernelbrain::coarse_to_fine_scheduler>;
constexpr auto size = sizeof(composition);  // completes the type, which runs the static_asserts
