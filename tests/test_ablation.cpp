// The ablation harness, in process (kernelbrain/ablation: kernelbrain::tools): subjects of the synthetic
// and replay backends, single runs, the table and its comparison with an expected one. (The command, its
// options and --expect's exit code: test_ablate.cpp.)
#include <doctest/doctest.h>

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <kernelbrain/ablation/ablation.hpp>
#include <kernelbrain/strategies/all.hpp>
#include <map>
#include <numeric>
#include <optional>
#include <string>
#include <vector>
#include "temp_dir.hpp"

using namespace kernelbrain;
namespace fs = std::filesystem;
using kb_test::temp_dir;

namespace {

strategy_registry const& strategies() {
  static const strategy_registry r = builtin_strategies();
  return r;
}

ablation::strategy named(std::string const& name) { return {name, {}, name}; }

budget evals(std::uint64_t n) {
  budget b;
  b.evaluations = n;
  return b;
}

const fs::path recordings = fs::path(KB_SOURCE_DIR) / "bench" / "recordings";

/// A recording names its problem, looked up among the built-in CUDA problems (the CLI adds this folder).
void add_cuda_problems() {
  backends().add_problem_root("cuda", fs::path(KB_SOURCE_DIR) / "examples" / "cuda_problems");
}

/// The lines of a text that start with `prefix`.
std::vector<std::string> lines_starting(std::string const& text, std::string const& prefix) {
  std::vector<std::string> out;
  std::size_t at = 0;
  while (at < text.size()) {
    const auto end = text.find('\n', at);
    const auto line = text.substr(at, end == std::string::npos ? std::string::npos : end - at);
    if (line.starts_with(prefix)) out.push_back(line);
    if (end == std::string::npos) break;
    at = end + 1;
  }
  return out;
}

}  // namespace

TEST_CASE("ablation: spend shares are whole percents that add up to 100") {
  CHECK(ablation::spend_shares({}, {"smoke", "confirm"}) == "-");
  CHECK(ablation::spend_shares({{"gate", 0.0}}, {"smoke"}) == "-");
  // Thirds: the largest remainders are equal, so the first part gets the extra percent.
  CHECK(ablation::spend_shares({{"gate", 1.0}, {"smoke", 1.0}, {"confirm", 1.0}}, {"smoke", "confirm"}) ==
        "gate 34% smoke 33% confirm 33%");
  // The gate and every rung are named even when nothing went there; the baseline only when it cost something,
  // and first; a rung of another ladder last.
  CHECK(ablation::spend_shares({{"confirm", 3.0}, {"baseline", 1.0}, {"elsewhere", 1.0}}, {"smoke", "confirm"}) ==
        "baseline 20% gate 0% smoke 0% confirm 60% elsewhere 20%");
  CHECK(ablation::spend_shares({{"gate", 0.004}, {"smoke", 0.333}, {"confirm", 0.663}}, {"smoke", "confirm"}) ==
        "gate 1% smoke 33% confirm 66%");
}

TEST_CASE("ablation: tables compared line by line") {
  CHECK_FALSE(ablation::compare_tables("a\nb\n", "a\nb\n"));
  const auto one = ablation::compare_tables("a\nb\nc\n", "a\nB\nc\n");
  REQUIRE(one);
  CHECK(one->lines == 1);
  CHECK(one->diff == "@@ line 2\n- b\n+ B\n");
  const auto longer = ablation::compare_tables("a\n", "a\nb\n");
  REQUIRE(longer);
  CHECK(longer->lines == 1);
  CHECK(longer->diff == "@@ line 2\n- (no line)\n+ b\n");
  const auto newline = ablation::compare_tables("a\nb\n", "a\nb");
  REQUIRE(newline);
  CHECK(newline->lines == 0);
  CHECK(newline->diff == "(every line agrees: the line endings or the final newline differ)\n");
}

