// Bodies of kernelbrain/isolation/worker_process.hpp: posix_spawn, watchdog, reaping, executable lookup.
// Included by its header (header-only form) or by kernelbrain/src.hpp (separate compilation): see
// kernelbrain/config.hpp.
#pragma once
#include <poll.h>
#include <spawn.h>
#include <sys/wait.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstddef>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <string_view>
#include <thread>
#include "kernelbrain/core/error.hpp"
#include "kernelbrain/isolation/process_supervision.hpp"
#include "kernelbrain/isolation/worker_process.hpp"

extern char** environ;

namespace kernelbrain::detail {
namespace proc {

using clock = std::chrono::steady_clock;

inline double since(clock::time_point t) { return std::chrono::duration<double>(clock::now() - t).count(); }

/// Closes a descriptor when it goes out of scope.
class fd_owner {
 public:
  explicit fd_owner(int fd = -1) noexcept : fd_(fd) {}
  fd_owner(fd_owner const&) = delete;
  fd_owner& operator=(fd_owner const&) = delete;
  ~fd_owner() { reset(); }
  [[nodiscard]] int get() const noexcept { return fd_; }
  int release() noexcept { return std::exchange(fd_, -1); }
  void reset() noexcept {
    if (fd_ >= 0) ::close(fd_);
    fd_ = -1;
  }

