// Child-side process supervision for KernelBrain's worker executables (kernelbrain-host-worker,
// kernelbrain-cuda-worker): nothing a search starts may outlive the search process, even when that
// process is killed with SIGKILL. Header-only, Linux only, no KernelBrain dependencies, so any
// worker executable can include it.
//
// The parent side (detail::proc::spawn in impl/worker_process.ipp) starts every child in a new
// process group and puts its own pid in the child's environment as KERNELBRAIN_PARENT_PID. The
// child then uses one of three entry points, by what kind of child it is:
//
//   * A serving worker (`--serve ROLE`, long-lived, started by whichever search thread called the
//     evaluator first): serve_requests() calls kill_group_when_peer_closes(wire::channel_fd). When
//     the parent's end of the channel closes (the parent died, or let go of the worker) a watch
//     thread kills the worker's whole process group. Not PR_SET_PDEATHSIG: that fires when the
//     spawning *thread* exits, which can be the evaluation thread of one finished search while the
//     evaluator (and its worker) serves the next.
//
//   * A one-shot child that starts no processes of its own (the CUDA worker's `--compile`): call
//     die_with_parent() first thing and exit at once when it returns false. The spawning thread
//     waits for a one-shot child synchronously (run_captured), so PR_SET_PDEATHSIG's thread
//     semantics are exactly right there.
//
//   * A one-shot child that runs another program, which may start processes of its own (a compiler:
//     g++ starts cc1plus and as; a sanitizer and its target): the `--exec` mode, exec_main() (or
//     supervise() with a ready argv). It applies resource limits, forks the program into its own
//     process group, waits, and exits the way the program did (re-raising the signal that killed it,
//     so the parent's describe_wait_status still reads "killed by signal 24 (SIGXCPU ...)"). When
//     the parent dies it kills the whole process group with SIGKILL.
//
// Residual risk: a descendant that moves itself into another process group or session (setsid,
// setpgid) escapes the group kill. Compilers and compute-sanitizer do not do that.
#pragma once
#if !defined(__linux__)
#error "kernelbrain/isolation/process_supervision.hpp: process supervision needs Linux (prctl)"
#endif
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <csignal>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string_view>

namespace kernelbrain::detail::supervision {

/// The environment variable in which the spawner passes its pid to the child.
inline constexpr char parent_pid_variable[] = "KERNELBRAIN_PARENT_PID";

/// The pid the spawner recorded in KERNELBRAIN_PARENT_PID; 0 when it is absent or malformed.
[[nodiscard]] inline pid_t expected_parent() noexcept {
  char const* v = std::getenv(parent_pid_variable);
  if (!v || !*v) return 0;
  char* end = nullptr;
  errno = 0;
  const long pid = std::strtol(v, &end, 10);
  if (errno != 0 || *end != '\0' || pid <= 0 || pid > 0x7fffffffL) return 0;
  return static_cast<pid_t>(pid);
}

/// True when the process that started this one has already died (this process was re-parented, to
/// init or to a subreaper such as a container's init or systemd --user). Compares getppid() with
/// KERNELBRAIN_PARENT_PID; without that variable (a child started by something else) it can only
/// test for init. Call it after PR_SET_PDEATHSIG is set, so that no death goes unnoticed.
[[nodiscard]] inline bool parent_is_gone() noexcept {
  const pid_t want = expected_parent();
  const pid_t now = ::getppid();
  return want > 0 ? now != want : now == 1;
}

/// For a one-shot child that starts no processes of its own (the CUDA worker's `--compile`): call
/// this first thing in that mode. Sets PR_SET_PDEATHSIG to SIGKILL, then checks the parent; returns
/// false when the parent is already gone: exit at once (nobody will read the result).
[[nodiscard]] inline bool die_with_parent() noexcept {
  ::prctl(PR_SET_PDEATHSIG, SIGKILL);
  return !parent_is_gone();
}

namespace state {
inline volatile std::sig_atomic_t child = 0;  ///< the supervised program's pid, once forked
}  // namespace state

/// Kills this process's process group (when this process leads it: detail::proc::spawn makes every
/// child a group leader; a process started by hand may share its shell's group, which is left
/// alone), the supervised program, and this process. Async-signal-safe; does not return.
[[noreturn]] inline void kill_group_and_die() noexcept {
  const pid_t c = static_cast<pid_t>(state::child);
  if (c > 0) ::kill(c, SIGKILL);
  if (::getpgrp() == ::getpid()) ::kill(0, SIGKILL);
  ::kill(::getpid(), SIGKILL);
  ::_exit(137);
}

namespace impl {
inline void on_stop_signal(int) noexcept { kill_group_and_die(); }

inline void* watch_peer(void* arg) noexcept {
  const int fd = static_cast<int>(reinterpret_cast<std::intptr_t>(arg));
  for (;;) {
    // POLLRDHUP only (POLLHUP, POLLERR and POLLNVAL are always reported): never woken by data, and
    // never reads any.
    pollfd p{fd, POLLRDHUP, 0};
    const int n = ::poll(&p, 1, -1);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      ::usleep(100000);  // ENOMEM and the like: try again shortly
      continue;
    }
    if (n > 0 && (p.revents & (POLLRDHUP | POLLHUP | POLLERR | POLLNVAL))) kill_group_and_die();
  }
  return nullptr;
}
}  // namespace impl

