// The ablation harness (`kernelbrain ablate`, docs/cli.md): every strategy on every subject (one problem on
// one backend) with seeds 1..N under the same budget, as one Markdown table: how good each strategy's final
// incumbent is, how often and how soon its confirmed incumbent came within a tolerance of the best, and
// where its device time went. Deterministic backends (synthetic, replay) give the same table byte for byte
// (no wall-clock number is in it), so compare_tables can hold an ablation to a committed one.
//
// Each run gets a fresh evaluator from the subject's make_evaluator, so that nothing a backend keeps (a
// compile cache, a worker's warm state, a replay's draws) leaks from one run into the next. Where the
// backend knows the truth (the synthetic landscape's optimum, a recording's noise-free medians) the table
// compares the strategies' incumbents by it; elsewhere by the measured speedups the runs confirmed.
//
// Compiled into kernelbrain::tools (src/tools/ablation.cpp): link it to use these.
#pragma once
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>
#include "kernelbrain/backends/registry.hpp"
#include "kernelbrain/core/budget.hpp"
#include "kernelbrain/core/candidate.hpp"
#include "kernelbrain/core/evaluator.hpp"
#include "kernelbrain/core/problem.hpp"
#include "kernelbrain/core/registry.hpp"

namespace kernelbrain::ablation {

/// One problem on one backend.
struct subject {
  std::string label;                                           ///< the problem's name in the table
  std::string backend;                                         ///< synthetic, replay, host or cuda
  problem prob;                                                ///< what the strategies search
  std::function<std::unique_ptr<evaluator>()> make_evaluator;  ///< a fresh one per run
  /// Ground truth, where the backend has one: a candidate's true quality as a speedup (higher is better;
  /// nullopt: it fails), and the best of any candidate. Both empty: no truth (host, cuda). Called with
  /// the evaluator make_evaluator gave the run, after the run.
  std::function<std::optional<double>(evaluator&, candidate const&)> true_speedup;
  std::function<std::optional<double>(evaluator&)> best_true_speedup;
  /// Compile seconds the run would have cost (replay: the recorded compiler times); empty: not known.
  std::function<std::optional<double>(evaluator&)> compile_seconds;
  /// What "best" is, for the note under the table.
  std::string truth_note;
};

/// A problem a backend opened itself (backend_registry::open: a synthetic landscape, whose known optimum
/// is the truth; a recording (`file`), whose best recorded point is).
[[nodiscard]] subject opened_subject(opened_problem const& opened, std::string const& file);
/// A problem directory or built-in name (backends().problem_directory), measured on `backend` ("" = the
/// problem's own), a backend that runs problem files: no truth.
[[nodiscard]] subject measured_subject(std::string const& spec, std::string const& backend);
/// One PROBLEM of `kernelbrain ablate`: a problem a backend opens itself (synthetic:<seed>, a recording;
/// with `recordings`, a recording's name looked up as DIR/<name>.jsonl.gz or .jsonl), else a problem
/// directory on `backend` (or its own). Throws kernelbrain::error for what does not fit.
[[nodiscard]] subject make_subject(std::string const& spec, std::string const& backend,
                                   std::optional<std::filesystem::path> const& recordings);

/// One row of the table: a strategy of the registry the runs use, with its options.
struct strategy {
  std::string name;
  strategy_options options;
  std::string label;  ///< how the table names it: the canonical spec, "sha:eta=4"
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
  std::map<std::string, double> spent;         ///< device seconds by where they went: a rung, "gate", "baseline"
  std::map<std::string, std::size_t> rejects;  ///< rejected evaluations by verdict
};

/// One search of `s` with `strat` (made by `strategies`) and `seed` under `limits`: a fresh evaluator,
/// evaluations applied in issue order, no journal.
[[nodiscard]] run_record run_one(subject const& s, strategy_registry const& strategies, strategy const& strat,
                                 std::uint64_t seed, budget const& limits);

/// An ablation: every strategy on every subject with seeds 1..seeds, each under `limits`.
struct settings {
  std::vector<strategy> strategies;  ///< one row each, in this order
  std::uint64_t seeds = 10;
  budget limits;
  std::string budget_text;  ///< how the table's first line names the budget, "300evals"
  double tolerance = 0.05;  ///< "reached": within this fraction of the best
};

/// The runs of an ablation: runs[subject][strategy][seed - 1], and each strategy's rung names.
struct results {
  std::vector<std::vector<std::vector<run_record>>> runs;
  std::vector<std::vector<std::vector<std::string>>> rung_names;
};

/// Called before each run: (runs started, runs in all, subject, strategy, seed).
using progress = std::function<void(std::size_t, std::size_t, subject const&, strategy const&, std::uint64_t)>;

/// Runs every strategy on every subject with every seed, in that nesting order.
[[nodiscard]] results run(std::vector<subject> const& subjects, strategy_registry const& strategies,
                          settings const& how, progress const& on_run = {});

/// The Markdown table of the runs, with the notes under it (what the columns mean, each subject's best).
[[nodiscard]] std::string table(std::vector<subject> const& subjects, settings const& how, results const& r);

/// "gate 4% smoke 10% screen 30% confirm 56%": where device seconds went, in whole percents that add up
/// to 100 (largest remainders); baseline first where it is spent, then the gate and `rungs` in order, then
/// anything else. "-" when nothing was spent.
[[nodiscard]] std::string spend_shares(std::map<std::string, double> const& spent,
                                       std::vector<std::string> const& rungs);

/// Where a table differs from the expected one: how many lines, and each as "@@ line N\n- expected\n+ got\n".
struct table_difference {
  std::size_t lines = 0;
  std::string diff;
};
/// Nothing when they are the same text.
[[nodiscard]] std::optional<table_difference> compare_tables(std::string const& expected, std::string const& got);

}  // namespace kernelbrain::ablation
