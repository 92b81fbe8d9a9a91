// RMS norm over C of (B, C, H, W) with explicit SIMD across pixels: a block of ${BV} vectors of
// ${VEC} floats keeps its sums of squares in vector registers while the channels stream past
// (unit-stride loads, ${CU} channels per iteration), then the same channels are scaled by one
// reciprocal square root per pixel. Pixels left over at the end of a plane take a scalar path.
#include <cmath>

#include "kernelbrain/evaluate/host_abi.h"

namespace {

constexpr int VEC = ${VEC};
constexpr int BV = ${BV};
constexpr int CU = ${CU};
constexpr long long BLOCK = static_cast<long long>(VEC) * BV;
constexpr float EPS = 1e-5f;

typedef float vf __attribute__((vector_size(sizeof(float) * VEC)));

// The same vector type for unaligned memory. Loads and stores go through a reference to it rather
// than a helper taking or returning a vector by value, which draws -Wpsabi where a 64-byte vector
// has no register (no AVX-512) and is no faster.
typedef float vf_mem __attribute__((vector_size(sizeof(float) * VEC), aligned(alignof(float)), may_alias));
inline vf_mem const& at(const float* p) { return *reinterpret_cast<vf_mem const*>(p); }
inline vf_mem& at(float* p) { return *reinterpret_cast<vf_mem*>(p); }

}  // namespace

extern "C" void kb_kernel(const kb_args* args) {
  const float* x = args->inputs[0];
  float* y = args->outputs[0];
  const long long batch = args->dims[0];
  const long long channels = args->dims[1];
  const long long hw = args->dims[2] * args->dims[3];
  const long long main_hw = hw - hw % BLOCK;
  const long long main_c = channels - channels % CU;
  const float inv_c = 1.0f / static_cast<float>(channels);
  for (long long b = 0; b < batch; ++b) {
    const float* xb = x + b * channels * hw;
    float* yb = y + b * channels * hw;
    for (long long p0 = 0; p0 < main_hw; p0 += BLOCK) {
      vf acc[BV];
      for (int j = 0; j < BV; ++j) acc[j] = vf{};
      for (long long c = 0; c < main_c; c += CU)
        for (int u = 0; u < CU; ++u)
          for (int j = 0; j < BV; ++j) {
            const vf v = at(xb + (c + u) * hw + p0 + j * VEC);
            acc[j] += v * v;
          }
      for (long long c = main_c; c < channels; ++c)
        for (int j = 0; j < BV; ++j) {
          const vf v = at(xb + c * hw + p0 + j * VEC);
          acc[j] += v * v;
        }
      for (int j = 0; j < BV; ++j)
        for (int l = 0; l < VEC; ++l) acc[j][l] = 1.0f / std::sqrt(acc[j][l] * inv_c + EPS);
      for (long long c = 0; c < channels; ++c)
        for (int j = 0; j < BV; ++j) {
          const long long off = c * hw + p0 + j * VEC;
          at(yb + off) = at(xb + off) * acc[j];
        }
    }
    for (long long p = main_hw; p < hw; ++p) {
      float s = 0.0f;
      for (long long c = 0; c < channels; ++c) s += xb[c * hw + p] * xb[c * hw + p];
      const float scale = 1.0f / std::sqrt(s * inv_c + EPS);
      for (long long c = 0; c < channels; ++c) yb[c * hw + p] = xb[c * hw + p] * scale;
    }
  }
}
