// cuda_profiler: Nsight Compute (ncu) as the CUDA backend's profiler. It finds ncu, runs one
// candidate plan at one shape under it (kernelbrain-cuda-worker --profile-once, started by ncu
// under the worker's --exec supervision, with a wall-clock limit), reads ncu's CSV
// (backends/cuda/diagnosis.hpp: parse_ncu_csv, aggregate_ncu) and says why when there is no profile: ncu
// missing, no permission to read the counters, a failure, a timeout. Never throws for any of those:
// a profile is advice.
//
// The command, with METRICS the comma-separated backends/cuda/diagnosis.hpp ncu_metrics:
//   kernelbrain-cuda-worker --exec -- NCU --csv --page raw --print-units base --clock-control none
//       --profile-from-start off --metrics METRICS kernelbrain-cuda-worker --profile-once REQUEST
// The worker runs the plan once untimed (warm-up), then once between cuProfilerStart and
// cuProfilerStop: only the candidate's own launches of that run are profiled (not the input
// generation or the poisoning). ncu replays each launch as often as its counters need, restoring
// memory and flushing caches before each pass (its defaults: --replay-mode kernel, --cache-control all).
#pragma once
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <string>
#include <string_view>
#include <utility>
#include <vector>
#include "kernelbrain/backends/cuda/detail/protocol.hpp"
#include "kernelbrain/backends/cuda/diagnosis.hpp"
#include "kernelbrain/isolation/worker_process.hpp"

