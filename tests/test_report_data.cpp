// The report's data model and page, in process (kernelbrain/report: kernelbrain::tools): journals read
// and refused, what report_data computes from them, and the page's escaping of hostile text. (The page
// drawn in a browser: tests/report/check_report.py; the command: test_cli.cpp.)
#include <doctest/doctest.h>

#include <boost/json/parse.hpp>
#include <boost/json/serialize.hpp>
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <kernelbrain/io/journal.hpp>
#include <kernelbrain/report/data.hpp>
#include <kernelbrain/report/page.hpp>
#include <kernelbrain/search.hpp>
#include <set>
#include <string>
#include <vector>
#include "journal_helpers.hpp"
#include "journal_lines.hpp"
#include "temp_dir.hpp"

using namespace kernelbrain;
namespace fs = std::filesystem;
namespace json = boost::json;
using kb_test::spit;
using kb_test::temp_dir;

namespace {

synthetic_landscape const& land() {
  static const synthetic_landscape l{};
  return l;
}

/// A default search of the landscape with a journal: what it found.
search_result journaled_search(fs::path const& file, std::string const& strategy, std::uint64_t seed,
                               std::uint64_t evaluations) {
  auto const& p = land().get_problem();
  synthetic_evaluator ev(land());
  auto pol = default_policies(p);
  budget limits;
  limits.evaluations = evaluations;
  const run_header header{p.name, strategy, seed, ev.fingerprint(), ladder_digest(pol.ladder.rungs())};
  jsonl_journal j(file, header, limits, journal_mode::create);
  search_options so;
  so.seed = seed;
  so.limits = limits;
  so.journal = &j;
  return search(p, std::move(pol), ev, so);
}

std::vector<std::string> strings(json::value const& v) {
  std::vector<std::string> out;
  for (auto const& e : v.as_array()) out.emplace_back(e.as_string());
  return out;
}

}  // namespace

TEST_CASE("report data: rung names of a ladder digest") {
  CHECK(report::rung_names("smoke,screen,confirm/c7bd55cc") == std::vector<std::string>{"smoke", "screen", "confirm"});
  CHECK(report::rung_names("only/0123") == std::vector<std::string>{"only"});
  CHECK(report::rung_names("/0123").empty());
  CHECK(report::rung_names("").empty());
}

