// kernelbrain ablate: strategies x problems x seeds under equal budgets, on any backend, as one Markdown
// table: how good each strategy's final incumbent is, how often and how soon its confirmed incumbent came
// within a tolerance of the best, and where its device time went. Deterministic backends give the same
// table byte for byte (no wall-clock number is in it), so --expect can hold an ablation to a committed one.
#include <fmt/format.h>
#include <fmt/ranges.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <kernelbrain/backends/replay/evaluator.hpp>
#include <kernelbrain/backends/synthetic/evaluator.hpp>
#include <kernelbrain/io/problem_loader.hpp>
#include <kernelbrain/io/recording.hpp>
#include <kernelbrain/search.hpp>
#include <limits>
#include <map>
#include <memory>
#include <optional>
#include <sstream>
#include <string>
#include <string_view>
#include <utility>
#include <vector>
#include "ablation.hpp"
#include "commands.hpp"
#include "validators.hpp"

namespace kernelbrain::cli {

namespace {

/// --expect: the table is not the expected one (docs/cli.md, exit codes).
constexpr int exit_differs = 1;

constexpr char const* default_strategies = "default,exhaustive,random,sha,hyperband";

constexpr char const* ablate_footer =
    R"(Problems: as for tune (a problem directory, a built-in problem's name, synthetic or
synthetic:<landscape seed>); for the replay backend, a recording (<name>.jsonl.gz, .jsonl), or a
problem name looked up in --recordings DIR. Without --backend, each problem runs on its own
backend (a recording on replay).

Every run: seed 1..N, the same budget, a fresh evaluator, evaluations applied in issue order, no
journal. The table (stdout, and --out FILE) holds no wall-clock number: a deterministic backend
(synthetic, replay) gives the same table byte for byte, which --expect FILE checks (exit 1 and a
line-by-line diff on stderr when it differs).

Examples:
  kernelbrain ablate synthetic synthetic:3 --seeds 10 --budget 300evals
  kernelbrain ablate softmax --backend host --strategies default,sha:eta=4,bracket_size=27 --seeds 3 --budget 60evals
  kernelbrain ablate synthetic --seeds 5 --budget 200evals --out ablation.md
  kernelbrain ablate synthetic --seeds 5 --budget 200evals --expect ablation.md)";

// --- The command line ---------------------------------------------------------------------------------

/// "default,sha:eta=4,bracket_size=27,random": strategy specs separated by commas. An item holding '='
/// and no ':' is one more option of the spec before it (a strategy name never holds '=').
std::vector<strategy_spec> parse_strategies(std::string const& text) {
  std::vector<std::string> items;
  for (std::size_t b = 0; b <= text.size();) {
    const auto e = std::min(text.find(',', b), text.size());
    const auto item = text.substr(b, e - b);
    if (item.empty())
      throw usage_error(fmt::format("'{}': give strategies separated by commas, e.g. default,sha,random", text));
    const bool option_of_previous = !items.empty() && items.back().find(':') != std::string::npos &&
                                    item.find('=') != std::string::npos && item.find(':') == std::string::npos;
    if (option_of_previous)
      items.back() += "," + item;
    else
      items.push_back(item);
    b = e + 1;
  }
  // The strategies that need a model are known to registry() (for tune's --model) but not here.
  static const strategy_registry without_model = builtin_strategies();
  std::vector<strategy_spec> specs;
  for (auto const& item : items) {
    auto spec = parse_strategy(item);
    if (!without_model.contains(spec.name))
      throw usage_error(
          fmt::format("strategy '{}' needs a model, and ablate runs none: use tune --model for it", spec.name));
    for (auto const& s : specs)
      if (s.canonical() == spec.canonical())
        throw usage_error(fmt::format("'{}' is given twice: each strategy is one row of the table", spec.canonical()));
    specs.push_back(std::move(spec));
  }
  return specs;
}

/// A registered backend.
std::string parse_ablate_backend(std::string const& text) {
  if (backends().contains(text)) return text;
  throw usage_error(fmt::format("unknown backend '{}': ablate runs {}", text, backends().names_text()));
}

