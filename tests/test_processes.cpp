// Process supervision: nothing a search starts outlives it, and a worker outlives the thread that
// started it. The one-shot supervisor (`kernelbrain-host-worker --exec`, limited_command) keeps the
// program's exit status and signal, and takes the program's own children with it when its parent
// dies; run_captured leaves nothing of a tool's process group behind. (The whole search process
// killed with SIGKILL is in test_journal.cpp, which runs the CLI as a child.)
#include <doctest/doctest.h>

#if defined(__linux__)
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <kernelbrain/backends/host/evaluator.hpp>
#include <kernelbrain/isolation/worker_process.hpp>
#include <kernelbrain/search.hpp>
#include <optional>
#include <set>
#include <string>
#include <thread>
#include <vector>
#include "process_helpers.hpp"
#include "scoped_env.hpp"
#include "temp_dir.hpp"

using namespace kernelbrain;
using namespace kernelbrain::detail;  // these tests reach the process and wire plumbing
namespace fs = std::filesystem;
using namespace std::chrono_literals;

namespace {

using kb_test::scoped_env;

/// `sh -c script` with the marker in its environment (and so in every descendant's), supervised
/// by the host worker's --exec mode.
std::vector<std::string> supervised_shell(std::string const& marker, std::string const& script,
                                          process_limits const& lim = {}) {
  return limited_command(find_host_worker(), lim, {"env", "KB_TEST_MARK=" + marker, "sh", "-c", script});
}

/// Waits until at least `n` marked processes named `comm` run; returns how many do.
std::size_t wait_for_marked(std::string const& marker, std::string const& comm, std::size_t n,
                            std::chrono::seconds limit) {
  const auto until = std::chrono::steady_clock::now() + limit;
  std::size_t found = 0;
  do {
    found = 0;
    for (auto const& p : kb_test::marked_processes(marker)) found += p.comm == comm ? 1 : 0;
    if (found >= n) break;
    std::this_thread::sleep_for(10ms);
  } while (std::chrono::steady_clock::now() < until);
  return found;
}

/// Live (not zombie) children of this process that are serving workers.
std::set<pid_t> serving_children() {
  std::set<pid_t> out;
  std::error_code ec;
  for (auto const& e : fs::directory_iterator("/proc", ec)) {
    const std::string name = e.path().filename().string();
    if (name.empty() || name.find_first_not_of("0123456789") != std::string::npos) continue;
    const std::string stat = kb_test::read_proc_file("/proc/" + name + "/stat");
    const auto close = stat.rfind(')');
    if (close == std::string::npos || close + 4 >= stat.size()) continue;
    char state = 'Z';
    long ppid = 0;
    if (std::sscanf(stat.c_str() + close + 2, "%c %ld", &state, &ppid) != 2) continue;
    if (ppid != ::getpid() || state == 'Z') continue;
    if (kb_test::read_proc_file("/proc/" + name + "/cmdline").find(std::string("--serve\0host", 12)) ==
        std::string::npos)
      continue;
    out.insert(static_cast<pid_t>(std::stol(name)));
  }
  return out;
}

/// y = 2 x: the smallest host problem.
problem twice() {
  problem p;
  p.name = "twice";
  p.backend = "host";
  p.dim_order = {"N"};
  p.inputs = {{"x", "N", "normal"}};
  p.outputs = {{"y", "N", "normal"}};
  p.tol = {1e-5, 1e-6};
  p.shapes = {shape{"small", {{"N", 64}}, "smoke", 1, 0, 0}, shape{"odd", {{"N", 67}}, "odd", 1, 0, 0}};
  p.reference_source = R"(
#include "kernelbrain/evaluate/host_abi.h"
extern "C" void kb_kernel(const kb_args* a) {
  for (long long i = 0; i < a->dims[0]; ++i) a->outputs[0][i] = 2.0f * a->inputs[0][i];
}
)";
  return p;
}

std::string cache_dir() { return kb_test::process_dir("process-test"); }

/// A process's environment as it was started (/proc/PID/environ), one "NAME=value" per entry.
std::vector<std::string> environment_of(int pid) {
  const std::string raw = kb_test::read_proc_file("/proc/" + std::to_string(pid) + "/environ");
  std::vector<std::string> out;
  for (std::size_t b = 0; b < raw.size();) {
    const auto e = std::min(raw.find('\0', b), raw.size());
    out.push_back(raw.substr(b, e - b));
    b = e + 1;
  }
  return out;
}

/// The entries of `env` named `name`.
std::vector<std::string> entries_named(std::vector<std::string> const& env, std::string const& name) {
  std::vector<std::string> out;
  for (auto const& e : env)
    if (e.starts_with(name + "=")) out.push_back(e);
  return out;
}

}  // namespace

