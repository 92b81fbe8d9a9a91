// kernelbrain: the command-line tuner (tune a problem with a named strategy, journal it, resume it).
#include <unistd.h>

#include <algorithm>
#include <charconv>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <exception>
#include <filesystem>
#include <iostream>
#include <boost/json/parse.hpp>
#include <boost/json/serialize.hpp>
#include <boost/json/value.hpp>
#include <fstream>
#include <kernelbrain/evaluate/cuda.hpp>
#include <kernelbrain/evaluate/host.hpp>
#include <kernelbrain/io/journal.hpp>
#include <kernelbrain/io/problem_loader.hpp>
#include <kernelbrain/search.hpp>
#include <kernelbrain/strategies/all.hpp>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

namespace {

using namespace kernelbrain;

constexpr int exit_usage = 2;  // every error the user can fix: bad arguments, journal problems

constexpr char const* usage_text = R"(kernelbrain: budget-aware search over GPU kernel implementations

Usage:
  kernelbrain tune <problem> --budget <N>(s|m|h|evals) [options]
  kernelbrain list-strategies
  kernelbrain --help

tune options:
  --backend <name>     where candidates run: cuda (NVRTC + the driver API, in a worker process per
                       GPU), host (C++ on this CPU, in isolated worker processes), synthetic (a
                       simulated cost landscape); default: the problem's own backend
  --strategy <name>    search strategy (default: default); see `kernelbrain list-strategies`.
                       Options follow a colon: --strategy sha:eta=4,bracket_size=27
  --budget <amount>    how much to spend: 120s, 2m or 1h of (simulated) device time,
                       or 500evals (evaluations of a candidate at a fidelity rung)
  --seed <n>           seed of every random choice (default 1): same seed, same search
  --journal <file>     write an append-only JSONL journal of the run to <file>
  --resume             continue the run recorded in --journal <file>; finished evaluations
                       are not repeated and the result equals an uninterrupted run's
  --wall <seconds>     also stop after this much wall-clock time
  --best-out <file>    write the best kernel of each shape (source, launch plan, params, family, problem
                       directory) as JSON, the format bench/side_by_side.py --kernels reads
  --focus <shapes>     tune for these benchmark shapes only (comma-separated names; the smoke and
                       odd shapes are still checked): one search per group of similar sizes
  --progress           always draw the progress line on stderr
  --no-progress        never draw it (default: draw it when stderr is a terminal)

Problems: a problem directory (holding problem.json), the name of a built-in problem
(softmax, rmsnorm, matvec: the host versions in examples/problems/; with --backend cuda, or for
names only the CUDA set has, the CUDA problems in examples/cuda_problems/), or for the synthetic
backend synthetic / synthetic:<landscape seed> (default 7).

Examples:
  kernelbrain tune softmax --budget 60evals
  kernelbrain tune examples/problems/matvec --budget 2m --journal matvec.jsonl
  kernelbrain tune synthetic --budget 300evals --journal run.jsonl
  kernelbrain tune synthetic --budget 300evals --journal run.jsonl --resume   # after a kill
)";

/// A mistake in the command line; main prints it and exits with exit_usage.
struct usage_error : error {
  using error::error;
};

// ---- strategies ------------------------------------------------------------------------------------

strategy_registry const& registry() {
  static const strategy_registry r = builtin_strategies();
  return r;
}

/// "sha:eta=4,bracket_size=27" -> name and options. The canonical text (options sorted) is what the
/// journal header records, so a resumed run must use the same strategy with the same options.
struct strategy_spec {
  std::string name;
  strategy_options options;
  [[nodiscard]] std::string canonical() const {
    std::string out = name;
    char sep = ':';
    for (auto const& [k, v] : options.values) {
      out += sep;
      out += k + "=" + v;
      sep = ',';
    }
    return out;
  }
};

strategy_spec parse_strategy(std::string const& text) {
  strategy_spec s;
  const auto colon = text.find(':');
  s.name = text.substr(0, colon);
  if (colon != std::string::npos) s.options = strategy_options::parse(std::string_view(text).substr(colon + 1));
  if (!registry().contains(s.name)) {
    std::string known;
    for (auto const& n : registry().names()) known += (known.empty() ? "" : ", ") + n;
    throw usage_error("unknown strategy '" + s.name + "': known strategies are " + known +
                      " (see kernelbrain list-strategies)");
  }
  return s;
}