/// A budget that stops a search without a model: a device-time or an evaluation limit.
budget parse_ablate_budget(std::string const& text) {
  const budget b = parse_budget(text);
  if (b.device_seconds <= 0 && b.evaluations == 0)
    throw usage_error(
        fmt::format("'{}' limits neither device time nor evaluations: ablate runs no model, so nothing would stop "
                    "its searches; give e.g. 300evals or 60s",
                    text));
  return b;
}

std::uint64_t parse_seeds(std::string const& text) {
  const auto n = parse_count(text, "--seeds 10");
  if (n == 0) throw usage_error("'0' runs nothing: give at least 1 seed");
  return n;
}

/// How far from the best still counts as reaching it: a number of 0 or more (0.05 = within 5%).
double parse_tolerance(std::string const& text) {
  char* end = nullptr;
  const double t = std::strtod(text.c_str(), &end);
  if (text.empty() || !end || *end || !std::isfinite(t) || t < 0)
    throw usage_error(fmt::format("'{}': give a number of 0 or more, e.g. 0.05 (within 5% of the best)", text));
  return t;
}

class ablate_arguments {
 public:
  explicit ablate_arguments(CLI::App& cmd) {
    cmd.add_option("problem", problems_,
                   "problem directories, built-in problem names, synthetic / synthetic:<seed>,\n"
                   "or (replay) recordings")
        ->required()
        ->type_name("PROBLEM...");
    // A repeated option takes its last value, as tune's do (the positional list above takes them all).
    cmd.option_defaults()->multi_option_policy(CLI::MultiOptionPolicy::TakeLast);
    cmd.add_option("--backend", backend_, "synthetic, replay (a recording), host or cuda; default: each problem's own")
        ->type_name("NAME")
        ->check(checked_by(parse_ablate_backend));
    cmd.add_option("--strategies", strategies_,
                   fmt::format("strategy specs, comma-separated, one row each (default\n{}); options as\n"
                               "for tune --strategy: default,sha:eta=4,bracket_size=27",
                               default_strategies))
        ->type_name("SPEC,...")
        ->check(checked_by(parse_strategies));
    cmd.add_option("--seeds", seeds_, "runs per problem and strategy, with seeds 1..N (default 10)")
        ->type_name("N")
        ->check(checked_by(parse_seeds));
    cmd.add_option("--budget", budget_,
                   "every run's budget (default 300evals): 300evals, 60s, 2m or both\n"
                   "(60s,300evals); a device-time or evaluation limit is required")
        ->type_name("AMOUNT")
        ->check(checked_by(parse_ablate_budget));
    cmd.add_option("--tolerance", tolerance_,
                   "a run reaches the best when its confirmed incumbent comes within this\n"
                   "fraction of it (default 0.05: within 5%)")
        ->type_name("X")
        ->check(checked_by(parse_tolerance));
    cmd.add_option("--recordings", recordings_, "replay: look problem names up as DIR/<name>.jsonl.gz (or .jsonl)")
        ->type_name("DIR")
        ->check(CLI::ExistingDirectory);
    cmd.add_option("--out", out_, "also write the table to FILE")->type_name("FILE")->check(not_empty("a file name"));
    cmd.add_option("--expect", expect_,
                   "compare the table with FILE's (a previous --out): exit 1 and a diff on\n"
                   "stderr when they differ")
        ->type_name("FILE")
        ->check(CLI::ExistingFile);
  }
  ablate_arguments(ablate_arguments const&) = delete;  // CLI11 holds references to the members
  ablate_arguments& operator=(ablate_arguments const&) = delete;

  [[nodiscard]] ablate_options finish() const {
    // Every value passed its check while CLI11 parsed, so none of these conversions throws.
    ablate_options o;
    o.problems = problems_;
    o.backend = backend_;
    o.strategies = parse_strategies(strategies_);
    o.seeds = parse_seeds(seeds_);
    o.budget_text = budget_;
    o.limits = parse_ablate_budget(budget_);
    o.tolerance = parse_tolerance(tolerance_);
    if (!recordings_.empty()) o.recordings = std::filesystem::path(recordings_);
    if (!out_.empty()) o.out = std::filesystem::path(out_);
    if (!expect_.empty()) o.expect = std::filesystem::path(expect_);
    return o;
  }

