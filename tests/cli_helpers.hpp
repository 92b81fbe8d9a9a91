// Running the command-line tuner (apps/kernelbrain) as a child process from a test.
#pragma once
#ifdef KB_CLI_PATH
#include <doctest/doctest.h>

#include <fcntl.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <string>
#include <vector>
#include "journal_helpers.hpp"
#include "temp_dir.hpp"

extern char** environ;

namespace kb_test {

/// Starts the CLI with stdout and stderr sent to files; returns its pid.
inline pid_t spawn_cli(std::vector<std::string> args, std::filesystem::path const& out,
                       std::filesystem::path const& err) {
  args.insert(args.begin(), KB_CLI_PATH);
  std::vector<char*> argv;
  argv.reserve(args.size() + 1);
  for (auto& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_addopen(&fa, STDOUT_FILENO, out.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  posix_spawn_file_actions_addopen(&fa, STDERR_FILENO, err.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  pid_t pid = -1;
  const int rc = posix_spawn(&pid, KB_CLI_PATH, &fa, nullptr, argv.data(), environ);
  posix_spawn_file_actions_destroy(&fa);
  REQUIRE_MESSAGE(rc == 0, "cannot start ", KB_CLI_PATH);
  return pid;
}

struct cli_run {
  int exit_code = -1;
  std::string out, err;
};

inline cli_run run_cli(std::vector<std::string> args, temp_dir const& dir) {
  const auto out = dir / "stdout.txt", err = dir / "stderr.txt";
  const pid_t pid = spawn_cli(std::move(args), out, err);
  int status = 0;
  REQUIRE(::waitpid(pid, &status, 0) == pid);
  cli_run r;
  r.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  r.out = slurp(out);
  r.err = slurp(err);
  return r;
}

/// A row of the summary table: "  cache hits       157" -> "157".
inline std::string summary(std::string const& out, std::string const& key) {
  for (auto const& line : split_lines(out)) {
    const auto start = line.find_first_not_of(' ');
    if (start == std::string::npos || line.compare(start, key.size(), key) != 0) continue;
    const auto rest = line.find_first_not_of(' ', start + key.size());
    if (rest != std::string::npos && rest > start + key.size()) return line.substr(rest);
  }
  FAIL("no '", key, "' row in the summary:\n", out);
  return {};
}

inline bool contains(std::string const& text, std::string const& needle) {
  return text.find(needle) != std::string::npos;
}

/// A usage error: exit code 2 and a message on stderr that holds every needle (the argument's name...).
inline void check_usage_error(std::vector<std::string> const& args, std::vector<std::string> const& needles,
                              temp_dir const& dir) {
  std::string command = "kernelbrain";
  for (auto const& a : args) command += " " + a;
  INFO(command);
  const auto r = run_cli(args, dir);
  CHECK_MESSAGE(r.exit_code == 2, "exit code ", r.exit_code, ", stderr: ", r.err);
  for (auto const& needle : needles) CHECK_MESSAGE(contains(r.err, needle), "'", needle, "' not in stderr: ", r.err);
  CHECK_MESSAGE(r.out.empty(), "a usage error printed on stdout: ", r.out);
}

}  // namespace kb_test
#endif
