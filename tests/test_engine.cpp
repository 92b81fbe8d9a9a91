// The driver: end-to-end searches on the synthetic backend, determinism, budgets, misuse by policies,
// threading contract, and the evaluation-plane rules the driver enforces for every backend.
#include <doctest/doctest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <kernelbrain/search.hpp>
#include <map>
#include <mutex>
#include <set>
#include <span>
#include <thread>
#include <utility>

using namespace kernelbrain;

namespace {

synthetic_landscape const& landscape() {
  static const synthetic_landscape land{};
  return land;
}

double quality_ratio(search_result const& r) {
  REQUIRE(r.best);
  return landscape().quality(r.best->cand.family, r.best->cand.params) / landscape().optimum_quality();
}

/// Records every event it sees.
struct recorder final : observer {
  std::vector<event> events;
  void on_event(event const& e, search_view const&) override { events.push_back(e); }
};

/// A scheduler whose next() is scripted by a function (for misuse tests).
template <class F>
struct scripted_scheduler {
  F f;
  action next(search_view const& v) { return f(v); }
};
template <class F>
scripted_scheduler(F) -> scripted_scheduler<F>;

}  // namespace

TEST_CASE("the default composition finds the synthetic optimum within 2% on most seeds") {
  auto const& p = landscape().get_problem();
  synthetic_evaluator ev(landscape());
  int within = 0;
  for (std::uint64_t seed = 1; seed <= 8; ++seed) {
    search_options o;
    o.seed = seed;
    o.limits.evaluations = 400;
    auto r = search(p, default_policies(p), ev, o);
    CHECK(r.stop_reason == "evaluation budget spent");
    CHECK(r.best_rung == 2);  // the incumbent has passed the confirm rung
    CHECK(r.best->state != candidate_state::rejected);
    CHECK(r.best_score->speedup > 1.0);
    if (quality_ratio(r) <= 1.02) ++within;
  }
  CHECK(within >= 7);
}

TEST_CASE("the same seed gives the same search, another seed another") {
  auto const& p = landscape().get_problem();
  synthetic_evaluator ev(landscape());
  auto run = [&](std::uint64_t seed, recorder& rec) {
    search_options o;
    o.seed = seed;
    o.limits.evaluations = 250;
    o.observers = {&rec};
    return search(p, default_policies(p), ev, o);
  };
  recorder r1, r2, r3;
  auto a = run(5, r1), b = run(5, r2), c = run(6, r3);
  REQUIRE(r1.events.size() == r2.events.size());
  for (std::size_t i = 0; i < r1.events.size(); ++i) {
    REQUIRE(r1.events[i].kind == r2.events[i].kind);
    REQUIRE(r1.events[i].id == r2.events[i].id);
    REQUIRE(r1.events[i].rung == r2.events[i].rung);
  }
  CHECK(a.best->cand.id == b.best->cand.id);
  CHECK(a.used.device_seconds == b.used.device_seconds);
  bool differs = r1.events.size() != r3.events.size();
  for (std::size_t i = 0; !differs && i < r1.events.size(); ++i) differs = r1.events[i].id != r3.events[i].id;
  CHECK(differs);
}

TEST_CASE("events are ordered and consistent") {
  auto const& p = landscape().get_problem();
  synthetic_evaluator ev(landscape());
  recorder rec;
  search_options o;
  o.seed = 3;
  o.limits.evaluations = 200;
  o.observers = {&rec};
  auto r = search(p, default_policies(p), ev, o);
  std::map<candidate_id, int> stage_of;  // 0 proposed, 1 dispatched, 2 finished
  std::set<candidate_id> rejected;
  std::size_t promoted = 0, measured = 0, rejected_events = 0;
  std::uint64_t last_seq = 0;
  for (auto const& e : rec.events) {
    REQUIRE(e.seq == last_seq + 1);
    last_seq = e.seq;
    switch (e.kind) {
      case event_kind::proposed:
        REQUIRE_FALSE(stage_of.contains(e.id));
        stage_of[e.id] = 0;
        break;
      case event_kind::dispatched:
        REQUIRE(stage_of.contains(e.id));
        REQUIRE_FALSE(rejected.contains(e.id));
        stage_of[e.id] = 1;
        break;
      case event_kind::measured:
        REQUIRE(stage_of[e.id] == 1);
        REQUIRE(e.value);
        ++measured;
        break;
      case event_kind::rejected:
        REQUIRE(stage_of[e.id] == 1);
        REQUIRE_FALSE(e.result.passed());
        rejected.insert(e.id);
        ++rejected_events;
        break;
      case event_kind::promoted:
        REQUIRE(e.rung >= 1);
        ++promoted;
        break;
      case event_kind::new_best:
        REQUIRE_FALSE(rejected.contains(e.id));
        break;
      default:
        break;
    }
  }
  CHECK(rec.events.back().kind == event_kind::stopped);
  CHECK(promoted == r.counters.promotions);
  CHECK(promoted > 0);
  CHECK(rejected_events == r.counters.rejected);
  CHECK(rejected_events > 0);  // the landscape has compile failures, crashes and odd-size bugs
  CHECK(measured + rejected_events == r.counters.evaluations);
}

