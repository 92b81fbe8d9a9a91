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
#include <kernelbrain/ablation/ablation.hpp>
#include <limits>
#include <map>
#include <memory>
#include <optional>
#include <sstream>
#include <string>
#include <string_view>
#include <utility>
#include <vector>
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

/// A file's whole text (--expect), or a usage error naming the option.
std::string read_text(std::filesystem::path const& file, std::string_view option) {
  std::ifstream in(file, std::ios::binary);
  std::ostringstream text;
  text << in.rdbuf();
  if (!in) throw usage_error(fmt::format("{}: '{}' cannot be read", option, file.string()));
  return text.str();
}

}  // namespace

subcommand register_ablate(CLI::App& app) {
  auto* cmd = app.add_subcommand(
      "ablate", "strategies x problems x seeds under equal budgets, as one Markdown table (--expect checks it)");
  cmd->footer(ablate_footer);
  auto arguments = std::make_shared<ablate_arguments>(*cmd);
  return {cmd, [arguments] { return run_ablate(arguments->finish()); }};
}

int run_ablate(ablate_options const& o) {
  // Everything the command line can get wrong is found before the first run.
  std::vector<ablation::subject> subjects;
  for (auto const& spec : o.problems) {
    auto s = ablation::make_subject(spec, o.backend, o.recordings);
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

  ablation::settings how;
  for (auto const& spec : o.strategies) how.strategies.push_back({spec.name, spec.options, spec.canonical()});
  how.seeds = o.seeds;
  how.limits = o.limits;
  how.budget_text = o.budget_text;
  how.tolerance = o.tolerance;
  const bool draw = ::isatty(STDERR_FILENO) == 1;
  ablation::progress on_run;
  if (draw)
    on_run = [](std::size_t done, std::size_t total, ablation::subject const& s, ablation::strategy const& strat,
                std::uint64_t seed) {
      fmt::print(stderr, "\r[{}/{}] {} {} seed {}\x1b[K", done, total, s.label, strat.label, seed);
      std::fflush(stderr);
    };
  const auto runs = ablation::run(subjects, registry(), how, on_run);
  if (draw) fmt::print(stderr, "\r\x1b[K");
  const std::string text = ablation::table(subjects, how, runs);

  if (o.out) {
    out_file << text;
    out_file.close();
    if (!out_file) throw error("--out: cannot write " + o.out->string());
  }
  fmt::print("{}", text);
  std::fflush(stdout);
  if (expected) {
    if (const auto d = ablation::compare_tables(*expected, text)) {
      fmt::print(stderr, "kernelbrain: ablate: the table differs from {} in {} line{} (- expected, + got):\n{}",
                 o.expect->string(), d->lines, d->lines == 1 ? "" : "s", d->diff);
      return exit_differs;
    }
  }
  return exit_ok;
}

}  // namespace kernelbrain::cli
