// `kernelbrain adopt` as a user runs it: a journal written here by hand in the journal's own line format
// (a catalogue candidate and three model-written ones, measured at several rungs, with their exchanges),
// a copy of the CUDA softmax problem in a temp folder, and the command's writes, refusals and dry run.
#include <doctest/doctest.h>

#include <boost/json/parse.hpp>
#include <boost/json/serialize.hpp>
#include <boost/json/value.hpp>
#include <filesystem>
#include <kernelbrain/core/candidate.hpp>
#include <kernelbrain/core/template_space.hpp>
#include <kernelbrain/io/problem_loader.hpp>
#include <string>
#include <vector>
#include "cli_helpers.hpp"
#include "journal_helpers.hpp"
#include "journal_lines.hpp"
#include "temp_dir.hpp"

#ifdef KB_CLI_PATH

using kb_test::contains;
using kb_test::run_cli;
using kb_test::slurp;
using kb_test::spit;
using kb_test::temp_dir;

namespace {

namespace fs = std::filesystem;
namespace json = boost::json;
using namespace kb_test::journal_lines;

const std::string plan_text =
    R"({"launches":[{"kernel":"softmax_adopted","grid":["R","1","1"],"block":["256","1","1"],"smem":"0",)"
    R"("args":["x","y","R","C"]}]})";

// A source with what a careless rewrite would break: quotes, backslashes, tabs, no final newline.
const std::string source_a =
    "// written by a model: \"one block per row\"\n"
    "extern \"C\" __global__ void softmax_adopted(const float* x, float* y, int R, int C) {\n"
    "\tconst char* s = \"a\\tb\";  (void)s;\n"
    "}";
const std::string source_c =
    "extern \"C\" __global__ void softmax_adopted(const float* x, float* y, int R, int C) {}\n";

struct journal_fixture {
  kernelbrain::candidate expert = kernelbrain::make_candidate("warp-per-row", {{"WARPS", 2}, {"ITEMS", 4}},
                                                              "expert:warp-per-row", std::nullopt, "src", plan_text);
  kernelbrain::candidate a =  // the best model-written one at the top rung
      kernelbrain::make_candidate("llm", {}, "llm:mutate", expert.id, source_a, plan_text);
  kernelbrain::candidate b =  // scored highest, but never measured at the top rung
      kernelbrain::make_candidate("llm", {}, "llm:explore", std::nullopt, "__global__ void b() {}\n", plan_text);
  kernelbrain::candidate c =  // answered through --exchange: no model name
      kernelbrain::make_candidate("llm", {}, "llm:explore:cluster-row", std::nullopt, source_c, plan_text);
};

/// The journal of a search with a model: the catalogue's candidate scores best at the top rung, b best
/// of all but only at the screen rung, a best of the model's at the top rung, c below it.
std::string model_journal(journal_fixture const& f, std::string const& problem = "softmax") {
  return header_line(problem) + event_line(1, "proposed", f.expert, 0) + event_line(2, "proposed", f.a, 0) +
         event_line(3, "model_reply", f.a, 0) + exchange_line(3, "key-of-a", "gpt-test", f.a) +
         event_line(4, "proposed", f.b, 0) + event_line(5, "proposed", f.c, 0) + event_line(6, "model_reply", f.c, 0) +
         exchange_line(6, "key-of-c", "exchange", f.c) + event_line(7, "measured", f.expert, 2, 3.0) +
         event_line(8, "measured", f.a, 1, 1.1) + event_line(9, "measured", f.a, 2, 1.75) +
         event_line(10, "measured", f.b, 1, 9.0) + event_line(11, "measured", f.c, 2, 1.25);
}

/// A copy of the CUDA softmax problem in `dir`.
fs::path problem_copy(temp_dir const& dir) {
  const auto to = dir / "softmax";
  fs::copy(fs::path(KB_SOURCE_DIR) / "examples/cuda_problems/softmax", to, fs::copy_options::recursive);
  return to;
}

json::object const& last_entry(json::value const& doc) { return doc.at("catalogue").as_array().back().as_object(); }

}  // namespace

