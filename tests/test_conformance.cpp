// Conformance: every registered strategy against the same checks on the synthetic backend, plus
// per-policy checks (generators stay in the catalogue space, erased policies forward hooks, registry errors).
#include <doctest/doctest.h>
#include <kernelbrain/core/any_policy.hpp>
#include <kernelbrain/core/registry.hpp>
#include <kernelbrain/search.hpp>
#include <kernelbrain/strategies/all.hpp>

#include <algorithm>
#include <cstdint>
#include <map>
#include <set>
#include <stdexcept>
#include <string>
#include <vector>

namespace kb = kernelbrain;

namespace {

constexpr std::uint64_t evaluation_budget = 300;
constexpr double quality_slack = 1.15;  // "within 15% of the known optimum"

/// Watches a search for what its result does not show: proposals outside the catalogue space,
/// rejected ids, which evaluations were outstanding at each dispatch, and a digest of the event order.
class conformance_watch final : public kb::observer {
 public:
  void on_event(kb::event const& e, kb::search_view const& v) override {
    digest = kb::hasher{}
                 .integer(digest)
                 .integer(static_cast<std::uint64_t>(e.kind))
                 .integer(e.id.value)
                 .integer(e.rung)
                 .digest();
    switch (e.kind) {
      case kb::event_kind::proposed: {
        ++proposed;
        auto const* rec = v.find(e.id);
        auto const* hint = rec ? kb::find_hint(v.problem(), rec->cand.family) : nullptr;
        if (!hint || !hint->templ || !hint->templ->space.admits(rec->cand.params)) ++outside_space;
        if (rec && rec->cand.parent) {  // a child's parent must have passed a measurement
          auto const* parent = v.find(*rec->cand.parent);
          if (!parent || parent->top_rung < 0) ++children_of_unmeasured;
          ++children;
        }
        break;
      }
      case kb::event_kind::dispatched:
        if (!first_rung.contains(e.id)) first_rung[e.id] = e.rung;
        for (auto const& [id, r] : outstanding)
          if (r != e.rung) ++mixed_rung_dispatches;
        outstanding[e.id] = e.rung;
        ++dispatches_at[e.rung];
        break;
      case kb::event_kind::rejected:
        rejected.insert(e.id);
        outstanding.erase(e.id);
        break;
      case kb::event_kind::measured:
        outstanding.erase(e.id);
        break;
      default:
        break;
    }
  }

  std::uint64_t digest = 0;
  std::size_t proposed = 0, outside_space = 0, mixed_rung_dispatches = 0, children = 0, children_of_unmeasured = 0;
  std::set<kb::candidate_id> rejected;
  std::map<kb::candidate_id, std::size_t> outstanding, first_rung;
  std::map<std::size_t, std::size_t> dispatches_at;
};

struct outcome {
  kb::search_result result;
  conformance_watch watch;
  double quality_ratio = 0;  // true quality of the best / known optimum (1 is optimal; larger is slower)
};

outcome run(kb::strategy_registry const& reg, std::string const& name, kb::synthetic_landscape const& land,
            kb::problem const& prob, std::uint64_t seed, std::uint64_t budget = evaluation_budget,
            std::size_t max_in_flight = 4, kb::completion_order order = kb::completion_order::issue) {
  outcome o;
  kb::synthetic_evaluator ev(land);
  kb::search_options opt;
  opt.seed = seed;
  opt.limits.evaluations = budget;
  opt.max_in_flight = max_in_flight;
  opt.order = order;
  opt.observers = {&o.watch};
  o.result = kb::search(prob, reg.make(name, prob), ev, opt);
  if (o.result.best)
    o.quality_ratio = land.quality(o.result.best->cand.family, o.result.best->cand.params) / land.optimum_quality();
  return o;
}

/// The synthetic problem cut down to two values per parameter (64 points): small enough to exhaust.
kb::problem tiny_problem(kb::synthetic_landscape const& land) {
  kb::problem p = land.get_problem();
  for (auto& h : p.catalogue)
    for (auto& d : h.templ->space.params) d.values.resize(2);
  return p;
}

std::size_t admitted_points(kb::problem const& p) {
  std::size_t n = 0;
  for (auto const& h : p.catalogue) n += h.templ->space.enumerate().size();
  return n;
}

}  // namespace