// ---- arguments ---------------------------------------------------------------------------------------

struct tune_options {
  std::string problem;
  std::string backend;  ///< empty: the problem's own
  std::string strategy = "default";
  budget limits;
  std::string budget_text;
  std::optional<std::filesystem::path> journal;
  bool resume = false;
  std::uint64_t seed = 1;
  std::optional<bool> progress;  ///< unset: draw when stderr is a terminal
  unsigned slow_eval_ms = 0;     ///< test hook, see slowed_evaluator
  std::optional<std::filesystem::path> best_out;
  std::vector<std::string> focus;  ///< benchmark shapes to tune for (empty: all)
};

std::uint64_t parse_count(std::string_view option, std::string_view text, std::string_view example) {
  std::uint64_t v = 0;
  const auto r = std::from_chars(text.data(), text.data() + text.size(), v);
  if (text.empty() || r.ec != std::errc{} || r.ptr != text.data() + text.size())
    throw usage_error(std::string(option) + ": '" + std::string(text) + "' is not a whole number " +
                      (r.ec == std::errc::result_out_of_range ? "that fits in 64 bits" : "(0 or more)") +
                      ": use e.g. " + std::string(option) + " " + std::string(example));
  return v;
}

/// "120s", "2m", "1h": simulated device time; "500evals": evaluations. A bare number is refused:
/// seconds and evaluations differ by orders of magnitude, so guessing would be a trap.
budget parse_budget(std::string_view text) {
  const auto unit_at = text.find_first_not_of("0123456789.");
  const auto number = text.substr(0, unit_at);
  const auto unit = unit_at == std::string_view::npos ? std::string_view{} : text.substr(unit_at);
  const std::string quoted = "'" + std::string(text) + "'";
  if (number.empty())
    throw usage_error("--budget " + quoted + " does not start with a number: use e.g. --budget 120s, 2m or 500evals");
  if (unit.empty())
    throw usage_error("--budget " + quoted + " has no unit: write " + std::string(text) + "s (device seconds), " +
                      std::string(text) + "m (minutes) or " + std::string(text) + "evals (evaluations)");
  budget b;
  if (unit == "evals") {
    b.evaluations = parse_count("--budget", number, "500evals");
    if (b.evaluations == 0) throw usage_error("--budget " + quoted + " allows no evaluation: give at least 1evals");
    return b;
  }
  double value = 0;
  const auto r = std::from_chars(number.data(), number.data() + number.size(), value);
  if (r.ec != std::errc{} || r.ptr != number.data() + number.size() || !std::isfinite(value))
    throw usage_error("--budget " + quoted + ": '" + std::string(number) + "' is not a number: use e.g. --budget 120s");
  if (unit == "s")
    b.device_seconds = value;
  else if (unit == "m")
    b.device_seconds = value * 60;
  else if (unit == "h")
    b.device_seconds = value * 3600;
  else
    throw usage_error("--budget " + quoted + ": unknown unit '" + std::string(unit) +
                      "': use s, m or h (device time) or evals (evaluations)");
  if (!(b.device_seconds > 0)) throw usage_error("--budget " + quoted + " is zero: give a positive amount");
  return b;
}