TEST_CASE("processes: the --exec supervisor exits the way its program did, under the limits it was given") {
  const auto mark = kb_test::unique_marker("status");
  auto run = [&](std::string const& script, process_limits const& lim = {}) {
    return run_captured(supervised_shell(mark, script, lim), 30s);
  };
  const auto ok = run("echo hello");
  CHECK(ok.succeeded());
  CHECK(ok.output == "hello\n");
  const auto seven = run("exit 7");
  REQUIRE(WIFEXITED(seven.wait_status));
  CHECK(WEXITSTATUS(seven.wait_status) == 7);
  // Killed by a signal: the supervisor dies of the same signal, so the compile verdicts (SIGXCPU,
  // SIGKILL: "compile exceeded ... and was killed") and crash messages read as before.
  for (int sig : {SIGXCPU, SIGSEGV, SIGKILL}) {
    const auto r = run("kill -" + std::to_string(sig) + " $$");
    CAPTURE(sig);
    REQUIRE(WIFSIGNALED(r.wait_status));
    CHECK(WTERMSIG(r.wait_status) == sig);
  }
  const auto xcpu = run("kill -XCPU $$");
  CHECK(describe_wait_status(xcpu.wait_status) ==
        "was killed by signal " + std::to_string(SIGXCPU) + " (SIGXCPU, CPU time limit exceeded)");
  // The limits reach the program (ulimit -v is in KiB).
  process_limits lim;
  lim.cpu_seconds = 7;
  lim.address_space_bytes = std::uint64_t{1} << 30;
  lim.file_size_bytes = std::uint64_t{1} << 20;
  const auto limits = run("ulimit -t; ulimit -v; ulimit -f; ulimit -c", lim);
  CHECK(limits.succeeded());
  CHECK(limits.output == "7\n1048576\n2048\n0\n");  // ulimit -f counts 512-byte blocks
  // A program that cannot be run: status 127 and the message the host compiler looks for.
  const auto missing = run_captured(limited_command(find_host_worker(), {}, {"kb-no-such-program", "--version"}), 30s);
  REQUIRE(WIFEXITED(missing.wait_status));
  CHECK(WEXITSTATUS(missing.wait_status) == 127);
  CHECK(missing.output.find("cannot run 'kb-no-such-program'") != std::string::npos);
  const auto bad = run_captured({find_host_worker(), "--exec", "--colour=red", "--", "true"}, 30s);
  CHECK(WIFEXITED(bad.wait_status));
  CHECK(WEXITSTATUS(bad.wait_status) == 2);
  CHECK(bad.output.find("unknown option '--colour=red'") != std::string::npos);
  CHECK(kb_test::wait_until_none(mark, 5s).empty());
}

TEST_CASE("processes: a tool's process group is killed when it ends or times out, leaving nothing behind") {
  const auto mark = kb_test::unique_marker("group");
  SUBCASE("it exits, leaving a background process") {
    const auto r = run_captured(supervised_shell(mark, "sleep 1000 >/dev/null 2>&1 & exit 0"), 30s);
    CHECK(r.succeeded());
  }
  SUBCASE("it times out, its children still running") {
    const auto start = std::chrono::steady_clock::now();
    const auto r = run_captured(supervised_shell(mark, "sleep 1000 >/dev/null 2>&1 & sleep 1000"), 1s);
    CHECK(r.timed_out);
    CHECK(std::chrono::steady_clock::now() - start < 10s);
  }
  const auto left = kb_test::wait_until_none(mark, 3s);
  CHECK_MESSAGE(left.empty(), "still running:", kb_test::describe_all(left));
  kb_test::kill_marked(mark);
}

TEST_CASE("processes: a compile's own children die when the process that ran the compile is killed") {
  // A compiler starts processes of its own (g++: cc1plus, as): here a shell that starts two sleeps,
  // one in the background with its output elsewhere. The process that called run_captured (a forked
  // stand-in for the search process) is killed with SIGKILL; the supervisor must take its whole
  // process group with it, not just its direct child.
  const auto mark = kb_test::unique_marker("orphans");
  const auto argv = supervised_shell(mark, "sleep 1000 >/dev/null 2>&1 & sleep 1000; echo unreachable");
  const pid_t mid = ::fork();
  REQUIRE(mid >= 0);
  if (mid == 0) {
    const auto r = run_captured(argv, 300s);
    ::_exit(r.succeeded() ? 0 : 1);
  }
  const auto sleeps = wait_for_marked(mark, "sleep", 2, 30s);
  CHECK(sleeps == 2);
  REQUIRE(::kill(mid, SIGKILL) == 0);
  int st = 0;
  REQUIRE(::waitpid(mid, &st, 0) == mid);
  const auto left = kb_test::wait_until_none(mark, 3s);
  CHECK_MESSAGE(left.empty(), "outlived the process that started them:", kb_test::describe_all(left));
  kb_test::kill_marked(mark);
}

