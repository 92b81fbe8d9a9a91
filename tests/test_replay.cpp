// Recordings (io/recording.hpp) and the replay backend (backends/replay/evaluator.hpp) on a small recording made
// in code: what is written is read back, a damaged file is refused with its line, the space narrows to
// the recorded points, verdicts and samples come from the recording, noise is resampled per seed, costs
// follow the rung and the engine charges them once (as the CUDA worker's replies add up), and a search
// over replay is deterministic and finds the recorded best.
#include <zlib.h>

#include <doctest/doctest.h>

#include <cmath>
#include <fstream>
#include <kernelbrain/backends/common/profile_rationing.hpp>
#include <kernelbrain/backends/replay/evaluator.hpp>
#include <kernelbrain/core/template_space.hpp>
#include <kernelbrain/defaults/multi_rung_ladder.hpp>
#include <kernelbrain/io/recording.hpp>
#include <kernelbrain/search.hpp>
#include <kernelbrain/strategies/all.hpp>
#include <optional>
#include <set>
#include <string>
#include "temp_dir.hpp"

namespace kb = kernelbrain;

namespace {

/// A problem with one template (A in 1..4, B in 1..3; 12 points), a correctness shape and two benchmark shapes.
kb::problem small_problem() {
  kb::problem p;
  p.name = "replay_toy";
  p.backend = "cuda";
  p.reference_source = "reference";
  for (auto [name, tier, w] : {std::tuple{"smoke", "smoke", 0.1}, {"mid", "medium", 1.0}, {"big", "large", 1.0}}) {
    kb::shape s;
    s.name = name;
    s.tier = tier;
    s.weight = w;
    s.dims["N"] = 100;
    p.shapes.push_back(s);
  }
  kb::expert_hint h;
  h.name = "tile";
  h.prose = "tiles";
  kb::kernel_template t;
  t.source = "kernel A=${A} B=${B}";
  t.launch = "{\"A\": ${A}}";
  t.space.params = {{"A", {1, 2, 3, 4}}, {"B", {1, 2, 3}}};
  h.templ = t;
  p.catalogue.push_back(h);
  return p;
}

/// Time of point (A, B) at shape s: best at A=3, B=2.
double true_time(std::int64_t a, std::int64_t b, std::size_t s) {
  return (1.0 + 0.2 * std::abs(static_cast<double>(a - 3)) + 0.1 * std::abs(static_cast<double>(b - 2))) * 1e-3 *
         static_cast<double>(s + 1);
}

/// Every point but A=4,B=3 (left out: "not recorded"); A=1,B=1 fails to compile; A=2,B=3 is wrong at "big".
kb::recording small_recording(kb::problem const& p) {
  kb::recording r;
  auto& h = r.header;
  h.problem = p.name;
  h.problem_digest = kb::problem_digest(p);
  h.fingerprint = "cuda/v2; test";
  h.recorded = "2026-12-02T00:00:00Z";
  h.command = "kernelbrain record replay_toy";
  h.samples = 4;
  h.warmup = 1;
  h.gate_shapes = {0};
  h.gate_trials = 2;
  h.space_points = 12;
  h.sample_seed = 1;
  for (auto const& s : p.shapes) h.shape_names.push_back(s.name);
  h.baseline_samples = {{2e-3, 2.2e-3}, {4e-3, 4.4e-3, 4.2e-3}, {6e-3}};
  for (auto const& params : p.catalogue[0].templ->space.enumerate()) {
    const auto a = params.at("A"), b = params.at("B");
    if (a == 4 && b == 3) continue;
    kb::recorded_point pt;
    pt.family = "tile";
    pt.params = params;
    pt.content = kb::content_key(kb::instantiate(p.catalogue[0], params, "test"));
    pt.compile_seconds = 0.5;
    pt.gate_seconds = 0.004;
    if (a == 1 && b == 1) {
      pt.gate = kb::verdict::reject(kb::stage::compile, "error: expected ';'");
      r.points.push_back(pt);
      continue;
    }
    pt.res = kb::resources{32, 0, 0, 0.5};
    pt.diagnosis = "near roofline";
    for (std::size_t s = 0; s < 3; ++s) {
      kb::recorded_shape rs;
      rs.shape = s;
      rs.check_seconds = 0.001;
      if (a == 2 && b == 3 && s == 2) {
        rs.result = kb::verdict::reject(kb::stage::correctness, "wrong at big");
        pt.shapes.push_back(rs);
        break;
      }
      const double t = true_time(a, b, s);
      rs.samples = {t, t * 1.02, t * 0.99, t * 1.05};
      rs.measure_seconds = rs.check_seconds + 5 * t * 1.015;
      pt.shapes.push_back(rs);
    }
    r.points.push_back(pt);
  }
  return r;
}

void write_file(std::filesystem::path const& f, kb::recording const& r, bool torn_tail = false) {
  std::ofstream out(f, std::ios::binary);
  out << kb::header_line(r.header) << '\n';
  for (auto const& p : r.points) out << kb::point_line(p) << '\n';
  if (torn_tail) out << kb::point_line(r.points.front()).substr(0, 40);
}

kb::candidate point(kb::problem const& p, std::int64_t a, std::int64_t b) {
  return kb::instantiate(p.catalogue[0], kb::parameters{{"A", a}, {"B", b}}, "test");
}

}  // namespace