TEST_CASE("conformance: every builtin strategy on the synthetic backend") {
  const auto reg = kb::builtin_strategies();
  const kb::synthetic_landscape land;
  const auto& prob = land.get_problem();
  REQUIRE(reg.size() >= 7);

  for (auto const& name : reg.names()) {
    INFO("strategy: " << name);
    CAPTURE(reg.description(name));
    auto a = run(reg, name, land, prob, 1);
    auto const& r = a.result;
    MESSAGE(name << ": " << r.used.evaluations << " evaluations, " << r.candidates << " candidates, best at rung "
                 << r.best_rung << ", quality/optimum " << a.quality_ratio << ", stop: " << r.stop_reason);

    // (a) it ends with a reason, and not because the scheduler waited on nothing.
    CHECK_FALSE(r.stop_reason.empty());
    CHECK(r.stop_reason.find("waited with nothing in flight") == std::string::npos);
    // Nothing here runs out of space at this budget: every strategy keeps going until it is spent.
    CHECK(r.used.evaluations >= evaluation_budget);

    // (b) the best is close to the known optimum, judged by the landscape's noise-free truth.
    REQUIRE(r.best.has_value());
    CHECK(a.quality_ratio >= 1.0);
    CHECK(a.quality_ratio <= quality_slack);

    // (c) the same seed gives the same search.
    auto b = run(reg, name, land, prob, 1);
    REQUIRE(b.result.best.has_value());
    CHECK(b.result.best->cand.id == r.best->cand.id);
    CHECK(b.result.used.evaluations == r.used.evaluations);
    CHECK(b.result.candidates == r.candidates);
    CHECK(b.watch.digest == a.watch.digest);

    // (d) a rejected candidate is never the best.
    CHECK(r.best->state != kb::candidate_state::rejected);
    CHECK_FALSE(a.watch.rejected.contains(r.best->cand.id));
    CHECK(r.best->scores[r.best_rung].has_value());

    // (e) the budget is charged.
    CHECK(r.used.evaluations > 0);
    CHECK(r.used.device_seconds > 0);
    CHECK(r.counters.evaluations == r.used.evaluations);

    // Generators only propose points their template's space admits.
    CHECK(a.watch.proposed == r.candidates);
    CHECK(a.watch.outside_space == 0);
    CHECK(a.watch.children_of_unmeasured == 0);
  }
}

TEST_CASE("conformance: quality holds across seeds, not just one") {
  // Measured over seeds 1..100 at this budget: default 100%, default-no-gate 100%, default-one-rung 100%,
  // exhaustive 99%, random 97%, hyperband 94%, sha 93% within 15%. The explore-only strategies miss when
  // their ~220 random samples contain none of the 14 points (of 1969) within 15%: a property of the
  // strategy, not noise. So every strategy must reach it on at least 18 of 20 seeds.
  const auto reg = kb::builtin_strategies();
  const kb::synthetic_landscape land;
  for (auto const& name : reg.names()) {
    INFO("strategy: " << name);
    int within = 0;
    double worst = 0;
    for (std::uint64_t seed = 1; seed <= 20; ++seed) {
      const auto o = run(reg, name, land, land.get_problem(), seed);
      REQUIRE(o.result.best.has_value());
      within += o.quality_ratio <= quality_slack;
      worst = std::max(worst, o.quality_ratio);
    }
    MESSAGE(name << ": " << within << "/20 seeds within 15%, worst " << worst);
    CHECK(within >= 18);
  }
}

