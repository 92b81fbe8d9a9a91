// The ablation harness (ablation/ablation.hpp): strategies x subjects x seeds under equal budgets, and the
// Markdown table of what they gave. Deterministic backends give the same table byte for byte.
#include "kernelbrain/ablation/ablation.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <any>
#include <cmath>
#include <cstdint>
#include <filesystem>
#include <kernelbrain/backends/builtin.hpp>  // the synthetic and replay backends ablations open problems with
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

namespace kernelbrain::ablation {

namespace {

/// An evaluator of a registered backend for a run (the device: the backend's default).
std::unique_ptr<evaluator> make_evaluator(problem const& prob, std::string const& backend, std::any context) {
  backend_request req;
  req.prob = &prob;
  req.context = std::move(context);
  return backends().make(backend, req);
}

/// The recording PROBLEM names: the file itself, or DIR/<name>.jsonl.gz (.jsonl) in --recordings DIR.
std::filesystem::path recording_file(std::string const& spec, std::optional<std::filesystem::path> const& dir) {
  namespace fs = std::filesystem;
  if (fs::is_regular_file(spec)) return spec;
  if (dir)
    for (char const* ext : {".jsonl.gz", ".jsonl"})
      if (fs::is_regular_file(*dir / (spec + ext))) return *dir / (spec + ext);
  throw error(
      fmt::format("problem '{}' is not a recording{}: the replay backend replays a recording file "
                  "(<name>.jsonl.gz, written by kernelbrain record)",
                  spec, dir ? fmt::format(" (nor {}/{}.jsonl.gz)", dir->string(), spec) : ""));
}

}  // namespace

subject make_subject(std::string const& spec, std::string const& backend,
                     std::optional<std::filesystem::path> const& recordings) {
  const std::string target = recordings ? recording_file(spec, recordings).string() : spec;
  const std::optional<opened_problem> opened = backends().open(target);
  if (opened) {
    if (!backend.empty() && backend != opened->backend)
      throw error(fmt::format("the {} backend needs a problem directory, not '{}' (a problem of the {} backend)",
                              backend, spec, opened->backend));
    return opened_subject(*opened, target);
  }
  if (recordings)
    throw error(fmt::format("--recordings DIR names recordings: '{}' is not one a backend replays", target));
  return measured_subject(spec, backend);
}

namespace {

// --- One run ------------------------------------------------------------------------------------------

/// Forwards to the backend, and splits the device seconds it spends by what spent them: a measurement at
/// a rung (the rung's name), the gate (inspect, build, check), the memory-safety tools ("sanitizer") or the
/// reference ("baseline"). The backend's
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
  [[nodiscard]] verdict assure(candidate const& c, std::uint64_t seed) override {
    return charged("sanitizer", [&] { return inner_.assure(c, seed); });
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

}  // namespace

run_record run_one(subject const& s, strategy_registry const& strategies, strategy const& strat, std::uint64_t seed,
                   budget const& limits) {
  auto backend = s.make_evaluator();
  metered_evaluator metered(*backend);
  run_watch watch;
  search_options so;
  so.seed = seed;
  so.limits = limits;
  so.order = completion_order::issue;
  so.observers.push_back(&watch);
  const auto r = search(s.prob, strategies.make(strat.name, s.prob, strat.options), metered, so);

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

namespace {

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

}  // namespace

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
  take("sanitizer", false);
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

namespace {

std::string reject_counts(std::vector<run_record> const& runs) {
  std::map<std::string, std::size_t> total;
  for (auto const& r : runs)
    for (auto const& [where, n] : r.rejects) total[where] += n;
  std::string out;
  for (auto const& [where, n] : total) out += fmt::format("{}{} {}", out.empty() ? "" : ", ", where, n);
  return out.empty() ? "-" : out;
}

/// The best of a subject: its truth, or the best measured speedup any of its runs confirmed at the top rung.
std::optional<double> best_of(subject const& s, std::vector<std::vector<run_record>> const& by_strategy) {
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

std::string table_row(subject const& s, strategy const& strat, std::vector<run_record> const& runs,
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
      "| {} | {} | {} | {}/{} | {} | {} | {:.3f} | {} | {} | {} |", s.label, strat.label,
      best ? fmt::format("{:.3f}, {:.3f}", median(ratios), *std::min_element(ratios.begin(), ratios.end()))
           : std::string("-"),
      reached, runs.size(), std::isfinite(e) ? fmt::format("{:.0f}", e) : std::string("-"),
      std::isfinite(d) ? fmt::format("{:.3f}", d) : std::string("-"), mean_device,
      all_compile && !runs.empty() ? fmt::format("{:.1f}", compile / n) : std::string("-"), spend_shares(spent, rungs),
      reject_counts(runs));
}

std::string best_note(subject const& s, std::optional<double> best) {
  if (!best) return fmt::format("{}: none (no run confirmed a candidate at the top rung: nothing to compare)", s.label);
  return fmt::format("{}: {:.3f} ({})", s.label, *best, s.truth_note);
}

std::vector<std::string> lines_of(std::string const& text) {
  std::vector<std::string> lines;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  return lines;
}

}  // namespace

// --- Subjects, by backend -----------------------------------------------------------------------------

subject opened_subject(opened_problem const& opened, std::string const& file) {
  subject s;
  s.label = opened.label;
  s.backend = opened.backend;
  s.prob = *opened.prob;
  // The evaluator may keep references to the problem and what the context points to: the lambda, held by
  // the subject, keeps them alive.
  s.make_evaluator = [opened]() -> std::unique_ptr<evaluator> {
    return make_evaluator(*opened.prob, opened.backend, opened.context);
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

subject measured_subject(std::string const& spec, std::string const& backend) {
  auto prob = std::make_shared<problem const>(load_problem(backends().problem_directory(spec, backend)));
  // The backend ablate runs it on: --backend, or the problem's own; one that runs problem directories.
  const std::string on = backend.empty() ? prob->backend : backend;
  if (!backends().traits(on).problem_files)
    throw error(fmt::format("ablate runs problem directories; the {} backend runs none ('{}'): use --backend {}", on,
                            prob->name, prob->backend));
  if (prob->backend != on)
    throw error(fmt::format("problem '{}' is written for the {} backend, not {}: use --backend {}", prob->name,
                            prob->backend, on, prob->backend));
  subject s;
  s.label = prob->name;
  s.backend = on;
  s.prob = *prob;
  s.make_evaluator = [prob, on] { return make_evaluator(*prob, on, {}); };
  s.truth_note =
      "measured: the best speedup any run of this ablation confirmed at the top rung; " + on + " has no truth";
  return s;
}

// --- The ablation -------------------------------------------------------------------------------------

results run(std::vector<subject> const& subjects, strategy_registry const& strategies, settings const& how,
            progress const& on_run) {
  const std::size_t total = subjects.size() * how.strategies.size() * how.seeds;
  std::size_t done = 0;
  results r;
  r.runs.resize(subjects.size());
  r.rung_names.resize(subjects.size());
  for (std::size_t i = 0; i < subjects.size(); ++i) {
    for (auto const& strat : how.strategies) {
      std::vector<std::string> names;
      const auto pol = strategies.make(strat.name, subjects[i].prob, strat.options);
      for (auto const& rg : pol.ladder.rungs()) names.push_back(rg.name);
      r.rung_names[i].push_back(std::move(names));
      auto& row = r.runs[i].emplace_back();
      for (std::uint64_t seed = 1; seed <= how.seeds; ++seed) {
        if (on_run) on_run(++done, total, subjects[i], strat, seed);
        row.push_back(run_one(subjects[i], strategies, strat, seed, how.limits));
      }
    }
  }
  return r;
}

std::string table(std::vector<subject> const& subjects, settings const& how, results const& r) {
  const std::string tol = percent(how.tolerance);
  std::vector<std::string> backend_names, strategy_names;
  for (auto const& s : subjects)
    if (std::find(backend_names.begin(), backend_names.end(), s.backend) == backend_names.end())
      backend_names.push_back(s.backend);
  for (auto const& strat : how.strategies) strategy_names.push_back(strat.label);
  std::string text =
      fmt::format("kernelbrain ablate: backend {}, budget {}, seeds 1..{}, strategies {}, tolerance {}\n\n",
                  fmt::join(backend_names, ", "), how.budget_text, how.seeds, fmt::join(strategy_names, ", "), tol);
  text += fmt::format(
      "| problem | strategy | final best (median, min) | reached (k/N) | evals to {0} (median) | "
      "device s to {0} (median) | device s (mean) | compile s (mean) | spend by rung | rejects |\n",
      tol);
  text += "|---|---|---:|---:|---:|---:|---:|---:|---|---|\n";
  std::vector<std::string> notes;
  for (std::size_t i = 0; i < subjects.size(); ++i) {
    const auto best = best_of(subjects[i], r.runs.at(i));
    notes.push_back(best_note(subjects[i], best));
    for (std::size_t j = 0; j < how.strategies.size(); ++j)
      text +=
          table_row(subjects[i], how.strategies[j], r.runs.at(i).at(j), r.rung_names.at(i).at(j), best, how.tolerance) +
          "\n";
  }
  text += fmt::format(
      "\nfinal best: the final incumbent's quality over the best (median and min over the seeds).\n"
      "reached: runs whose incumbent, confirmed at the top rung, came within {0} of the best; evals and device s "
      "to {0}: when it first did\n(median over the seeds, a run that never did counting as never: '-' when more "
      "than half never did).\ndevice s: what the budget was charged. spend by rung: where the device seconds of "
      "all seeds went. rejects: by verdict, over all seeds.\n",
      tol);
  for (auto const& n : notes) text += "best of " + n + "\n";
  return text;
}

std::optional<table_difference> compare_tables(std::string const& expected, std::string const& got) {
  if (expected == got) return std::nullopt;
  const auto want = lines_of(expected), have = lines_of(got);
  table_difference d;
  for (std::size_t i = 0; i < std::max(want.size(), have.size()); ++i) {
    std::optional<std::string> w, h;
    if (i < want.size()) w = want[i];
    if (i < have.size()) h = have[i];
    if (w == h) continue;
    ++d.lines;
    d.diff += fmt::format("@@ line {}\n- {}\n+ {}\n", i + 1, w ? *w : "(no line)", h ? *h : "(no line)");
  }
  if (d.lines == 0)  // the lines agree: line ends or a last newline differ
    d.diff = "(every line agrees: the line endings or the final newline differ)\n";
  return d;
}

}  // namespace kernelbrain::ablation
