// Softmax over rows, three passes with explicit SIMD: GCC vector types of 16 floats and
// 1 independent vector accumulators per pass (max; exp and sum, storing exp into y;
// scale by 1/sum). EXP picks std::exp per lane or a polynomial exp computed on whole vectors.
// Row tails shorter than a vector step are handled by scalar loops.
#include <cmath>
#include <cstdint>
#include <cstring>

#include "kernelbrain/evaluate/host_abi.h"

namespace {

constexpr int VEC = 16;
constexpr int UNROLL = 1;
constexpr int EXP = 1;  // 0: std::exp per lane; 1: vector polynomial exp
constexpr long long STEP = static_cast<long long>(VEC) * UNROLL;

typedef float vf __attribute__((vector_size(sizeof(float) * VEC)));
typedef std::int32_t vi __attribute__((vector_size(sizeof(std::int32_t) * VEC)));

// The same vector type for unaligned memory. Loads and stores go through a reference to it rather
// than a helper taking or returning a vector by value, which draws -Wpsabi where a 64-byte vector
// has no register (no AVX-512) and is no faster.
typedef float vf_mem __attribute__((vector_size(sizeof(float) * VEC), aligned(alignof(float)), may_alias));
inline vf_mem const& at(const float* p) { return *reinterpret_cast<vf_mem const*>(p); }
inline vf_mem& at(float* p) { return *reinterpret_cast<vf_mem*>(p); }

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

/// The same polynomial on a whole vector, in place (by pointer: no vector arguments by value).
inline void exp_nonpos(vf* t) {
  if constexpr (EXP == 0) {
    for (int l = 0; l < VEC; ++l) (*t)[l] = std::exp((*t)[l]);
  } else {
    vf v = *t;
    v = v < -87.0f ? vf{} - 87.0f : v;
    const vi n = __builtin_convertvector(v * 1.44269504088896341f - 0.5f, vi);
    const vf nf = __builtin_convertvector(n, vf);
    const vf r = (v - nf * 0.693145751953125f) - nf * 1.428606765330187e-6f;
    vf p = vf{} + 1.0f / 5040.0f;
    p = p * r + 1.0f / 720.0f;
    p = p * r + 1.0f / 120.0f;
    p = p * r + 1.0f / 24.0f;
    p = p * r + 1.0f / 6.0f;
    p = p * r + 0.5f;
    p = p * r + 1.0f;
    p = p * r + 1.0f;
    const vi bits = (n + 127) << 23;
    vf scale;
    std::memcpy(&scale, &bits, sizeof scale);
    *t = p * scale;
  }
}

}  // namespace

extern "C" void kb_kernel(const kb_args* args) {
  const float* x = args->inputs[0];
  float* y = args->outputs[0];
  const long long rows = args->dims[0];
  const long long cols = args->dims[1];
  const long long main_cols = cols - cols % STEP;
  for (long long r = 0; r < rows; ++r) {
    const float* xr = x + r * cols;
    float* yr = y + r * cols;

    vf vm[UNROLL];
    for (int k = 0; k < UNROLL; ++k) vm[k] = vf{} + xr[0];
    for (long long c = 0; c < main_cols; c += STEP)
      for (int k = 0; k < UNROLL; ++k) {
        const vf v = at(xr + c + k * VEC);
        vm[k] = v > vm[k] ? v : vm[k];
      }
    float m = xr[0];
    for (int k = 0; k < UNROLL; ++k)
      for (int l = 0; l < VEC; ++l) m = vm[k][l] > m ? vm[k][l] : m;
    for (long long c = main_cols; c < cols; ++c) m = xr[c] > m ? xr[c] : m;

    vf vs[UNROLL];
    for (int k = 0; k < UNROLL; ++k) vs[k] = vf{};
    for (long long c = 0; c < main_cols; c += STEP)
      for (int k = 0; k < UNROLL; ++k) {
        vf e = at(xr + c + k * VEC) - m;
        exp_nonpos(&e);
        at(yr + c + k * VEC) = e;
        vs[k] += e;
      }
    float s = 0.0f;
    for (int k = 0; k < UNROLL; ++k)
      for (int l = 0; l < VEC; ++l) s += vs[k][l];
    for (long long c = main_cols; c < cols; ++c) {
      yr[c] = exp_nonpos(xr[c] - m);
      s += yr[c];
    }

    const float inv = 1.0f / s;
    for (long long c = 0; c < main_cols; c += STEP)
      for (int k = 0; k < UNROLL; ++k) at(yr + c + k * VEC) = at(yr + c + k * VEC) * inv;
    for (long long c = main_cols; c < cols; ++c) yr[c] *= inv;
  }
}