/// For a serving worker: starts a small thread that kills this process's whole process group
/// (SIGKILL; the candidate and anything it started go too) as soon as the peer of the stream socket
/// `fd` is closed, i.e. the parent died or let go of the worker. The thread only polls for hang-up,
/// so it never consumes data. Returns 0, or the pthread_create error.
/// The thread counts as one of the process's threads (a thread census must be taken after it).
[[nodiscard]] inline int kill_group_when_peer_closes(int fd) noexcept {
  pthread_attr_t at;
  if (const int rc = ::pthread_attr_init(&at); rc != 0) return rc;
  ::pthread_attr_setstacksize(&at, std::size_t{64} << 10);  // it needs next to nothing
  ::pthread_attr_setdetachstate(&at, PTHREAD_CREATE_DETACHED);
  // The thread must never run a handler meant for the main thread: block every blockable signal.
  sigset_t all, old;
  sigfillset(&all);
  ::pthread_sigmask(SIG_SETMASK, &all, &old);
  pthread_t t{};
  // NOLINTNEXTLINE(performance-no-int-to-ptr): the fd travels as the thread's void* argument
  const int rc = ::pthread_create(&t, &at, &impl::watch_peer, reinterpret_cast<void*>(static_cast<std::intptr_t>(fd)));
  ::pthread_sigmask(SIG_SETMASK, &old, nullptr);
  ::pthread_attr_destroy(&at);
  return rc;
}

/// Resource limits for the supervised program (0: leave that limit alone).
struct exec_limits {
  std::uint64_t address_space_bytes = 0;  ///< RLIMIT_AS
  std::uint64_t cpu_seconds = 0;          ///< RLIMIT_CPU: SIGXCPU, then SIGKILL a second later
  std::uint64_t file_size_bytes = 0;      ///< RLIMIT_FSIZE
};

