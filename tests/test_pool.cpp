// Evaluator pools: one search over several evaluators (one per GPU, or per MPI rank). The same
// decisions as with one evaluator, evaluations that really overlap, members on one device that never
// time at once, each member scored against its own baseline, a lost member's evaluation re-queued,
// and a pool search resumed from its journal without measuring anything twice.
#include <doctest/doctest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <kernelbrain/io/journal.hpp>
#include <kernelbrain/search.hpp>
#include <map>
#include <mutex>
#include <set>
#include <string>
#include <thread>
#include <vector>
#include "temp_dir.hpp"

using namespace kernelbrain;

namespace {

synthetic_landscape const& landscape() {
  static const synthetic_landscape land{};
  return land;
}

struct recorder final : observer {
  std::vector<event> events;
  void on_event(event const& e, search_view const&) override { events.push_back(e); }
};

/// Keeps every outcome the plane journals (any thread).
struct outcome_sink final : journal_sink {
  std::mutex mu;
  std::vector<evaluation_outcome> outcomes;
  std::vector<std::size_t> baseline_slots;
  void write_outcome(evaluation_outcome const& o) override {
    const std::lock_guard lk(mu);
    outcomes.push_back(o);
  }
  void write_event(event const&, search_view const&) override {}
  void write_baseline(baseline const&) override { baseline_slots.push_back(0); }
  void write_member_baseline(baseline const&, std::size_t slot, std::string const&) override {
    baseline_slots.push_back(slot);
  }
};

/// How many calls are inside measure() at once, across every evaluator that shares it.
struct concurrency {
  std::mutex mu;
  std::condition_variable cv;
  int now = 0;
  int most = 0;
  /// Enters; waits (bounded) for a second caller, so that two calls that can overlap do overlap even
  /// on a busy machine, and leaves.
  void visit(std::chrono::milliseconds wait_for_company) {
    std::unique_lock lk(mu);
    most = std::max(most, ++now);
    cv.notify_all();
    cv.wait_for(lk, wait_for_company, [&] { return now >= 2; });
    most = std::max(most, now);
    lk.unlock();
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
    lk.lock();
    --now;
  }
};

/// A synthetic evaluator that counts its calls, can report its device as `slowdown` times slower
/// (timings and baseline alike), can wait in measure() for company, and can be lost after some calls.
class probe_evaluator final : public evaluator {
 public:
  explicit probe_evaluator(double slowdown = 1.0) : inner_(landscape()), slowdown_(slowdown) {}
  concurrency* overlap = nullptr;
  std::chrono::milliseconds company{0};
  /// How long each measure() takes (0: as long as the synthetic evaluator's): a pool's members then share
  /// the work even when a loaded machine is slow to wake one of their threads.
  std::chrono::milliseconds dwell{0};
  int lost_at_measure = -1;  ///< throw evaluator_lost on this measure() call (0-based); -1: never
  std::atomic<int> measures{0};
  std::atomic<int> baselines{0};

  std::mutex prefetch_mu;
  std::set<candidate_id> prefetched;
  std::map<candidate_id, int> measured;  ///< measure() calls per candidate

  [[nodiscard]] std::string fingerprint() const override { return inner_.fingerprint(); }
  void prefetch(candidate const& c) override {
    const std::lock_guard lk(prefetch_mu);
    prefetched.insert(c.id);
  }
  [[nodiscard]] verdict build(candidate const& c) override { return inner_.build(c); }
  [[nodiscard]] verdict check(candidate const& c, std::span<std::size_t const> shapes, int trials,
                              std::uint64_t seed) override {
    return inner_.check(c, shapes, trials, seed);
  }
  [[nodiscard]] measurement measure(candidate const& c, rung const& r, measure_request const& req) override {
    const int call = measures++;
    {
      const std::lock_guard lk(prefetch_mu);
      ++measured[c.id];
    }
    if (call == lost_at_measure) throw evaluator_lost("probe: device fell off the bus");
    if (overlap) overlap->visit(company);
    if (dwell.count() > 0) std::this_thread::sleep_for(dwell);
    auto m = inner_.measure(c, r, req);
    for (auto& t : m.timings) {
      for (auto& s : t.samples) s *= slowdown_;
      t.stats.median *= slowdown_;
      t.stats.low *= slowdown_;
      t.stats.high *= slowdown_;
    }
    return m;
  }
  [[nodiscard]] baseline measure_baseline(problem const& p) override {
    ++baselines;
    auto b = inner_.measure_baseline(p);
    for (auto& s : b.seconds) s *= slowdown_;
    return b;
  }
  [[nodiscard]] double take_device_seconds() override { return inner_.take_device_seconds(); }

