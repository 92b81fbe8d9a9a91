// The default gate (the paper's V(p)): static source policy, build, then correctness on fresh inputs.
#pragma once
#include <cstdint>
#include <utility>
#include <vector>
#include "kernelbrain/core/candidate.hpp"
#include "kernelbrain/core/evaluator.hpp"
#include "kernelbrain/core/hash.hpp"
#include "kernelbrain/core/problem.hpp"
#include "kernelbrain/core/verdict.hpp"

namespace kernelbrain {

class policy_gate {
 public:
  /// `shapes`: problem shape indices checked before any timing; `trials`: fresh-input runs per shape.
  explicit policy_gate(std::vector<std::size_t> shapes, int trials = 2) : shapes_(std::move(shapes)), trials_(trials) {}

  /// Checks the first shape plus every shape whose tier is "odd" (non-multiple-of-block sizes) or
  /// "wide" (wider than any benchmark shape, and never timed: the gate is the only place it is run).
  [[nodiscard]] static policy_gate for_problem(problem const& p, int trials = 2) {
    std::vector<std::size_t> s{0};
    for (std::size_t i = 1; i < p.shapes.size(); ++i)
      if (p.shapes[i].tier == "odd" || p.shapes[i].tier == "wide") s.push_back(i);
    return policy_gate(std::move(s), trials);
  }

  void reseed(std::uint64_t seed) { seed_ = seed; }

  /// The problem shapes checked before any timing, and the fresh-input trials at each.
  [[nodiscard]] std::vector<std::size_t> const& shapes() const noexcept { return shapes_; }
  [[nodiscard]] int trials() const noexcept { return trials_; }
  /// The shapes a candidate admitted has passed correctness trials at: a measurement does not repeat them.
  [[nodiscard]] std::vector<std::size_t> checked_shapes() const { return shapes_; }

  verdict admit(candidate const& c, evaluator& e) {
    if (auto v = e.inspect(c); !v) return v;
    if (auto v = e.build(c); !v) return v;
    // Derived from the search seed and the candidate: unknowable to the candidate, different for every
    // candidate, and the same in a resumed run (each candidate is gated once).
    return e.check(c, shapes_, trials_, derive_seed(seed_, "gate", c.id.value));
  }

 private:
  std::vector<std::size_t> shapes_;
  int trials_;
  std::uint64_t seed_ = 0;
};

}  // namespace kernelbrain