TEST_CASE("conformance: strategies stay valid under other concurrency settings") {
  // The engine throws on an invalid request (rejected or in-flight candidate, rung outside the ladder),
  // so a clean finish under every setting is the check.
  const auto reg = kb::builtin_strategies();
  const kb::synthetic_landscape land;
  for (auto const& name : reg.names()) {
    for (std::size_t depth : {std::size_t{1}, std::size_t{8}}) {
      for (auto order : {kb::completion_order::issue, kb::completion_order::arrival}) {
        INFO("strategy: " << name << ", max_in_flight " << depth << ", arrival order "
                          << (order == kb::completion_order::arrival));
        outcome o;
        CHECK_NOTHROW(o = run(reg, name, land, land.get_problem(), 3, 120, depth, order));
        CHECK(o.result.stop_reason == "evaluation budget spent");
        CHECK(o.result.best.has_value());
        CHECK(o.watch.outside_space == 0);
      }
    }
  }
}

TEST_CASE("conformance: strategies end cleanly when the space runs out") {
  const auto reg = kb::builtin_strategies();
  const kb::synthetic_landscape land;
  const auto prob = tiny_problem(land);
  const std::size_t points = admitted_points(prob);
  REQUIRE(points == 64);
  for (auto const& name : reg.names()) {
    INFO("strategy: " << name);
    outcome o;
    REQUIRE_NOTHROW(o = run(reg, name, land, prob, 5, 5000));
    auto const& r = o.result;
    CHECK_FALSE(r.stop_reason.empty());
    CHECK(r.stop_reason.find("waited with nothing in flight") == std::string::npos);
    MESSAGE(name << " on 64 points: " << r.used.evaluations << " evaluations, stop: " << r.stop_reason);
    CHECK(r.stop_reason != "evaluation budget spent");  // 64 points x 3 rungs is far below 5000
    CHECK(r.candidates <= points);
    CHECK(o.watch.outside_space == 0);
    CHECK(r.best.has_value());
  }
  // Exhaustive, in particular, evaluates each admitted point exactly once and says it is done.
  auto o = run(reg, "exhaustive", land, prob, 5, 5000);
  CHECK(o.result.candidates == points);
  CHECK(o.result.used.evaluations == points);
  CHECK(o.result.counters.duplicates == 0);
  CHECK(o.result.stop_reason.find("every admitted point") != std::string::npos);
}

TEST_CASE("conformance: what each strategy promises about rungs") {
  const auto reg = kb::builtin_strategies();
  const kb::synthetic_landscape land;
  const auto& prob = land.get_problem();

  SUBCASE("sha and hyperband are synchronous: no rung starts while another rung's evaluations are out") {
    for (auto const* name : {"sha", "hyperband"}) {
      INFO("strategy: " << name);
      const auto o = run(reg, name, land, prob, 2, evaluation_budget, 8);
      CHECK(o.watch.mixed_rung_dispatches == 0);
      // Halving: each rung gets at most about a third of the one below (eta = 3), and the top is reached.
      auto const& at = o.watch.dispatches_at;
      REQUIRE(at.contains(2));
      CHECK(at.at(2) > 0);
      if (std::string(name) == "sha") {
        CHECK(at.at(1) * 3 <= at.at(0) + 3);
        CHECK(at.at(2) * 3 <= at.at(1) + 3);
      }
    }
    // The default (asynchronous) scheduler does mix rungs: the check above can fail.
    const auto d = run(reg, "default", land, prob, 2, evaluation_budget, 8);
    CHECK(d.watch.mixed_rung_dispatches > 0);
  }

  SUBCASE("hyperband starts brackets at every rung, with the planned sizes") {
    const auto o = run(reg, "hyperband", land, prob, 2);
    std::set<std::size_t> entry_rungs;
    for (auto const& [id, r] : o.watch.first_rung) entry_rungs.insert(r);
    CHECK(entry_rungs == std::set<std::size_t>{0, 1, 2});
    kb::hyperband_scheduler h;
    CHECK(h.plan(3, 0) == std::pair<std::size_t, std::size_t>{0, 9});
    CHECK(h.plan(3, 1) == std::pair<std::size_t, std::size_t>{1, 5});
    CHECK(h.plan(3, 2) == std::pair<std::size_t, std::size_t>{2, 3});
    CHECK(h.plan(3, 3) == h.plan(3, 0));  // cycled
  }

  SUBCASE("random, exhaustive and default-one-rung measure at one rung of every shape") {
    for (auto const* name : {"random", "exhaustive", "default-one-rung"}) {
      INFO("strategy: " << name);
      auto pol = reg.make(name, prob);
      REQUIRE(pol.ladder.rungs().size() == 1);
      CHECK(pol.ladder.rungs()[0].shapes.size() == prob.shapes.size());
      const auto o = run(reg, name, land, prob, 2);
      CHECK(o.watch.dispatches_at.size() == 1);
    }
  }

  SUBCASE("random evolution breeds from measured parents") {
    const auto o = run(reg, "random", land, prob, 2);
    // After the first population of 16, the run is offspring of measured parents.
    CHECK(o.watch.children > o.result.candidates / 2);
    CHECK(o.watch.children_of_unmeasured == 0);
    REQUIRE(o.result.best.has_value());
    CHECK(o.result.best->cand.parent.has_value());
  }
}

