// kernelbrain ablate (apps/kernelbrain/ablate.cpp), run as a child process on the synthetic backend: the
// table's shape and the consistency of its numbers, byte-identical tables from identical command lines,
// --out and --expect (the check a CI job runs against a committed table), and its usage errors.
#include <doctest/doctest.h>

#include <algorithm>
#include <cstddef>
#include <cstdlib>
#include <string>
#include <utility>
#include <vector>
#include "cli_helpers.hpp"
#include "journal_helpers.hpp"
#include "temp_dir.hpp"

#ifdef KB_CLI_PATH

using kb_test::contains;
using kb_test::run_cli;
using kb_test::slurp;
using kb_test::spit;
using kb_test::split_lines;
using kb_test::temp_dir;

namespace {

/// Two landscapes, three strategies (one with options, whose comma the list must not split), three seeds,
/// a small budget: a few tenths of a second.
std::vector<std::string> small_ablation(std::vector<std::string> extra = {}) {
  std::vector<std::string> args{
      "ablate",  "synthetic", "synthetic:3", "--strategies", "default,random,sha:eta=4,bracket_size=9",
      "--seeds", "3",         "--budget",    "60evals"};
  args.insert(args.end(), extra.begin(), extra.end());
  return args;
}

/// The cells of a table row, trimmed: "| a | b |" -> {"a", "b"}.
std::vector<std::string> cells(std::string const& row) {
  std::vector<std::string> out;
  std::size_t at = 1;
  for (std::size_t bar; (bar = row.find('|', at)) != std::string::npos; at = bar + 1) {
    auto cell = row.substr(at, bar - at);
    const auto first = cell.find_first_not_of(' '), last = cell.find_last_not_of(' ');
    out.push_back(first == std::string::npos ? std::string() : cell.substr(first, last - first + 1));
  }
  return out;
}

/// The table's data rows (after the header and the separator), with their line numbers (from 1).
std::vector<std::pair<std::size_t, std::string>> data_rows(std::string const& out) {
  std::vector<std::pair<std::size_t, std::string>> rows;
  const auto lines = split_lines(out);
  for (std::size_t i = 0; i < lines.size(); ++i)
    if (lines[i].starts_with("| synthetic")) rows.emplace_back(i + 1, lines[i]);
  return rows;
}

/// "gate 4% smoke 10% confirm 86%" -> the sum of the percents (and each name's count).
int share_sum(std::string const& spend, std::vector<std::string>& names) {
  int sum = 0;
  std::size_t at = 0;
  while (at < spend.size()) {
    const auto space = spend.find(' ', at);
    REQUIRE_MESSAGE(space != std::string::npos, spend);
    names.push_back(spend.substr(at, space - at));
    const auto pct = spend.find('%', space);
    REQUIRE_MESSAGE(pct != std::string::npos, spend);
    sum += std::stoi(spend.substr(space + 1, pct - space - 1));
    at = pct + 2;
  }
  return sum;
}

void check_ablate_usage_error(std::vector<std::string> args, std::vector<std::string> const& needles,
                              temp_dir const& dir) {
  args.insert(args.begin(), "ablate");
  kb_test::check_usage_error(args, needles, dir);
}

}  // namespace

TEST_CASE("ablate: one row per problem and strategy, with consistent numbers") {
  temp_dir dir("ablate_table");
  const auto r = run_cli(small_ablation(), dir);
  REQUIRE_MESSAGE(r.exit_code == 0, r.err);
  CHECK_MESSAGE(r.err.empty(), r.err);
  const auto lines = split_lines(r.out);
  REQUIRE(lines.size() > 3);
  CHECK(lines[0] ==
        "kernelbrain ablate: backend synthetic, budget 60evals, seeds 1..3, strategies default, random, "
        "sha:bracket_size=9,eta=4, tolerance 5%");
  CHECK(
      lines[2].starts_with("| problem | strategy | final best (median, min) | reached (k/N) | evals to 5% (median) |"));

  const auto rows = data_rows(r.out);
  REQUIRE(rows.size() == 6);
  std::size_t i = 0;
  for (std::string problem : {"synthetic:7", "synthetic:3"})
    for (std::string strategy : {"default", "random", "sha:bracket_size=9,eta=4"}) {
      const auto& [line_no, row] = rows[i++];
      INFO("line ", line_no, ": ", row);
      const auto c = cells(row);
      REQUIRE(c.size() == 10);
      CHECK(c[0] == problem);
      CHECK(c[1] == strategy);
      // final best: "median, min", ratios to the landscape's optimum.
      const auto comma = c[2].find(", ");
      REQUIRE(comma != std::string::npos);
      const double med = std::stod(c[2].substr(0, comma)), least = std::stod(c[2].substr(comma + 2));
      CHECK(least >= 0);
      CHECK(least <= med);
      CHECK(med <= 1.0);
      // reached: k/N with N the seeds; the medians to 5% are '-' exactly when more than half never reached.
      const auto slash = c[3].find('/');
      REQUIRE(slash != std::string::npos);
      const int k = std::stoi(c[3].substr(0, slash)), n = std::stoi(c[3].substr(slash + 1));
      CHECK(n == 3);
      CHECK(k >= 0);
      CHECK(k <= n);
      const bool dash = 2 * (n - k) > n;
      CHECK((c[4] == "-") == dash);
      CHECK((c[5] == "-") == dash);
      if (!dash) {
        CHECK(std::stoi(c[4]) > 0);
        CHECK(std::stoi(c[4]) <= 60);
        CHECK(std::stod(c[5]) <= std::stod(c[6]) * n);  // spent by then: within what all seeds spent
      }
      CHECK(std::stod(c[6]) > 0);
      CHECK(c[7] == "-");  // compile seconds: the replay backend's only
      std::vector<std::string> names;
      CHECK(share_sum(c[8], names) == 100);
      CHECK(std::find(names.begin(), names.end(), "gate") != names.end());
      CHECK(names.size() >= 2);  // the gate and at least one rung
      CHECK((c[9] == "-" || contains(c[9], " ")));
    }
  CHECK(contains(r.out, "best of synthetic:7: 1.000"));
  CHECK(contains(r.out, "best of synthetic:3: 1.000"));
}