TEST_CASE("recording: written lines read back, gzip too, and a torn last line is skipped") {
  const auto p = small_problem();
  const auto r = small_recording(p);
  const kb_test::temp_dir dir("rec");
  write_file(dir / "r.jsonl", r, true);
  const auto back = kb::read_recording(dir / "r.jsonl");
  CHECK(back.header.problem == "replay_toy");
  CHECK(back.header.problem_digest == r.header.problem_digest);
  CHECK(back.header.gate_shapes == r.header.gate_shapes);
  CHECK(back.header.baseline_samples == r.header.baseline_samples);
  REQUIRE(back.points.size() == r.points.size());
  for (std::size_t i = 0; i < r.points.size(); ++i) {
    CHECK(back.points[i].params == r.points[i].params);
    CHECK(back.points[i].content == r.points[i].content);
    CHECK(back.points[i].gate == r.points[i].gate);
    REQUIRE(back.points[i].shapes.size() == r.points[i].shapes.size());
    for (std::size_t k = 0; k < r.points[i].shapes.size(); ++k) {
      CHECK(back.points[i].shapes[k].result == r.points[i].shapes[k].result);
      REQUIRE(back.points[i].shapes[k].samples.size() == r.points[i].shapes[k].samples.size());
      for (std::size_t j = 0; j < r.points[i].shapes[k].samples.size(); ++j)  // 5 significant digits kept
        CHECK(back.points[i].shapes[k].samples[j] == doctest::Approx(r.points[i].shapes[k].samples[j]).epsilon(1e-5));
    }
  }
  // The same text gzipped reads the same.
  std::ifstream in(dir / "r.jsonl", std::ios::binary);
  const std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  gzFile gz = gzopen((dir / "r.jsonl.gz").c_str(), "wb");
  REQUIRE(gz != nullptr);
  REQUIRE(gzwrite(gz, text.data(), static_cast<unsigned>(text.size())) == static_cast<int>(text.size()));
  gzclose(gz);
  const auto unzipped = kb::read_recording(dir / "r.jsonl.gz");
  CHECK(unzipped.points.size() == back.points.size());
  CHECK(unzipped.points.back().shapes.back().samples == back.points.back().shapes.back().samples);
}

TEST_CASE("recording: a damaged or missing file is an error naming the file and line") {
  const auto p = small_problem();
  auto r = small_recording(p);
  const kb_test::temp_dir dir("rec");
  CHECK_THROWS_WITH_AS((void)kb::read_recording(dir / "absent.jsonl"), doctest::Contains("no such file"), kb::error);
  {
    std::ofstream out(dir / "bad.jsonl");
    out << kb::header_line(r.header) << '\n' << kb::point_line(r.points[1]) << '\n' << "{\"family\": 3}\n";
  }
  CHECK_THROWS_WITH_AS((void)kb::read_recording(dir / "bad.jsonl"), doctest::Contains("line 3"), kb::error);
  {
    std::ofstream out(dir / "format.jsonl");
    auto h = r.header;
    h.format = "kernelbrain-recording/0";
    out << kb::header_line(h) << '\n';
  }
  CHECK_THROWS_WITH_AS((void)kb::read_recording(dir / "format.jsonl"), doctest::Contains("kernelbrain-recording/1"),
                       kb::error);
  {
    std::ofstream out(dir / "sample.jsonl");
    auto pt = r.points[1];
    pt.shapes[0].samples[0] = -1;
    out << kb::header_line(r.header) << '\n' << kb::point_line(pt) << '\n';
  }
  CHECK_THROWS_WITH_AS((void)kb::read_recording(dir / "sample.jsonl"), doctest::Contains("not a positive number"),
                       kb::error);
}