TEST_CASE("processes: no other child holds the parent's end of a worker's channel") {
  // The worker's channel watch relies on the parent's end closing when the parent dies: were a copy
  // of it inherited by another child (a compiler), that child would keep the worker alive.
  worker_process w(find_host_worker(), "host");
  w.ensure_started();
  auto list = [](std::string const& pid) {  // "FD TARGET" per line
    return "for f in /proc/" + pid + "/fd/*; do echo \"${f##*/} $(readlink $f)\"; done";
  };
  const auto r = run_captured({"sh", "-c", list("$$")}, 30s);
  REQUIRE(r.succeeded());
  CHECK(r.output.find("0 /dev/null") != std::string::npos);  // the listing works
  INFO("a tool's descriptors:\n", r.output);
  CHECK(r.output.find("socket:") == std::string::npos);
  CHECK(r.output.find("memfd:") == std::string::npos);
  // The worker holds its channel (3), its arena (4) and its output, nothing else of ours.
  const auto fds = run_captured({"sh", "-c", list(std::to_string(w.pid()))}, 30s);
  REQUIRE(fds.succeeded());
  INFO("the worker's descriptors:\n", fds.output);
  CHECK(fds.output.find("3 socket:") != std::string::npos);
  CHECK(fds.output.find("4 /memfd:") != std::string::npos);
  std::size_t lines = 0;
  for (char ch : fds.output) lines += ch == '\n' ? 1 : 0;
  CHECK(lines == 5);
}

TEST_CASE("processes: a worker started by a thread that has ended goes on serving") {
  // Workers are started lazily by whichever thread calls first, e.g. the evaluation thread of one
  // search(), which ends with that search. PR_SET_PDEATHSIG would kill the worker then (it fires
  // when the spawning *thread* exits); the next call would quietly start another worker.
  SUBCASE("worker_process") {
    worker_process w(find_host_worker(), "host");
    std::thread([&w] { w.ensure_started(); }).join();
    const int pid = w.pid();
    REQUIRE(pid > 0);
    std::this_thread::sleep_for(300ms);  // a parent-death signal would have struck by now
    siginfo_t info{};
    REQUIRE(::waitid(P_PID, static_cast<id_t>(pid), &info, WEXITED | WNOHANG | WNOWAIT) == 0);
    CHECK_MESSAGE(info.si_pid == 0, "the worker ended when the thread that started it did");
    const auto r = w.call(wire::first_backend_type + 999, {}, 10s);  // an unknown request: a refusal
    CHECK(r.st == worker_reply::status::reply);
    CHECK(w.pid() == pid);
    CHECK(w.spawns() == 1);
  }
  SUBCASE("host_evaluator: the reference and the candidate worker") {
    const auto p = twice();
    host_options o;
    o.cache_dir = cache_dir();
    const auto c = make_candidate("twice", {}, "test", std::nullopt, p.reference_source + "// candidate\n");
    const auto before = serving_children();
    std::unique_ptr<host_evaluator> ev;
    bool first = false;
    std::thread([&] {
      ev = std::make_unique<host_evaluator>(p, o);                          // starts the reference worker
      first = ev->check(c, std::vector<std::size_t>{0, 1}, 1, 1).passed();  // and the candidate worker
    }).join();
    REQUIRE(first);
    const int pid = ev->worker_pid();
    REQUIRE(pid > 0);
    std::this_thread::sleep_for(300ms);
    auto started = serving_children();
    for (pid_t q : before) started.erase(q);
    CHECK_MESSAGE(started.size() == 2, "serving workers alive after the thread ended: ", started.size());
    const auto v = ev->check(c, std::vector<std::size_t>{0, 1}, 1, 2);
    CHECK_MESSAGE(v.passed(), v.detail);
    CHECK(ev->worker_pid() == pid);
    CHECK(ev->worker_starts() == 1);
    auto after = serving_children();
    for (pid_t q : before) after.erase(q);
    CHECK(after == started);  // neither worker was replaced
  }
}

