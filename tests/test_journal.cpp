// The JSONL journal: exact round trips, torn and corrupt lines, header checks, overwrite refusal,
// and resume in process. (The CLI killed with SIGKILL and resumed: test_cli.cpp.)
#include <doctest/doctest.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <kernelbrain/io/journal.hpp>
#include <kernelbrain/search.hpp>
#include <limits>
#include <optional>
#include <set>
#include <string>
#include <thread>
#include <vector>
#include "journal_helpers.hpp"
#include "temp_dir.hpp"

using namespace kernelbrain;
namespace fs = std::filesystem;

namespace {

synthetic_landscape const& land() {
  static const synthetic_landscape l{};
  return l;
}

using kb_test::check_same;
using kb_test::event_signatures;
using kb_test::lines_of_type;
using kb_test::outcome_counts;
using kb_test::same;
using kb_test::slurp;
using kb_test::spit;
using kb_test::split_lines;
using kb_test::temp_dir;

run_header sample_header() {
  return {"synthetic:7", "default", 3, "synthetic/v1/landscape=7", "smoke,screen,confirm/0123456789abcdef"};
}

budget evals(std::uint64_t n) {
  budget b;
  b.evaluations = n;
  return b;
}

/// An outcome with every field set, including doubles that a sloppy writer or reader would change.
evaluation_outcome rich_outcome() {
  evaluation_outcome o;
  o.id = candidate_id{0xfedcba9876543210ULL};
  o.rung = 2;
  o.gated = true;
  o.gate = verdict::pass();
  o.m.result = verdict::reject(stage::correctness, "wrong at \"odd\"\nsize \\ é ✓ \t tab");
  shape_timing a;
  a.shape = 1;
  a.samples = {0.1,
               1.0 / 3.0,
               2.2250738585072014e-308,
               5e-324,
               1.7976931348623157e308,
               -0.0,
               3.6548059593458164e-07,
               -2.1284096563219872e-239,
               1e-300,
               123456789.0};
  a.summarise();
  shape_timing b;
  b.shape = 3;
  b.samples = {std::numeric_limits<double>::infinity(), 4.5e-6, std::nan("")};
  b.stats = {4.5e-6, -std::numeric_limits<double>::infinity(), std::numeric_limits<double>::infinity()};
  o.m.timings = {a, b};
  o.m.res = resources{96, 12, 49152, 0.6180339887498949};
  o.m.vs_incumbent = ab_comparison{"0123456789abcdef", {0.9731, 0.95, 1.0000000000000002}};
  o.m.profile = {{"dram__throughput.avg.pct_of_peak", 87.30000000000001}, {"sm__warps_active", 0.1 + 0.2}};
  o.m.diagnosis = "memory-bound: \"uncoalesced\" loads";
  o.m.device_seconds = 0.30000000000000004;
  o.wall_seconds = 1.0e-7 / 3.0;
  return o;
}

/// A history with two candidates, for write_event's view.
struct small_history {
  std::vector<rung> rungs{rung{"smoke", {0}}, rung{"screen", {0, 1}}, rung{"confirm", {0, 1, 2, 3}}};
  baseline base;
  budget_meter meter;
  detail::search_history h{land().get_problem(), rungs, base, meter};
  candidate parent = make_candidate("warp-per-row", {{"BLOCK", 256}, {"VEC", 4}}, "expert:warp-per-row");
  candidate child =
      make_candidate("warp-per-row", {{"BLOCK", 512}, {"VEC", 4}, {"NEG", -7}}, "mutation:BLOCK", parent.id,
                     "__global__ void k() { /* \"quoted\" */ }\n", "grid=(N+${BLOCK}-1)/${BLOCK}");
  small_history() {
    (void)h.add(parent);
    (void)h.add(child);
  }
  [[nodiscard]] search_view view() const { return search_view(h); }
};

/// Every event kind with every field set.
std::vector<event> sample_events(small_history const& sh) {
  std::vector<event> es;
  std::uint64_t seq = 0;
  es.push_back({event_kind::proposed, ++seq, sh.parent.id, 0, {}, std::nullopt, "expert:warp-per-row"});
  es.push_back({event_kind::proposed, ++seq, sh.child.id, 0, {}, std::nullopt, "mutation:BLOCK"});
  es.push_back({event_kind::duplicate, ++seq, sh.child.id, 0, {}, std::nullopt, "mutation:BLOCK"});
  es.push_back({event_kind::dispatched, ++seq, sh.parent.id, 1, {}, std::nullopt, {}});
  es.push_back({event_kind::promoted, ++seq, sh.parent.id, 2, {}, std::nullopt, {}});
  es.push_back({event_kind::rejected,
                ++seq,
                sh.child.id,
                1,
                verdict::reject(stage::timeout, "watchdog: 2.5 s"),
                std::nullopt,
                {}});
  es.push_back({event_kind::measured, ++seq, sh.parent.id, 2, {}, score{3.5452597661693117, 1.0 / 7.0}, {}});
  es.push_back({event_kind::new_best, ++seq, sh.parent.id, 2, {}, score{0.1 + 0.2, 2.5}, {}});
  es.push_back({event_kind::generation_failed, ++seq, {}, 0, {}, std::nullopt, "LLM timed out \"twice\""});
  es.push_back({event_kind::stopped, ++seq, {}, 0, {}, std::nullopt, "evaluation budget spent"});
  return es;
}

/// Writes a small, valid journal: header, two outcomes, the sample events.
void write_sample_journal(fs::path const& path) {
  small_history sh;
  jsonl_journal j(path, sample_header(), evals(100), journal_mode::create);
  auto o = rich_outcome();
  j.write_outcome(o);
  o.rung = 1;
  o.id = sh.child.id;
  j.write_outcome(o);
  for (auto const& e : sample_events(sh)) j.write_event(e, sh.view());
}

search_options options_for(budget limits, std::uint64_t seed = 11) {
  search_options so;
  so.seed = seed;
  so.limits = limits;
  return so;
}

run_header header_for_default(std::uint64_t seed) {
  auto const& p = land().get_problem();
  synthetic_evaluator ev(land());
  auto pol = default_policies(p);
  return {"synthetic:7", "default", seed, ev.fingerprint(), ladder_digest(pol.ladder.rungs())};
}

}  // namespace

