// Bodies of kernelbrain/backends/host/evaluator.hpp: the trusted side of the host backend. It draws inputs,
// prepares the shared arena, asks the workers to run, and checks everything they leave behind; the
// parts that do each of those live in kernelbrain/backends/host/detail/, and the state here wires them.
// Included by backends/host/evaluator.hpp (header-only form) or by kernelbrain/src.hpp: see kernelbrain/config.hpp.
#pragma once
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include <algorithm>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <string>
#include <utility>
#include <vector>
#include "kernelbrain/backends/common/ab_ratios.hpp"
#include "kernelbrain/backends/common/sanitizer_memory.hpp"
#include "kernelbrain/backends/host/detail/builds.hpp"
#include "kernelbrain/backends/host/detail/protocol.hpp"
#include "kernelbrain/backends/host/detail/reference.hpp"
#include "kernelbrain/backends/host/detail/shapes.hpp"
#include "kernelbrain/backends/host/detail/timing.hpp"
#include "kernelbrain/backends/host/detail/trials.hpp"
#include "kernelbrain/backends/host/detail/worker.hpp"
#include "kernelbrain/backends/host/evaluator.hpp"
#include "kernelbrain/core/error.hpp"
#include "kernelbrain/core/hash.hpp"
#include "kernelbrain/core/statistics.hpp"
#include "kernelbrain/isolation/worker_process.hpp"

namespace kernelbrain {
namespace detail::host {

/// The size of the largest CPU cache (sysfs, else sysconf), 32 MiB when neither says.
inline std::uint64_t llc_bytes() {
  std::uint64_t best = 0;
  std::error_code ec;
  for (auto const& e : std::filesystem::directory_iterator("/sys/devices/system/cpu/cpu0/cache", ec)) {
    std::ifstream in(e.path() / "size");
    std::string text;
    if (!(in >> text) || text.empty()) continue;
    std::uint64_t v = std::strtoull(text.c_str(), nullptr, 10);
    if (text.back() == 'K') v <<= 10;
    if (text.back() == 'M') v <<= 20;
    best = std::max(best, v);
  }
  if (!best) best = static_cast<std::uint64_t>(std::max(0L, ::sysconf(_SC_LEVEL3_CACHE_SIZE)));
  return best ? best : std::uint64_t{32} << 20;
}

inline std::string cpu_model() {
  std::ifstream in("/proc/cpuinfo");
  std::string line;
  while (std::getline(in, line))
    if (line.rfind("model name", 0) == 0) {
      auto c = line.find(':');
      if (c != std::string::npos) return line.substr(line.find_first_not_of(' ', c + 1));
    }
  return "unknown cpu";
}

/// Written before every timed call: host_options::flush_bytes, else twice the last-level cache.
inline std::uint64_t flush_bytes_for(host_options const& o) {
  return o.flush_bytes ? o.flush_bytes
                       : std::clamp<std::uint64_t>(2 * llc_bytes(), std::uint64_t{8} << 20, std::uint64_t{512} << 20);
}

}  // namespace detail::host

std::string find_host_worker(std::string const& explicit_path) {
#ifdef KERNELBRAIN_HOST_WORKER_BUILD_PATH
  char const* build_path = KERNELBRAIN_HOST_WORKER_BUILD_PATH;
#else
  char const* build_path = nullptr;
#endif
  return detail::find_worker(
      {.named = {.backend = "host backend",
                 .option = "worker_path",
                 .env_var = "KERNELBRAIN_HOST_WORKER",
                 .option_hint = "build the kernelbrain_host_worker target and point worker_path at it",
                 .env_hint = "point it at kernelbrain-host-worker (built by the kernelbrain_host_worker target)"},
       .executable = "kernelbrain-host-worker",
       .build_path = build_path,
       .not_found_hint = "build the kernelbrain_host_worker target and set KERNELBRAIN_HOST_WORKER or "
                         "host_options::worker_path to it"},
      explicit_path);
}

std::string host_sandbox_summary() {
  // The same question the executor asks before it confines itself (src/host_sandbox.hpp); an
  // executor that cannot apply an available Landlock fails instead of running with less.
  const long abi = ::syscall(444 /* landlock_create_ruleset */, nullptr, 0, 1U /* version */);
  if (abi >= 1) return "seccomp-bpf + Landlock ABI " + std::to_string(abi);
  return std::string("seccomp-bpf only: Landlock is not available here (") + std::strerror(errno) +
         "), so a module's static initialisers may read files this user can read while it loads";
}

/// The parts of the host backend (kernelbrain/backends/host/detail/), wired together. Declaration order
/// is construction order: each part is built after what it refers to.
struct host_evaluator::state {
  problem prob;
  host_options opt;
  std::string worker_exe;
  std::uint64_t flush_bytes;
  std::vector<detail::host::shape_plan> shapes;  ///< planned by the constructor, fixed afterwards
  double spent = 0;                              ///< device seconds not yet taken
  std::size_t charged = 0;                       ///< timed calls raised to their CPU time (diagnostics)
  detail::host::host_worker cand;                ///< runs candidates; its time is charged to `spent`
  detail::host::reference_oracle ref;
  detail::host::correctness_trials trials;
  detail::host::shape_timer timer;
  detail::sanitizer_memory sanitized{prob};  ///< which candidates the sanitizer stage ran, and its verdicts
  std::string fingerprint;
  mutable std::mutex mu;
  detail::host::host_builds builds;  ///< last: its compile threads stop before anything they use goes away

