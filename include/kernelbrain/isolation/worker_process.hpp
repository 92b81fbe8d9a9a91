// The parent side of process isolation, shared by every process-isolated backend: running a tool
// (a compiler) under limits and a wall-clock deadline, and a worker process that answers requests
// under a watchdog, and finding the executables to run. Nothing here knows what a request means.
// Bodies: impl/worker_process.ipp.
#pragma once
#include "kernelbrain/config.hpp"
#if !defined(__linux__)
#error "kernelbrain/isolation/worker_process.hpp: process-isolated backends need Linux"
#endif
#include <chrono>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <functional>
#include <string>
#include <string_view>
#include <vector>
#include "kernelbrain/isolation/worker_protocol.hpp"

namespace kernelbrain::detail {

/// A waitpid status in words: "exited with status 1", "was killed by signal 11 (SIGSEGV, segmentation fault)".
[[nodiscard]] KERNELBRAIN_DECL std::string describe_wait_status(int status);

/// Seconds (an option's time limit) as a deadline or watchdog limit, rounded up to whole milliseconds.
[[nodiscard]] inline std::chrono::milliseconds ceil_millis(double seconds) {
  return std::chrono::milliseconds(static_cast<std::int64_t>(std::ceil(seconds * 1000.0)));
}

/// Resource limits applied to a child before it runs (0: leave that limit alone).
struct process_limits {
  std::uint64_t address_space_bytes = 0;
  std::uint64_t cpu_seconds = 0;
  std::uint64_t file_size_bytes = 0;
};

/// `argv` wrapped so that `limiter` (a worker executable in its --exec mode,
/// detail::supervision::exec_main) runs argv[0] under `limits` with core dumps off, as a supervised
/// child in the limiter's process group: the limiter exits the way the program did (the same exit
/// status, or killed by the same signal), and when the search process dies it kills the program and
/// everything the program started (g++'s cc1plus and as, a sanitizer's target). posix_spawn cannot
/// set rlimits, and fork is unsafe in a multithreaded parent, so a small single-threaded supervisor
/// is the clean way.
[[nodiscard]] KERNELBRAIN_DECL std::vector<std::string> limited_command(std::string const& limiter,
                                                                        process_limits const& limits,
                                                                        std::vector<std::string> const& argv);

/// How a captured run ended.
struct captured_run {
  bool started = false;    ///< false: posix_spawn failed (see `output`)
  bool timed_out = false;  ///< the wall-clock limit expired and the process group was killed
  int wait_status = 0;
  std::string output;  ///< stdout and stderr interleaved, cut at the output limit
  double seconds = 0;
  [[nodiscard]] KERNELBRAIN_DECL bool succeeded() const noexcept;  ///< started, not timed out, exited with status 0
};

/// Runs argv (looked up on PATH) in a new process group with stdin from /dev/null and stdout+stderr
/// captured; kills the whole group when `wall_limit` expires, and whatever is left of the group
/// when argv[0] ends (a one-shot tool leaves nothing running). Safe in a multithreaded program.
/// The calling thread waits for the child, so a child that sets PR_SET_PDEATHSIG (the supervisor of
/// limited_command, detail::supervision::die_with_parent) dies with the search process.
/// `env`: "NAME=value" entries added to the child's environment, each replacing an inherited
/// variable of the same name (a later entry replaces an earlier one); throws kernelbrain::error for
/// an entry that is not NAME=value.
[[nodiscard]] KERNELBRAIN_DECL captured_run run_captured(std::vector<std::string> const& argv,
                                                         std::chrono::milliseconds wall_limit,
                                                         std::size_t output_limit = 64 * 1024,
                                                         std::vector<std::string> const& env = {});

/// The result of one request to a worker.
struct worker_reply {
  enum class status {
    reply,    ///< the worker answered; `msg` holds it
    timeout,  ///< silent past the deadline: the worker was killed
    died,     ///< the worker ended (signal or exit) before answering
  };
  status st = status::reply;
  wire_message msg;
  std::string why;     ///< for timeout and died: what happened, with the tail of the worker's stderr
  double seconds = 0;  ///< wall time from sending the request to the outcome
};

/// One worker process: spawned with posix_spawn (never fork: the parent is multithreaded), talking
/// over a socketpair, sharing one arena that outlives restarts. A dead or killed worker is replaced
/// by a fresh one on the next call. Not thread-safe: one caller at a time, but any thread: the
/// worker outlives the thread that started it, and dies (its whole process group) when this
/// process dies, because its serve loop watches the channel (serve_requests).
class worker_process {
 public:
  /// `executable` is started as `executable --serve ROLE extra_args...`, with `env` added to its
  /// environment as run_captured adds it, and must say hello with `role` and wire::version. Nothing
  /// starts until the first call. Throws kernelbrain::error for an `env` entry that is not NAME=value.
  KERNELBRAIN_DECL worker_process(std::string executable, std::string role, std::vector<std::string> extra_args = {},
                                  std::vector<std::string> env = {});
  KERNELBRAIN_DECL ~worker_process();
  worker_process(worker_process const&) = delete;
  worker_process& operator=(worker_process const&) = delete;

