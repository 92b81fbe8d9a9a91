// One evaluation (candidate x rung) as a unit of work for the evaluation plane, and its outcome.
#pragma once
#include <cstddef>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>
#include "kernelbrain/core/candidate.hpp"
#include "kernelbrain/core/measurement.hpp"
#include "kernelbrain/core/verdict.hpp"

namespace kernelbrain {

struct evaluation_task {
  std::uint64_t ticket = 0;  ///< issue order; results are applied in this order by default
  candidate cand;
  std::size_t rung = 0;
  bool run_gate = false;               ///< first evaluation of this candidate: gate before timing
  std::optional<candidate> incumbent;  ///< for interleaved rungs
  std::uint64_t seed = 0;              ///< fresh-input seed for this evaluation
  std::vector<std::size_t> checked;    ///< shapes the candidate passed correctness trials at (measure_request::checked)
};

struct evaluation_outcome {
  candidate_id id;
  std::size_t rung = 0;
  bool gated = false;  ///< the gate ran
  verdict gate;        ///< its verdict (pass when it did not run)
  measurement m;       ///< empty timings when the gate rejected
  double wall_seconds = 0;
  /// The evaluator_pool member that ran it (its index, and its label: "cuda:1", "rank 2 host"). The
  /// search scores a measurement against that member's own baseline.
  std::size_t slot = 0;
  std::string member;

  [[nodiscard]] bool passed() const noexcept { return gate.passed() && m.result.passed(); }
  [[nodiscard]] verdict const& reason() const noexcept { return gate.passed() ? m.result : gate; }
};

/// Cache key of an evaluation: content id and rung. The journal header pins problem, ladder and device.
struct evaluation_key {
  candidate_id id;
  std::size_t rung = 0;
  friend bool operator==(evaluation_key const&, evaluation_key const&) = default;
};

}  // namespace kernelbrain

template <>
struct std::hash<kernelbrain::evaluation_key> {
  std::size_t operator()(kernelbrain::evaluation_key k) const noexcept {
    return static_cast<std::size_t>(kernelbrain::hasher::mix(k.id.value ^ (k.rung * 0x9e3779b97f4a7c15ULL)));
  }
};