tune_options parse_tune(std::vector<std::string_view> const& args) {
  tune_options o;
  bool have_budget = false;
  for (std::size_t i = 0; i < args.size(); ++i) {
    std::string_view arg = args[i];
    if (!arg.starts_with("-")) {
      if (!o.problem.empty())
        throw usage_error("unexpected argument '" + std::string(arg) + "': tune takes one problem (already have '" +
                          o.problem + "')");
      o.problem = arg;
      continue;
    }
    // --name value, or --name=value
    std::string_view name = arg;
    std::optional<std::string_view> inline_value;
    if (auto eq = arg.find('='); eq != std::string_view::npos) {
      name = arg.substr(0, eq);
      inline_value = arg.substr(eq + 1);
    }
    auto value = [&]() -> std::string_view {
      if (inline_value) return *inline_value;
      if (i + 1 >= args.size() || args[i + 1].starts_with("--"))
        throw usage_error("option " + std::string(name) + " needs a value: see kernelbrain --help");
      return args[++i];
    };
    auto flag = [&] {
      if (inline_value) throw usage_error("option " + std::string(name) + " takes no value");
    };
    if (name == "--backend") {
      o.backend = value();
    } else if (name == "--strategy") {
      o.strategy = value();
    } else if (name == "--budget") {
      o.budget_text = value();
      o.limits = parse_budget(o.budget_text);
      have_budget = true;
    } else if (name == "--journal") {
      const auto v = value();
      if (v.empty()) throw usage_error("--journal needs a file name");
      o.journal = std::filesystem::path(std::string(v));
    } else if (name == "--best-out") {
      const auto v = value();
      if (v.empty()) throw usage_error("--best-out needs a file name");
      o.best_out = std::filesystem::path(std::string(v));
    } else if (name == "--wall") {
      const std::string v(value());
      char* end = nullptr;
      const double w = std::strtod(v.c_str(), &end);
      if (!end || *end || !(w > 0)) throw usage_error("--wall '" + v + "': give a positive number of seconds");
      o.limits.wall_seconds = w;
    } else if (name == "--focus") {
      const std::string v(value());
      for (std::size_t b = 0; b <= v.size();) {
        const auto e = std::min(v.find(',', b), v.size());
        if (e == b) throw usage_error("--focus '" + v + "': give shape names separated by commas");
        o.focus.push_back(v.substr(b, e - b));
        b = e + 1;
      }
    } else if (name == "--resume") {
      flag();
      o.resume = true;
    } else if (name == "--seed") {
      o.seed = parse_count("--seed", value(), "3");
    } else if (name == "--progress") {
      flag();
      o.progress = true;
    } else if (name == "--no-progress") {
      flag();
      o.progress = false;
    } else if (name == "--slow-eval-ms") {
      // Test hook, deliberately not in --help: each synthetic measurement takes this long in real
      // time, so that a test can kill a run half-way. It changes no result and no journal header.
      const auto ms = std::min<std::uint64_t>(parse_count("--slow-eval-ms", value(), "20"), 60000);
      o.slow_eval_ms = static_cast<unsigned>(ms);
    } else {
      throw usage_error("unknown option '" + std::string(name) + "' for kernelbrain tune: see kernelbrain --help");
    }
  }
  if (o.problem.empty()) throw usage_error("tune needs a problem: e.g. kernelbrain tune synthetic --budget 300evals");
  if (!have_budget) throw usage_error("tune needs --budget: e.g. --budget 120s (device seconds) or --budget 500evals");
  if (o.resume && !o.journal) throw usage_error("--resume needs --journal <file>: the journal of the run to continue");
  return o;
}

// ---- backends ----------------------------------------------------------------------------------------

/// Test hook behind --slow-eval-ms: sleeps before each measurement and forwards everything else, so
/// results, budget and fingerprint are the synthetic evaluator's own.
class slowed_evaluator final : public evaluator {
 public:
  slowed_evaluator(evaluator& inner, std::chrono::milliseconds delay) : inner_(inner), delay_(delay) {}
  [[nodiscard]] std::string fingerprint() const override { return inner_.fingerprint(); }
  [[nodiscard]] verdict inspect(candidate const& c) override { return inner_.inspect(c); }
  [[nodiscard]] verdict build(candidate const& c) override { return inner_.build(c); }
  [[nodiscard]] verdict check(candidate const& c, std::span<std::size_t const> shapes, int trials,
                              std::uint64_t seed) override {
    return inner_.check(c, shapes, trials, seed);
  }
  [[nodiscard]] measurement measure(candidate const& c, rung const& r, measure_request const& req) override {
    std::this_thread::sleep_for(delay_);
    return inner_.measure(c, r, req);
  }
  [[nodiscard]] baseline measure_baseline(problem const& p) override { return inner_.measure_baseline(p); }
  [[nodiscard]] double take_device_seconds() override { return inner_.take_device_seconds(); }

 private:
  evaluator& inner_;
  std::chrono::milliseconds delay_;
};

