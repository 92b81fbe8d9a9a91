// Trusted reference: RMS norm over the channel dim of an NCHW tensor (B, C, H, W), eps = 1e-5:
//   y[b][c][p] = x[b][c][p] / sqrt(mean_c x[b][c][p]^2 + eps)   for every pixel p = h * W + w.
// Sum of squares in double, one rounding to float at the end.
#include <cmath>

#include "kernelbrain/evaluate/host_abi.h"

extern "C" void kb_kernel(const kb_args* args) {
  const float* x = args->inputs[0];
  float* y = args->outputs[0];
  const long long batch = args->dims[0];
  const long long channels = args->dims[1];
  const long long hw = args->dims[2] * args->dims[3];
  const double eps = 1e-5;
  for (long long b = 0; b < batch; ++b)
    for (long long p = 0; p < hw; ++p) {
      const float* xp = x + b * channels * hw + p;
      float* yp = y + b * channels * hw + p;
      double sum = 0;
      for (long long c = 0; c < channels; ++c) sum += static_cast<double>(xp[c * hw]) * xp[c * hw];
      const double scale = 1.0 / std::sqrt(sum / static_cast<double>(channels) + eps);
      for (long long c = 0; c < channels; ++c) yp[c * hw] = static_cast<float>(xp[c * hw] * scale);
    }
}