/// Runs `program` (argv-style, null-terminated; looked up on PATH) under `limits` as a supervised
/// child, and returns only when it exited normally, with its exit status; when it was killed by a
/// signal, this process kills itself with the same signal (so its own parent sees the same wait
/// status). When this process's parent dies (PR_SET_PDEATHSIG, delivered as SIGTERM) or it is sent
/// SIGTERM or SIGHUP, it kills its whole process group with SIGKILL: the program and everything the
/// program started. Core dumps are off. `who` names this executable in messages. Statuses of its own:
/// 127 the program cannot be run (message "WHO: cannot run 'PROG': REASON"), 126 fork failed,
/// 3 the parent was already gone.
/// Call it from a single-threaded process (it forks); run it as a process-group leader (spawn does).
[[nodiscard]] inline int supervise(char* const* program, exec_limits const& limits, char const* who) {
  state::child = 0;
  const rlimit no_core{0, 0};
  ::setrlimit(RLIMIT_CORE, &no_core);

  struct sigaction sa {};
  sa.sa_handler = &impl::on_stop_signal;
  sigfillset(&sa.sa_mask);
  ::sigaction(SIGTERM, &sa, nullptr);
  ::sigaction(SIGHUP, &sa, nullptr);
  // Blocked until the child's pid is recorded, so the handler always knows whom to kill.
  sigset_t stop, old;
  sigemptyset(&stop);
  sigaddset(&stop, SIGTERM);
  sigaddset(&stop, SIGHUP);
  ::sigprocmask(SIG_BLOCK, &stop, &old);
  ::prctl(PR_SET_PDEATHSIG, SIGTERM);  // a catchable signal: the handler takes the group down
  if (parent_is_gone()) return 3;      // it died before PR_SET_PDEATHSIG was in place

  const pid_t self = ::getpid();
  const pid_t pid = ::fork();
  if (pid < 0) {
    std::fprintf(stderr, "%s: cannot start '%s': fork failed: %s\n", who, program[0], std::strerror(errno));
    return 126;
  }
  if (pid == 0) {
    struct sigaction dfl {};
    dfl.sa_handler = SIG_DFL;
    ::sigaction(SIGTERM, &dfl, nullptr);
    ::sigaction(SIGHUP, &dfl, nullptr);
    ::sigprocmask(SIG_SETMASK, &old, nullptr);
    ::prctl(PR_SET_PDEATHSIG, SIGKILL);  // should the supervisor alone be killed
    if (::getppid() != self) ::_exit(3);
    if (limits.address_space_bytes) {
      const rlimit l{limits.address_space_bytes, limits.address_space_bytes};
      ::setrlimit(RLIMIT_AS, &l);
    }
    if (limits.cpu_seconds) {
      const rlimit l{limits.cpu_seconds, limits.cpu_seconds + 1};
      ::setrlimit(RLIMIT_CPU, &l);
    }
    if (limits.file_size_bytes) {
      const rlimit l{limits.file_size_bytes, limits.file_size_bytes};
      ::setrlimit(RLIMIT_FSIZE, &l);
    }
    // Its parent is this supervisor, not the search process; a program that starts KernelBrain
    // children itself (a sanitizer's target) must not check against a pid meant for us.
    ::unsetenv(parent_pid_variable);
    ::execvp(program[0], program);
    std::fprintf(stderr, "%s: cannot run '%s': %s\n", who, program[0], std::strerror(errno));
    ::_exit(127);
  }
  state::child = pid;
  ::sigprocmask(SIG_SETMASK, &old, nullptr);

  int st = 0;
  for (;;) {
    const pid_t r = ::waitpid(pid, &st, 0);
    if (r == pid) break;
    if (r < 0 && errno == EINTR) continue;
    std::fprintf(stderr, "%s: lost track of '%s': %s\n", who, program[0], std::strerror(errno));
    kill_group_and_die();
  }
  state::child = 0;
  if (WIFEXITED(st)) return WEXITSTATUS(st);
  if (WIFSIGNALED(st)) {
    const int sig = WTERMSIG(st);
    struct sigaction dfl {};
    dfl.sa_handler = SIG_DFL;
    ::sigaction(sig, &dfl, nullptr);
    sigset_t one;
    sigemptyset(&one);
    sigaddset(&one, sig);
    ::sigprocmask(SIG_UNBLOCK, &one, nullptr);
    ::kill(self, sig);  // delivered before kill returns (a single thread, unblocked)
    return 128 + sig;   // a signal whose default action does not terminate: say which in the status
  }
  return 125;
}

/// The whole `--exec` mode of a worker executable, for its main():
///   WHO --exec [--as=BYTES] [--cpu=SECONDS] [--fsize=BYTES] -- PROGRAM ARGS...
/// `first` indexes the first argument after "--exec". Parses the options (unknown option or no
/// program: a message, status 2), then supervise(). Example:
///   if (argc >= 2 && std::string_view(argv[1]) == "--exec")
///     return kernelbrain::detail::supervision::exec_main(argc, argv, 2, "kernelbrain-cuda-worker");
[[nodiscard]] inline int exec_main(int argc, char** argv, int first, char const* who) {
  exec_limits lim;
  int i = first;
  for (; i < argc; ++i) {
    const std::string_view a = argv[i];
    if (a == "--") {
      ++i;
      break;
    }
    auto value = [&](std::string_view key, std::uint64_t& out) {
      if (a.substr(0, key.size()) != key) return false;
      out = std::strtoull(argv[i] + key.size(), nullptr, 10);
      return true;
    };
    if (!value("--as=", lim.address_space_bytes) && !value("--cpu=", lim.cpu_seconds) &&
        !value("--fsize=", lim.file_size_bytes)) {
      std::fprintf(stderr, "%s --exec: unknown option '%s'\n", who, argv[i]);
      return 2;
    }
  }
  if (i >= argc) {
    std::fprintf(stderr, "%s --exec: no program after '--'\n", who);
    return 2;
  }
  return supervise(argv + i, lim, who);
}

}  // namespace kernelbrain::detail::supervision