 private:
  std::vector<std::string> problems_;
  std::string backend_, strategies_ = default_strategies, seeds_ = "10", budget_ = "300evals", tolerance_ = "0.05";
  std::string recordings_, out_, expect_;
};

// --- Subjects -----------------------------------------------------------------------------------------

/// The recording PROBLEM names: the file itself, or DIR/<name>.jsonl.gz (.jsonl) in --recordings DIR.
std::filesystem::path recording_file(std::string const& spec, std::optional<std::filesystem::path> const& dir) {
  namespace fs = std::filesystem;
  if (fs::is_regular_file(spec)) return spec;
  if (dir)
    for (char const* ext : {".jsonl.gz", ".jsonl"})
      if (fs::is_regular_file(*dir / (spec + ext))) return *dir / (spec + ext);
  throw usage_error(
      fmt::format("problem '{}' is not a recording{}: the replay backend replays a recording file "
                  "(<name>.jsonl.gz, written by kernelbrain record)",
                  spec, dir ? fmt::format(" (nor {}/{}.jsonl.gz)", dir->string(), spec) : ""));
}

/// One PROBLEM argument: a problem a backend opens itself (synthetic:<seed>, a recording; with
/// --recordings DIR, a recording's name), else a problem directory on the backend --backend names (or
/// its own).
ablation_subject make_subject(std::string const& spec, ablate_options const& o) {
  const std::string target = o.recordings ? recording_file(spec, o.recordings).string() : spec;
  std::optional<opened_problem> opened;
  try {
    opened = backends().open(target);
  } catch (error const& e) {
    throw usage_error(e.what());
  }
  if (opened) {
    if (!o.backend.empty() && o.backend != opened->backend)
      throw usage_error(fmt::format("the {} backend needs a problem directory, not '{}' (a problem of the {} backend)",
                                    o.backend, spec, opened->backend));
    return opened_subject(*opened, target);
  }
  if (o.recordings)
    throw usage_error(fmt::format("--recordings DIR names recordings: '{}' is not one a backend replays", target));
  return measured_subject(spec, o.backend);
}

// --- One run ------------------------------------------------------------------------------------------

/// Forwards to the backend, and splits the device seconds it spends by what spent them: a measurement at
/// a rung (the rung's name), the gate (inspect, build, check) or the reference ("baseline"). The backend's
/// seconds are taken after each call and handed on at the next take_device_seconds(), so the search is
/// charged exactly what it would be without the wrapper.
class metered_evaluator final : public evaluator {
 public:
  explicit metered_evaluator(evaluator& inner) : inner_(inner) {}
  [[nodiscard]] std::string fingerprint() const override { return inner_.fingerprint(); }
  [[nodiscard]] verdict inspect(candidate const& c) override {
    return charged("gate", [&] { return inner_.inspect(c); });
  }
  void prefetch(candidate const& c) override { inner_.prefetch(c); }  // the search thread: leaves the tally alone
  [[nodiscard]] verdict build(candidate const& c) override {
    return charged("gate", [&] { return inner_.build(c); });
  }
  [[nodiscard]] verdict check(candidate const& c, std::span<std::size_t const> shapes, int trials,
                              std::uint64_t seed) override {
    return charged("gate", [&] { return inner_.check(c, shapes, trials, seed); });
  }
  [[nodiscard]] measurement measure(candidate const& c, rung const& r, measure_request const& req) override {
    return charged(r.name, [&] { return inner_.measure(c, r, req); });
  }
  [[nodiscard]] baseline measure_baseline(problem const& p) override {
    return charged("baseline", [&] { return inner_.measure_baseline(p); });
  }
  [[nodiscard]] double take_device_seconds() override { return std::exchange(pending_, 0.0); }

