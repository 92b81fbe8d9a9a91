// kernelbrain-host-worker: the process that runs host-backend code (candidates and references) on
// behalf of KernelBrain's host evaluator, so that a crash, hang or runaway allocation never touches
// the search process. Two modes:
//   --serve host                                  answer requests on the channel (fd 3) the evaluator
//                                                 set up; not meant to be started by hand
//   --exec --as=N --cpu=N --fsize=N -- PROG ARGS  run PROG (the compiler) under resource limits as a
//                                                 supervised child: exits as PROG did, and kills PROG
//                                                 and all it started when the evaluator dies
//                                                 (detail/process_supervision.hpp)
// Everything it is told comes from the trusted parent; everything it loads is untrusted.
#include <cxxabi.h>
#include <dlfcn.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/time.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <chrono>
#include <climits>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <map>
#include <new>
#include <string>
#include <string_view>
#include <thread>
#include <typeinfo>
#include <vector>
#include "kernelbrain/detail/host_protocol.hpp"
#include "kernelbrain/detail/process_supervision.hpp"
#include "kernelbrain/evaluate/host_abi.h"

namespace {

using namespace kernelbrain;
using namespace kernelbrain::detail;  // the worker side of the wire protocol
namespace hp = kernelbrain::detail::host_protocol;
using clock_type = std::chrono::steady_clock;

// ---- --serve: the request loop ------------------------------------------------------------------------

/// Threads of this process, from /proc/self/stat (field 20).
int thread_count() {
  const int fd = ::open("/proc/self/stat", O_RDONLY | O_CLOEXEC);
  if (fd < 0) return -1;
  char buf[1024];
  const ssize_t n = ::read(fd, buf, sizeof buf - 1);
  ::close(fd);
  if (n <= 0) return -1;
  buf[n] = 0;
  char const* p = std::strrchr(buf, ')');  // the command name may hold spaces and parentheses
  if (!p) return -1;
  int field = 2;
  for (; *p && field < 20; ++p)
    if (*p == ' ') ++field;
  return std::atoi(p);
}

/// Virtual memory in use, from /proc/self/statm.
std::uint64_t address_space_in_use() {
  const int fd = ::open("/proc/self/statm", O_RDONLY | O_CLOEXEC);
  if (fd < 0) return 0;
  char buf[256];
  const ssize_t n = ::read(fd, buf, sizeof buf - 1);
  ::close(fd);
  if (n <= 0) return 0;
  buf[n] = 0;
  return std::strtoull(buf, nullptr, 10) * static_cast<std::uint64_t>(::sysconf(_SC_PAGESIZE));
}

std::string type_name(std::type_info const& t) {
  int st = 0;
  char* d = abi::__cxa_demangle(t.name(), nullptr, nullptr, &st);
  std::string out = st == 0 && d ? d : t.name();
  std::free(d);
  return out;
}

/// What a candidate can change in its process that would still be there for the next candidate the
/// worker runs: timers (alarm, interval timers, POSIX timers: an alarm set by one candidate used to kill
/// the next), signal dispositions and mask, soft resource limits, the working directory and umask.
/// capture() records the worker's own settings before any candidate code runs; restore() puts them back
/// before every request. (Native code could still do worse: that is the sandbox's job, issue 11.)
class process_state {
 public:
  void capture() {
    for (int sig = 1; sig < NSIG; ++sig) saved_[sig] = ::sigaction(sig, nullptr, &actions_[sig]) == 0;
    ::pthread_sigmask(SIG_SETMASK, nullptr, &mask_);
    for (std::size_t r = 0; r < limits_.size(); ++r) ::getrlimit(static_cast<int>(r), &limits_[r]);
    char buf[PATH_MAX];
    if (::getcwd(buf, sizeof buf)) cwd_ = buf;
    umask_ = ::umask(022);
    ::umask(umask_);
    captured_ = true;
  }
  [[nodiscard]] bool captured() const noexcept { return captured_; }
  void restore() {
    ::alarm(0);
    const itimerval off{};
    for (int which : {ITIMER_REAL, ITIMER_VIRTUAL, ITIMER_PROF}) ::setitimer(which, &off, nullptr);
    delete_posix_timers();
    for (int sig = 1; sig < NSIG; ++sig)
      if (saved_[sig] && sig != SIGKILL && sig != SIGSTOP) ::sigaction(sig, &actions_[sig], nullptr);
    ::pthread_sigmask(SIG_SETMASK, &mask_, nullptr);
    // RLIMIT_AS is the worker's own to set per request; the others back to the worker's soft limits,
    // as far as the (possibly lowered) hard limits allow.
    for (std::size_t r = 0; r < limits_.size(); ++r) {
      if (static_cast<int>(r) == RLIMIT_AS) continue;
      rlimit now{};
      if (::getrlimit(static_cast<int>(r), &now) != 0) continue;
      rlimit want = limits_[r];
      want.rlim_max = now.rlim_max;
      if (want.rlim_max != RLIM_INFINITY && (want.rlim_cur == RLIM_INFINITY || want.rlim_cur > want.rlim_max))
        want.rlim_cur = want.rlim_max;
      if (want.rlim_cur != now.rlim_cur) ::setrlimit(static_cast<int>(r), &want);
    }
    if (!cwd_.empty()) (void)::chdir(cwd_.c_str());
    ::umask(umask_);
  }