TEST_CASE("journal: every outcome field round-trips exactly") {
  temp_dir dir("outcome");
  const auto path = dir / "j.jsonl";
  const auto o = rich_outcome();
  evaluation_outcome plain;  // defaults: no resources, no A/B, no profile, gate not run
  plain.id = candidate_id{1};
  {
    jsonl_journal j(path, sample_header(), evals(100), journal_mode::create);
    j.write_outcome(o);
    // On disk as soon as it is written, not when the journal closes: a kill -9 loses nothing finished.
    CHECK(read_journal(path).outcomes.size() == 1);
    j.write_outcome(plain);
  }
  auto c = read_journal(path);
  CHECK(c.header == sample_header());
  CHECK(c.limits.evaluations == 100);
  CHECK(c.version == std::string(library_version));
  CHECK(c.date.size() == 20);  // 2025-01-01T00:00:00Z
  REQUIRE(c.outcomes.size() == 2);
  check_same(o, c.outcomes[0]);
  check_same(plain, c.outcomes[1]);
  CHECK_FALSE(c.outcomes[1].m.res.has_value());
  CHECK_FALSE(c.outcomes[1].m.vs_incumbent.has_value());

  // load_journal keys the same outcomes by (id, rung).
  auto s = load_journal(path);
  CHECK(s.header == sample_header());
  REQUIRE(s.outcomes.contains({o.id, o.rung}));
  check_same(o, s.outcomes.at({o.id, o.rung}));
}

