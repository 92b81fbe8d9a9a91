// kernelbrain-host-worker: the process that runs host-backend code (candidates and references) on
// behalf of KernelBrain's host evaluator, so that a crash, hang or runaway allocation never touches
// the search process. Three modes:
//   --serve host                                  answer requests on the channel (fd 3) the evaluator
//                                                 set up; not meant to be started by hand
//   --executor PPID MODULE PATHS...               one module in a sandboxed process of its own, driven
//                                                 by a serving worker (host_executor.hpp); started by
//                                                 the worker, never by hand
//   --exec --as=N --cpu=N --fsize=N -- PROG ARGS  run PROG (the compiler) under resource limits as a
//                                                 supervised child: exits as PROG did, and kills PROG
//                                                 and all it started when the evaluator dies
//                                                 (isolation/process_supervision.hpp)
// Everything it is told comes from the trusted parent. The serving worker never runs what it is
// asked to load: each module runs in an executor, and the worker stages its inputs, times its calls
// from outside and checks what it leaves behind.
#include <limits.h>
#include <sched.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <list>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>
#include "host_executor.hpp"
#include "kernelbrain/backends/host/detail/protocol.hpp"
#include "kernelbrain/isolation/process_supervision.hpp"

namespace {

using namespace kernelbrain;
using namespace kernelbrain::detail;  // the worker side of the wire protocol
namespace hp = kernelbrain::detail::host_protocol;
namespace hx = kernelbrain::host_exec;

/// This program's own path (the executor mode is started from it).
std::string own_path() {
  char buf[PATH_MAX];
  const ssize_t n = ::readlink("/proc/self/exe", buf, sizeof buf - 1);
  return n > 0 ? std::string(buf, static_cast<std::size_t>(n)) : "/proc/self/exe";
}

class host_worker {
 public:
  std::string handle(std::uint32_t type, std::string_view body, worker_context& ctx) {
    ctx_ = &ctx;
    hp::reply rep;
    try {
      switch (static_cast<hp::request>(type)) {
        case hp::request::load: {
          const auto q = hp::decode_run(body);
          run_timeout_ = q.call_timeout;
          (void)executor_for(q.module, q.memory_allowance, q.sanitizer_runtimes, rep);
          break;
        }
        case hp::request::run:
          run(hp::decode_run(body), rep);
          break;
        case hp::request::time:
          time(hp::decode_time(body), rep);
          break;
        default:
          fail(rep, hp::status::bad_request, "unknown request type " + std::to_string(type));
          break;
      }
    } catch (wire_error const& e) {
      fail(rep, hp::status::bad_request, e.what());
    }
    return hp::encode(rep);
  }

 private:
  /// A module's executor.
  struct slot {
    std::string module;
    std::unique_ptr<hx::executor> ex;
  };

  static bool fail(hp::reply& rep, hp::status s, std::string why) {
    rep.st = s;
    rep.message = std::move(why);
    return false;
  }
  /// Records an executor's failure; the executor is dropped (a later request starts a fresh one).
  bool fail(hp::reply& rep, hx::report const& r, std::string const& module) {
    forget(module);
    return fail(rep, r.st, r.message);
  }

  void forget(std::string const& module) {
    std::erase_if(live_, [&](slot const& s) { return s.module == module; });
  }

  /// The running executor of `module`, started (and loaded) if there is none; to make room the least
  /// recently used one is ended. Null, with the reason in `rep`, when it cannot start.
  hx::executor* executor_for(std::string const& module, std::uint64_t memory_allowance,
                             std::string const& sanitizer_runtimes, hp::reply& rep) {
    for (auto it = live_.begin(); it != live_.end(); ++it)
      if (it->module == module && it->ex->running()) {
        live_.splice(live_.begin(), live_, it);  // most recently used first
        return live_.front().ex.get();
      }
    forget(module);
    // A few executors at a time: the candidate, the incumbent it is timed against, and a spare.
    while (live_.size() >= max_live) live_.pop_back();
    hx::executor::options o;
    o.program = program_;
    o.module = module;
    o.readable = readable_for(module);
    o.run_timeout = run_timeout_;
    o.memory_allowance = memory_allowance;
    o.sanitizer_runtimes = sanitizer_runtimes;
    o.heartbeat = [this] {
      if (ctx_) ctx_->heartbeat();
    };
    auto ex = std::make_unique<hx::executor>(std::move(o));
    if (auto r = ex->start(); !r) {
      fail(rep, r, module);
      return nullptr;
    }
    live_.push_front({module, std::move(ex)});
    return live_.front().ex.get();
  }

