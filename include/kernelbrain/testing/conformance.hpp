// The conformance checks KernelBrain runs on its own strategies, shipped for yours (as Optuna ships
// its sampler tests): a composition runs on the synthetic backend and must end cleanly with a
// reason, find a best near the landscape's known optimum on most seeds, repeat itself for a seed,
// never crown a rejected candidate, charge the budget, propose only admitted points of the catalogue,
// breed only from measured parents, survive other concurrency settings and end cleanly when the space
// runs out. No test framework needed: check_conformance returns the failures as sentences; a test
// asserts that there are none (doctest, GoogleTest, Catch2 or a plain main).
//
//   auto r = kernelbrain::testing::check_conformance("mine", [](kernelbrain::problem const& p) {
//     return kernelbrain::default_policies(p).with_scorer(my_scorer{});
//   });
//   if (!r.passed()) { std::fputs(r.report().c_str(), stderr); return 1; }
#pragma once
#include <cstdint>
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <vector>
#include "kernelbrain/core/registry.hpp"
#include "kernelbrain/search.hpp"

namespace kernelbrain::testing {

/// What the checks ask for. The defaults are the project's own (tests/test_conformance.cpp).
struct conformance_options {
  std::uint64_t evaluation_budget = 300;  ///< per search on the default landscape
  double quality_slack = 1.15;            ///< the best must be within 15% of the known optimum...
  std::uint64_t quality_seeds = 20;       ///< ...on at least min_within of this many seeds
  std::uint64_t min_within = 18;
  std::uint64_t landscape_seed = 7;  ///< the synthetic landscape (7: the default one)
  bool concurrency = true;           ///< also run at max_in_flight 1 and 8, issue and arrival order
  bool small_space = true;           ///< also run on a 64-point space until it is exhausted
};

/// What check_conformance found: `failures` empty when the composition conforms.
struct conformance_result {
  std::string name;
  std::vector<std::string> failures;  ///< one sentence per broken promise
  std::vector<std::string> notes;     ///< what was measured (evaluations, quality, stop reasons)
  [[nodiscard]] bool passed() const noexcept { return failures.empty(); }
  /// Everything, one line each, failures first.
  [[nodiscard]] std::string report() const {
    std::string s;
    for (auto const& f : failures) s += name + ": FAILED: " + f + "\n";
    for (auto const& n : notes) s += name + ": " + n + "\n";
    return s;
  }
};

/// Watches a search for what its result does not show: proposals outside the catalogue space,
/// children of unmeasured parents, rejected ids, evaluations outstanding at each dispatch, and a
/// digest of the event order.
class conformance_watch final : public observer {
 public:
  void on_event(event const& e, search_view const& v) override {
    digest = hasher{}
                 .integer(digest)
                 .integer(static_cast<std::uint64_t>(e.kind))
                 .integer(e.id.value)
                 .integer(e.rung)
                 .digest();
    switch (e.kind) {
      case event_kind::proposed: {
        ++proposed;
        auto const* rec = v.find(e.id);
        auto const* hint = rec ? find_hint(v.problem(), rec->cand.family) : nullptr;
        if (!hint || !hint->templ || !hint->templ->space.admits(rec->cand.params)) ++outside_space;
        if (rec && rec->cand.parent) {  // a child's parent must have passed a measurement
          auto const* parent = v.find(*rec->cand.parent);
          if (!parent || parent->top_rung < 0) ++children_of_unmeasured;
          ++children;
        }
        break;
      }
      case event_kind::dispatched:
        if (!first_rung.contains(e.id)) first_rung[e.id] = e.rung;
        for (auto const& [id, r] : outstanding)
          if (r != e.rung) ++mixed_rung_dispatches;
        outstanding[e.id] = e.rung;
        ++dispatches_at[e.rung];
        break;
      case event_kind::rejected:
        rejected.insert(e.id);
        outstanding.erase(e.id);
        break;
      case event_kind::measured:
        outstanding.erase(e.id);
        break;
      default:
        break;
    }
  }

