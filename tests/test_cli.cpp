// The command-line tuner (apps/kernelbrain), run as a child process: its interface (help, version,
// subcommands, usage errors and their exit codes, the summary), and runs killed with SIGKILL and resumed
// from the journal, or killed with workers and compilers running.
#include <doctest/doctest.h>

#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <functional>
#include <kernelbrain/io/journal.hpp>
#include <kernelbrain/search.hpp>
#include <kernelbrain/strategies/all.hpp>
#include <optional>
#include <string>
#include <thread>
#include <vector>
#include "cli_helpers.hpp"
#include "host_corpus/compile_bomb.hpp"
#include "journal_helpers.hpp"
#include "process_helpers.hpp"
#include "temp_dir.hpp"

#ifdef KB_CLI_PATH
extern char** environ;

using namespace kernelbrain;
namespace fs = std::filesystem;
using kb_test::check_same;
using kb_test::check_usage_error;
using kb_test::cli_run;
using kb_test::contains;
using kb_test::event_signatures;
using kb_test::lines_of_type;
using kb_test::outcome_counts;
using kb_test::run_cli;
using kb_test::slurp;
using kb_test::spawn_cli;
using kb_test::spit;
using kb_test::split_lines;
using kb_test::summary;
using kb_test::temp_dir;

TEST_CASE("cli: a run killed with SIGKILL and resumed ends exactly like an uninterrupted one") {
  temp_dir dir("cli_resume");
  const std::vector<std::string> common{"tune",     "synthetic", "--backend", "synthetic", "--strategy",   "default",
                                        "--budget", "300evals",  "--seed",    "5",         "--no-progress"};
  auto with = [&](std::vector<std::string> extra) {
    auto a = common;
    a.insert(a.end(), extra.begin(), extra.end());
    return a;
  };

  const auto whole = run_cli(with({"--journal", (dir / "whole.jsonl").string()}), dir);
  REQUIRE_MESSAGE(whole.exit_code == 0, whole.err);

  // Slowed so that the kill lands mid-run; --slow-eval-ms changes neither results nor the header.
  const auto killed_journal = dir / "killed.jsonl";
  const pid_t pid =
      spawn_cli(with({"--journal", killed_journal.string(), "--slow-eval-ms", "5"}), dir / "k.out", dir / "k.err");
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
  bool exited_early = false;
  while (lines_of_type(killed_journal, "outcome") < 40) {
    int status = 0;
    if (::waitpid(pid, &status, WNOHANG) == pid) {
      exited_early = true;
      break;
    }
    if (std::chrono::steady_clock::now() > deadline) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  REQUIRE_MESSAGE(!exited_early, "the run finished before it could be killed: raise --slow-eval-ms");
  REQUIRE(::kill(pid, SIGKILL) == 0);
  int status = 0;
  REQUIRE(::waitpid(pid, &status, 0) == pid);
  REQUIRE(WIFSIGNALED(status));
  REQUIRE(WTERMSIG(status) == SIGKILL);

  const auto at_kill = read_journal(killed_journal);  // a torn last line, if any, is not counted
  REQUIRE(at_kill.outcomes.size() >= 40);
  REQUIRE(at_kill.outcomes.size() < std::stoull(summary(whole.out, "evaluations")));
  for (auto const& e : at_kill.events) REQUIRE(e.e.kind != event_kind::stopped);

  const auto resumed = run_cli(with({"--journal", killed_journal.string(), "--resume"}), dir);
  REQUIRE_MESSAGE(resumed.exit_code == 0, resumed.err);
  CHECK(summary(resumed.out, "best candidate") == summary(whole.out, "best candidate"));
  CHECK(summary(resumed.out, "score") == summary(whole.out, "score"));
  CHECK(summary(resumed.out, "evaluations") == summary(whole.out, "evaluations"));
  CHECK(summary(resumed.out, "device seconds") == summary(whole.out, "device seconds"));
  CHECK(summary(resumed.out, "cache hits") == std::to_string(at_kill.outcomes.size()));
  CHECK(summary(whole.out, "cache hits") == "0");

  const auto a = read_journal(dir / "whole.jsonl");
  const auto b = read_journal(killed_journal);
  CHECK(b.torn_bytes == 0);
  CHECK(b.outcomes.size() == a.outcomes.size());
  for (auto const& [key, n] : outcome_counts(b)) CHECK_MESSAGE(n == 1, "evaluated twice: ", key.first, "@", key.second);
  CHECK(event_signatures(b) == event_signatures(a));
  CHECK(lines_of_type(killed_journal, "event") == a.events.size());
}

TEST_CASE("cli: a host-backend search killed with SIGKILL resumes without re-evaluating anything") {
  temp_dir dir("cli_host_resume");
  const auto journal = dir / "host.jsonl";
  const std::vector<std::string> args{"tune",   "softmax", "--backend", "host",           "--budget",     "14evals",
                                      "--seed", "3",       "--journal", journal.string(), "--no-progress"};
  const pid_t pid = spawn_cli(args, dir / "k.out", dir / "k.err");
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(120);
  bool exited_early = false;
  while (lines_of_type(journal, "outcome") < 5) {
    int status = 0;
    if (::waitpid(pid, &status, WNOHANG) == pid) {
      exited_early = true;
      break;
    }
    REQUIRE_MESSAGE(std::chrono::steady_clock::now() < deadline, "no 5 outcomes within 120 s: ", slurp(dir / "k.err"));
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  REQUIRE_MESSAGE(!exited_early, "the host run finished before it could be killed: ", slurp(dir / "k.err"));
  REQUIRE(::kill(pid, SIGKILL) == 0);
  int status = 0;
  REQUIRE(::waitpid(pid, &status, 0) == pid);
  REQUIRE(WIFSIGNALED(status));

  const auto at_kill = read_journal(journal);
  REQUIRE(at_kill.outcomes.size() >= 5);
  auto resume_args = args;
  resume_args.push_back("--resume");
  const auto resumed = run_cli(resume_args, dir);
  REQUIRE_MESSAGE(resumed.exit_code == 0, resumed.err);
  CHECK(summary(resumed.out, "evaluations") == "14");
  CHECK(summary(resumed.out, "cache hits") == std::to_string(at_kill.outcomes.size()));
  const auto after = read_journal(journal);
  CHECK(after.outcomes.size() == 14);  // 14 evaluations, each measured exactly once across both runs
  for (auto const& [key, n] : outcome_counts(after))
    CHECK_MESSAGE(n == 1, "evaluated twice: ", key.first, "@", key.second);
  // What was measured before the kill is kept as it was.
  for (std::size_t i = 0; i < at_kill.outcomes.size(); ++i) check_same(at_kill.outcomes[i], after.outcomes[i]);
}

TEST_CASE("cli: a host search killed with SIGKILL leaves no worker, compiler or candidate running") {
  // Every process the search started carries the marker in its environment, wherever it was
  // re-parented to after the kill: serving workers, their executors (one spinning in a candidate
  // that never returns), the compile supervisor, g++ and its cc1plus.
  temp_dir dir("cli_orphans");
  const auto problem_dir = dir.path / "problem";
  fs::create_directories(problem_dir / "templates");
  spit(problem_dir / "problem.json", R"({
  "name": "never_done",
  "backend": "host",
  "signature": "y = 2 x; every candidate of this problem hangs or never compiles",
  "dims": ["N"],
  "inputs": [{"name": "x", "size": "N"}],
  "outputs": [{"name": "y", "size": "N"}],
  "shapes": [{"name": "small", "dims": {"N": 64}, "tier": "smoke"}, {"name": "odd", "dims": {"N": 67}, "tier": "odd"}],
  "tolerance": {"rtol": 1e-5, "atol": 1e-6},
  "cost": {"bytes": "8 * N", "flops": "N"},
  "reference": "reference.cpp",
  "seed": "seed.cpp",
  "catalogue": [{"name": "stuck", "prose": "never finishes", "template": "templates/stuck.cpp",
                 "parameters": {"K": [1, 2, 3, 4, 5, 6, 7, 8]}}]
})");
  spit(problem_dir / "reference.cpp", R"(#include "kernelbrain/evaluate/host_abi.h"
extern "C" void kb_kernel(const kb_args* a) {
  for (long long i = 0; i < a->dims[0]; ++i) a->outputs[0][i] = 2.0f * a->inputs[0][i];
}
)");
  std::string seed;
  // The moment to kill the search, given the marked processes.
  std::function<bool(std::vector<kb_test::process_info> const&)> ready;
  std::string moment;
  SUBCASE("while an executor runs a candidate that never returns") {
    seed = R"(#include "kernelbrain/evaluate/host_abi.h"
extern "C" void kb_kernel(const kb_args* a) {
  volatile unsigned long long spin = static_cast<unsigned long long>(a->dims[0]) * ${K};
  for (;;) spin = spin + 1;
}
)";
    // Candidates run in executors (kernelbrain-host-worker --executor, one per module, started by
    // a serving worker); once one has used a second of CPU it is inside kb_kernel (a check at these
    // shapes takes microseconds; the watchdog allows 10 s per call). The reference's executors never
    // spin: its worker's cache flushes are the worker's own CPU.
    ready = [](std::vector<kb_test::process_info> const& ps) {
      return std::any_of(ps.begin(), ps.end(), [](auto const& p) {
        return p.cmdline.find("--executor") != std::string::npos && p.cpu_seconds > 1.0;
      });
    };
    moment = "an executor spinning in a candidate";
  }
  SUBCASE("while the compiler runs") {
    seed = kb_corpus::compile_bomb("${K}");
    // The reference compiles in well under a second of CPU; the compile bomb takes the full 60 s.
    ready = [](std::vector<kb_test::process_info> const& ps) {
      return std::any_of(ps.begin(), ps.end(),
                         [](auto const& p) { return p.comm == "cc1plus" && p.cpu_seconds > 1.0; });
    };
    moment = "cc1plus compiling a candidate";
  }
  std::string seed_source = seed;  // the seed is the template's point K = 1
  seed_source.replace(seed_source.find("${K}"), 4, "1");
  spit(problem_dir / "seed.cpp", seed_source);
  spit(problem_dir / "templates" / "stuck.cpp", seed);

  const auto mark = kb_test::unique_marker("cli");
  struct cleanup {  // whatever happens below, this test leaves nothing running
    std::string mark;
    ~cleanup() { kb_test::kill_marked(mark); }
  } leave_nothing{mark};
  pid_t pid = -1;
  {
    // The child inherits the marker and a private artifact cache; this process keeps neither.
    struct scoped_env {
      std::string name;
      std::optional<std::string> old;
      scoped_env(std::string n, std::string const& value) : name(std::move(n)) {
        if (char const* o = std::getenv(name.c_str())) old = o;
        ::setenv(name.c_str(), value.c_str(), 1);
      }
      ~scoped_env() {
        if (old)
          ::setenv(name.c_str(), old->c_str(), 1);
        else
          ::unsetenv(name.c_str());
      }
    };
    scoped_env m("KB_TEST_MARK", mark), cache("KERNELBRAIN_CACHE_DIR", (dir / "cache").string());
    pid = spawn_cli({"tune", problem_dir.string(), "--budget", "200evals", "--seed", "1", "--no-progress"},
                    dir / "k.out", dir / "k.err");
  }
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(120);
  std::vector<kb_test::process_info> at_kill;
  bool exited_early = false, found = false;
  while (!found) {
    int status = 0;
    if (::waitpid(pid, &status, WNOHANG) == pid) {
      exited_early = true;
      break;
    }
    if (std::chrono::steady_clock::now() > deadline) break;
    at_kill = kb_test::marked_processes(mark);
    found = ready(at_kill);
    if (!found) std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  if (!exited_early) {
    REQUIRE(::kill(pid, SIGKILL) == 0);
    int status = 0;
    REQUIRE(::waitpid(pid, &status, 0) == pid);
  }
  INFO("processes when the search was killed:", kb_test::describe_all(at_kill));
  REQUIRE_MESSAGE(!exited_early, "the search ended before it could be killed: ", slurp(dir / "k.err"));
  REQUIRE_MESSAGE(found, "no ", moment, " within 120 s: ", slurp(dir / "k.err"));
  const auto left = kb_test::wait_until_none(mark, std::chrono::seconds(3));
  CHECK_MESSAGE(left.empty(), "still running 3 s after the search was killed:", kb_test::describe_all(left));
}

TEST_CASE("cli: --help lists the subcommands and exits 0") {
  temp_dir dir("cli_help");
  for (std::string flag : {"--help", "-h"}) {
    const auto r = run_cli({flag}, dir);
    CHECK_MESSAGE(r.exit_code == 0, flag, ": ", r.err);
    CHECK_MESSAGE(contains(r.out, "tune"), r.out);
    CHECK_MESSAGE(contains(r.out, "list-strategies"), r.out);
    CHECK_MESSAGE(contains(r.out, "Usage: kernelbrain"), r.out);
    CHECK(contains(r.out, "cuda"));  // tools/run-main.sh looks for the CUDA backend in --help
  }
}

TEST_CASE("cli: tune --help lists the options, not the hidden test hook, and exits 0") {
  temp_dir dir("cli_tune_help");
  const auto r = run_cli({"tune", "--help"}, dir);
  CHECK_MESSAGE(r.exit_code == 0, r.err);
  for (std::string option : {"--budget", "--strategy", "--backend", "--seed", "--journal", "--resume", "--wall",
                             "--best-out", "--focus", "--progress", "--no-progress"})
    CHECK_MESSAGE(contains(r.out, option), option, " not in: ", r.out);
  CHECK_FALSE(contains(r.out, "--slow-eval-ms"));
  // --help anywhere on a tune command line wins over what is missing or wrong.
  const auto anywhere = run_cli({"tune", "synthetic", "--budget", "300", "--help"}, dir);
  CHECK_MESSAGE(anywhere.exit_code == 0, anywhere.err);
  CHECK(contains(anywhere.out, "--budget"));
}

TEST_CASE("cli: --version prints the project version") {
  temp_dir dir("cli_version");
  const auto r = run_cli({"--version"}, dir);
  CHECK_MESSAGE(r.exit_code == 0, r.err);
#ifdef KB_PROJECT_VERSION
  CHECK(r.out == std::string("kernelbrain ") + KB_PROJECT_VERSION + "\n");
#else
  FAIL("tests/CMakeLists.txt defines KB_PROJECT_VERSION next to KB_CLI_PATH");
#endif
}

TEST_CASE("cli: list-strategies lists every registered strategy") {
  temp_dir dir("cli_list");
  const auto r = run_cli({"list-strategies"}, dir);
  REQUIRE_MESSAGE(r.exit_code == 0, r.err);
  const auto lines = split_lines(r.out);
  // The CLI lists the model-only strategies too (they refuse to run without a model).
  const auto names = builtin_strategies(std::make_shared<model_setup const>()).names();
  REQUIRE_FALSE(names.empty());
  CHECK(std::find(names.begin(), names.end(), "blind-llm") != names.end());
  CHECK(lines.size() == names.size());
  for (auto const& name : names) {
    const bool listed = std::any_of(lines.begin(), lines.end(), [&](std::string const& line) {
      return line.starts_with(name + " ");  // the name, then its description
    });
    CHECK_MESSAGE(listed, "strategy '", name, "' not listed:\n", r.out);
  }
}

TEST_CASE("cli: usage errors exit with code 2 and a message naming the argument") {
  temp_dir dir("cli_errors");
  check_usage_error({}, {"tune", "list-strategies"}, dir);  // a subcommand is required
  check_usage_error({"frobnicate"}, {"unknown command 'frobnicate'"}, dir);
  check_usage_error({"--colour"}, {"--colour"}, dir);
  check_usage_error({"tune", "synthetic", "--budget", "10evals", "--colour"}, {"--colour"}, dir);
  check_usage_error({"tune", "synthetic", "--budget", "10evals", "another"}, {"another"}, dir);
  check_usage_error({"list-strategies", "extra"}, {"extra"}, dir);
  check_usage_error({"tune", "synthetic"}, {"--budget", "required"}, dir);
  check_usage_error({"tune", "--budget", "10evals"}, {"problem", "required"}, dir);
  check_usage_error({"tune", "synthetic", "--budget"}, {"--budget"}, dir);
  check_usage_error({"tune", "synthetic", "--budget", "300"}, {"--budget", "'300' has no unit"}, dir);
  check_usage_error({"tune", "synthetic", "--budget", "0evals"}, {"--budget", "allows no evaluation"}, dir);
  check_usage_error({"tune", "synthetic", "--budget", "5parsecs"}, {"--budget", "unknown unit 'parsecs'"}, dir);
  check_usage_error({"tune", "synthetic", "--budget=abc"}, {"--budget", "does not start with a number"}, dir);
  check_usage_error({"tune", "synthetic", "--budget", "10evals,20evals"}, {"--budget", "evaluation limit twice"}, dir);
  check_usage_error({"tune", "synthetic", "--budget", "0answers"}, {"--budget", "allows no answer"}, dir);
  check_usage_error({"tune", "synthetic", "--budget", "2answers,3answers"}, {"--budget", "model-answer limit twice"},
                    dir);
  check_usage_error({"tune", "synthetic", "--budget", "10evals,,2m"}, {"--budget", "empty limit"}, dir);
  check_usage_error({"tune", "synthetic", "--budget", "10evals,3gtokens"}, {"--budget", "unknown unit"}, dir);
  check_usage_error({"tune", "synthetic", "--budget", "$5x"}, {"--budget", "no unit after it"}, dir);
  check_usage_error({"tune", "synthetic", "--budget", "10evals", "--exchange", "x"}, {"--journal"}, dir);
  check_usage_error({"tune", "synthetic", "--budget", "10evals", "--strategy", "blind-llm"}, {"needs a model"}, dir);
  check_usage_error({"tune", "synthetic", "--budget", "10evals", "--seed", "x3"},
                    {"--seed: 'x3' is not a whole number"}, dir);
  check_usage_error({"tune", "synthetic", "--budget", "10evals", "--wall", "-5"}, {"--wall"}, dir);
  check_usage_error({"tune", "synthetic", "--budget", "10evals", "--focus", "a,,b"}, {"--focus"}, dir);
  check_usage_error({"tune", "synthetic", "--budget", "10evals", "--focus", "a"}, {"--focus"}, dir);
  check_usage_error({"tune", "synthetic", "--budget", "10evals", "--strategy", "nope"},
                    {"--strategy", "unknown strategy 'nope': known strategies are blind-llm, default"}, dir);
  check_usage_error({"tune", "synthetic", "--budget", "10evals", "--strategy", "sha:eta"}, {"--strategy", "eta"}, dir);
  check_usage_error({"tune", "synthetic", "--budget", "10evals", "--backend", "opencl"},
                    {"--backend", "unknown backend 'opencl'"}, dir);
  check_usage_error({"tune", "synthetic", "--budget", "10evals", "--backend", "host"}, {"host backend"}, dir);
  check_usage_error({"tune", "no-such-problem", "--budget", "10evals"}, {"problem 'no-such-problem'"}, dir);
  check_usage_error({"tune", "synthetic", "--budget", "10evals", "--resume"}, {"--resume", "--journal"}, dir);
  // The journal: missing, already there, or recording another run.
  const auto j = (dir / "j.jsonl").string();
  check_usage_error({"tune", "synthetic", "--budget", "10evals", "--journal", j, "--resume"}, {"does not exist"}, dir);
  const auto first = run_cli({"tune", "synthetic", "--budget", "10evals", "--journal", j, "--seed", "3"}, dir);
  REQUIRE_MESSAGE(first.exit_code == 0, first.err);
  check_usage_error({"tune", "synthetic", "--budget", "10evals", "--journal", j}, {"already exists"}, dir);
  check_usage_error({"tune", "synthetic", "--budget", "10evals", "--journal", j, "--resume", "--seed", "4"},
                    {"seed 3; this run has seed 4: use --seed 3"}, dir);
}

TEST_CASE("cli: tune prints the summary, and a repeated option takes its last value") {
  temp_dir dir("cli_summary");
  // --budget given twice: the last one counts (scripts append options to override their defaults).
  const auto r = run_cli({"tune", "synthetic", "--budget", "500evals", "--seed", "2", "--no-progress", "--budget",
                          "40evals", "--strategy", "sha:eta=3"},
                         dir);
  REQUIRE_MESSAGE(r.exit_code == 0, r.err);
  CHECK(contains(r.out, "kernelbrain tune synthetic:7 (backend synthetic)"));
  CHECK(summary(r.out, "strategy") == "sha:eta=3");
  CHECK(summary(r.out, "seed") == "2");
  CHECK(summary(r.out, "budget") == "40evals");
  CHECK(summary(r.out, "stop reason") == "evaluation budget spent");
  CHECK(summary(r.out, "evaluations") == "40");
  CHECK(contains(summary(r.out, "speedup"), "x over the reference"));
  CHECK_FALSE(summary(r.out, "score").empty());
  CHECK(contains(r.out, "% of floor"));  // the per-shape table
  CHECK(r.err.empty());                  // --no-progress: nothing on stderr
}

TEST_CASE("cli: --progress and --no-progress: the last one given wins") {
  temp_dir dir("cli_progress");
  const std::vector<std::string> base{"tune", "synthetic", "--budget", "5evals"};
  auto with = [&](std::vector<std::string> extra) {
    auto a = base;
    a.insert(a.end(), extra.begin(), extra.end());
    return a;
  };
  const auto drawn = run_cli(with({"--no-progress", "--progress"}), dir);
  REQUIRE_MESSAGE(drawn.exit_code == 0, drawn.err);
  CHECK_MESSAGE(contains(drawn.err, "evaluated 5"), drawn.err);  // stderr is a file: drawn only when asked
  const auto quiet = run_cli(with({"--progress", "--no-progress"}), dir);
  REQUIRE_MESSAGE(quiet.exit_code == 0, quiet.err);
  CHECK(quiet.err.empty());
}
TEST_CASE("cli: eval runs one candidate through the gate and every shape, and says why it rejects one") {
  kb_test::temp_dir dir("cli-eval");
  const std::string problem_dir = std::string(KB_SOURCE_DIR) + "/examples/problems/softmax";
  const auto seed = kb_test::slurp(problem_dir + "/seed.cpp");
  // A correct kernel: passes, with a timing per shape of the problem and a speedup.
  auto r = kb_test::run_cli({"eval", problem_dir, problem_dir + "/seed.cpp"}, dir);
  INFO(r.out, r.err);
  CHECK(r.exit_code == 0);
  CHECK(kb_test::summary(r.out, "verdict") == "pass");
  for (auto const* shape : {"64x1024", "67x1031", "256x4096", "1024x8192"}) CHECK(kb_test::contains(r.out, shape));
  CHECK(kb_test::contains(kb_test::summary(r.out, "speedup"), "x"));
  // The same kernel as a model's reply (prose around a fenced block, no #include <cmath>: repaired).
  auto reply = "Here it is.\n\n```cpp\n" + seed + "```\nThat should do.\n";
  reply.erase(reply.find("#include <cmath>"), 16);
  kb_test::spit((dir / "answer.md").string(), reply);
  r = kb_test::run_cli({"eval", problem_dir, (dir / "answer.md").string()}, dir);
  INFO(r.out, r.err);
  CHECK(r.exit_code == 0);
  CHECK(kb_test::contains(r.out, "reply repaired"));
  // A wrong kernel (zeros): exit 3 and the correctness verdict, no timings.
  kb_test::spit((dir / "zeros.cpp").string(),
                "#include <cstring>\n#include \"kernelbrain/evaluate/host_abi.h\"\nextern \"C\" void kb_kernel(const "
                "kb_args* a) { std::memset(a->outputs[0], 0, sizeof(float) * a->dims[0] * a->dims[1]); }\n");
  r = kb_test::run_cli({"eval", problem_dir, (dir / "zeros.cpp").string()}, dir);
  INFO(r.out, r.err);
  CHECK(r.exit_code == 3);
  CHECK(kb_test::summary(r.out, "verdict").starts_with("correctness"));
  CHECK_FALSE(kb_test::contains(r.out, "1024x8192"));
  // A correct kernel that forges its timing (says "done" before it works): rejected, naming the mismatch.
  r = kb_test::run_cli({"eval", problem_dir, std::string(KB_SOURCE_DIR) + "/tests/hostile_softmax/forged_timing.cpp"},
                       dir);
  INFO(r.out, r.err);
  CHECK(r.exit_code == 3);
  CHECK(kb_test::summary(r.out, "verdict").starts_with("impossible"));
  CHECK(kb_test::contains(r.out, "timing mismatch"));
  // A reply without code and a missing file are usage errors (exit 2) that say so.
  kb_test::spit((dir / "prose.md").string(), "I would rather not write code today.\n");
  r = kb_test::run_cli({"eval", problem_dir, (dir / "prose.md").string()}, dir);
  CHECK(r.exit_code == 2);
  CHECK(kb_test::contains(r.err, "no usable kernel"));
  r = kb_test::run_cli({"eval", problem_dir, (dir / "missing.cpp").string()}, dir);
  CHECK(r.exit_code == 2);
  CHECK(kb_test::contains(r.err, "cannot be read"));
}

TEST_CASE("cli: check measures the reference against its floors, gates the seed and templates, and reports findings") {
  kb_test::temp_dir dir("cli-check");
  const std::string shipped = std::string(KB_SOURCE_DIR) + "/examples/problems/softmax";
  auto r = kb_test::run_cli({"check", shipped}, dir);
  INFO(r.out, r.err);
  CHECK(r.exit_code == 0);
  CHECK(kb_test::contains(r.out, "no findings"));
  for (auto const* shape : {"64x1024", "67x1031", "256x4096", "1024x8192"}) CHECK(kb_test::contains(r.out, shape));
  CHECK(kb_test::contains(r.out, "gate        static source policy"));
  CHECK(kb_test::contains(r.out, "rung        confirm"));
  // A copy with a machine 10^6 times too slow (every reference "beats" its floor) and a template that
  // does not compile: two findings, exit 3.
  const auto copy = dir / "softmax";
  std::filesystem::copy(shipped, copy, std::filesystem::copy_options::recursive);
  auto json = kb_test::slurp((copy / "problem.json").string());
  const std::string fast = "\"bytes_per_second\": 2e12";
  const auto at = json.find(fast);
  REQUIRE(at != std::string::npos);
  json.replace(at, fast.size(), "\"bytes_per_second\": 2e6");
  kb_test::spit(copy / "problem.json", json);
  kb_test::spit(copy / "templates" / "vectorized.cpp", "this is not C++ ${VEC} ${UNROLL} ${EXP}\n");
  r = kb_test::run_cli({"check", copy.string()}, dir);
  INFO(r.out, r.err);
  CHECK(r.exit_code == 3);
  CHECK(kb_test::contains(r.out, "is below the roofline floor"));
  CHECK(kb_test::contains(r.out, "FINDING: default point"));
  CHECK_FALSE(kb_test::contains(r.out, "no findings"));
  // A problem that does not load is a usage error naming it.
  kb_test::spit(copy / "problem.json", "{\"name\": 3}");
  r = kb_test::run_cli({"check", copy.string()}, dir);
  CHECK(r.exit_code == 2);
  CHECK(kb_test::contains(r.err, "name"));
}

#endif  // KB_CLI_PATH
