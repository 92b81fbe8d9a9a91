// kernelbrain ablate: what one problem on one backend gives the ablation (ablate.cpp).
//
// An ablation runs every strategy on every subject with seeds 1..N under the same budget. Each run gets
// a fresh evaluator from make_evaluator, so that nothing a backend keeps (a compile cache, a worker's
// warm state, a replay's draws) leaks from one run into the next. Where the backend knows the truth (the
// synthetic landscape's optimum, a recording's noise-free medians) the table compares the strategies'
// incumbents by it; elsewhere by the measured speedups the runs confirmed.
#pragma once
#include <filesystem>
#include <functional>
#include <kernelbrain/backends/registry.hpp>
#include <kernelbrain/core/candidate.hpp>
#include <kernelbrain/core/evaluator.hpp>
#include <kernelbrain/core/problem.hpp>
#include <memory>
#include <optional>
#include <string>

namespace kernelbrain::cli {

/// One problem on one backend.
struct ablation_subject {
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
[[nodiscard]] ablation_subject opened_subject(opened_problem const& opened, std::string const& file);
/// A problem directory or built-in name, measured on a backend that runs problem files: no truth.
[[nodiscard]] ablation_subject measured_subject(std::string const& spec, std::string const& backend);

}  // namespace kernelbrain::cli