TEST_CASE("journal: doubles read back bit for bit (Boost.JSON 1.81's own parser would not)") {
  // Boost.JSON 1.81 serialises doubles exactly but its default parser is off by one ulp for about one
  // value in six; the journal reads numbers itself. A mismatch changes budget sums on resume.
  temp_dir dir("doubles");
  const auto path = dir / "j.jsonl";
  evaluation_outcome o;
  o.id = candidate_id{7};
  rng r(42);
  shape_timing t;
  for (int i = 0; i < 20000; ++i) {
    double d = 0;
    switch (i % 3) {
      case 0:
        d = r.uniform();
        break;
      case 1:
        d = std::exp(6 * r.normal()) * 1e-5;
        break;
      default: {
        d = std::bit_cast<double>(r());
        if (!std::isfinite(d)) d = 0.5;
      }
    }
    t.samples.push_back(d);
  }
  o.m.timings.push_back(t);
  {
    jsonl_journal j(path, sample_header(), {}, journal_mode::create);
    j.write_outcome(o);
  }
  auto c = read_journal(path);
  REQUIRE(c.outcomes.size() == 1);
  auto const& back = c.outcomes[0].m.timings.at(0).samples;
  REQUIRE(back.size() == t.samples.size());
  std::size_t wrong = 0;
  for (std::size_t i = 0; i < back.size(); ++i) wrong += same(back[i], t.samples[i]) ? 0 : 1;
  CHECK(wrong == 0);
}

TEST_CASE("journal: every event field and a proposed candidate's content round-trip") {
  temp_dir dir("events");
  const auto path = dir / "j.jsonl";
  small_history sh;
  const auto events = sample_events(sh);
  {
    jsonl_journal j(path, sample_header(), {}, journal_mode::create);
    for (auto const& e : events) j.write_event(e, sh.view());
  }
  auto c = read_journal(path);
  REQUIRE(c.events.size() == events.size());
  CHECK(c.last_seq == events.back().seq);
  for (std::size_t i = 0; i < events.size(); ++i) {
    auto const& want = events[i];
    auto const& got = c.events[i].e;
    CAPTURE(i);
    CHECK(got.kind == want.kind);
    CHECK(got.seq == want.seq);
    CHECK(got.id == want.id);
    CHECK(got.rung == want.rung);
    CHECK(got.result == want.result);
    REQUIRE(got.value.has_value() == want.value.has_value());
    if (want.value) {
      CHECK(same(got.value->value, want.value->value));
      CHECK(same(got.value->speedup, want.value->speedup));
    }
    CHECK(got.note == want.note);
    CHECK(c.events[i].cand.has_value() == (want.kind == event_kind::proposed));
  }
  // The candidate content, as the view had it: re-sealing gives the recorded id.
  for (std::size_t i : {0U, 1U}) {
    REQUIRE(c.events[i].cand);
    auto cand = *c.events[i].cand;
    candidate const& want = i == 0 ? sh.parent : sh.child;
    CHECK(cand.id == want.id);
    CHECK(cand.family == want.family);
    CHECK(cand.params == want.params);
    CHECK(cand.source == want.source);
    CHECK(cand.launch == want.launch);
    CHECK(cand.parent == want.parent);
    CHECK(cand.origin == want.origin);
    CHECK(cand.seal().id == want.id);
  }
}

TEST_CASE("journal: one complete line per write, even from two threads at once") {
  temp_dir dir("threads");
  const auto path = dir / "j.jsonl";
  small_history sh;
  constexpr int n = 2000;
  {
    jsonl_journal j(path, sample_header(), {}, journal_mode::create);
    std::thread outcomes([&] {
      auto o = rich_outcome();
      for (int i = 0; i < n; ++i) {
        o.id = candidate_id{static_cast<std::uint64_t>(i)};
        j.write_outcome(o);
      }
    });
    for (int i = 1; i <= n; ++i)
      j.write_event({event_kind::dispatched, static_cast<std::uint64_t>(i), sh.parent.id, 0, {}, std::nullopt, {}},
                    sh.view());
    outcomes.join();
    j.throw_if_failed();
  }
  auto c = read_journal(path);
  CHECK(c.outcomes.size() == n);
  CHECK(c.events.size() == n);
  CHECK(c.lines == 2 * n + 1);
  CHECK(c.torn_bytes == 0);
}

