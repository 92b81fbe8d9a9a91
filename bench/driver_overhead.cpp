// Driver overhead per ask/tell cycle, with 10^3, 10^4 and 10^5 candidates already in the history.
// The evaluator does no work, so what is timed is the framework: scheduler, generator, gate call,
// scoring, history and event bookkeeping.
#include <benchmark/benchmark.h>

#include <kernelbrain/search.hpp>
#include <memory>

namespace kb = kernelbrain;

namespace {

/// One template with 10^6 points, so the history can grow past 10^5 without running dry.
kb::problem big_problem() {
  kb::problem p;
  p.name = "overhead";
  p.shapes = {kb::shape{"one", {{"N", 1024}}, "smoke", 1, 0, 0}};
  kb::expert_hint h;
  h.name = "grid";
  h.templ = kb::kernel_template{};
  for (char const* n : {"A", "B", "C", "D", "E", "F"})
    h.templ->space.params.push_back({n, {0, 1, 2, 3, 4, 5, 6, 7, 8, 9}});
  p.catalogue.push_back(std::move(h));
  return p;
}

/// Passes everything and returns one sample whose value depends on the parameters.
struct instant_evaluator final : kb::evaluator {
  std::string fingerprint() const override { return "instant"; }
  kb::verdict build(kb::candidate const&) override { return kb::verdict::pass(); }
  kb::verdict check(kb::candidate const&, std::span<std::size_t const>, int, std::uint64_t) override {
    return kb::verdict::pass();
  }
  kb::measurement measure(kb::candidate const& c, kb::rung const& r, kb::measure_request const&) override {
    kb::measurement m;
    double t = 1.0;
    for (auto const& [k, v] : c.params) t += static_cast<double>((v - 4) * (v - 4)) * 0.01;
    for (auto s : r.shapes) {
      kb::shape_timing st;
      st.shape = s;
      st.samples = {t * 1e-3};
      st.summarise();
      m.timings.push_back(std::move(st));
    }
    return m;
  }
  kb::baseline measure_baseline(kb::problem const& p) override {
    kb::baseline b;
    b.seconds.assign(p.shapes.size(), 2e-3);
    return b;
  }
  double take_device_seconds() override { return 1e-3; }
};

void cycle(kb::engine<kb::default_policies_t>& eng, instant_evaluator& ev) {
  for (;;) {
    kb::step s = eng.ask();
    if (auto* t = std::get_if<kb::evaluation_task>(&s)) {
      eng.tell(eng.execute(*t, ev));
      return;
    }
    if (std::holds_alternative<kb::finished>(s)) throw kb::error("benchmark search ended: " + eng.stop_reason());
  }
}

void bm_ask_tell_cycle(benchmark::State& state) {
  const auto history = static_cast<std::size_t>(state.range(0));
  const auto problem = big_problem();
  instant_evaluator ev;
  auto eng = std::make_unique<kb::engine<kb::default_policies_t>>(problem, kb::default_policies(problem),
                                                                  kb::engine_options{});
  eng->set_baseline(ev.measure_baseline(problem));
  while (eng->view().size() < history) cycle(*eng, ev);  // untimed: fill the history
  for (auto _ : state) cycle(*eng, ev);
  state.counters["history"] = static_cast<double>(eng->view().size());
}

}  // namespace

// Few iterations per repetition so the history stays near its nominal size while timed.
BENCHMARK(bm_ask_tell_cycle)
    ->Arg(1000)
    ->Iterations(200)
    ->Repetitions(5)
    ->ReportAggregatesOnly(true)
    ->Unit(benchmark::kMicrosecond);
BENCHMARK(bm_ask_tell_cycle)
    ->Arg(10000)
    ->Iterations(1000)
    ->Repetitions(5)
    ->ReportAggregatesOnly(true)
    ->Unit(benchmark::kMicrosecond);
BENCHMARK(bm_ask_tell_cycle)
    ->Arg(100000)
    ->Iterations(5000)
    ->Repetitions(3)
    ->ReportAggregatesOnly(true)
    ->Unit(benchmark::kMicrosecond);

BENCHMARK_MAIN();
