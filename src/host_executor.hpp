// host_executor: one candidate module in a process of its own, for kernelbrain-host-worker only.
//
// The worker that answers the evaluator never runs candidate code. For each module it starts an
// executor (this program again, in its --executor mode): a fresh process that confines itself
// (host_sandbox.hpp), loads the module and then calls kb_kernel each time the worker says "go".
// The worker decides every verdict and every time from outside:
//   - the time of a call is the executor's reading of CLOCK_MONOTONIC around kb_kernel, refused when
//     it lies outside the worker's own window ("go" to "done"), and raised to what the kernel's count
//     of the executor's CPU time (its process CPU clock, its main thread's schedstat) says the call
//     took at least; a call is not over until every thread the candidate started has ended and the
//     main thread sleeps again;
//   - the inputs and outputs: the executor has a private copy (its own memory file), staged and
//     poisoned by the worker; it never sees the evaluator's arena, the reference, or another module.
// One executor per module, so nothing one candidate does (timers, signal handlers, limits, leaks)
// reaches the next; after any failure the executor is killed and a later request starts a new one.
// Statuses are the host protocol's (host_protocol::status), from the executor to the evaluator.
#pragma once
#include <cxxabi.h>
#include <dlfcn.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <functional>
#include <new>
#include <string>
#include <string_view>
#include <thread>
#include <typeinfo>
#include <vector>
#include "host_sandbox.hpp"
#include "kernelbrain/backends/host/detail/protocol.hpp"
#include "kernelbrain/evaluate/host_abi.h"
#include "kernelbrain/isolation/worker_process.hpp"