  /// What the loader may read: the module's directory and the system's library directories.
  static std::vector<std::string> readable_for(std::string const& module) {
    std::vector<std::string> v = {std::filesystem::path(module).parent_path().string()};
    for (char const* d : {"/lib", "/lib64", "/usr/lib", "/usr/lib64", "/usr/local/lib", "/etc/ld.so.cache"})
      v.emplace_back(d);
    return v;
  }

  static bool check_refs(std::vector<hp::tensor_ref> const& refs, std::uint64_t arena_bytes, hp::reply& rep) {
    if (refs.size() > hx::max_tensors) return fail(rep, hp::status::bad_request, "too many tensors");
    for (auto const& t : refs)
      if (t.offset % alignof(float) != 0 || t.offset > arena_bytes ||
          t.count > (arena_bytes - t.offset) / sizeof(float))
        return fail(rep, hp::status::bad_request, "tensor outside the arena");
    return true;
  }

  /// Sets up `ex` for calls on the request's tensors: its data area as large as the arena, the
  /// tensors copied in (the input regions, and outputs as the parent poisoned them), the command
  /// block filled (inputs where q.inputs says; a timing request moves them call by call).
  bool stage(hx::executor& ex, hp::run_request const& q, std::vector<hp::tensor_ref> const& regions,
             std::vector<hp::tensor_ref> const& outputs, hp::reply& rep) {
    if (!check_refs(q.inputs, q.arena_bytes, rep) || !check_refs(regions, q.arena_bytes, rep) ||
        !check_refs(outputs, q.arena_bytes, rep))
      return false;
    if (q.dims.size() > hx::max_dims) return fail(rep, hp::status::bad_request, "too many dims");
    ctx_->arena().ensure(q.arena_bytes);
    if (auto r = ex.ensure_data(q.arena_bytes); !r) return fail(rep, r, q.module);
    copy(regions, q.arena_bytes, ctx_->arena().data(), ex.data());
    copy(outputs, q.arena_bytes, ctx_->arena().data(), ex.data());
    auto& c = ex.command_block().spec;
    c.n_inputs = static_cast<std::uint32_t>(q.inputs.size());
    c.n_outputs = static_cast<std::uint32_t>(outputs.size());
    c.n_dims = static_cast<std::uint32_t>(q.dims.size());
    for (std::size_t i = 0; i < q.inputs.size(); ++i) c.inputs[i] = q.inputs[i].offset;
    for (std::size_t i = 0; i < outputs.size(); ++i) c.outputs[i] = outputs[i].offset;
    for (std::size_t i = 0; i < q.dims.size(); ++i) c.dims[i] = q.dims[i];
    return true;
  }
  /// Copies each buffer with the canary gaps around it (within `arena_bytes`).
  static void copy(std::vector<hp::tensor_ref> const& refs, std::uint64_t arena_bytes, std::byte const* from,
                   std::byte* to) {
    for (auto const& t : refs) {
      const std::uint64_t b = t.offset > hp::guard_bytes ? t.offset - hp::guard_bytes : 0;
      const std::uint64_t e = std::min(arena_bytes, t.offset + t.count * sizeof(float) + hp::guard_bytes);
      std::memcpy(to + b, from + b, e - b);
    }
  }

