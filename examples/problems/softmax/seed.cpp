// A correct, naive starting candidate: three plain passes over each row in float.
#include <cmath>

#include "kernelbrain/evaluate/host_abi.h"

extern "C" void kb_kernel(const kb_args* args) {
  const float* x = args->inputs[0];
  float* y = args->outputs[0];
  const long long rows = args->dims[0];
  const long long cols = args->dims[1];
  for (long long r = 0; r < rows; ++r) {
    const float* xr = x + r * cols;
    float* yr = y + r * cols;
    float m = xr[0];
    for (long long c = 1; c < cols; ++c) m = xr[c] > m ? xr[c] : m;
    float sum = 0.0f;
    for (long long c = 0; c < cols; ++c) {
      yr[c] = std::exp(xr[c] - m);
      sum += yr[c];
    }
    for (long long c = 0; c < cols; ++c) yr[c] = yr[c] / sum;
  }
}