TEST_CASE("replay: the space is the recorded points, and a changed problem is refused") {
  const auto p = small_problem();
  const auto r = small_recording(p);
  const auto rp = kb::replay_problem(p, r);
  auto const& space = rp.catalogue[0].templ->space;
  CHECK(space.enumerate().size() == 11);
  CHECK_FALSE(space.admits(kb::parameters{{"A", 4}, {"B", 3}}));
  CHECK(space.admits(kb::parameters{{"A", 3}, {"B", 2}}));
  kb::rng draw(5);
  for (int i = 0; i < 50; ++i) CHECK(space.admits(*kb::random_point(space, draw)));

  auto changed = p;
  changed.catalogue[0].templ->source += " ";
  CHECK_THROWS_WITH_AS((void)kb::replay_problem(changed, r), doctest::Contains("changed since it was recorded"),
                       kb::error);
  auto other = p;
  other.name = "other";
  CHECK_THROWS_WITH_AS(kb::replay_evaluator(r, other), doctest::Contains("not 'other'"), kb::error);
}

TEST_CASE("replay: a kernel adopted after the recording leaves it valid, and is not in the replayed space") {
  const auto p = small_problem();
  const auto r = small_recording(p);
  auto adopted = p;  // what kernelbrain adopt adds: a fixed entry with provenance
  kb::expert_hint h;
  h.name = "llm-1ea3671d";
  h.prose = "a model's kernel";
  h.provenance = R"({"candidate":"1ea3671d870365f7"})";
  kb::kernel_template t;
  t.source = "kernel adopted";
  t.launch = "{}";
  h.templ = t;
  adopted.catalogue.push_back(h);
  CHECK(kb::problem_digest(adopted) == kb::problem_digest(p));
  const auto rp = kb::replay_problem(adopted, r);
  REQUIRE(rp.catalogue.size() == 2);
  CHECK(rp.catalogue[0].templ.has_value());
  CHECK_FALSE(rp.catalogue[1].templ.has_value());  // no recorded point: never proposed in replay
  // The same entry without provenance is a template the recording did not see: refused.
  adopted.catalogue[1].provenance.clear();
  CHECK_THROWS_WITH_AS((void)kb::replay_problem(adopted, r), doctest::Contains("changed since it was recorded"),
                       kb::error);
}