  /// One call of `ex` (its tensors staged), charged to `rep`; false with the reason in `rep`.
  bool call(hx::executor& ex, std::string const& module, double& seconds, hp::reply& rep) {
    const auto r = ex.call();
    rep.kernel_seconds += r.seconds;
    seconds = r.seconds;
    return r ? true : fail(rep, r, module);
  }

  void run(hp::run_request const& q, hp::reply& rep) {
    run_timeout_ = q.call_timeout;
    auto* ex = executor_for(q.module, q.memory_allowance, q.sanitizer_runtimes, rep);
    if (!ex || !stage(*ex, q, q.inputs, q.outputs, rep)) return;
    ex->begin_request();  // one call: only the per-call checks apply
    double s = 0;
    if (!call(*ex, q.module, s, rep)) return;
    // Back to the arena, inputs included: the parent checks that they were left alone.
    copy(q.inputs, q.arena_bytes, ex->data(), ctx_->arena().data());
    copy(q.outputs, q.arena_bytes, ex->data(), ctx_->arena().data());
  }

  void flush() {
    // One ordinary store per cache line: read-for-ownership evicts what the last call left cached
    // (memset would use non-temporal stores and leave the cache alone).
    volatile unsigned char* b = flush_;
    ++flush_round_;
    for (std::size_t i = 0; i < flush_bytes_; i += 64) b[i] = flush_round_;
  }
  void ensure_flush_buffer(std::size_t bytes) {
    if (bytes == flush_bytes_) return;
    if (flush_) ::munmap(flush_, flush_bytes_);
    flush_ = nullptr;
    flush_bytes_ = 0;
    if (!bytes) return;
    void* p = ::mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED) throw wire_error("cannot map a cache-flush buffer of " + std::to_string(bytes) + " bytes");
    // Not copied into the executors this worker forks: with it, every fork copied its page tables
    // and made the next flush copy every page (copy-on-write), 2 s a candidate for 512 MiB.
    ::madvise(p, bytes, MADV_DONTFORK);
    flush_ = static_cast<unsigned char*>(p);
    flush_bytes_ = bytes;
    // Fault every page in now, telling the parent we are alive after each chunk. The first touch of
    // a fresh mapping costs far more than a flush does later (page faults; on the 2-core CI VM 1.8 s
    // for 512 MiB, against 20 ms for each later pass), and the watchdog's allowance per call covers
    // a flush, not this: on a loaded machine the first timed call of a new worker would time out.
    const std::size_t page = static_cast<std::size_t>(::sysconf(_SC_PAGESIZE));
    volatile unsigned char* b = flush_;
    for (std::size_t off = 0; off < bytes;) {
      const std::size_t end = std::min(bytes, off + (std::size_t{16} << 20));
      for (; off < end; off += page) b[off] = 0;
      ctx_->heartbeat();
    }
  }
  static void poison(std::byte* data, std::vector<hp::tensor_ref> const& refs, std::uint32_t bits) {
    for (auto const& t : refs) {
      auto* w = reinterpret_cast<std::uint32_t*>(data + t.offset);
      for (std::uint64_t k = 0; k < t.count; ++k) w[k] = bits;
    }
  }

  static bool all_written(std::byte const* data, std::vector<hp::tensor_ref> const& refs, std::uint32_t bits,
                          int call_index, int calls, hp::reply& rep) {
    for (std::size_t i = 0; i < refs.size(); ++i) {
      auto const* w = reinterpret_cast<std::uint32_t const*>(data + refs[i].offset);
      std::uint64_t left = 0, first = 0;
      for (std::uint64_t k = 0; k < refs[i].count; ++k)
        if (w[k] == bits && !left++) first = k;
      if (left) {
        rep.index = static_cast<std::int32_t>(i);
        return fail(rep, hp::status::unwritten,
                    std::to_string(left) + " of " + std::to_string(refs[i].count) +
                        " elements still hold the poison written before call " + std::to_string(call_index + 1) +
                        " of " + std::to_string(calls) + " (first at index " + std::to_string(first) +
                        "); a candidate must do the work on every call");
      }
    }
    return true;
  }