 private:
  synthetic_evaluator inner_;
  double slowdown_;
};

search_options options(std::uint64_t seed, std::size_t evaluations, recorder* rec = nullptr) {
  search_options o;
  o.seed = seed;
  o.limits.evaluations = evaluations;
  o.max_in_flight = 6;  // the same depth for every pool size: the same decisions
  if (rec) o.observers = {rec};
  return o;
}

/// The decisions of a search: every event's kind, candidate and rung, in order.
std::vector<std::string> decisions(recorder const& r) {
  std::vector<std::string> out;
  for (auto const& e : r.events)
    out.push_back(std::string(to_string(e.kind)) + " " + e.id.str() + " " + std::to_string(e.rung));
  return out;
}

}  // namespace

TEST_CASE("a pool of three makes the same decisions and finds the same best as one evaluator") {
  auto const& p = landscape().get_problem();
  recorder one_rec, pool_rec;
  probe_evaluator solo;
  const auto one = search(p, default_policies(p), solo, options(5, 150, &one_rec));

  probe_evaluator a, b, c;
  for (auto* e : {&a, &b, &c}) e->dwell = std::chrono::milliseconds(2);
  evaluator_pool pool;
  pool.add(a, "a").add(b, "b").add(c, "c");
  outcome_sink sink;
  auto o = options(5, 150, &pool_rec);
  o.journal = &sink;
  const auto three = search(p, default_policies(p), pool, o);

  REQUIRE(one.best);
  REQUIRE(three.best);
  CHECK(three.best->cand.id == one.best->cand.id);
  CHECK(three.best_score->value == one.best_score->value);
  CHECK(three.used.evaluations == 150);
  CHECK(decisions(pool_rec) == decisions(one_rec));
  // The work was shared, and every outcome says who measured it.
  std::set<std::size_t> slots;
  for (auto const& out : sink.outcomes) {
    slots.insert(out.slot);
    CHECK(out.member == std::string(1, static_cast<char>('a' + out.slot)));
  }
  CHECK(slots.size() == 3);
  CHECK(a.measures + b.measures + c.measures ==
        static_cast<int>(sink.outcomes.size()) -
            static_cast<int>(std::count_if(sink.outcomes.begin(), sink.outcomes.end(),
                                           [](auto const& x) { return !x.gate.passed(); })));
  // Each member measured its own baseline, journaled by slot.
  CHECK(a.baselines == 1);
  CHECK(b.baselines == 1);
  CHECK(c.baselines == 1);
  std::sort(sink.baseline_slots.begin(), sink.baseline_slots.end());
  CHECK(sink.baseline_slots == std::vector<std::size_t>{0, 1, 2});
}

TEST_CASE("pool members evaluate at once, except two members on one device, which take turns timing") {
  auto const& p = landscape().get_problem();
  SUBCASE("two devices: measure() calls overlap") {
    concurrency seen;
    probe_evaluator a, b;
    for (auto* e : {&a, &b}) {
      e->overlap = &seen;
      e->company = std::chrono::milliseconds(2000);
    }
    evaluator_pool pool;
    pool.add(a, "cuda:0", "gpu0").add(b, "cuda:1", "gpu1");
    (void)search(p, default_policies(p), pool, options(3, 12));
    CHECK(seen.most == 2);
  }
  SUBCASE("one device: never two timings at once") {
    concurrency seen;
    probe_evaluator a, b;
    for (auto* e : {&a, &b}) {
      e->overlap = &seen;
      e->company = std::chrono::milliseconds(50);  // a second caller would get in: it must not
    }
    evaluator_pool pool;
    pool.add(a, "cuda:0 worker 1", "gpu0").add(b, "cuda:0 worker 2", "gpu0");
    const auto r = search(p, default_policies(p), pool, options(3, 12));
    CHECK(r.used.evaluations == 12);
    CHECK(a.measures > 0);
    CHECK(b.measures > 0);
    CHECK(seen.most == 1);
  }
}

