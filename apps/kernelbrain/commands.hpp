// kernelbrain CLI: the subcommands.
//
// Each subcommand lives in its own .cpp file and has two functions declared here:
//   register_X(CLI::App& app)  adds the subcommand, its options and their checks to the app, and
//                              returns it with the function main calls when the user chose it;
//   run_X(...)                 does the work, given the converted options.
// main.cpp calls every register_X before parsing and runs the one subcommand that was chosen.
//
// Adding a subcommand (the ones to come: ablate, report, export): write X.cpp with register_X and
// run_X, declare both here, call register_X in main.cpp, add X.cpp to apps/kernelbrain/CMakeLists.txt,
// document it in docs/cli.md and test it in tests/test_cli.cpp. Options shared by several
// subcommands (budgets, strategy specs, ...) are parsed and checked in arguments.hpp.
#pragma once
#include <cstdint>
#include <filesystem>
#include <functional>
#include <memory>
#include <string>
#include "arguments.hpp"

namespace kernelbrain {
class evaluator;
struct problem;
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

/// Shared by tune and eval: a problem directory (the argument itself, or a built-in problem's), and the
/// evaluator of a host or cuda problem (usage_error when the problem is written for another backend).
[[nodiscard]] std::filesystem::path problem_directory(std::string const& spec, std::string const& backend);
[[nodiscard]] std::unique_ptr<evaluator> make_backend_evaluator(problem const& prob, std::string const& backend);

/// list-strategies: every registered strategy with its description (list_strategies.cpp).
[[nodiscard]] subcommand register_list_strategies(CLI::App& app);
int run_list_strategies();

/// prompts: write the shipped prompt templates to a folder, or check edited ones (prompts.cpp).
[[nodiscard]] subcommand register_prompts(CLI::App& app);
int run_prompts(std::string const& write, std::string const& check);

}  // namespace kernelbrain::cli
