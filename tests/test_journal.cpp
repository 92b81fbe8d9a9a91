// The JSONL journal: exact round trips, torn and corrupt lines, header checks, overwrite refusal,
// and resume (in process, and the CLI killed with SIGKILL and resumed).
#include <doctest/doctest.h>

#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <bit>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <functional>
#include <kernelbrain/io/journal.hpp>
#include <kernelbrain/search.hpp>
#include <limits>
#include <map>
#include <optional>
#include <set>
#include <sstream>
#include <string>
#include <thread>
#include <vector>
#include "process_helpers.hpp"
#include "temp_dir.hpp"

extern char** environ;

using namespace kernelbrain;
namespace fs = std::filesystem;

namespace {

synthetic_landscape const& land() {
  static const synthetic_landscape l{};
  return l;
}

using kb_test::temp_dir;

using kb_test::slurp;

void spit(fs::path const& p, std::string const& text) {
  std::ofstream out(p, std::ios::binary | std::ios::trunc);
  out << text;
}

std::vector<std::string> split_lines(std::string const& text) {
  std::vector<std::string> out;
  std::size_t start = 0;
  for (std::size_t nl; (nl = text.find('\n', start)) != std::string::npos; start = nl + 1)
    out.push_back(text.substr(start, nl - start));
  return out;
}

/// Same double to the bit (NaN: any NaN, since JSON keeps no payload).
bool same(double a, double b) {
  if (std::isnan(a) || std::isnan(b)) return std::isnan(a) && std::isnan(b);
  return std::bit_cast<std::uint64_t>(a) == std::bit_cast<std::uint64_t>(b);
}

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

void check_same(evaluation_outcome const& x, evaluation_outcome const& y) {
  CHECK(x.id == y.id);
  CHECK(x.rung == y.rung);
  CHECK(x.gated == y.gated);
  CHECK(x.gate == y.gate);
  CHECK(x.m.result == y.m.result);
  REQUIRE(x.m.timings.size() == y.m.timings.size());
  for (std::size_t i = 0; i < x.m.timings.size(); ++i) {
    auto const& tx = x.m.timings[i];
    auto const& ty = y.m.timings[i];
    CHECK(tx.shape == ty.shape);
    REQUIRE(tx.samples.size() == ty.samples.size());
    for (std::size_t j = 0; j < tx.samples.size(); ++j) CHECK_MESSAGE(same(tx.samples[j], ty.samples[j]), "sample ", j);
    CHECK(same(tx.stats.median, ty.stats.median));
    CHECK(same(tx.stats.low, ty.stats.low));
    CHECK(same(tx.stats.high, ty.stats.high));
  }
  REQUIRE(x.m.res.has_value() == y.m.res.has_value());
  if (x.m.res) {
    CHECK(x.m.res->registers == y.m.res->registers);
    CHECK(x.m.res->spill_bytes == y.m.res->spill_bytes);
    CHECK(x.m.res->shared_bytes == y.m.res->shared_bytes);
    CHECK(same(x.m.res->occupancy, y.m.res->occupancy));
  }
  REQUIRE(x.m.vs_incumbent.has_value() == y.m.vs_incumbent.has_value());
  if (x.m.vs_incumbent) {
    CHECK(x.m.vs_incumbent->incumbent == y.m.vs_incumbent->incumbent);
    CHECK(same(x.m.vs_incumbent->ratio.median, y.m.vs_incumbent->ratio.median));
    CHECK(same(x.m.vs_incumbent->ratio.low, y.m.vs_incumbent->ratio.low));
    CHECK(same(x.m.vs_incumbent->ratio.high, y.m.vs_incumbent->ratio.high));
  }
  REQUIRE(x.m.profile.size() == y.m.profile.size());
  for (auto const& [k, v] : x.m.profile) {
    REQUIRE(y.m.profile.contains(k));
    CHECK(same(v, y.m.profile.at(k)));
  }
  CHECK(x.m.diagnosis == y.m.diagnosis);
  CHECK(same(x.m.device_seconds, y.m.device_seconds));
  CHECK(same(x.wall_seconds, y.wall_seconds));
}

/// A history with two candidates, for write_event's view.
struct small_history {
  std::vector<rung> rungs{rung{"smoke", {0}}, rung{"screen", {0, 1}}, rung{"confirm", {0, 1, 2, 3}}};
  baseline base;
  budget_meter meter;
  search_history h{land().get_problem(), rungs, base, meter};
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

/// Complete lines of one type, as written (superseded events included).
std::size_t lines_of_type(fs::path const& journal, std::string const& type) {
  const auto needle = "\"type\":\"" + type + "\"";
  std::size_t n = 0;
  for (auto const& line : split_lines(slurp(journal))) n += line.find(needle) != std::string::npos ? 1 : 0;
  return n;
}

std::map<std::pair<std::uint64_t, std::size_t>, int> outcome_counts(journal_contents const& c) {
  std::map<std::pair<std::uint64_t, std::size_t>, int> n;
  for (auto const& o : c.outcomes) ++n[{o.id.value, o.rung}];
  return n;
}

/// The parts of an event that a replay must reproduce (everything but wall-clock facts).
std::string event_signature(journal_event const& je) {
  auto const& e = je.e;
  std::string s = std::to_string(e.seq) + " " + std::string(to_string(e.kind)) + " " + e.id.str() + " " +
                  std::to_string(e.rung) + " " + std::string(to_string(e.result.where)) + " " + e.note;
  if (e.value)
    s += " " + std::to_string(std::bit_cast<std::uint64_t>(e.value->value)) + "/" +
         std::to_string(std::bit_cast<std::uint64_t>(e.value->speedup));
  if (je.cand) s += " " + je.cand->family + " " + je.cand->params.to_string() + " " + je.cand->origin;
  return s;
}
std::vector<std::string> event_signatures(journal_contents const& c) {
  std::vector<std::string> out;
  for (auto const& je : c.events) out.push_back(event_signature(je));
  return out;
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
    CHECK(j.resumed()->last_seq == 10);
    CHECK_FALSE(j.resume_info().budget_changed);
    j.write_event({event_kind::dispatched, 11, sh.child.id, 0, {}, std::nullopt, {}}, sh.view());
  }
  auto c = read_journal(path);
  CHECK(c.segments == 2);
  CHECK(c.events.size() == 11);
  CHECK(c.last_seq == 11);
  {
    jsonl_journal j(path, sample_header(), evals(500), journal_mode::resume);
    REQUIRE(j.resumed());
    CHECK(j.resumed()->last_seq == 0);  // the engine writes every event again
    CHECK(j.resume_info().budget_changed);
    CHECK(j.resume_info().previous_limits.evaluations == 100);
    CHECK(j.resumed()->outcomes.size() == 2);  // measurements are reused all the same
    j.write_event({event_kind::proposed, 1, sh.child.id, 0, {}, std::nullopt, "again"}, sh.view());
  }
  c = read_journal(path);
  CHECK(c.segments == 3);
  CHECK(c.limits.evaluations == 500);
  REQUIRE(c.events.size() == 1);  // the superseded events are gone from the run's stream
  CHECK(c.events[0].e.note == "again");
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

#ifdef KB_CLI_PATH
namespace {

/// Starts the CLI with stdout and stderr sent to files; returns its pid.
pid_t spawn_cli(std::vector<std::string> args, fs::path const& out, fs::path const& err) {
  args.insert(args.begin(), KB_CLI_PATH);
  std::vector<char*> argv;
  for (auto& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_addopen(&fa, STDOUT_FILENO, out.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  posix_spawn_file_actions_addopen(&fa, STDERR_FILENO, err.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  pid_t pid = -1;
  const int rc = posix_spawn(&pid, KB_CLI_PATH, &fa, nullptr, argv.data(), environ);
  posix_spawn_file_actions_destroy(&fa);
  REQUIRE_MESSAGE(rc == 0, "cannot start ", KB_CLI_PATH);
  return pid;
}

struct cli_run {
  int exit_code = -1;
  std::string out, err;
};

cli_run run_cli(std::vector<std::string> args, temp_dir const& dir) {
  const auto out = dir / "stdout.txt", err = dir / "stderr.txt";
  const pid_t pid = spawn_cli(std::move(args), out, err);
  int status = 0;
  REQUIRE(::waitpid(pid, &status, 0) == pid);
  cli_run r;
  r.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  r.out = slurp(out);
  r.err = slurp(err);
  return r;
}

/// A row of the summary table: "  cache hits       157" -> "157".
std::string summary(std::string const& out, std::string const& key) {
  for (auto const& line : split_lines(out)) {
    const auto start = line.find_first_not_of(' ');
    if (start == std::string::npos || line.compare(start, key.size(), key) != 0) continue;
    const auto rest = line.find_first_not_of(' ', start + key.size());
    if (rest != std::string::npos && rest > start + key.size()) return line.substr(rest);
  }
  FAIL("no '", key, "' row in the summary:\n", out);
  return {};
}

}  // namespace

TEST_CASE("cli: a run killed with SIGKILL and resumed ends exactly like an uninterrupted one") {
  temp_dir dir("cli_resume");
  const std::vector<std::string> common{"tune",     "synthetic", "--backend", "synthetic", "--strategy",   "default",
                                        "--budget", "300evals",  "--seed",    "5",         "--no-progress"};
  auto with = [&](std::vector<std::string> extra) {
    auto a = common;
    a.insert(a.end(), extra.begin(), extra.end());
    return a;
  };

  const auto whole = run_cli(with({"--journal", (dir / "whole.jsonl").string()}), dir);
  REQUIRE_MESSAGE(whole.exit_code == 0, whole.err);

  // Slowed so that the kill lands mid-run; --slow-eval-ms changes neither results nor the header.
  const auto killed_journal = dir / "killed.jsonl";
  const pid_t pid =
      spawn_cli(with({"--journal", killed_journal.string(), "--slow-eval-ms", "5"}), dir / "k.out", dir / "k.err");
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
  bool exited_early = false;
  while (lines_of_type(killed_journal, "outcome") < 40) {
    int status = 0;
    if (::waitpid(pid, &status, WNOHANG) == pid) {
      exited_early = true;
      break;
    }
    if (std::chrono::steady_clock::now() > deadline) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  REQUIRE_MESSAGE(!exited_early, "the run finished before it could be killed: raise --slow-eval-ms");
  REQUIRE(::kill(pid, SIGKILL) == 0);
  int status = 0;
  REQUIRE(::waitpid(pid, &status, 0) == pid);
  REQUIRE(WIFSIGNALED(status));
  REQUIRE(WTERMSIG(status) == SIGKILL);

  const auto at_kill = read_journal(killed_journal);  // a torn last line, if any, is not counted
  REQUIRE(at_kill.outcomes.size() >= 40);
  REQUIRE(at_kill.outcomes.size() < std::stoull(summary(whole.out, "evaluations")));
  for (auto const& e : at_kill.events) REQUIRE(e.e.kind != event_kind::stopped);

  const auto resumed = run_cli(with({"--journal", killed_journal.string(), "--resume"}), dir);
  REQUIRE_MESSAGE(resumed.exit_code == 0, resumed.err);
  CHECK(summary(resumed.out, "best candidate") == summary(whole.out, "best candidate"));
  CHECK(summary(resumed.out, "score") == summary(whole.out, "score"));
  CHECK(summary(resumed.out, "evaluations") == summary(whole.out, "evaluations"));
  CHECK(summary(resumed.out, "device seconds") == summary(whole.out, "device seconds"));
  CHECK(summary(resumed.out, "cache hits") == std::to_string(at_kill.outcomes.size()));
  CHECK(summary(whole.out, "cache hits") == "0");

  const auto a = read_journal(dir / "whole.jsonl");
  const auto b = read_journal(killed_journal);
  CHECK(b.torn_bytes == 0);
  CHECK(b.outcomes.size() == a.outcomes.size());
  for (auto const& [key, n] : outcome_counts(b)) CHECK_MESSAGE(n == 1, "evaluated twice: ", key.first, "@", key.second);
  CHECK(event_signatures(b) == event_signatures(a));
  CHECK(lines_of_type(killed_journal, "event") == a.events.size());
}

TEST_CASE("cli: a host-backend search killed with SIGKILL resumes without re-evaluating anything") {
  temp_dir dir("cli_host_resume");
  const auto journal = dir / "host.jsonl";
  const std::vector<std::string> args{"tune",   "softmax", "--backend", "host", "--budget", "14evals", "--seed", "3",
                                      "--journal", journal.string(), "--no-progress"};
  const pid_t pid = spawn_cli(args, dir / "k.out", dir / "k.err");
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(120);
  bool exited_early = false;
  while (lines_of_type(journal, "outcome") < 5) {
    int status = 0;
    if (::waitpid(pid, &status, WNOHANG) == pid) { exited_early = true; break; }
    REQUIRE_MESSAGE(std::chrono::steady_clock::now() < deadline, "no 5 outcomes within 120 s: ", slurp(dir / "k.err"));
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  REQUIRE_MESSAGE(!exited_early, "the host run finished before it could be killed: ", slurp(dir / "k.err"));
  REQUIRE(::kill(pid, SIGKILL) == 0);
  int status = 0;
  REQUIRE(::waitpid(pid, &status, 0) == pid);
  REQUIRE(WIFSIGNALED(status));

  const auto at_kill = read_journal(journal);
  REQUIRE(at_kill.outcomes.size() >= 5);
  auto resume_args = args;
  resume_args.push_back("--resume");
  const auto resumed = run_cli(resume_args, dir);
  REQUIRE_MESSAGE(resumed.exit_code == 0, resumed.err);
  CHECK(summary(resumed.out, "evaluations") == "14");
  CHECK(summary(resumed.out, "cache hits") == std::to_string(at_kill.outcomes.size()));
  const auto after = read_journal(journal);
  CHECK(after.outcomes.size() == 14);  // 14 evaluations, each measured exactly once across both runs
  for (auto const& [key, n] : outcome_counts(after)) CHECK_MESSAGE(n == 1, "evaluated twice: ", key.first, "@", key.second);
  // What was measured before the kill is kept as it was.
  for (std::size_t i = 0; i < at_kill.outcomes.size(); ++i) check_same(at_kill.outcomes[i], after.outcomes[i]);
}

TEST_CASE("cli: mistakes exit with code 2 and a message naming the argument") {
  temp_dir dir("cli_errors");
  auto expect = [&](std::vector<std::string> args, std::string const& needle) {
    const auto r = run_cli(args, dir);
    CHECK_MESSAGE(r.exit_code == 2, needle, " -> ", r.err);
    CHECK_MESSAGE(r.err.find(needle) != std::string::npos, needle, " -> ", r.err);
  };
  expect({"frobnicate"}, "unknown command 'frobnicate'");
  expect({"tune", "synthetic", "--budget", "10evals", "--colour"}, "unknown option '--colour'");
  expect({"tune", "synthetic", "--budget"}, "--budget needs a value");
  expect({"tune", "synthetic", "--budget", "300"}, "has no unit");
  expect({"tune", "synthetic", "--budget", "10evals", "--seed", "x3"}, "--seed: 'x3' is not a whole number");
  expect({"tune", "synthetic", "--budget", "10evals", "--strategy", "nope"},
         "unknown strategy 'nope': known strategies are default");
  expect({"tune", "synthetic", "--budget", "10evals", "--backend", "opencl"}, "unknown backend 'opencl'");
  const auto j = (dir / "j.jsonl").string();
  expect({"tune", "synthetic", "--budget", "10evals", "--journal", j, "--resume"}, "does not exist");
  const auto first = run_cli({"tune", "synthetic", "--budget", "10evals", "--journal", j, "--seed", "3"}, dir);
  REQUIRE_MESSAGE(first.exit_code == 0, first.err);
  expect({"tune", "synthetic", "--budget", "10evals", "--journal", j}, "already exists");
  expect({"tune", "synthetic", "--budget", "10evals", "--journal", j, "--resume", "--seed", "4"},
         "seed 3; this run has seed 4: use --seed 3");
  const auto help = run_cli({"--help"}, dir);
  CHECK(help.exit_code == 0);
  CHECK(help.out.find("kernelbrain tune <problem>") != std::string::npos);
}
TEST_CASE("cli: a host search killed with SIGKILL leaves no worker, compiler or candidate running") {
  // Every process the search started carries the marker in its environment, wherever it was
  // re-parented to after the kill: serving workers (spinning in a candidate that never returns),
  // the compile supervisor, g++ and its cc1plus.
  temp_dir dir("cli_orphans");
  const auto problem_dir = dir.path / "problem";
  fs::create_directories(problem_dir / "templates");
  spit(problem_dir / "problem.json", R"({
  "name": "never_done",
  "backend": "host",
  "signature": "y = 2 x; every candidate of this problem hangs or never compiles",
  "dims": ["N"],
  "inputs": [{"name": "x", "size": "N"}],
  "outputs": [{"name": "y", "size": "N"}],
  "shapes": [{"name": "small", "dims": {"N": 64}, "tier": "smoke"}, {"name": "odd", "dims": {"N": 67}, "tier": "odd"}],
  "tolerance": {"rtol": 1e-5, "atol": 1e-6},
  "cost": {"bytes": "8 * N", "flops": "N"},
  "reference": "reference.cpp",
  "seed": "seed.cpp",
  "catalogue": [{"name": "stuck", "prose": "never finishes", "template": "templates/stuck.cpp",
                 "parameters": {"K": [1, 2, 3, 4, 5, 6, 7, 8]}}]
})");
  spit(problem_dir / "reference.cpp", R"(#include "kernelbrain/evaluate/host_abi.h"
extern "C" void kb_kernel(const kb_args* a) {
  for (long long i = 0; i < a->dims[0]; ++i) a->outputs[0][i] = 2.0f * a->inputs[0][i];
}
)");
  std::string seed;
  // The moment to kill the search, given the marked processes.
  std::function<bool(std::vector<kb_test::process_info> const&)> ready;
  std::string moment;
  SUBCASE("while a serving worker runs a candidate that never returns") {
    seed = R"(#include "kernelbrain/evaluate/host_abi.h"
extern "C" void kb_kernel(const kb_args* a) {
  volatile unsigned long long spin = static_cast<unsigned long long>(a->dims[0]) * ${K};
  for (;;) spin = spin + 1;
}
)";
    // The reference worker starts first (and spends seconds of CPU on the baseline's cache
    // flushes); the youngest serving worker is the candidate worker, and once it has used a second
    // of CPU it is inside kb_kernel (a check at these shapes takes microseconds; the watchdog
    // allows 10 s per call).
    ready = [](std::vector<kb_test::process_info> const& ps) {
      std::vector<kb_test::process_info> serving;
      for (auto const& p : ps)
        if (p.cmdline.find("--serve host") != std::string::npos) serving.push_back(p);
      if (serving.size() < 2) return false;
      auto const& youngest = *std::max_element(serving.begin(), serving.end(), [](auto const& a, auto const& b) {
        return a.start_ticks < b.start_ticks || (a.start_ticks == b.start_ticks && a.pid < b.pid);
      });
      return youngest.cpu_seconds > 1.0;
    };
    moment = "a serving worker spinning in a candidate";
  }
  SUBCASE("while the compiler runs") {
    seed = R"(#include "kernelbrain/evaluate/host_abi.h"
template <int Depth, long Index>
struct node {
  static constexpr long value = node<Depth - 1, 2 * Index>::value + node<Depth - 1, 2 * Index + 1>::value;
};
template <long Index>
struct node<0, Index> {
  static constexpr long value = Index & 1;
};
extern "C" void kb_kernel(const kb_args* a) { a->outputs[0][0] = static_cast<float>(node<40, ${K}>::value); }
)";
    // The reference compiles in well under a second of CPU; the compile bomb takes the full 60 s.
    ready = [](std::vector<kb_test::process_info> const& ps) {
      return std::any_of(ps.begin(), ps.end(),
                         [](auto const& p) { return p.comm == "cc1plus" && p.cpu_seconds > 1.0; });
    };
    moment = "cc1plus compiling a candidate";
  }
  std::string seed_source = seed;  // the seed is the template's point K = 1
  seed_source.replace(seed_source.find("${K}"), 4, "1");
  spit(problem_dir / "seed.cpp", seed_source);
  spit(problem_dir / "templates" / "stuck.cpp", seed);

  const auto mark = kb_test::unique_marker("cli");
  struct cleanup {  // whatever happens below, this test leaves nothing running
    std::string mark;
    ~cleanup() { kb_test::kill_marked(mark); }
  } leave_nothing{mark};
  pid_t pid = -1;
  {
    // The child inherits the marker and a private artifact cache; this process keeps neither.
    struct scoped_env {
      std::string name;
      std::optional<std::string> old;
      scoped_env(std::string n, std::string const& value) : name(std::move(n)) {
        if (char const* o = std::getenv(name.c_str())) old = o;
        ::setenv(name.c_str(), value.c_str(), 1);
      }
      ~scoped_env() {
        if (old)
          ::setenv(name.c_str(), old->c_str(), 1);
        else
          ::unsetenv(name.c_str());
      }
    };
    scoped_env m("KB_TEST_MARK", mark), cache("KERNELBRAIN_CACHE_DIR", (dir / "cache").string());
    pid = spawn_cli({"tune", problem_dir.string(), "--budget", "200evals", "--seed", "1", "--no-progress"},
                    dir / "k.out", dir / "k.err");
  }
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(120);
  std::vector<kb_test::process_info> at_kill;
  bool exited_early = false, found = false;
  while (!found) {
    int status = 0;
    if (::waitpid(pid, &status, WNOHANG) == pid) {
      exited_early = true;
      break;
    }
    if (std::chrono::steady_clock::now() > deadline) break;
    at_kill = kb_test::marked_processes(mark);
    found = ready(at_kill);
    if (!found) std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  if (!exited_early) {
    REQUIRE(::kill(pid, SIGKILL) == 0);
    int status = 0;
    REQUIRE(::waitpid(pid, &status, 0) == pid);
  }
  INFO("processes when the search was killed:", kb_test::describe_all(at_kill));
  REQUIRE_MESSAGE(!exited_early, "the search ended before it could be killed: ", slurp(dir / "k.err"));
  REQUIRE_MESSAGE(found, "no ", moment, " within 120 s: ", slurp(dir / "k.err"));
  const auto left = kb_test::wait_until_none(mark, std::chrono::seconds(3));
  CHECK_MESSAGE(left.empty(), "still running 3 s after the search was killed:", kb_test::describe_all(left));
}
#endif
