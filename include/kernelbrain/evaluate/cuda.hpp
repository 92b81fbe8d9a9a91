// The CUDA backend: candidates are CUDA C++ (NVRTC, sm_90) plus a declarative launch plan. The
// search process never creates a CUDA context: compiles run in killable children
// (kernelbrain-cuda-worker --compile, under a wall-clock limit, cached by content; proposed
// candidates are compiled ahead, in parallel, one child per spare CPU core), and kernels
// run in a serving worker (kernelbrain-cuda-worker --serve cuda) under a watchdog. A crash or sticky
// CUDA error ends that worker (stage::crash), a hang is killed (stage::timeout), and a fresh worker
// takes over. Entry points and resources are read from the cubin (evaluate/cubin.hpp). Linux only.
// Bodies: impl/cuda.ipp (no CUDA headers there).
#pragma once
#include "kernelbrain/config.hpp"
#if !defined(__linux__)
#error "kernelbrain/evaluate/cuda.hpp: the CUDA backend needs Linux"
#endif
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>
#include "kernelbrain/core/evaluator.hpp"
#include "kernelbrain/evaluate/ptxas_report.hpp"

namespace kernelbrain {

struct cuda_options {
  std::string
      worker_path;  ///< kernelbrain-cuda-worker; empty: $KERNELBRAIN_CUDA_WORKER, next to this program, the build's
  std::string cache_dir;  ///< cubins; empty: $KERNELBRAIN_CACHE_DIR, $XDG_CACHE_HOME/kernelbrain, ~/.cache/kernelbrain
  /// The GPU this evaluator runs on, as the CUDA_VISIBLE_DEVICES value its GPU children get (the
  /// serving worker, the --version probe, compute-sanitizer and ncu runs): "1", a UUID "GPU-...", a
  /// MIG id, anything CUDA_VISIBLE_DEVICES accepts; the children then see that one device as device 0.
  /// One evaluator per GPU (cuda_visible_devices() lists the values) puts each one's work on its own.
  /// It is read by CUDA against the whole machine, not against this process's own
  /// CUDA_VISIBLE_DEVICES, which it replaces. Empty (the default): the children inherit this
  /// process's CUDA_VISIBLE_DEVICES and use the first device it shows. The constructor throws when
  /// the value shows the worker no device.
  std::string visible_device;
  std::vector<std::string> nvrtc_options = {"--gpu-architecture=sm_90", "-default-device", "--std=c++17"};
  double compile_timeout = 60;    ///< wall-clock seconds per NVRTC compile, then the compiler process is killed
  double run_timeout = 30;        ///< seconds of worker silence (one plan run, a trial) before the watchdog kills it
  std::uint64_t flush_bytes = 0;  ///< written before every timed sample; 0: twice the device's L2
  int baseline_samples = 5;
  int baseline_warmup = 1;
  /// Timed calls whose outputs are checked against the reference, chosen at random (from the
  /// measurement's seed) besides the last call, which is always checked.
  int checked_timed_calls = 1;
  /// Extra correctness trials with each input's adversarial cases (problem.json `adversarial`) at one
  /// correctness shape: the smallest of tier "odd" (else the smallest of tier "smoke").
  bool adversarial_inputs = true;
  /// compute-sanitizer as a gate stage (stage::sanitizer) on the first admitted point of each template
  /// family and on every candidate that is not a template instance, at the smallest correctness shape.
  bool sanitize = true;
  std::string sanitizer_path;  ///< empty: $KERNELBRAIN_SANITIZER, compute-sanitizer on PATH, $CUDA_HOME/bin,
                               ///< /usr/local/cuda/bin
  std::vector<std::string> sanitizer_tools = {"memcheck", "racecheck", "synccheck", "initcheck"};
  double sanitizer_timeout = 180;  ///< wall-clock seconds per tool run (the tools run in parallel)
  /// Diagnoses at rungs with rung::profile (the standard ladder's top rung), for every passing
  /// measurement: the static one (registers, spills, occupancy, roofline position) always, and Nsight
  /// Compute's counters of one run of the candidate at the rung's largest shape (once per candidate;
  /// its wall time is charged as device time) where ncu is found and works. Without ncu, or when it
  /// fails, the diagnosis is the static one and says why (docs/profiling.md). false: no ncu runs.
  bool profile = true;
  std::string ncu_path;                            ///< empty: $NCU, ncu on PATH, $CUDA_HOME/bin, /usr/local/cuda/bin,
                                                   ///< /opt/nvidia/nsight-compute/*/
  double profile_timeout = 180;                    ///< wall-clock seconds per ncu run, then it is killed
  std::function<void(int pid)> on_timing_request;  ///< test hook
};

class cuda_evaluator final : public evaluator {
 public:
  /// Validates the problem (backend "cuda", reference launch plan), finds the worker, queries the
  /// NVRTC version and the device (in a child process) and compiles the reference.
  explicit KERNELBRAIN_DECL cuda_evaluator(problem const& p, cuda_options o = {});
  KERNELBRAIN_DECL ~cuda_evaluator() override;
  cuda_evaluator(cuda_evaluator const&) = delete;
  cuda_evaluator& operator=(cuda_evaluator const&) = delete;

