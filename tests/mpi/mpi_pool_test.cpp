// The MPI evaluation pool across three ranks (run by CTest as mpirun -np 3): ranks 1 and 2 serve one
// synthetic evaluator each; rank 0 checks that the remote members answer exactly as a local
// synthetic evaluator does (same arguments, same results to the bit, device seconds carried back),
// from two threads at once, that a serving evaluator's exception comes back as one, and that a rank
// that goes silent is declared lost (evaluator_lost) while the other still answers; then it shuts the
// pool down so that every rank ends normally and mpirun exits 0.
//
// With the argument "orphaned", rank 0 goes silent instead, and each serving rank must stop with an
// error rather than wait for ever. With "refusals" (mpirun -np 4) it checks the start: rank 1 loads
// another problem, rank 2 refuses, rank 3 says hello too late, and rank 0's remote_pool must fail
// naming all three.
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <kernelbrain/backends/synthetic/evaluator.hpp>
#include <kernelbrain/core/template_space.hpp>
#include <kernelbrain/distribute/mpi_pool.hpp>
#include <mutex>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

namespace kb = kernelbrain;
namespace mpi = kernelbrain::mpi;
using clock_type = std::chrono::steady_clock;

namespace {

std::atomic<int> failures{0};

/// Records a failed check, saying what was expected; the program goes on, so that rank 0 still shuts
/// the pool down and every rank ends.
void expect(bool ok, std::string_view what) {
  if (ok) return;
  ++failures;
  std::fprintf(stderr, "mpi_pool_test: FAILED: %.*s\n", static_cast<int>(what.size()), what.data());
}

double seconds_since(clock_type::time_point t) { return std::chrono::duration<double>(clock_type::now() - t).count(); }

/// Ends the whole job if the test hangs (a lost reply, a rank that never stops): a clear failure
/// long before CTest's timeout.
class watchdog {
 public:
  watchdog()
      : thread_([this] {
          std::unique_lock lk(mu_);
          if (cv_.wait_for(lk, std::chrono::seconds(120), [&] { return done_; })) return;
          std::fprintf(stderr, "mpi_pool_test: still running after 120 s: a call or a rank hangs\n");
          std::_Exit(3);
        }) {}
  ~watchdog() {
    {
      std::lock_guard lk(mu_);
      done_ = true;
    }
    cv_.notify_all();
    thread_.join();
  }
  watchdog(watchdog const&) = delete;
  watchdog& operator=(watchdog const&) = delete;

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  bool done_ = false;
  std::thread thread_;
};

/// The serving ranks' member: the synthetic evaluator, with test hooks. Building family "go-silent"
/// makes its rank silent (options::test_silence), as a rank behind a dead link looks to rank 0;
/// building family "slow" takes `slow` seconds (longer than rank 0 waits for a silent rank);
/// inspecting family "count-prefetches" answers with how many prefetches arrived.
class test_member final : public kb::evaluator {
 public:
  test_member(kb::synthetic_landscape const& land, std::atomic<bool>& silent, double slow = 0)
      : inner_(land), silent_(&silent), slow_(slow) {}

  [[nodiscard]] std::string fingerprint() const override { return inner_.fingerprint(); }
  [[nodiscard]] kb::verdict inspect(kb::candidate const& c) override {
    if (c.family == "count-prefetches")
      return kb::verdict::reject(kb::stage::policy, std::to_string(prefetched_.load()));
    return inner_.inspect(c);
  }
  void prefetch(kb::candidate const& c) override {
    inner_.prefetch(c);
    ++prefetched_;
  }
  [[nodiscard]] kb::verdict build(kb::candidate const& c) override {
    if (c.family == "go-silent") {
      *silent_ = true;
      return kb::verdict::pass();
    }
    if (c.family == "slow") {
      std::this_thread::sleep_for(std::chrono::duration<double>(slow_));
      return kb::verdict::pass();
    }
    return inner_.build(c);
  }
  [[nodiscard]] kb::verdict check(kb::candidate const& c, std::span<std::size_t const> shapes, int trials,
                                  std::uint64_t seed) override {
    return inner_.check(c, shapes, trials, seed);
  }
  [[nodiscard]] kb::measurement measure(kb::candidate const& c, kb::rung const& r,
                                        kb::measure_request const& req) override {
    return inner_.measure(c, r, req);
  }
  [[nodiscard]] kb::baseline measure_baseline(kb::problem const& p) override { return inner_.measure_baseline(p); }
  [[nodiscard]] double take_device_seconds() override { return inner_.take_device_seconds(); }