 private:
  /// POSIX timers: the worker creates none, so every one is the candidate's. /proc/self/timers lists
  /// their ids (one "ID: n" line each); where it cannot be read, the small ids the kernel hands out
  /// first are tried (deleting one that does not exist fails harmlessly).
  static void delete_posix_timers() {
    const int fd = ::open("/proc/self/timers", O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
      for (long id = 0; id < 512; ++id) (void)::syscall(SYS_timer_delete, id);
      return;
    }
    std::string text;
    char buf[4096];
    for (ssize_t n; (n = ::read(fd, buf, sizeof buf)) > 0;) text.append(buf, static_cast<std::size_t>(n));
    ::close(fd);
    for (std::size_t at = text.find("ID: "); at != std::string::npos; at = text.find("ID: ", at + 4))
      if (at == 0 || text[at - 1] == '\n')
        (void)::syscall(SYS_timer_delete, std::strtol(text.c_str() + at + 4, nullptr, 10));
  }

  std::array<struct sigaction, NSIG> actions_{};
  std::array<bool, NSIG> saved_{};
  sigset_t mask_{};
  std::array<rlimit, RLIM_NLIMITS> limits_{};
  std::string cwd_;
  mode_t umask_ = 022;
  bool captured_ = false;
};

class host_worker {
 public:
  std::string handle(std::uint32_t type, std::string_view body, worker_context& ctx) {
    // The census of this worker's own threads, taken at the first request: serve_requests has
    // started its channel watch thread by then.
    if (threads_ < 0) threads_ = thread_count();
    // The worker's own state before any candidate code ran, then back to it before every request.
    if (!state_.captured())
      state_.capture();
    else
      state_.restore();
    hp::reply rep;
    lift_memory_limit();  // the previous request's limit must not stop this one's bookkeeping
    try {
      switch (static_cast<hp::request>(type)) {
        case hp::request::load: {
          const auto q = hp::decode_run(body);
          limit_memory(q.memory_allowance);  // static data counts against the candidate too
          (void)load(q.module, rep);
          break;
        }
        case hp::request::run:
          run(hp::decode_run(body), ctx, rep);
          break;
        case hp::request::time:
          time(hp::decode_time(body), ctx, rep);
          break;
        default:
          fail(rep, hp::status::bad_request, "unknown request type " + std::to_string(type));
          break;
      }
    } catch (wire_error const& e) {
      fail(rep, hp::status::bad_request, e.what());
    }
    lift_memory_limit();
    return hp::encode(rep);
  }

 private:
  struct prepared {
    std::vector<float const*> in;
    std::vector<float*> out;
    std::vector<long long> dims;
    kb_args args{};
    void seal() {
      args.inputs = in.data();
      args.outputs = out.data();
      args.dims = dims.data();
      args.n_inputs = static_cast<int>(in.size());
      args.n_outputs = static_cast<int>(out.size());
      args.n_dims = static_cast<int>(dims.size());
    }
  };

  static bool fail(hp::reply& rep, hp::status s, std::string why) {
    rep.st = s;
    rep.message = std::move(why);
    return false;
  }

  kb_kernel_fn load(std::string const& path, hp::reply& rep) {
    if (auto it = modules_.find(path); it != modules_.end()) return it->second;
    // RTLD_NOW: an unresolved symbol is reported here, not as a crash in the middle of a timed run.
    void* h = ::dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (!h) {
      char const* e = ::dlerror();
      const std::string why = e ? e : "unknown error";
      if (why.find("Cannot allocate memory") != std::string::npos || why.find("failed to map") != std::string::npos ||
          why.find("cannot map zero-fill") != std::string::npos)
        fail(rep, hp::status::bad_alloc, "the candidate's static data does not fit the worker's memory limit: " + why);
      else
        fail(rep, hp::status::load_failed, "cannot load the compiled candidate: " + why);
      return nullptr;
    }
    auto fn = reinterpret_cast<kb_kernel_fn>(::dlsym(h, "kb_kernel"));
    if (!fn) {
      const bool mangled = ::dlsym(h, "_Z9kb_kernelPK7kb_args") != nullptr;
      fail(rep, hp::status::missing_entry,
           mangled ? "kb_kernel is defined without extern \"C\": declare it extern \"C\" void kb_kernel(const kb_args*)"
                   : "no function kb_kernel: a candidate must define extern \"C\" void kb_kernel(const kb_args* args)");
      return nullptr;
    }
    modules_.emplace(path, fn);
    return fn;
  }

