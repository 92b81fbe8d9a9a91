// The CUDA backend: candidates are CUDA C++ (NVRTC, sm_90) plus a declarative launch plan. The
// search process never creates a CUDA context: compiles run in killable children
// (kernelbrain-cuda-worker --compile, under a wall-clock limit, cached by content; proposed
// candidates are compiled ahead, in parallel, one child per spare CPU core), and kernels
// run in a serving worker (kernelbrain-cuda-worker --serve cuda) under a watchdog. A crash or sticky
// CUDA error ends that worker (stage::crash), a hang is killed (stage::timeout), and a fresh worker
// takes over. Entry points and resources are read from the cubin (backends/cuda/cubin.hpp). Linux only.
// Bodies: impl/cuda.ipp (no CUDA headers there).
#pragma once
#include "kernelbrain/config.hpp"
#if !defined(__linux__)
#error "kernelbrain/backends/cuda/evaluator.hpp: the CUDA backend needs Linux"
#endif
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>
#include "kernelbrain/backends/cuda/options.hpp"
#include "kernelbrain/backends/cuda/ptxas_report.hpp"
#include "kernelbrain/core/evaluator.hpp"

namespace kernelbrain {

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
  [[nodiscard]] KERNELBRAIN_DECL verdict assure(candidate const& c, std::uint64_t seed) override;
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
#include "kernelbrain/backends/cuda/impl/evaluator.ipp"
#endif