 private:
  kb::synthetic_evaluator inner_;
  std::atomic<bool>* silent_;
  double slow_;
  std::atomic<int> prefetched_{0};
};

/// Candidates of every family: the central point, a few random points, and the first point that
/// fails in each way the synthetic backend fails (compile, resources, crash, wrong at the odd size).
std::vector<kb::candidate> test_candidates(kb::synthetic_landscape const& land) {
  std::vector<kb::candidate> out;
  kb::rng r(11);
  for (auto const& h : land.get_problem().catalogue) {
    auto const& space = h.templ->space;
    if (auto p = kb::central_point(space)) out.push_back(kb::instantiate(h, *p, "test:central"));
    for (int i = 0; i < 3; ++i)
      if (auto p = kb::random_point(space, r))
        out.push_back(kb::instantiate(h, *p, "test:random", out.empty() ? std::nullopt : std::optional(out.back().id)));
  }
  for (auto s : {kb::stage::compile, kb::stage::resources, kb::stage::crash, kb::stage::correctness}) {
    bool found = false;
    for (auto const& h : land.get_problem().catalogue) {
      for (auto const& p : h.templ->space.enumerate())
        if (h.templ->space.admits(p) && land.failure(h.name, p) == s) {
          out.push_back(kb::instantiate(h, p, "test:failing"));
          found = true;
          break;
        }
      if (found) break;
    }
    expect(found, "the synthetic landscape has a candidate failing at stage " + std::string(kb::to_string(s)));
  }
  return out;
}

bool same_measurement(kb::measurement const& a, kb::measurement const& b) {
  if (!(a.result == b.result) || a.timings.size() != b.timings.size() || a.res.has_value() != b.res.has_value() ||
      a.vs_incumbent.has_value() != b.vs_incumbent.has_value() || a.device_seconds != b.device_seconds)
    return false;
  for (std::size_t i = 0; i < a.timings.size(); ++i) {
    auto const &x = a.timings[i], &y = b.timings[i];
    // Bit-identical: the synthetic backend is deterministic given the seed, and JSON carries doubles exactly.
    if (x.shape != y.shape || x.samples != y.samples || x.stats.median != y.stats.median ||
        x.stats.low != y.stats.low || x.stats.high != y.stats.high)
      return false;
  }
  if (a.res && (a.res->registers != b.res->registers || a.res->occupancy != b.res->occupancy)) return false;
  if (a.vs_incumbent && (a.vs_incumbent->incumbent != b.vs_incumbent->incumbent ||
                         a.vs_incumbent->ratio.median != b.vs_incumbent->ratio.median))
    return false;
  return true;
}

/// Build, check and measure `c` on the remote member and on a local synthetic evaluator with the same
/// arguments: the same results, and the same device seconds, call by call.
void compare(kb::evaluator& remote, kb::synthetic_evaluator& local, kb::candidate const& c,
             kb::candidate const& incumbent, std::uint64_t seed) {
  const auto what = [&](char const* call) {
    return std::string(call) + " of " + c.family + " " + c.params.to_string();
  };
  expect(remote.inspect(c) == local.inspect(c), what("inspect"));
  expect(remote.build(c) == local.build(c), what("build"));
  expect(remote.take_device_seconds() == local.take_device_seconds(), what("device seconds after build"));

  const std::vector<std::size_t> shapes{0, 1, 3};
  expect(remote.check(c, shapes, 2, seed) == local.check(c, shapes, 2, seed), what("check"));
  const double checked = local.take_device_seconds();
  expect(remote.take_device_seconds() == checked, what("device seconds after check"));

  kb::rung screen;
  screen.name = "screen";
  screen.shapes = {1, 2};
  screen.samples = 7;
  screen.correctness_trials = 2;
  screen.interleaved = true;
  const kb::measure_request req{seed, &incumbent};
  const auto got = remote.measure(c, screen, req);
  const auto want = local.measure(c, screen, req);
  expect(same_measurement(got, want), what("measure"));
  const double measured = local.take_device_seconds();
  expect((measured > 0 || !want.result.passed()) && remote.take_device_seconds() == measured,
         what("device seconds after measure"));
  expect(remote.take_device_seconds() == 0, what("device seconds taken twice"));
}

int search_side(mpi::environment& env, kb::synthetic_landscape const& land, mpi::options const& o) {
  const auto started = clock_type::now();
  mpi::remote_pool remote(env, land.get_problem().name, o);
  expect(remote.size() == 2, "one remote member per serving rank");
  kb::evaluator_pool pool;
  remote.add_to(pool);
  if (pool.size() != 2) {
    expect(false, "add_to adds the two remote members");
    return 1;
  }
  expect(pool[0].label == "rank 1 host" && pool[1].label == "rank 2 host", "labels 'rank R <label>'");
  expect(pool[0].node == env.node() + "/rank 1" && pool[1].node == env.node() + "/rank 2",
         "nodes '<processor name>/rank R'");
  // Both ranks run on this machine and name the same device: one device key, so a pool takes turns.
  expect(pool[0].device == mpi::device_key(env.node(), "synthetic") && pool[1].device == pool[0].device,
         "device keys '<processor name>/<device>'");

  kb::synthetic_evaluator local(land);
  for (auto const& m : pool.members()) expect(m.ev->fingerprint() == local.fingerprint(), "fingerprint from the hello");
  expect(pool.fingerprint() == local.fingerprint(), "the pool's fingerprint");

  const auto candidates = test_candidates(land);
  const auto incumbent = candidates.front();
  for (std::size_t m = 0; m < pool.size(); ++m) {
    for (std::size_t i = 0; i < candidates.size(); ++i) compare(*pool[m].ev, local, candidates[i], incumbent, 100 + i);
  }
  // Rank 1 serves with its problem: its member times that problem's reference. Rank 2 serves by
  // problem name only: its baseline is refused, saying how to serve instead.
  const auto b = pool[0].ev->measure_baseline(land.get_problem());
  expect(b.seconds == local.measure_baseline(land.get_problem()).seconds && b.seconds.size() == 4,
         "measure_baseline times the serving member's own problem");
  try {
    (void)pool[1].ev->measure_baseline(land.get_problem());
    expect(false, "a rank served by problem name only refuses the baseline");
  } catch (kb::error const& e) {
    expect(std::string(e.what()).find("rank 2 cannot measure the baseline") == 0, e.what());
  }

  // Both members at once, from their own threads, while a third thread sends prefetches to rank 1.
  {
    std::vector<std::thread> threads;
    for (std::size_t m = 0; m < 2; ++m)
      threads.emplace_back([&, m] {
        kb::synthetic_evaluator mine(land);
        for (std::size_t i = 0; i < 40; ++i)
          compare(*pool[m].ev, mine, candidates[i % candidates.size()], incumbent, 1000 * (m + 1) + i);
      });
    threads.emplace_back([&] {
      for (auto const& c : candidates) pool[0].ev->prefetch(c);
    });
    for (auto& t : threads) t.join();
  }
  // Large messages both ways at once (over Open MPI's eager limit: a rendezvous needs both sides to
  // keep MPI moving): a candidate with a 2 MiB source, timed with 20000 samples per shape.
  {
    auto big = candidates.front();
    big.source = std::string(std::size_t{2} << 20, 'x');
    big.seal();
    kb::rung many;
    many.name = "many";
    many.shapes = {2, 3};
    many.samples = 20000;
    std::vector<std::thread> threads;
    for (std::size_t m = 0; m < 2; ++m)
      threads.emplace_back([&, m] {
        kb::synthetic_evaluator mine(land);
        const kb::measure_request req{7 + m, nullptr};
        const auto got = pool[m].ev->measure(big, many, req);
        const auto want = mine.measure(big, many, req);
        expect(got.timings.size() == 2 && got.timings[0].samples.size() == 20000 && same_measurement(got, want),
               "a large measurement comes back exactly");
        expect(pool[m].ev->take_device_seconds() == mine.take_device_seconds(), "device seconds of a large one");
      });
    for (auto& t : threads) t.join();
  }

  // Prefetch is one-way and runs on its own thread there: poll until they have all arrived.
  const auto counter = kb::make_candidate("count-prefetches", {}, "test");
  std::string arrived;
  for (const auto t0 = clock_type::now(); seconds_since(t0) < 10;) {
    arrived = pool[0].ev->inspect(counter).detail;
    if (arrived == std::to_string(candidates.size())) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  expect(arrived == std::to_string(candidates.size()), "every prefetch reached rank 1 (got " + arrived + ")");

  // The serving evaluator's exception comes back with its message, and is not a lost rank (the
  // synthetic backend throws for a family its landscape does not have).
  const auto unknown = kb::make_candidate("no-such-family", {{"BLOCK", 64}}, "test");
  const std::vector<std::size_t> shapes{0};
  std::string local_message, remote_message;
  try {
    (void)local.check(unknown, shapes, 1, 3);
  } catch (kb::error const& e) {
    local_message = e.what();
  }
  try {
    (void)pool[0].ev->check(unknown, shapes, 1, 3);
    expect(false, "an exception on the serving side is thrown on rank 0");
  } catch (kb::evaluator_lost const& e) {
    expect(false, std::string("a serving evaluator's exception is not a lost rank: ") + e.what());
  } catch (kb::error const& e) {
    remote_message = e.what();
  }
  expect(!local_message.empty() && remote_message == local_message,
         "the serving side's message '" + local_message + "' comes back, got '" + remote_message + "'");
  expect(remote.lost_ranks() == 0, "no rank lost yet");

  // Rank 1 is busy for longer than lost_after_seconds: its heartbeats keep it alive, and the call
  // returns. Meanwhile rank 2 goes silent: the call waiting on it throws evaluator_lost after
  // lost_after_seconds.
  std::thread busy([&] {
    try {
      const auto v = pool[0].ev->build(kb::make_candidate("slow", {}, "test"));
      expect(v.passed(), "a call that takes longer than lost_after_seconds returns");
    } catch (std::exception const& e) {
      expect(false, std::string("a busy rank is not a lost one: ") + e.what());
    }
  });
  const auto t0 = clock_type::now();
  try {
    (void)pool[1].ev->build(kb::make_candidate("go-silent", {}, "test"));
    expect(false, "a call to a silent rank throws evaluator_lost");
  } catch (kb::evaluator_lost const& e) {
    const double waited = seconds_since(t0);
    expect(waited > 0.7 * o.lost_after_seconds && waited < o.lost_after_seconds + 4,
           "lost after about lost_after_seconds (waited " + std::to_string(waited) + " s)");
    const std::string why = e.what();
    expect(why.find("rank 2 (node " + env.node() + ") sent nothing for 2 s: its evaluations are re-queued") == 0,
           "evaluator_lost names the rank and its node: " + why);
  } catch (std::exception const& e) {
    expect(false, std::string("a silent rank is lost, not an error: ") + e.what());
  }
  busy.join();
  expect(remote.lost_ranks() == 1, "rank 2 is lost, rank 1 is not");
  // Rank 1 still answers, and exactly as before.
  compare(*pool[0].ev, local, candidates[1], incumbent, 77);
  // Later calls to rank 2 fail at once; a prefetch to it is dropped quietly.
  const auto t1 = clock_type::now();
  try {
    (void)pool[1].ev->check(candidates[0], std::vector<std::size_t>{0}, 1, 5);
    expect(false, "a call to a lost rank throws evaluator_lost");
  } catch (kb::evaluator_lost const&) {
    expect(seconds_since(t1) < 0.5, "a call to a lost rank fails at once");
  }
  pool[1].ev->prefetch(candidates[0]);

  remote.shutdown();
  remote.shutdown();  // idempotent
  try {
    (void)pool[0].ev->build(candidates[0]);
    expect(false, "a call after shutdown throws");
  } catch (kb::evaluator_lost const&) {
    expect(false, "a call after shutdown is an error, not a lost rank");
  } catch (kb::error const& e) {
    expect(std::string(e.what()).find("shut down") != std::string::npos, "a call after shutdown says so");
  }
  std::printf("mpi_pool_test: rank 0 checked %zu candidates on 2 ranks in %.1f s: %d failures\n", candidates.size(),
              seconds_since(started), failures.load());
  return failures == 0 ? 0 : 1;
}

int serve_side(mpi::environment& env, kb::synthetic_landscape const& land, mpi::options o) {
  std::atomic<bool> silent{false};
  test_member ev(land, silent, 1.5 * o.lost_after_seconds);
  const kb::pool_member member{&ev, "host", "synthetic", ""};
  o.test_silence = [&] { return silent.load(); };
  if (env.rank() == 1)
    mpi::serve(env, std::span(&member, 1), land.get_problem().name, land.get_problem(), std::move(o));
  else
    mpi::serve(env, std::span(&member, 1), land.get_problem().name, std::move(o));
  return 0;
}

/// "orphaned": rank 0 goes silent once both ranks have heard from it; each must leave serve() with an
/// error after lost_after_seconds, and rank 0 then sees both lost.
int orphaned(mpi::environment& env, kb::synthetic_landscape const& land, mpi::options o) {
  std::atomic<bool> silent{false};
  o.test_silence = [&] { return silent.load(); };
  if (env.rank() != 0) {
    test_member ev(land, silent);
    const kb::pool_member member{&ev, "host", "synthetic", ""};
    try {
      mpi::serve(env, std::span(&member, 1), land.get_problem().name, land.get_problem(), o);
      expect(false, "serve() throws when rank 0 goes silent");
    } catch (kb::error const& e) {
      const std::string why = e.what();
      expect(why.find("rank " + std::to_string(env.rank()) + " (node " + env.node() +
                      "): rank 0 sent nothing for 2 s") == 0,
             "serve()'s error names this rank and rank 0's silence: " + why);
    }
    return failures == 0 ? 0 : 1;
  }
  mpi::remote_pool remote(env, land.get_problem().name, o);
  kb::evaluator_pool pool;
  remote.add_to(pool);
  for (auto const& m : pool.members()) (void)m.ev->build(kb::make_candidate("warp-per-row", {{"BLOCK", 64}}, "t"));
  silent = true;
  const auto t0 = clock_type::now();
  while (remote.lost_ranks() < 2 && seconds_since(t0) < 10) std::this_thread::sleep_for(std::chrono::milliseconds(20));
  expect(remote.lost_ranks() == 2, "both serving ranks stopped talking once rank 0 went silent");
  silent = false;
  remote.shutdown();
  std::printf("mpi_pool_test: orphaned ranks checked in %.1f s: %d failures\n", seconds_since(t0), failures.load());
  return failures == 0 ? 0 : 1;
}

/// "refusals" (4 ranks): rank 1 loaded another problem, rank 2 cannot set up, rank 3 says hello after
/// connect_timeout_seconds; rank 0 must say so, naming all three, and every rank must end normally.
int refusals(mpi::environment& env, kb::synthetic_landscape const& land, mpi::options const& o) {
  std::atomic<bool> silent{false};
  test_member ev(land, silent);
  const kb::pool_member member{&ev, "host", "synthetic", ""};
  if (env.rank() == 1) {
    mpi::serve(env, std::span(&member, 1), "another-problem", o);
    return 0;
  }
  if (env.rank() == 2) {
    mpi::refuse(env, "no device here (a test)", o);
    return 0;
  }
  if (env.rank() == 3) {
    std::this_thread::sleep_for(std::chrono::duration<double>(o.connect_timeout_seconds + 1.5));
    mpi::serve(env, std::span(&member, 1), land.get_problem().name, land.get_problem(),
               o);  // finds rank 0's stop waiting
    return 0;
  }
  try {
    const mpi::remote_pool remote(env, land.get_problem().name, o);
    expect(false, "remote_pool refuses ranks that refused or loaded another problem");
  } catch (kb::error const& e) {
    const std::string why = e.what();
    const auto node = env.node();
    expect(why.find("rank 1 (node " + node + ") loaded problem 'another-problem', rank 0 'synthetic'") !=
               std::string::npos,
           "names rank 1 and its problem: " + why);
    expect(why.find("rank 2 (node " + node + ") refused to serve: no device here (a test)") != std::string::npos,
           "names rank 2 and its reason: " + why);
    expect(why.find("rank 3 did not say hello within 1 s") != std::string::npos, "names rank 3: " + why);
  }
  std::printf("mpi_pool_test: refusals checked: %d failures\n", failures.load());
  return failures == 0 ? 0 : 1;
}

}  // namespace

int main(int argc, char** argv) {
  const watchdog dog;
  try {
    mpi::environment env(&argc, &argv);
    const std::string_view scenario = argc > 1 ? argv[1] : "";
    if (const int ranks = scenario == "refusals" ? 4 : 3; env.size() != ranks) {
      std::fprintf(stderr, "mpi_pool_test: run it as mpirun -np %d (this job has %d ranks)\n", ranks, env.size());
      env.abort(2);
    }
    const kb::synthetic_landscape land;
    mpi::options o;
    o.heartbeat_seconds = 0.2;
    o.lost_after_seconds = 2;
    o.connect_timeout_seconds = 60;
    if (scenario == "orphaned") return orphaned(env, land, o);
    if (scenario == "refusals") {
      o.connect_timeout_seconds = 1;
      return refusals(env, land, o);
    }
    return env.rank() == 0 ? search_side(env, land, o) : serve_side(env, land, o);
  } catch (std::exception const& e) {
    std::fprintf(stderr, "mpi_pool_test: %s\n", e.what());
    return 1;
  }
}
