// expect: kernelbrain::search needs a composition of the five policies
// search() given something that is not a policies<...> says what it needs, at the call.
#include <kernelbrain/search.hpp>

int main() {
  kernelbrain::synthetic_landscape land;
  kernelbrain::synthetic_evaluator backend(land);
  struct not_policies {};
  (void)kernelbrain::search(land.get_problem(), not_policies{}, backend);
}