  /// Checks a timing request's input plan: one read per input per call and side, each inside a
  /// region, and the checked call's outputs somewhere in the arena.
  static bool check_plan(hp::time_request const& q, hp::reply& rep) {
    const std::size_t n = q.a.inputs.size();
    if (q.reads.size() != static_cast<std::size_t>(q.calls()) * static_cast<std::size_t>(q.sides()) * n)
      return fail(rep, hp::status::bad_request, "one input read per input, call and side");
    for (std::size_t i = 0; i < q.reads.size(); ++i) {
      const std::uint64_t at = q.reads[i], bytes = q.a.inputs[i % n].count * sizeof(float);
      const bool inside = std::any_of(q.regions.begin(), q.regions.end(), [&](hp::tensor_ref const& r) {
        return at % alignof(float) == 0 && at >= r.offset && bytes <= r.count * sizeof(float) &&
               at - r.offset <= r.count * sizeof(float) - bytes;
      });
      if (!inside) return fail(rep, hp::status::bad_request, "an input read outside the input regions");
    }
    if (q.checked_call >= q.calls() || (q.checked_call >= 0 && q.checked_outputs.size() != q.a.outputs.size()))
      return fail(rep, hp::status::bad_request, "checked call out of range");
    for (std::size_t k = 0; k < q.checked_outputs.size(); ++k)
      if (q.checked_outputs[k].count != q.a.outputs[k].count)
        return fail(rep, hp::status::bad_request, "checked outputs of the wrong size");
    return check_refs(q.checked_outputs, q.a.arena_bytes, rep);
  }

  /// Copies the outputs `from` (in `ex`) to the arena's `to`.
  void keep_outputs(hx::executor& ex, std::vector<hp::tensor_ref> const& from, std::vector<hp::tensor_ref> const& to) {
    for (std::size_t k = 0; k < from.size(); ++k)
      std::memcpy(ctx_->arena().data() + to[k].offset, ex.data() + from[k].offset, from[k].count * sizeof(float));
  }

  void time(hp::time_request const& q, hp::reply& rep) {
    run_timeout_ = q.a.call_timeout;
    const bool ab = !q.module_b.empty();
    if (q.samples < 1 || q.warmup < 0 || q.samples > 100000 || q.warmup > 100000) {
      fail(rep, hp::status::bad_request, "no samples");
      return;
    }
    if (q.a.inputs.size() > hx::max_tensors || q.a.outputs.size() > hx::max_tensors) {
      fail(rep, hp::status::bad_request, "too many tensors");
      return;
    }
    if (!check_plan(q, rep)) return;
    ensure_flush_buffer(q.flush_bytes);
    auto* a = executor_for(q.a.module, q.a.memory_allowance, q.a.sanitizer_runtimes, rep);
    if (!a || !stage(*a, q.a, q.regions, q.a.outputs, rep)) return;
    hx::executor* b = nullptr;
    if (ab) {
      hp::run_request qb = q.a;
      qb.module = q.module_b;
      // a, used just now, is the most recently used executor: making room for b never ends it.
      if (!(b = executor_for(q.module_b, q.a.memory_allowance, {}, rep)) || !stage(*b, qb, q.regions, q.outputs_b, rep))
        return;
    }
    ctx_->heartbeat();
    for (auto* ex : {a, b})
      if (ex) ex->begin_request();
    const int total = q.calls(), sides = q.sides();
    const std::size_t n = q.a.inputs.size();
    for (int i = 0; i < total; ++i) {
      const bool timed = i >= q.warmup;
      for (int k = 0; k < sides; ++k) {
        const bool second = ab && ((i % 2 == 0) == (k == 1));  // ABBA: neither side always goes first
        auto& ex = second ? *b : *a;
        auto const& outs = second ? q.outputs_b : q.a.outputs;
        // This call's inputs: its own place in the regions (other values at other addresses).
        const std::size_t first =
            (static_cast<std::size_t>(i) * static_cast<std::size_t>(sides) + (second ? 1 : 0)) * n;
        for (std::size_t t = 0; t < n; ++t) ex.command_block().spec.inputs[t] = q.reads[first + t];
        flush();
        poison(ex.data(), outs, q.poison_bits);
        double s = 0;
        if (!call(ex, second ? q.module_b : q.a.module, s, rep)) return;
        if (timed) (second ? rep.samples_b : rep.samples_a).push_back(s);
        if (second) continue;
        // Every call must do the work: a candidate that skips repeat calls leaves the poison behind.
        if (!all_written(ex.data(), outs, q.poison_bits, i, total, rep)) return;
        if (i == q.checked_call) keep_outputs(ex, outs, q.checked_outputs);
      }
      ctx_->heartbeat();
    }
    // The CPU the executors used between calls, judged over the whole request.
    for (auto [ex, module] : {std::pair{a, &q.a.module}, std::pair{b, &q.module_b}})
      if (ex) {
        if (auto r = ex->check_request(); !r) {
          fail(rep, r, *module);
          return;
        }
        rep.charged_calls += ex->charged_calls();
      }
    // Back to the arena: the regions (the parent checks that they were left alone) and the last
    // call's outputs, each with the canary gaps around it.
    copy(q.regions, q.a.arena_bytes, a->data(), ctx_->arena().data());
    copy(q.a.outputs, q.a.arena_bytes, a->data(), ctx_->arena().data());
    if (b) copy(q.outputs_b, q.a.arena_bytes, b->data(), ctx_->arena().data());
  }