/// "synthetic" or "synthetic:<landscape seed>".
synthetic_config synthetic_problem(std::string const& spec) {
  synthetic_config c;
  if (spec == "synthetic") return c;
  if (spec.starts_with("synthetic:")) {
    c.landscape_seed = parse_count("problem " + spec, std::string_view(spec).substr(10), "synthetic:7");
    return c;
  }
  throw usage_error("problem '" + spec +
                    "' is not a synthetic problem: the synthetic backend tunes 'synthetic' or "
                    "'synthetic:<landscape seed>'");
}

// ---- progress and summary ----------------------------------------------------------------------------

/// The progress line on stderr, redrawn in place at most ten times a second, and the per-stage
/// reject counts for the summary (a resumed run replays every event, so these cover the whole run).
class progress_line final : public observer {
 public:
  explicit progress_line(bool draw) : draw_(draw) {}

  void on_event(event const& e, search_view const& v) override {
    if (e.kind == event_kind::rejected) ++rejected_by_stage_[std::string(to_string(e.result.where))];
    if (!draw_) return;
    const auto now = std::chrono::steady_clock::now();
    if (drawn_ && now - last_ < std::chrono::milliseconds(100) && e.kind != event_kind::stopped) return;
    last_ = now;
    redraw(v);
  }
  /// Ends the line so that what follows starts on a fresh one.
  void finish() {
    if (drawn_) std::fputc('\n', stderr);
    drawn_ = false;
  }
  [[nodiscard]] std::map<std::string, std::size_t> const& rejected_by_stage() const noexcept {
    return rejected_by_stage_;
  }

 private:
  void redraw(search_view const& v) {
    auto const& c = v.counters();
    char best[32] = "-";
    if (auto s = v.best_score()) std::snprintf(best, sizeof best, "%.3fx", s->speedup);
    char line[200];
    const int n =
        std::snprintf(line, sizeof line, "\r[%5.1f%%] evaluated %zu  rejected %zu  promoted %zu  best %s",
                      100.0 * std::min(1.0, v.meter().fraction_used()), c.evaluations, c.rejected, c.promotions, best);
    // Pad over what a longer previous line left behind.
    const int width = n > 0 ? n : 0;
    std::fprintf(stderr, "%s%*s", line, std::max(0, last_width_ - width), "");
    std::fflush(stderr);
    last_width_ = width;
    drawn_ = true;
  }

  bool draw_;
  bool drawn_ = false;
  int last_width_ = 0;
  std::chrono::steady_clock::time_point last_{};
  std::map<std::string, std::size_t> rejected_by_stage_;
};

void row(std::string_view name, std::string const& value) {
  std::printf("  %-16s %s\n", std::string(name).c_str(), value.c_str());
}

std::string fixed(double v, int digits) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.*f", digits, v);
  return buf;
}

void print_summary(tune_options const& o, std::string const& backend, std::string const& strategy, std::string const& problem_name,
                   search_result const& r, progress_line const& progress, std::span<rung const> rungs,
                   jsonl_journal const* journal, std::string const& backend_note) {
  std::printf("kernelbrain tune %s (backend %s)\n", problem_name.c_str(), backend.c_str());
  row("strategy", strategy);
  row("seed", std::to_string(o.seed));
  row("budget", o.budget_text);
  row("stop reason", r.stop_reason);
  row("evaluations", std::to_string(r.counters.evaluations));
  row("cache hits", std::to_string(r.counters.cache_hits));
  row("candidates",
      std::to_string(r.candidates) + " (" + std::to_string(r.counters.duplicates) + " duplicate proposals)");
  std::string stages;
  for (auto const& [stage_name, n] : progress.rejected_by_stage())
    stages += (stages.empty() ? "" : ", ") + stage_name + " " + std::to_string(n);
  row("rejected", std::to_string(r.counters.rejected) + (stages.empty() ? "" : " (" + stages + ")"));
  row("promotions", std::to_string(r.counters.promotions));
  row("device seconds", fixed(r.used.device_seconds, 3));
  row("wall seconds", fixed(r.used.wall_seconds, 1));
  if (!backend_note.empty()) row("backend", backend_note);
  if (r.best && r.best_score) {
    auto const& c = r.best->cand;
    row("best candidate", c.id.str());
    row("  family", c.family.empty() ? "(free-form)" : c.family);
    row("  params", c.params.empty() ? "(none)" : c.params.to_string());
    row("  rung",
        std::to_string(r.best_rung) + (r.best_rung < rungs.size() ? " (" + rungs[r.best_rung].name + ")" : ""));
    row("  speedup", fixed(r.best_score->speedup, 3) + "x over the reference");
    // Every digit: runs that should be identical (a resumed one and an uninterrupted one) compare exactly.
    char score_text[64];
    std::snprintf(score_text, sizeof score_text, "%.17g", r.best_score->value);
    row("  score", score_text);
  } else {
    row("best candidate", "none passed");
  }
  if (journal) row("journal", journal->path().string() + (journal->resumed() ? " (resumed)" : ""));
  std::fflush(stdout);
}