TEST_CASE("ablate: the same command line gives the same table, byte for byte, and --out writes it") {
  temp_dir dir("ablate_determinism");
  const auto first = run_cli(small_ablation({"--out", (dir / "table.md").string()}), dir);
  REQUIRE_MESSAGE(first.exit_code == 0, first.err);
  const auto second = run_cli(small_ablation(), dir);
  REQUIRE_MESSAGE(second.exit_code == 0, second.err);
  CHECK(first.out == second.out);
  CHECK(slurp(dir / "table.md") == first.out);
  // Another seed count is another table.
  const auto other = run_cli(small_ablation({"--seeds", "2"}), dir);
  REQUIRE_MESSAGE(other.exit_code == 0, other.err);
  CHECK(other.out != first.out);
}

TEST_CASE("ablate: --expect passes on the table it was given and names the line that differs") {
  temp_dir dir("ablate_expect");
  const auto expected = dir / "expected.md";
  const auto made = run_cli(small_ablation({"--out", expected.string()}), dir);
  REQUIRE_MESSAGE(made.exit_code == 0, made.err);

  const auto same = run_cli(small_ablation({"--expect", expected.string()}), dir);
  CHECK_MESSAGE(same.exit_code == 0, same.err);
  CHECK(same.err.empty());
  CHECK(same.out == made.out);

  // One number changed: the mean device seconds of the first row.
  const auto rows = data_rows(made.out);
  REQUIRE(!rows.empty());
  auto lines = split_lines(made.out);
  const auto [line_no, row] = rows.front();
  auto c = cells(row);
  c[6] += "1";  // one more digit
  std::string changed = "|";
  for (auto const& cell : c) changed += " " + cell + " |";
  REQUIRE(changed != row);
  lines[line_no - 1] = changed;
  std::string text;
  for (auto const& l : lines) text += l + "\n";
  spit(expected, text);

  const auto differs = run_cli(small_ablation({"--expect", expected.string()}), dir);
  CHECK_MESSAGE(differs.exit_code == 1, differs.err);
  CHECK(differs.out == made.out);  // the table is printed all the same
  CHECK_MESSAGE(contains(differs.err, "differs from " + expected.string() + " in 1 line"), differs.err);
  CHECK_MESSAGE(contains(differs.err, "line " + std::to_string(line_no) + "\n"), differs.err);
  CHECK_MESSAGE(contains(differs.err, "- " + changed + "\n"), differs.err);
  CHECK_MESSAGE(contains(differs.err, "+ " + row + "\n"), differs.err);
}

TEST_CASE("ablate: usage errors exit with code 2 and say what is wrong") {
  temp_dir dir("ablate_errors");
  check_ablate_usage_error({"--budget", "60evals"}, {"problem", "required"}, dir);
  check_ablate_usage_error({"synthetic", "--strategies", "default,nosuch"},
                           {"--strategies", "unknown strategy 'nosuch'"}, dir);
  check_ablate_usage_error({"synthetic", "--strategies", "default,"}, {"--strategies", "separated by commas"}, dir);
  check_ablate_usage_error({"synthetic", "--strategies", "sha,sha"}, {"--strategies", "'sha' is given twice"}, dir);
  check_ablate_usage_error({"synthetic", "--strategies", "llm-only"}, {"--strategies", "needs a model"}, dir);
  check_ablate_usage_error({"synthetic", "--strategies", "sha:bogus=1"}, {"--strategies", "bogus"}, dir);
  check_ablate_usage_error({"synthetic", "--budget", "2Mtokens"}, {"--budget", "neither device time nor evaluations"},
                           dir);
  check_ablate_usage_error({"synthetic", "--budget", "300"}, {"--budget", "'300' has no unit"}, dir);
  check_ablate_usage_error({"synthetic", "--seeds", "0"}, {"--seeds", "at least 1"}, dir);
  check_ablate_usage_error({"synthetic", "--tolerance", "-0.1"}, {"--tolerance", "0 or more"}, dir);
  check_ablate_usage_error({"synthetic", "--backend", "gpu"}, {"--backend", "unknown backend 'gpu'"}, dir);
  check_ablate_usage_error({"synthetic", "--backend", "host"}, {"needs a problem directory"}, dir);
  check_ablate_usage_error({"softmax", "--backend", "synthetic"}, {"'softmax'"}, dir);
  check_ablate_usage_error({"synthetic", "synthetic:7"}, {"'synthetic:7' is given twice"}, dir);
  check_ablate_usage_error({"synthetic", "--expect", (dir / "missing.md").string()}, {"--expect"}, dir);

  const auto help = run_cli({"ablate", "--help"}, dir);
  CHECK_MESSAGE(help.exit_code == 0, help.err);
  for (std::string option :
       {"--backend", "--strategies", "--seeds", "--budget", "--tolerance", "--recordings", "--out", "--expect"})
    CHECK_MESSAGE(contains(help.out, option), option, " not in: ", help.out);
}

#endif
