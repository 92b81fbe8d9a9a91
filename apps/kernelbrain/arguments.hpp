// kernelbrain CLI: what the command line may say, and how each value is checked.
//
// Each parse_* function turns one option's text into its value or throws usage_error with a message
// that says what is wrong and what to write instead (without the option's name: CLI11 prefixes it,
// e.g. "--budget: '300' has no unit: ..."). The same functions back the CLI11 validators, so a value
// that passed its check converts without error after parsing.
#pragma once
#include <algorithm>
#include <cstdint>
#include <filesystem>
#include <kernelbrain/search.hpp>
#include <kernelbrain/strategies/all.hpp>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>
#include "model_options.hpp"

namespace CLI {  // NOLINT(readability-identifier-naming): CLI11's namespace
class App;
class Option;
}  // namespace CLI

namespace kernelbrain::cli {

/// Exit codes (docs/cli.md): 0 done; 1 an internal error (a bug or the machine, not the command line);
/// 2 every error the user can fix: bad arguments, an unknown strategy or backend, a bad budget, a journal
/// that does not exist, already exists or records another run; 75 (EX_TEMPFAIL) the search is suspended,
/// waiting for exchange answers: run the same command with --resume once they exist.
inline constexpr int exit_ok = 0;
inline constexpr int exit_internal = 1;
inline constexpr int exit_usage = 2;
inline constexpr int exit_rejected = 3;  ///< eval: the candidate was rejected
inline constexpr int exit_suspended = 75;
inline constexpr int exit_model_failed = 4;  ///< tune: the model endpoint failed (a permanent error, or many in a row)

/// A mistake in the command line found after parsing (e.g. --focus on a problem without shapes);
/// main prints it and exits with exit_usage, like every kernelbrain::error.
struct usage_error : error {
  using error::error;
};

/// Every strategy that ships (kernelbrain/strategies/all.hpp), built once.
[[nodiscard]] strategy_registry const& registry();

/// "sha:eta=4,bracket_size=27" -> name and options. The canonical text (options sorted) is what the
/// journal header records, so a resumed run must use the same strategy with the same options.
struct strategy_spec {
  std::string name = "default";
  strategy_options options;
  [[nodiscard]] std::string canonical() const;
};

/// A strategy name known to registry(), optionally followed by ":key=value,...".
[[nodiscard]] strategy_spec parse_strategy(std::string const& text);

/// A whole number (0 or more) that fits in 64 bits; `example` is a valid value for the message.
[[nodiscard]] std::uint64_t parse_count(std::string_view text, std::string_view example);

/// "120s", "2m", "1h": (simulated) device time; "500evals": evaluations; "2Mtokens": LLM tokens; "$5": LLM
/// cost. Several limits, comma-separated ("10m,500evals,$5"); each axis at most once. A bare number is
/// refused: seconds and evaluations differ by orders of magnitude, so guessing would be a trap.
[[nodiscard]] budget parse_budget(std::string_view text);

/// A positive number of wall-clock seconds.
[[nodiscard]] double parse_wall_seconds(std::string const& text);

/// "a,b,c": benchmark shape names, none empty.
[[nodiscard]] std::vector<std::string> parse_focus(std::string const& text);

/// cuda, host or synthetic.
[[nodiscard]] std::string parse_backend(std::string const& text);

/// Everything `kernelbrain tune` was asked to do, converted and checked.
struct tune_options {
  std::string problem;
  std::string backend;  ///< empty: the problem's own
  strategy_spec strategy;
  budget limits;  ///< from --budget and --wall
  std::string budget_text;
  std::optional<std::filesystem::path> journal;
  bool resume = false;
  std::uint64_t seed = 1;
  std::optional<bool> progress;  ///< unset: draw when stderr is a terminal
  unsigned slow_eval_ms = 0;     ///< test hook (--slow-eval-ms, hidden), see tune.cpp's slowed_evaluator
  std::optional<std::filesystem::path> best_out;
  std::vector<std::string> focus;  ///< benchmark shapes to tune for (empty: all)
  model_options model;             ///< the LLM, if any (--model, --exchange, --recorded-answers, ...)
  // -- the evaluation pool (docs/scaling.md)
  std::vector<std::string>
      devices;                      ///< --devices: CUDA devices (CUDA_VISIBLE_DEVICES values); empty: every visible one
  unsigned workers_per_device = 1;  ///< --workers-per-device: pool members per device (they take turns timing)
  std::size_t in_flight = 4;        ///< --in-flight: search_options::max_in_flight
  bool mpi = false;                 ///< --mpi: one search over every rank of an MPI job
  double mpi_lost_after = 60;       ///< --mpi-lost-after: seconds of silence before a rank is given up
  bool pytorch = true;              ///< time PyTorch beside the reference where the backend can (--no-pytorch: off)
  /// Seconds the PyTorch measurement may take: 600, or under --wall a third of it (at least 5), so that
  /// the wall limit holds with the search still getting most of it.
  [[nodiscard]] double pytorch_timeout() const {
    return limits.wall_seconds > 0 ? std::min(600.0, std::max(5.0, limits.wall_seconds / 3)) : 600.0;
  }
};

/// "0,1" or "all" (empty: every visible device); entries as CUDA_VISIBLE_DEVICES takes them.
[[nodiscard]] std::vector<std::string> parse_devices(std::string const& text);

/// Adds tune's positional argument and options to `cmd`; once CLI11 has parsed the command line,
/// `finish` (called by run) fills `out` from what was given. Every option's value is validated
/// during parsing, so CLI11 reports a bad value as "--option: what is wrong".
class tune_arguments {
 public:
  explicit tune_arguments(CLI::App& cmd);
  tune_arguments(tune_arguments const&) = delete;  // CLI11 holds references to the members
  tune_arguments& operator=(tune_arguments const&) = delete;
  [[nodiscard]] tune_options finish() const;

 private:
  std::string problem_, backend_, strategy_ = "default", budget_, journal_, wall_, best_out_, focus_;
  std::string seed_ = "1", slow_eval_ms_ = "0";
  std::string devices_ = "all", workers_per_device_ = "1", in_flight_ = "4", mpi_lost_after_ = "60";
  bool resume_ = false, mpi_ = false, no_pytorch_ = false;
  CLI::App* cmd_;
  std::unique_ptr<model_arguments> model_;  ///< made last: its options take the defaults set first
  CLI::Option* progress_option_ = nullptr;
  CLI::Option* no_progress_option_ = nullptr;
};

}  // namespace kernelbrain::cli