// ---- commands ------------------------------------------------------------------------------------------

/// A problem directory: the argument itself, or a built-in problem's directory.
std::filesystem::path problem_directory(std::string const& spec, std::string const& backend) {
  namespace fs = std::filesystem;
  if (fs::is_directory(spec) || fs::is_regular_file(spec)) return spec;
  std::vector<fs::path> roots;
  std::vector<fs::path> cuda_roots;
  if (char const* env = std::getenv("KERNELBRAIN_CUDA_PROBLEMS")) cuda_roots.emplace_back(env);
#ifdef KERNELBRAIN_CUDA_PROBLEMS_DIR
  cuda_roots.emplace_back(KERNELBRAIN_CUDA_PROBLEMS_DIR);
#endif
  if (backend == "cuda")
    for (auto const& r : cuda_roots)
      if (fs::is_directory(r / spec)) return r / spec;
  if (char const* env = std::getenv("KERNELBRAIN_PROBLEMS")) roots.emplace_back(env);
  std::error_code ec;
  if (auto self = fs::read_symlink("/proc/self/exe", ec); !ec)
    roots.push_back(self.parent_path().parent_path() / "share" / "kernelbrain" / "problems");  // installed
#ifdef KERNELBRAIN_PROBLEMS_DIR
  roots.emplace_back(KERNELBRAIN_PROBLEMS_DIR);  // the source tree this CLI was built from
#endif
  for (auto const& r : roots)
    if (fs::is_directory(r / spec)) return r / spec;
  for (auto const& r : cuda_roots)
    if (fs::is_directory(r / spec)) return r / spec;
  roots.insert(roots.end(), cuda_roots.begin(), cuda_roots.end());
  std::string known;
  for (auto const& r : roots)
    if (fs::is_directory(r))
      for (auto const& e : fs::directory_iterator(r))
        if (fs::exists(e.path() / "problem.json")) known += (known.empty() ? "" : ", ") + e.path().filename().string();
  throw usage_error("problem '" + spec + "' is neither a directory nor a built-in problem" +
                    (known.empty() ? std::string(" (no built-in problems found; set KERNELBRAIN_PROBLEMS)")
                                   : " (built-in: " + known + ", synthetic)"));
}

/// Per-shape times of the incumbent against the reference, at the incumbent's best rung.
void print_shapes(problem const& p, search_result const& r) {
  if (!r.best) return;
  auto const& m = r.best->results[r.best_rung];
  if (!m) return;
  std::printf("\n  %-14s %14s %14s %9s %12s\n", "shape", "reference", "best", "speedup", "% of floor");
  for (auto const& t : m->timings) {
    auto const& sh = p.shapes[t.shape];
    const double ref = r.reference.seconds[t.shape], best = t.stats.median;
    const double floor = p.machine.floor_seconds(sh);
    std::printf("  %-14s %11.3f ms %11.3f ms %8.2fx %11s\n", sh.name.c_str(), ref * 1e3, best * 1e3, ref / best,
                floor > 0 ? (fixed(100.0 * floor / best, 1) + "%").c_str() : "-");
  }
  std::fflush(stdout);
}

/// For each problem shape, the candidate with the lowest median time at that shape among those
/// measured at the top rung (every shape, most samples): what "the best kernel of each shape" means.
class per_shape_best final : public observer {
 public:
  struct entry {
    candidate cand;
    double median = 0;
    double reference = 0;
  };
  void on_event(event const& e, search_view const& v) override {
    if (e.kind != event_kind::measured || e.rung + 1 != v.rungs().size()) return;
    auto const* rec = v.find(e.id);
    if (!rec || !rec->results[e.rung]) return;
    for (auto const& t : rec->results[e.rung]->timings) {
      auto& slot = best_[t.shape];
      if (!slot || t.stats.median < slot->median)
        slot = entry{rec->cand, t.stats.median, v.baseline().seconds[t.shape]};
    }
  }
  [[nodiscard]] std::map<std::size_t, std::optional<entry>> const& best() const noexcept { return best_; }

