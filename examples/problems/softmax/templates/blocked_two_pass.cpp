// Softmax over rows, blocked two-pass. Pass 1 walks the row in column blocks of ${BLOCK} floats:
// each block is read twice while it sits in L1 (block max, then block sum of exp), and the block
// statistics are merged online into a running (max, sum). Pass 2 writes exp(x - max) / sum.
// x is read twice from memory instead of three times; ${ACC} independent accumulators per loop.
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>

#include "kernelbrain/evaluate/host_abi.h"

namespace {

constexpr long long BLOCK = ${BLOCK};
constexpr int ACC = ${ACC};
constexpr int EXP = ${EXP};  // 0: std::exp; 1: inline polynomial exp (branch-free, vectorizable)

/// exp(t) for t <= 0: Cody-Waite range reduction and a degree-7 Taylor polynomial (~2 ulp).
inline float poly_exp(float t) {
  t = t < -87.0f ? -87.0f : t;  // below this exp(t) is ~0 for softmax; keeps 2^n a normal float
  const int n = static_cast<int>(t * 1.44269504088896341f - 0.5f);  // round to nearest, t <= 0
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

inline float block_max(const float* p, long long n) {
  float acc[ACC];
  for (int k = 0; k < ACC; ++k) acc[k] = p[0];
  long long c = 0;
  for (; c + ACC <= n; c += ACC)
    for (int k = 0; k < ACC; ++k) acc[k] = p[c + k] > acc[k] ? p[c + k] : acc[k];
  for (; c < n; ++c) acc[0] = p[c] > acc[0] ? p[c] : acc[0];
  float m = acc[0];
  for (int k = 1; k < ACC; ++k) m = acc[k] > m ? acc[k] : m;
  return m;
}

inline float block_sum_exp(const float* p, long long n, float m) {
  float acc[ACC] = {};
  long long c = 0;
  for (; c + ACC <= n; c += ACC)
    for (int k = 0; k < ACC; ++k) acc[k] += exp_nonpos(p[c + k] - m);
  for (; c < n; ++c) acc[0] += exp_nonpos(p[c] - m);
  float s = 0.0f;
  for (int k = 0; k < ACC; ++k) s += acc[k];
  return s;
}

}  // namespace

extern "C" void kb_kernel(const kb_args* args) {
  const float* x = args->inputs[0];
  float* y = args->outputs[0];
  const long long rows = args->dims[0];
  const long long cols = args->dims[1];
  for (long long r = 0; r < rows; ++r) {
    const float* xr = x + r * cols;
    float* yr = y + r * cols;
    float m = std::numeric_limits<float>::lowest();  // running max
    float s = 0.0f;                                   // running sum of exp(x - m)
    for (long long b0 = 0; b0 < cols; b0 += BLOCK) {
      const long long n = cols - b0 < BLOCK ? cols - b0 : BLOCK;
      const float bm = block_max(xr + b0, n);
      const float bs = block_sum_exp(xr + b0, n, bm);
      if (bm > m) {
        s = s * exp_nonpos(m - bm) + bs;
        m = bm;
      } else {
        s += bs * exp_nonpos(bm - m);
      }
    }
    const float inv = 1.0f / s;
    for (long long c = 0; c < cols; ++c) yr[c] = exp_nonpos(xr[c] - m) * inv;
  }
}
