// PyTorch as a baseline of the search: PyTorch eager and torch.compile timed at the problem's benchmark
// shapes and checked against a float64 computation at its correctness shapes, by a Python process of
// its own (pytorch_script.hpp) on the evaluator's device, with the CUDA worker's timing method (an L2
// flush before each call, CUDA events, a spin so that Python's launch latency is not timed, warm-up
// calls untimed, the median). A backend calls measure_pytorch() from measure_baseline(); the result is
// journaled with the baseline, so a resumed search does not measure it again (docs/pytorch-baseline.md).
// Where no Python with torch is found, the problem declares no PyTorch computation, or the run fails,
// the result says why and the search goes on with the reference ratio.
#pragma once
#include <cstdint>
#include <string>
#include "kernelbrain/config.hpp"
#include "kernelbrain/core/problem.hpp"
#include "kernelbrain/core/pytorch_timing.hpp"

namespace kernelbrain {

struct pytorch_options {
  bool enabled = true;
  /// The interpreter; empty: $KERNELBRAIN_PYTHON, else python3 on PATH. "none" (either place): off.
  std::string python;
  std::string device = "cuda";  ///< "cuda" (events, L2 flush) or "cpu" (wall clock)
  std::string visible_device;   ///< CUDA_VISIBLE_DEVICES for the process (the evaluator's); empty: inherited
  int samples = 30;             ///< timed calls per median (once per search: precision costs little here)
  int warmup = 1;
  std::uint64_t flush_bytes = 0;  ///< 0: twice the device's L2, as the worker
  bool compile = true;            ///< also torch.compile
  double timeout = 600;           ///< seconds for the whole run; then it is killed and what it measured is kept
  std::uint64_t seed = 1;         ///< input values
};

/// The interpreter measure_pytorch() would run, or empty with `why` set when there is none.
[[nodiscard]] KERNELBRAIN_DECL std::string find_python(pytorch_options const& o, std::string& why);

/// Measures PyTorch for `p` (its problem.json "pytorch" declaration). Never throws for trouble with
/// Python, torch or the device: the result's status and `why` say what happened ("unavailable" when
/// nothing ran, "failed" when the run broke before measuring anything).
[[nodiscard]] KERNELBRAIN_DECL pytorch_timing measure_pytorch(problem const& p, pytorch_options const& o);

/// The shapes measure_pytorch() times: the benchmark shapes (tiers other than smoke, odd and wide).
[[nodiscard]] inline bool pytorch_timed_shape(shape const& s) {
  return s.tier != "smoke" && s.tier != "odd" && s.tier != "wide";
}

}  // namespace kernelbrain

#if KERNELBRAIN_HEADER_ONLY
#include "kernelbrain/backends/common/impl/pytorch_baseline.ipp"
#endif