namespace kernelbrain::host_exec {

using status = detail::host_protocol::status;

// ---- what the worker and an executor share ------------------------------------------------------------

inline constexpr int memory_fd = 3;  ///< the executor's memory file: the control block, then its data
inline constexpr int go_fd = 4;      ///< the worker writes one byte per command
inline constexpr int done_fd = 5;    ///< the executor writes one byte per finished command
inline constexpr std::size_t control_bytes = 8192;
inline constexpr std::size_t max_tensors = 64, max_dims = 32;
inline constexpr int forbidden_exit = 70;  ///< the exit status after a trapped system call
/// Set to "1" in a sanitized build's executor (with the runtimes in LD_PRELOAD).
inline constexpr char const* sanitized_env = "KERNELBRAIN_SANITIZED_EXECUTOR";

enum class command : std::uint32_t {
  load = 1,
  call,   ///< kb_kernel once, timed by the executor's clock and checked by the worker
  remap,  ///< the data area changed size
};

/// The tensors and dims of a call, as offsets into the executor's data area.
struct call_spec {
  std::uint32_t n_inputs = 0, n_outputs = 0, n_dims = 0;
  std::uint64_t inputs[max_tensors] = {}, outputs[max_tensors] = {};
  std::int64_t dims[max_dims] = {};
};

/// The control block at the start of the memory file. The executor can write all of it, so the
/// worker reads it defensively (bounded message, counts checked).
struct control {
  // The worker's command.
  command cmd = command::load;
  std::uint64_t data_bytes = 0;  ///< remap: the data area's new size
  call_spec spec;
  // The executor's answer: ok, threw, bad_alloc, load_failed, missing_entry, forbidden_call (with
  // syscall_nr), sandbox_failed, or bad_request (the worker asked for something malformed).
  status result = status::ok;
  std::int32_t syscall_nr = -1;
  /// call: CLOCK_MONOTONIC (ns) just before and just after kb_kernel, as the executor read them.
  /// The worker checks them against what it saw from outside before it believes them.
  std::int64_t call_start_ns = 0, call_end_ns = 0;
  char message[2048] = {};
};
static_assert(sizeof(control) <= control_bytes);

// ---- the executor (--executor mode) -------------------------------------------------------------------

/// CLOCK_MONOTONIC in nanoseconds: the clock std::chrono::steady_clock reads, in both processes.
inline std::int64_t monotonic_ns() noexcept {
  timespec ts{};
  ::clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<std::int64_t>(ts.tv_sec) * 1000000000 + ts.tv_nsec;
}

namespace impl {
inline control* ctl = nullptr;

/// SIGSYS from the filter: say which call, and end. Async-signal-safe: stores and raw system calls.
inline void on_forbidden(int, siginfo_t* info, void*) {
  if (ctl) {
    ctl->syscall_nr = info->si_syscall;
    ctl->result = status::forbidden_call;
  }
  ::syscall(SYS_exit_group, forbidden_exit);
}

inline void say(status r, std::string_view text) {
  ctl->result = r;
  const std::size_t n = std::min(text.size(), sizeof ctl->message - 1);
  std::memcpy(ctl->message, text.data(), n);
  ctl->message[n] = 0;
}

inline void done() {
  const char b = 'd';
  if (::write(done_fd, &b, 1) != 1) ::syscall(SYS_exit_group, 0);
}

inline bool wait_go() {
  char b = 0;
  for (;;) {
    const ssize_t n = ::read(go_fd, &b, 1);
    if (n == 1) return true;
    if (n == 0 || errno != EINTR) return false;
  }
}

inline kb_kernel_fn load(char const* module) {
  void* h = ::dlopen(module, RTLD_NOW | RTLD_LOCAL);
  if (!h) {
    char const* e = ::dlerror();
    const std::string why = e ? e : "unknown error";
    if (why.find("Cannot allocate memory") != std::string::npos || why.find("failed to map") != std::string::npos ||
        why.find("cannot map zero-fill") != std::string::npos)
      say(status::bad_alloc, "the candidate's static data does not fit the worker's memory limit: " + why);
    else
      say(status::load_failed, "cannot load the compiled candidate: " + why);
    return nullptr;
  }
  auto fn = reinterpret_cast<kb_kernel_fn>(::dlsym(h, "kb_kernel"));
  if (!fn)
    say(status::missing_entry,
        ::dlsym(h, "_Z9kb_kernelPK7kb_args")
            ? "kb_kernel is defined without extern \"C\": declare it extern \"C\" void kb_kernel(const kb_args*)"
            : "no function kb_kernel: a candidate must define extern \"C\" void kb_kernel(const kb_args* args)");
  return fn;
}

/// In a sanitized build's executor (sanitized_env set by the worker): lets the preloaded sanitizer
/// runtimes cache what they read from /proc before the sandbox closes it, and returns the descriptor
/// they report on (stderr); -1 elsewhere.
inline int prepare_sanitizers() {
  char const* on = std::getenv(sanitized_env);
  if (!on || std::string_view(on) != "1") return -1;
  struct sandbox_arguments {  // __sanitizer_sandbox_arguments, as <sanitizer/common_interface_defs.h> has it
    int coverage_sandboxed = 0;
    std::intptr_t coverage_fd = -1;
    unsigned int coverage_max_block_size = 0;
  } args;
  using notify_fn = void (*)(sandbox_arguments*);
  if (auto notify = reinterpret_cast<notify_fn>(::dlsym(RTLD_DEFAULT, "__sanitizer_sandbox_on_notify"))) notify(&args);
  return 2;
}

inline void call(kb_kernel_fn fn, std::byte* data, std::uint64_t data_bytes) {
  call_spec const c = ctl->spec;  // one read: the candidate may scribble on the block while it runs
  if (c.n_inputs > max_tensors || c.n_outputs > max_tensors || c.n_dims > max_dims)
    return say(status::bad_request, "too many tensors or dims");
  float const* in[max_tensors];
  float* out[max_tensors];
  for (std::uint32_t i = 0; i < c.n_inputs; ++i) {
    if (c.inputs[i] >= data_bytes) return say(status::bad_request, "input outside the data area");
    in[i] = reinterpret_cast<float const*>(data + c.inputs[i]);
  }
  for (std::uint32_t i = 0; i < c.n_outputs; ++i) {
    if (c.outputs[i] >= data_bytes) return say(status::bad_request, "output outside the data area");
    out[i] = reinterpret_cast<float*>(data + c.outputs[i]);
  }
  long long dims[max_dims];
  for (std::uint32_t i = 0; i < c.n_dims; ++i) dims[i] = c.dims[i];
  kb_args a{in, out, dims, static_cast<int>(c.n_inputs), static_cast<int>(c.n_outputs), static_cast<int>(c.n_dims)};
  try {
    const std::int64_t t0 = monotonic_ns();
    fn(&a);
    const std::int64_t t1 = monotonic_ns();
    ctl->call_start_ns = t0;
    ctl->call_end_ns = t1;
    ctl->result = status::ok;
  } catch (std::bad_alloc const&) {
    say(status::bad_alloc, "kb_kernel threw std::bad_alloc: it allocated more than the worker's memory limit");
  } catch (std::exception const& e) {
    int st = 0;
    char* d = abi::__cxa_demangle(typeid(e).name(), nullptr, nullptr, &st);
    say(status::threw, std::string("kb_kernel threw ") + (st == 0 && d ? d : typeid(e).name()) + ": " + e.what());
    std::free(d);
  } catch (...) {
    say(status::threw, "kb_kernel threw an exception that is not a std::exception");
  }
}
}  // namespace impl

/// The executor's main: argv = [program, "--executor", parent pid, module, readable paths...].
inline int executor_main(int argc, char** argv) {
  if (argc < 4) return 2;
  // Die with the worker (it forked us from the thread that lives as long as it does).
  ::prctl(PR_SET_PDEATHSIG, SIGKILL);
  if (::getppid() != std::atoi(argv[2])) return 3;
  void* m = ::mmap(nullptr, control_bytes, PROT_READ | PROT_WRITE, MAP_SHARED, memory_fd, 0);
  if (m == MAP_FAILED) return 4;
  impl::ctl = static_cast<control*>(m);
  auto* ctl = impl::ctl;
  struct sigaction sa {};
  sa.sa_sigaction = &impl::on_forbidden;
  sa.sa_flags = SA_SIGINFO;
  ::sigaction(SIGSYS, &sa, nullptr);

  // glibc sets up its thread machinery (signal handlers among it) when the first thread starts:
  // here, before the filters, rather than in the candidate's first std::thread.
  std::thread([] {}).join();

  // A sanitized build's executor: the sanitizer runtimes (preloaded by the worker) read what they
  // need of /proc now, and write their reports on stderr, which the worker reads.
  const int report_fd = impl::prepare_sanitizers();

  // Confine file access, then install the load filter; say we are ready for the load command (the
  // worker sets our memory limit first: the module's static data counts against it).
  std::vector<std::string> readable(argv + 4, argv + argc);
  const int abi = host_sandbox::landlock::abi();
  const std::string confined = host_sandbox::confine_files(readable, abi);
  if (!confined.empty() && abi >= 1) {  // available but refused: no downgrade
    impl::say(status::sandbox_failed, confined);
    impl::done();
    return 5;
  }
  const pid_t self = ::getpid();
  if (const int e = host_sandbox::rules(go_fd, done_fd, self, true, report_fd).install(); e != 0) {
    impl::say(status::sandbox_failed, std::string("cannot install the seccomp filter: ") + std::strerror(e));
    impl::done();
    return 5;
  }
  impl::done();
  if (!impl::wait_go() || ctl->cmd != command::load) return 0;
  ctl->message[0] = 0;
  const kb_kernel_fn fn = impl::load(argv[3]);
  if (!fn) {
    impl::done();
    return 0;
  }
  if (const int e = host_sandbox::rules(go_fd, done_fd, self, false, report_fd).install(); e != 0) {
    impl::say(status::sandbox_failed, std::string("cannot install the seccomp filter: ") + std::strerror(e));
    impl::done();
    return 5;
  }
  ctl->result = status::ok;
  impl::done();

  std::byte* data = nullptr;
  std::uint64_t data_bytes = 0;
  while (impl::wait_go()) {
    switch (ctl->cmd) {
      case command::remap: {
        const std::uint64_t want = ctl->data_bytes;
        if (data) ::munmap(data, data_bytes);
        data = nullptr;
        data_bytes = 0;
        void* p = ::mmap(nullptr, want, PROT_READ | PROT_WRITE, MAP_SHARED, memory_fd, control_bytes);
        if (p == MAP_FAILED) {
          impl::say(status::bad_alloc, "cannot map the data area: " + std::string(std::strerror(errno)));
          break;
        }
        data = static_cast<std::byte*>(p);
        data_bytes = want;
        ctl->result = status::ok;
        break;
      }
      case command::call:
        if (!data)
          impl::say(status::bad_request, "call before the data area was mapped");
        else
          impl::call(fn, data, data_bytes);
        break;
      default:
        impl::say(status::bad_request, "unknown command");
        break;
    }
    impl::done();
  }
  return 0;
}

}  // namespace kernelbrain::host_exec