namespace {
/// Counts, per candidate and shape, the fresh-input correctness trials the engine asks the backend for: the
/// gate's (check) and each measurement's (the rung's shapes its request does not list as checked).
struct check_counter final : forwarding_evaluator {
  using forwarding_evaluator::forwarding_evaluator;
  std::map<std::pair<std::uint64_t, std::size_t>, int> checks;
  int claimed_unchecked = 0;  ///< a request listed a shape as checked that never was
  int measures_with_checked = 0;
  [[nodiscard]] verdict check(candidate const& c, std::span<std::size_t const> shapes, int trials,
                              std::uint64_t seed) override {
    for (auto s : shapes) ++checks[{c.id.value, s}];
    return forwarding_evaluator::check(c, shapes, trials, seed);
  }
  [[nodiscard]] measurement measure(candidate const& c, rung const& r, measure_request const& req) override {
    if (!req.checked.empty()) ++measures_with_checked;
    for (auto s : req.checked)
      if (checks[{c.id.value, s}] == 0) ++claimed_unchecked;
    for (auto s : r.shapes)
      if (req.needs_check(s)) ++checks[{c.id.value, s}];
    return forwarding_evaluator::measure(c, r, req);
  }
};
}  // namespace

TEST_CASE("a candidate passes correctness trials once per shape: the gate's and a lower rung's are not repeated") {
  auto const& p = landscape().get_problem();
  synthetic_evaluator inner(landscape());
  check_counter ev(inner);
  search_options o;
  o.seed = 3;
  o.limits.evaluations = 300;
  const auto r = search(p, default_policies(p), ev, o);
  REQUIRE(r.best);
  CHECK(r.best_rung == 2);
  CHECK(ev.measures_with_checked > 50);  // the gate's shapes at least, on every measurement after a gate
  CHECK(ev.claimed_unchecked == 0);
  REQUIRE_FALSE(ev.checks.empty());
  for (auto const& [key, n] : ev.checks) {
    INFO("candidate " << key.first << " shape " << key.second);
    CHECK(n == 1);
  }
}

TEST_CASE("budgets on every axis stop the search") {
  auto const& p = landscape().get_problem();
  synthetic_evaluator ev(landscape());
  SUBCASE("evaluations") {
    search_options o;
    o.limits.evaluations = 50;
    o.max_in_flight = 4;
    auto r = search(p, default_policies(p), ev, o);
    CHECK(r.stop_reason == "evaluation budget spent");
    CHECK(r.used.evaluations == 50);  // no evaluation is started that the budget cannot pay for
  }
  SUBCASE("device seconds") {
    search_options o;
    o.limits.device_seconds = 2.0;
    auto r = search(p, default_policies(p), ev, o);
    CHECK(r.stop_reason == "device-seconds budget spent");
    CHECK(r.used.device_seconds >= 2.0);
    CHECK(r.used.device_seconds < 3.0);
  }
  SUBCASE("candidates") {
    search_options o;
    o.limits.candidates = 30;
    auto r = search(p, default_policies(p), ev, o);
    CHECK(r.stop_reason == "candidate budget spent");
    CHECK(r.candidates >= 30);
  }
}

TEST_CASE("a scheduler that misbehaves gets a clear error or a clean stop") {
  auto const& p = landscape().get_problem();
  synthetic_evaluator ev(landscape());
  auto base = default_policies(p);
  SUBCASE("unknown candidate") {
    auto pol = std::move(base).with_scheduler(
        scripted_scheduler{[](search_view const&) -> action { return evaluate(candidate_id{12345}, 0); }});
    CHECK_THROWS_WITH_AS(search(p, std::move(pol), ev), doctest::Contains("unknown candidate"), error);
  }
  SUBCASE("rung outside the ladder") {
    auto pol = std::move(base).with_scheduler(scripted_scheduler{[](search_view const& v) -> action {
      if (v.fresh().empty()) return generate(generation_mode::explore, 1);
      return evaluate(v[v.fresh().front()].cand.id, 7);
    }});
    CHECK_THROWS_WITH_AS(search(p, std::move(pol), ev), doctest::Contains("rung 7"), error);
  }
  SUBCASE("waiting with nothing in flight ends the search") {
    auto pol = std::move(base).with_scheduler(scripted_scheduler{[](search_view const&) -> action { return wait(); }});
    auto r = search(p, std::move(pol), ev);
    CHECK(r.stop_reason.find("waited with nothing in flight") != std::string::npos);
  }
}

namespace {
/// A generator that runs dry after a few proposals, and throws on its second call.
struct flaky_generator {
  expert_generator inner;
  int calls = 0;
  std::vector<candidate> propose(search_view const& v, proposal_request const& r) {
    ++calls;
    if (calls == 2) throw error("LLM reply had no code");
    if (calls > 6) return {};
    return inner.propose(v, r);
  }
};
}  // namespace

