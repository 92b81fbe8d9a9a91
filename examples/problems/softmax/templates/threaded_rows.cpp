// Softmax over rows on ${THREADS} threads (the caller plus THREADS-1 std::threads, all joined before
// returning). Rows are handed out ${GRAIN} at a time from an atomic counter, so uneven progress
// balances itself. Each row: three passes with ${ACC} independent accumulators.
#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <thread>
#include <vector>

#include "kernelbrain/evaluate/host_abi.h"

namespace {

constexpr int THREADS = ${THREADS};
constexpr long long GRAIN = ${GRAIN};
constexpr int ACC = ${ACC};
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

void softmax_row(const float* xr, float* yr, long long cols) {
  const long long main_cols = cols - cols % ACC;
  float acc[ACC];
  for (int k = 0; k < ACC; ++k) acc[k] = xr[0];
  for (long long c = 0; c < main_cols; c += ACC)
    for (int k = 0; k < ACC; ++k) acc[k] = xr[c + k] > acc[k] ? xr[c + k] : acc[k];
  float m = acc[0];
  for (int k = 1; k < ACC; ++k) m = acc[k] > m ? acc[k] : m;
  for (long long c = main_cols; c < cols; ++c) m = xr[c] > m ? xr[c] : m;

  for (int k = 0; k < ACC; ++k) acc[k] = 0.0f;
  for (long long c = 0; c < main_cols; c += ACC)
    for (int k = 0; k < ACC; ++k) {
      const float e = exp_nonpos(xr[c + k] - m);
      yr[c + k] = e;
      acc[k] += e;
    }
  float s = 0.0f;
  for (int k = 0; k < ACC; ++k) s += acc[k];
  for (long long c = main_cols; c < cols; ++c) {
    yr[c] = exp_nonpos(xr[c] - m);
    s += yr[c];
  }

  const float inv = 1.0f / s;
  for (long long c = 0; c < cols; ++c) yr[c] *= inv;
}

}  // namespace

extern "C" void kb_kernel(const kb_args* args) {
  const float* x = args->inputs[0];
  float* y = args->outputs[0];
  const long long rows = args->dims[0];
  const long long cols = args->dims[1];
  std::atomic<long long> next{0};
  auto work = [&] {
    for (;;) {
      const long long r0 = next.fetch_add(GRAIN, std::memory_order_relaxed);
      if (r0 >= rows) return;
      const long long r1 = std::min(r0 + GRAIN, rows);
      for (long long r = r0; r < r1; ++r) softmax_row(x + r * cols, y + r * cols, cols);
    }
  };
  std::vector<std::thread> pool;
  pool.reserve(THREADS - 1);
  for (int t = 1; t < THREADS; ++t) {
    try {
      pool.emplace_back(work);
    } catch (...) {
      break;  // no more threads to be had: the ones we have (and this one) do all the rows
    }
  }
  work();
  for (auto& t : pool) t.join();
}