// --- per-policy checks ----------------------------------------------------------------------------

namespace {

struct tally {
  int reseeds = 0;
  int observes = 0;
  std::uint64_t last_seed = 0;
};

/// A policy `P` that counts the hooks it receives, then forwards them to P where P has them.
template <class P>
struct counted : P {
  counted(P p, tally* t) : P(std::move(p)), counts(t) {}
  void reseed(std::uint64_t seed) {
    ++counts->reseeds;
    counts->last_seed = seed;
    kb::reseed_if_able(static_cast<P&>(*this), seed);
  }
  void observe(kb::event const& e) {
    ++counts->observes;
    kb::observe_if_able(static_cast<P&>(*this), e);
  }
  tally* counts;
};

/// A ladder that hands its rungs back by value (the concept allows it).
struct ladder_by_value {
  std::vector<kb::rung> rungs() const { return {kb::rung{"only", {0, 1, 2, 3}, 5, 1, 1, false, false}}; }
};

/// Fails the test on any call: proves the pass-all gate never touches the evaluator.
class refusing_evaluator final : public kb::evaluator {
 public:
  [[nodiscard]] std::string fingerprint() const override { return "refusing"; }
  [[nodiscard]] kb::verdict inspect(kb::candidate const&) override { return fail<kb::verdict>(); }
  [[nodiscard]] kb::verdict build(kb::candidate const&) override { return fail<kb::verdict>(); }
  [[nodiscard]] kb::verdict check(kb::candidate const&, std::span<std::size_t const>, int, std::uint64_t) override {
    return fail<kb::verdict>();
  }
  [[nodiscard]] kb::measurement measure(kb::candidate const&, kb::rung const&, kb::measure_request const&) override {
    return fail<kb::measurement>();
  }
  [[nodiscard]] kb::baseline measure_baseline(kb::problem const&) override { return fail<kb::baseline>(); }
  [[nodiscard]] double take_device_seconds() override { return fail<double>(); }

 private:
  template <class T>
  static T fail() {
    throw std::logic_error("the evaluator was called");
  }
};

}  // namespace