// ---- the worker's side --------------------------------------------------------------------------------

namespace kernelbrain::host_exec {

/// The environment a sanitized build's executor gets on top of the worker's: the runtimes preloaded
/// (they must come before anything else), options that make the first error end the process with a
/// report on stderr (no leak check, which needs ptrace; no symbolizer, which would start a process),
/// and stack-use-after-return on.
inline std::vector<std::string> sanitizer_environment(std::string const& runtimes) {
  return {"LD_PRELOAD=" + runtimes,
          "ASAN_OPTIONS=detect_leaks=0:detect_stack_use_after_return=1:symbolize=0:halt_on_error=1:exitcode=86:"
          "abort_on_error=0:handle_abort=0:print_legend=0:malloc_context_size=8:verify_asan_link_order=0:"
          "detect_odr_violation=0:color=never",
          "UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1:symbolize=0:exitcode=87:report_error_type=1:color=never",
          std::string(sanitized_env) + "=1"};
}
/// A variable of the worker's environment that the sanitized executor's own settings replace.
inline bool is_sanitizer_variable(std::string_view e) {
  for (std::string_view name : {"LD_PRELOAD=", "ASAN_OPTIONS=", "UBSAN_OPTIONS=", "KERNELBRAIN_SANITIZED_EXECUTOR="})
    if (e.substr(0, name.size()) == name) return true;
  return false;
}
/// The report in a sanitized executor's stderr, trimmed to what says what went wrong (the error
/// line, the first frames, the summary; PIDs dropped): empty when there is none.
inline std::string sanitizer_report(std::string const& text) {
  auto starts = [&](std::size_t at) {
    return text.compare(at, 6, "ERROR:") == 0 || text.find(": runtime error: ", at) < text.find('\n', at);
  };
  std::string out;
  int kept = 0;
  bool in_report = false;
  for (std::size_t at = 0; at < text.size() && kept < 24;) {
    std::size_t nl = text.find('\n', at);
    if (nl == std::string::npos) nl = text.size();
    std::size_t b = at;
    if (text.compare(b, 2, "==") == 0)  // "==1234==ERROR: ..." -> "ERROR: ..."
      if (auto e = text.find("==", b + 2); e != std::string::npos && e < nl) b = e + 2;
    if (!in_report && starts(b)) in_report = true;
    const bool summary = text.compare(b, 8, "SUMMARY:") == 0;
    const bool hint = text.compare(b, 5, "HINT:") == 0 || text.compare(b, 13, "      (longjm") == 0;
    if (((in_report && nl > b) || summary) && !hint) {
      out.append(text, b, nl - b);
      out += '\n';
      ++kept;
    }
    if (summary) break;  // what follows (shadow bytes, their legend) says nothing more about the candidate
    at = nl + 1;
  }
  while (!out.empty() && out.back() == '\n') out.pop_back();
  return out;
}

struct report {
  status st = status::ok;
  std::string message;
  double seconds = 0;  ///< a timed call: the executor's reading, or until its threads were gone
  explicit operator bool() const noexcept { return st == status::ok; }
};

class executor {
 public:
  struct options {
    std::string program;                 ///< this executable (it has the --executor mode)
    std::string module;                  ///< the compiled candidate
    std::vector<std::string> readable;   ///< what the loader may read (Landlock)
    double run_timeout = 10;             ///< seconds a call (and a load) may take
    std::uint64_t memory_allowance = 0;  ///< address space the candidate may add beyond its data (0: no limit)
    std::function<void()> heartbeat;     ///< called about once a second while waiting
    /// A sanitized build: the runtimes to preload (LD_PRELOAD's colon-separated paths); its reports
    /// are captured and make a failure a sanitizer_report. Empty: an ordinary build.
    std::string sanitizer_runtimes;
  };