TEST_CASE("each member is scored against its own baseline: a slower device does not change the search") {
  auto const& p = landscape().get_problem();
  recorder one_rec, pool_rec;
  probe_evaluator solo;
  const auto one = search(p, default_policies(p), solo, options(9, 90, &one_rec));
  probe_evaluator fast, slow(2.0);  // every time twice as long, the reference's too
  for (auto* e : {&fast, &slow}) e->dwell = std::chrono::milliseconds(2);  // both share the work on a busy machine
  evaluator_pool pool;
  pool.add(fast, "fast").add(slow, "slow");
  const auto two = search(p, default_policies(p), pool, options(9, 90, &pool_rec));
  REQUIRE(two.best);
  CHECK(slow.measures > 0);
  CHECK(two.best->cand.id == one.best->cand.id);
  CHECK(two.best_score->speedup == doctest::Approx(one.best_score->speedup).epsilon(1e-12));
  CHECK(decisions(pool_rec) == decisions(one_rec));
}

TEST_CASE("a lost member's evaluation is re-queued on another, and the search goes on without it") {
  auto const& p = landscape().get_problem();
  recorder one_rec, pool_rec;
  probe_evaluator solo;
  const auto one = search(p, default_policies(p), solo, options(4, 80, &one_rec));

  probe_evaluator a, b, c;
  b.lost_at_measure = 2;
  // Each measurement waits (up to 200 ms) for one on another member, so that b gets its three
  // requests even when a busy machine would let the first member free take them all.
  concurrency together;
  for (auto* e : {&a, &b, &c}) {
    e->overlap = &together;
    e->company = std::chrono::milliseconds(200);
  }
  evaluator_pool pool;
  pool.add(a, "a").add(b, "b").add(c, "c");
  outcome_sink sink;
  std::vector<std::string> notes;
  std::mutex notes_mu;
  auto o = options(4, 80, &pool_rec);
  o.journal = &sink;
  o.on_pool_note = [&](std::string const& n) {
    const std::lock_guard lk(notes_mu);
    notes.push_back(n);
  };
  const auto r = search(p, default_policies(p), pool, o);
  REQUIRE(notes.size() == 1);
  CHECK(notes[0].find("pool member b lost") != std::string::npos);
  CHECK(notes[0].find("fell off the bus") != std::string::npos);
  CHECK(b.measures == 3);  // two measured, the third lost; none after
  // b's outcomes are the two it measured before it was lost; nothing was recorded lost (the third went
  // to another member), and the search is the same one.
  CHECK(std::count_if(sink.outcomes.begin(), sink.outcomes.end(), [](auto const& x) { return x.slot == 1; }) >= 2);
  for (auto const& out : sink.outcomes) CHECK(out.m.result.where != stage::infrastructure);
  CHECK(r.used.evaluations == 80);
  CHECK(r.best->cand.id == one.best->cand.id);
  CHECK(decisions(pool_rec) == decisions(one_rec));
}

TEST_CASE("when every member is lost the search stops with an error, and what was measured is journaled") {
  auto const& p = landscape().get_problem();
  probe_evaluator only;
  only.lost_at_measure = 3;
  outcome_sink sink;
  auto o = options(2, 40);
  o.journal = &sink;
  CHECK_THROWS_WITH_AS(search(p, default_policies(p), evaluator_pool(only, "only"), o),
                       doctest::Contains("every evaluator of the pool was lost"), error);
  std::size_t measured = 0, lost = 0;
  for (auto const& out : sink.outcomes) {
    if (out.m.result.where == stage::infrastructure) {
      ++lost;
      CHECK(out.m.result.detail.find("fell off the bus") != std::string::npos);
    } else if (!out.m.timings.empty()) {
      ++measured;
    }
  }
  CHECK(measured == 3);
  CHECK(lost >= 1);
}

