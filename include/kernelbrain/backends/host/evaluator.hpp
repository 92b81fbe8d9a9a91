// The host backend: candidates are C++ sources (the ABI in host_abi.h) compiled by the system
// compiler and run in an isolated worker process; the trusted parent draws the inputs, checks every
// output element and decides. The CPU analogue of the CUDA backend, so the whole loop runs in CI.
// Linux only. Bodies: impl/host.ipp (see kernelbrain/config.hpp).
#pragma once
#include "kernelbrain/config.hpp"
#if !defined(__linux__)
#error "kernelbrain/backends/host/evaluator.hpp: the host backend needs Linux (posix_spawn, memfd_create, /proc)"
#endif
#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <vector>
#include "kernelbrain/backends/host/options.hpp"
#include "kernelbrain/backends/host/source_policy.hpp"
#include "kernelbrain/core/evaluator.hpp"

namespace kernelbrain {

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
#include "kernelbrain/backends/host/impl/evaluator.ipp"
#endif