  explicit executor(options o) : opt_(std::move(o)) {}
  executor(executor const&) = delete;
  executor& operator=(executor const&) = delete;
  ~executor() { stop(); }

  /// Starts the process and loads the module.
  report start() {
    if (auto r = spawn(); !r) return r;
    if (opt_.memory_allowance) limit_memory(vm_bytes() + opt_.memory_allowance);
    report r;
    if (!run(command::load, r)) return r;
    if (auto t = threads_and_state(); t.threads > 1)
      return fail(r, status::stray_threads,
                  std::to_string(t.threads - 1) +
                      " thread(s) started while the module loaded (static initialisers must not start threads)");
    cpu_settled_ = process_cpu();
    return r;
  }

  /// Makes the data area at least `bytes` long (both sides map it).
  report ensure_data(std::uint64_t bytes) {
    report r;
    if (bytes <= data_bytes_ && data_) return r;
    const std::uint64_t page = static_cast<std::uint64_t>(::sysconf(_SC_PAGESIZE));
    std::uint64_t want = std::max<std::uint64_t>(bytes, data_bytes_ + data_bytes_ / 2);
    want = std::max<std::uint64_t>(page, (want + page - 1) / page * page);
    if (::ftruncate(fd_, static_cast<off_t>(control_bytes + want)) != 0)
      return fail(r, status::sandbox_failed, "cannot grow the executor's memory file: " + errno_text());
    if (data_) ::munmap(data_, data_bytes_);
    data_ = nullptr;
    void* p = ::mmap(nullptr, want, PROT_READ | PROT_WRITE, MAP_SHARED, fd_, control_bytes);
    if (p == MAP_FAILED) return fail(r, status::sandbox_failed, "cannot map the executor's data: " + errno_text());
    if (limit_ && want > data_bytes_) limit_memory(limit_ + (want - data_bytes_));
    data_ = static_cast<std::byte*>(p);
    data_bytes_ = want;
    ctl_->data_bytes = want;
    (void)run(command::remap, r);
    return r;
  }

  [[nodiscard]] std::byte* data() const noexcept { return data_; }
  [[nodiscard]] control& command_block() noexcept { return *ctl_; }
  [[nodiscard]] bool running() const noexcept { return pid_ > 0; }

  /// One kb_kernel call on the tensors set in command_block(), and its time. A sanitized build's
  /// call that returned after a sanitizer reported (one that does not end the process) fails too.
  report call() {
    report r;
    if (run(command::call, r) && report_ >= 0)
      if (auto text = sanitizer_report(read_report()); !text.empty()) {
        stop();
        fail(r, status::sanitizer_report, std::move(text));
      }
    return r;
  }

  void stop() noexcept {
    if (pid_ > 0) {
      ::kill(pid_, SIGKILL);
      int st = 0;
      while (::waitpid(pid_, &st, 0) < 0 && errno == EINTR) {
      }
      pid_ = -1;
    }
    for (int* fd : {&go_, &done_, &stat_fd_, &sched_fd_, &fd_, &report_})
      if (*fd >= 0) {
        ::close(*fd);
        *fd = -1;
      }
    if (data_) ::munmap(data_, data_bytes_);
    if (ctl_) ::munmap(ctl_, control_bytes);
    data_ = nullptr;
    ctl_ = nullptr;
    data_bytes_ = 0;
  }