namespace kernelbrain::detail::cuda {

/// Where ncu is, or why there is none ("ncu: not found (...)").
struct ncu_location {
  std::string path;
  std::string why_not;
};

/// ncu: `explicit_path` (cuda_options::ncu_path), else $NCU (either is used as given: one that is not
/// an executable file is reported, not passed over), else ncu on PATH, $CUDA_HOME/bin,
/// /usr/local/cuda/bin, /opt/nvidia/nsight-compute/*/ (the last version by name).
inline ncu_location find_ncu(std::string const& explicit_path = {}) {
  auto named = [](std::string const& p, std::string const& what) -> ncu_location {
    if (is_executable_file(p)) return {p, {}};
    return {{}, "ncu: not found (" + what + "=" + p + " is not an executable file)"};
  };
  if (!explicit_path.empty()) return named(explicit_path, "cuda_options::ncu_path");
  if (char const* e = std::getenv("NCU"); e && *e) return named(e, "NCU");
  std::vector<std::string> dirs = cuda_tool_dirs();
  std::vector<std::string> nsight;
  std::error_code ec;
  for (std::filesystem::directory_iterator it("/opt/nvidia/nsight-compute", ec), end; !ec && it != end;
       it.increment(ec))
    nsight.push_back(it->path().string());
  std::sort(nsight.rbegin(), nsight.rend());
  dirs.insert(dirs.end(), nsight.begin(), nsight.end());
  for (auto const& d : dirs)
    if (!d.empty() && is_executable_file(d + "/ncu")) return {d + "/ncu", {}};
  return {{},
          "ncu: not found (NCU unset; not on PATH, in $CUDA_HOME/bin, /usr/local/cuda/bin or "
          "/opt/nvidia/nsight-compute/*)"};
}

/// The command line that profiles the run request in the file `request` (see the top of this file).
inline std::vector<std::string> ncu_command(std::string const& worker_exe, std::string const& ncu,
                                            std::vector<std::string> const& metrics, std::string const& request,
                                            bool base_units = true) {
  std::string list;
  for (auto const& m : metrics) list += (list.empty() ? "" : ",") + m;
  std::vector<std::string> argv = {worker_exe, "--exec", "--", ncu, "--csv", "--page", "raw"};
  if (base_units) argv.insert(argv.end(), {"--print-units", "base"});
  argv.insert(argv.end(), {"--clock-control", "none", "--profile-from-start", "off", "--metrics", list, worker_exe,
                           "--profile-once", request});
  return argv;
}

/// What one profiling gave.
struct profile_outcome {
  std::map<std::string, double> metrics;  ///< aggregate_ncu over the profiled launches; empty without a profile
  std::size_t launches = 0;               ///< profiled kernel launches
  std::string why_not;                    ///< empty when profiled; else one line, "ncu: ..."
  double seconds = 0;                     ///< wall time of the ncu runs (charged as device time)
};

/// The last `n` characters of `s` on one line, for messages.
inline std::string one_line_tail(std::string const& s, std::size_t n = 300) {
  std::string t = s.size() > n ? "..." + s.substr(s.size() - n) : s;
  for (char& c : t)
    if (c == '\n' || c == '\r') c = ' ';
  while (!t.empty() && t.back() == ' ') t.pop_back();
  return t;
}

/// The "==ERROR==" lines of ncu's output, joined on one line.
inline std::string ncu_errors(std::string const& output) {
  std::string out;
  std::size_t b = 0;
  while (b < output.size()) {
    auto e = output.find('\n', b);
    if (e == std::string::npos) e = output.size();
    const auto line = output.substr(b, e - b);
    if (line.find("==ERROR==") != std::string::npos) out += (out.empty() ? "" : " / ") + line;
    b = e + 1;
  }
  return one_line_tail(out, 400);
}

/// The metrics of `asked` that ncu's error lines name (a metric this ncu does not know); empty when
/// none is named, or when the lines name most of them (an error about the whole list, not a name).
inline std::vector<std::string> rejected_metrics(std::string const& output, std::vector<std::string> const& asked) {
  std::vector<std::string> bad;
  std::size_t b = 0;
  while (b < output.size()) {
    auto e = output.find('\n', b);
    if (e == std::string::npos) e = output.size();
    const std::string_view line(output.data() + b, e - b);
    if (line.find("ERROR") != std::string_view::npos)
      for (auto const& m : asked)
        if (line.find(m) != std::string_view::npos && std::find(bad.begin(), bad.end(), m) == bad.end())
          bad.push_back(m);
    b = e + 1;
  }
  if (bad.size() * 2 > asked.size()) bad.clear();
  return bad;
}

/// Whether ncu's output rejects its command-line option `option` ("unrecognised option '--print-units'").
inline bool rejects_option(std::string const& output, std::string_view option) {
  std::size_t b = 0;
  while (b < output.size()) {
    auto e = output.find('\n', b);
    if (e == std::string::npos) e = output.size();
    const std::string_view line(output.data() + b, e - b);
    if (line.find(option) != std::string_view::npos &&
        (line.find("unrecogni") != std::string_view::npos || line.find("option") != std::string_view::npos))
      return true;
    b = e + 1;
  }
  return false;
}

/// Why a run of ncu gave no profile, and whether trying again later is pointless (the same machine
/// will refuse again: no permission, no profiler library).
struct ncu_failure {
  std::string why;
  bool permanent = false;
};
inline ncu_failure classify_ncu_failure(captured_run const& r, double limit) {
  auto has = [&](std::string_view s) { return r.output.find(s) != std::string::npos; };
  if (!r.started) return {"ncu: cannot start: " + one_line_tail(r.output), true};
  if (r.timed_out)
    return {"ncu: did not finish within " + std::to_string(static_cast<long long>(limit)) +
                " s (cuda_options::profile_timeout)",
            false};
  if (has("ERR_NVGPUCTRPERM"))
    return {
        "ncu: no permission to read counters (ERR_NVGPUCTRPERM: see "
        "https://developer.nvidia.com/ERR_NVGPUCTRPERM)",
        true};
  if (has("LibraryNotLoaded") || has("Failed to initialize the profiler"))
    return {"ncu: cannot initialise its profiler on this machine: " + ncu_errors(r.output), true};
  if (has("kernelbrain-profile: failed") || has("kernelbrain-cuda-worker: sticky CUDA error") ||
      has("kernelbrain-profile: bad request"))
    return {"ncu: the profiled run failed: " + one_line_tail(r.output), false};
  const auto errors = ncu_errors(r.output);
  if (has("kernelbrain-profile: ok"))
    return {"ncu: profiled no kernel launch" + (errors.empty() ? ": " + one_line_tail(r.output) : ": " + errors),
            false};
  return {"ncu: failed (" + describe_wait_status(r.wait_status) +
              "): " + (errors.empty() ? one_line_tail(r.output) : errors),
          false};
}

/// Runs candidates under ncu (see the top of this file). Not thread-safe: the CUDA evaluator calls it
/// under its lock.
class ncu_profiler {
 public:
  /// `worker_exe` must outlive this object; `spent`: where the wall time of every ncu run is charged
  /// (nothing else runs on the device meanwhile); `timeout`: seconds per ncu run; `env`: added to the
  /// environment of every ncu run, and so of the worker ncu starts (the evaluator's CUDA_VISIBLE_DEVICES).
  ncu_profiler(std::string const& worker_exe, double timeout, double* spent, std::vector<std::string> env = {})
      : worker_exe_(worker_exe), timeout_(timeout), spent_(spent), env_(std::move(env)) {
    for (auto m : ncu_metrics) metrics_.emplace_back(m);
  }

