// host_worker: a kernelbrain-host-worker process as the host backend's parent talks to it. Typed
// requests (load, run, time) under a watchdog limit sized to the arena, replies read as verdicts
// (the shared worker_verdict plus the host protocol's statuses), a fresh process after any failure,
// and, for the candidate worker, the modules it has loaded (a fresh process when too many).
#pragma once
#include <algorithm>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <initializer_list>
#include <set>
#include <string>
#include "kernelbrain/backends/host/detail/protocol.hpp"
#include "kernelbrain/core/problem.hpp"
#include "kernelbrain/core/verdict.hpp"
#include "kernelbrain/isolation/worker_process.hpp"
#include "kernelbrain/isolation/worker_verdict.hpp"

namespace kernelbrain::detail::host {

/// How long a host worker may stay silent: the kernel calls of one request, plus bookkeeping time
/// that grows with the arena and the cache flush written before each call.
struct watchdog {
  double run_timeout = 10;        ///< seconds per kernel call (host_options::run_timeout)
  std::uint64_t flush_bytes = 0;  ///< written before every timed call

  /// The limit for a request on an arena of `arena_bytes` making `calls` kernel calls at a time
  /// (two when a second module is interleaved).
  [[nodiscard]] std::chrono::milliseconds limit(std::size_t arena_bytes, int calls = 1) const {
    const double slack = 0.5 + 4.0 * static_cast<double>(arena_bytes + flush_bytes) / 1e9;
    return ceil_millis(run_timeout * calls + slack);
  }
};

/// What a decoded host reply's status means for the request `what`. `p` names the output an
/// `unwritten` status is about.
inline verdict judge_reply(problem const& p, host_protocol::reply const& rep, std::string const& what) {
  namespace hp = host_protocol;
  switch (rep.st) {
    case hp::status::ok:
      return verdict::pass();
    case hp::status::load_failed:
    case hp::status::missing_entry:
      return verdict::reject(stage::signature, what + ": " + rep.message);
    case hp::status::bad_alloc:
      return verdict::reject(stage::resources, what + ": " + rep.message);
    case hp::status::threw:
      return verdict::reject(stage::crash, what + ": " + rep.message);
    case hp::status::stray_threads:
      return verdict::reject(stage::correctness, what + ": " + rep.message);
    case hp::status::unwritten: {
      const auto k = static_cast<std::size_t>(rep.index);
      const std::string name = k < p.outputs.size() ? "output '" + p.outputs[k].name + "'" : "an output";
      const std::string context = what.rfind("kb_kernel ", 0) == 0 ? what.substr(10) : what;
      return verdict::reject(stage::correctness,
                             "output not written on a timed run: " + name + " " + context + ": " + rep.message);
    }
    case hp::status::forbidden_call:
      return verdict::reject(stage::policy, what + ": " + rep.message);
    case hp::status::crashed:
      return verdict::reject(stage::crash, what + ": the candidate " + rep.message);
    case hp::status::timed_out:
      return verdict::reject(stage::timeout, what + ": " + rep.message);
    case hp::status::timing_mismatch:
      return verdict::reject(stage::impossible, what + ": timing mismatch: " + rep.message);
    case hp::status::sandbox_failed:
      return verdict::reject(stage::infrastructure, what + ": the host sandbox failed: " + rep.message);
    case hp::status::sanitizer_report:
      return verdict::reject(stage::sanitizer, what + ": " + rep.message);
    case hp::status::bad_request:
      break;
  }
  return verdict::reject(stage::infrastructure, what + ": the worker refused the request: " + rep.message);
}

class host_worker {
 public:
  /// `spent`: where the device time of its requests is charged (null: nobody pays, the reference).
  host_worker(std::string const& executable, problem const& p, watchdog limits, double* spent)
      : proc_(executable, host_protocol::role), prob_(p), limits_(limits), spent_(spent) {}

  /// Loads `module` (running its static initialisers); `memory_allowance`: the address space it may add.
  verdict load(std::string const& module, std::uint64_t memory_allowance, std::string const& what) {
    host_protocol::run_request q;
    q.module = module;
    q.memory_allowance = memory_allowance;
    q.call_timeout = limits_.run_timeout;
    return ask(host_protocol::request::load, host_protocol::encode(q), limits_.limit(0), what, nullptr);
  }

  /// One call of `q.module` on the buffers staged in the arena.
  verdict run(host_protocol::run_request q, std::string const& what) {
    q.call_timeout = limits_.run_timeout;
    return ask(host_protocol::request::run, host_protocol::encode(q), limits_.limit(q.arena_bytes), what, nullptr);
  }

  /// What a time request brought back.
  struct timed {
    host_protocol::reply reply;  ///< the samples and the time inside the kernel
    double wall_seconds = 0;     ///< the parent's own clock, from sending the request to the reply
  };

  /// Warm-up and timed calls. `after_send`: the test hook.
  verdict time(host_protocol::time_request q, std::string const& what, timed& out,
               std::function<void(int pid)> const& after_send = {}) {
    q.a.call_timeout = limits_.run_timeout;
    return ask(host_protocol::request::time, host_protocol::encode(q),
               limits_.limit(q.a.arena_bytes, q.module_b.empty() ? 1 : 2), what, &out.reply, after_send,
               &out.wall_seconds);
  }

  /// Makes room for `modules`, starting a fresh process when this one would hold more than
  /// `max_modules` (at least 2); starts one if none is running.
  void admit(std::initializer_list<std::string const*> modules, std::size_t max_modules) {
    if (!proc_.running() || proc_.spawns() != generation_) loaded_.clear();
    std::size_t fresh = 0;
    for (auto const* m : modules) fresh += loaded_.contains(*m) ? 0 : 1;
    if (fresh && loaded_.size() + fresh > std::max<std::size_t>(max_modules, 2)) recycle();
    proc_.ensure_started();
    generation_ = proc_.spawns();
    for (auto const* m : modules) loaded_.insert(*m);
  }

  /// Ends the process: after any failure it may hold a broken module's state, so the next request
  /// starts a fresh one.
  void recycle() noexcept {
    proc_.stop();
    loaded_.clear();
  }

  [[nodiscard]] shared_arena& arena() noexcept { return proc_.arena(); }
  [[nodiscard]] worker_process const& process() const noexcept { return proc_; }

 private:
  verdict ask(host_protocol::request type, std::string const& body, std::chrono::milliseconds silence,
              std::string const& what, host_protocol::reply* out, std::function<void(int pid)> const& after_send = {},
              double* wall_seconds = nullptr) {
    const auto r = proc_.call(static_cast<std::uint32_t>(type), body, silence, after_send);
    if (wall_seconds) *wall_seconds = r.seconds;
    auto v = worker_verdict(
        r, what,
        reply_reading<host_protocol::reply>{&host_protocol::decode_reply, &host_protocol::reply::kernel_seconds},
        [this, &what](host_protocol::reply const& rep) { return judge_reply(prob_, rep, what); }, spent_, out);
    if (!v) recycle();
    return v;
  }

  worker_process proc_;
  problem const& prob_;
  watchdog limits_;
  double* spent_;
  std::set<std::string> loaded_;  ///< modules the current process has loaded
  std::size_t generation_ = 0;    ///< the process they were loaded in (proc_.spawns())
};

}  // namespace kernelbrain::detail::host