  /// Device seconds by where they went; read once the search has returned.
  [[nodiscard]] std::map<std::string, double> const& spent() const noexcept { return spent_; }

 private:
  /// Runs `call`, then (even when it throws) credits what the backend spent to `where`.
  template <class Call>
  auto charged(std::string_view where, Call&& call) -> decltype(std::forward<Call>(call)()) {
    class credit {
     public:
      credit(metered_evaluator& self, std::string_view where) : self_(self), where_(where) {}
      credit(credit const&) = delete;
      credit& operator=(credit const&) = delete;
      ~credit() { self_.credit_to(where_); }

     private:
      metered_evaluator& self_;
      std::string_view where_;
    } guard(*this, where);
    return std::forward<Call>(call)();
  }
  void credit_to(std::string_view where) noexcept {
    try {
      const double s = inner_.take_device_seconds();
      spent_[std::string(where)] += s;
      pending_ += s;
    } catch (...) {  // the engine's own take would have lost it too
    }
  }

  evaluator& inner_;
  double pending_ = 0;
  std::map<std::string, double> spent_;
};

/// The incumbent each time it changes at the top rung (when, and its candidate), and rejects by verdict.
class run_watch final : public observer {
 public:
  struct confirmed {
    std::size_t evaluations = 0;
    double device_seconds = 0;
    candidate cand;
    double measured = 0;  ///< its measured speedup at the top rung
  };
  void on_event(event const& e, search_view const& v) override {
    if (e.kind == event_kind::rejected) ++rejects_[std::string(to_string(e.result.where))];
    if (e.kind != event_kind::new_best) return;
    auto const* b = v.best();
    const auto s = v.best_score();
    if (!b || !s || v.best_rung() + 1 != v.rungs().size()) return;  // only a confirmed incumbent counts
    incumbents_.push_back({v.counters().evaluations, v.meter().usage().device_seconds, b->cand, s->speedup});
  }
  [[nodiscard]] std::vector<confirmed> const& incumbents() const noexcept { return incumbents_; }
  [[nodiscard]] std::map<std::string, std::size_t> const& rejects() const noexcept { return rejects_; }

 private:
  std::vector<confirmed> incumbents_;
  std::map<std::string, std::size_t> rejects_;
};

/// What one run gave. Quality: the true speedup where the backend has a truth (0 for a candidate that
/// fails), else the measured speedup at the top rung.
struct run_record {
  struct point {
    std::size_t evaluations = 0;
    double device_seconds = 0;
    double quality = 0;
  };
  std::vector<point> confirmed;      ///< each incumbent confirmed at the top rung, in order
  double final_quality = 0;          ///< the final incumbent's (0: none; without truth: none confirmed)
  std::optional<double> best_truth;  ///< the backend's best true speedup
  double device_seconds = 0;         ///< what the budget was charged
  std::optional<double> compile_seconds;
  std::map<std::string, double> spent;
  std::map<std::string, std::size_t> rejects;
};

run_record run_one(ablation_subject const& s, strategy_spec const& spec, std::uint64_t seed, budget const& limits) {
  auto backend = s.make_evaluator();
  metered_evaluator metered(*backend);
  run_watch watch;
  search_options so;
  so.seed = seed;
  so.limits = limits;
  so.order = completion_order::issue;
  so.observers.push_back(&watch);
  const auto r = search(s.prob, registry().make(spec.name, s.prob, spec.options), metered, so);

  run_record rec;
  auto quality = [&](candidate const& c, double measured) {
    return s.true_speedup ? s.true_speedup(*backend, c).value_or(0.0) : measured;
  };
  for (auto const& c : watch.incumbents())
    rec.confirmed.push_back({c.evaluations, c.device_seconds, quality(c.cand, c.measured)});
  if (r.best && r.best_score) {
    if (s.true_speedup)
      rec.final_quality = quality(r.best->cand, 0);
    else if (r.best_rung + 1 == r.best->scores.size())  // a measured speedup below the top rung compares with none
      rec.final_quality = r.best_score->speedup;
  }
  if (s.best_true_speedup) rec.best_truth = s.best_true_speedup(*backend);
  if (s.compile_seconds) rec.compile_seconds = s.compile_seconds(*backend);
  rec.device_seconds = r.used.device_seconds;
  rec.spent = metered.spent();
  rec.rejects = watch.rejects();
  return rec;
}

