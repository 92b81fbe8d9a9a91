// kernelbrain fidelity: how well each shape and each rung of a fidelity ladder predicts the top rung, on
// recorded sweeps (io/recording.hpp). For every recorded point that passed everywhere, the replay
// backend measures it at a rung (resampled noise, as a search would see it) and the rung's score is
// ranked against the point's recorded quality (true_speedup: every timed shape, every sample).
// Spearman's rank correlation and the recall of the true top points say what a rung's ranking is worth;
// the recorded costs say what it costs. docs/results.md quotes its tables and the ladder they led to.
#include <fmt/format.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <cmath>
#include <kernelbrain/backends/builtin.hpp>
#include <kernelbrain/backends/replay/evaluator.hpp>
#include <kernelbrain/core/template_space.hpp>
#include <kernelbrain/io/problem_loader.hpp>
#include <kernelbrain/io/recording.hpp>
#include <kernelbrain/search.hpp>
#include <memory>
#include <numeric>
#include <string>
#include <vector>
#include "commands.hpp"

namespace kernelbrain::cli {

namespace {

struct fidelity_options {
  std::vector<std::string> recordings;
  int draws = 20;
  std::uint64_t seed = 1;
};

/// Ranks with ties averaged (1-based).
std::vector<double> ranks(std::vector<double> const& x) {
  std::vector<std::size_t> idx(x.size());
  std::iota(idx.begin(), idx.end(), 0);
  std::sort(idx.begin(), idx.end(), [&](std::size_t a, std::size_t b) { return x[a] < x[b]; });
  std::vector<double> r(x.size());
  for (std::size_t i = 0; i < idx.size();) {
    std::size_t j = i;
    while (j + 1 < idx.size() && x[idx[j + 1]] == x[idx[i]]) ++j;
    for (std::size_t k = i; k <= j; ++k) r[idx[k]] = 0.5 * static_cast<double>(i + j) + 1;
    i = j + 1;
  }
  return r;
}

double spearman(std::vector<double> const& a, std::vector<double> const& b) {
  const auto ra = ranks(a), rb = ranks(b);
  const double n = static_cast<double>(a.size());
  const double mean = (n + 1) / 2;
  double sab = 0, saa = 0, sbb = 0;
  for (std::size_t i = 0; i < ra.size(); ++i) {
    sab += (ra[i] - mean) * (rb[i] - mean);
    saa += (ra[i] - mean) * (ra[i] - mean);
    sbb += (rb[i] - mean) * (rb[i] - mean);
  }
  return saa > 0 && sbb > 0 ? sab / std::sqrt(saa * sbb) : 0;
}

/// Of the `k` truly best points, how many are among the rung's best `keep` fraction.
double recall(std::vector<double> const& rung, std::vector<double> const& truth, std::size_t k, double keep) {
  std::vector<std::size_t> idx(truth.size());
  std::iota(idx.begin(), idx.end(), 0);
  auto by = [](std::vector<double> const& v) { return [&v](std::size_t a, std::size_t b) { return v[a] > v[b]; }; };
  std::vector<std::size_t> t = idx, r = idx;
  std::sort(t.begin(), t.end(), by(truth));
  std::sort(r.begin(), r.end(), by(rung));
  const auto kept = std::max<std::size_t>(1, static_cast<std::size_t>(std::ceil(keep * static_cast<double>(r.size()))));
  k = std::min(k, t.size());
  std::size_t hit = 0;
  for (std::size_t i = 0; i < k; ++i)
    if (std::find(r.begin(), r.begin() + static_cast<std::ptrdiff_t>(kept), t[i]) !=
        r.begin() + static_cast<std::ptrdiff_t>(kept))
      ++hit;
  return k ? static_cast<double>(hit) / static_cast<double>(k) : 0;
}

struct rung_figures {
  double rho = 0, recall = 0, seconds = 0;
};

/// The rung's Spearman correlation with the truth, its top-5 recall within its best third, and its
/// mean device seconds per point, averaged over `draws` resamplings.
rung_figures judge(replay_evaluator& ev, std::vector<candidate> const& cands, std::vector<double> const& truth,
                   rung const& r, baseline const& base, int draws, std::uint64_t seed) {
  rung_figures f;
  const speedup_scorer scorer;
  (void)ev.take_device_seconds();  // spent before this rung (the baseline's): not its cost
  for (int d = 0; d < draws; ++d) {
    std::vector<double> got;
    double secs = 0;
    for (std::size_t i = 0; i < cands.size(); ++i) {
      const auto m =
          ev.measure(cands[i], r, measure_request{derive_seed(seed, "fidelity", d * 1'000'003ULL + i), nullptr});
      secs += m.device_seconds + ev.take_device_seconds();  // what the engine charges (replay reports the latter)
      got.push_back(m.result ? scorer.score(m, base).value : 0.0);
    }
    f.rho += spearman(got, truth);
    f.recall += recall(got, truth, 5, 1.0 / 3);
    f.seconds += secs / static_cast<double>(cands.size());
  }
  f.rho /= draws;
  f.recall /= draws;
  f.seconds /= draws;
  return f;
}

std::string shape_list(problem const& p, std::vector<std::size_t> const& shapes) {
  std::string s;
  for (auto i : shapes) s += (s.empty() ? "" : ", ") + p.shapes[i].name;
  return s;
}

int run_fidelity(fidelity_options const& o) {
  for (auto const& file : o.recordings) {
    const auto rec = read_recording(file);
    const auto prob = recorded_problem(rec);
    // The rungs' own cost: without the sanitizer and ncu runs a search adds (replay_options).
    replay_evaluator ev(rec, prob, replay_options{.sanitizer_seconds = 0, .profile_seconds = 0});
    baseline base = ev.measure_baseline(prob);
    for (auto const& s : prob.shapes) base.weights.push_back(s.weight);
    std::vector<candidate> cands;
    std::vector<double> truth;
    for (auto const& pt : rec.points) {
      auto const* h = find_hint(prob, pt.family);
      if (!h || !h->templ) continue;
      auto c = instantiate(*h, pt.params, "fidelity");
      if (auto t = ev.true_speedup(c)) {
        cands.push_back(std::move(c));
        truth.push_back(*t);
      }
    }
    fmt::print("\n### {} ({} recorded points, {} passing everywhere; {} resamplings)\n\n", prob.name, rec.points.size(),
               cands.size(), o.draws);
    if (cands.size() < 3) {
      fmt::print("too few passing points to rank\n");
      continue;
    }
    fmt::print(
        "| shape | tier | weight | rho, 3 samples | rho, 10 samples | top-5 recall (best third), 10 samples | device "
        "ms per point, 10 samples |\n");
    fmt::print("|---|---|---|---|---|---|---|\n");
    for (std::size_t s = 0; s < prob.shapes.size(); ++s) {
      if (!is_timed_shape(prob.shapes[s])) continue;
      const auto f3 = judge(ev, cands, truth, rung{"probe", {s}, 3, 1, 1, false, false}, base, o.draws, o.seed);
      const auto f10 = judge(ev, cands, truth, rung{"probe", {s}, 10, 2, 1, false, false}, base, o.draws, o.seed);
      fmt::print("| {} | {} | {:g} | {:.3f} | {:.3f} | {:.2f} | {:.2f} |\n", prob.shapes[s].name, prob.shapes[s].tier,
                 prob.shapes[s].weight, f3.rho, f10.rho, f10.recall, 1e3 * f10.seconds);
    }
    fmt::print(
        "\n| rung (standard ladder) | shapes | samples | rho | top-5 recall (best third) | device ms per point |\n");
    fmt::print("|---|---|---|---|---|---|\n");
    const auto ladder = multi_rung_ladder::standard(prob);
    for (auto const& r : ladder.rungs()) {
      rung plain = r;
      plain.interleaved = false;
      plain.profile = false;
      const auto f = judge(ev, cands, truth, plain, base, o.draws, o.seed);
      fmt::print("| {} | {} | {} | {:.3f} | {:.2f} | {:.2f} |\n", r.name, shape_list(prob, r.shapes), r.samples, f.rho,
                 f.recall, 1e3 * f.seconds);
    }
    // The middle rung with fewer samples and one warm-up: what a cheaper screen would rank.
    if (ladder.rungs().size() > 2)
      for (int n : {5, 3}) {
        rung alt = ladder.rungs()[1];
        alt.samples = n;
        alt.warmup = 1;
        const auto f = judge(ev, cands, truth, alt, base, o.draws, o.seed);
        fmt::print("| {} with {} samples, 1 warm-up | {} | {} | {:.3f} | {:.2f} | {:.2f} |\n", alt.name, n,
                   shape_list(prob, alt.shapes), n, f.rho, f.recall, 1e3 * f.seconds);
      }
  }
  return 0;
}

}  // namespace

subcommand register_fidelity(CLI::App& app) {
  auto* cmd = app.add_subcommand("fidelity", "how well each shape and rung predicts the top rung, on recorded sweeps");
  auto o = std::make_shared<fidelity_options>();
  cmd->add_option("recordings", o->recordings, "recordings (kernelbrain record; .jsonl or .jsonl.gz)")
      ->required()
      ->check(CLI::ExistingFile);
  cmd->add_option("--draws", o->draws, "resamplings of the recorded noise (default 20)")
      ->check(CLI::Range(1, 1000))
      ->type_name("N");
  cmd->add_option("--seed", o->seed, "seed of the resampling (default 1)")->type_name("N");
  return {cmd, [o] { return run_fidelity(*o); }};
}

}  // namespace kernelbrain::cli
