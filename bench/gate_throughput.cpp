// Host-backend throughput in candidates per second: the gate (policy, compile, load, correctness on
// the first and the odd shape, two trials, and the sanitizer stage's trials on a sanitized build) alone, and the gate
// followed by a rung-0 measurement (smoke: first shape, 1 warm-up, 3 samples, each after a cache flush). "cold": every
// candidate is new to the artifact cache and is compiled; "warm": every candidate's artifact is already on disk and the
// evaluator has never seen it (what a resumed run or a second search on a machine pays).
#include <benchmark/benchmark.h>
#include <unistd.h>

#include <filesystem>
#include <kernelbrain/backends/host/evaluator.hpp>
#include <kernelbrain/search.hpp>
#include <memory>
#include <string>
#include <vector>
#include "scratch_dir.hpp"

namespace kb = kernelbrain;
namespace fs = std::filesystem;

namespace {

std::string cache_root() { return kb_bench::scratch_dir("gate-bench"); }

kb::problem bench_problem() {
  kb::problem p;
  p.name = "scale_rows";
  p.backend = "host";
  p.dim_order = {"R", "C"};
  p.inputs = {{"x", "R * C", "normal"}, {"w", "C", "uniform"}};
  p.outputs = {{"y", "R * C", "normal"}};
  p.tol = {1e-4, 1e-5};
  p.shapes = {kb::shape{"small", {{"R", 64}, {"C", 256}}, "smoke", 1, 0, 0},
              kb::shape{"odd", {{"R", 37}, {"C", 129}}, "odd", 1, 0, 0}};
  p.reference_source = R"(
#include "kernelbrain/evaluate/host_abi.h"
extern "C" void kb_kernel(const kb_args* a) {
  const long long R = a->dims[0], C = a->dims[1];
  for (long long r = 0; r < R; ++r)
    for (long long c = 0; c < C; ++c) a->outputs[0][r * C + c] = a->inputs[0][r * C + c] * a->inputs[1][c];
}
)";
  return p;
}

/// A distinct candidate per `salt`: same kernel, different source text, so a different artifact.
kb::candidate bench_candidate(std::size_t salt) {
  std::string src = "// candidate " + std::to_string(salt) + R"(
#include "kernelbrain/evaluate/host_abi.h"
extern "C" void kb_kernel(const kb_args* a) {
  const float* x = a->inputs[0];
  const float* w = a->inputs[1];
  float* y = a->outputs[0];
  const long long R = a->dims[0], C = a->dims[1];
  for (long long r = 0; r < R; ++r)
    for (long long c = 0; c < C; ++c) y[r * C + c] = x[r * C + c] * w[c];
}
)";
  return kb::make_candidate("bench", {}, "bench", std::nullopt, std::move(src));
}

kb::host_options options(std::string const& cache, bool adversarial = true, bool sanitize = true) {
  kb::host_options o;
  o.cache_dir = cache;
  o.adversarial_inputs = adversarial;
  o.sanitize = sanitize;
  return o;
}

/// Gates (and, with `rung0`, measures at the smoke rung) one candidate; aborts the benchmark on a reject.
void evaluate(kb::host_evaluator& ev, kb::problem const& p, kb::candidate const& c, bool rung0, benchmark::State& st) {
  auto gate = kb::policy_gate::for_problem(p);
  auto v = gate.admit(c, ev);
  if (v && rung0) v = ev.measure(c, kb::multi_rung_ladder::standard(p).rungs()[0], {c.id.value, nullptr}).result;
  if (!v) st.SkipWithError(("candidate rejected: " + v.detail).c_str());
  (void)ev.take_device_seconds();
}

void bm_cold(benchmark::State& st, bool rung0) {
  const auto p = bench_problem();
  const std::string cache = cache_root() + "/cold-" + std::to_string(rung0);
  kb::host_evaluator ev(p, options(cache));
  static std::size_t salt = 1000000;  // never seen by any cache: every candidate compiles
  for (auto _ : st) evaluate(ev, p, bench_candidate(salt++), rung0, st);
  st.SetItemsProcessed(st.iterations());
  st.counters["compiles"] = static_cast<double>(ev.compiles());
}

void bm_warm(benchmark::State& st, bool rung0, bool adversarial = true, bool sanitize = true) {
  const auto p = bench_problem();
  const std::string cache = cache_root() + "/warm";
  constexpr std::size_t pool = 16;
  {
    // Untimed: put the pool's artifacts on disk, the sanitized builds too (the gate compiles them).
    kb::host_evaluator fill(p, options(cache));
    auto gate = kb::policy_gate::for_problem(p);
    for (std::size_t i = 0; i < pool; ++i) (void)gate.admit(bench_candidate(i), fill);
  }
  std::unique_ptr<kb::host_evaluator> ev;
  std::size_t i = 0, compiles = 0;
  for (auto _ : st) {
    if (i % pool == 0) {  // a fresh evaluator: nothing in memory, everything on disk
      st.PauseTiming();
      if (ev) compiles += ev->compiles();
      ev = std::make_unique<kb::host_evaluator>(p, options(cache, adversarial, sanitize));
      st.ResumeTiming();
    }
    evaluate(*ev, p, bench_candidate(i % pool), rung0, st);
    ++i;
  }
  if (ev) compiles += ev->compiles();
  st.SetItemsProcessed(st.iterations());
  st.counters["compiles"] = static_cast<double>(compiles);
}

void bm_gate_cold(benchmark::State& st) { bm_cold(st, false); }
// Every candidate here is hand-written code (no template family), so each runs the sanitizer stage:
// what a model-written kernel pays at the gate. A template instance after its family's first point
// pays what bm_gate_warm_no_sanitizer measures (issue 24).
void bm_gate_warm(benchmark::State& st) { bm_warm(st, false); }
void bm_gate_warm_no_sanitizer(benchmark::State& st) { bm_warm(st, false, true, false); }
void bm_gate_rung0_warm_no_sanitizer(benchmark::State& st) { bm_warm(st, true, true, false); }
// The gate without the adversarial-input trials (issue 11): what the sandbox alone adds per candidate
// (a fresh executor process: spawn, confinement, load) when set against an older build's bm_gate_warm.
void bm_gate_warm_no_adversarial(benchmark::State& st) { bm_warm(st, false, false); }
void bm_gate_rung0_cold(benchmark::State& st) { bm_cold(st, true); }
void bm_gate_rung0_warm(benchmark::State& st) { bm_warm(st, true); }

}  // namespace

BENCHMARK(bm_gate_cold)->Iterations(12)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(bm_gate_warm)->Iterations(64)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(bm_gate_warm_no_adversarial)->Iterations(64)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(bm_gate_warm_no_sanitizer)->Iterations(64)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(bm_gate_rung0_warm_no_sanitizer)->Iterations(64)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(bm_gate_rung0_cold)->Iterations(12)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(bm_gate_rung0_warm)->Iterations(64)->Unit(benchmark::kMillisecond)->UseRealTime();

BENCHMARK_MAIN();