 private:
  std::map<std::size_t, std::optional<entry>> best_;
};

/// The best kernel of each shape as bench/side_by_side.py --kernels reads it: {"kernels": [{..., "shape"}]}
/// (empty when nothing passed the top rung).
void write_best(std::filesystem::path const& file, problem const& prob, per_shape_best const& per_shape) {
  namespace json = boost::json;
  json::array kernels;
  for (auto const& [shape_index, e] : per_shape.best()) {
    if (!e) continue;
    auto const& c = e->cand;
    json::object k;
    k["problem_dir"] = prob.directory;
    k["problem"] = prob.name;
    k["shape"] = prob.shapes[shape_index].name;
    k["family"] = c.family;
    json::object params;
    for (auto const& [name, v] : c.params) params[name] = v;
    k["params"] = std::move(params);
    k["candidate"] = c.id.str();
    k["origin"] = c.origin;
    k["source"] = c.source;
    try {
      k["launch"] = json::parse(c.launch);
    } catch (std::exception const&) {
      k["launch"] = c.launch;
    }
    k["speedup_vs_reference"] = e->reference / e->median;
    kernels.push_back(std::move(k));
  }
  json::object doc;
  doc["kernels"] = std::move(kernels);
  std::ofstream out(file);
  out << json::serialize(doc) << "\n";
  if (!out) throw error("--best-out: cannot write " + file.string());
}

