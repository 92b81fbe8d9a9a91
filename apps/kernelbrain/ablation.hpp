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

/// "synthetic" or "synthetic:<landscape seed>": the landscape's known optimum is the truth.
[[nodiscard]] ablation_subject synthetic_subject(std::string const& spec);
/// A problem directory or built-in name, measured on the host or cuda backend: no truth.
[[nodiscard]] ablation_subject measured_subject(std::string const& spec, std::string const& backend);
/// A recording (…/<name>.jsonl.gz) replayed against the built-in problem it was recorded from (a CUDA
/// recording: examples/cuda_problems/<name>; see recorded_problem in commands.hpp).
[[nodiscard]] ablation_subject replay_subject(std::filesystem::path const& recording_file);

}  // namespace kernelbrain::cli