TEST_CASE("journal: a torn last line is ignored, and cut off before a resumed run appends") {
  temp_dir dir("torn");
  const auto path = dir / "j.jsonl";
  write_sample_journal(path);
  const auto whole = read_journal(path);
  const std::string torn = R"({"type":"outcome","id":"7orn-fragm)";
  spit(path, slurp(path) + torn);

  auto c = read_journal(path);
  CHECK(c.torn_bytes == torn.size());
  CHECK(c.outcomes.size() == whole.outcomes.size());
  CHECK(c.events.size() == whole.events.size());
  CHECK(load_journal(path).outcomes.size() == 2);

  {
    jsonl_journal j(path, sample_header(), evals(100), journal_mode::resume);
    CHECK(j.resume_info().torn_bytes == torn.size());
    CHECK(j.resume_info().outcomes == 2);
    evaluation_outcome o;
    o.id = candidate_id{99};
    j.write_outcome(o);
  }
  // Had the fragment stayed, the next line would have been glued to it and the file corrupt.
  auto after = read_journal(path);
  CHECK(after.torn_bytes == 0);
  CHECK(after.outcomes.size() == 3);
  CHECK(slurp(path).find(torn) == std::string::npos);
}

TEST_CASE("journal: a corrupt line before the last throws an error naming the file and the line") {
  temp_dir dir("corrupt");
  const auto path = dir / "j.jsonl";
  write_sample_journal(path);
  auto lines = split_lines(slurp(path));
  REQUIRE(lines.size() > 6);

  SUBCASE("not JSON") { lines[4] = lines[4].substr(0, lines[4].size() / 2); }
  SUBCASE("JSON, but not a journal line") { lines[4] = R"({"type":"event","seq":5,"kind":"measured"})"; }
  SUBCASE("an unknown stage") {
    const auto at = lines[4].find("\"stage\":\"");
    REQUIRE(at != std::string::npos);
    lines[4].insert(at + 9, "zz");
  }
  std::string text;
  for (auto const& l : lines) text += l + "\n";
  spit(path, text);
  try {
    (void)read_journal(path);
    FAIL("a corrupt line 5 was accepted");
  } catch (error const& e) {
    const std::string msg = e.what();
    CHECK_MESSAGE(msg.find(path.string()) != std::string::npos, msg);
    CHECK_MESSAGE(msg.find("line 5") != std::string::npos, msg);
  }
  CHECK_THROWS_AS((void)load_journal(path), error);
  CHECK_THROWS_AS(jsonl_journal(path, sample_header(), evals(100), journal_mode::resume), error);
}

TEST_CASE("journal: resuming with a different header names the field that differs") {
  temp_dir dir("header");
  const auto path = dir / "j.jsonl";
  write_sample_journal(path);
  const auto before = slurp(path);
  auto expect = [&](run_header h, std::string const& needle) {
    try {
      jsonl_journal j(path, h, evals(100), journal_mode::resume);
      FAIL("a journal with another header was resumed; expected: ", needle);
    } catch (error const& e) {
      CHECK_MESSAGE(std::string(e.what()).find(needle) != std::string::npos, e.what());
      CHECK_MESSAGE(std::string(e.what()).find(path.string()) != std::string::npos, e.what());
    }
  };
  auto h = sample_header();
  h.seed = 4;
  expect(h, "was written by a run with seed 3; this run has seed 4: use --seed 3 or a new journal");
  h = sample_header();
  h.strategy = "sha";
  expect(h, "strategy default; this run has strategy sha: use --strategy default");
  h = sample_header();
  h.problem = "synthetic:8";
  expect(h, "problem synthetic:7; this run has problem synthetic:8");
  h = sample_header();
  h.evaluator = "cuda/sm_90";
  expect(h, "evaluator synthetic/v1/landscape=7; this run has evaluator cuda/sm_90");
  h = sample_header();
  h.ladder = "smoke/0000000000000000";
  expect(h, "ladder smoke,screen,confirm/0123456789abcdef; this run has ladder smoke/0000000000000000");
  CHECK(slurp(path) == before);  // a refused resume writes nothing

  // The digest tells ladders apart by every rung field.
  std::vector<rung> a{rung{"smoke", {0}, 3}}, b{rung{"smoke", {0}, 4}};
  CHECK(ladder_digest(a) != ladder_digest(b));
  CHECK(ladder_digest(a) == ladder_digest(std::vector<rung>{rung{"smoke", {0}, 3}}));
}