  /// CPU time the executor may use between two calls (it sleeps there): in one gap, and in the
  /// median gap of a request. Within a call, what its threads used beyond the reported time is
  /// charged to the sample, except `charge_allowance` plus `outside_share` of the call.
  static constexpr double gross_cpu_allowance = 10e-3, median_cpu_allowance = 0.5e-3, charge_allowance = 0.5e-3,
                          outside_share = 0.05;

  /// Starts counting, over the calls of one request, the CPU used between calls and the calls
  /// charged more than their reported time.
  void begin_request() { stats_ = {}; }
  /// Calls of this request whose sample was raised to what the CPU accounting says they took.
  [[nodiscard]] int charged_calls() const noexcept { return stats_.charged; }
  /// The request's verdict on the CPU used between calls: its median must be small (an honest
  /// executor sleeps; a candidate that works between calls, where no sample counts it, does not).
  report check_request() {
    report r;
    auto median = [](std::vector<double> v) {
      if (v.empty()) return 0.0;
      std::nth_element(v.begin(), v.begin() + static_cast<std::ptrdiff_t>(v.size() / 2), v.end());
      return v[v.size() / 2];
    };
    if (const double g = median(stats_.between); g > median_cpu_allowance)
      mismatch(r, "the candidate used " + ms(g) +
                      " of CPU time between calls in the median gap: work done "
                      "outside the timed calls");
    return r;
  }

 private:
  static std::string errno_text() { return std::strerror(errno); }
  static report& fail(report& r, status st, std::string why) {
    r.st = st;
    r.message = std::move(why);
    return r;
  }
  /// What a sanitized build's executor wrote on stderr so far (at most 1 MiB; nothing elsewhere).
  [[nodiscard]] std::string read_report() const {
    std::string text;
    char buf[4096];
    for (ssize_t n; report_ >= 0 && text.size() < (1U << 20) && (n = ::read(report_, buf, sizeof buf)) > 0;)
      text.append(buf, static_cast<std::size_t>(n));
    return text;
  }

  [[nodiscard]] std::string bounded_message() const {
    return {ctl_->message, ::strnlen(ctl_->message, sizeof ctl_->message)};
  }

  report spawn() {
    report r;
    fd_ = ::memfd_create("kernelbrain-executor", MFD_CLOEXEC);
    if (fd_ < 0 || ::ftruncate(fd_, control_bytes) != 0)
      return fail(r, status::sandbox_failed, "cannot create the executor's memory file: " + errno_text());
    void* m = ::mmap(nullptr, control_bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd_, 0);
    if (m == MAP_FAILED) return fail(r, status::sandbox_failed, "cannot map the control block: " + errno_text());
    ctl_ = new (m) control{};
    int go[2], dn[2];
    if (::pipe2(go, O_CLOEXEC) != 0) return fail(r, status::sandbox_failed, "pipe: " + errno_text());
    if (::pipe2(dn, O_CLOEXEC) != 0) {
      ::close(go[0]);
      ::close(go[1]);
      return fail(r, status::sandbox_failed, "pipe: " + errno_text());
    }
    const std::string parent = std::to_string(::getpid());
    std::vector<std::string> args = {opt_.program, "--executor", parent, opt_.module};
    for (auto const& p : opt_.readable) args.push_back(p);
    std::vector<char*> argv;
    argv.reserve(args.size() + 1);
    for (auto& a : args) argv.push_back(a.data());
    argv.push_back(nullptr);
    // A sanitized build's executor: the runtimes preloaded, their options, and stderr into a pipe
    // that never blocks the writer (a report longer than the pipe is cut, not waited for).
    std::vector<std::string> env_text;
    int report[2] = {-1, -1};
    if (!opt_.sanitizer_runtimes.empty()) {
      if (::pipe2(report, O_CLOEXEC) != 0) {
        for (int fd : {go[0], go[1], dn[0], dn[1]}) ::close(fd);
        return fail(r, status::sandbox_failed, "pipe: " + errno_text());
      }
      ::fcntl(report[1], F_SETPIPE_SZ, 1 << 20);
      ::fcntl(report[1], F_SETFL, O_NONBLOCK);
      ::fcntl(report[0], F_SETFL, O_NONBLOCK);
      env_text = sanitizer_environment(opt_.sanitizer_runtimes);
    }
    std::vector<char*> envp;
    if (!env_text.empty()) {
      for (char** e = environ; *e; ++e)
        if (!is_sanitizer_variable(*e)) envp.push_back(*e);
      for (auto& e : env_text) envp.push_back(e.data());
      envp.push_back(nullptr);
    }
    const pid_t pid = ::fork();
    if (pid == 0) {
      // Only async-signal-safe calls until exec: the worker has more than one thread.
      const int m0 = ::fcntl(fd_, F_DUPFD_CLOEXEC, 16), g0 = ::fcntl(go[0], F_DUPFD_CLOEXEC, 16),
                d1 = ::fcntl(dn[1], F_DUPFD_CLOEXEC, 16);
      if (m0 < 0 || g0 < 0 || d1 < 0 || ::dup2(m0, memory_fd) < 0 || ::dup2(g0, go_fd) < 0 || ::dup2(d1, done_fd) < 0)
        ::_exit(126);
      if (report[1] >= 0 && ::dup2(report[1], 2) < 0) ::_exit(126);
      ::syscall(SYS_close_range, done_fd + 1, ~0U, 0);
      const rlimit none{0, 0};
      ::setrlimit(RLIMIT_FSIZE, &none);
      ::setrlimit(RLIMIT_CORE, &none);
      if (envp.empty())
        ::execv(argv[0], argv.data());
      else
        ::execve(argv[0], argv.data(), envp.data());
      ::_exit(127);
    }
    ::close(go[0]);
    ::close(dn[1]);
    if (report[1] >= 0) ::close(report[1]);
    report_ = report[0];
    go_ = go[1];
    done_ = dn[0];
    if (pid < 0) return fail(r, status::sandbox_failed, "fork: " + errno_text());
    pid_ = pid;
    ::fcntl(done_, F_SETFL, O_NONBLOCK);
    const std::string proc = "/proc/" + std::to_string(pid_);
    stat_fd_ = ::open((proc + "/stat").c_str(), O_RDONLY | O_CLOEXEC);
    sched_fd_ = ::open((proc + "/task/" + std::to_string(pid_) + "/schedstat").c_str(), O_RDONLY | O_CLOEXEC);
    if (stat_fd_ < 0 || ::clock_getcpuclockid(pid_, &cpu_clock_) != 0)
      return fail(r, status::sandbox_failed, "cannot watch the executor through /proc: " + errno_text());
    // The executor says it is confined (or why it could not be) before it loads anything.
    if (!wait_done(std::chrono::steady_clock::now() + std::chrono::seconds(30), r)) return r;
    if (ctl_->result == status::sandbox_failed) return fail(r, status::sandbox_failed, bounded_message());
    return r;
  }