 private:
  int fd_;
};

/// A duplicate numbered >= 10, close-on-exec: dup2 onto 0..4 in the child can then never clobber
/// a descriptor that a later dup2 still has to read.
inline int high_dup(int fd) {
  const int r = ::fcntl(fd, F_DUPFD_CLOEXEC, 10);
  if (r < 0) throw error(std::string("cannot duplicate a descriptor for a child process: ") + std::strerror(errno));
  return r;
}

/// The "NAME=" of a "NAME=value" environment entry for a child; throws kernelbrain::error for an
/// entry that has no name (posix_spawn would pass it on, and getenv would never find it).
inline std::string_view env_name(std::string const& entry) {
  const auto eq = entry.find('=');
  if (eq == std::string::npos || eq == 0 || entry.find('\0') != std::string::npos) {
    std::string shown;  // a NUL would end the message
    for (char c : entry) shown += c == '\0' ? std::string("\\0") : std::string(1, c);
    throw error("environment entry for a child process '" + shown + "' is not NAME=value");
  }
  return std::string_view(entry).substr(0, eq + 1);
}

/// posix_spawn with stdin from /dev/null, descriptors mapped (source -> target), every other
/// descriptor closed, default signal dispositions and mask, a new process group, and this process's
/// pid in the environment as KERNELBRAIN_PARENT_PID (detail::supervision: a KernelBrain child
/// compares it with getppid() to tell that its parent died before it could arrange to die with it).
/// `extra`: "NAME=value" entries that replace inherited variables of the same name (a later entry
/// replaces an earlier one; KERNELBRAIN_PARENT_PID is always this process's). Returns the pid, or
/// -errno when the program could not be started; throws for a malformed `extra` entry.
inline int spawn(std::vector<std::string> const& argv, std::vector<std::pair<int, int>> const& fds, bool search_path,
                 std::vector<std::string> const& extra = {}) {
  std::string parent = std::string(supervision::parent_pid_variable) + "=" + std::to_string(::getpid());
  const std::string_view parent_name = std::string_view(parent).substr(0, parent.find('=') + 1);
  std::vector<std::string_view> names;  // every "NAME=" the child gets from here, not from environ
  names.reserve(extra.size() + 1);
  for (auto const& x : extra) names.push_back(env_name(x));
  names.push_back(parent_name);
  auto named_here = [&names](std::string_view entry, std::size_t from) {
    return std::any_of(names.begin() + static_cast<std::ptrdiff_t>(from), names.end(),
                       [entry](std::string_view n) { return entry.starts_with(n); });
  };
  std::vector<char*> env;
  for (char** e = environ; e && *e; ++e)
    if (!named_here(*e, 0)) env.push_back(*e);
  for (std::size_t i = 0; i < extra.size(); ++i)
    if (!named_here(names[i], i + 1)) env.push_back(const_cast<char*>(extra[i].c_str()));
  env.push_back(parent.data());
  env.push_back(nullptr);
  posix_spawn_file_actions_t fa;
  posix_spawnattr_t at;
  ::posix_spawn_file_actions_init(&fa);
  ::posix_spawnattr_init(&at);
  ::posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
  int first_free = 3;
  for (auto [src, dst] : fds) {
    ::posix_spawn_file_actions_adddup2(&fa, src, dst);
    first_free = std::max(first_free, dst + 1);
  }
#if defined(__GLIBC__) && (__GLIBC__ > 2 || (__GLIBC__ == 2 && __GLIBC_MINOR__ >= 34))
  // Descriptors other threads opened without O_CLOEXEC must not leak into the child.
  ::posix_spawn_file_actions_addclosefrom_np(&fa, first_free);
#endif
  sigset_t none, defaults;
  sigemptyset(&none);
  sigemptyset(&defaults);
  for (int s : {SIGPIPE, SIGINT, SIGQUIT, SIGTERM, SIGHUP, SIGCHLD, SIGXCPU, SIGXFSZ, SIGALRM, SIGUSR1, SIGUSR2})
    sigaddset(&defaults, s);
  ::posix_spawnattr_setsigmask(&at, &none);
  ::posix_spawnattr_setsigdefault(&at, &defaults);
  ::posix_spawnattr_setpgroup(&at, 0);
  ::posix_spawnattr_setflags(&at, POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF | POSIX_SPAWN_SETPGROUP);
  std::vector<char*> args;
  args.reserve(argv.size() + 1);
  for (auto const& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  pid_t pid = -1;
  const int rc = search_path ? ::posix_spawnp(&pid, args[0], &fa, &at, args.data(), env.data())
                             : ::posix_spawn(&pid, args[0], &fa, &at, args.data(), env.data());
  ::posix_spawn_file_actions_destroy(&fa);
  ::posix_spawnattr_destroy(&at);
  return rc == 0 ? pid : -rc;
}

/// waitpid for one child, retried on EINTR; a child reaped elsewhere (SIGCHLD ignored) reads as status 0.
inline int wait_for(int pid, int flags = 0) {
  int st = 0;
  for (;;) {
    const int r = ::waitpid(pid, &st, flags);
    if (r == pid) return st;
    if (r == 0) return -1;  // WNOHANG, still running
    if (r < 0 && errno == EINTR) continue;
    return 0;
  }
}

/// True when `pid`'s thread-group leader has exited (state Z or X in /proc/PID/stat) although other
/// threads of it may still be on their way out.
inline bool exiting(int pid) {
  char path[64];
  std::snprintf(path, sizeof path, "/proc/%d/stat", pid);
  const int fd = ::open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) return false;
  char buf[512];
  const ssize_t n = ::read(fd, buf, sizeof buf - 1);
  ::close(fd);
  if (n <= 0) return false;
  buf[n] = '\0';
  char const* close = std::strrchr(buf, ')');  // the command name may itself hold ')' or spaces
  return close && close[1] == ' ' && (close[2] == 'Z' || close[2] == 'X');
}

inline char const* signal_name(int s) {
  switch (s) {
    case SIGSEGV:
      return "SIGSEGV, segmentation fault";
    case SIGBUS:
      return "SIGBUS, bus error";
    case SIGFPE:
      return "SIGFPE, arithmetic exception";
    case SIGILL:
      return "SIGILL, illegal instruction";
    case SIGABRT:
      return "SIGABRT, abort";
    case SIGKILL:
      return "SIGKILL, killed";
    case SIGTERM:
      return "SIGTERM, terminated";
    case SIGTRAP:
      return "SIGTRAP, trap";
    case SIGSYS:
      return "SIGSYS, bad system call";
    case SIGXCPU:
      return "SIGXCPU, CPU time limit exceeded";
    case SIGXFSZ:
      return "SIGXFSZ, file size limit exceeded";
    case SIGPIPE:
      return "SIGPIPE, broken pipe";
    case SIGINT:
      return "SIGINT, interrupted";
    case SIGHUP:
      return "SIGHUP, hangup";
    default:
      return "unknown signal";
  }
}

inline std::string seconds_text(std::chrono::milliseconds ms) {
  char b[32];
  std::snprintf(b, sizeof b, "%.3g", static_cast<double>(ms.count()) / 1000.0);
  return b;
}

}  // namespace proc

std::string describe_wait_status(int status) {
  if (WIFEXITED(status)) return "exited with status " + std::to_string(WEXITSTATUS(status));
  if (WIFSIGNALED(status))
    return "was killed by signal " + std::to_string(WTERMSIG(status)) + " (" +
           detail::proc::signal_name(WTERMSIG(status)) + ")";
  return "ended with wait status " + std::to_string(status);
}

std::vector<std::string> limited_command(std::string const& limiter, process_limits const& limits,
                                         std::vector<std::string> const& argv) {
  std::vector<std::string> out{limiter,
                               "--exec",
                               "--as=" + std::to_string(limits.address_space_bytes),
                               "--cpu=" + std::to_string(limits.cpu_seconds),
                               "--fsize=" + std::to_string(limits.file_size_bytes),
                               "--"};
  out.insert(out.end(), argv.begin(), argv.end());
  return out;
}

bool captured_run::succeeded() const noexcept {
  return started && !timed_out && WIFEXITED(wait_status) && WEXITSTATUS(wait_status) == 0;
}

captured_run run_captured(std::vector<std::string> const& argv, std::chrono::milliseconds wall_limit,
                          std::size_t output_limit, std::vector<std::string> const& env) {
  using namespace detail::proc;
  captured_run r;
  if (argv.empty()) throw error("run_captured: empty command line");
  for (auto const& e : env) (void)env_name(e);  // before anything is started
  int p[2];
  if (::pipe2(p, O_CLOEXEC) != 0) throw error(std::string("cannot create a pipe: ") + std::strerror(errno));
  fd_owner rd(p[0]);
  fd_owner wr(high_dup(p[1]));
  ::close(p[1]);
  const auto start = clock::now();
  const int pid = spawn(argv, {{wr.get(), 1}, {wr.get(), 2}}, true, env);
  wr.reset();
  if (pid < 0) {
    r.output = "cannot start '" + argv[0] + "': " + std::strerror(-pid);
    return r;
  }
  r.started = true;
  const auto deadline = start + wall_limit;
  char buf[4096];
  bool open = true;
  while (open) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - clock::now()).count();
    if (left <= 0) {
      r.timed_out = true;
      break;
    }
    pollfd pf{rd.get(), POLLIN, 0};
    const int n = ::poll(&pf, 1, static_cast<int>(std::min<long long>(left, 1000)));
    if (n < 0 && errno != EINTR) break;
    if (n <= 0) continue;
    const ssize_t got = ::read(rd.get(), buf, sizeof buf);
    if (got < 0 && (errno == EINTR || errno == EAGAIN)) continue;
    if (got <= 0) {
      open = false;
      break;
    }
    if (r.output.size() < output_limit)
      r.output.append(buf, std::min(static_cast<std::size_t>(got), output_limit - r.output.size()));
  }
  // The output closed; the process may still linger (or have handed the pipe on): wait, within the
  // limit. WNOWAIT leaves it a zombie, so its pid (the group id) cannot be reused before the group
  // is killed below.
  bool reaped_elsewhere = false;  // SIGCHLD ignored: the pid may already belong to someone else
  while (!r.timed_out) {
    siginfo_t info{};
    const int w = ::waitid(P_PID, static_cast<id_t>(pid), &info, WEXITED | WNOHANG | WNOWAIT);
    if (w != 0 && errno == EINTR) continue;
    if (w != 0) {
      reaped_elsewhere = errno == ECHILD;
      break;
    }
    if (info.si_pid == pid) break;
    if (clock::now() >= deadline) {
      r.timed_out = true;
      break;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  }
  // Ended or timed out: whatever is left of its process group (a background process the tool
  // started, or the whole tool on a timeout) goes too. A one-shot tool leaves nothing behind.
  r.seconds = since(start);
  if (!reaped_elsewhere) {
    ::kill(-pid, SIGKILL);
    ::kill(pid, SIGKILL);  // harmless on a zombie
  }
  r.wait_status = wait_for(pid);  // 0 when reaped elsewhere
  return r;
}

