// Host-backend timing repeatability: how far apart two separate measurements of the same candidate
// land (run-to-run drift of the median), and how far from 1 an interleaved A/B comparison of the
// candidate with an identical twin lands. This is a property of the machine and its load, not of
// the code, so it is reported here rather than asserted by a unit test (the unit test asserts what
// holds under any load: tests/test_host_backend.cpp, "identical twin").
//
// Per iteration, bm_separate_medians measures the candidate twice (15 samples each, after a cache
// flush per call, at a 512 x 2000 shape: the former unit test's setting) and reports:
//   drift_mean, drift_max   |median_a / median_b - 1|, averaged over iterations and the largest
//   within_5pct             share of pairs whose medians agree within 5% (the old test's claim)
//   overlap                 share of pairs whose 95% intervals overlap
//   median_us               the mean of the medians, in microseconds
// bm_twin_ratio measures the candidate against an identical twin, interleaved (ABBA), and reports
// the same figures for |ratio median - 1| (within_5pct: share of ratios within 5% of 1;
// covers_1: share of ratio intervals that contain 1).
#include <benchmark/benchmark.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <kernelbrain/backends/host/evaluator.hpp>
#include <kernelbrain/search.hpp>
#include <sstream>
#include <string>
#include <vector>
#include "../tests/host_corpus/scale_rows.hpp"
#include "scratch_dir.hpp"

namespace kb = kernelbrain;
namespace fs = std::filesystem;

namespace {

std::string cache_root() { return kb_bench::scratch_dir("timing-bench"); }

/// The corpus problem (tests/host_corpus/scale_rows.hpp), the one tests/test_host_backend.cpp uses.
kb::problem bench_problem() { return kb_corpus::scale_rows(); }

/// tests/host_corpus/correct.cpp (four partial sums per row); `tag` makes an identical twin.
kb::candidate bench_candidate(std::string const& tag) {
  std::ifstream in(std::string(KB_SOURCE_DIR) + "/tests/host_corpus/correct.cpp");
  std::stringstream ss;
  ss << in.rdbuf();
  return kb::make_candidate("bench", {}, "bench", std::nullopt, "// " + tag + "\n" + ss.str());
}

kb::rung timing_rung() {
  kb::rung r;
  r.name = "repeatability";
  r.shapes = {kb_corpus::scale_rows().shape_index("large")};
  r.samples = 15;
  r.warmup = 1;
  r.correctness_trials = 1;
  return r;
}

kb::host_options options() {
  kb::host_options o;
  o.cache_dir = cache_root();
  return o;
}

struct drift_summary {
  std::vector<double> drift;
  std::size_t within = 0, good = 0, n = 0;
  double median_sum = 0;
  void add(double d, bool ok, double median) {
    drift.push_back(d);
    within += d < 0.05 ? 1 : 0;
    good += ok ? 1 : 0;
    median_sum += median;
    ++n;
  }
  void report(benchmark::State& st, char const* good_name) const {
    if (!n) return;
    double sum = 0;
    for (double d : drift) sum += d;
    st.counters["drift_mean"] = sum / static_cast<double>(n);
    st.counters["drift_max"] = *std::max_element(drift.begin(), drift.end());
    st.counters["within_5pct"] = static_cast<double>(within) / static_cast<double>(n);
    st.counters[good_name] = static_cast<double>(good) / static_cast<double>(n);
    st.counters["median_us"] = median_sum / static_cast<double>(n) * 1e6;
  }
};

void bm_separate_medians(benchmark::State& st) {
  const auto p = bench_problem();
  kb::host_evaluator ev(p, options());
  const auto c = bench_candidate("candidate");
  const auto r = timing_rung();
  drift_summary sum;
  std::uint64_t seed = 1;
  for (auto _ : st) {
    const auto a = ev.measure(c, r, {seed++, nullptr});
    const auto b = ev.measure(c, r, {seed++, nullptr});
    if (!a.result || !b.result) {
      st.SkipWithError(("candidate rejected: " + a.result.detail + b.result.detail).c_str());
      break;
    }
    auto const& sa = a.timings.at(0).stats;
    auto const& sb = b.timings.at(0).stats;
    sum.add(std::abs(sa.median / sb.median - 1.0), sa.low <= sb.high && sb.low <= sa.high,
            0.5 * (sa.median + sb.median));
    (void)ev.take_device_seconds();
  }
  sum.report(st, "overlap");
}

void bm_twin_ratio(benchmark::State& st) {
  const auto p = bench_problem();
  kb::host_evaluator ev(p, options());
  const auto c = bench_candidate("candidate");
  const auto twin = bench_candidate("twin");
  auto r = timing_rung();
  r.interleaved = true;
  drift_summary sum;
  std::uint64_t seed = 1;
  for (auto _ : st) {
    const auto m = ev.measure(c, r, {seed++, &twin});
    if (!m.result || !m.vs_incumbent) {
      st.SkipWithError(("no A/B comparison: " + m.result.detail).c_str());
      break;
    }
    auto const& q = m.vs_incumbent->ratio;
    sum.add(std::abs(q.median - 1.0), q.low <= 1.0 && 1.0 <= q.high, m.timings.at(0).stats.median);
    (void)ev.take_device_seconds();
  }
  sum.report(st, "covers_1");
}

}  // namespace

BENCHMARK(bm_separate_medians)->Iterations(20)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(bm_twin_ratio)->Iterations(20)->Unit(benchmark::kMillisecond)->UseRealTime();

BENCHMARK_MAIN();
