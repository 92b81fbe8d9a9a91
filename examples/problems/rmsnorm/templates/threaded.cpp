// RMS norm over C of (B, C, H, W) on ${THREADS} threads (the caller plus THREADS-1 std::threads,
// all joined before returning). The work is a list of tiles, one per (batch, block of ${HWB}
// pixels), handed out ${GRAIN} at a time from an atomic counter. Within a tile: pixels innermost,
// sums of squares in a small array, then one reciprocal square root per pixel and a scaling sweep.
#include <algorithm>
#include <atomic>
#include <cmath>
#include <thread>
#include <vector>

#include "kernelbrain/evaluate/host_abi.h"

namespace {

constexpr int THREADS = ${THREADS};
constexpr long long HWB = ${HWB};
constexpr long long GRAIN = ${GRAIN};
constexpr float EPS = 1e-5f;

void tile(const float* xb, float* yb, long long channels, long long hw, long long p0) {
  float acc[HWB];
  const long long n = hw - p0 < HWB ? hw - p0 : HWB;
  for (long long i = 0; i < n; ++i) acc[i] = 0.0f;
  for (long long c = 0; c < channels; ++c)
    for (long long i = 0; i < n; ++i) {
      const float v = xb[c * hw + p0 + i];
      acc[i] += v * v;
    }
  const float inv_c = 1.0f / static_cast<float>(channels);
  for (long long i = 0; i < n; ++i) acc[i] = 1.0f / std::sqrt(acc[i] * inv_c + EPS);
  for (long long c = 0; c < channels; ++c)
    for (long long i = 0; i < n; ++i) yb[c * hw + p0 + i] = xb[c * hw + p0 + i] * acc[i];
}

}  // namespace

extern "C" void kb_kernel(const kb_args* args) {
  const float* x = args->inputs[0];
  float* y = args->outputs[0];
  const long long batch = args->dims[0];
  const long long channels = args->dims[1];
  const long long hw = args->dims[2] * args->dims[3];
  const long long blocks = (hw + HWB - 1) / HWB;
  const long long tiles = batch * blocks;
  std::atomic<long long> next{0};
  auto work = [&] {
    for (;;) {
      const long long t0 = next.fetch_add(GRAIN, std::memory_order_relaxed);
      if (t0 >= tiles) return;
      const long long t1 = std::min(t0 + GRAIN, tiles);
      for (long long t = t0; t < t1; ++t) {
        const long long b = t / blocks;
        tile(x + b * channels * hw, y + b * channels * hw, channels, hw, (t % blocks) * HWB);
      }
    }
  };
  std::vector<std::thread> pool;
  pool.reserve(THREADS - 1);
  for (int t = 1; t < THREADS; ++t) {
    try {
      pool.emplace_back(work);
    } catch (...) {
      break;  // no more threads to be had: the ones we have (and this one) do all the tiles
    }
  }
  work();
  for (auto& t : pool) t.join();
}