// --- The table ----------------------------------------------------------------------------------------

constexpr double never = std::numeric_limits<double>::infinity();

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const auto n = v.size();
  return n % 2 == 1 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

/// The median counting a run that never got there as +inf: the lower of the two middle values for an
/// even count, so that it is infinite exactly when more than half never got there.
double median_to_reach(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[(v.size() - 1) / 2];
}

std::string percent(double tolerance) { return fmt::format("{:g}%", tolerance * 100); }

/// "gate 4% smoke 10% screen 30% confirm 56%": whole percents that add up to 100 (largest remainders).
std::string spend_shares(std::map<std::string, double> const& spent, std::vector<std::string> const& rungs) {
  std::vector<std::pair<std::string, double>> parts;
  auto take = [&](std::string const& name, bool always) {
    auto it = spent.find(name);
    const double v = it == spent.end() ? 0.0 : it->second;
    if (always || v > 0) parts.emplace_back(name, v);
  };
  take("baseline", false);
  take("gate", true);
  for (auto const& r : rungs) take(r, true);
  for (auto const& entry : spent)  // anything else (a rung another ladder named)
    if (entry.second > 0 &&
        std::none_of(parts.begin(), parts.end(), [&](auto const& p) { return p.first == entry.first; }))
      parts.push_back(entry);
  double total = 0;
  for (auto const& p : parts) total += p.second;
  if (!(total > 0)) return "-";
  std::vector<long> whole;
  std::vector<std::size_t> by_remainder;
  long sum = 0;
  for (std::size_t i = 0; i < parts.size(); ++i) {
    whole.push_back(static_cast<long>(std::floor(100 * parts[i].second / total)));
    sum += whole.back();
    by_remainder.push_back(i);
  }
  auto remainder = [&](std::size_t i) { return 100 * parts[i].second / total - static_cast<double>(whole[i]); };
  std::stable_sort(by_remainder.begin(), by_remainder.end(),
                   [&](std::size_t a, std::size_t b) { return remainder(a) > remainder(b); });
  for (std::size_t k = 0; sum < 100 && k < by_remainder.size(); ++k, ++sum) ++whole[by_remainder[k]];
  std::string out;
  for (std::size_t i = 0; i < parts.size(); ++i)
    out += fmt::format("{}{} {}%", out.empty() ? "" : " ", parts[i].first, whole[i]);
  return out;
}

std::string reject_counts(std::vector<run_record> const& runs) {
  std::map<std::string, std::size_t> total;
  for (auto const& r : runs)
    for (auto const& [where, n] : r.rejects) total[where] += n;
  std::string out;
  for (auto const& [where, n] : total) out += fmt::format("{}{} {}", out.empty() ? "" : ", ", where, n);
  return out.empty() ? "-" : out;
}

/// The best of a subject: its truth, or the best measured speedup any of its runs confirmed at the top rung.
std::optional<double> best_of(ablation_subject const& s, std::vector<std::vector<run_record>> const& by_strategy) {
  double best = 0;
  for (auto const& runs : by_strategy)
    for (auto const& r : runs) {
      if (s.true_speedup) {
        best = std::max(best, r.best_truth.value_or(0.0));
        continue;
      }
      for (auto const& p : r.confirmed) best = std::max(best, p.quality);
      best = std::max(best, r.final_quality);
    }
  return best > 0 ? std::optional<double>(best) : std::nullopt;
}