TEST_CASE("journal: never overwrites, and resume needs an existing journal") {
  temp_dir dir("overwrite");
  const auto path = dir / "j.jsonl";
  write_sample_journal(path);
  const auto before = slurp(path);
  try {
    jsonl_journal j(path, sample_header(), evals(100), journal_mode::create);
    FAIL("an existing journal was opened for writing from scratch");
  } catch (error const& e) {
    const std::string msg = e.what();
    CHECK_MESSAGE(msg.find("already exists") != std::string::npos, msg);
    CHECK_MESSAGE(msg.find("--resume") != std::string::npos, msg);
  }
  CHECK(slurp(path) == before);

  const auto missing = dir / "missing.jsonl";
  try {
    jsonl_journal j(missing, sample_header(), evals(100), journal_mode::resume);
    FAIL("resumed a journal that does not exist");
  } catch (error const& e) {
    const std::string msg = e.what();
    CHECK_MESSAGE(msg.find("does not exist") != std::string::npos, msg);
    CHECK_MESSAGE(msg.find(missing.string()) != std::string::npos, msg);
  }
  CHECK_FALSE(fs::exists(missing));
  CHECK_THROWS_AS((void)load_journal(missing), error);
}

TEST_CASE("journal: a resume with the same budget continues the events, another budget re-writes them") {
  temp_dir dir("segments");
  const auto path = dir / "j.jsonl";
  write_sample_journal(path);  // events 1..10
  small_history sh;
  {
    jsonl_journal j(path, sample_header(), evals(100), journal_mode::resume);
    REQUIRE(j.resumed());
    // The sample run ended with `stopped` at seq 10: a resumed run goes on past it, so the stop is
    // superseded and what the resumed run does next is written at seq 10.
    CHECK(j.resumed()->last_seq == 9);
    CHECK_FALSE(j.resume_info().budget_changed);
    j.write_event({event_kind::dispatched, 10, sh.child.id, 0, {}, std::nullopt, {}}, sh.view());
  }
  auto c = read_journal(path);
  CHECK(c.segments == 2);
  CHECK(c.events.size() == 10);
  CHECK(c.last_seq == 10);
  CHECK(c.events.back().e.kind == event_kind::dispatched);  // the old stop is gone from the run's stream
  {
    jsonl_journal j(path, sample_header(), evals(500), journal_mode::resume);
    REQUIRE(j.resumed());
    CHECK(j.resumed()->last_seq == 0);  // the engine writes every event again
    CHECK(j.resume_info().budget_changed);
    CHECK(j.resume_info().previous_limits.evaluations == 100);
    // Measurements are reused all the same, and the parent's rung-1 evaluation, dispatched at seq 4 and
    // never finished, was in flight at both deaths (the second segment wrote past seq 9): a crash verdict.
    CHECK(j.resumed()->outcomes.size() == 3);
    auto const it = j.resumed()->outcomes.find({sh.parent.id, 1});
    REQUIRE(it != j.resumed()->outcomes.end());
    CHECK(it->second.m.result.where == stage::crash);
    j.write_event({event_kind::proposed, 1, sh.child.id, 0, {}, std::nullopt, "again"}, sh.view());
  }
  c = read_journal(path);
  CHECK(c.segments == 3);
  CHECK(c.limits.evaluations == 500);
  REQUIRE(c.events.size() == 1);  // the superseded events are gone from the run's stream
  CHECK(c.events[0].e.note == "again");
}

