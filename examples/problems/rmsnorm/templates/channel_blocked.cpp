// RMS norm over C of (B, C, H, W) with the loop order turned around: pixels innermost and
// contiguous, channels outer. A block of ${HWB} pixels keeps its sums of squares in a small array
// (in L1); for each channel the block's row segment is read with unit stride, ${CU} channels per
// iteration. A second sweep over the same channels scales the block (still in L2 for moderate C).
// INV 1 turns the per-element division into one reciprocal square root per pixel and a multiply.
#include <cmath>

#include "kernelbrain/evaluate/host_abi.h"

namespace {

constexpr long long HWB = ${HWB};
constexpr int CU = ${CU};
constexpr int INV = ${INV};
constexpr float EPS = 1e-5f;

}  // namespace

extern "C" void kb_kernel(const kb_args* args) {
  const float* x = args->inputs[0];
  float* y = args->outputs[0];
  const long long batch = args->dims[0];
  const long long channels = args->dims[1];
  const long long hw = args->dims[2] * args->dims[3];
  const long long main_c = channels - channels % CU;
  const float inv_c = 1.0f / static_cast<float>(channels);
  float acc[HWB];
  for (long long b = 0; b < batch; ++b) {
    const float* xb = x + b * channels * hw;
    float* yb = y + b * channels * hw;
    for (long long p0 = 0; p0 < hw; p0 += HWB) {
      const long long n = hw - p0 < HWB ? hw - p0 : HWB;
      for (long long i = 0; i < n; ++i) acc[i] = 0.0f;
      for (long long c = 0; c < main_c; c += CU)
        for (long long i = 0; i < n; ++i) {
          float s = 0.0f;
          for (int u = 0; u < CU; ++u) {
            const float v = xb[(c + u) * hw + p0 + i];
            s += v * v;
          }
          acc[i] += s;
        }
      for (long long c = main_c; c < channels; ++c)
        for (long long i = 0; i < n; ++i) {
          const float v = xb[c * hw + p0 + i];
          acc[i] += v * v;
        }
      if constexpr (INV == 1) {
        for (long long i = 0; i < n; ++i) acc[i] = 1.0f / std::sqrt(acc[i] * inv_c + EPS);
        for (long long c = 0; c < channels; ++c)
          for (long long i = 0; i < n; ++i) yb[c * hw + p0 + i] = xb[c * hw + p0 + i] * acc[i];
      } else {
        for (long long i = 0; i < n; ++i) acc[i] = std::sqrt(acc[i] * inv_c + EPS);
        for (long long c = 0; c < channels; ++c)
          for (long long i = 0; i < n; ++i) yb[c * hw + p0 + i] = xb[c * hw + p0 + i] / acc[i];
      }
    }
  }
}