TEST_CASE("a pool search resumed from its journal measures nothing again, baselines included") {
  auto const& p = landscape().get_problem();
  kb_test::temp_dir dir("pool_resume");
  const auto file = dir.path / "pool.jsonl";
  const run_header header{"synthetic", "default", 6, "synthetic", "ladder"};
  search_result first;
  {
    probe_evaluator a, b;
    // Each measurement waits (up to 200 ms) for one on the other member, so that both members measure
    // even when a busy machine would let the first one free take every request.
    concurrency together;
    for (auto* e : {&a, &b}) {
      e->overlap = &together;
      e->company = std::chrono::milliseconds(200);
    }
    evaluator_pool pool;
    pool.add(a, "a").add(b, "b");
    jsonl_journal j(file, header, budget{.evaluations = 60}, journal_mode::create);
    auto o = options(6, 60);
    o.journal = &j;
    first = search(p, default_policies(p), pool, o);
    j.throw_if_failed();
  }
  const auto recorded = read_journal(file);
  REQUIRE(recorded.reference);
  REQUIRE(recorded.member_references.size() == 1);
  CHECK(recorded.member_references.contains(1));
  std::set<std::size_t> slots;
  for (auto const& out : recorded.outcomes) slots.insert(out.slot);
  CHECK(slots == std::set<std::size_t>{0, 1});

  probe_evaluator a, b;
  evaluator_pool pool;
  pool.add(a, "a").add(b, "b");
  jsonl_journal j(file, header, budget{.evaluations = 60}, journal_mode::resume);
  auto o = options(6, 60);
  o.journal = &j;
  o.resume = j.resumed();
  const auto again = search(p, default_policies(p), pool, o);
  CHECK(a.measures + b.measures == 0);
  CHECK(a.baselines + b.baselines == 0);
  CHECK(again.best->cand.id == first.best->cand.id);
  CHECK(again.best_score->value == first.best_score->value);
  CHECK(read_journal(file).outcomes.size() == recorded.outcomes.size());
}

TEST_CASE("a pool needs members, and a member's failed baseline names the member") {
  auto const& p = landscape().get_problem();
  CHECK_THROWS_WITH_AS(search(p, default_policies(p), evaluator_pool{}), doctest::Contains("no members"), error);
  struct no_baseline final : public evaluator {
    [[nodiscard]] std::string fingerprint() const override { return "x"; }
    [[nodiscard]] verdict build(candidate const&) override { return verdict::pass(); }
    [[nodiscard]] verdict check(candidate const&, std::span<std::size_t const>, int, std::uint64_t) override {
      return verdict::pass();
    }
    [[nodiscard]] measurement measure(candidate const&, rung const&, measure_request const&) override { return {}; }
    [[nodiscard]] baseline measure_baseline(problem const&) override { throw error("the reference crashed"); }
    [[nodiscard]] double take_device_seconds() override { return 0; }
  } broken;
  probe_evaluator good;
  evaluator_pool pool;
  pool.add(good, "cuda:0").add(broken, "rank 3 cuda:1");
  CHECK_THROWS_WITH_AS(search(p, default_policies(p), pool),
                       doctest::Contains("pool member rank 3 cuda:1 failed: the reference crashed"), error);
}

TEST_CASE("each candidate is compiled ahead on one node, its home, and the nodes share the candidates") {
  auto const& p = landscape().get_problem();
  recorder one_rec, pool_rec;
  probe_evaluator solo;
  auto o = options(8, 120, &one_rec);
  o.max_in_flight = 8;  // what a pool of four uses (2 x 4): the same depth, the same decisions
  const auto one = search(p, default_policies(p), solo, o);
  // Two nodes of two members each: only the first member of a node gets prefetches.
  probe_evaluator a1, a2, b1, b2;
  evaluator_pool pool;
  pool.add(a1, "a1", "a/gpu0", "a")
      .add(a2, "a2", "a/gpu1", "a")
      .add(b1, "b1", "b/gpu0", "b")
      .add(b2, "b2", "b/gpu1", "b");
  o.observers = {&pool_rec};
  const auto r = search(p, default_policies(p), pool, o);
  CHECK(a2.prefetched.empty());
  CHECK(b2.prefetched.empty());
  CHECK(!a1.prefetched.empty());
  CHECK(!b1.prefetched.empty());
  for (auto const& id : a1.prefetched) CHECK(!b1.prefetched.contains(id));
  CHECK(a1.prefetched.size() + b1.prefetched.size() == r.candidates);
  // Where the candidates ran changes nothing about the search.
  CHECK(decisions(pool_rec) == decisions(one_rec));
  CHECK(r.best->cand.id == one.best->cand.id);
}
