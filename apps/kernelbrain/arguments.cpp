// kernelbrain CLI: option definitions and the checks behind them.
#include "arguments.hpp"

#include <fmt/format.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdlib>
#include <functional>
#include <system_error>
#include <utility>
#include "validators.hpp"

namespace kernelbrain::cli {

strategy_registry const& registry() {
  // With an empty model setup: the model-only strategies are listed and checked, and refuse to run
  // until --model, --exchange or --recorded-answers gives a client (run_tune builds the real one).
  static const strategy_registry r = builtin_strategies(std::make_shared<model_setup const>());
  return r;
}

namespace {

std::string known_strategies() {
  std::string known;
  for (auto const& n : registry().names()) known += (known.empty() ? "" : ", ") + n;
  return known;
}

}  // namespace

std::string strategy_spec::canonical() const {
  std::string out = name;
  char sep = ':';
  for (auto const& [k, v] : options.values) {
    out += sep;
    out += k + "=" + v;
    sep = ',';
  }
  return out;
}

strategy_spec parse_strategy(std::string const& text) {
  strategy_spec s;
  const auto colon = text.find(':');
  s.name = text.substr(0, colon);
  if (!registry().contains(s.name))
    throw usage_error(fmt::format("unknown strategy '{}': known strategies are {} (see kernelbrain list-strategies)",
                                  s.name, known_strategies()));
  if (colon != std::string::npos) s.options = strategy_options::parse(std::string_view(text).substr(colon + 1));
  return s;
}

std::uint64_t parse_count(std::string_view text, std::string_view example) {
  std::uint64_t v = 0;
  const auto r = std::from_chars(text.data(), text.data() + text.size(), v);
  if (text.empty() || r.ec != std::errc{} || r.ptr != text.data() + text.size())
    throw usage_error(fmt::format("'{}' is not a whole number {}: use e.g. {}", text,
                                  r.ec == std::errc::result_out_of_range ? "that fits in 64 bits" : "(0 or more)",
                                  example));
  return v;
}

namespace {

/// One limit of --budget ("120s", "500evals", "2Mtokens", "$5") added to `b`.
void parse_one_limit(std::string_view whole, std::string_view text, budget& b) {
  constexpr char const* units =
      "s, m or h (device time), evals (evaluations), cands (candidates proposed, model exchanges that gave none "
      "included), answers (prompts the model answered), tokens (LLM tokens; k and M allowed: 2Mtokens) or a cost "
      "written $5";
  const bool cost = text.starts_with('$');
  if (cost) text.remove_prefix(1);
  const auto unit_at = text.find_first_not_of("0123456789.");
  const auto number = text.substr(0, unit_at);
  auto unit = unit_at == std::string_view::npos ? std::string_view{} : text.substr(unit_at);
  if (number.empty())
    throw usage_error(fmt::format("'{}' does not start with a number: use e.g. --budget 120s, 2m or 500evals", whole));
  if (unit.empty() && !cost)
    throw usage_error(fmt::format(
        "'{0}' has no unit: write {0}s (device seconds), {0}m (minutes), {0}evals (evaluations), {0}tokens or ${0}",
        text));
  if (unit == "evals") {
    if (b.evaluations != 0) throw usage_error(fmt::format("'{}' gives an evaluation limit twice", whole));
    b.evaluations = parse_count(number, "--budget 500evals");
    if (b.evaluations == 0) throw usage_error(fmt::format("'{}' allows no evaluation: give at least 1evals", whole));
    return;
  }
  if (unit == "cands") {
    if (b.candidates != 0) throw usage_error(fmt::format("'{}' gives a candidate limit twice", whole));
    b.candidates = parse_count(number, "--budget 200cands");
    if (b.candidates == 0) throw usage_error(fmt::format("'{}' allows no candidate: give at least 1cands", whole));
    return;
  }
  if (unit == "answers") {
    if (b.llm_answers != 0) throw usage_error(fmt::format("'{}' gives a model-answer limit twice", whole));
    b.llm_answers = parse_count(number, "--budget 40answers");
    if (b.llm_answers == 0) throw usage_error(fmt::format("'{}' allows no answer: give at least 1answers", whole));
    return;
  }
  double value = 0;
  const auto r = std::from_chars(number.data(), number.data() + number.size(), value);
  if (r.ec != std::errc{} || r.ptr != number.data() + number.size() || !std::isfinite(value))
    throw usage_error(fmt::format("'{}': '{}' is not a number: use e.g. --budget 120s", whole, number));
  if (!(value > 0)) throw usage_error(fmt::format("'{}' is zero: give a positive amount", whole));
  if (cost) {
    if (!unit.empty()) throw usage_error(fmt::format("'{}': a cost is written $5 (no unit after it)", whole));
    if (b.llm_cost != 0) throw usage_error(fmt::format("'{}' gives a cost limit twice", whole));
    b.llm_cost = value;
    return;
  }
  if (unit.ends_with("tokens")) {
    const auto scale = unit.substr(0, unit.size() - 6);
    double mult = 1;
    if (scale == "k")
      mult = 1e3;
    else if (scale == "M")
      mult = 1e6;
    else if (!scale.empty())
      throw usage_error(fmt::format("'{}': unknown unit '{}': use tokens, ktokens or Mtokens", whole, unit));
    if (b.llm_tokens != 0) throw usage_error(fmt::format("'{}' gives a token limit twice", whole));
    b.llm_tokens = static_cast<std::uint64_t>(std::ceil(value * mult));
    return;
  }
  double seconds = 0;
  if (unit == "s")
    seconds = value;
  else if (unit == "m")
    seconds = value * 60;
  else if (unit == "h")
    seconds = value * 3600;
  else
    throw usage_error(fmt::format("'{}': unknown unit '{}': use {}", whole, unit, units));
  if (b.device_seconds != 0) throw usage_error(fmt::format("'{}' gives a device-time limit twice", whole));
  b.device_seconds = seconds;
}

}  // namespace

budget parse_budget(std::string_view text) {
  budget b;
  if (text.empty()) throw usage_error("'' does not start with a number: use e.g. --budget 120s, 2m or 500evals");
  for (std::size_t at = 0; at <= text.size();) {
    const auto comma = std::min(text.find(',', at), text.size());
    const auto part = text.substr(at, comma - at);
    if (part.empty()) throw usage_error(fmt::format("'{}': an empty limit between commas", text));
    parse_one_limit(text, part, b);
    at = comma + 1;
  }
  return b;
}

double parse_wall_seconds(std::string const& text) {
  char* end = nullptr;
  const double w = std::strtod(text.c_str(), &end);
  if (text.empty() || !end || *end || !(w > 0) || !std::isfinite(w))
    throw usage_error(fmt::format("'{}': give a positive number of seconds", text));
  return w;
}

namespace {
/// "a,b,,c" -> {"a", "b", "", "c"}: the items between commas, as written.
std::vector<std::string> split_commas(std::string const& text) {
  std::vector<std::string> items;
  for (std::size_t b = 0; b <= text.size();) {
    const auto e = std::min(text.find(',', b), text.size());
    items.push_back(text.substr(b, e - b));
    b = e + 1;
  }
  return items;
}
}  // namespace

std::vector<std::string> parse_focus(std::string const& text) {
  auto shapes = split_commas(text);
  if (std::find(shapes.begin(), shapes.end(), std::string{}) != shapes.end())
    throw usage_error(fmt::format("'{}': give shape names separated by commas", text));
  return shapes;
}

std::string parse_backend(std::string const& text) {
  if (backends().contains(text)) return text;
  throw usage_error(fmt::format("unknown backend '{}': this build has {}", text, backends().names_text()));
}

std::vector<std::string> parse_devices(std::string const& text) {
  if (text == "all") return {};
  std::vector<std::string> out;
  for (auto item : split_commas(text)) {
    const auto first = item.find_first_not_of(" \t");
    const auto last = item.find_last_not_of(" \t");
    item = first == std::string::npos ? std::string{} : item.substr(first, last - first + 1);
    if (item.empty())
      throw usage_error(
          fmt::format("'{}' has an empty entry: write device indices or UUIDs separated by commas "
                      "(--devices 0,1), or all",
                      text));
    if (std::find(out.begin(), out.end(), item) != out.end())
      throw usage_error(
          fmt::format("'{}' names device {} twice: for several workers on one device use "
                      "--workers-per-device",
                      text, item));
    out.push_back(std::move(item));
  }
  return out;
}

tune_arguments::tune_arguments(CLI::App& cmd) : cmd_(&cmd) {
  // A repeated option takes its last value (as the hand-written parser did), so that a script can
  // append options to a command line to override its defaults.
  cmd.option_defaults()->multi_option_policy(CLI::MultiOptionPolicy::TakeLast);

  cmd.add_option("problem", problem_,
                 "a problem directory (holding problem.json), a built-in problem's name\n"
                 "(softmax, rmsnorm, matvec, ...), or synthetic / synthetic:<landscape seed>")
      ->required()
      ->type_name("PROBLEM");
  cmd.add_option("--backend", backend_,
                 "where candidates run: cuda (NVRTC + the driver API, a worker process per\n"
                 "GPU), host (C++ on this CPU, in isolated worker processes), synthetic (a\n"
                 "simulated cost landscape); default: the problem's own backend")
      ->type_name("NAME")
      ->check(checked_by(parse_backend));
  cmd.add_option("--strategy", strategy_,
                 fmt::format("search strategy (default: default), one of:\n{}\n"
                             "(see kernelbrain list-strategies). Options follow a colon:\n"
                             "--strategy sha:eta=4,bracket_size=27",
                             known_strategies()))
      ->type_name("NAME[:OPTS]")
      ->check(checked_by(parse_strategy));
  cmd.add_option("--budget", budget_,
                 "how much to spend: 120s, 2m or 1h of (simulated) device time,\n"
                 "500evals (evaluations of a candidate at a fidelity rung), 2Mtokens (LLM\n"
                 "tokens), $5 (LLM cost, in the unit of --llm-price); several at once,\n"
                 "comma-separated (10m,1Mtokens): the first one spent stops the search")
      ->required()
      ->type_name("AMOUNT")
      ->check(checked_by(parse_budget));
  cmd.add_option("--seed", seed_, "seed of every random choice (default 1): same seed, same search")
      ->type_name("N")
      ->check(checked_by([](std::string const& t) { return parse_count(t, "--seed 3"); }));
  auto* journal = cmd.add_option("--journal", journal_, "write an append-only JSONL journal of the run to FILE")
                      ->type_name("FILE")
                      ->check(not_empty("a file name"));
  cmd.add_flag("--resume", resume_,
               "continue the run recorded in --journal FILE; finished evaluations are\n"
               "not repeated and the result equals an uninterrupted run's")
      ->needs(journal);
  cmd.add_option("--wall", wall_, "also stop after this much wall-clock time")
      ->type_name("SECONDS")
      ->check(checked_by(parse_wall_seconds));
  cmd.add_flag("--no-pytorch", no_pytorch_,
               "do not time PyTorch eager and torch.compile beside the reference (by default\n"
               "the CUDA backend does, with $KERNELBRAIN_PYTHON or python3 when it has torch)");
  cmd.add_option("--best-out", best_out_,
                 "write the best kernel of each shape (source, launch plan, params, family,\n"
                 "problem directory) as JSON, the format bench/side_by_side.py --kernels reads")
      ->type_name("FILE")
      ->check(not_empty("a file name"));
  cmd.add_option("--focus", focus_,
                 "tune for these benchmark shapes only (comma-separated names; the smoke and\n"
                 "odd shapes are still checked): one search per group of similar sizes")
      ->type_name("SHAPE,...")
      ->check(checked_by(parse_focus));
  // (add_flag(name, "literal") is ambiguous in CLI11 2.1: the description is set on its own.)
  progress_option_ = cmd.add_flag("--progress")->description("always draw the progress line on stderr");
  no_progress_option_ =
      cmd.add_flag("--no-progress")->description("never draw it (default: draw it when stderr is a terminal)");
  // Test hook, deliberately not in --help (an empty group hides an option): each synthetic measurement
  // takes this long in real time, so that a test can kill a run half-way. It changes no result and no
  // journal header.
  cmd.add_option("--slow-eval-ms", slow_eval_ms_, "sleep this long before each measurement (tests)")
      ->group("")
      ->check(checked_by([](std::string const& t) { return parse_count(t, "--slow-eval-ms 20"); }));
  cmd.add_option("--devices", devices_,
                 "the CUDA devices this search (this rank, under --mpi) evaluates on, one\n"
                 "pool member each: indices or UUIDs as CUDA_VISIBLE_DEVICES takes them\n"
                 "(0,1), or all, the default: every visible device")
      ->type_name("LIST")
      ->check(checked_by(parse_devices));
  cmd.add_option("--workers-per-device", workers_per_device_,
                 "pool members per device (default 1): with 2, one candidate's compile and\n"
                 "gate overlap another's timing; two timings on one device never overlap")
      ->type_name("N")
      ->check(checked_by([](std::string const& t) {
        const auto n = parse_count(t, "--workers-per-device 2");
        if (n < 1 || n > 64) throw usage_error(fmt::format("'{}' is not between 1 and 64", t));
        return n;
      }));
  cmd.add_option("--in-flight", in_flight_,
                 "evaluations issued ahead of the results (default 4; a pool of N uses at\n"
                 "least 2N): the search's decisions depend on it, never on timing, so the\n"
                 "same value gives the same search on 1 or N GPUs")
      ->type_name("N")
      ->check(checked_by([](std::string const& t) {
        const auto n = parse_count(t, "--in-flight 8");
        if (n < 1 || n > 4096) throw usage_error(fmt::format("'{}' is not between 1 and 4096", t));
        return n;
      }));
  cmd.add_flag("--mpi", mpi_,
               "one search over every rank of an MPI job (mpirun -np N, srun): rank 0\n"
               "searches and journals, every rank evaluates on its devices");
  cmd.add_option("--mpi-lost-after", mpi_lost_after_,
                 "seconds without a word from a rank before its evaluations are re-queued\n"
                 "on the others (default 60)")
      ->type_name("SECONDS")
      ->check(checked_by(parse_wall_seconds));
  model_ = std::make_unique<model_arguments>(cmd);
}

tune_options tune_arguments::finish() const {
  // Every value passed its check while CLI11 parsed, so none of these conversions throws.
  tune_options o;
  o.problem = problem_;
  o.backend = backend_;
  o.strategy = parse_strategy(strategy_);
  o.budget_text = budget_;
  o.limits = parse_budget(budget_);
  if (!wall_.empty()) o.limits.wall_seconds = parse_wall_seconds(wall_);
  if (!journal_.empty()) o.journal = std::filesystem::path(journal_);
  o.resume = resume_;
  o.seed = parse_count(seed_, "--seed 3");
  // --progress and --no-progress: the last one given wins.
  for (CLI::Option const* given : cmd_->parse_order()) {
    if (given == progress_option_) o.progress = true;
    if (given == no_progress_option_) o.progress = false;
  }
  o.slow_eval_ms = static_cast<unsigned>(std::min<std::uint64_t>(parse_count(slow_eval_ms_, "20"), 60000));
  if (!best_out_.empty()) o.best_out = std::filesystem::path(best_out_);
  if (!focus_.empty()) o.focus = parse_focus(focus_);
  o.model = model_->finish();
  o.devices = parse_devices(devices_);
  o.workers_per_device = static_cast<unsigned>(parse_count(workers_per_device_, "2"));
  o.in_flight = static_cast<std::size_t>(parse_count(in_flight_, "8"));
  o.mpi = mpi_;
  o.pytorch = !no_pytorch_;
  o.mpi_lost_after = parse_wall_seconds(mpi_lost_after_);
  return o;
}

}  // namespace kernelbrain::cli
