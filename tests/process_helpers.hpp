// Test helpers for "nothing a search starts outlives it": find every process that carries a marker
// (in its environment or its command line) by scanning /proc, wherever it was re-parented to.
// A marker in the environment of the first process follows every descendant, whatever its parent
// or process group becomes; zombies have an empty environment and command line, so they never match.
#pragma once
#if defined(__linux__)
#include <signal.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <random>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

namespace kb_test {

/// A marker no other process on the machine carries.
inline std::string unique_marker(std::string const& what) {
  std::random_device rd;
  return "kbmark-" + what + "-" + std::to_string(::getpid()) + "-" + std::to_string(rd()) + std::to_string(rd());
}

inline std::string read_proc_file(std::string const& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

struct process_info {
  pid_t pid = 0;
  std::string comm;     ///< the command name (/proc/PID/comm)
  std::string cmdline;  ///< arguments joined by spaces
  double cpu_seconds = 0;
  unsigned long long start_ticks = 0;  ///< when it started, in clock ticks since boot
  [[nodiscard]] std::string describe() const {
    std::ostringstream s;
    s << pid << " (" << comm << ", " << cpu_seconds << " s CPU): " << cmdline;
    return s.str();
  }
};

/// Fields 3 (the state) to 22 (the start time) of /proc/PID/stat, as text; empty when it is gone.
inline std::vector<std::string> stat_fields(pid_t pid) {
  const std::string stat = read_proc_file("/proc/" + std::to_string(pid) + "/stat");
  const auto close = stat.rfind(')');  // the command name may hold spaces and parentheses
  if (close == std::string::npos || close + 2 > stat.size()) return {};
  std::istringstream in(stat.substr(close + 2));
  std::vector<std::string> out;
  std::string field;
  for (int i = 3; i <= 22 && in >> field; ++i) out.push_back(field);
  return out.size() == 20 ? out : std::vector<std::string>{};
}

/// CPU time (user + system) of a process, from /proc/PID/stat; -1 when it is gone.
inline double cpu_seconds(pid_t pid) {
  const auto f = stat_fields(pid);
  if (f.empty()) return -1;
  return static_cast<double>(std::stoull(f[14 - 3]) + std::stoull(f[15 - 3])) /
         static_cast<double>(::sysconf(_SC_CLK_TCK));
}

/// Every process other than this one whose environment or command line contains `marker`.
inline std::vector<process_info> marked_processes(std::string const& marker) {
  std::vector<process_info> out;
  std::error_code ec;
  for (auto const& e : std::filesystem::directory_iterator("/proc", ec)) {
    const std::string name = e.path().filename().string();
    if (name.empty() || name.find_first_not_of("0123456789") != std::string::npos) continue;
    const pid_t pid = static_cast<pid_t>(std::stol(name));
    if (pid == ::getpid()) continue;
    const std::string dir = "/proc/" + name;
    std::string cmd = read_proc_file(dir + "/cmdline");
    if (read_proc_file(dir + "/environ").find(marker) == std::string::npos && cmd.find(marker) == std::string::npos)
      continue;
    for (char& c : cmd)
      if (c == '\0') c = ' ';
    process_info p;
    p.pid = pid;
    p.comm = read_proc_file(dir + "/comm");
    while (!p.comm.empty() && p.comm.back() == '\n') p.comm.pop_back();
    p.cmdline = cmd;
    const auto f = stat_fields(pid);
    if (f.empty()) continue;  // gone meanwhile
    p.cpu_seconds = static_cast<double>(std::stoull(f[14 - 3]) + std::stoull(f[15 - 3])) /
                    static_cast<double>(::sysconf(_SC_CLK_TCK));
    p.start_ticks = std::stoull(f[22 - 3]);
    out.push_back(std::move(p));
  }
  return out;
}

/// Waits up to `limit` for every marked process to end; returns those still running then.
inline std::vector<process_info> wait_until_none(std::string const& marker, std::chrono::milliseconds limit) {
  const auto until = std::chrono::steady_clock::now() + limit;
  for (;;) {
    auto left = marked_processes(marker);
    if (left.empty() || std::chrono::steady_clock::now() >= until) return left;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
}

/// Kills every marked process (cleanup after a failed check, so a failure leaves no orphans behind).
inline void kill_marked(std::string const& marker) {
  for (int round = 0; round < 5; ++round) {
    const auto left = marked_processes(marker);
    if (left.empty()) return;
    for (auto const& p : left) ::kill(p.pid, SIGKILL);
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
}

/// One line per process, for failure messages.
inline std::string describe_all(std::vector<process_info> const& ps) {
  std::string s;
  for (auto const& p : ps) s += "\n  " + p.describe();
  return s;
}

}  // namespace kb_test
#endif