TEST_CASE("processes: a child's added environment entries reach it and replace inherited variables of the name") {
  // How a CUDA evaluator puts its children on its own GPU (CUDA_VISIBLE_DEVICES): an entry must
  // replace an inherited variable, not sit beside it (which of two a program reads is its own choice).
  const scoped_env inherited("KB_TEST_ENV_INHERITED", "inherited");
  // The child's environment as it was given, one line per entry, and what the shell reads.
  const std::string show =
      "tr '\\000' '\\n' < /proc/$$/environ | grep '^KB_TEST_ENV_' | sort; "
      "echo \"read: ${KB_TEST_ENV_ADDED-unset} $KB_TEST_ENV_INHERITED\"";
  SUBCASE("run_captured") {
    const auto added = run_captured({"sh", "-c", show}, 30s, 64 * 1024,
                                    {"KB_TEST_ENV_ADDED=a value with spaces", "KB_TEST_ENV_INHERITED=replaced"});
    REQUIRE(added.succeeded());
    CHECK(added.output ==
          "KB_TEST_ENV_ADDED=a value with spaces\nKB_TEST_ENV_INHERITED=replaced\n"
          "read: a value with spaces replaced\n");
    const auto plain = run_captured({"sh", "-c", show}, 30s);  // no entries: inherited as before
    REQUIRE(plain.succeeded());
    CHECK(plain.output == "KB_TEST_ENV_INHERITED=inherited\nread: unset inherited\n");
    CHECK(std::string(std::getenv("KB_TEST_ENV_INHERITED")) == "inherited");  // this process's is untouched
  }
  SUBCASE("a later entry replaces an earlier one; KERNELBRAIN_PARENT_PID stays this process's") {
    const auto r = run_captured({"sh", "-c", show + "; echo \"$KERNELBRAIN_PARENT_PID\""}, 30s, 64 * 1024,
                                {"KB_TEST_ENV_ADDED=first", "KB_TEST_ENV_ADDED=second", "KERNELBRAIN_PARENT_PID=1"});
    REQUIRE(r.succeeded());
    CHECK(r.output == "KB_TEST_ENV_ADDED=second\nKB_TEST_ENV_INHERITED=inherited\nread: second inherited\n" +
                          std::to_string(::getpid()) + "\n");
  }
  SUBCASE("through the --exec supervisor (how compute-sanitizer and ncu are run)") {
    const auto r = run_captured(limited_command(find_host_worker(), {}, {"sh", "-c", show}), 30s, 64 * 1024,
                                {"KB_TEST_ENV_INHERITED=supervised"});
    REQUIRE(r.succeeded());
    CHECK(r.output == "KB_TEST_ENV_INHERITED=supervised\nread: unset supervised\n");
  }
  SUBCASE("worker_process, also after a restart") {
    worker_process w(find_host_worker(), "host", {}, {"KB_TEST_ENV_ADDED=worker", "KB_TEST_ENV_INHERITED=replaced"});
    CHECK(w.environment() == std::vector<std::string>{"KB_TEST_ENV_ADDED=worker", "KB_TEST_ENV_INHERITED=replaced"});
    for (int round = 0; round < 2; ++round) {
      CAPTURE(round);
      w.ensure_started();
      const auto env = environment_of(w.pid());
      CHECK(entries_named(env, "KB_TEST_ENV_ADDED") == std::vector<std::string>{"KB_TEST_ENV_ADDED=worker"});
      CHECK(entries_named(env, "KB_TEST_ENV_INHERITED") == std::vector<std::string>{"KB_TEST_ENV_INHERITED=replaced"});
      CHECK(entries_named(env, "KERNELBRAIN_PARENT_PID") ==
            std::vector<std::string>{"KERNELBRAIN_PARENT_PID=" + std::to_string(::getpid())});
      w.stop();
    }
    CHECK(w.spawns() == 2);
    worker_process plain(find_host_worker(), "host");  // no entries: inherited as before
    plain.ensure_started();
    CHECK(entries_named(environment_of(plain.pid()), "KB_TEST_ENV_INHERITED") ==
          std::vector<std::string>{"KB_TEST_ENV_INHERITED=inherited"});
  }
  SUBCASE("an entry that is not NAME=value is refused before anything starts") {
    for (std::string const& bad :
         std::vector<std::string>{"NO_EQUALS_SIGN", "=value", std::string("KB_TEST_ENV_ADDED=a\0b", 21)}) {
      CAPTURE(bad);
      CHECK_THROWS_WITH_AS((void)run_captured({"true"}, 30s, 1024, {bad}), doctest::Contains("is not NAME=value"),
                           error);
      CHECK_THROWS_WITH_AS(worker_process(find_host_worker(), "host", {}, {bad}),
                           doctest::Contains("is not NAME=value"), error);
    }
  }
}

#endif  // __linux__