TEST_CASE("ablation: subjects of the synthetic and replay backends, and those refused") {
  const auto synthetic = ablation::make_subject("synthetic:3", "", std::nullopt);
  CHECK(synthetic.label == "synthetic:3");
  CHECK(synthetic.backend == "synthetic");
  CHECK(synthetic.true_speedup);
  CHECK(synthetic.best_true_speedup);
  CHECK_FALSE(synthetic.compile_seconds);
  CHECK(synthetic.truth_note == "the landscape's known optimum: true speedups are relative to it");
  REQUIRE(synthetic.make_evaluator);
  auto ev = synthetic.make_evaluator();
  CHECK(synthetic.best_true_speedup(*ev) == 1.0);
  candidate no_family;
  CHECK_FALSE(synthetic.true_speedup(*ev, no_family));

  // A recording's name looked up in a folder of recordings; its truth is its best recorded point.
  add_cuda_problems();
  const auto replay = ablation::make_subject("softmax", "", recordings);
  CHECK(replay.backend == "replay");
  CHECK(replay.label == "softmax");
  CHECK(replay.true_speedup);
  CHECK(replay.truth_note == "the best recorded point of softmax.jsonl.gz, by its noise-free medians");
  auto rev = replay.make_evaluator();
  const auto best = replay.best_true_speedup(*rev);
  REQUIRE(best);
  CHECK(*best > 1.0);

  CHECK_THROWS_WITH_AS((void)ablation::make_subject("synthetic", "host", std::nullopt),
                       doctest::Contains("the host backend needs a problem directory, not 'synthetic'"), error);
  CHECK_THROWS_WITH_AS((void)ablation::make_subject("nosuch", "", recordings),
                       doctest::Contains("problem 'nosuch' is not a recording"), error);
  CHECK_THROWS_WITH_AS((void)ablation::make_subject("synthetic", "", recordings),
                       doctest::Contains("is not a recording"), error);
}

TEST_CASE("ablation: one run is deterministic, judged by the truth, and charged what the search was") {
  const auto s = ablation::make_subject("synthetic", "", std::nullopt);
  const auto a = ablation::run_one(s, strategies(), named("default"), 1, evals(80));
  const auto again = ablation::run_one(s, strategies(), named("default"), 1, evals(80));
  const auto other_seed = ablation::run_one(s, strategies(), named("default"), 2, evals(80));
  REQUIRE_FALSE(a.confirmed.empty());
  CHECK(a.best_truth == 1.0);
  CHECK(a.final_quality > 0);
  CHECK(a.final_quality <= 1.0);
  // The final incumbent is the last one confirmed at the top rung.
  CHECK(a.final_quality == a.confirmed.back().quality);
  for (std::size_t i = 1; i < a.confirmed.size(); ++i)
    CHECK(a.confirmed[i].evaluations >= a.confirmed[i - 1].evaluations);
  CHECK(a.confirmed.back().evaluations <= 80);
  // The split of the device seconds adds up to what the budget was charged.
  double spent = 0;
  for (auto const& [where, v] : a.spent) spent += v;
  CHECK(spent == doctest::Approx(a.device_seconds));
  CHECK(a.device_seconds > 0);
  CHECK(a.spent.contains("gate"));

  CHECK(again.final_quality == a.final_quality);
  CHECK(again.device_seconds == a.device_seconds);
  CHECK(again.confirmed.size() == a.confirmed.size());
  CHECK(again.spent == a.spent);
  CHECK(again.rejects == a.rejects);
  CHECK((other_seed.device_seconds != a.device_seconds || other_seed.confirmed.size() != a.confirmed.size() ||
         other_seed.final_quality != a.final_quality));
}

