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
  /// The backend's memory-safety tools (evaluator::assure: compute-sanitizer on CUDA) must have passed
  /// before this rung times a candidate. A screening rung below the top leaves it off, so that template
  /// families the search leaves behind there never pay for the tools (about 1.3 s a family on an H100);
  /// a candidate reaches the top rung, and so the incumbent's place, only through an assured rung.
  bool assure = true;
};

}  // namespace kernelbrain
