// The greedy scheduler and registry entry of docs/writing-a-strategy.md, compiled so the doc stays true.
#include <cstdio>
#include <kernelbrain/search.hpp>
#include <kernelbrain/strategies/all.hpp>
namespace kb = kernelbrain;
struct greedy_scheduler {
  kb::action next(kb::search_view const& v) {
    const std::size_t top = v.rungs().size() - 1;
    if (!v.fresh().empty()) return kb::evaluate(v[v.fresh().front()].cand.id, top);
    if (auto const* best = v.best()) return kb::generate(kb::generation_mode::mutate, 4, {best->cand.id});
    return kb::generate(kb::generation_mode::explore, 8);
  }
};
int main() {  // registers the strategy by name and runs it
  auto reg = kb::builtin_strategies();
  reg.add("greedy", "evaluate at the top rung, mutate the incumbent",
          [](kb::problem const& p, kb::strategy_options const&) {
            return kb::erase(kb::default_policies(p).with_scheduler(greedy_scheduler{}));
          });
  kb::synthetic_landscape land;
  kb::synthetic_evaluator ev(land);
  kb::search_options o;
  o.limits.evaluations = 100;
  auto r = kb::search(land.get_problem(), reg.make("greedy", land.get_problem(), {}), ev, o);
  std::printf("greedy: %zu evaluations, best %s\n", r.counters.evaluations,
              r.best ? r.best->cand.id.str().c_str() : "none");
  return r.best ? 0 : 1;
}