TEST_CASE("replay: verdicts, samples, noise per seed, A/B and costs come from the recording") {
  const auto p = small_problem();
  const auto r = small_recording(p);
  const auto rp = kb::replay_problem(p, r);
  kb::replay_evaluator ev(r, rp);
  CHECK(ev.fingerprint() == "replay/cuda/v2; test");

  // Not recorded, a compile error, a shape that is wrong.
  CHECK(ev.build(point(rp, 4, 3)).where == kb::stage::infrastructure);
  CHECK(ev.build(point(rp, 1, 1)).where == kb::stage::compile);
  CHECK(ev.build(point(rp, 3, 2)).passed());
  const std::size_t gate[] = {0}, big[] = {2};
  CHECK(ev.check(point(rp, 2, 3), gate, 2, 1).passed());
  CHECK(ev.check(point(rp, 2, 3), big, 1, 1).where == kb::stage::correctness);
  CHECK(ev.compile_seconds() == doctest::Approx(1.5));  // three recorded points built, 0.5 s each
  (void)ev.take_device_seconds();

  const kb::rung screen{"screen", {1, 2}, 10, 2, 1, false, false};
  auto m = ev.measure(point(rp, 3, 2), screen, kb::measure_request{7, nullptr});
  REQUIRE(m.result.passed());
  REQUIRE(m.timings.size() == 2);
  for (auto const& t : m.timings) {
    CHECK(t.samples.size() == 10);
    const double base = true_time(3, 2, t.shape);
    for (double s : t.samples) {
      const std::set<double> allowed{base, base * 1.02, base * 0.99, base * 1.05};
      bool found = false;
      for (double x : allowed) found = found || std::abs(s - x) <= 1e-12;
      CHECK(found);
    }
  }
  // Cost: per shape one trial (1 ms) and (2 + 10) runs of the recorded per-run cost, charged once. The
  // engine charges a measurement m.device_seconds + take_device_seconds() (core/engine.hpp); like the
  // CUDA backend, replay reports it through take_device_seconds() only (issue 28: it used to set both).
  double expected = 0;
  for (std::size_t s : {1, 2}) expected += 0.001 + 12 * (5 * true_time(3, 2, s) * 1.015 / 5);
  CHECK(m.device_seconds + ev.take_device_seconds() == doctest::Approx(expected).epsilon(1e-9));

  // The same seed draws the same samples, another seed others.
  const auto again = ev.measure(point(rp, 3, 2), screen, kb::measure_request{7, nullptr});
  const auto other = ev.measure(point(rp, 3, 2), screen, kb::measure_request{8, nullptr});
  CHECK(again.timings[0].samples == m.timings[0].samples);
  CHECK(other.timings[0].samples != m.timings[0].samples);

  // A rung touching the wrong shape is refused there; one that does not is timed.
  CHECK(ev.measure(point(rp, 2, 3), screen, {1, nullptr}).result.where == kb::stage::correctness);
  const kb::rung smoke{"smoke", {1}, 3, 1, 1, false, false};
  CHECK(ev.measure(point(rp, 2, 3), smoke, {1, nullptr}).result.passed());

  // Interleaved A/B against a slower incumbent: the ratio is below one; the profile rung gives the diagnosis.
  const kb::rung confirm{"confirm", {0, 1, 2}, 30, 3, 2, true, true};
  const auto inc = point(rp, 1, 3);
  const auto ab = ev.measure(point(rp, 3, 2), confirm, kb::measure_request{3, &inc});
  REQUIRE(ab.vs_incumbent);
  CHECK(ab.vs_incumbent->ratio.median < 0.8);
  CHECK(ab.vs_incumbent->ratio.median > 0.6);
  CHECK(ab.diagnosis == "near roofline");

  // Truth: the weighted geometric-mean speedup of the sample medians; A=3,B=2 is the best.
  const auto best = ev.true_speedup(point(rp, 3, 2));
  REQUIRE(best);
  CHECK(*best == doctest::Approx(ev.best_true_speedup()));
  CHECK_FALSE(ev.true_speedup(point(rp, 2, 3)));  // wrong at one shape
  CHECK_FALSE(ev.true_speedup(point(rp, 4, 3)));  // not recorded
  CHECK(*ev.true_speedup(point(rp, 1, 2)) < *best);
}

