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
  /// Shapes at which this candidate already passed fresh-input correctness trials (the gate's, a lower
  /// rung's): the measurement checks only the rung's other shapes before timing. Correctness trials once
  /// per candidate and shape (issue 28); a backend that checks timed calls still checks those.
  std::span<std::size_t const> checked = {};

  /// Whether shape `s` still needs its correctness trials in this measurement.
  [[nodiscard]] bool needs_check(std::size_t s) const noexcept {
    for (auto c : checked)
      if (c == s) return false;
    return true;
  }
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
  /// The backend's memory-safety tools (compute-sanitizer on CUDA: out-of-bounds accesses, races, bad
  /// synchronisation, uninitialised reads that still give right answers) on a candidate whose checks
  /// passed; stage::sanitizer when they find something. The engine calls it before every measurement at
  /// a rung with rung::assure, so a backend runs the tools once per candidate, or once per template family
  /// where one instance stands for the others, and answers from memory after. Default: nothing to run,
  /// pass. A wrapper that derives from evaluator directly must forward it (forwarding_evaluator does).
  [[nodiscard]] virtual verdict assure(candidate const& c, std::uint64_t seed) {
    (void)c;
    (void)seed;
    return verdict::pass();
  }
  /// Correctness at every rung shape, then timing. The result's verdict says if it was refused.
  [[nodiscard]] virtual measurement measure(candidate const&, rung const&, measure_request const&) = 0;
  /// The reference implementation's median time at every problem shape.
  [[nodiscard]] virtual baseline measure_baseline(problem const&) = 0;
  /// Device seconds spent since the last call (charged to the budget by the driver).
  [[nodiscard]] virtual double take_device_seconds() = 0;
};

/// Forwards every call to another evaluator: derive from it to change one call (a delay, a lock, a
/// timer) and keep the rest. Not owning: `inner` must outlive it.
class forwarding_evaluator : public evaluator {
 public:
  explicit forwarding_evaluator(evaluator& inner) : inner_(inner) {}
  [[nodiscard]] std::string fingerprint() const override { return inner_.fingerprint(); }
  [[nodiscard]] verdict inspect(candidate const& c) override { return inner_.inspect(c); }
  void prefetch(candidate const& c) override { inner_.prefetch(c); }
  [[nodiscard]] verdict build(candidate const& c) override { return inner_.build(c); }
  [[nodiscard]] verdict check(candidate const& c, std::span<std::size_t const> shapes, int trials,
                              std::uint64_t seed) override {
    return inner_.check(c, shapes, trials, seed);
  }
  [[nodiscard]] verdict assure(candidate const& c, std::uint64_t seed) override { return inner_.assure(c, seed); }
  [[nodiscard]] measurement measure(candidate const& c, rung const& r, measure_request const& req) override {
    return inner_.measure(c, r, req);
  }
  [[nodiscard]] baseline measure_baseline(problem const& p) override { return inner_.measure_baseline(p); }
  [[nodiscard]] double take_device_seconds() override { return inner_.take_device_seconds(); }

 protected:
  [[nodiscard]] evaluator& inner() const noexcept { return inner_; }

 private:
  evaluator& inner_;
};

}  // namespace kernelbrain