// ---- worker_process ---------------------------------------------------------------------------

worker_process::worker_process(std::string executable, std::string role, std::vector<std::string> extra_args,
                               std::vector<std::string> env)
    : exe_(std::move(executable)),
      role_(std::move(role)),
      extra_(std::move(extra_args)),
      env_(std::move(env)),
      arena_(shared_arena::create(("kernelbrain-" + role_).c_str())) {
  for (auto const& e : env_) (void)detail::proc::env_name(e);  // now, not at the first request
}

worker_process::~worker_process() { stop(); }

void worker_process::stop() noexcept {
  if (pid_ > 0) (void)reap(true);
  if (sock_ >= 0) ::close(sock_);
  if (err_ >= 0) ::close(err_);
  sock_ = err_ = pid_ = -1;
  inbuf_.clear();
}

int worker_process::reap(bool kill_first) noexcept {
  using namespace detail::proc;
  if (pid_ <= 0) return 0;
  if (!kill_first) {
    // The channel closed: the worker is on its way out. Give it a moment to finish dying. WNOWAIT
    // leaves it a zombie, so its pid (the group id) cannot be reused before the group is killed.
    const auto until = clock::now() + std::chrono::seconds(2);
    for (;;) {
      siginfo_t info{};
      const int r = ::waitid(P_PID, static_cast<id_t>(pid_), &info, WEXITED | WNOHANG | WNOWAIT);
      if (r != 0 && errno != EINTR) break;
      if (r == 0 && info.si_pid == pid_) break;
      if (clock::now() >= until) break;
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
  }
  ::kill(-pid_, SIGKILL);  // the whole group: anything the candidate started goes too
  ::kill(pid_, SIGKILL);   // harmless on a zombie
  const int st = wait_for(pid_);
  pid_ = -1;
  return st;
}

void worker_process::drain_stderr() noexcept {
  if (err_ < 0) return;
  char buf[4096];
  for (;;) {
    const ssize_t n = ::read(err_, buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return;  // EAGAIN: nothing more for now
    if (n == 0) {
      ::close(err_);
      err_ = -1;
      return;
    }
    errtail_.append(buf, static_cast<std::size_t>(n));
    if (errtail_.size() > 4096) errtail_.erase(0, errtail_.size() - 2048);
  }
}

std::string worker_process::stderr_tail() const {
  std::string t = errtail_;
  while (!t.empty() && (t.back() == '\n' || t.back() == ' ')) t.pop_back();
  if (t.size() > 1024) t = "..." + t.substr(t.size() - 1024);
  return t.empty() ? std::string{} : "; its last output: " + t;
}

void worker_process::ensure_started() {
  using namespace detail::proc;
  if (pid_ > 0) {
    // A worker that died while idle (killed from outside) must not cost the next request. Workers
    // have a second thread (the parent watch), and a killed thread-group leader is a zombie that
    // waitid does not report until every thread has exited: its state in /proc says it is going.
    siginfo_t info{};
    const bool reapable =
        ::waitid(P_PID, static_cast<id_t>(pid_), &info, WEXITED | WNOHANG | WNOWAIT) == 0 && info.si_pid == pid_;
    if (!reapable && !exiting(pid_)) return;
    stop();
  }
  int sv[2], ep[2];
  if (::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) != 0)
    throw error(std::string("cannot create a socket pair for a worker: ") + std::strerror(errno));
  fd_owner mine(sv[0]);
  fd_owner theirs(high_dup(sv[1]));
  ::close(sv[1]);
  if (::pipe2(ep, O_CLOEXEC) != 0)
    throw error(std::string("cannot create a pipe for a worker: ") + std::strerror(errno));
  fd_owner err_read(ep[0]);
  fd_owner err_write(high_dup(ep[1]));
  ::close(ep[1]);
  fd_owner arena(high_dup(arena_.fd()));
  std::vector<std::string> argv{exe_, "--serve", role_};
  argv.insert(argv.end(), extra_.begin(), extra_.end());
  const int pid = spawn(
      argv,
      {{theirs.get(), wire::channel_fd}, {arena.get(), wire::arena_fd}, {err_write.get(), 1}, {err_write.get(), 2}},
      false, env_);
  if (pid < 0) throw error("cannot start worker executable '" + exe_ + "': " + std::strerror(-pid));
  pid_ = pid;
  sock_ = mine.release();
  err_ = err_read.release();
  ::fcntl(sock_, F_SETFL, ::fcntl(sock_, F_GETFL) | O_NONBLOCK);
  ::fcntl(err_, F_SETFL, ::fcntl(err_, F_GETFL) | O_NONBLOCK);
  ++spawns_;
  inbuf_.clear();
  errtail_.clear();
  // The handshake: the right program, speaking this protocol version, for this role.
  auto r = call(0, {}, std::chrono::seconds(20));
  if (r.st != worker_reply::status::reply || r.msg.type != wire::hello) {
    stop();
    throw error("worker executable '" + exe_ + "' did not start properly: " +
                (r.st == worker_reply::status::reply
                     ? "it sent message type " + std::to_string(r.msg.type) + " instead of hello"
                     : r.why));
  }
  std::uint32_t ver = 0;
  std::string role;
  try {
    wire_reader rd(r.msg.body);
    ver = rd.get<std::uint32_t>();
    role = rd.str();
  } catch (wire_error const&) {
  }
  if (ver != wire::version || role != role_) {
    stop();
    throw error("worker executable '" + exe_ + "' speaks protocol version " + std::to_string(ver) + " as '" + role +
                "', but this program needs version " + std::to_string(wire::version) + " as '" + role_ +
                "': point it at the worker built with this version of KernelBrain");
  }
}

worker_reply worker_process::call(std::uint32_t type, std::string_view body, std::chrono::milliseconds silence_limit,
                                  std::function<void(int)> const& after_send) {
  using namespace detail::proc;
  // type 0 is internal: wait for the hello without sending anything.
  if (type != 0) ensure_started();
  worker_reply out;
  const auto start = clock::now();
  auto last = start;
  auto died = [&] {
    drain_stderr();
    const int st = reap(false);
    drain_stderr();
    out.st = worker_reply::status::died;
    out.why = "the worker " + describe_wait_status(st) + stderr_tail();
    out.seconds = since(start);
    stop();
    return out;
  };
  auto silent_too_long = [&] {
    drain_stderr();
    stop();
    out.st = worker_reply::status::timeout;
    out.why = "no reply within " + seconds_text(silence_limit) + " s: the watchdog killed the worker" + stderr_tail();
    out.seconds = since(start);
    return out;
  };
  if (type != 0) {
    std::string f;
    try {
      f = detail::frame(type, body);
    } catch (wire_error const& e) {
      throw error(std::string("worker request: ") + e.what());
    }
    std::size_t off = 0;
    while (off < f.size()) {
      const ssize_t n = ::send(sock_, f.data() + off, f.size() - off, MSG_NOSIGNAL);
      if (n > 0) {
        off += static_cast<std::size_t>(n);
        continue;
      }
      if (n < 0 && errno == EINTR) continue;
      if (n < 0 && errno == EAGAIN) {
        if (clock::now() - last >= silence_limit) return silent_too_long();
        pollfd pf{sock_, POLLOUT, 0};
        (void)::poll(&pf, 1, 100);
        continue;
      }
      return died();
    }
    if (after_send) after_send(pid_);
  }
  char buf[65536];
  bool ended = false;
  for (;;) {
    wire_message m;
    try {
      while (detail::unframe(inbuf_, m)) {
        if (m.type == wire::progress) {
          last = clock::now();
          continue;
        }
        out.msg = std::move(m);
        out.seconds = since(start);
        return out;
      }
    } catch (wire_error const& e) {
      // Only code running inside the worker can garble its channel: a crash of that code.
      drain_stderr();
      stop();
      out.st = worker_reply::status::died;
      out.why = std::string("the worker broke the protocol (") + e.what() + ") and was killed" + stderr_tail();
      out.seconds = since(start);
      return out;
    }
    if (ended) return died();  // end of stream and no complete reply: the worker is gone
    const auto left =
        std::chrono::duration_cast<std::chrono::milliseconds>(silence_limit - (clock::now() - last)).count();
    if (left <= 0) return silent_too_long();
    pollfd pf[2] = {{sock_, POLLIN, 0}, {err_, POLLIN, 0}};
    const int n = ::poll(pf, 2, static_cast<int>(std::min<long long>(left, 1000)) + 1);
    if (n < 0 && errno != EINTR) return died();
    if (n <= 0) continue;
    if (pf[1].revents) drain_stderr();
    if (pf[0].revents) {
      for (;;) {
        const ssize_t got = ::recv(sock_, buf, sizeof buf, 0);
        if (got > 0) {
          inbuf_.append(buf, static_cast<std::size_t>(got));
          continue;
        }
        if (got < 0 && errno == EINTR) continue;
        if (got < 0 && errno == EAGAIN) break;
        ended = true;  // end of stream or a reset
        break;
      }
    }
  }
}

// ---- finding executables ---------------------------------------------------------------------------

bool is_executable_file(std::string const& path) {
  std::error_code ec;
  return !path.empty() && std::filesystem::is_regular_file(path, ec) && ::access(path.c_str(), X_OK) == 0;
}

std::string find_named_executable(named_executable const& n, std::string const& option_value) {
  auto refuse = [&n](std::string const& what, std::string_view hint) {
    return error(std::string(n.backend) + ": " + what + " is not an executable file" +
                 (hint.empty() ? "" : ": " + std::string(hint)));
  };
  if (!option_value.empty()) {
    if (is_executable_file(option_value)) return option_value;
    throw refuse(std::string(n.option) + " '" + option_value + "'", n.option_hint);
  }
  const std::string var(n.env_var);
  if (char const* env = std::getenv(var.c_str()); env && *env) {
    if (is_executable_file(env)) return env;
    throw refuse(var + "='" + env + "'", n.env_hint);
  }
  return {};
}

std::string find_worker(worker_location const& where, std::string const& explicit_path) {
  if (auto named = find_named_executable(where.named, explicit_path); !named.empty()) return named;
  std::string looked;
  auto consider = [&looked](std::string const& path) {
    if (is_executable_file(path)) return true;
    looked += (looked.empty() ? "" : ", ") + path;
    return false;
  };
  std::error_code ec;
  const auto self = std::filesystem::read_symlink("/proc/self/exe", ec);
  if (!ec)
    if (auto beside = (self.parent_path() / where.executable).string(); consider(beside)) return beside;
  if (where.build_path && consider(where.build_path)) return where.build_path;
  throw error(std::string(where.named.backend) + ": cannot find the worker executable " +
              std::string(where.executable) + " (looked at: " + (looked.empty() ? std::string("nothing") : looked) +
              "): " + std::string(where.not_found_hint));
}

}  // namespace kernelbrain::detail