TEST_CASE("generator failures are events, and a dry generator ends the search") {
  auto const& p = landscape().get_problem();
  synthetic_evaluator ev(landscape());
  recorder rec;
  search_options o;
  o.observers = {&rec};
  auto r = search(p, default_policies(p).with_generator(flaky_generator{}), ev, o);
  CHECK(r.counters.generation_failures == 1);
  CHECK(std::any_of(rec.events.begin(), rec.events.end(), [](event const& e) {
    return e.kind == event_kind::generation_failed && e.note.find("no code") != std::string::npos;
  }));
  CHECK(r.stop_reason.find("nothing new") != std::string::npos);
  CHECK(r.best);  // what was measured before is kept
}

namespace {
/// Forwards everything to a synthetic evaluator; tests override what they watch or break.
struct forwarding_evaluator : evaluator {
  synthetic_evaluator inner{landscape()};
  std::string fingerprint() const override { return inner.fingerprint(); }
  verdict build(candidate const& c) override { return inner.build(c); }
  verdict check(candidate const& c, std::span<std::size_t const> s, int t, std::uint64_t seed) override {
    return inner.check(c, s, t, seed);
  }
  measurement measure(candidate const& c, rung const& r, measure_request const& q) override {
    return inner.measure(c, r, q);
  }
  baseline measure_baseline(problem const& p) override { return inner.measure_baseline(p); }
  double take_device_seconds() override { return inner.take_device_seconds(); }
};

/// Times every shape at 1 ns: far below the synthetic roofline floor.
struct too_fast_evaluator final : forwarding_evaluator {
  measurement measure(candidate const& c, rung const& r, measure_request const& q) override {
    auto m = inner.measure(c, r, q);
    if (c.params.at("BLOCK") == 64) {
      for (auto& t : m.timings) {
        for (auto& s : t.samples) s = 1e-9;
        t.summarise();
      }
    }
    if (c.params.at("BLOCK") == 128 && c.params.at("VEC") == 2) throw std::runtime_error("device lost");
    return m;
  }
};
}  // namespace

TEST_CASE("times below the roofline floor are rejected as impossible, evaluator errors are typed") {
  auto const& p = landscape().get_problem();
  too_fast_evaluator ev;
  recorder rec;
  search_options o;
  o.limits.evaluations = 300;
  o.observers = {&rec};
  auto r = search(p, default_policies(p), ev, o);
  std::size_t impossible = 0, infrastructure = 0;
  for (auto const& e : rec.events) {
    if (e.kind != event_kind::rejected) continue;
    if (e.result.where == stage::impossible) ++impossible;
    if (e.result.where == stage::infrastructure) {
      ++infrastructure;
      CHECK(e.result.detail.find("device lost") != std::string::npos);
    }
  }
  CHECK(impossible > 0);
  CHECK(infrastructure > 0);
  REQUIRE(r.best);
  CHECK(r.best->cand.params.at("BLOCK") != 64);
}

namespace {
/// Watches evaluator::assure: which candidates the engine asked it about, and whether each measurement at an
/// assured rung came after it. Its memory-safety tools "find" an invalid read in every BLOCK=256 point.
struct assuring_evaluator final : forwarding_evaluator {
  std::set<std::uint64_t> assured;
  std::vector<std::string> violations;
  std::size_t with_partner = 0;  ///< measurements at an assured rung timed A/B against an incumbent
  std::size_t at_assured = 0, at_screening = 0;
  verdict assure(candidate const& c, std::uint64_t) override {
    assured.insert(c.id.value);
    if (c.params.at("BLOCK") == 256) return verdict::reject(stage::sanitizer, "memcheck: invalid read (test)");
    return verdict::pass();
  }
  measurement measure(candidate const& c, rung const& r, measure_request const& q) override {
    if (r.assure) {
      ++at_assured;
      if (!assured.contains(c.id.value)) violations.push_back(c.id.str() + " timed at " + r.name + " unassured");
      if (c.params.at("BLOCK") == 256) violations.push_back(c.id.str() + " timed at " + r.name + " though refused");
      if (q.incumbent) {
        ++with_partner;
        if (!assured.contains(q.incumbent->id.value))
          violations.push_back(c.id.str() + " timed A/B beside the unassured " + q.incumbent->id.str());
      }
    } else {
      ++at_screening;
    }
    return inner.measure(c, r, q);
  }
};
}  // namespace

TEST_CASE("the memory-safety tools run before an assured rung only, and what they refuse is never timed there") {
  auto const& p = landscape().get_problem();
  const auto policies = default_policies(p);
  REQUIRE(policies.ladder.rungs().size() >= 2);
  CHECK_FALSE(policies.ladder.rungs().front().assure);
  CHECK(policies.ladder.rungs().back().assure);
  assuring_evaluator ev;
  recorder rec;
  search_options o;
  o.limits.evaluations = 300;
  o.observers = {&rec};
  auto r = search(p, policies, ev, o);
  CHECK(ev.violations.empty());
  CHECK(ev.at_assured > 0);
  CHECK(ev.at_screening > 0);
  // Candidates the smoke left behind were never run under the tools.
  std::set<std::uint64_t> timed;
  std::size_t refused = 0;
  const auto top = policies.ladder.rungs().size() - 1;
  for (auto const& e : rec.events) {
    if (e.kind == event_kind::measured) timed.insert(e.id.value);
    if (e.kind == event_kind::rejected && e.result.where == stage::sanitizer) {
      ++refused;
      CHECK(e.rung == top);
    }
  }
  std::size_t never_assured = 0;
  for (auto id : timed) never_assured += ev.assured.contains(id) ? 0 : 1;
  CHECK(never_assured > 0);
  CHECK(refused > 0);
  REQUIRE(r.best);
  CHECK(r.best->cand.params.at("BLOCK") != 256);

  // With A/B at the top rung: the partner of a top-rung measurement has passed the tools itself (before the
  // first top-rung incumbent exists, the best is a smoke measurement, and the candidate is timed alone).
  const auto ab = default_policies(p, coarse_to_fine_options{}, ladder_options{.ab = true});
  REQUIRE(ab.ladder.rungs().back().interleaved);
  assuring_evaluator ev2;
  search_options o2;
  o2.limits.evaluations = 200;
  (void)search(p, ab, ev2, o2);
  CHECK(ev2.violations.empty());
  CHECK(ev2.with_partner > 0);
}

