// kernelbrain CLI: the subcommands.
//
// Each subcommand lives in its own .cpp file and has two functions declared here:
//   register_X(CLI::App& app)  adds the subcommand, its options and their checks to the app, and
//                              returns it with the function main calls when the user chose it;
//   run_X(...)                 does the work, given the converted options.
// main.cpp calls every register_X before parsing and runs the one subcommand that was chosen.
//
// Adding a subcommand: write X.cpp with register_X and
// run_X, declare both here, call register_X in main.cpp, add X.cpp to apps/kernelbrain/CMakeLists.txt,
// document it in docs/cli.md and test it in tests/test_cli.cpp. Options shared by several
// subcommands (budgets, strategy specs, ...) are parsed and checked in arguments.hpp.
#pragma once
#include <any>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <kernelbrain/backends/registry.hpp>
#include <memory>
#include <optional>
#include <string>
#include <vector>
#include "arguments.hpp"

namespace kernelbrain {
class evaluator;
struct problem;
struct recording;
}  // namespace kernelbrain

namespace CLI {
class App;
}

namespace kernelbrain::cli {

/// A registered subcommand: its CLI11 app (main asks whether the user chose it) and how to run it.
/// `run` returns the exit code; it throws kernelbrain::error for what the user can fix (exit 2).
struct subcommand {
  CLI::App* app = nullptr;
  std::function<int()> run;
};

/// tune: search a problem's kernel space within a budget, with a journal to resume from (tune.cpp).
[[nodiscard]] subcommand register_tune(CLI::App& app);
int run_tune(tune_options const& options);

/// eval: one candidate through the gate and every shape, with its verdict and timings (eval.cpp).
[[nodiscard]] subcommand register_eval(CLI::App& app);
struct eval_options {
  std::string problem;    ///< a problem directory or a built-in problem's name
  std::string candidate;  ///< a source file, or a reply (.md: fenced source and launch plan)
  std::string plan;       ///< cuda: the launch plan's JSON file, when the candidate is bare source
  std::string backend;    ///< "" = the problem's
  std::uint64_t seed = 1;
  bool no_pytorch = false;  ///< --no-pytorch: do not time PyTorch beside the reference
};
int run_eval(eval_options const& options);

/// check: a problem before any search: the reference against its floors, the gate, the ladder, the seed
/// and catalogue defaults gated (check.cpp).
[[nodiscard]] subcommand register_check(CLI::App& app);
struct check_options {
  std::string problem;
  std::string backend;
  bool no_catalogue = false;
};
int run_check(check_options const& options);

/// record: sweep a problem's template space on a real backend into a recording for replay (record.cpp).
[[nodiscard]] subcommand register_record(CLI::App& app);

/// fidelity: how well each shape and rung of the standard ladder predicts the top rung, on recordings (fidelity.cpp).
[[nodiscard]] subcommand register_fidelity(CLI::App& app);

/// ablate: strategies x problems x seeds under equal budgets, as one Markdown table; --expect compares it
/// with a committed one (ablate.cpp; the harness: kernelbrain/ablation/ablation.hpp).
[[nodiscard]] subcommand register_ablate(CLI::App& app);
struct ablate_options {
  std::vector<std::string> problems;      ///< as for tune; for the replay backend, recordings
  std::string backend;                    ///< "" = each problem's own
  std::vector<strategy_spec> strategies;  ///< one row each, in this order
  std::uint64_t seeds = 10;               ///< every run of a row has a seed of 1..seeds
  budget limits;                          ///< every run's; a device-time or evaluation limit
  std::string budget_text = "300evals";
  double tolerance = 0.05;                          ///< "reached": within this fraction of the best
  std::optional<std::filesystem::path> recordings;  ///< replay: where problem names are looked up
  std::optional<std::filesystem::path> out;         ///< also write the table here
  std::optional<std::filesystem::path> expect;      ///< compare the table with this file's (exit 1 if it differs)
};
int run_ablate(ablate_options const& options);

/// Shared by tune and eval: a problem directory (the argument itself, or a built-in problem's: the
/// backend's own folders first, backend_registry::problem_roots), and an evaluator of a registered
/// backend (usage_error when the problem is written for another backend); `device`: one of the
/// backend's devices (empty: its default); `context`: backend_request::context; `recording`: a sweep.
[[nodiscard]] std::filesystem::path problem_directory(std::string const& spec, std::string const& backend);
/// The backend `command` runs the loaded problem `prob` on: `asked` (--backend) or the problem's own;
/// usage_error for a backend that runs no problem directories.
[[nodiscard]] std::string problem_backend(problem const& prob, std::string const& asked, std::string const& command);
/// Gives the registry the folders of the built-in problems (installed, and the source tree's): main calls it.
void add_builtin_problem_roots();
[[nodiscard]] std::unique_ptr<evaluator> make_backend_evaluator(problem const& prob, std::string const& backend,
                                                                std::string const& device = {}, std::any context = {},
                                                                bool recording = false, bool pytorch = false,
                                                                double pytorch_timeout = 600);

/// report: one self-contained HTML page (plots, lineage, candidates, best source) from journals (report.cpp).
[[nodiscard]] subcommand register_report(CLI::App& app);

/// export: the best kernel per shape of a journal or best.json as standalone CUDA + C++ header and a
/// PyTorch module (export.cpp).
[[nodiscard]] subcommand register_export(CLI::App& app);

/// adopt: a model-written kernel of a journal as a fixed template of a problem's catalogue, with its
/// provenance (adopt.cpp).
[[nodiscard]] subcommand register_adopt(CLI::App& app);

/// list-strategies: every registered strategy with its description (list_strategies.cpp).
[[nodiscard]] subcommand register_list_strategies(CLI::App& app);
[[nodiscard]] subcommand register_list_backends(CLI::App& app);
int run_list_strategies();

/// prompts: write the shipped prompt templates to a folder, or check edited ones (prompts.cpp).
[[nodiscard]] subcommand register_prompts(CLI::App& app);
int run_prompts(std::string const& write, std::string const& check);

}  // namespace kernelbrain::cli
