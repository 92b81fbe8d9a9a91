// expect: kernelbrain: a generator needs a member
// Erasing a type that is not a generator must say what a generator needs, once, at the conversion
// (not "conversion from ... to non-scalar type requested").
#include <kernelbrain/core/any_policy.hpp>
#include <kernelbrain/search.hpp>

struct near_miss_generator {
  std::vector<kernelbrain::candidate_id> propose(kernelbrain::search_view const&, kernelbrain::proposal_request const&);
};

int main() {
  kernelbrain::any_generator g = near_miss_generator{};
  (void)g;
}
