// What the gate costs on the CUDA backend: one default search per problem (expert catalogue, fixed
// seed, an evaluation budget) with every evaluator call timed, the gate's (inspect, build, check)
// apart from the ladder's (measure). Per problem it prints the candidates gated, the gate's wall
// seconds per candidate (median and 90th percentile), the gate's device seconds and their share of
// the search's device seconds. Written against the evaluator interface only, so the same file builds
// against older trees (that is how the "before" figures in docs/results.md were taken).
//
//   kb_gate_cost [--evals N] [--seed S] [--label TEXT] PROBLEM_DIR...
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <kernelbrain/backends/cuda/evaluator.hpp>
#include <kernelbrain/io/problem_loader.hpp>
#include <kernelbrain/search.hpp>
#include <map>
#include <string>
#include <utility>
#include <vector>

namespace kb = kernelbrain;

namespace {

using clock_type = std::chrono::steady_clock;

/// Forwards to a backend and attributes its time to the gate (per candidate) or to measurements.
class timed_evaluator final : public kb::evaluator {
 public:
  explicit timed_evaluator(kb::evaluator& e) : e_(e) {}

  [[nodiscard]] std::string fingerprint() const override { return e_.fingerprint(); }
  void prefetch(kb::candidate const& c) override { e_.prefetch(c); }
  [[nodiscard]] kb::verdict inspect(kb::candidate const& c) override {
    return gate_call(c, [&] { return e_.inspect(c); });
  }
  [[nodiscard]] kb::verdict build(kb::candidate const& c) override {
    return gate_call(c, [&] { return e_.build(c); });
  }
  [[nodiscard]] kb::verdict check(kb::candidate const& c, std::span<std::size_t const> shapes, int trials,
                                  std::uint64_t seed) override {
    return gate_call(c, [&] { return e_.check(c, shapes, trials, seed); });
  }
  [[nodiscard]] kb::measurement measure(kb::candidate const& c, kb::rung const& r,
                                        kb::measure_request const& q) override {
    auto m = e_.measure(c, r, q);
    const double d = e_.take_device_seconds();
    measure_device += d;
    pending_ += d;
    return m;
  }
  [[nodiscard]] kb::baseline measure_baseline(kb::problem const& p) override {
    auto b = e_.measure_baseline(p);
    const double d = e_.take_device_seconds();
    other_device += d;
    pending_ += d;
    return b;
  }
  [[nodiscard]] double take_device_seconds() override {
    return std::exchange(pending_, 0.0) + e_.take_device_seconds();
  }

  struct cost {
    double wall = 0, device = 0;
  };
  std::map<std::uint64_t, cost> gate;  ///< per candidate id
  double measure_device = 0, other_device = 0;

 private:
  template <class F>
  kb::verdict gate_call(kb::candidate const& c, F&& f) {
    const auto t0 = clock_type::now();
    auto v = f();
    auto& g = gate[c.id.value];
    g.wall += std::chrono::duration<double>(clock_type::now() - t0).count();
    const double d = e_.take_device_seconds();
    g.device += d;
    pending_ += d;
    return v;
  }

  kb::evaluator& e_;
  double pending_ = 0;
};

double quantile(std::vector<double> v, double q) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  return v[static_cast<std::size_t>(q * static_cast<double>(v.size() - 1) + 0.5)];
}

}  // namespace

int main(int argc, char** argv) {
  std::size_t evals = 40;
  std::uint64_t seed = 1;
  std::string label = "this tree";
  std::vector<std::string> dirs;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--evals" && i + 1 < argc)
      evals = std::strtoull(argv[++i], nullptr, 10);
    else if (a == "--seed" && i + 1 < argc)
      seed = std::strtoull(argv[++i], nullptr, 10);
    else if (a == "--label" && i + 1 < argc)
      label = argv[++i];
    else if (!a.empty() && a[0] == '-') {
      std::fprintf(stderr, "usage: kb_gate_cost [--evals N] [--seed S] [--label TEXT] PROBLEM_DIR...\n");
      return 2;
    } else
      dirs.push_back(a);
  }
  std::printf("%-22s %-12s %6s %10s %10s %10s %10s %7s %8s\n", "problem", "tree", "gated", "gate_med_s", "gate_p90_s",
              "gate_dev_s", "search_dev", "share", "rejects");
  for (auto const& d : dirs) {
    try {
      const auto p = kb::load_problem(d);
      kb::cuda_evaluator backend(p);
      timed_evaluator ev(backend);
      kb::search_options o;
      o.seed = seed;
      o.limits.evaluations = evals;
      const auto r = kb::search(p, kb::default_policies(p), ev, o);
      std::vector<double> walls;
      double gate_device = 0;
      for (auto const& [id, c] : ev.gate) {
        walls.push_back(c.wall);
        gate_device += c.device;
      }
      const double total = gate_device + ev.measure_device + ev.other_device;
      std::printf("%-22s %-12s %6zu %10.3f %10.3f %10.2f %10.2f %6.1f%% %8zu\n", p.name.c_str(), label.c_str(),
                  walls.size(), quantile(walls, 0.5), quantile(walls, 0.9), gate_device, total,
                  total > 0 ? 100 * gate_device / total : 0.0, static_cast<std::size_t>(r.counters.rejected));
      std::fflush(stdout);
    } catch (std::exception const& e) {
      std::printf("%-22s %-12s error: %s\n", d.c_str(), label.c_str(), e.what());
    }
  }
  return 0;
}
