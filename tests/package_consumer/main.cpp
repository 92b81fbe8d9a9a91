// Uses the installed headers, the strategies and the runtime library: proves the package is complete.
#include <kernelbrain/search.hpp>
#include <kernelbrain/strategies/all.hpp>
#include <cstdio>
int main() {
  kernelbrain::synthetic_landscape land;
  kernelbrain::synthetic_evaluator ev(land);
  kernelbrain::search_options o; o.limits.evaluations = 50;
  auto reg = kernelbrain::builtin_strategies();
  auto r = kernelbrain::search(land.get_problem(), reg.make("hyperband", land.get_problem(), {}), ev, o);
  std::printf("%s %zu\n", r.stop_reason.c_str(), r.counters.evaluations);
}