TEST_CASE(
    "journal: an evaluation in flight when the run died is retried once, and at a second death gets a crash verdict") {
  temp_dir dir("interrupted");
  small_history sh;
  const evaluation_key child{sh.child.id, 0}, parent{sh.parent.id, 0};
  const auto path = dir / "j.jsonl";
  {
    jsonl_journal j(path, sample_header(), evals(100), journal_mode::create);
    j.write_event({event_kind::dispatched, 1, sh.child.id, 0, {}, std::nullopt, {}}, sh.view());
  }  // died with the child in flight
  {
    jsonl_journal j(path, sample_header(), evals(100), journal_mode::resume);
    REQUIRE(j.resumed());
    CHECK(j.resumed()->interrupted == std::vector<evaluation_key>{child});
    CHECK(j.resumed()->outcomes.empty());  // retried
    // The resumed run replays past seq 1 (the child in flight again) and dies with the parent in flight too.
    j.write_event({event_kind::dispatched, 2, sh.parent.id, 0, {}, std::nullopt, {}}, sh.view());
  }
  auto c = read_journal(path);
  REQUIRE(c.interrupted.size() == 1);
  CHECK(c.interrupted[0].first == child);
  CHECK(c.interrupted[0].second == 1);  // the resume line's after_seq
  {
    jsonl_journal j(path, sample_header(), evals(100), journal_mode::resume);
    REQUIRE(j.resumed());
    auto const& r = *j.resumed();
    REQUIRE(r.outcomes.contains(child));
    CHECK(r.outcomes.at(child).m.result.where == stage::crash);
    CHECK(r.outcomes.at(child).m.result.detail.find("twice") != std::string::npos);
    CHECK_FALSE(r.outcomes.at(child).passed());
    CHECK(r.interrupted == std::vector<evaluation_key>{parent});  // its first death: retried
  }
  // A resumed run that died before it got back to the evaluation does not count against it.
  const auto early = dir / "early.jsonl";
  {
    jsonl_journal j(early, sample_header(), evals(100), journal_mode::create);
    j.write_event({event_kind::dispatched, 1, sh.child.id, 0, {}, std::nullopt, {}}, sh.view());
  }
  { jsonl_journal j(early, sample_header(), evals(100), journal_mode::resume); }  // died at once
  {
    jsonl_journal j(early, sample_header(), evals(100), journal_mode::resume);
    REQUIRE(j.resumed());
    CHECK(j.resumed()->outcomes.empty());
    CHECK(j.resumed()->interrupted == std::vector<evaluation_key>{child});
  }
}

TEST_CASE("journal: in-process resume after a crash equals the uninterrupted search") {
  temp_dir dir("crash");
  auto const& p = land().get_problem();
  const auto limits = evals(250);
  const auto header = header_for_default(11);

  // The uninterrupted run.
  search_result whole;
  {
    jsonl_journal j(dir / "whole.jsonl", header, limits, journal_mode::create);
    synthetic_evaluator ev(land());
    auto so = options_for(limits);
    so.journal = &j;
    whole = search(p, default_policies(p), ev, so);
  }

  // The same run, "crashed" by an observer that throws part-way (the process stays up, which lets the
  // evaluations already queued finish and be journaled, as they would be before a real kill).
  struct crash : std::runtime_error {
    using std::runtime_error::runtime_error;
  };
  struct crasher final : observer {
    std::uint64_t at;
    explicit crasher(std::uint64_t n) : at(n) {}
    void on_event(event const& e, search_view const&) override {
      if (e.seq == at) throw crash("simulated crash");
    }
  } crash_at(300);
  {
    jsonl_journal j(dir / "resumed.jsonl", header, limits, journal_mode::create);
    synthetic_evaluator ev(land());
    auto so = options_for(limits);
    so.journal = &j;
    so.observers.push_back(&crash_at);
    CHECK_THROWS_AS(search(p, default_policies(p), ev, so), crash);
  }
  const auto before = read_journal(dir / "resumed.jsonl");
  REQUIRE(before.outcomes.size() > 10);
  REQUIRE(before.last_seq < 300);
  REQUIRE(before.outcomes.size() < whole.counters.evaluations);

  search_result resumed;
  {
    jsonl_journal j(dir / "resumed.jsonl", header, limits, journal_mode::resume);
    REQUIRE(j.resumed());
    CHECK(j.resumed()->last_seq == before.last_seq);
    synthetic_evaluator ev(land());
    auto so = options_for(limits);
    so.journal = &j;
    so.resume = j.resumed();
    resumed = search(p, default_policies(p), ev, so);
  }
  REQUIRE(whole.best);
  REQUIRE(resumed.best);
  CHECK(resumed.best->cand.id == whole.best->cand.id);
  CHECK(same(resumed.best_score->value, whole.best_score->value));
  CHECK(resumed.counters.evaluations == whole.counters.evaluations);
  CHECK(same(resumed.used.device_seconds, whole.used.device_seconds));
  CHECK(resumed.counters.cache_hits == before.outcomes.size());

  const auto a = read_journal(dir / "whole.jsonl");
  const auto b = read_journal(dir / "resumed.jsonl");
  CHECK(event_signatures(b) == event_signatures(a));                        // no event lost
  CHECK(lines_of_type(dir / "resumed.jsonl", "event") == a.events.size());  // none written twice
  CHECK(b.outcomes.size() == a.outcomes.size());
  for (auto const& [key, n] : outcome_counts(b)) CHECK_MESSAGE(n == 1, "evaluated twice: ", key.first, "@", key.second);
}

