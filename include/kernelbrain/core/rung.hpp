// One fidelity level of the ladder: which shapes, how many samples, what extra checks.
#pragma once
#include <cstddef>
#include <string>
#include <vector>

namespace kernelbrain {

struct rung {
  std::string name;                 ///< smoke / screen / confirm ...
  std::vector<std::size_t> shapes;  ///< indices into problem::shapes
  int samples = 5;                  ///< timed samples per shape (after warm-up)
  int warmup = 1;                   ///< untimed runs per shape
  int correctness_trials = 1;       ///< fresh-input correctness trials per shape before timing
  bool interleaved = false;         ///< A/B interleaved against the incumbent
  bool profile = false;             ///< collect a profile (where the backend can)
};

}  // namespace kernelbrain