TEST_CASE("any_policy: the wrappers forward reseed and observe to the wrapped policy") {
  tally t;
  kb::any_generator g(counted<kb::expert_generator>({}, &t));
  g.reseed(77);
  g.observe(kb::event{});
  g.observe(kb::event{});
  CHECK(t.reseeds == 1);
  CHECK(t.last_seed == 77);
  CHECK(t.observes == 2);
  REQUIRE(g.target<counted<kb::expert_generator>>() != nullptr);
  CHECK(g.target<counted<kb::expert_generator>>()->counts == &t);
  CHECK(g.target<kb::expert_generator>() == nullptr);  // exact type only

  // A policy without hooks: the calls compile and do nothing.
  kb::any_scorer s(kb::speedup_scorer{});
  s.reseed(1);
  s.observe(kb::event{});
  CHECK(s.target<kb::speedup_scorer>() != nullptr);

  // Each axis forwards, through the engine: reseed once per seeded axis, observe on the
  // generator, scorer and scheduler for every event, never on the gate (it lives on the evaluation plane).
  const kb::synthetic_landscape land;
  auto const& prob = land.get_problem();
  tally tg, tgate, tl, ts, tsch;
  auto erased = kb::erase(kb::policies{counted<kb::expert_generator>({}, &tg),
                                       counted<kb::policy_gate>(kb::policy_gate::for_problem(prob), &tgate),
                                       counted<kb::multi_rung_ladder>(kb::multi_rung_ladder::standard(prob), &tl),
                                       counted<kb::speedup_scorer>(kb::speedup_scorer{}, &ts),
                                       counted<kb::coarse_to_fine_scheduler>(kb::coarse_to_fine_scheduler{}, &tsch)});
  static_assert(std::same_as<decltype(erased), kb::any_policies>);
  kb::synthetic_evaluator ev(land);
  kb::search_options opt;
  opt.seed = 9;
  opt.limits.evaluations = 60;
  const auto r = kb::search(prob, std::move(erased), ev, opt);
  CHECK(tg.reseeds == 1);
  CHECK(tgate.reseeds == 1);
  CHECK(ts.reseeds == 1);
  CHECK(tsch.reseeds == 1);
  CHECK(tl.reseeds == 0);  // the engine does not seed ladders
  CHECK(tg.last_seed == kb::derive_seed(9, "generator"));
  CHECK(tsch.last_seed == kb::derive_seed(9, "scheduler"));
  CHECK(tsch.observes > 0);
  CHECK(tg.observes == tsch.observes);
  CHECK(ts.observes == tsch.observes);
  CHECK(tgate.observes == 0);

  // Erasure is transparent: the same search as the concrete composition.
  kb::synthetic_evaluator ev2(land);
  const auto plain = kb::search(prob, kb::default_policies(prob), ev2, opt);
  REQUIRE(r.best.has_value());
  REQUIRE(plain.best.has_value());
  CHECK(r.best->cand.id == plain.best->cand.id);
  CHECK(r.used.evaluations == plain.used.evaluations);
  CHECK(r.candidates == plain.candidates);
}

TEST_CASE("any_policy: a ladder that returns its rungs by value stays valid") {
  kb::any_ladder l(ladder_by_value{});
  auto rs = l.rungs();
  REQUIRE(rs.size() == 1);
  CHECK(rs[0].name == "only");
  CHECK(l.rungs().data() == rs.data());  // one stable copy, not a fresh temporary per call
  kb::any_ladder moved(std::move(l));
  CHECK(moved.rungs().data() == rs.data());
}

TEST_CASE("null policies: pass_all_gate and one_rung_ladder") {
  const kb::synthetic_landscape land;
  auto const& prob = land.get_problem();
  refusing_evaluator ev;
  kb::pass_all_gate g;
  const auto c = kb::make_candidate("warp-per-row", {{"BLOCK", 128}}, "test");
  CHECK(g.admit(c, ev).passed());
  CHECK_THROWS_AS((void)kb::policy_gate::for_problem(prob).admit(c, ev),
                  std::logic_error);  // the real gate does call it

  auto l = kb::one_rung_ladder::all_shapes(prob, 7);
  REQUIRE(l.rungs().size() == 1);
  CHECK(l.rungs()[0].samples == 7);
  CHECK(l.rungs()[0].shapes == std::vector<std::size_t>{0, 1, 2, 3});
  auto confirm = kb::one_rung_ladder::confirm(prob);
  CHECK(confirm.rungs()[0].name == kb::multi_rung_ladder::standard(prob).rungs().back().name);
  CHECK_THROWS_AS(kb::one_rung_ladder(kb::rung{"empty", {}, 5, 1, 1, false, false}), kb::error);
}