  static constexpr std::size_t max_live = 4;
  std::string program_ = own_path();
  double run_timeout_ = 10;
  worker_context* ctx_ = nullptr;
  std::list<slot> live_;  ///< most recently used first
  unsigned char* flush_ = nullptr;
  std::size_t flush_bytes_ = 0;
  unsigned char flush_round_ = 0;
};

}  // namespace

// std::thread::hardware_concurrency() asks glibc's get_nprocs(), which reads
// /sys/devices/system/cpu/online: a file the sandbox does not let a candidate open. This program
// exports its own (CMakeLists.txt), answered from the affinity mask (a system call it may make), so
// that a candidate sizing its threads that way still works in an executor.
extern "C" [[gnu::visibility("default")]] int get_nprocs() noexcept {
  cpu_set_t set;
  CPU_ZERO(&set);
  if (::sched_getaffinity(0, sizeof set, &set) != 0) return 1;
  return std::max(1, CPU_COUNT(&set));
}

int main(int argc, char** argv) {
  if (argc >= 2 && std::string_view(argv[1]) == "--executor") return host_exec::executor_main(argc, argv);
  if (argc >= 2 && std::string_view(argv[1]) == "--exec")
    return detail::supervision::exec_main(argc, argv, 2, "kernelbrain-host-worker");
  if (argc >= 3 && std::string_view(argv[1]) == "--serve" && std::string_view(argv[2]) == hp::role) {
    host_worker w;
    return serve_requests(
        hp::role,
        [&w](std::uint32_t type, std::string_view body, worker_context& ctx) { return w.handle(type, body, ctx); },
        [] {
          // Nothing another process of this user runs (a candidate's executor included) may read this
          // one's memory or descriptors through /proc.
          ::prctl(PR_SET_DUMPABLE, 0);
          // A write to a dead executor's pipe fails with EPIPE (and the executor's death is read).
          ::signal(SIGPIPE, SIG_IGN);
        });
  }
  std::fprintf(
      stderr,
      "kernelbrain-host-worker: runs candidates for KernelBrain's host evaluator, which starts it.\n"
      "  usage: kernelbrain-host-worker --serve host   (started by the evaluator, with its channel on fd 3)\n"
      "         kernelbrain-host-worker --exec [--as=BYTES] [--cpu=SECONDS] [--fsize=BYTES] -- PROGRAM ARGS...\n");
  return 2;
}
