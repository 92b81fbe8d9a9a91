// cuda_sanitizer_gate: compute-sanitizer as a stage of the CUDA backend (cuda_evaluator::assure, which the
// engine calls before an assured rung: evaluator::assure, rung::assure). It finds the tool,
// runs every configured sanitizer tool at once on one candidate plan (kernelbrain-cuda-worker
// --sanitize, under the worker's --exec supervision), reads each run with sanitizer_verdict, and
// remembers verdicts per candidate and passes per template family (backends/common/sanitizer_memory.hpp: an
// instance of a family's template is covered by the family's first pass).
#pragma once
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <set>
#include <string>
#include <thread>
#include <unordered_map>
#include <utility>
#include <vector>
#include "kernelbrain/backends/common/sanitizer_memory.hpp"
#include "kernelbrain/backends/cuda/detail/protocol.hpp"
#include "kernelbrain/backends/cuda/options.hpp"
#include "kernelbrain/config.hpp"
#include "kernelbrain/core/candidate.hpp"
#include "kernelbrain/core/problem.hpp"
#include "kernelbrain/core/template_space.hpp"
#include "kernelbrain/core/verdict.hpp"
#include "kernelbrain/isolation/worker_process.hpp"

namespace kernelbrain {
// Declared with the CUDA evaluator (backends/cuda/evaluator.hpp), defined in its body
// (backends/cuda/impl/evaluator.ipp), which is where this header is used.
[[nodiscard]] KERNELBRAIN_DECL verdict sanitizer_verdict(std::string const& tool, bool timed_out, int wait_status,
                                                         std::string const& output, double limit);
}  // namespace kernelbrain

namespace kernelbrain::detail::cuda {

/// compute-sanitizer: cuda_options::sanitizer_path, $KERNELBRAIN_SANITIZER, PATH, $CUDA_HOME/bin,
/// /usr/local/cuda/bin; empty when none is there (the stage is then off, and the fingerprint says so).
/// Throws kernelbrain::error when the option or the variable names something not executable.
inline std::string find_sanitizer(cuda_options const& opt) {
  auto named = find_named_executable(
      {.backend = "cuda backend", .option = "sanitizer_path", .env_var = "KERNELBRAIN_SANITIZER"}, opt.sanitizer_path);
  if (!named.empty()) return named;
  std::vector<std::string> dirs = cuda_tool_dirs();
  for (auto const& d : dirs)
    if (!d.empty() && is_executable_file(d + "/compute-sanitizer")) return d + "/compute-sanitizer";
  return {};
}

class sanitizer_gate {
 public:
  /// Everything passed by reference must outlive this object; `spent`: where the tools' wall time is
  /// charged (nothing else runs on the device meanwhile). `env`: added to the environment of every
  /// tool run, and so of the worker the tool starts (the evaluator's CUDA_VISIBLE_DEVICES).
  sanitizer_gate(problem const& p, cuda_options const& opt, std::string const& worker_exe, double* spent,
                 std::vector<std::string> env = {})
      : prob_(p), opt_(opt), worker_exe_(worker_exe), spent_(spent), env_(std::move(env)) {}

  /// Turns the stage on with `compute_sanitizer` (empty: off); request files go to `request_dir`.
  void use(std::string compute_sanitizer, std::string request_dir) {
    tool_ = std::move(compute_sanitizer);
    dir_ = std::move(request_dir);
  }

  /// The verdict on `c`, run once as `q` (a request for the sanitizer shape; `where` names that
  /// shape in messages), unless remembered or covered by its family.
  verdict check(candidate const& c, cuda_protocol::run_request const& q, std::string const& where) {
    if (tool_.empty() || opt_.sanitizer_tools.empty()) return verdict::pass();
    if (auto v = memory_.known(c)) return *v;
    static std::atomic<std::uint64_t> serial{0};
    const auto request = (std::filesystem::path(dir_) /
                          ("sanitize-" + std::to_string(::getpid()) + "-" + std::to_string(serial++) + ".req"))
                             .string();
    {
      std::ofstream out(request, std::ios::binary);
      out << cuda_protocol::encode(q);
      if (!out) return verdict::reject(stage::infrastructure, "cannot write the sanitizer request " + request);
    }
    const auto start = std::chrono::steady_clock::now();
    std::vector<captured_run> runs(opt_.sanitizer_tools.size());
    {
      std::vector<std::thread> threads;
      for (std::size_t t = 0; t < opt_.sanitizer_tools.size(); ++t)
        threads.emplace_back([&, t] {
          auto const& tool = opt_.sanitizer_tools[t];
          std::vector<std::string> argv = {worker_exe_, "--exec",           "--", tool_,           "--tool",
                                           tool,        "--error-exitcode", "86", "--print-limit", "4"};
          if (tool == "memcheck") argv.insert(argv.end(), {"--padding", "256"});
          argv.insert(argv.end(), {worker_exe_, "--sanitize", request});
          runs[t] = run_captured(argv, ceil_millis(opt_.sanitizer_timeout), 256 * 1024, env_);
        });
      for (auto& t : threads) t.join();
    }
    if (spent_) *spent_ += std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    std::error_code ec;
    std::filesystem::remove(request, ec);
    verdict v = verdict::pass();
    for (std::size_t t = 0; t < runs.size() && v; ++t) {
      auto const& r = runs[t];
      v = r.started
              ? sanitizer_verdict(opt_.sanitizer_tools[t], r.timed_out, r.wait_status, r.output, opt_.sanitizer_timeout)
              : verdict::reject(stage::infrastructure, "cannot start compute-sanitizer: " + r.output);
    }
    if (v.where == stage::sanitizer) v.detail = where + ": " + v.detail;
    memory_.record(c, v);
    return v;
  }

  [[nodiscard]] std::string const& tool() const noexcept { return tool_; }
  [[nodiscard]] std::size_t runs() const noexcept { return memory_.runs(); }

 private:
  problem const& prob_;
  cuda_options const& opt_;
  std::string const& worker_exe_;
  double* spent_;
  std::vector<std::string> env_;    ///< added to each tool run's environment
  std::string tool_;                ///< compute-sanitizer, or empty: the stage is off
  std::string dir_;                 ///< where request files are written
  sanitizer_memory memory_{prob_};  ///< which candidates run, and their verdicts
};

}  // namespace kernelbrain::detail::cuda