  state(problem const& p, host_options o)
      : prob(p),
        opt(std::move(o)),
        worker_exe(find_host_worker(opt.worker_path)),
        flush_bytes(detail::host::flush_bytes_for(opt)),
        cand(worker_exe, prob, limits(), &spent),
        ref(worker_exe, prob, shapes, limits()),
        trials(prob, opt, shapes, ref, cand),
        timer(prob, opt, shapes, ref, cand, flush_bytes),
        builds(opt, worker_exe) {}

  [[nodiscard]] detail::host::watchdog limits() const { return {opt.run_timeout, flush_bytes}; }

  /// The sanitizer stage: the same correctness trials on a build with the sanitizer flags, with the
  /// runtimes preloaded in the candidate's executor, unless sanitizer_memory already knows `c`. Any
  /// failure there is stage::sanitizer: a report (with its text), and also a crash or wrong output
  /// of the sanitized build, which the ordinary build did not show (undefined behaviour, most likely).
  verdict sanitize(candidate const& c, std::span<std::size_t const> shapes, int per_shape, std::uint64_t seed) {
    if (builds.sanitizer_runtimes().empty()) return verdict::pass();
    if (auto known = sanitized.known(c)) return *known;
    auto v = [&] {
      const auto built = builds.compile_sanitized(c.source);
      if (!built.result)
        return verdict::reject(stage::sanitizer,
                               "the build with " + sanitizer_flags_text() + " failed: " + built.result.detail);
      // Its own executor (a sanitized module is another artifact), started with the runtimes.
      auto r = trials.run(built.artifact, shapes, per_shape, derive_seed(seed, "host-sanitize", 0),
                          builds.sanitizer_runtimes());
      // The report names the source by the compile's temporary file: call it what compile errors do.
      for (std::size_t at; (at = r.detail.find(builds.compiler().directory() + "/tmp-")) != std::string::npos;) {
        const auto end = r.detail.find(".cpp", at);
        if (end == std::string::npos) break;
        r.detail.replace(at, end + 4 - at, "candidate.cpp");
      }
      if (!r && r.where != stage::sanitizer && r.where != stage::infrastructure)
        r = verdict::reject(stage::sanitizer, "under " + sanitizer_flags_text() + ", " +
                                                  std::string(to_string(r.where)) + ": " + r.detail);
      return r;
    }();
    sanitized.record(c, v);
    return v;
  }
  [[nodiscard]] std::string sanitizer_flags_text() const {
    std::string t;
    for (auto const& f : opt.sanitizer_flags)
      if (f.rfind("-fsanitize=", 0) == 0) t += (t.empty() ? "" : " ") + f;
    return t.empty() ? "the sanitizer flags" : t;
  }
};

// ---- host_evaluator -----------------------------------------------------------------------------------

host_evaluator::host_evaluator(problem const& p, host_options o) {
  p.validate();
  s_ = std::make_unique<state>(p, std::move(o));
  auto& s = *s_;
  if (!(s.opt.run_timeout > 0) || !(s.opt.compile_timeout > 0))
    throw error("host_options: run_timeout and compile_timeout must be positive seconds");
  if (s.opt.baseline_samples < 1) throw error("host_options: baseline_samples must be at least 1");
  s.shapes = detail::host::plan_shapes(s.prob);
  s.ref.load(s.builds.compile(s.prob.reference_source));
  s.fingerprint =
      "host/v1; compiler: " + s.builds.compiler().version() + "; flags: " + s.builds.compiler().flags_text() +
      "; cpu: " + detail::host::cpu_model() + "; gate: adversarial " + (s.opt.adversarial_inputs ? "on" : "off") +
      ", sanitizer " +
      (s.builds.sanitizer_runtimes().empty() ? std::string(s.opt.sanitize ? "off (no runtimes)" : "off") : "on") +
      "; timing: fresh windows";
}

host_evaluator::~host_evaluator() = default;

std::string host_evaluator::fingerprint() const { return s_->fingerprint; }

verdict host_evaluator::inspect(candidate const& c) {
  std::lock_guard lk(s_->mu);
  return inspect_host_source(c.source, s_->opt.policy);
}

void host_evaluator::prefetch(candidate const& c) { s_->builds.prefetch(c.source); }

verdict host_evaluator::build(candidate const& c) {
  std::lock_guard lk(s_->mu);
  return s_->builds.build(c, s_->cand).result;
}

verdict host_evaluator::check(candidate const& c, std::span<std::size_t const> shapes, int trials, std::uint64_t seed) {
  std::lock_guard lk(s_->mu);
  auto& s = *s_;
  s.ref.forget();
  auto const& b = s.builds.build(c, s.cand);
  if (!b.result) return b.result;
  try {
    if (auto v = s.trials.run(b.artifact, shapes, std::max(1, trials), seed); !v) return v;
    return s.sanitize(c, shapes, std::max(1, trials), seed);
  } catch (detail::host::reference_failure const& e) {
    return verdict::reject(stage::infrastructure, e.what());
  }
}

measurement host_evaluator::measure(candidate const& c, rung const& r, measure_request const& req) {
  std::lock_guard lk(s_->mu);
  auto& s = *s_;
  measurement m;
  s.ref.forget();
  auto const& b = s.builds.build(c, s.cand);
  if (!b.result) {
    m.result = b.result;
    return m;
  }
  const std::string artifact = b.artifact;
  std::string incumbent;
  if (r.interleaved && req.incumbent && req.incumbent->id != c.id)
    if (auto const& ib = s.builds.build(*req.incumbent, s.cand); ib.result) incumbent = ib.artifact;
  const int trials = std::max(1, r.correctness_trials);
  detail::ab_ratios ratios;
  try {
    for (auto shape : r.shapes) {
      // Correctness at every shape that is timed, on fresh inputs, before any timing.
      const std::size_t one[] = {shape};
      if (auto v = req.needs_check(shape) ? s.trials.run(artifact, one, trials, req.seed) : verdict::pass(); !v) {
        m.result = v;
        return m;
      }
      detail::host_protocol::reply rep;
      auto v = s.timer.time(artifact, incumbent.empty() ? nullptr : &incumbent, shape, r,
                            derive_seed(req.seed, "host-timed", shape), rep);
      if (!v) {
        m.result = v;
        return m;
      }
      s.charged += static_cast<std::size_t>(std::max(0, rep.charged_calls));
      shape_timing st;
      st.shape = shape;
      st.samples = std::move(rep.samples_a);
      st.summarise();
      if (!incumbent.empty()) ratios.add(st.samples, rep.samples_b, s.prob.shapes[shape].weight);
      m.timings.push_back(std::move(st));
    }
  } catch (detail::host::reference_failure const& e) {
    m.result = verdict::reject(stage::infrastructure, e.what());
    m.timings.clear();
    return m;
  }
  m.res = resources{};  // a CPU has no registers-per-thread or shared memory to report
  if (req.incumbent) m.vs_incumbent = ratios.against(req.incumbent->id.str());
  return m;
}

baseline host_evaluator::measure_baseline(problem const& p) {
  std::lock_guard lk(s_->mu);
  auto& s = *s_;
  if (p.shapes.size() != s.shapes.size())
    throw error("host backend: measure_baseline was given problem '" + p.name + "' with " +
                std::to_string(p.shapes.size()) + " shapes, but this evaluator was built for '" + s.prob.name +
                "' with " + std::to_string(s.shapes.size()));
  baseline b;
  s.ref.forget();
  for (std::size_t i = 0; i < s.shapes.size(); ++i) {
    const auto out = s.ref.time(i, derive_seed(0x6261736555ULL, "host-baseline", i), std::max(0, s.opt.baseline_warmup),
                                s.opt.baseline_samples, s.flush_bytes);
    b.seconds.push_back(median_with_ci(out.samples_a).median);
    s.spent += out.kernel_seconds;
    s.charged += static_cast<std::size_t>(std::max(0, out.charged_calls));
  }
  return b;
}

double host_evaluator::take_device_seconds() {
  std::lock_guard lk(s_->mu);
  return std::exchange(s_->spent, 0.0);
}

int host_evaluator::worker_pid() const {
  std::lock_guard lk(s_->mu);
  auto const& w = s_->cand.process();
  return w.running() ? w.pid() : -1;
}
std::size_t host_evaluator::worker_starts() const {
  std::lock_guard lk(s_->mu);
  return s_->cand.process().spawns();
}
std::size_t host_evaluator::charged_calls() const {
  std::lock_guard lk(s_->mu);
  return s_->charged;
}
std::size_t host_evaluator::sanitizer_runs() const {
  std::lock_guard lk(s_->mu);
  return s_->sanitized.runs();
}
std::size_t host_evaluator::compiles() const {
  std::lock_guard lk(s_->mu);
  return s_->builds.compiles();
}
std::size_t host_evaluator::cache_hits() const {
  std::lock_guard lk(s_->mu);
  return s_->builds.cache_hits();
}
std::string host_evaluator::cache_directory() const {
  std::lock_guard lk(s_->mu);
  return s_->builds.compiler().directory();
}

}  // namespace kernelbrain
