// expect: kernelbrain: a scheduler needs a member
// Passing a non-scheduler where an any_scheduler is expected says what a scheduler needs.
#include <kernelbrain/core/any_policy.hpp>
#include <kernelbrain/search.hpp>

struct not_a_scheduler {
  kernelbrain::action next(kernelbrain::search_view&);  // the view must be const
};

void take(kernelbrain::any_scheduler) {}

int main() { take(not_a_scheduler{}); }