  static bool bind(std::vector<hp::tensor_ref> const& refs, std::uint64_t arena_bytes, shared_arena& arena,
                   std::vector<float*>& out, hp::reply& rep) {
    out.clear();
    for (auto const& t : refs) {
      if (t.offset % alignof(float) != 0 || t.offset > arena_bytes ||
          t.count > (arena_bytes - t.offset) / sizeof(float))
        return fail(rep, hp::status::bad_request, "tensor outside the arena");
      out.push_back(arena.at<float>(t.offset));
    }
    return true;
  }

  bool prepare(hp::run_request const& q, worker_context& ctx, prepared& p, hp::reply& rep) {
    ctx.arena().ensure(q.arena_bytes);
    std::vector<float*> in;
    if (!bind(q.inputs, q.arena_bytes, ctx.arena(), in, rep) ||
        !bind(q.outputs, q.arena_bytes, ctx.arena(), p.out, rep))
      return false;
    p.in.assign(in.begin(), in.end());
    p.dims.assign(q.dims.begin(), q.dims.end());
    p.seal();
    return true;
  }

  /// The candidate may add `allowance` bytes of address space; beyond that, allocations fail
  /// (std::bad_alloc) instead of taking the machine's memory.
  static void limit_memory(std::uint64_t allowance) {
    if (!allowance) return;
    rlimit cur{};
    ::getrlimit(RLIMIT_AS, &cur);
    rlimit l = cur;
    l.rlim_cur = address_space_in_use() + allowance;
    if (cur.rlim_max != RLIM_INFINITY && l.rlim_cur > cur.rlim_max) l.rlim_cur = cur.rlim_max;
    ::setrlimit(RLIMIT_AS, &l);
  }
  static void lift_memory_limit() {
    rlimit cur{};
    ::getrlimit(RLIMIT_AS, &cur);
    cur.rlim_cur = cur.rlim_max;
    ::setrlimit(RLIMIT_AS, &cur);
  }

  /// Calls the kernel; false (with the reason in `rep`) when it threw or left threads running.
  bool call(kb_kernel_fn fn, kb_args const& a, double& seconds, hp::reply& rep) {
    const auto t0 = clock_type::now();
    try {
      fn(&a);
    } catch (std::bad_alloc const&) {
      return fail(rep, hp::status::bad_alloc,
                  "kb_kernel threw std::bad_alloc: it allocated more than the worker's memory limit");
    } catch (std::exception const& e) {
      return fail(rep, hp::status::threw, "kb_kernel threw " + type_name(typeid(e)) + ": " + e.what());
    } catch (...) {
      return fail(rep, hp::status::threw, "kb_kernel threw an exception that is not a std::exception");
    }
    const auto t1 = clock_type::now();
    seconds = std::chrono::duration<double>(t1 - t0).count();
    rep.kernel_seconds += seconds;
    // A joined thread can linger in /proc for a moment; a running one stays.
    for (int tries = 0; thread_count() > threads_; ++tries) {
      if (tries == 50)
        return fail(rep, hp::status::stray_threads,
                    std::to_string(thread_count() - threads_) +
                        " thread(s) still running after kb_kernel returned: a candidate must finish (join) its threads "
                        "before returning");
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
    return true;
  }

  void run(hp::run_request const& q, worker_context& ctx, hp::reply& rep) {
    prepared p;
    if (!prepare(q, ctx, p, rep)) return;
    limit_memory(q.memory_allowance);
    auto fn = load(q.module, rep);
    if (!fn) return;
    double s = 0;
    (void)call(fn, p.args, s, rep);
  }

  void flush() {
    // One ordinary store per cache line: read-for-ownership evicts what the last call left cached
    // (memset would use non-temporal stores and leave the cache alone).
    volatile unsigned char* b = flush_;
    ++flush_round_;
    for (std::size_t i = 0; i < flush_bytes_; i += 64) b[i] = flush_round_;
  }
  void ensure_flush_buffer(std::size_t bytes, worker_context& ctx) {
    if (bytes == flush_bytes_) return;
    if (flush_) ::munmap(flush_, flush_bytes_);
    flush_ = nullptr;
    flush_bytes_ = 0;
    if (!bytes) return;
    void* p = ::mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED) throw wire_error("cannot map a cache-flush buffer of " + std::to_string(bytes) + " bytes");
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
      ctx.heartbeat();
    }
  }
  static void poison(std::vector<float*> const& outs, std::vector<hp::tensor_ref> const& refs, std::uint32_t bits) {
    for (std::size_t i = 0; i < outs.size(); ++i) {
      auto* w = reinterpret_cast<std::uint32_t*>(outs[i]);
      for (std::uint64_t k = 0; k < refs[i].count; ++k) w[k] = bits;
    }
  }