TEST_CASE("registry: names, descriptions, options and errors") {
  const auto reg = kb::builtin_strategies();
  const kb::synthetic_landscape land;
  auto const& prob = land.get_problem();

  const auto names = reg.names();
  CHECK(std::is_sorted(names.begin(), names.end()));
  for (auto const* n : {"default", "random", "sha", "hyperband", "exhaustive", "default-no-gate", "default-one-rung"}) {
    INFO(n);
    CHECK(reg.contains(n));
    CHECK_FALSE(reg.description(n).empty());
  }

  SUBCASE("an unknown name names every known strategy") {
    try {
      (void)reg.make("simulated-annealing", prob);
      FAIL("no exception");
    } catch (kb::error const& e) {
      const std::string what = e.what();
      CHECK(what.find("simulated-annealing") != std::string::npos);
      for (auto const& n : names) CHECK(what.find(n) != std::string::npos);
    }
  }
  SUBCASE("options reach the factory") {
    auto pol = reg.make("default-one-rung", prob, kb::strategy_options::parse("samples=4, eta=2"));
    CHECK(pol.ladder.rungs()[0].samples == 4);
    auto sched = reg.make("sha", prob, {{"eta", "2"}, {"bracket_size", "8"}});
    CHECK(sched.scheduler.target<kb::successive_halving_scheduler>() != nullptr);
  }
  SUBCASE("a malformed or unused option is an error naming it") {
    CHECK_THROWS_WITH_AS((void)reg.make("sha", prob, {{"eta", "three"}}), doctest::Contains("eta"), kb::error);
    CHECK_THROWS_WITH_AS((void)reg.make("sha", prob, {{"eta", "1"}}), doctest::Contains("at least 2"), kb::error);
    CHECK_THROWS_WITH_AS((void)reg.make("sha", prob, {{"etaa", "3"}}), doctest::Contains("etaa"), kb::error);
    CHECK_THROWS_AS((void)kb::strategy_options::parse("eta"), kb::error);
    const kb::strategy_options typed{{"bad", "1.5e"}, {"x", "2.5"}, {"on", "yes"}, {"n", "-3"}};
    CHECK_THROWS_AS((void)typed.get_double("bad", 0), kb::error);
    CHECK(typed.get_double("x", 0) == doctest::Approx(2.5));
    CHECK(typed.get_bool("on", false));
    CHECK(typed.get_int("n", 0) == -3);
    CHECK_THROWS_AS((void)typed.get_size("n", 0), kb::error);
    CHECK(kb::strategy_options{}.get_size("missing", 5) == 5);
  }
  SUBCASE("registration errors") {
    kb::strategy_registry r;
    auto f = [](kb::problem const& p, kb::strategy_options const&) { return kb::erase(kb::default_policies(p)); };
    r.add("mine", "a test strategy", f);
    CHECK_THROWS_AS(r.add("mine", "again", f), kb::error);
    CHECK_THROWS_AS(r.add("", "no name", f), kb::error);
    CHECK_THROWS_AS(r.add("empty", "no factory", nullptr), kb::error);
    CHECK(r.names() == std::vector<std::string>{"mine"});
  }
}

TEST_CASE("exhaustive_generator: every admitted point once, families interleaved, seeded order") {
  const kb::synthetic_landscape land;
  const auto prob = tiny_problem(land);
  const std::size_t points = admitted_points(prob);

  auto order = [&](std::uint64_t seed) {
    // Drive the generator alone through a history that records what it proposed.
    kb::budget_meter meter;
    kb::baseline base;
    std::vector<kb::rung> rungs{kb::rung{}};
    kb::search_history h(prob, rungs, base, meter);
    kb::exhaustive_generator g;
    g.reseed(seed);
    std::vector<kb::candidate> all;
    for (;;) {
      auto batch = g.propose(kb::search_view(h), kb::proposal_request{kb::generation_mode::explore, {}, 5, {}});
      if (batch.empty()) break;
      for (auto& c : batch) {
        all.push_back(c);
        REQUIRE(h.add(c).has_value());  // never a duplicate
      }
    }
    return all;
  };
  const auto a = order(1), b = order(1), c = order(2);
  REQUIRE(a.size() == points);
  for (std::size_t i = 0; i < a.size(); ++i) CHECK(a[i].id == b[i].id);
  bool differs = false;
  for (std::size_t i = 0; i < a.size(); ++i) differs |= a[i].id != c[i].id;
  CHECK(differs);
  // The first three proposals come from three different templates.
  CHECK(std::set<std::string>{a[0].family, a[1].family, a[2].family}.size() == 3);
}