namespace {
/// Charges a fixed price per measurement: 0.1 s at the rung named "low", 2 s at any other (twenty times as
/// much); the gate's checks are free.
struct priced_evaluator final : forwarding_evaluator {
  double pending = 0;
  measurement measure(candidate const& c, rung const& r, measure_request const& q) override {
    pending += r.name == "low" ? 0.1 : 2.0;
    return inner.measure(c, r, q);
  }
  double take_device_seconds() override {
    (void)inner.take_device_seconds();
    return std::exchange(pending, 0.0);
  }
};

/// A two-rung ladder: one shape at "low", every shape at "top".
multi_rung_ladder two_rungs(problem const& p) {
  rung low, top;
  low.name = "low";
  low.shapes = {0};
  low.samples = 3;
  low.assure = false;
  top.name = "top";
  top.samples = 5;
  for (std::size_t s = 0; s < p.shapes.size(); ++s) top.shapes.push_back(s);
  return multi_rung_ladder({low, top});
}

struct rung_counts {
  std::size_t low = 0, top = 0;
  std::size_t low_before_top = 0;          ///< low results in before the first promotion to the top
  std::size_t low_started_before_top = 0;  ///< low measurements started before the first top one
};
rung_counts measured_per_rung(std::vector<event> const& events) {
  rung_counts n;
  bool top_started = false;
  for (auto const& e : events) {
    if (e.kind == event_kind::measured || e.kind == event_kind::rejected) (e.rung == 0 ? n.low : n.top) += 1;
    if (e.kind == event_kind::promoted && n.top == 0 && n.low_before_top == 0) n.low_before_top = n.low;
    if (e.kind == event_kind::dispatched) {
      top_started = top_started || e.rung > 0;
      if (e.rung == 0 && !top_started) ++n.low_started_before_top;
    }
  }
  return n;
}

/// Proposes what the expert generator does until `limit` candidates exist, then nothing.
struct limited_generator {
  expert_generator inner;
  std::size_t limit;
  std::vector<candidate> propose(search_view const& v, proposal_request const& r) {
    if (v.size() >= limit) return {};
    auto out = inner.propose(v, r);
    if (out.size() > limit - v.size()) out.resize(limit - v.size());
    return out;
  }
};
}  // namespace

TEST_CASE("under a device-second budget the default promotes as the ladder's costs say, else by eta") {
  auto const& p = landscape().get_problem();
  auto run = [&](coarse_to_fine_options co, bool device_budget) {
    priced_evaluator ev;
    recorder rec;
    search_options o;
    o.observers = {&rec};
    if (device_budget)
      o.limits.device_seconds = 60;
    else
      o.limits.evaluations = 150;
    (void)search(p, default_policies(p, co).with_ladder(two_rungs(p)), ev, o);
    return measured_per_rung(rec.events);
  };
  coarse_to_fine_options fixed;
  fixed.eta_max = 0;
  REQUIRE(coarse_to_fine_options{}.eta_max == 8);
  // The top rung costs twenty low measurements: eta' = 8 (eta_max) once one is measured, so about one low
  // result in eight goes up; mutations of promoted candidates enter at the low rung too.
  const auto by_cost = run({}, true);
  CHECK(by_cost.low > 100);
  CHECK(by_cost.top <= by_cost.low / 8 + 1);
  CHECK(by_cost.top + 2 >= by_cost.low / 8);
  // Before any top measurement, the estimate is a low measurement's cost (0.1 s, nearly all of it beside
  // the timed runs) plus the top rung's extra timed runs at the baseline's times (microseconds): about
  // 1, so eta (3) holds. And until that first promotion no more low measurements start than it needs,
  // although four may be in flight.
  CHECK(by_cost.low_before_top == 3);
  CHECK(by_cost.low_started_before_top == 3);
  // Fixed eta, or a budget that counts evaluations (each costs one): one in three, and the low rung keeps
  // every slot busy meanwhile.
  for (auto const& [n, what] : {std::pair{run(fixed, true), "eta_max=0"}, std::pair{run({}, false), "evaluations"}}) {
    INFO(what);
    CHECK(n.low > 30);
    CHECK(n.top + 1 >= n.low / 3);
    CHECK(n.top <= n.low / 3 + 1);
    CHECK(n.low_before_top <= 4);
    CHECK(n.low_started_before_top > 3);
  }
}