std::string table_row(ablation_subject const& s, strategy_spec const& spec, std::vector<run_record> const& runs,
                      std::vector<std::string> const& rungs, std::optional<double> best, double tolerance) {
  std::vector<double> ratios, evals, secs, device;
  std::size_t reached = 0;
  double compile = 0;
  bool all_compile = true;
  std::map<std::string, double> spent;
  for (auto const& r : runs) {
    double e = never, d = never;
    if (best) {
      ratios.push_back(r.final_quality / *best);
      for (auto const& p : r.confirmed)
        if (p.quality >= *best / (1 + tolerance)) {
          e = static_cast<double>(p.evaluations);
          d = p.device_seconds;
          ++reached;
          break;
        }
    }
    evals.push_back(e);
    secs.push_back(d);
    device.push_back(r.device_seconds);
    if (r.compile_seconds)
      compile += *r.compile_seconds;
    else
      all_compile = false;
    for (auto const& [where, v] : r.spent) spent[where] += v;
  }
  const auto n = static_cast<double>(runs.size());
  const double e = median_to_reach(evals), d = median_to_reach(secs);
  double mean_device = 0;
  for (double v : device) mean_device += v / n;
  return fmt::format(
      "| {} | {} | {} | {}/{} | {} | {} | {:.3f} | {} | {} | {} |", s.label, spec.canonical(),
      best ? fmt::format("{:.3f}, {:.3f}", median(ratios), *std::min_element(ratios.begin(), ratios.end()))
           : std::string("-"),
      reached, runs.size(), std::isfinite(e) ? fmt::format("{:.0f}", e) : std::string("-"),
      std::isfinite(d) ? fmt::format("{:.3f}", d) : std::string("-"), mean_device,
      all_compile && !runs.empty() ? fmt::format("{:.1f}", compile / n) : std::string("-"), spend_shares(spent, rungs),
      reject_counts(runs));
}

std::string best_note(ablation_subject const& s, std::optional<double> best) {
  if (!best) return fmt::format("{}: none (no run confirmed a candidate at the top rung: nothing to compare)", s.label);
  return fmt::format("{}: {:.3f} ({})", s.label, *best, s.truth_note);
}

std::vector<std::string> lines_of(std::string const& text) {
  std::vector<std::string> lines;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  return lines;
}

/// A file's whole text (--expect), or a usage error naming the option.
std::string read_text(std::filesystem::path const& file, std::string_view option) {
  std::ifstream in(file, std::ios::binary);
  std::ostringstream text;
  text << in.rdbuf();
  if (!in) throw usage_error(fmt::format("{}: '{}' cannot be read", option, file.string()));
  return text.str();
}

/// Compares the table with the expected one; on a difference, says where on stderr and returns false.
bool matches_expected(std::string const& got, std::string const& expected, std::filesystem::path const& file) {
  if (expected == got) return true;
  const auto want = lines_of(expected), have = lines_of(got);
  std::string diff;
  std::size_t differing = 0;
  for (std::size_t i = 0; i < std::max(want.size(), have.size()); ++i) {
    std::optional<std::string> w, h;
    if (i < want.size()) w = want[i];
    if (i < have.size()) h = have[i];
    if (w == h) continue;
    ++differing;
    diff += fmt::format("@@ line {}\n- {}\n+ {}\n", i + 1, w ? *w : "(no line)", h ? *h : "(no line)");
  }
  std::fflush(stdout);
  if (differing == 0)  // the lines agree: line ends or a last newline differ
    diff = "(every line agrees: the line endings or the final newline differ)\n";
  fmt::print(stderr, "kernelbrain: ablate: the table differs from {} in {} line{} (- expected, + got):\n{}",
             file.string(), differing, differing == 1 ? "" : "s", diff);
  return false;
}

}  // namespace

// --- Subjects, by backend -----------------------------------------------------------------------------

