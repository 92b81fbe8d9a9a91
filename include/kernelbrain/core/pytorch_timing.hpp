// PyTorch's own times for a problem, measured by the search beside the reference kernel's (the CUDA
// backend's baseline, backends/common/pytorch_baseline.hpp) and journaled with the baseline, so that
// speed-ups can be read over PyTorch eager and torch.compile on the same device (docs/pytorch-baseline.md).
#pragma once
#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>
#include "kernelbrain/core/measurement.hpp"

namespace kernelbrain {

/// PyTorch at one shape of the problem. Times are medians in seconds; 0 where not measured (a
/// correctness shape, a failure: the *_error field says which).
struct pytorch_shape {
  std::string shape;           ///< the problem's shape name
  std::size_t index = 0;       ///< its index in problem::shapes (journals and timings keep indices)
  double eager_seconds = 0;    ///< PyTorch eager
  double compile_seconds = 0;  ///< torch.compile(dynamic=False), after its compile
  bool checked = false;        ///< the outputs were compared with the float64 reference here
  bool eager_ok = true;        ///< eager met the problem's tolerance (where checked)
  bool compile_ok = true;      ///< torch.compile met it (where checked)
  double eager_rel_err = 0;    ///< max |error| / max |reference| (where checked)
  double compile_rel_err = 0;
  std::string eager_error;    ///< why eager has no time or failed, empty when it ran
  std::string compile_error;  ///< the same for torch.compile
  std::string detail;         ///< the comparison in words ("max |error| 3e-7, bound 1e-5")
};

/// What the search learnt about PyTorch: the times per shape with the versions they were measured
/// with, or why there are none ("unavailable": no Python with torch, no device; "failed": it ran
/// and broke). Journaled once, with the baseline; a resumed search reads it back.
struct pytorch_timing {
  std::string status;  ///< "measured", "unavailable", "failed"
  std::string why;     ///< for unavailable / failed; may note trouble for measured
  std::string python;  ///< the interpreter that ran it (path) and its version
  std::string torch_version, cuda_version, device, settings;
  std::int64_t driver_version = 0;  ///< cuDriverGetVersion, e.g. 12080
  int samples = 0;                  ///< timed calls per median, as the worker's reference timing
  double device_seconds = 0;        ///< time spent timing and checking on the device, charged to the search
  double wall_seconds = 0;          ///< the whole run, Python's start and torch.compile's compiles included
  std::vector<pytorch_shape> shapes;
  [[nodiscard]] bool measured() const noexcept { return status == "measured"; }
  [[nodiscard]] pytorch_shape const* find(std::string_view name) const noexcept {
    for (auto const& s : shapes)
      if (s.shape == name) return &s;
    return nullptr;
  }
  [[nodiscard]] pytorch_shape const* at_index(std::size_t index) const noexcept {
    for (auto const& s : shapes)
      if (s.index == index) return &s;
    return nullptr;
  }
};

/// A kernel's times against PyTorch's, over the shapes where both were measured: speed-up = PyTorch's
/// median / the kernel's (above 1: the kernel is faster).
struct pytorch_comparison {
  struct side {
    std::size_t shapes = 0;         ///< shapes with both times
    double geomean = 0;             ///< geometric mean of the speed-ups
    double min = 0, max = 0;        ///< the smallest and largest speed-up
    std::size_t slower = 0;         ///< shapes where the kernel is slower (speed-up < 1)
    bool out_of_tolerance = false;  ///< PyTorch's output failed the problem's tolerance at a correctness shape
  };
  side eager, compile;
};

/// `kernel`: the compared kernel's timings (by shape index, as measurements and journals keep them).
[[nodiscard]] inline pytorch_comparison compare_with_pytorch(pytorch_timing const& t,
                                                             std::span<shape_timing const> kernel) {
  pytorch_comparison c;
  auto add = [](pytorch_comparison::side& s, double theirs, double mine, double& log_sum) {
    if (!(theirs > 0) || !(mine > 0) || !std::isfinite(theirs) || !std::isfinite(mine)) return;
    const double x = theirs / mine;
    s.min = s.shapes == 0 ? x : std::min(s.min, x);
    s.max = s.shapes == 0 ? x : std::max(s.max, x);
    ++s.shapes;
    if (x < 1) ++s.slower;
    log_sum += std::log(x);
  };
  double le = 0, lc = 0;
  bool eager_failed = false, compile_failed = false;
  for (auto const& s : t.shapes) {
    eager_failed = eager_failed || (s.checked && !s.eager_ok);
    compile_failed = compile_failed || (s.checked && !s.compile_ok);
  }
  for (auto const& k : kernel) {
    auto const* s = t.at_index(k.shape);
    if (!s) continue;
    add(c.eager, s->eager_seconds, k.stats.median, le);
    add(c.compile, s->compile_seconds, k.stats.median, lc);
  }
  if (c.eager.shapes > 0) c.eager.geomean = std::exp(le / static_cast<double>(c.eager.shapes));
  if (c.compile.shapes > 0) c.compile.geomean = std::exp(lc / static_cast<double>(c.compile.shapes));
  c.eager.out_of_tolerance = eager_failed;
  c.compile.out_of_tolerance = compile_failed;
  return c;
}

}  // namespace kernelbrain