int tune(tune_options const& o) {
  const bool synthetic_problem_name = o.problem == "synthetic" || o.problem.starts_with("synthetic:");
  std::optional<synthetic_landscape> land;
  std::optional<problem> loaded;
  if (synthetic_problem_name) {
    if (!o.focus.empty())
      throw usage_error("--focus names shapes of a problem directory; the synthetic problem has none to choose");
    land.emplace(synthetic_problem(o.problem));
  } else {
    loaded = load_problem(problem_directory(o.problem, o.backend));
    if (!o.focus.empty()) {
      try {
        loaded = focused_on(std::move(*loaded), o.focus);
      } catch (error const& e) {
        throw usage_error(std::string("--focus: ") + e.what());
      }
    }
  }
  problem const& prob = land ? land->get_problem() : *loaded;
  const std::string backend = !o.backend.empty() ? o.backend : land ? "synthetic" : prob.backend;
  const std::string problem_name = land ? "synthetic:" + std::to_string(land->config().landscape_seed) : prob.name;

  std::unique_ptr<evaluator> backend_ev;
  if (backend == "synthetic") {
    if (!land)
      throw usage_error("the synthetic backend tunes 'synthetic' or 'synthetic:<landscape seed>', not '" + o.problem +
                        "': use --backend " + prob.backend);
    backend_ev = std::make_unique<synthetic_evaluator>(*land);
  } else if (backend == "host") {
    if (land) throw usage_error("the host backend needs a problem directory, not '" + o.problem + "'");
    if (prob.backend != "host")
      throw usage_error("problem '" + prob.name + "' is written for the " + prob.backend +
                        " backend, not host: use --backend " + prob.backend);
    backend_ev = std::make_unique<host_evaluator>(prob);
  } else if (backend == "cuda") {
    if (land) throw usage_error("the cuda backend needs a problem directory, not '" + o.problem + "'");
    if (prob.backend != "cuda")
      throw usage_error("problem '" + prob.name + "' is written for the " + prob.backend +
                        " backend, not cuda: use --backend " + prob.backend);
    backend_ev = std::make_unique<cuda_evaluator>(prob);
  } else {
    throw usage_error("unknown backend '" + backend + "': this build has cuda, host and synthetic");
  }
  slowed_evaluator slowed(*backend_ev, std::chrono::milliseconds(o.slow_eval_ms));
  evaluator& ev = o.slow_eval_ms > 0 ? static_cast<evaluator&>(slowed) : *backend_ev;

  const auto strategy = parse_strategy(o.strategy);
  any_policies pol = registry().make(strategy.name, prob, strategy.options);
  const auto rungs = pol.ladder.rungs();
  const std::vector<rung> ladder(rungs.begin(), rungs.end());
  const run_header header{problem_name, strategy.canonical(), o.seed, ev.fingerprint(), ladder_digest(ladder)};

  std::optional<jsonl_journal> journal;
  search_options so;
  so.seed = o.seed;
  so.limits = o.limits;
  if (o.journal) {
    journal.emplace(*o.journal, header, o.limits, o.resume ? journal_mode::resume : journal_mode::create);
    so.journal = &*journal;
    so.resume = journal->resumed();
    if (o.resume) {
      auto const& info = journal->resume_info();
      std::fprintf(stderr, "resuming %s: %zu finished evaluations will be reused\n", o.journal->string().c_str(),
                   info.outcomes);
      if (info.torn_bytes > 0)
        std::fprintf(stderr, "note: dropped a torn last line (%ju bytes) left by the interrupted run\n",
                     static_cast<std::uintmax_t>(info.torn_bytes));
      if (info.budget_changed)
        std::fprintf(stderr,
                     "note: the budget differs from the journal's, so the search may take other turns: "
                     "its events are written again from the start (finished evaluations are still reused)\n");
    }
  }
  progress_line progress(o.progress.value_or(::isatty(STDERR_FILENO) == 1));
  so.observers.push_back(&progress);
  per_shape_best shape_best;
  so.observers.push_back(&shape_best);

  search_result r;
  try {
    r = search(prob, std::move(pol), ev, so);
  } catch (...) {
    progress.finish();
    throw;
  }
  progress.finish();
  if (journal) journal->throw_if_failed();
  std::string backend_note;
  if (auto const* cu = dynamic_cast<cuda_evaluator const*>(backend_ev.get()))
    backend_note = std::to_string(cu->compiles()) + " NVRTC compiles (ahead, in parallel), " +
                   std::to_string(cu->cache_hits()) + " cache hits, " + std::to_string(cu->worker_starts()) +
                   " worker starts, " +
                   (cu->sanitizer().empty() ? std::string("compute-sanitizer off (not found)")
                                            : std::to_string(cu->sanitizer_runs()) + " compute-sanitizer runs");
  print_summary(o, backend, strategy.canonical(), problem_name, r, progress, ladder, journal ? &*journal : nullptr,
                backend_note);
  print_shapes(prob, r);
  if (o.best_out) write_best(*o.best_out, prob, shape_best);
  return 0;
}

int list_strategies() {
  for (auto const& n : registry().names()) std::printf("%-18s %s\n", n.c_str(), registry().description(n).c_str());
  return 0;
}

int run(int argc, char** argv) {
  std::vector<std::string_view> args(argv + 1, argv + argc);
  if (args.empty()) {
    std::fputs(usage_text, stderr);
    return exit_usage;
  }
  const auto command = args.front();
  const bool wants_help = std::find_if(args.begin(), args.end(),
                                       [](std::string_view a) { return a == "--help" || a == "-h"; }) != args.end();
  if (command == "--help" || command == "-h" || command == "help" || wants_help) {
    std::fputs(usage_text, stdout);
    return 0;
  }
  if (command == "list-strategies") {
    if (args.size() > 1) throw usage_error("list-strategies takes no arguments (got '" + std::string(args[1]) + "')");
    return list_strategies();
  }
  if (command == "tune") return tune(parse_tune({args.begin() + 1, args.end()}));
  throw usage_error("unknown command '" + std::string(command) +
                    "': use tune or list-strategies (see kernelbrain --help)");
}

}  // namespace

int main(int argc, char** argv) {
  try {
    return run(argc, argv);
  } catch (kernelbrain::error const& e) {
    std::fprintf(stderr, "kernelbrain: error: %s\n", e.what());
    return exit_usage;
  } catch (std::exception const& e) {
    std::fprintf(stderr, "kernelbrain: internal error: %s\n", e.what());
    return 1;
  } catch (...) {
    std::fprintf(stderr, "kernelbrain: internal error (unknown exception)\n");
    return 1;
  }
}