ablation_subject opened_subject(opened_problem const& opened, std::string const& file) {
  ablation_subject s;
  s.label = opened.label;
  s.backend = opened.backend;
  s.prob = *opened.prob;
  // The evaluator may keep references to the problem and what the context points to: the lambda, held by
  // the subject, keeps them alive.
  s.make_evaluator = [opened]() -> std::unique_ptr<evaluator> {
    return make_backend_evaluator(*opened.prob, opened.backend, {}, opened.context);
  };
  s.truth_note = "measured: the best speedup any run of this ablation confirmed at the top rung; " + opened.backend +
                 " has no truth";
  if (auto const* land = std::any_cast<synthetic_landscape const*>(&opened.context)) {
    // A landscape: its known optimum is the truth.
    s.true_speedup = [l = *land, keep = opened.keep](evaluator&, candidate const& c) -> std::optional<double> {
      if (c.family.empty()) return std::nullopt;
      try {
        if (l->failure(c.family, c.params)) return std::nullopt;
        return l->optimum_quality() / l->quality(c.family, c.params);
      } catch (error const&) {  // a family the landscape does not have
        return std::nullopt;
      }
    };
    s.best_true_speedup = [](evaluator&) -> std::optional<double> { return 1.0; };
    s.truth_note = "the landscape's known optimum: true speedups are relative to it";
  }
  if (auto const* rec = std::any_cast<recording const*>(&opened.context)) {
    // A recording: its best point, by the noise-free medians, is the truth.
    s.true_speedup = [](evaluator& ev, candidate const& c) {
      return dynamic_cast<replay_evaluator&>(ev).true_speedup(c);
    };
    s.best_true_speedup = [](evaluator& ev) -> std::optional<double> {
      return dynamic_cast<replay_evaluator&>(ev).best_true_speedup();
    };
    // Recordings made before the compile cache kept a prefetched compile's time hold it for few points:
    // their compile seconds would be a gross undercount, so the column says "-" for them.
    std::size_t timed = 0;
    for (auto const& p : (*rec)->points) timed += p.compile_seconds > 0 ? 1 : 0;
    if (2 * timed >= (*rec)->points.size())
      s.compile_seconds = [](evaluator& ev) -> std::optional<double> {
        return dynamic_cast<replay_evaluator&>(ev).compile_seconds();
      };
    s.truth_note = fmt::format("the best recorded point of {}, by its noise-free medians",
                               std::filesystem::path(file).filename().string());
  }
  return s;
}

ablation_subject measured_subject(std::string const& spec, std::string const& backend) {
  auto prob = std::make_shared<problem const>(load_problem(problem_directory(spec, backend)));
  const std::string on = problem_backend(*prob, backend, "ablate");
  if (prob->backend != on)
    throw usage_error(fmt::format("problem '{}' is written for the {} backend, not {}: use --backend {}", prob->name,
                                  prob->backend, on, prob->backend));
  ablation_subject s;
  s.label = prob->name;
  s.backend = on;
  s.prob = *prob;
  s.make_evaluator = [prob, on] { return make_backend_evaluator(*prob, on); };
  s.truth_note =
      "measured: the best speedup any run of this ablation confirmed at the top rung; " + on + " has no truth";
  return s;
}

subcommand register_ablate(CLI::App& app) {
  auto* cmd = app.add_subcommand(
      "ablate", "strategies x problems x seeds under equal budgets, as one Markdown table (--expect checks it)");
  cmd->footer(ablate_footer);
  auto arguments = std::make_shared<ablate_arguments>(*cmd);
  return {cmd, [arguments] { return run_ablate(arguments->finish()); }};
}