  void limit_memory(std::uint64_t bytes) {
    rlimit old{};
    if (::prlimit(pid_, RLIMIT_AS, nullptr, &old) != 0) return;
    rlimit l = old;
    l.rlim_cur = old.rlim_max == RLIM_INFINITY ? bytes : std::min<rlim_t>(bytes, old.rlim_max);
    if (::prlimit(pid_, RLIMIT_AS, &l, nullptr) == 0) limit_ = l.rlim_cur;
  }

  [[nodiscard]] std::uint64_t vm_bytes() const {
    char buf[256];
    const std::string path = "/proc/" + std::to_string(pid_) + "/statm";
    const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) return 0;
    const ssize_t n = ::read(fd, buf, sizeof buf - 1);
    ::close(fd);
    if (n <= 0) return 0;
    buf[n] = 0;
    return std::strtoull(buf, nullptr, 10) * static_cast<std::uint64_t>(::sysconf(_SC_PAGESIZE));
  }

  [[nodiscard]] double process_cpu() const {
    timespec ts{};
    if (::clock_gettime(cpu_clock_, &ts) != 0) return 0;
    return static_cast<double>(ts.tv_sec) + static_cast<double>(ts.tv_nsec) * 1e-9;
  }
  /// The main thread's CPU time (schedstat, nanoseconds); -1 where the kernel does not keep it.
  [[nodiscard]] double main_thread_cpu() const {
    if (sched_fd_ < 0) return -1;
    char buf[128];
    const ssize_t n = ::pread(sched_fd_, buf, sizeof buf - 1, 0);
    if (n <= 0) return -1;
    buf[n] = 0;
    return static_cast<double>(std::strtoull(buf, nullptr, 10)) * 1e-9;
  }
  struct census {
    char state = '?';
    int threads = 0;
  };
  /// The main thread's state and the number of threads, from /proc/<pid>/stat.
  [[nodiscard]] census threads_and_state() const {
    census c;
    char buf[1024];
    const ssize_t n = ::pread(stat_fd_, buf, sizeof buf - 1, 0);
    if (n <= 0) return c;
    buf[n] = 0;
    char const* p = std::strrchr(buf, ')');  // the command name may hold spaces and parentheses
    if (!p || p[1] != ' ') return c;
    c.state = p[2];
    int field = 2;
    for (; *p && field < 20; ++p)
      if (*p == ' ') ++field;
    c.threads = std::atoi(p);
    return c;
  }