TEST_CASE("adopt: the best model-written kernel at the top rung becomes a catalogue template with its provenance") {
  const temp_dir dir("adopt");
  const journal_fixture f;
  const auto journal = (dir / "run.jsonl").string();
  spit(journal, model_journal(f));
  const auto prob_dir = problem_copy(dir);
  const auto problem_json = prob_dir / "problem.json";
  const std::string original = slurp(problem_json);
  REQUIRE(!original.empty());
  const std::string name = "llm-" + f.a.id.str().substr(0, 8);
  const auto template_file = prob_dir / "templates" / (name + ".cu");

  SUBCASE("a dry run prints the entry and writes nothing") {
    const auto r = run_cli({"adopt", journal, "--problem", prob_dir.string(), "--dry-run"}, dir);
    INFO(r.err);
    REQUIRE(r.exit_code == 0);
    CHECK(contains(r.out, "dry run: nothing written"));
    CHECK(contains(r.out, f.a.id.str()));
    CHECK(contains(r.out, "\"provenance\""));
    CHECK(slurp(problem_json) == original);
    CHECK_FALSE(fs::exists(template_file));
  }

  SUBCASE("adopt writes the template and the entry; the problem loads; a second adopt is refused") {
    const auto r = run_cli({"adopt", journal, "--problem", prob_dir.string()}, dir);
    INFO(r.out, r.err);
    REQUIRE(r.exit_code == 0);
    CHECK(contains(r.out, "adopted candidate " + f.a.id.str()));
    // The template is the candidate's source, byte for byte.
    REQUIRE(fs::exists(template_file));
    CHECK(slurp(template_file) == source_a);

    // The entry, with its provenance; every other part of problem.json as it was.
    const std::string updated = slurp(problem_json);
    json::parse_options opts;
    opts.allow_comments = true;
    const auto before = json::parse(original, {}, opts);
    const auto after = json::parse(updated, {}, opts);
    auto const& e = last_entry(after);
    CHECK(e.at("name").as_string() == name);
    CHECK(e.at("template").as_string() == "templates/" + name + ".cu");
    CHECK(e.at("launch") == json::parse(plan_text));
    CHECK_FALSE(e.contains("parameters"));
    CHECK(contains(std::string(e.at("prose").as_string()), "gpt-test"));
    auto const& p = e.at("provenance").as_object();
    CHECK(p.at("journal").as_string() == journal);
    CHECK(p.at("candidate").as_string() == f.a.id.str());
    CHECK(p.at("origin").as_string() == "llm:mutate");
    CHECK(p.at("model").as_string() == "gpt-test");
    CHECK(p.at("prompt_key").as_string() == "key-of-a");
    CHECK(p.at("score").at("speedup").to_number<double>() == doctest::Approx(1.75));
    CHECK(p.at("score").at("rung").as_string() == "confirm");
    CHECK(p.at("date").as_string() == "2026-11-30T08:15:00Z");
    CHECK(p.at("adopted").as_string().size() == 10);
    auto rest = after;
    rest.as_object()["catalogue"].as_array().pop_back();
    CHECK(rest == before);
    // Inserted into the text: what came before the new entry is unchanged, byte for byte.
    const auto cut = original.rfind('}', original.find("\n  ]", original.find("\"catalogue\""))) + 1;
    CHECK(updated.compare(0, cut, original, 0, cut) == 0);
    CHECK(updated.ends_with(original.substr(cut)));

    // The problem loads through the normal loader, and the entry's one point is the candidate.
    const auto prob = kernelbrain::load_problem(prob_dir);
    auto const* h = kernelbrain::find_hint(prob, name);
    REQUIRE(h != nullptr);
    REQUIRE(h->templ.has_value());
    CHECK(h->templ->space.cardinality() == 1);
    CHECK(contains(h->provenance, f.a.id.str()));
    const auto k = kernelbrain::instantiate(*h, {}, "test");
    CHECK(k.source == source_a);
    CHECK(json::parse(k.launch) == json::parse(plan_text));

    // Again: the name is taken, and nothing changes.
    const auto again = run_cli({"adopt", journal, "--problem", prob_dir.string()}, dir);
    CHECK(again.exit_code == 2);
    CHECK_MESSAGE(contains(again.err, "already has a catalogue entry '" + name + "'"), again.err);
    CHECK(slurp(problem_json) == updated);

    // The exchange client names no model: the entry says so.
    const auto rc = run_cli(
        {"adopt", journal, "--problem", prob_dir.string(), "--candidate", f.c.id.str(), "--name", "from-exchange"},
        dir);
    INFO(rc.err);
    REQUIRE(rc.exit_code == 0);
    const auto third = json::parse(slurp(problem_json), {}, opts);
    CHECK(last_entry(third).at("provenance").at("model").as_string() == "exchange (answered outside the tool)");
    CHECK(last_entry(third).at("provenance").at("prompt_key").as_string() == "key-of-c");
    CHECK(slurp(prob_dir / "templates" / "from-exchange.cu") == source_c);
    CHECK(kernelbrain::find_hint(kernelbrain::load_problem(prob_dir), "from-exchange") != nullptr);
  }

  SUBCASE("refusals: each with its reason, and nothing written") {
    auto refused = [&](std::vector<std::string> args, std::string const& needle) {
      args.insert(args.begin(), "adopt");
      const auto r = run_cli(args, dir);
      CHECK_MESSAGE(r.exit_code == 2, "exit code ", r.exit_code, " for ", needle);
      CHECK_MESSAGE(contains(r.err, needle), "'", needle, "' not in: ", r.err);
      CHECK_MESSAGE(kb_test::split_lines(r.err).size() == 1, "not one line: ", r.err);
      CHECK(slurp(problem_json) == original);
      CHECK_FALSE(fs::exists(template_file));
    };
    const auto p = prob_dir.string();
    // A journal without a model-written candidate at the top rung.
    const auto plain = (dir / "plain.jsonl").string();
    spit(plain, header_line("softmax") + event_line(1, "proposed", f.expert, 0) +
                    event_line(2, "measured", f.expert, 2, 3.0) + event_line(3, "proposed", f.b, 0) +
                    event_line(4, "measured", f.b, 1, 9.0));
    refused({plain, "--problem", p}, "has no model-written candidate");
    refused({(dir / "missing.jsonl").string(), "--problem", p}, "not found");
    refused({journal, "--problem", p, "--candidate", f.expert.id.str()}, "was not written by a model");
    refused({journal, "--problem", p, "--candidate", f.b.id.str()}, "never measured at the top rung");
    refused({journal, "--problem", p, "--candidate", "0123456789abcdef"}, "proposes no candidate 0123456789abcdef");
    refused({journal, "--problem", p, "--candidate", "xyz"}, "is not a candidate id");
    refused({journal, "--problem", (dir / "nowhere").string()}, "not found");
    fs::create_directories(dir / "empty");
    refused({journal, "--problem", (dir / "empty").string()}, "holds no problem.json");
    const auto other = (dir / "other.jsonl").string();
    spit(other, model_journal(f, "matvec"));
    refused({other, "--problem", p}, "is a search of problem 'matvec'");
    refused({journal, "--problem", p, "--name", "warp-per-row"}, "already has a catalogue entry 'warp-per-row'");
    refused({journal, "--problem", p, "--name", "../escape"}, "--name '../escape'");
    // Never over an existing file.
    spit(prob_dir / "templates" / "taken.cu", "mine");
    refused({journal, "--problem", p, "--name", "taken"}, "never overwrites");
    CHECK(slurp(prob_dir / "templates" / "taken.cu") == "mine");
  }
}

#endif