TEST_CASE("once the generator runs dry the default promotes what is left, best first, until all went up") {
  auto const& p = landscape().get_problem();
  priced_evaluator ev;
  recorder rec;
  search_options o;
  o.observers = {&rec};
  o.limits.device_seconds = 1000;
  auto r = search(p, default_policies(p).with_ladder(two_rungs(p)).with_generator(limited_generator{{}, 40}), ev, o);
  CHECK(r.stop_reason.find("nothing new") != std::string::npos);
  // Every candidate the low rung measured went up (measured or rejected there).
  std::map<std::uint64_t, double> low_score;
  std::set<std::uint64_t> went_up;
  std::vector<std::uint64_t> up_order;  // top-rung evaluations after the last low measurement
  for (auto const& e : rec.events) {
    if (e.kind == event_kind::measured && e.rung == 0 && e.value) {
      low_score[e.id.value] = e.value->value;
      up_order.clear();
    }
    if ((e.kind == event_kind::measured || e.kind == event_kind::rejected) && e.rung == 1) {
      went_up.insert(e.id.value);
      up_order.push_back(e.id.value);
    }
  }
  CHECK(low_score.size() >= 30);
  std::size_t left_low = 0;
  for (auto const& [id, score] : low_score) left_low += went_up.contains(id) ? 0 : 1;
  CHECK(left_low == 0);
  // Those that went up only because the generator ran dry went best first.
  REQUIRE(up_order.size() >= 10);
  for (std::size_t i = 1; i < up_order.size(); ++i) CHECK(low_score[up_order[i - 1]] >= low_score[up_order[i]]);
}

namespace {
std::atomic<bool> generating{false};
std::atomic<int> overlaps{0};

struct slow_generator {
  expert_generator inner;
  std::set<std::thread::id>* threads;
  std::vector<candidate> propose(search_view const& v, proposal_request const& r) {
    threads->insert(std::this_thread::get_id());
    generating = true;
    std::this_thread::sleep_for(std::chrono::milliseconds(3));
    auto out = inner.propose(v, r);
    generating = false;
    return out;
  }
};
struct watching_gate {
  policy_gate inner;
  std::set<std::thread::id>* threads;
  verdict admit(candidate const& c, evaluator& e) {
    threads->insert(std::this_thread::get_id());
    if (generating) ++overlaps;
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
    return inner.admit(c, e);
  }
};
}  // namespace

TEST_CASE("generation and evaluation overlap, each policy is called from one thread") {
  auto const& p = landscape().get_problem();
  synthetic_evaluator ev(landscape());
  std::set<std::thread::id> gate_threads, generator_threads;
  auto pol = default_policies(p)
                 .with_generator(slow_generator{{}, &generator_threads})
                 .with_gate(watching_gate{policy_gate::for_problem(p), &gate_threads});
  search_options o;
  o.limits.evaluations = 120;
  o.max_in_flight = 6;
  overlaps = 0;
  auto r = search(p, std::move(pol), ev, o);
  CHECK(r.counters.evaluations >= 120);
  CHECK(gate_threads.size() == 1);
  CHECK(generator_threads.size() == 1);
  CHECK(generator_threads.count(std::this_thread::get_id()) == 1);  // generation is on the calling thread
  CHECK(gate_threads.count(std::this_thread::get_id()) == 0);       // the gate runs on the evaluation plane
  CHECK(overlaps > 0);                                              // evaluations ran while the generator was busy
}

namespace {
/// Records prefetch hints (search thread) and builds (evaluation thread).
struct prefetch_recorder final : forwarding_evaluator {
  std::mutex mu;
  std::vector<candidate_id> hinted, built;
  std::set<std::thread::id> hint_threads;
  std::size_t built_before_hint = 0;
  void prefetch(candidate const& c) override {
    std::lock_guard lk(mu);
    hinted.push_back(c.id);
    hint_threads.insert(std::this_thread::get_id());
  }
  verdict build(candidate const& c) override {
    {
      std::lock_guard lk(mu);
      if (std::find(hinted.begin(), hinted.end(), c.id) == hinted.end()) ++built_before_hint;
      built.push_back(c.id);
    }
    return inner.build(c);
  }
};
}  // namespace

TEST_CASE("every proposed candidate is offered to the backend for an early compile, once, before it is built") {
  auto const& p = landscape().get_problem();
  prefetch_recorder ev;
  recorder rec;
  search_options o;
  o.limits.evaluations = 120;
  o.observers = {&rec};
  auto r = search(p, default_policies(p), ev, o);
  std::vector<candidate_id> proposed;
  for (auto const& e : rec.events)
    if (e.kind == event_kind::proposed) proposed.push_back(e.id);
  REQUIRE(proposed.size() > 8);
  CHECK(ev.hinted == proposed);  // each proposal once, in proposal order
  CHECK(ev.built_before_hint == 0);
  CHECK(!ev.built.empty());
  CHECK(ev.hint_threads == std::set<std::thread::id>{std::this_thread::get_id()});  // the search thread
  CHECK(r.best);
}

