// The host backend: candidates are C++ sources (the ABI in host_abi.h) compiled by the system
// compiler and run in an isolated worker process; the trusted parent draws the inputs, checks every
// output element and decides. The CPU analogue of the CUDA backend, so the whole loop runs in CI.
// Linux only. Bodies: impl/host.ipp (see kernelbrain/config.hpp).
#pragma once
#include "kernelbrain/config.hpp"
#if !defined(__linux__)
#error "kernelbrain/evaluate/host.hpp: the host backend needs Linux (posix_spawn, memfd_create, /proc)"
#endif
#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <vector>
#include "kernelbrain/core/evaluator.hpp"
#include "kernelbrain/evaluate/source_policy.hpp"

namespace kernelbrain {

struct host_options {
  // -- where things are
  std::string worker_path;  ///< kernelbrain-host-worker; empty: $KERNELBRAIN_HOST_WORKER, next to this program, the
                            ///< build tree's
  std::string cache_dir;    ///< compiled artifacts; empty: $KERNELBRAIN_CACHE_DIR, $XDG_CACHE_HOME/kernelbrain,
                            ///< ~/.cache/kernelbrain
  std::string compiler = "c++";
  std::vector<std::string> flags = {"-std=c++20", "-O3", "-march=native"};  ///< -fPIC -shared are always added
  std::string include_dir;  ///< holds kernelbrain/evaluate/host_abi.h; empty: this installation's include directory
  // -- limits
  double compile_timeout = 60;  ///< wall-clock seconds per compile, then the compiler is killed
  std::uint64_t compile_memory = std::uint64_t{2} << 30;  ///< compiler address space
  /// Background compiles of proposed candidates (evaluator::prefetch). 0, the default: none — here
  /// the timings run on the CPU too, and a compiler running beside them disturbs them (on two cores
  /// it made searches slower, not faster). Give it spare cores only.
  unsigned compile_threads = 0;
  double run_timeout = 10;  ///< seconds one kernel call may take before the watchdog kills the worker
  std::uint64_t candidate_memory = std::uint64_t{2}
                                   << 30;  ///< address space a candidate may allocate (std::bad_alloc beyond)
  // -- measurement
  std::uint64_t flush_bytes =
      0;                      ///< written before every timed call to evict the caches; 0: twice the last-level cache
  int baseline_samples = 15;  ///< timed reference runs per shape in measure_baseline
  int baseline_warmup = 2;
  bool bitwise_repeat = true;  ///< the two correctness runs must agree bit for bit (false: within the tolerance)
  /// Extra correctness trials with each input's adversarial cases (problem.json `adversarial`) at one
  /// correctness shape, whenever it is checked: the smallest of tier "odd" (else the smallest of the
  /// correctness tiers). As cuda_options::adversarial_inputs.
  bool adversarial_inputs = true;
  /// The sanitizer stage of the gate: the correctness trials of check() run again on a build with
  /// AddressSanitizer and UndefinedBehaviorSanitizer (stack-use-after-return on), in the same sandbox,
  /// for the first point of each template family and every candidate that is not a template instance;
  /// any report rejects (stage::sanitizer) with its text. Off where the compiler has no sanitizer
  /// runtimes (the fingerprint says which).
  bool sanitize = true;
  /// Added to `flags` for the sanitized build (a later -O wins over an earlier one).
  std::vector<std::string> sanitizer_flags = {"-fsanitize=address,undefined", "-fno-sanitize-recover=all",
                                              "-fno-omit-frame-pointer", "-O1"};
  std::size_t modules_per_worker = 64;  ///< a fresh worker after this many loaded candidates (bounds its memory)
  host_source_policy policy;            ///< the static source policy inspect() applies
  /// Test hook: called with the candidate worker's pid right after a timing request was sent.
  std::function<void(int pid)> on_timing_request;
};

/// Evaluates host candidates for one problem. One call at a time (calls are serialised internally).
class host_evaluator final : public evaluator {
 public:
  /// Validates the problem for this backend (dims, tensor sizes, reference), compiles and loads the
  /// reference, and probes the compiler. Throws kernelbrain::error naming what is wrong.
  explicit KERNELBRAIN_DECL host_evaluator(problem const& p, host_options o = {});
  KERNELBRAIN_DECL ~host_evaluator() override;
  host_evaluator(host_evaluator const&) = delete;
  host_evaluator& operator=(host_evaluator const&) = delete;

  [[nodiscard]] KERNELBRAIN_DECL std::string fingerprint() const override;
  [[nodiscard]] KERNELBRAIN_DECL verdict inspect(candidate const& c) override;
  /// Starts compiling `c` in the background if host_options::compile_threads > 0 and the source
  /// policy admits it.
  KERNELBRAIN_DECL void prefetch(candidate const& c) override;
  [[nodiscard]] KERNELBRAIN_DECL verdict build(candidate const& c) override;
  [[nodiscard]] KERNELBRAIN_DECL verdict check(candidate const& c, std::span<std::size_t const> shapes, int trials,
                                               std::uint64_t seed) override;
  [[nodiscard]] KERNELBRAIN_DECL measurement measure(candidate const& c, rung const& r,
                                                     measure_request const& req) override;
  [[nodiscard]] KERNELBRAIN_DECL baseline measure_baseline(problem const& p) override;
  [[nodiscard]] KERNELBRAIN_DECL double take_device_seconds() override;

  // -- diagnostics (tests, benchmarks, progress displays)
  [[nodiscard]] KERNELBRAIN_DECL int worker_pid() const;  ///< the candidate worker's pid; -1 when none is running
  [[nodiscard]] KERNELBRAIN_DECL std::size_t worker_starts()
      const;  ///< candidate workers started so far (crashes and timeouts each cost one)
  /// Timed calls (candidates' and the reference's) whose time was raised to what the kernel's CPU
  /// accounting says they took: a few under heavy load; many from a candidate that forges its times.
  [[nodiscard]] KERNELBRAIN_DECL std::size_t charged_calls() const;
  [[nodiscard]] KERNELBRAIN_DECL std::size_t sanitizer_runs() const;  ///< candidates run by the sanitizer stage
  [[nodiscard]] KERNELBRAIN_DECL std::size_t compiles() const;  ///< sources compiled (cache misses), reference included
  [[nodiscard]] KERNELBRAIN_DECL std::size_t cache_hits() const;  ///< sources found in the artifact cache
  [[nodiscard]] KERNELBRAIN_DECL std::string cache_directory() const;

 private:
  struct state;
  std::unique_ptr<state> s_;
};

/// The worker executable: `explicit_path`, else $KERNELBRAIN_HOST_WORKER, else kernelbrain-host-worker
/// next to this program, else the one this build produced. Throws kernelbrain::error listing where it looked.
[[nodiscard]] KERNELBRAIN_DECL std::string find_host_worker(std::string const& explicit_path = {});

/// What confines host candidates on this machine: "seccomp-bpf + Landlock ABI N", or seccomp-bpf
/// alone with what that leaves open (Landlock missing: a module's static initialisers may read the
/// user's files while it loads). Every candidate runs under it; there is no unsandboxed mode.
[[nodiscard]] KERNELBRAIN_DECL std::string host_sandbox_summary();

}  // namespace kernelbrain

#if KERNELBRAIN_HEADER_ONLY
#include "kernelbrain/evaluate/impl/host.ipp"
#endif