  /// Starts the worker if none is running. Throws kernelbrain::error naming the executable when it
  /// cannot start or does not speak this protocol version.
  KERNELBRAIN_DECL void ensure_started();
  /// Sends one request and waits for the reply. The watchdog kills the worker when it stays silent
  /// (no progress message, no reply) for `silence_limit`. `after_send` runs once the request is
  /// written (a test hook: it may kill the worker).
  [[nodiscard]] KERNELBRAIN_DECL worker_reply call(std::uint32_t type, std::string_view body,
                                                   std::chrono::milliseconds silence_limit,
                                                   std::function<void(int pid)> const& after_send = {});
  /// Kills the worker's process group and reaps it. Harmless when none is running.
  KERNELBRAIN_DECL void stop() noexcept;

  [[nodiscard]] shared_arena& arena() noexcept { return arena_; }
  [[nodiscard]] int pid() const noexcept { return pid_; }
  [[nodiscard]] bool running() const noexcept { return pid_ > 0; }
  [[nodiscard]] std::size_t spawns() const noexcept { return spawns_; }
  [[nodiscard]] std::string const& executable() const noexcept { return exe_; }
  [[nodiscard]] std::vector<std::string> const& environment() const noexcept { return env_; }  ///< the added entries

 private:
  KERNELBRAIN_DECL int reap(bool kill_first) noexcept;  ///< returns the wait status
  KERNELBRAIN_DECL void drain_stderr() noexcept;
  [[nodiscard]] KERNELBRAIN_DECL std::string stderr_tail() const;

  std::string exe_, role_;
  std::vector<std::string> extra_, env_;
  shared_arena arena_;
  int pid_ = -1;
  int sock_ = -1;
  int err_ = -1;
  std::string inbuf_, errtail_;
  std::size_t spawns_ = 0;
};

/// True when `path` names a regular file this process may execute.
[[nodiscard]] KERNELBRAIN_DECL bool is_executable_file(std::string const& path);

/// An executable a user names by an option or, when the option is empty, by an environment variable.
struct named_executable {
  std::string_view backend = {};      ///< "host backend": the start of every message
  std::string_view option = {};       ///< "worker_path"
  std::string_view env_var = {};      ///< "KERNELBRAIN_HOST_WORKER"
  std::string_view option_hint = {};  ///< said after "OPTION '...' is not an executable file" (may be empty)
  std::string_view env_hint = {};     ///< said after "ENV_VAR='...' is not an executable file" (may be empty)
};

/// The directories of $PATH, in order (empty entries kept: callers skip them).
[[nodiscard]] inline std::vector<std::string> path_dirs() {
  std::vector<std::string> dirs;
  if (char const* path = std::getenv("PATH")) {
    const std::string p(path);
    for (std::size_t b = 0; b <= p.size();) {
      const auto e = p.find(':', b);
      dirs.push_back(p.substr(b, e == std::string::npos ? std::string::npos : e - b));
      if (e == std::string::npos) break;
      b = e + 1;
    }
  }
  return dirs;
}

/// Where CUDA's command-line tools (compute-sanitizer, ncu) are looked for, in order: each directory of
/// $PATH, then $CUDA_HOME/bin, then /usr/local/cuda/bin.
[[nodiscard]] inline std::vector<std::string> cuda_tool_dirs() {
  std::vector<std::string> dirs = path_dirs();
  if (char const* h = std::getenv("CUDA_HOME"); h && *h) dirs.push_back(std::string(h) + "/bin");
  dirs.emplace_back("/usr/local/cuda/bin");
  return dirs;
}

/// `option_value`, else the environment variable's value; empty when neither is set. Throws
/// kernelbrain::error ("BACKEND: OPTION 'VALUE' is not an executable file[: HINT]") when the one that
/// is set does not name an executable file: a name the user gave is never passed over.
[[nodiscard]] KERNELBRAIN_DECL std::string find_named_executable(named_executable const& n,
                                                                 std::string const& option_value);

/// Where a backend's worker executable may be, and what to say when it is in none of those places.
struct worker_location {
  named_executable named;                ///< the option (worker_path) and environment variable
  std::string_view executable = {};      ///< "kernelbrain-host-worker": looked for next to this program
  char const* build_path = nullptr;      ///< the one this build produced (KERNELBRAIN_*_WORKER_BUILD_PATH), or null
  std::string_view not_found_hint = {};  ///< said after "cannot find the worker executable EXE (looked at: ...)"
};

/// The worker executable: `explicit_path`, else the environment variable, else `executable` next to
/// this program (/proc/self/exe), else `build_path`. Throws kernelbrain::error naming where it looked.
[[nodiscard]] KERNELBRAIN_DECL std::string find_worker(worker_location const& where, std::string const& explicit_path);

}  // namespace kernelbrain::detail

#if KERNELBRAIN_HEADER_ONLY
#include "kernelbrain/isolation/impl/worker_process.ipp"
#endif