  static bool all_written(std::vector<float*> const& outs, std::vector<hp::tensor_ref> const& refs, std::uint32_t bits,
                          int call_index, int calls, hp::reply& rep) {
    for (std::size_t i = 0; i < outs.size(); ++i) {
      auto const* w = reinterpret_cast<std::uint32_t const*>(outs[i]);
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

  void time(hp::time_request const& q, worker_context& ctx, hp::reply& rep) {
    prepared a, b;
    if (!prepare(q.a, ctx, a, rep)) return;
    const bool ab = !q.module_b.empty();
    if (ab) {
      b = a;
      if (!bind(q.outputs_b, q.a.arena_bytes, ctx.arena(), b.out, rep)) return;
      b.seal();
    }
    std::vector<float*> last;
    for (auto off : q.last_inputs) {
      if (off > q.a.arena_bytes) {
        fail(rep, hp::status::bad_request, "input set outside the arena");
        return;
      }
      last.push_back(ctx.arena().at<float>(off));
    }
    if (!last.empty() && last.size() != a.in.size()) {
      fail(rep, hp::status::bad_request, "input set size mismatch");
      return;
    }
    if (q.samples < 1 || q.warmup < 0) {
      fail(rep, hp::status::bad_request, "no samples");
      return;
    }
    ensure_flush_buffer(q.flush_bytes, ctx);
    limit_memory(q.a.memory_allowance);
    auto fa = load(q.a.module, rep);
    if (!fa) return;
    kb_kernel_fn fb = nullptr;
    if (ab && !(fb = load(q.module_b, rep))) return;
    ctx.heartbeat();
    const int total = q.warmup + q.samples;
    for (int i = 0; i < total; ++i) {
      const bool timed = i >= q.warmup;
      if (i == total - 1)  // fresh values in the same buffers: a result cached from earlier calls is wrong now
        for (std::size_t k = 0; k < last.size(); ++k)
          std::memcpy(const_cast<float*>(a.in[k]), last[k], q.a.inputs[k].count * sizeof(float));
      for (int k = 0; k < (ab ? 2 : 1); ++k) {
        const bool second = ab && ((i % 2 == 0) == (k == 1));  // ABBA: neither side always goes first
        flush();
        poison(second ? b.out : a.out, second ? q.outputs_b : q.a.outputs, q.poison_bits);
        double s = 0;
        if (!call(second ? fb : fa, second ? b.args : a.args, s, rep)) return;
        if (timed) (second ? rep.samples_b : rep.samples_a).push_back(s);
        // Every call must do the work: a candidate that skips repeat calls leaves the poison behind.
        if (!second && !all_written(a.out, q.a.outputs, q.poison_bits, i, total, rep)) return;
      }
      ctx.heartbeat();
    }
  }

  int threads_ = -1;
  process_state state_;
  std::map<std::string, kb_kernel_fn> modules_;
  unsigned char* flush_ = nullptr;
  std::size_t flush_bytes_ = 0;
  unsigned char flush_round_ = 0;
};

}  // namespace

int main(int argc, char** argv) {
  if (argc >= 2 && std::string_view(argv[1]) == "--exec")
    return detail::supervision::exec_main(argc, argv, 2, "kernelbrain-host-worker");
  if (argc >= 3 && std::string_view(argv[1]) == "--serve" && std::string_view(argv[2]) == hp::role) {
    host_worker w;
    return serve_requests(
        hp::role,
        [&w](std::uint32_t type, std::string_view body, worker_context& ctx) { return w.handle(type, body, ctx); },
        [] {
          // A candidate must not write files: with a zero file-size limit any attempt ends the worker.
          const rlimit no_files{0, 0};
          ::setrlimit(RLIMIT_FSIZE, &no_files);
        });
  }
  std::fprintf(
      stderr,
      "kernelbrain-host-worker: runs candidates for KernelBrain's host evaluator, which starts it.\n"
      "  usage: kernelbrain-host-worker --serve host   (started by the evaluator, with its channel on fd 3)\n"
      "         kernelbrain-host-worker --exec [--as=BYTES] [--cpu=SECONDS] [--fsize=BYTES] -- PROGRAM ARGS...\n");
  return 2;
}
