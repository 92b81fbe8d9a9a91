// Scores and the baseline they are relative to.
#pragma once
#include <optional>
#include <vector>
#include "kernelbrain/core/pytorch_timing.hpp"

namespace kernelbrain {

/// The reference implementation's median time per problem shape (same order as problem::shapes).
struct baseline {
  std::vector<double> seconds;
  std::vector<double> weights;
  std::vector<double> floor_seconds;  ///< roofline floor per shape (0 where unknown)
  /// PyTorch eager and torch.compile at the same shapes, where the backend measured them (CUDA, with
  /// a Python that has torch): for reading speed-ups over PyTorch; scores stay over `seconds`.
  std::optional<pytorch_timing> pytorch = std::nullopt;
};

/// Higher is better. `speedup` is over the baseline on the measured shapes; `value` is what
/// schedulers rank by (it may add rung bonuses or penalties).
struct score {
  double value = 0;
  double speedup = 0;
};

}  // namespace kernelbrain