TEST_CASE("arrival order completes and respects the budget") {
  auto const& p = landscape().get_problem();
  synthetic_evaluator ev(landscape());
  search_options o;
  o.order = completion_order::arrival;
  o.limits.evaluations = 150;
  auto r = search(p, default_policies(p), ev, o);
  CHECK(r.stop_reason == "evaluation budget spent");
  CHECK(r.best);
}

TEST_CASE("the ask/tell engine can be driven by hand") {
  auto const& p = landscape().get_problem();
  synthetic_evaluator ev(landscape());
  engine_options eo;
  eo.limits.evaluations = 40;
  engine eng(p, default_policies(p), eo);
  eng.set_baseline(ev.measure_baseline(p));
  std::size_t tasks = 0;
  for (;;) {
    step s = eng.ask();
    if (auto* t = std::get_if<evaluation_task>(&s)) {
      ++tasks;
      eng.tell(eng.execute(*t, ev));
    } else if (std::holds_alternative<finished>(s)) {
      break;
    } else {
      FAIL("nothing is in flight, so the engine must not ask to wait");
    }
  }
  CHECK(tasks == 40);
  // An outcome nobody asked for (a duplicate, or a stray rung) is refused, not counted.
  evaluation_outcome stray;
  stray.id = eng.view().best()->cand.id;
  stray.rung = 0;
  CHECK_THROWS_WITH_AS(eng.tell(stray), doctest::Contains("no evaluation in flight"), error);
  CHECK(eng.view().best());
  CHECK(eng.stop_reason() == "evaluation budget spent");
}

namespace {
/// Proposes what the expert proposes on its first call, then nothing, ever.
struct one_shot_generator {
  expert_generator inner;
  int calls = 0;
  std::vector<candidate> propose(search_view const& v, proposal_request const& r) {
    return ++calls == 1 ? inner.propose(v, r) : std::vector<candidate>{};
  }
};
}  // namespace

TEST_CASE("generations that find nothing while an evaluation is in flight do not count towards the stop") {
  // The scheduler evaluates whatever is fresh, else asks for one new candidate; the generator runs dry after
  // its first batch. With the first evaluation held in flight, every ask() asks the generator again (a free
  // slot each time); those requests must neither end the search nor count once the result is in.
  auto const& p = landscape().get_problem();
  synthetic_evaluator ev(landscape());
  engine_options eo;
  eo.fruitless_generation_limit = 3;
  auto pol = default_policies(p)
                 .with_generator(one_shot_generator{})
                 .with_scheduler(scripted_scheduler{[](search_view const& v) -> action {
                   if (!v.fresh().empty()) return evaluate(v[v.fresh().front()].cand.id, 0);
                   return generate(generation_mode::explore, 1);
                 }});
  engine eng(p, std::move(pol), eo);
  eng.set_baseline(ev.measure_baseline(p));
  // Take every first-batch candidate into flight, then ask again while they run.
  std::vector<evaluation_task> held;
  for (int i = 0; i < 100; ++i) {
    step s = eng.ask();
    if (auto* t = std::get_if<evaluation_task>(&s)) {
      held.push_back(*t);
      continue;
    }
    REQUIRE_MESSAGE(std::holds_alternative<waiting>(s), "with evaluations in flight the search must not end");
    if (held.size() > 0 && i > static_cast<int>(held.size()) + 9) break;  // ten fruitless asks with work in flight
  }
  REQUIRE(!held.empty());
  for (auto const& t : held) eng.tell(eng.execute(t, ev));
  // Nothing in flight now: exactly `fruitless_generation_limit` more fruitless generations end it.
  step s = eng.ask();
  REQUIRE(std::holds_alternative<finished>(s));
  CHECK(std::get<finished>(s).reason.find("nothing new 3 times in a row") != std::string::npos);
  CHECK(eng.view().best());  // what was measured is kept
}

namespace {
/// Drives an expert generator by hand: `payoff` is the smoke-rung speedup ratio child/parent the
/// first mutation of one parent gets; returns (the first mutation's parameter and direction, the
/// first mutation of a second parent of the same family).
struct mutation_probe {
  std::string param;
  int dir = 0;
  std::string next_param;
  int next_dir = 0;
};
mutation_probe first_mutations(double payoff) {
  auto const& p = landscape().get_problem();
  budget_meter meter;
  baseline base;
  std::vector<rung> rungs{rung{}};
  detail::search_history h(p, rungs, base, meter);
  expert_generator g;
  g.reseed(5);
  auto add_scored = [&](candidate const& c, double speedup) {
    auto i = h.add(c);
    REQUIRE(i);
    h.at(*i).scores[0] = score{speedup, speedup};
  };
  auto move_of = [&](candidate const& parent, candidate const& child) {
    const std::string name = child.origin.substr(std::string("mutation:").size());
    return std::make_pair(name, child.params.at(name) > parent.params.at(name) ? 1 : -1);
  };
  // A parent, its first mutation (measured at `payoff`), then a second parent of the same family on
  // which that move is possible too.
  auto explored = g.propose(search_view(h), proposal_request{generation_mode::explore, {}, 24, {}});
  REQUIRE(explored.size() >= 2);
  candidate const a = explored[0];
  add_scored(a, 1.0);
  auto first = g.propose(search_view(h), proposal_request{generation_mode::mutate, {a.id}, 1, {}});
  REQUIRE(first.size() == 1);
  add_scored(first[0], payoff);
  event e;
  e.kind = event_kind::measured;
  e.id = first[0].id;
  e.rung = 0;
  e.value = score{payoff, payoff};
  g.observe(e);
  const auto [name, dir] = move_of(a, first[0]);
  auto const& space = find_hint(p, a.family)->templ->space;
  std::size_t which = 0;
  while (space.params[which].name != name) ++which;
  auto b_it = std::find_if(explored.begin() + 1, explored.end(), [&, d = dir](candidate const& c) {
    return c.family == a.family && step_parameter(space, c.params, which, d).has_value();
  });
  REQUIRE(b_it != explored.end());
  candidate const b = *b_it;
  add_scored(b, 1.0);
  auto second = g.propose(search_view(h), proposal_request{generation_mode::mutate, {b.id}, 1, {}});
  REQUIRE(second.size() == 1);
  mutation_probe r;
  r.param = name;
  r.dir = dir;
  std::tie(r.next_param, r.next_dir) = move_of(b, second[0]);
  return r;
}
}  // namespace