  std::uint64_t digest = 0;
  std::size_t proposed = 0, outside_space = 0, mixed_rung_dispatches = 0, children = 0, children_of_unmeasured = 0;
  std::set<candidate_id> rejected;
  std::map<candidate_id, std::size_t> outstanding, first_rung;
  std::map<std::size_t, std::size_t> dispatches_at;
};

/// One search of a composition on a synthetic landscape, watched.
struct conformance_run {
  search_result result;
  conformance_watch watch;
  double quality_ratio = 0;  ///< true quality of the best / known optimum (1 is optimal; larger is slower)
};

/// Runs `make(problem)` (a composition) on `land` restricted to `prob` with the given settings.
template <class Make>
conformance_run run_conformance_search(Make const& make, synthetic_landscape const& land, problem const& prob,
                                       std::uint64_t seed, std::uint64_t budget, std::size_t max_in_flight = 4,
                                       completion_order order = completion_order::issue) {
  conformance_run o;
  synthetic_evaluator ev(land);
  search_options opt;
  opt.seed = seed;
  opt.limits.evaluations = budget;
  opt.max_in_flight = max_in_flight;
  opt.order = order;
  opt.observers = {&o.watch};
  o.result = search(prob, make(prob), ev, opt);
  if (o.result.best)
    o.quality_ratio = land.quality(o.result.best->cand.family, o.result.best->cand.params) / land.optimum_quality();
  return o;
}

/// The landscape's problem cut down to two values per parameter: small enough to exhaust.
[[nodiscard]] inline problem small_space_problem(synthetic_landscape const& land) {
  problem p = land.get_problem();
  for (auto& h : p.catalogue)
    if (h.templ)
      for (auto& d : h.templ->space.params)
        if (d.values.size() > 2) d.values.resize(2);
  return p;
}

/// Checks a composition: `make` takes a problem const& and returns what search() takes (a
/// policies<...>, e.g. default_policies(p).with_generator(...), or registry.make(name, p)).
template <class Make>
[[nodiscard]] conformance_result check_conformance(std::string name, Make const& make,
                                                   conformance_options const& o = {}) {
  conformance_result res;
  res.name = std::move(name);
  auto fail = [&](std::string const& what) { res.failures.push_back(what); };
  auto num = [](double v) {
    std::ostringstream s;
    s << v;
    return s.str();
  };
  synthetic_config lo;
  lo.landscape_seed = o.landscape_seed;
  const synthetic_landscape land(lo);
  problem const& prob = land.get_problem();
  try {
    // One search, and the same seed again.
    auto a = run_conformance_search(make, land, prob, 1, o.evaluation_budget);
    auto const& r = a.result;
    res.notes.push_back(std::to_string(r.used.evaluations) + " evaluations, " + std::to_string(r.candidates) +
                        " candidates, best at rung " + std::to_string(r.best_rung) + ", quality/optimum " +
                        num(a.quality_ratio) + ", stop: " + r.stop_reason);
    if (r.stop_reason.empty()) fail("the search ended without a stop reason");
    if (r.stop_reason.find("waited with nothing in flight") != std::string::npos)
      fail("the scheduler waited with nothing in flight (it must generate, evaluate or stop)");
    if (r.used.evaluations < o.evaluation_budget)
      fail("stopped after " + std::to_string(r.used.evaluations) + " of " + std::to_string(o.evaluation_budget) +
           " evaluations with space left (stop: " + r.stop_reason + ")");
    if (!r.best) {
      fail("no best candidate after a whole budget");
    } else {
      if (a.quality_ratio < 1.0)
        fail("the best is better than the landscape's optimum: the quality bookkeeping is wrong");
      if (a.quality_ratio > o.quality_slack)
        fail("the best is " + num(a.quality_ratio) + "x the optimum's time (seed 1), allowed " + num(o.quality_slack));
      if (r.best->state == candidate_state::rejected || a.watch.rejected.contains(r.best->cand.id))
        fail("a rejected candidate is the best");
      if (r.best_rung >= r.best->scores.size() || !r.best->scores[r.best_rung].has_value())
        fail("the best has no score at its rung");
      auto b = run_conformance_search(make, land, prob, 1, o.evaluation_budget);
      if (!b.result.best || b.result.best->cand.id != r.best->cand.id ||
          b.result.used.evaluations != r.used.evaluations || b.result.candidates != r.candidates ||
          b.watch.digest != a.watch.digest)
        fail("the same seed gave another search (best, evaluations, candidates or event order differ)");
    }
    if (r.used.evaluations == 0 || !(r.used.device_seconds > 0) || r.counters.evaluations != r.used.evaluations)
      fail("the budget was not charged for the evaluations made");
    if (a.watch.proposed != r.candidates) fail("proposals and candidates disagree");
    if (a.watch.outside_space)
      fail(std::to_string(a.watch.outside_space) + " proposals outside the catalogue's admitted points");
    if (a.watch.children_of_unmeasured)
      fail(std::to_string(a.watch.children_of_unmeasured) + " children of parents that were never measured");

    // Quality on most seeds, not one.
    if (o.quality_seeds > 0) {
      std::uint64_t within = 0;
      double worst = 0;
      for (std::uint64_t seed = 1; seed <= o.quality_seeds; ++seed) {
        const auto q = run_conformance_search(make, land, prob, seed, o.evaluation_budget);
        if (q.result.best) within += q.quality_ratio <= o.quality_slack;
        worst = q.result.best ? std::max(worst, q.quality_ratio) : 1e300;
      }
      res.notes.push_back(std::to_string(within) + "/" + std::to_string(o.quality_seeds) + " seeds within " +
                          num(o.quality_slack) + "x of the optimum, worst " + num(worst));
      if (within < o.min_within)
        fail("only " + std::to_string(within) + " of " + std::to_string(o.quality_seeds) + " seeds came within " +
             num(o.quality_slack) + "x of the optimum (need " + std::to_string(o.min_within) + ")");
    }

    // Other concurrency settings: the engine throws on an invalid request, so a clean finish is the check.
    if (o.concurrency)
      for (std::size_t depth : {std::size_t{1}, std::size_t{8}})
        for (auto order : {completion_order::issue, completion_order::arrival}) {
          const std::string at = "max_in_flight " + std::to_string(depth) +
                                 (order == completion_order::arrival ? ", arrival order" : ", issue order");
          try {
            const auto c = run_conformance_search(make, land, prob, 3, 120, depth, order);
            if (c.result.stop_reason != "evaluation budget spent")
              fail(at + ": stopped early (" + c.result.stop_reason + ")");
            if (!c.result.best) fail(at + ": no best candidate");
            if (c.watch.outside_space) fail(at + ": proposals outside the catalogue's admitted points");
          } catch (std::exception const& e) {
            fail(at + ": the search threw: " + e.what());
          }
        }

    // A space that runs out: a clean end with a reason, never a budget spent on nothing.
    if (o.small_space) {
      const auto small = small_space_problem(land);
      std::size_t points = 0;
      for (auto const& h : small.catalogue)
        if (h.templ) points += h.templ->space.enumerate().size();
      const auto s = run_conformance_search(make, land, small, 5, 5000);
      res.notes.push_back("on " + std::to_string(points) + " points: " + std::to_string(s.result.used.evaluations) +
                          " evaluations, stop: " + s.result.stop_reason);
      if (s.result.stop_reason.empty() ||
          s.result.stop_reason.find("waited with nothing in flight") != std::string::npos)
        fail("on a space it can exhaust, the search did not end with a reason (" + s.result.stop_reason + ")");
      if (s.result.stop_reason == "evaluation budget spent")
        fail("on " + std::to_string(points) + " points it spent 5000 evaluations instead of stopping when done");
      if (s.result.candidates > points) fail("more candidates than admitted points on the small space");
      if (s.watch.outside_space) fail("proposals outside the small space's admitted points");
      if (!s.result.best) fail("no best candidate on the small space");
    }
  } catch (std::exception const& e) {
    fail(std::string("the search threw: ") + e.what());
  }
  return res;
}

/// check_conformance for a registered strategy, built with registry.make(name, problem).
[[nodiscard]] inline conformance_result check_conformance(strategy_registry const& registry, std::string const& name,
                                                          conformance_options const& o = {}) {
  return check_conformance(
      name, [&](problem const& p) { return registry.make(name, p); }, o);
}

}  // namespace kernelbrain::testing