TEST_CASE("report data: journals of two strategies, the curves, funnels, best kernel and rows computed from them") {
  temp_dir dir("report_data");
  const auto a1 = dir / "a1.jsonl", a2 = dir / "a2.jsonl", b1 = dir / "b1.jsonl";
  const auto r1 = journaled_search(a1, "default", 1, 120);
  const auto r2 = journaled_search(a2, "default", 2, 120);
  const auto r3 = journaled_search(b1, "other", 3, 60);
  REQUIRE(r1.best_score);
  REQUIRE(r2.best_score);

  const auto journals = report::read_journals({a1.string(), a2.string(), b1.string()});
  REQUIRE(journals.size() == 3);
  CHECK(journals[0].file == a1);
  CHECK(journals[0].shape_names.empty());  // a synthetic problem has no problem directory
  CHECK(report::problem_names(journals) == std::vector<std::string>{land().get_problem().name});
  CHECK(report::default_title(journals) == "KernelBrain report: " + land().get_problem().name);

  const auto data = report::report_data(journals, "T", "2026-01-02T03:04:05Z", "3.9.1");
  CHECK(data.at("title").as_string() == "T");
  CHECK(data.at("generated").as_string() == "2026-01-02T03:04:05Z");
  CHECK(data.at("chartjs").as_string() == "3.9.1");
  CHECK(data.at("version").as_string() == library_version);

  // One header block per journal, with what the journal holds.
  auto const& js = data.at("journals").as_array();
  REQUIRE(js.size() == 3);
  std::size_t candidates = 0;
  const std::vector<search_result const*> results{&r1, &r2, &r3};
  for (std::size_t i = 0; i < 3; ++i) {
    auto const& j = js[i].as_object();
    const auto contents = read_journal(journals[i].file);
    CHECK(j.at("strategy").as_string() == contents.header.strategy);
    CHECK(j.at("seed").as_string() == std::to_string(contents.header.seed));
    CHECK(j.at("evaluations").as_uint64() == contents.outcomes.size());
    CHECK(j.at("baseline").as_bool());
    std::set<std::uint64_t> ids;
    for (auto const& o : contents.outcomes) ids.insert(o.id.value);
    CHECK(j.at("candidates").as_uint64() >= ids.size());
    candidates += static_cast<std::size_t>(j.at("candidates").as_uint64());
    // The incumbent the journal ended with is the search's best.
    auto const& r = *results[i];
    if (r.best_score) {
      REQUIRE(j.at("best").is_object());
      CHECK(j.at("best").at("speedup").to_number<double>() == doctest::Approx(r.best_score->speedup));
      CHECK(j.at("best").at("id").as_string() == r.best->cand.id.str());
    }
  }

  // One problem; its groups are the strategies, in the order given, with their seeds.
  auto const& problems = data.at("problems").as_array();
  REQUIRE(problems.size() == 1);
  auto const& p = problems[0].as_object();
  CHECK(p.at("name").as_string() == land().get_problem().name);
  auto const& groups = p.at("groups").as_array();
  REQUIRE(groups.size() == 2);
  CHECK(groups[0].at("strategy").as_string() == "default");
  CHECK(strings(groups[0].at("seeds")) == std::vector<std::string>{"1", "2"});
  CHECK(groups[1].at("strategy").as_string() == "other");
  CHECK(strings(groups[1].at("seeds")) == std::vector<std::string>{"3"});

  // The funnel of the default group: proposed counts both seeds' candidates, and every stage is at most
  // the one before it up to the rungs.
  auto const& funnel = groups[0].at("funnel").as_object();
  const auto labels = strings(funnel.at("labels"));
  REQUIRE(labels.size() >= 5);
  CHECK(labels[0] == "proposed");
  CHECK(labels[1] == "gated");
  CHECK(labels[2] == "passed the gate");
  CHECK(labels.back() == "new bests");
  auto const& values = funnel.at("values").as_array();
  CHECK(values[0].as_uint64() == js[0].at("candidates").as_uint64() + js[1].at("candidates").as_uint64());
  CHECK(values[2].as_uint64() <= values[1].as_uint64());
  const auto rungs = report::rung_names(read_journal(a1).header.ladder);
  REQUIRE(labels.size() == 5 + rungs.size());
  for (std::size_t i = 0; i < rungs.size(); ++i) CHECK(labels[3 + i] == "measured at " + rungs[i]);

  // The problem's best kernel is the best of the three runs, confirmed at the top rung.
  double best = 0;
  for (auto const* r : results)
    if (r->best_score && r->best_rung + 1 == rungs.size()) best = std::max(best, r->best_score->speedup);
  REQUIRE(p.at("best").is_object());
  CHECK(p.at("best").at("incumbent_speedup").to_number<double>() == doctest::Approx(best));
  CHECK(p.at("best").at("incumbent_rung").as_string() == rungs.back());
  CHECK(p.at("lineage").is_object());
  // A row per candidate of every journal.
  CHECK(p.at("rows").as_array().size() == candidates);
}

namespace {

/// The marked points (each a new level) of a curve, as (x, y).
std::vector<std::pair<double, double>> steps(json::value const& curve) {
  std::vector<std::pair<double, double>> out;
  for (auto const& p : curve.at("median").as_array())
    if (p.as_object().contains("m")) out.emplace_back(p.at("x").to_number<double>(), p.at("y").to_number<double>());
  return out;
}

}  // namespace