  /// Turns profiling on with ncu at `where.path` (else off, for `where.why_not`); request files go to
  /// `request_dir`.
  void use(ncu_location where, std::string request_dir) {
    ncu_ = std::move(where.path);
    off_ = ncu_.empty() ? (where.why_not.empty() ? std::string("ncu: profiling is off") : where.why_not) : "";
    dir_ = std::move(request_dir);
  }

  /// The ncu in use; empty when profiling is off.
  [[nodiscard]] std::string const& tool() const noexcept { return ncu_; }
  /// Why nothing is profiled (no ncu, or a failure that would repeat); empty while profiling works.
  [[nodiscard]] std::string const& why_not() const noexcept { return off_; }
  [[nodiscard]] std::size_t runs() const noexcept { return runs_; }
  /// The metrics asked for (ncu_metrics less any this ncu rejected).
  [[nodiscard]] std::vector<std::string> const& metrics() const noexcept { return metrics_; }

  /// Profiles the candidate plan of `q` at its shape (q.warmup untimed runs, then q.samples profiled
  /// ones). A metric that ncu rejects by name is dropped and the run repeated (at most twice more).
  profile_outcome profile(cuda_protocol::run_request const& q) {
    profile_outcome out;
    if (!off_.empty()) {
      out.why_not = off_;
      return out;
    }
    static std::atomic<std::uint64_t> serial{0};
    const auto request = (std::filesystem::path(dir_) /
                          ("profile-" + std::to_string(::getpid()) + "-" + std::to_string(serial++) + ".req"))
                             .string();
    {
      std::ofstream f(request, std::ios::binary);
      f << cuda_protocol::encode(q);
      if (!f) {
        out.why_not = "ncu: cannot write the request file " + request;
        return out;
      }
    }
    ++runs_;
    for (int attempt = 0; attempt < 3; ++attempt) {
      const auto r = run_captured(ncu_command(worker_exe_, ncu_, metrics_, request, base_units_), ceil_millis(timeout_),
                                  std::size_t{4} << 20, env_);
      out.seconds += r.seconds;
      if (spent_) *spent_ += r.seconds;
      const auto table = parse_ncu_csv(r.output);
      if (r.succeeded() && !table.launches.empty() && r.output.find("kernelbrain-profile: ok") != std::string::npos) {
        out.metrics = aggregate_ncu(table.launches);
        out.launches = table.launches.size();
        out.why_not.clear();
        break;
      }
      const auto f = classify_ncu_failure(r, timeout_);
      out.why_not = f.why;
      if (f.permanent) {
        off_ = f.why;
        break;
      }
      if (r.timed_out || !r.started) break;
      if (auto bad = rejected_metrics(r.output, metrics_); !bad.empty()) {
        std::erase_if(metrics_,
                      [&](std::string const& m) { return std::find(bad.begin(), bad.end(), m) != bad.end(); });
        continue;
      }
      if (base_units_ && rejects_option(r.output, "print-units")) {  // an ncu without the option
        base_units_ = false;
        continue;
      }
      break;
    }
    std::error_code ec;
    std::filesystem::remove(request, ec);
    return out;
  }

 private:
  std::string const& worker_exe_;
  double timeout_;
  double* spent_;
  std::vector<std::string> env_;
  std::string ncu_;
  std::string off_ = "ncu: profiling is off";
  std::string dir_;
  std::vector<std::string> metrics_;
  bool base_units_ = true;
  std::size_t runs_ = 0;
};

}  // namespace kernelbrain::detail::cuda