  /// Waits for the executor's "done" until `deadline`: true when it came; otherwise `r` says why
  /// (the executor died, or the deadline passed and it was killed).
  bool wait_done(std::chrono::steady_clock::time_point deadline, report& r) {
    using clock = std::chrono::steady_clock;
    const auto spin_until = clock::now() + std::chrono::microseconds(200);
    for (;;) {
      char b = 0;
      const ssize_t n = ::read(done_, &b, 1);
      if (n == 1) return true;
      if (n == 0) return died(r);
      if (errno != EAGAIN && errno != EINTR) return died(r);
      const auto now = clock::now();
      if (now >= deadline) {
        stop();
        fail(r, status::timed_out,
             "still running after " + seconds_text(opt_.run_timeout) +
                 " (host_options::run_timeout): the worker's watchdog killed it");
        return false;
      }
      if (now < spin_until) continue;  // a short kernel's end is seen without a wake-up's delay
      const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - now).count();
      pollfd p{done_, POLLIN, 0};
      const int k = ::poll(&p, 1, static_cast<int>(std::clamp<long long>(left, 1, 1000)));
      if (k == 0 && opt_.heartbeat) opt_.heartbeat();
    }
  }

  /// The executor's end: why it died, from a sanitizer's report, its exit status and what it left in
  /// the control block.
  bool died(report& r) {
    int st = 0;
    while (::waitpid(pid_, &st, 0) < 0 && errno == EINTR) {
    }
    pid_ = -1;
    const status said = ctl_->result;
    const int nr = ctl_->syscall_nr;
    const std::string sanitizer = sanitizer_report(read_report());
    stop();
    if (!sanitizer.empty())
      fail(r, status::sanitizer_report, sanitizer);
    else if (WIFEXITED(st) && WEXITSTATUS(st) == forbidden_exit && said == status::forbidden_call)
      fail(r, status::forbidden_call,
           "forbidden system call " + host_sandbox::syscall_name(nr) +
               " (the host sandbox allows memory, the candidate's own threads, clocks and exit)");
    else if (WIFSIGNALED(st) && WTERMSIG(st) == SIGSYS)
      fail(r, status::forbidden_call, "a forbidden system call (the sandbox's report of which was blocked)");
    else
      fail(r, status::crashed, detail::describe_wait_status(st) + (WIFEXITED(st) ? " in the middle of a call" : ""));
    return false;
  }

  /// Sends the command in the control block and waits for "done" (and, when `settle`, for the
  /// executor to be idle again). False with `r` filled when it did not end well.
  bool command_round(report& r, bool settle) {
    using clock = std::chrono::steady_clock;
    const bool call = ctl_->cmd == command::call;
    ctl_->call_start_ns = ctl_->call_end_ns = 0;
    // Nothing may have run since the last call ended: between calls the executor sleeps in read().
    if (settle && !idle_since_last_call(r)) return false;
    const double cpu_go = process_cpu(), main_go = main_thread_cpu();
    const auto t_go = clock::now();
    const auto deadline = t_go + std::chrono::microseconds(static_cast<long long>(opt_.run_timeout * 1e6));
    const char b = 'g';
    if (::write(go_, &b, 1) != 1) return died(r);
    if (!wait_done(deadline, r)) return false;
    const auto t_done = clock::now();
    if (!settle) return true;
    // The call is over when every thread the candidate started has ended and the main thread is
    // asleep, waiting for the next "go".
    auto t_threads = t_done;  // when the candidate's threads were all gone
    bool threads_lingered = false;
    for (int round = 0;; ++round) {
      const census c = threads_and_state();
      if (c.threads == 0) return died(r);
      if (c.threads > 1)
        threads_lingered = true;
      else if (threads_lingered && t_threads == t_done)
        t_threads = clock::now();
      if (c.threads <= 1 && (c.state == 'S' || c.state == 'D')) break;
      if (clock::now() >= deadline) {
        stop();
        if (c.threads > 1)
          fail(r, status::stray_threads,
               std::to_string(c.threads - 1) +
                   " thread(s) still running after kb_kernel returned: a candidate must finish (join) its threads "
                   "before returning");
        else
          fail(r, status::timing_mismatch,
               "the executor said the call was done, but its main thread was still running " +
                   seconds_text(opt_.run_timeout) + " later");
        return false;
      }
      if (round > 50) std::this_thread::sleep_for(std::chrono::microseconds(round > 500 ? 1000 : 50));
      if (round % 1000 == 999 && opt_.heartbeat) opt_.heartbeat();
    }
    const auto t_settled = clock::now();
    cpu_settled_ = process_cpu();
    // One "done" per command: a second one was written by the candidate.
    char extra = 0;
    if (::read(done_, &extra, 1) == 1)
      return mismatch(r, "two \"done\" signals for one call: the candidate wrote one itself");
    r.seconds = std::chrono::duration<double>(t_settled - t_go).count();
    // A call that ended in an error (an exception) has no time to check: call() reports the error.
    return !call || ctl_->result != status::ok ||
           time_call(r, t_go, t_done, t_threads, t_settled, threads_lingered, cpu_go, main_go);
  }

  /// The time of a call: the executor's own reading of the clock around kb_kernel (precise: no
  /// wake-up delays in it), believed when it lies within the worker's window, from "go" to seeing
  /// "done" (else a forgery: refused), and never less than what the kernel's CPU accounting says the
  /// call took:
  ///   - threads still running after kb_kernel returned extend the call until they are gone;
  ///   - the main thread's CPU time over the window (work it did before the reported start or after
  ///     the reported end shows up there), and all the threads' CPU time spread over the machine's
  ///     CPUs, each less a small allowance for the executor's own waking and sleeping, are lower
  ///     bounds: a call reported shorter is charged that much.
  /// Charged rather than refused: under load the accounting itself can be off (time the kernel
  /// charges to whatever task was running: interrupts, where they are not accounted apart; a clock
  /// read on one CPU and again on another), and an honest kernel must not fail a timing check. A
  /// candidate that forges its reported times or moves its work outside them gains nothing: its
  /// sample is what its threads used.
  bool time_call(report& r, std::chrono::steady_clock::time_point t_go, std::chrono::steady_clock::time_point t_done,
                 std::chrono::steady_clock::time_point t_threads, std::chrono::steady_clock::time_point t_settled,
                 bool threads_lingered, double cpu_go, double main_go) {
    auto ns = [](std::chrono::steady_clock::time_point t) {
      return static_cast<std::int64_t>(
          std::chrono::duration_cast<std::chrono::nanoseconds>(t.time_since_epoch()).count());
    };
    const std::int64_t start = ctl_->call_start_ns, end = ctl_->call_end_ns;
    if (start < ns(t_go) || end < start || end > ns(t_done))
      return mismatch(r, "the executor reported a call from " + std::to_string(start) + " to " + std::to_string(end) +
                             " ns, outside the window the worker saw (" + std::to_string(ns(t_go)) + " to " +
                             std::to_string(ns(t_done)) + " ns)");
    const double reported = static_cast<double>(end - start) * 1e-9;
    double t = threads_lingered ? std::max(reported, ns_to_s(ns(t_threads) - start)) : reported;
    const double cpu = process_cpu() - cpu_go, main = main_thread_cpu();
    const double main_used = main >= 0 && main_go >= 0 ? main - main_go : 0;
    const double cpus = static_cast<double>(std::max(1U, std::thread::hardware_concurrency()));
    // An honest executor's main thread spends 25-150 us a call outside kb_kernel (waking, saying
    // done, going back to sleep; on a 2-core VM), and long calls show a little more (an honest
    // reference over 128 MB: 1.4 ms beyond a call of some 60 ms): that much is not charged.
    const double allowance = charge_allowance + outside_share * t;
    const double floor = std::max(main_used, cpu / cpus) - allowance;
    if (floor > t) {
      t = floor;
      ++stats_.charged;
    }
    r.seconds = std::min(t, std::chrono::duration<double>(t_settled - t_go).count());
    return true;
  }
  static double ns_to_s(std::int64_t v) { return static_cast<double>(v) * 1e-9; }
  bool mismatch(report& r, std::string why) {
    stop();
    fail(r, status::timing_mismatch, std::move(why));
    return false;
  }

  /// Nothing may have run since the last call ended: between calls the executor waits without
  /// using CPU.
  bool idle_since_last_call(report& r) {
    if (cpu_settled_ < 0) return true;
    const double ran = process_cpu() - cpu_settled_;
    stats_.between.push_back(ran);
    if (ran <= gross_cpu_allowance) return true;
    return mismatch(r, "the candidate used " + ms(ran) +
                           " of CPU time between two calls, after the last one had ended: work done outside the "
                           "timed calls");
  }

  /// Runs command `c`; false with `r` filled when it did not end well, the executor's own answer
  /// (an exception, a load that failed) included. Loading is not a call: no settling, no census.
  bool run(command c, report& r) {
    if (pid_ <= 0) {
      fail(r, status::crashed, "is not running: its executor ended earlier");
      return false;
    }
    ctl_->cmd = c;
    ctl_->result = status::ok;
    ctl_->message[0] = 0;
    if (!command_round(r, c != command::load)) return false;
    const status said = ctl_->result;
    if (said == status::ok) return true;
    // The executor's honest answers to each command; the candidate can write the control block, and
    // anything else it writes there is its doing, not the evaluator's fault.
    const bool honest = said == status::bad_alloc ||
                        (c == command::load && (said == status::load_failed || said == status::missing_entry ||
                                                said == status::sandbox_failed)) ||
                        (c == command::call && said == status::threw);
    if (honest)
      fail(r, said, bounded_message());
    else
      fail(r, status::crashed,
           "wrote over its executor's control block (status " + std::to_string(static_cast<std::uint32_t>(said)) +
               ", an answer the executor never gives to this command)");
    return false;
  }

  static std::string seconds_text(double seconds) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "%g s", seconds);
    return buf;
  }
  static std::string ms(double seconds) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "%.3g ms", seconds * 1e3);
    return buf;
  }

  options opt_;
  pid_t pid_ = -1;
  int fd_ = -1, go_ = -1, done_ = -1, stat_fd_ = -1, sched_fd_ = -1;
  int report_ = -1;  ///< a sanitized build's executor: its stderr, where the runtimes report
  control* ctl_ = nullptr;
  std::byte* data_ = nullptr;
  std::uint64_t data_bytes_ = 0;
  std::uint64_t limit_ = 0;
  clockid_t cpu_clock_{};
  double cpu_settled_ = -1;
  struct {
    std::vector<double> between;  ///< per call: CPU the executor used since the last call ended
    int charged = 0;              ///< calls charged more than their reported time
  } stats_;
};

}  // namespace kernelbrain::host_exec