TEST_CASE("replay: the engine charges a rung measurement once, as the CUDA worker's replies add up") {
  // Known costs: at timed shape s of point (A, B) one fresh-input trial costs check(s) and one timed run
  // per_run(A, B, s), more than the mean sample (the worker's wall time also poisons the output and
  // flushes L2 around every run). The recording's header has 1 warm-up and 4 samples per shape.
  const auto p = small_problem();
  auto r = small_recording(p);
  auto check = [](std::size_t s) { return 0.002 * static_cast<double>(s + 1); };
  auto per_run = [](std::int64_t a, std::int64_t b, std::size_t s) { return 1.25 * true_time(a, b, s); };
  for (auto& pt : r.points)
    for (auto& rs : pt.shapes) {
      rs.check_seconds = check(rs.shape);
      if (rs.result)
        rs.measure_seconds = check(rs.shape) + (1 + 4) * per_run(pt.params.at("A"), pt.params.at("B"), rs.shape);
    }
  const auto rp = kb::replay_problem(p, r);
  // The rungs' own costs: without the sanitizer run that the first assured measurement of a family is
  // charged (its own test is below).
  kb::replay_evaluator ev(r, rp, kb::replay_options{.sanitizer_seconds = 0});
  const kb::rung screen{"screen", {1, 2}, 10, 2, 3, false, false};
  const kb::rung confirm{"confirm", {1, 2}, 30, 3, 2, true, false};
  kb::engine eng(rp, kb::default_policies(rp).with_ladder(kb::multi_rung_ladder({screen, confirm})),
                 kb::engine_options{});
  eng.set_baseline(ev.measure_baseline(rp));
  (void)ev.take_device_seconds();  // the baseline's (the driver charges it apart)
  // One evaluation through the engine, without the gate: the device seconds the budget is charged.
  auto charged = [&](kb::candidate const& c, std::size_t rung, std::optional<kb::candidate> inc, bool passes) {
    kb::evaluation_task t;
    t.cand = c;
    t.rung = rung;
    t.incumbent = std::move(inc);
    t.seed = 7;
    const auto o = eng.evaluate(t, ev);
    CHECK(o.m.result.passed() == passes);
    CHECK(ev.take_device_seconds() == 0.0);  // nothing left over for the next evaluation
    return o.m.device_seconds;
  };

  // What the CUDA backend is charged for the same request: cuda_evaluator::measure sends, per shape of
  // the rung, a check request of correctness_trials trials and a time request of warmup + samples runs,
  // and charges each reply's device_seconds, the worker's wall time for the request (worker::handle in
  // src/cuda_worker/worker.cpp). The recording holds those quantities: check_seconds is the reply of a
  // one-trial check at the shape; measure_seconds - check_seconds the reply of a time request of the
  // recording's warm-up + samples runs, so one run costs per_run. Hence per shape
  //   correctness_trials * check_seconds + (warmup + samples) * per_run
  // and nothing else: counting it in m.device_seconds as well as in take_device_seconds() (issue 28)
  // charged the rung twice over.
  double cuda = 0;
  for (std::size_t s : {1, 2}) cuda += 3 * check(s) + (2 + 10) * per_run(3, 2, s);
  CHECK(charged(point(rp, 3, 2), 0, std::nullopt, true) == doctest::Approx(cuda).epsilon(1e-12));

  // Interleaved A/B: the incumbent's runs are charged at its own recorded per-run cost. worker::time runs
  // both sides in every one of the warmup + samples calls; replay charges the incumbent its `samples`
  // runs only, not its warm-up runs (3 per shape here): a gap to CUDA that this check pins as it is.
  double ab = 0;
  for (std::size_t s : {1, 2}) ab += 2 * check(s) + (3 + 30) * per_run(3, 2, s) + 30 * per_run(1, 3, s);
  CHECK(charged(point(rp, 3, 2), 1, point(rp, 1, 3), true) == doctest::Approx(ab).epsilon(1e-12));

  // A point wrong at the rung's second shape: the trials at both shapes, once. (CUDA checks and times
  // shape by shape, so it would also have timed the first shape; replay stops at the recorded failure.)
  CHECK(charged(point(rp, 2, 3), 0, std::nullopt, false) ==
        doctest::Approx(3 * check(1) + 3 * check(2)).epsilon(1e-12));
}

