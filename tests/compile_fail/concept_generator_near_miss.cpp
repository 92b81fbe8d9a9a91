// expect: kernelbrain: a generator needs a member
// A generator whose propose() returns ids instead of candidates must be refused by policies<...>.
#include <kernelbrain/search.hpp>

struct near_miss_generator {
  std::vector<kernelbrain::candidate_id> propose(kernelbrain::search_view const&, kernelbrain::proposal_request const&);
};

using composition = kernelbrain::policies<near_miss_generator, kernelbrain::policy_gate, kernelbrain::multi_rung_ladder,
                                          kernelbrain::speedup_scorer, kernelbrain::coarse_to_fine_scheduler>;
constexpr auto size = sizeof(composition);  // completes the type, which runs the static_asserts