TEST_CASE("report data: with a model in the loop, the curves against tokens, answered prompts and rounds") {
  using namespace kb_test::journal_lines;
  temp_dir dir("report_model_axes");
  const auto plan = R"({"launches":[]})";
  const auto expert = make_candidate("warp", {{"W", 2}}, "expert:warp", std::nullopt, "e", plan);
  const auto a = make_candidate("llm", {}, "llm:mutate", expert.id, "a", plan);
  const auto c = make_candidate("llm", {}, "llm:mutate", a.id, "c", plan);
  // Three rounds: the expert's kernel; a model reply (150 tokens) and a failed call, then a resume and a's
  // measurement; another reply (300 tokens), a resume and c's measurement.
  const auto with_model = dir / "model.jsonl";
  spit(with_model,
       header_line("softmax") + event_line(1, "proposed", expert, 0) + event_line(2, "measured", expert, 2, 3.0) +
           event_line(3, "new_best", expert, 2, 3.0) + event_line(4, "proposed", a, 0) +
           event_line(5, "model_reply", a, 0) + exchange_line(5, "key-a", "exchange", a, {"ok", 100, 50}) +
           event_line(6, "model_reply", expert, 0) + exchange_line(6, "key-f", "exchange", expert, {"failed", 0, 0}) +
           resume_line(6) + event_line(7, "measured", a, 2, 4.0) + event_line(8, "new_best", a, 2, 4.0) +
           event_line(9, "proposed", c, 0) + event_line(10, "model_reply", c, 0) +
           exchange_line(10, "key-c", "exchange", c, {"ok", 200, 100}) + resume_line(10) +
           event_line(11, "measured", c, 2, 5.0) + event_line(12, "new_best", c, 2, 5.0));
  const auto without = dir / "plain.jsonl";
  spit(without, header_line("softmax", "other") + event_line(1, "proposed", expert, 0) +
                    event_line(2, "measured", expert, 2, 3.0) + event_line(3, "new_best", expert, 2, 3.0));

  // The reader says which segment (round) wrote each event and exchange.
  const auto contents = read_journal(with_model);
  REQUIRE(contents.segments == 3);
  std::vector<std::size_t> segments;
  for (auto const& je : contents.events) segments.push_back(je.segment);
  CHECK(segments == std::vector<std::size_t>{1, 1, 1, 1, 1, 1, 2, 2, 2, 2, 3, 3});
  REQUIRE(contents.exchanges.size() == 3);
  CHECK(contents.exchanges[2].segment == 2);

  const auto journals = report::read_journals({with_model.string(), without.string()});
  const auto data = report::report_data(journals, "T", "2026-01-02T03:04:05Z", "3.9.1");
  auto const& groups = data.at("problems").as_array().at(0).at("groups").as_array();
  REQUIRE(groups.size() == 2);
  auto const& g = groups[0].as_object();
  REQUIRE(g.contains("progress_model"));
  auto const& by = g.at("progress_model");
  using steps_t = std::vector<std::pair<double, double>>;
  // Tokens and answers count an exchange from its model_reply on; a failed call is no answer.
  CHECK(steps(by.at("tokens")) == steps_t{{0, 3}, {150, 4}, {450, 5}});
  CHECK(steps(by.at("answers")) == steps_t{{0, 3}, {1, 4}, {2, 5}});
  CHECK(steps(by.at("rounds")) == steps_t{{1, 3}, {2, 4}, {3, 5}});
  // The device-second curve is still there (these lines have no outcomes: every step at 0 s, the last level
  // shown); a group whose journals hold no exchange has no model curves.
  CHECK(steps(g.at("progress")) == steps_t{{0, 5}});
  CHECK_FALSE(groups[1].as_object().contains("progress_model"));
}