TEST_CASE("replay: the sanitizer and ncu runs a recording lacks are charged where the CUDA backend makes them") {
  const auto p = small_problem();
  const auto r = small_recording(p);
  const auto rp = kb::replay_problem(p, r);
  const std::size_t gate[] = {0};
  const kb::rung top{"confirm", {1, 2}, 5, 1, 1, false, true};
  // The rung's own cost, without any tool: what a measurement costs with both tools at zero seconds.
  kb::replay_evaluator bare(r, rp, kb::replay_options{.sanitizer_seconds = 0, .profile_seconds = 0});
  auto own = [&](std::int64_t a, std::int64_t b) {
    (void)bare.take_device_seconds();
    (void)bare.measure(point(rp, a, b), top, kb::measure_request{1, nullptr});
    return bare.take_device_seconds();
  };
  const double gate_cost = [&] {
    (void)bare.check(point(rp, 3, 3), gate, 2, 1);
    return bare.take_device_seconds();
  }();

  SUBCASE("compute-sanitizer: once per family, where the engine asks for it (evaluator::assure)") {
    kb::replay_evaluator ev(r, rp, kb::replay_options{.sanitizer_seconds = 1.0, .profile_seconds = 0});
    CHECK(ev.check(point(rp, 3, 3), gate, 2, 1).passed());
    CHECK(ev.take_device_seconds() == doctest::Approx(gate_cost));  // the gate's checks only
    CHECK(ev.assure(point(rp, 3, 3), 1).passed());
    CHECK(ev.take_device_seconds() == doctest::Approx(1.0));
    CHECK(ev.assure(point(rp, 2, 2), 1).passed());  // the family was sanitized
    CHECK(ev.take_device_seconds() == doctest::Approx(0.0));
  }
  SUBCASE("ncu: a profiling rung's fastest measurement so far, once per point") {
    kb::replay_evaluator ev(r, rp,
                            kb::replay_options{.sanitizer_seconds = 0, .profile_seconds = 2.0, .profile_share = 1});
    auto charged = [&](std::int64_t a, std::int64_t b) {
      (void)ev.take_device_seconds();
      (void)ev.measure(point(rp, a, b), top, kb::measure_request{1, nullptr});
      return ev.take_device_seconds();
    };
    CHECK(charged(2, 2) == doctest::Approx(own(2, 2) + 2.0));  // the first: the fastest so far
    CHECK(charged(1, 3) == doctest::Approx(own(1, 3)));        // slower: static diagnosis only
    CHECK(charged(3, 2) == doctest::Approx(own(3, 2) + 2.0));  // faster
    CHECK(charged(3, 2) == doctest::Approx(own(3, 2)));        // profiled already
    // A rung that does not profile never pays for it, whatever it measures.
    kb::rung plain = top;
    plain.name = "plain";
    plain.profile = false;
    (void)ev.measure(point(rp, 3, 1), plain, kb::measure_request{1, nullptr});
    CHECK(ev.take_device_seconds() == doctest::Approx(own(3, 1)));
  }
  SUBCASE("ncu: its runs stay within their share of the device seconds spent") {
    kb::replay_evaluator ev(r, rp,
                            kb::replay_options{.sanitizer_seconds = 0, .profile_seconds = 2.0, .profile_share = 0.5});
    // 2 s of ncu within half of what is spent: not before 2 s have been spent on other work.
    (void)ev.measure(point(rp, 2, 2), top, kb::measure_request{1, nullptr});
    CHECK(ev.take_device_seconds() == doctest::Approx(own(2, 2)));
    kb::replay_evaluator rich(
        r, rp, kb::replay_options{.sanitizer_seconds = 2.5, .profile_seconds = 2.0, .profile_share = 0.5});
    (void)rich.assure(point(rp, 3, 3), 1);  // 2.5 s of sanitizer spent first
    (void)rich.take_device_seconds();
    (void)rich.measure(point(rp, 2, 2), top, kb::measure_request{1, nullptr});
    CHECK(rich.take_device_seconds() == doctest::Approx(own(2, 2) + 2.0));
  }
  SUBCASE("the profiled shape: the rung's shape that moves the most bytes, by the CUDA backend's rule") {
    auto q = p;
    CHECK(kb::detail::profiled_shape(q, top) == 2);  // no bytes declared: the last of equals
    q.shapes[1].bytes = 4e9;
    q.shapes[2].bytes = 1e6;
    CHECK(kb::detail::profiled_shape(q, top) == 1);
    kb::rung one = top;
    one.shapes = {2};
    CHECK(kb::detail::profiled_shape(q, one) == 2);
  }
  CHECK_THROWS_AS(kb::replay_evaluator(r, rp, kb::replay_options{.profile_share = 1.5}), kb::error);
}

TEST_CASE("replay: the tools' costs read from a spec ($KERNELBRAIN_REPLAY_TOOLS)") {
  const auto o = kb::parse_replay_options("profile=3.5,all=true,sanitizer=0");
  CHECK(o.sanitizer_seconds == 0);
  CHECK(o.profile_seconds == 3.5);
  CHECK(o.profile_share == kb::replay_options{}.profile_share);
  CHECK(o.profile_all);
  CHECK(kb::parse_replay_options("").profile_seconds == kb::replay_options{}.profile_seconds);
  CHECK(kb::parse_replay_options("all=1").profile_all);
  for (auto bad : {"profile", "profile=", "profile=x", "profile=-1", "share=2", "all=2", "ncu=1", "=1"}) {
    INFO(bad);
    CHECK_THROWS_WITH_AS((void)kb::parse_replay_options(bad), doctest::Contains("replay tools '"), kb::error);
    // The message lists the keys there are.
    CHECK_THROWS_WITH_AS((void)kb::parse_replay_options(bad), doctest::Contains("sanitizer: device seconds"),
                         kb::error);
  }
}

TEST_CASE("replay: a search over a recording is deterministic and finds the recorded best") {
  const auto p = small_problem();
  const auto r = small_recording(p);
  const auto rp = kb::replay_problem(p, r);
  auto registry = kb::builtin_strategies();
  auto run = [&](std::uint64_t seed) {
    kb::replay_evaluator ev(r, rp);
    kb::search_options o;
    o.seed = seed;
    o.limits.evaluations = 60;
    auto res = kb::search(rp, registry.make("exhaustive", rp, {}), ev, o);
    REQUIRE(res.best);
    return std::pair{res.best->cand.params.to_string(), res.used.device_seconds};
  };
  const auto a = run(1), b = run(1);
  CHECK(a == b);
  CHECK(a.first == "A=3,B=2");
}
