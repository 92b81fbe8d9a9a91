// The backend interface: what gates and ladders call to build, check and time a candidate.
// Virtual on purpose: one call costs milliseconds to seconds, and the CLI picks a backend at run time.
#pragma once
#include <cstdint>
#include <span>
#include <string>
#include "kernelbrain/core/candidate.hpp"
#include "kernelbrain/core/measurement.hpp"
#include "kernelbrain/core/problem.hpp"
#include "kernelbrain/core/rung.hpp"
#include "kernelbrain/core/score.hpp"
#include "kernelbrain/core/verdict.hpp"

namespace kernelbrain {

/// Per-measurement context the driver supplies.
struct measure_request {
  std::uint64_t seed = 0;                ///< for fresh inputs; derived by the driver, unknown to candidates
  candidate const* incumbent = nullptr;  ///< for interleaved A/B rungs; null when there is none
};

class evaluator {
 public:
  virtual ~evaluator() = default;

  /// Device, driver and compiler versions: part of every cache key, written to the journal header.
  [[nodiscard]] virtual std::string fingerprint() const = 0;
  /// Static source policy (forbidden constructs). Default: everything passes.
  [[nodiscard]] virtual verdict inspect(candidate const&) { return verdict::pass(); }
  /// A hint that `c` will be built soon (it was just proposed): a backend may start compiling it in
  /// the background so that compiles overlap each other and the device work. Called on the search
  /// thread while the evaluation thread may be inside build/check/measure, so an override must be
  /// thread-safe against them and must not block on device work. Default: nothing.
  virtual void prefetch(candidate const& c) { (void)c; }
  /// Compile, check the entry signature and static resources.
  [[nodiscard]] virtual verdict build(candidate const&) = 0;
  /// Correctness against the reference on fresh inputs drawn from `seed`, `trials` times per shape.
  [[nodiscard]] virtual verdict check(candidate const&, std::span<std::size_t const> shapes, int trials,
                                      std::uint64_t seed) = 0;
  /// Correctness at every rung shape, then timing. The result's verdict says if it was refused.
  [[nodiscard]] virtual measurement measure(candidate const&, rung const&, measure_request const&) = 0;
  /// The reference implementation's median time at every problem shape.
  [[nodiscard]] virtual baseline measure_baseline(problem const&) = 0;
  /// Device seconds spent since the last call (charged to the budget by the driver).
  [[nodiscard]] virtual double take_device_seconds() = 0;
};

}  // namespace kernelbrain