TEST_CASE("report data: journals refused with the file named") {
  temp_dir dir("report_refused");
  const auto good = dir / "good.jsonl";
  (void)journaled_search(good, "default", 1, 20);
  CHECK_THROWS_WITH_AS(report::read_journals({dir.path.string()}),
                       doctest::Contains("is a folder: give its journal.jsonl"), error);
  CHECK_THROWS_WITH_AS(report::read_journals({good.string(), (dir.path / "." / "good.jsonl").string()}),
                       doctest::Contains("is given twice"), error);
  spit(dir / "empty.jsonl", "");
  CHECK_THROWS_WITH_AS(report::read_journals({(dir / "empty.jsonl").string()}),
                       doctest::Contains("is not a KernelBrain journal: it has no header line"), error);
  spit(dir / "junk.jsonl", "not json\n");
  CHECK_THROWS_AS(report::read_journals({(dir / "junk.jsonl").string()}), error);
  CHECK(report::read_journals({good.string()}).size() == 1);
}

TEST_CASE("report page: hostile text cannot end a script element or run") {
  // JSON for <script type="application/json">: no '<', '>' or '&' left, U+2028/2029 escaped, the rest kept.
  const std::string hostile = R"({"s":"</script><!-- & \u2028 é"})";
  const std::string with_separators = "{\"s\":\"</script><!--&\xE2\x80\xA8\xE2\x80\xA9\xC3\xA9\"}";
  const auto escaped = report::json_for_script(with_separators);
  CHECK(escaped == R"({"s":"\u003c/script\u003e\u003c!--\u0026\u2028\u2029)"
                   "\xC3\xA9\"}");
  // It parses to the same value.
  CHECK(json::parse(escaped) == json::parse(with_separators));
  CHECK(report::json_for_script(hostile).find('<') == std::string::npos);

  CHECK(report::script_text("a</script>b</SCRIPT >c<!--d<e") == "a<\\/script>b<\\/SCRIPT >c<\\!--d<e");
  CHECK(report::html_text("<b a='1'>&\"") == "&lt;b a=&#39;1&#39;&gt;&amp;&quot;");

  CHECK(report::chartjs_version("/*!\n * Chart.js v3.9.1\n */ x") == "3.9.1");
  CHECK(report::chartjs_version("window.Chart = 1;") == "unknown");
  const auto n1 = report::new_nonce(), n2 = report::new_nonce();
  CHECK(n1.size() == 32);
  CHECK(n1.find_first_not_of("0123456789abcdef") == std::string::npos);
  CHECK(n1 != n2);
}

TEST_CASE("report page: the whole page carries the title, nonce, library and data, each escaped") {
  temp_dir dir("report_page");
  const auto j = dir / "j.jsonl";
  (void)journaled_search(j, "default", 1, 40);
  const auto journals = report::read_journals({j.string()});
  report::page_inputs in;
  in.title = "A <b>bold</b> & title";
  in.chartjs = "/* Chart.js v3.9.1 */ window.Chart = function () { return '</script><!--'; };";
  in.generated = "2026-01-02T03:04:05Z";
  in.nonce = "0123456789abcdef0123456789abcdef";
  const auto page = report::html_page(journals, in);
  CHECK(page.starts_with("<!DOCTYPE html>"));
  CHECK(page.find("@@KB_") == std::string::npos);  // every placeholder filled
  CHECK(page.find("script-src 'nonce-0123456789abcdef0123456789abcdef'") != std::string::npos);
  CHECK(page.find("A &lt;b&gt;bold&lt;/b&gt; &amp; title") != std::string::npos);
  CHECK(page.find("<b>bold</b>") == std::string::npos);
  CHECK(page.find("return '<\\/script><\\!--'") != std::string::npos);
  CHECK(page.find("'</script>") == std::string::npos);
  // The data block is report_data's JSON, escaped for the element.
  const auto data = report::report_data(journals, in.title, in.generated, "3.9.1");
  CHECK(page.find(report::json_for_script(json::serialize(data))) != std::string::npos);
}
