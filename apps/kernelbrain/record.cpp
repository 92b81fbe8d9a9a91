// kernelbrain record: sweeps a problem's template space on a real backend and writes what every point
// did (io/recording.hpp), for the replay backend and `kernelbrain ablate`. Every admitted point where
// the space is small enough, a seeded random sample where it is not; the points are visited in a
// seeded random order, so a recording cut short by --time-limit is still a uniform sample, and a second
// run with the same options appends the points the first did not reach ("recording in parts").
#include <fmt/format.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <kernelbrain/backends/cuda/evaluator.hpp>
#include <kernelbrain/backends/replay/evaluator.hpp>
#include <kernelbrain/core/template_space.hpp>
#include <kernelbrain/io/problem_loader.hpp>
#include <kernelbrain/io/recording.hpp>
#include <kernelbrain/search.hpp>
#include <map>
#include <memory>
#include <string>
#include <unordered_set>
#include <vector>
#include "commands.hpp"
#include "timestamps.hpp"

namespace kernelbrain::cli {

namespace {

struct record_options {
  std::string problem, backend, out;
  std::uint64_t points = 0;  ///< 0: every admitted point
  std::uint64_t seed = 1;
  int samples = 20, warmup = 2, baseline_repeats = 5;
  double max_shape_seconds = 1.0;
  double time_limit = 0;  ///< seconds; 0: none
  bool count_only = false;
};

/// The evaluator a recording is made with: the CUDA backend without compute-sanitizer and Nsight
/// Compute (their cost per point would dominate a sweep; replay gives the static diagnosis).
std::unique_ptr<evaluator> recording_evaluator(problem const& prob, std::string const& backend) {
  return make_backend_evaluator(prob, backend, {}, {}, /*recording=*/true);
}

int run_record(record_options const& o) {
  using clock = std::chrono::steady_clock;
  const auto started = clock::now();
  const auto prob = load_problem(problem_directory(o.problem, o.backend));
  const std::string backend = problem_backend(prob, o.backend, "record");

  // Every admitted point of every template, in a seeded random order; the first --points of them.
  struct point {
    expert_hint const* hint;
    parameters params;
  };
  std::vector<point> all;
  for (auto const* h : template_hints(prob)) {
    if (h->templ->space.cardinality() > 50'000'000)
      throw usage_error(fmt::format("hint '{}' of '{}' has {} points: too many to enumerate for a sweep", h->name,
                                    prob.name, h->templ->space.cardinality()));
    for (auto& p : h->templ->space.enumerate()) all.push_back({h, std::move(p)});
  }
  if (all.empty()) throw usage_error(fmt::format("problem '{}' has no template points to record", prob.name));
  if (o.count_only) {
    std::map<std::string, std::size_t> per_hint;
    for (auto const& p : all) ++per_hint[p.hint->name];
    for (auto const& [name, n] : per_hint) fmt::print("{} {}: {} admitted points\n", prob.name, name, n);
    fmt::print("{}: {} admitted points in all\n", prob.name, all.size());
    return 0;
  }
  const std::uint64_t space_points = all.size();
  rng order(derive_seed(o.seed, "record-order"));
  for (std::size_t i = all.size(); i > 1; --i) std::swap(all[i - 1], all[order.below(i)]);
  if (o.points > 0 && o.points < all.size()) all.resize(o.points);

  auto ev = recording_evaluator(prob, backend);
  auto* cuda = dynamic_cast<cuda_evaluator*>(ev.get());
  auto gate = policy_gate::for_problem(prob);
  gate.reseed(derive_seed(o.seed, "record-gate"));

  // An existing file is a recording in parts: same problem, device and settings, and its points are skipped.
  std::unordered_set<std::uint64_t> done;
  if (o.out.ends_with(".gz"))
    throw usage_error(
        fmt::format("--out '{}': record writes plain JSON lines (and appends to them); gzip the file "
                    "afterwards, and gunzip a committed one to continue it",
                    o.out));
  const bool appending = std::filesystem::exists(o.out);
  if (appending) {
    const auto was = read_recording(o.out);
    auto const& h = was.header;
    if (h.problem != prob.name || h.problem_digest != problem_digest(prob))
      throw usage_error(
          fmt::format("'{}' records another problem or an older version of '{}': use a new --out", o.out, prob.name));
    if (h.fingerprint != ev->fingerprint())
      throw usage_error(fmt::format("'{}' was recorded with '{}', this backend is '{}': use a new --out", o.out,
                                    h.fingerprint, ev->fingerprint()));
    if (h.samples != o.samples || h.warmup != o.warmup || h.sample_seed != o.seed)
      throw usage_error(fmt::format("'{}' was recorded with --samples {} --warmup {} --seed {}: give the same", o.out,
                                    h.samples, h.warmup, h.sample_seed));
    for (auto const& p : was.points) done.insert(p.content);
  }
  std::ofstream out(o.out, std::ios::binary | std::ios::app);
  if (!out) throw usage_error(fmt::format("--out '{}' cannot be written", o.out));

  if (!appending) {
    recording_header h;
    h.problem = prob.name;
    h.problem_digest = problem_digest(prob);
    h.fingerprint = ev->fingerprint();
    h.recorded = utc_now();
    h.command = fmt::format(
        "kernelbrain record {} --backend {} --points {} --seed {} --samples {} --warmup {} --out {}", prob.name,
        backend, o.points, o.seed, o.samples, o.warmup, std::filesystem::path(o.out).filename().string());
    h.samples = o.samples;
    h.warmup = o.warmup;
    h.gate_shapes = gate.shapes();
    h.gate_trials = gate.trials();
    h.space_points = space_points;
    h.sample_seed = o.seed;
    h.baseline_samples.resize(prob.shapes.size());
    for (auto const& s : prob.shapes) h.shape_names.push_back(s.name);
    for (int k = 0; k < o.baseline_repeats; ++k) {
      const auto b = ev->measure_baseline(prob);
      for (std::size_t s = 0; s < b.seconds.size() && s < prob.shapes.size(); ++s)
        h.baseline_samples[s].push_back(b.seconds[s]);
    }
    (void)ev->take_device_seconds();
    out << header_line(h) << '\n' << std::flush;
  }

  // The timed shapes, and the one a profiled measurement uses (the largest by its roofline floor).
  std::vector<std::size_t> timed;
  for (std::size_t s = 0; s < prob.shapes.size(); ++s)
    if (is_timed_shape(prob.shapes[s])) timed.push_back(s);
  const std::size_t largest = *std::max_element(timed.begin(), timed.end(), [&](std::size_t a, std::size_t b) {
    return prob.machine.floor_seconds(prob.shapes[a]) < prob.machine.floor_seconds(prob.shapes[b]);
  });

  std::vector<candidate> cands;
  cands.reserve(all.size());
  for (auto const& p : all) cands.push_back(instantiate(*p.hint, p.params, "record"));
  std::size_t recorded = 0, skipped = 0, next_prefetch = 0;
  std::map<std::string, std::size_t> refused;
  bool out_of_time = false;
  for (std::size_t i = 0; i < cands.size(); ++i) {
    auto const& c = cands[i];
    const auto key = content_key(c);
    if (done.contains(key)) {
      ++skipped;
      continue;
    }
    const double elapsed = std::chrono::duration<double>(clock::now() - started).count();
    if (o.time_limit > 0 && elapsed > o.time_limit) {
      out_of_time = true;
      break;
    }
    for (; next_prefetch < cands.size() && next_prefetch < i + 48; ++next_prefetch) ev->prefetch(cands[next_prefetch]);

    recorded_point rp;
    rp.family = c.family;
    rp.params = c.params;
    rp.content = key;
    (void)ev->take_device_seconds();
    rp.gate = gate.admit(c, *ev);
    rp.gate_seconds = ev->take_device_seconds();
    if (cuda) rp.compile_seconds = cuda->compile_seconds(c).value_or(0);
    if (rp.gate) {
      if (cuda) rp.res = cuda->resources_of(c);
      for (auto sh : timed) {
        recorded_shape rs;
        rs.shape = sh;
        const std::size_t one[] = {sh};
        const auto seed = derive_seed(o.seed, "record", key ^ (static_cast<std::uint64_t>(sh) << 56));
        const auto cv = ev->check(c, one, 1, seed);
        rs.check_seconds = ev->take_device_seconds();
        if (!cv) {
          rs.result = cv;
          rp.shapes.push_back(std::move(rs));
          break;
        }
        // Fewer samples where one run is long (a trial runs the candidate about twice).
        int n = o.samples;
        if (rs.check_seconds > 0)
          n = std::clamp(static_cast<int>(o.max_shape_seconds / (rs.check_seconds / 2)) - o.warmup, 5, o.samples);
        rung r{"record", {sh}, n, o.warmup, 1, false, sh == largest};
        auto m = ev->measure(c, r, measure_request{seed, nullptr});
        rs.measure_seconds = ev->take_device_seconds();
        rs.result = m.result;
        if (m.result && !m.timings.empty()) rs.samples = m.timings.front().samples;
        if (m.result && r.profile) {
          rp.diagnosis = m.diagnosis;
          rp.profile = m.profile;
        }
        if (m.res && !rp.res) rp.res = m.res;
        const bool failed = !rs.result;
        rp.shapes.push_back(std::move(rs));
        if (failed) break;
      }
    }
    verdict first = rp.gate;
    for (auto const& s : rp.shapes)
      if (first && !s.result) first = s.result;
    if (!first) ++refused[std::string(to_string(first.where))];
    out << point_line(rp) << '\n' << std::flush;
    ++recorded;
    if (recorded % 10 == 0 || !first)
      std::fprintf(stderr, "[%zu/%zu] %s %s: %s%s\n", i + 1, cands.size(), c.family.c_str(),
                   c.params.to_string().c_str(), std::string(to_string(first.where)).c_str(),
                   first ? "" : (" (" + first.detail.substr(0, 120) + ")").c_str());
  }
  const std::size_t left = cands.size() - recorded - skipped;
  std::string refusals;
  for (auto const& [k, n] : refused) refusals += fmt::format("{}{} {}", refusals.empty() ? "" : ", ", k, n);
  fmt::print(
      "kernelbrain record {}: {} points recorded now, {} already in '{}', {} left{}; {} of {} admitted points "
      "in the sweep; refused: {}\n",
      prob.name, recorded, skipped, o.out, left, out_of_time ? " (--time-limit reached: run again to go on)" : "",
      cands.size(), space_points, refusals.empty() ? "none" : refusals);
  return 0;
}

}  // namespace

subcommand register_record(CLI::App& app) {
  auto* cmd = app.add_subcommand("record", "sweep a problem's template space and record what every point did");
  auto o = std::make_shared<record_options>();
  cmd->add_option("problem", o->problem, "a problem directory or a built-in problem's name")->required();
  cmd->add_option("--out", o->out, "the recording (JSON lines; an existing one is continued)")
      ->required()
      ->type_name("FILE");
  cmd->add_option("--backend", o->backend, "host or cuda (default: the problem's)")->type_name("NAME");
  cmd->add_option("--points", o->points, "how many points (a seeded random sample; default 0: every admitted point)")
      ->type_name("N");
  cmd->add_option("--seed", o->seed, "seed of the sample, its order and the fresh inputs (default 1)")->type_name("N");
  cmd->add_option("--samples", o->samples, "timed samples per shape (default 20)")
      ->check(CLI::Range(3, 1000))
      ->type_name("N");
  cmd->add_option("--warmup", o->warmup, "untimed runs before them (default 2)")
      ->check(CLI::Range(0, 100))
      ->type_name("N");
  cmd->add_option("--max-shape-seconds", o->max_shape_seconds,
                  "fewer samples (at least 5) where they would take longer than this (default 1)")
      ->check(CLI::PositiveNumber)
      ->type_name("S");
  cmd->add_option("--baseline-repeats", o->baseline_repeats, "times the reference is measured (default 5)")
      ->check(CLI::Range(1, 100))
      ->type_name("N");
  cmd->add_option("--time-limit", o->time_limit, "stop cleanly after this many seconds (run again to go on)")
      ->check(CLI::NonNegativeNumber)
      ->type_name("S");
  cmd->add_flag("--count", o->count_only, "print how many admitted points each template has, and exit");
  return {cmd, [o] { return run_record(*o); }};
}

}  // namespace kernelbrain::cli