TEST_CASE("ablation: strategies x subjects x seeds, and the table of them, the same byte for byte") {
  std::vector<ablation::subject> subjects{ablation::make_subject("synthetic", "", std::nullopt),
                                          ablation::make_subject("synthetic:3", "", std::nullopt)};
  ablation::settings how;
  how.strategies = {named("default"), {"sha", strategy_options{{"eta", "4"}}, "sha:eta=4"}, named("random")};
  how.seeds = 2;
  how.limits = evals(60);
  how.budget_text = "60evals";
  how.tolerance = 0.05;
  std::vector<std::string> progress;
  const auto r = ablation::run(subjects, strategies(), how,
                               [&](std::size_t done, std::size_t total, ablation::subject const& s,
                                   ablation::strategy const& strat, std::uint64_t seed) {
                                 progress.push_back(std::to_string(done) + "/" + std::to_string(total) + " " + s.label +
                                                    " " + strat.label + " " + std::to_string(seed));
                               });
  REQUIRE(progress.size() == 12);
  CHECK(progress.front() == "1/12 synthetic:7 default 1");
  CHECK(progress[3] == "4/12 synthetic:7 sha:eta=4 2");
  CHECK(progress.back() == "12/12 synthetic:3 random 2");
  REQUIRE(r.runs.size() == 2);
  REQUIRE(r.runs[0].size() == 3);
  CHECK(r.runs[0][0].size() == 2);
  REQUIRE(r.rung_names[0].size() == 3);
  CHECK_FALSE(r.rung_names[0][0].empty());
  // The runs of the harness are the runs run_one makes.
  const auto single = ablation::run_one(subjects[1], strategies(), how.strategies[2], 2, how.limits);
  CHECK(single.final_quality == r.runs[1][2][1].final_quality);
  CHECK(single.spent == r.runs[1][2][1].spent);

  const auto text = ablation::table(subjects, how, r);
  CHECK(
      text.starts_with("kernelbrain ablate: backend synthetic, budget 60evals, seeds 1..2, strategies default, "
                       "sha:eta=4, random, tolerance 5%\n\n| problem | strategy | final best (median, min) |"));
  const auto rows = lines_starting(text, "| synthetic");
  REQUIRE(rows.size() == 6);
  CHECK(rows[0].starts_with("| synthetic:7 | default | "));
  CHECK(rows[1].starts_with("| synthetic:7 | sha:eta=4 | "));
  CHECK(rows[5].starts_with("| synthetic:3 | random | "));
  // A row's reached count is over its seeds; with the truth, the best is the optimum (1.000).
  for (auto const& row : rows) CHECK(row.find("/2 | ") != std::string::npos);
  const auto notes = lines_starting(text, "best of ");
  REQUIRE(notes.size() == 2);
  CHECK(notes[0] == "best of synthetic:7: 1.000 (the landscape's known optimum: true speedups are relative to it)");
  // Runs again: the same table, byte for byte; another budget: another table.
  CHECK(ablation::table(subjects, how, ablation::run(subjects, strategies(), how)) == text);
  auto fewer = how;
  fewer.limits = evals(30);
  CHECK(ablation::compare_tables(text, ablation::table(subjects, fewer, ablation::run(subjects, strategies(), fewer))));
}

TEST_CASE("ablation: a recording replayed, judged by its best recorded point") {
  add_cuda_problems();
  const auto s = ablation::make_subject((recordings / "sdpa_fp16.jsonl.gz").string(), "replay", std::nullopt);
  ablation::settings how;
  how.strategies = {named("default")};
  how.seeds = 1;
  how.limits.device_seconds = 5;
  how.budget_text = "5s";
  const auto r = ablation::run({s}, strategies(), how);
  auto const& run = r.runs.at(0).at(0).at(0);
  REQUIRE(run.best_truth);
  CHECK(run.final_quality <= *run.best_truth);
  CHECK(run.device_seconds > 0);
  const auto text = ablation::table({s}, how, r);
  CHECK(text.find("best of sdpa_fp16: ") != std::string::npos);
  CHECK(text.find("by its noise-free medians") != std::string::npos);
  CHECK(lines_starting(text, "| sdpa_fp16 | default | ").size() == 1);
}
