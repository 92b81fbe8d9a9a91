// Simulated ablation on the synthetic backend: evaluations and simulated device seconds each strategy
// needs before its incumbent comes within 2% of the landscape's known optimum, over many seeds.
// Usage: kb_ablation [seeds=10] [max-evaluations=4000] [landscape-seed=7]
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <kernelbrain/search.hpp>
#include <kernelbrain/strategies/all.hpp>
#include <optional>
#include <string>
#include <vector>

namespace kb = kernelbrain;

namespace {

/// Watches the incumbent and remembers when its true quality first came within `tolerance` of the optimum.
struct first_hit final : kb::observer {
  kb::synthetic_landscape const* land;
  double tolerance;
  std::optional<std::size_t> evaluations;
  std::optional<double> device_seconds;
  void on_event(kb::event const& e, kb::search_view const& v) override {
    if (evaluations || e.kind != kb::event_kind::new_best) return;
    auto const* b = v.best();
    if (!b || v.best_rung() + 1 != v.rungs().size()) return;  // only a confirmed incumbent counts
    if (land->quality(b->cand.family, b->cand.params) <= (1 + tolerance) * land->optimum_quality()) {
      evaluations = v.counters().evaluations;
      device_seconds = v.meter().usage().device_seconds;
    }
  }
};

}  // namespace

int main(int argc, char** argv) {
  const int seeds = argc > 1 ? std::atoi(argv[1]) : 10;
  const std::uint64_t max_evals = argc > 2 ? std::strtoull(argv[2], nullptr, 10) : 4000;
  kb::synthetic_config cfg;
  if (argc > 3) cfg.landscape_seed = std::strtoull(argv[3], nullptr, 10);
  const kb::synthetic_landscape land(cfg);
  kb::synthetic_evaluator backend(land);
  auto const& problem = land.get_problem();
  auto registry = kb::builtin_strategies();

  std::printf("landscape seed %llu: %zu valid points, optimum quality %.6g s; %d seeds, cap %llu evaluations\n\n",
              static_cast<unsigned long long>(cfg.landscape_seed), land.valid_points(), land.optimum_quality(), seeds,
              static_cast<unsigned long long>(max_evals));
  std::printf(
      "| strategy | reached (of %d) | evaluations to 2%% (mean) | device s to 2%% (mean) | evals vs exhaustive | "
      "device s vs exhaustive |\n",
      seeds);
  std::printf("|---|---|---|---|---|---|\n");
  struct row {
    std::string name;
    int hits;
    double evals, secs;
  };
  std::vector<row> rows;
  for (std::string name : {"default", "random", "sha", "hyperband", "exhaustive"}) {
    row r{name, 0, 0, 0};
    for (int s = 1; s <= seeds; ++s) {
      first_hit hit;
      hit.land = &land;
      hit.tolerance = 0.02;
      kb::search_options o;
      o.seed = static_cast<std::uint64_t>(s);
      o.limits.evaluations = max_evals;
      o.observers = {&hit};
      (void)kb::search(problem, registry.make(name, problem, {}), backend, o);
      // A seed that never got there counts with the whole cap (a lower bound on what it needed).
      r.evals += hit.evaluations ? static_cast<double>(*hit.evaluations) : static_cast<double>(max_evals);
      r.secs += hit.device_seconds.value_or(0);
      r.hits += hit.evaluations ? 1 : 0;
    }
    r.evals /= seeds;
    r.secs /= seeds;
    rows.push_back(r);
  }
  const row& ex = rows.back();
  for (auto const& r : rows)
    std::printf("| %s | %d | %.0f | %.2f | %.2f | %.2f |\n", r.name.c_str(), r.hits, r.evals, r.secs,
                r.evals / ex.evals, ex.secs > 0 ? r.secs / ex.secs : 0.0);
}