TEST_CASE("the expert generator tries first the mutations that paid before, and last those that did not") {
  const auto paid = first_mutations(2.0);  // the child was twice as fast as its parent
  CHECK(paid.next_param == paid.param);    // the same move is the first one tried on another parent
  CHECK(paid.next_dir == paid.dir);
  const auto lost = first_mutations(0.5);                                // the child was twice as slow
  CHECK(lost.param == paid.param);                                       // same seed: the same first move
  CHECK(!(lost.next_param == lost.param && lost.next_dir == lost.dir));  // now not repeated first
}

namespace {
/// Adds `c` to `h` as measured at rung 0, speedup 1, with `diagnosis`.
void add_measured(detail::search_history& h, candidate const& c, std::string const& diagnosis) {
  auto i = h.add(c);
  REQUIRE(i);
  auto& r = h.at(*i);
  r.scores[0] = score{1.0, 1.0};
  measurement m;
  m.diagnosis = diagnosis;
  r.results[0] = m;
}

/// One parent (the expert default point of the problem's first family, measured at speedup 1 with
/// `diagnosis`) and a generator seeded with `seed` that mutates it.
struct steering_probe {
  problem p;
  budget_meter meter;
  baseline base;
  std::vector<rung> rungs{rung{}};
  detail::search_history h{p, rungs, base, meter};
  expert_generator g;
  candidate parent;

  steering_probe(problem prob, std::string const& diagnosis, std::uint64_t seed) : p(std::move(prob)) {
    g.reseed(seed);
    auto explored = g.propose(search_view(h), proposal_request{generation_mode::explore, {}, 1, {}});
    REQUIRE(explored.size() == 1);
    parent = explored[0];
    add_measured(h, parent, diagnosis);
  }
  /// The next mutation of the parent, added to the history.
  candidate mutate() {
    auto c = g.propose(search_view(h), proposal_request{generation_mode::mutate, {parent.id}, 1, {}});
    REQUIRE(c.size() == 1);
    REQUIRE(h.add(c[0]));
    return c[0];
  }
  /// The parameter a mutation changed, and whether it raised (+1) or lowered (-1) its value.
  [[nodiscard]] std::pair<std::string, int> move_of(candidate const& child) const {
    for (auto const& d : find_hint(p, parent.family)->templ->space.params)
      if (child.params.at(d.name) != parent.params.at(d.name))
        return {d.name, child.params.at(d.name) > parent.params.at(d.name) ? 1 : -1};
    FAIL("the child equals its parent");
    return {};
  }
};

constexpr std::string_view small_grid_diagnosis =
    "small grid [12]: 12 blocks for 132 SMs\nprofiler unavailable [0]: ncu: not found (not on PATH)\n";
}  // namespace