TEST_CASE("journal: a run stopped by a small budget, resumed with a larger one, equals the larger run") {
  // A scheduler may steer by the share of budget spent (the default one does), so the 60-evaluation run
  // is not a prefix of the 200-evaluation run: the journal re-writes the events and reuses only the
  // evaluations both runs share. Evaluation budgets keep it deterministic (no timing enters).
  temp_dir dir("extend");
  auto const& p = land().get_problem();
  const auto header = header_for_default(11);
  const auto small = evals(60), large = evals(200);

  search_result whole;
  {
    jsonl_journal j(dir / "whole.jsonl", header, large, journal_mode::create);
    synthetic_evaluator ev(land());
    auto so = options_for(large);
    so.journal = &j;
    whole = search(p, default_policies(p), ev, so);
  }
  {
    jsonl_journal j(dir / "extended.jsonl", header, small, journal_mode::create);
    synthetic_evaluator ev(land());
    auto so = options_for(small);
    so.journal = &j;
    auto r = search(p, default_policies(p), ev, so);
    REQUIRE(r.counters.evaluations < whole.counters.evaluations);
  }
  const auto first = read_journal(dir / "extended.jsonl");
  search_result extended;
  {
    jsonl_journal j(dir / "extended.jsonl", header, large, journal_mode::resume);
    REQUIRE(j.resumed());
    CHECK(j.resume_info().budget_changed);
    synthetic_evaluator ev(land());
    auto so = options_for(large);
    so.journal = &j;
    so.resume = j.resumed();
    extended = search(p, default_policies(p), ev, so);
  }
  REQUIRE(whole.best);
  REQUIRE(extended.best);
  CHECK(extended.best->cand.id == whole.best->cand.id);
  CHECK(same(extended.best_score->value, whole.best_score->value));
  CHECK(extended.counters.evaluations == whole.counters.evaluations);

  const auto a = read_journal(dir / "whole.jsonl");
  const auto b = read_journal(dir / "extended.jsonl");
  CHECK(event_signatures(b) == event_signatures(a));
  // Served from the journal: exactly the evaluations both runs asked for.
  std::set<std::pair<std::uint64_t, std::size_t>> in_whole, shared;
  for (auto const& o : a.outcomes) in_whole.insert({o.id.value, o.rung});
  for (auto const& o : first.outcomes)
    if (in_whole.contains({o.id.value, o.rung})) shared.insert({o.id.value, o.rung});
  CHECK(!shared.empty());
  CHECK(extended.counters.cache_hits == shared.size());
  // Nothing measured twice: the resumed run wrote only what it did not find.
  CHECK(b.outcomes.size() == first.outcomes.size() + extended.counters.evaluations - extended.counters.cache_hits);
  for (auto const& [key, n] : outcome_counts(b)) CHECK_MESSAGE(n == 1, "evaluated twice: ", key.first, "@", key.second);
}