  [[nodiscard]] KERNELBRAIN_DECL std::string fingerprint() const override;
  /// Starts compiling `c` in the background (a pool of one NVRTC process per spare CPU core).
  KERNELBRAIN_DECL void prefetch(candidate const& c) override;
  [[nodiscard]] KERNELBRAIN_DECL verdict build(candidate const& c) override;
  [[nodiscard]] KERNELBRAIN_DECL verdict check(candidate const& c, std::span<std::size_t const> shapes, int trials,
                                               std::uint64_t seed) override;
  [[nodiscard]] KERNELBRAIN_DECL measurement measure(candidate const& c, rung const& r,
                                                     measure_request const& req) override;
  [[nodiscard]] KERNELBRAIN_DECL baseline measure_baseline(problem const& p) override;
  [[nodiscard]] KERNELBRAIN_DECL double take_device_seconds() override;

  /// Static resources of `c` (registers, spills, shared memory, occupancy), building it first;
  /// nullopt when it does not build. Needs no GPU: they come from the cubin.
  [[nodiscard]] KERNELBRAIN_DECL std::optional<resources> resources_of(candidate const& c);

  /// Wall seconds of the NVRTC run that compiled `c` (0 when its cubin came from the cache); nullopt
  /// before `c` was built.
  [[nodiscard]] KERNELBRAIN_DECL std::optional<double> compile_seconds(candidate const& c) const;
  [[nodiscard]] KERNELBRAIN_DECL std::size_t worker_starts() const;
  [[nodiscard]] KERNELBRAIN_DECL std::size_t compiles() const;
  [[nodiscard]] KERNELBRAIN_DECL std::size_t cache_hits() const;
  [[nodiscard]] KERNELBRAIN_DECL std::size_t sanitizer_runs() const;  ///< candidates run under compute-sanitizer
  /// The compute-sanitizer this evaluator uses; empty when the stage is off or none was found.
  [[nodiscard]] KERNELBRAIN_DECL std::string const& sanitizer() const;
  /// The ncu this evaluator profiles with; empty when profiling is off or none was found.
  [[nodiscard]] KERNELBRAIN_DECL std::string profiler() const;
  [[nodiscard]] KERNELBRAIN_DECL std::size_t profiler_runs() const;  ///< candidates run under ncu
  /// cuda_options::visible_device: the device this evaluator's children run on, for diagnostics
  /// (the fingerprint names the device's model, not which one it is); empty: the inherited one.
  [[nodiscard]] KERNELBRAIN_DECL std::string const& device() const;

 private:
  struct state;
  std::unique_ptr<state> s_;
};

/// The verdict of one compute-sanitizer run (`tool`) of kernelbrain-cuda-worker --sanitize, from its
/// output: pass, stage::sanitizer naming the first error, or stage::infrastructure when the tool did
/// not run the candidate. `limit` is the run's wall-clock limit, for the message.
[[nodiscard]] KERNELBRAIN_DECL verdict sanitizer_verdict(std::string const& tool, bool timed_out, int wait_status,
                                                         std::string const& output, double limit);

/// The worker executable (see cuda_options::worker_path). Throws kernelbrain::error naming where it looked.
[[nodiscard]] KERNELBRAIN_DECL std::string find_cuda_worker(std::string const& explicit_path = {});

/// The devices an evaluation pool can use, one cuda_evaluator each, as cuda_options::visible_device
/// values. When this process has CUDA_VISIBLE_DEVICES set and not empty: its comma-separated entries,
/// trimmed, in order, up to the first that is empty or "-1" (CUDA ignores the entries from the first
/// invalid one on, and "-1" is the usual way to say none), a repeated entry once; they are not checked
/// against the machine (an evaluator given one that names no device throws). Otherwise "0" to "N-1",
/// N being the devices the worker (`worker_path`, found as cuda_options::worker_path is) counts in a
/// child process, which creates no CUDA context; none without a driver. Empty when there is no device.
/// Throws kernelbrain::error when the worker is needed and cannot be found or run.
[[nodiscard]] KERNELBRAIN_DECL std::vector<std::string> cuda_visible_devices(std::string const& worker_path = {});

}  // namespace kernelbrain

#if KERNELBRAIN_HEADER_ONLY
#include "kernelbrain/evaluate/impl/cuda.ipp"
#endif
