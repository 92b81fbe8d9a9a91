// The host problem the corpus candidates are written for: y = x * w[col] and s = row sums of y.
// Shared by tests/test_host_backend.cpp and bench/timing_repeatability.cpp.
#pragma once
#include <kernelbrain/core/problem.hpp>

namespace kb_corpus {

inline kernelbrain::problem scale_rows() {
  using kernelbrain::shape;
  kernelbrain::problem p;
  p.name = "scale_rows";
  p.backend = "host";
  p.dim_order = {"R", "C"};
  p.inputs = {{"x", "R * C", "normal"}, {"w", "C", "uniform"}};
  p.outputs = {{"y", "R * C", "normal"}, {"s", "R", "normal"}};
  p.tol = {1e-4, 1e-5};
  p.shapes = {shape{"small", {{"R", 8}, {"C", 64}}, "smoke", 1, 0, 0},
              shape{"odd", {{"R", 5}, {"C", 37}}, "odd", 1, 0, 0},
              shape{"medium", {{"R", 64}, {"C", 1000}}, "medium", 1, 0, 0},
              shape{"large", {{"R", 512}, {"C", 2000}}, "large", 1, 0, 0}};
  p.reference_source = R"(
#include "kernelbrain/evaluate/host_abi.h"
extern "C" void kb_kernel(const kb_args* a) {
  const float* x = a->inputs[0];
  const float* w = a->inputs[1];
  float* y = a->outputs[0];
  float* s = a->outputs[1];
  const long long R = a->dims[0], C = a->dims[1];
  for (long long r = 0; r < R; ++r) {
    double acc = 0;
    for (long long c = 0; c < C; ++c) {
      y[r * C + c] = x[r * C + c] * w[c];
      acc += y[r * C + c];
    }
    s[r] = static_cast<float>(acc);
  }
}
)";
  return p;
}

}  // namespace kb_corpus