TEST_CASE("a move the family declares for a finding of the parent's diagnosis is tried first, once") {
  auto const& plain = landscape().get_problem();
  const std::uint64_t seed = 3;
  // Without a declared move: the order the seed gives.
  steering_probe unsteered(plain, std::string(small_grid_diagnosis), seed);
  const auto normal = unsteered.move_of(unsteered.mutate());
  // Declare, for "small grid", lowering a parameter that the normal order does not move first.
  problem declared = plain;
  auto& hint = declared.catalogue.front();
  REQUIRE(hint.name == unsteered.parent.family);
  std::string param;
  for (auto const& d : hint.templ->space.params)
    if (d.name != normal.first) {
      param = d.name;
      break;
    }
  REQUIRE(!param.empty());
  hint.diagnosis_moves = {{"small grid", param, -1}};
  declared.validate();

  steering_probe steered(declared, std::string(small_grid_diagnosis), seed);
  const auto first = steered.mutate();
  CHECK(steered.move_of(first) == std::make_pair(param, -1));
  CHECK(first.origin == "mutation:" + param + "(diagnosis: small grid)");
  // The declared move is a single step: the next smaller value in the list.
  auto const& values =
      std::find_if(hint.templ->space.params.begin(), hint.templ->space.params.end(), [&](parameter_def const& d) {
        return d.name == param;
      })->values;
  const auto at = std::find(values.begin(), values.end(), steered.parent.params.at(param));
  REQUIRE(at != values.begin());
  CHECK(first.params.at(param) == *(at - 1));
  // Proposed once: then the normal order resumes (other parameters, untried, come next; no more
  // mutations on account of the diagnosis).
  const auto second = steered.mutate();
  CHECK(steered.move_of(second).first != param);
  for (int i = 0; i < 8; ++i) CHECK(steered.mutate().origin.find("diagnosis") == std::string::npos);

  // The declaration does nothing without its tag: no diagnosis, or another finding only.
  steering_probe no_diagnosis(declared, "", seed);
  CHECK(no_diagnosis.move_of(no_diagnosis.mutate()) == normal);
  steering_probe other_finding(declared, "tail effect [1.5]: 1.5 waves, 25% idle\n", seed);
  const auto other = other_finding.mutate();
  CHECK(other_finding.move_of(other) == normal);
  CHECK(other.origin == "mutation:" + normal.first);

  // A direction is by value, not by position: with the list in descending order, lowering the
  // value steps forward along it.
  problem reversed = declared;
  for (auto& d : reversed.catalogue.front().templ->space.params)
    if (d.name == param) std::reverse(d.values.begin(), d.values.end());
  steering_probe backwards(reversed, std::string(small_grid_diagnosis), seed);
  const auto down = backwards.mutate();
  CHECK(backwards.move_of(down) == std::make_pair(param, -1));
  CHECK(down.origin == "mutation:" + param + "(diagnosis: small grid)");
}

TEST_CASE("the expert generator credits moves per diagnosis finding and prefers what paid under the parent's") {
  auto const& p = landscape().get_problem();  // declares no diagnosis moves
  budget_meter meter;
  baseline base;
  std::vector<rung> rungs{rung{}};
  detail::search_history h(p, rungs, base, meter);
  expert_generator g;
  g.reseed(11);
  const std::string spills = "register spills [64]: 64 bytes of local memory per thread\n";
  auto add_parent = [&](candidate const& c, std::string const& diagnosis) { add_measured(h, c, diagnosis); };
  using move_t = std::pair<std::string, int>;
  auto move_of = [](candidate const& parent, candidate const& child) -> move_t {
    for (auto const& [name, value] : parent.params)
      if (child.params.at(name) != value) return {name, child.params.at(name) > value ? 1 : -1};
    return {};
  };
  // The next mutation of `parent`, measured at `payoff(move)` times its parent's speedup.
  auto mutate_measured = [&](candidate const& parent, auto payoff) {
    auto c = g.propose(search_view(h), proposal_request{generation_mode::mutate, {parent.id}, 1, {}});
    REQUIRE(c.size() == 1);
    const double x = payoff(move_of(parent, c[0]));
    REQUIRE(h.add(c[0]));
    h.at(*h.find(c[0].id)).scores[0] = score{x, x};
    event e;
    e.kind = event_kind::measured;
    e.id = c[0].id;
    e.rung = 0;
    e.value = score{x, x};
    g.observe(e);
    return move_of(parent, c[0]);
  };
  auto explored = g.propose(search_view(h), proposal_request{generation_mode::explore, {}, 48, {}});
  REQUIRE(!explored.empty());
  candidate const a = explored[0];
  auto const& space = find_hint(p, a.family)->templ->space;
  auto steps = [&](candidate const& c, move_t const& m) {
    std::size_t which = 0;
    while (space.params[which].name != m.first) ++which;
    return step_parameter(space, c.params, which, m.second).has_value();
  };

  // Under "register spills": move X paid (x2), move Y lost (x0.5).
  add_parent(a, spills);
  const move_t x = mutate_measured(a, [](move_t const&) { return 2.0; });
  const move_t y = mutate_measured(a, [](move_t const&) { return 0.5; });
  REQUIRE(x.first != y.first);
  // Around parents without a diagnosis, Y paid a lot (x64) and everything else nothing (x1): over all
  // parents, Y is now the best move and X a modest one.
  std::vector<candidate> others;  // fresh points of A's family on which both moves can be made
  for (auto const& c : explored)
    if (c.family == a.family && c.id != a.id && !h.find(c.id) && steps(c, x) && steps(c, y)) others.push_back(c);
  REQUIRE(others.size() >= 3);
  add_parent(others[0], "");
  bool y_seen = false;
  for (int i = 0; i < 16 && !y_seen; ++i)
    mutate_measured(others[0], [&](move_t const& m) {
      y_seen = m == y;
      return y_seen ? 64.0 : 1.0;
    });
  REQUIRE(y_seen);

  // A parent with the finding gets X first (what paid under it); one without gets Y first.
  add_parent(others[1], spills);
  add_parent(others[2], "");
  auto first_of = [&](candidate const& parent) {
    auto c = g.propose(search_view(h), proposal_request{generation_mode::mutate, {parent.id}, 1, {}});
    REQUIRE(c.size() == 1);
    return move_of(parent, c[0]);
  };
  CHECK(first_of(others[1]) == x);
  CHECK(first_of(others[2]) == y);
}
