// Softmax over rows, online normaliser (Milakov & Gimelshein): one read of x keeps a running max
// and a running sum rescaled whenever the max grows, so the statistics take one pass and the output
// a second (x read twice, never three times). ${LANES} independent (max, sum) pairs break the
// dependency chain and are merged at the end of the row. BRANCH 0 updates every element without a
// branch (two exps); BRANCH 1 rescales only when the max grows (one exp, a data-dependent branch).
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>

#include "kernelbrain/evaluate/host_abi.h"

namespace {

constexpr int LANES = ${LANES};
constexpr int BRANCH = ${BRANCH};
constexpr int EXP = ${EXP};  // 0: std::exp; 1: inline polynomial exp

/// exp(t) for t <= 0: Cody-Waite range reduction and a degree-7 Taylor polynomial (~2 ulp).
inline float poly_exp(float t) {
  t = t < -87.0f ? -87.0f : t;
  const int n = static_cast<int>(t * 1.44269504088896341f - 0.5f);
  const float nf = static_cast<float>(n);
  const float r = (t - nf * 0.693145751953125f) - nf * 1.428606765330187e-6f;
  float p = 1.0f / 5040.0f;
  p = p * r + 1.0f / 720.0f;
  p = p * r + 1.0f / 120.0f;
  p = p * r + 1.0f / 24.0f;
  p = p * r + 1.0f / 6.0f;
  p = p * r + 0.5f;
  p = p * r + 1.0f;
  p = p * r + 1.0f;
  const std::int32_t bits = (n + 127) << 23;
  float scale;
  std::memcpy(&scale, &bits, sizeof scale);
  return p * scale;
}

inline float exp_nonpos(float t) {
  if constexpr (EXP == 0) return std::exp(t);
  else return poly_exp(t);
}

inline void update(float& m, float& s, float v) {
  if constexpr (BRANCH == 0) {
    const float nm = v > m ? v : m;
    s = s * exp_nonpos(m - nm) + exp_nonpos(v - nm);
    m = nm;
  } else {
    if (v > m) {
      s = s * exp_nonpos(m - v) + 1.0f;
      m = v;
    } else {
      s += exp_nonpos(v - m);
    }
  }
}

}  // namespace

extern "C" void kb_kernel(const kb_args* args) {
  const float* x = args->inputs[0];
  float* y = args->outputs[0];
  const long long rows = args->dims[0];
  const long long cols = args->dims[1];
  const long long main_cols = cols - cols % LANES;
  for (long long r = 0; r < rows; ++r) {
    const float* xr = x + r * cols;
    float* yr = y + r * cols;
    float m[LANES], s[LANES];
    for (int k = 0; k < LANES; ++k) {
      m[k] = std::numeric_limits<float>::lowest();
      s[k] = 0.0f;
    }
    for (long long c = 0; c < main_cols; c += LANES)
      for (int k = 0; k < LANES; ++k) update(m[k], s[k], xr[c + k]);
    for (long long c = main_cols; c < cols; ++c) update(m[0], s[0], xr[c]);

    float mx = m[0];
    for (int k = 1; k < LANES; ++k) mx = m[k] > mx ? m[k] : mx;
    float sum = 0.0f;
    for (int k = 0; k < LANES; ++k) sum += s[k] * exp_nonpos(m[k] - mx);  // empty lanes add 0 * 0

    const float inv = 1.0f / sum;
    for (long long c = 0; c < cols; ++c) yr[c] = exp_nonpos(xr[c] - mx) * inv;
  }
}
