// Trusted reference: softmax over dim 1 of an (R, C) row-major matrix.
// Max-subtracted for range, every exp and the row sum in double, one rounding to float at the end.
#include <cmath>
#include <cstddef>
#include <vector>

#include "kernelbrain/evaluate/host_abi.h"

extern "C" void kb_kernel(const kb_args* args) {
  const float* x = args->inputs[0];
  float* y = args->outputs[0];
  const long long rows = args->dims[0];
  const long long cols = args->dims[1];
  std::vector<double> e(static_cast<std::size_t>(cols));
  for (long long r = 0; r < rows; ++r) {
    const float* xr = x + r * cols;
    float* yr = y + r * cols;
    double m = xr[0];
    for (long long c = 1; c < cols; ++c)
      if (xr[c] > m) m = xr[c];
    double sum = 0;
    for (long long c = 0; c < cols; ++c) {
      e[static_cast<std::size_t>(c)] = std::exp(static_cast<double>(xr[c]) - m);
      sum += e[static_cast<std::size_t>(c)];
    }
    for (long long c = 0; c < cols; ++c) yr[c] = static_cast<float>(e[static_cast<std::size_t>(c)] / sum);
  }
}