int run_ablate(ablate_options const& o) {
  // Everything the command line can get wrong is found before the first run.
  std::vector<ablation_subject> subjects;
  for (auto const& spec : o.problems) {
    auto s = make_subject(spec, o);
    for (auto const& other : subjects)
      if (other.label == s.label) throw usage_error(fmt::format("problem '{}' is given twice", s.label));
    subjects.push_back(std::move(s));
  }
  for (auto const& s : subjects)
    for (auto const& spec : o.strategies) {
      try {
        (void)registry().make(spec.name, s.prob, spec.options);
      } catch (error const& e) {
        throw usage_error(fmt::format("--strategies: '{}' on {}: {}", spec.canonical(), s.label, e.what()));
      }
    }

  // Read and opened before the first run: a long ablation does not end in a file it cannot read or write
  // (and --out may name the --expect file).
  std::optional<std::string> expected;
  if (o.expect) expected = read_text(*o.expect, "--expect");
  std::ofstream out_file;
  if (o.out) {
    out_file.open(*o.out, std::ios::binary | std::ios::trunc);
    if (!out_file) throw usage_error(fmt::format("--out: '{}' cannot be written", o.out->string()));
  }

  const bool draw = ::isatty(STDERR_FILENO) == 1;
  const std::size_t total = subjects.size() * o.strategies.size() * o.seeds;
  std::size_t done = 0;
  // runs[subject][strategy][seed - 1], and each strategy's rung names (for the spend column's order).
  std::vector<std::vector<std::vector<run_record>>> runs(subjects.size());
  std::vector<std::vector<std::vector<std::string>>> rung_names(subjects.size());
  for (std::size_t i = 0; i < subjects.size(); ++i) {
    for (auto const& spec : o.strategies) {
      std::vector<std::string> names;
      const auto pol = registry().make(spec.name, subjects[i].prob, spec.options);
      for (auto const& r : pol.ladder.rungs()) names.push_back(r.name);
      rung_names[i].push_back(std::move(names));
      auto& row = runs[i].emplace_back();
      for (std::uint64_t seed = 1; seed <= o.seeds; ++seed) {
        if (draw) {
          fmt::print(stderr, "\r[{}/{}] {} {} seed {}\x1b[K", ++done, total, subjects[i].label, spec.canonical(), seed);
          std::fflush(stderr);
        }
        row.push_back(run_one(subjects[i], spec, seed, o.limits));
      }
    }
  }
  if (draw) fmt::print(stderr, "\r\x1b[K");

  const std::string tol = percent(o.tolerance);
  std::vector<std::string> backends, strategy_names;
  for (auto const& s : subjects)
    if (std::find(backends.begin(), backends.end(), s.backend) == backends.end()) backends.push_back(s.backend);
  for (auto const& spec : o.strategies) strategy_names.push_back(spec.canonical());
  std::string text =
      fmt::format("kernelbrain ablate: backend {}, budget {}, seeds 1..{}, strategies {}, tolerance {}\n\n",
                  fmt::join(backends, ", "), o.budget_text, o.seeds, fmt::join(strategy_names, ", "), tol);
  text += fmt::format(
      "| problem | strategy | final best (median, min) | reached (k/N) | evals to {0} (median) | "
      "device s to {0} (median) | device s (mean) | compile s (mean) | spend by rung | rejects |\n",
      tol);
  text += "|---|---|---:|---:|---:|---:|---:|---:|---|---|\n";
  std::vector<std::string> notes;
  for (std::size_t i = 0; i < subjects.size(); ++i) {
    const auto best = best_of(subjects[i], runs[i]);
    notes.push_back(best_note(subjects[i], best));
    for (std::size_t j = 0; j < o.strategies.size(); ++j)
      text += table_row(subjects[i], o.strategies[j], runs[i][j], rung_names[i][j], best, o.tolerance) + "\n";
  }
  text += fmt::format(
      "\nfinal best: the final incumbent's quality over the best (median and min over the seeds).\n"
      "reached: runs whose incumbent, confirmed at the top rung, came within {0} of the best; evals and device s "
      "to {0}: when it first did\n(median over the seeds, a run that never did counting as never: '-' when more "
      "than half never did).\ndevice s: what the budget was charged. spend by rung: where the device seconds of "
      "all seeds went. rejects: by verdict, over all seeds.\n",
      tol);
  for (auto const& n : notes) text += "best of " + n + "\n";

  if (o.out) {
    out_file << text;
    out_file.close();
    if (!out_file) throw error("--out: cannot write " + o.out->string());
  }
  fmt::print("{}", text);
  std::fflush(stdout);
  if (expected && !matches_expected(text, *expected, *o.expect)) return exit_differs;
  return exit_ok;
}

}  // namespace kernelbrain::cli
