// A correct CUDA softmax (block of 256 threads per row, the plan of `row_plan`), with hooks where the
// GPU tests' bad variants change it. Shared by the GPU test files.
#pragma once
#include <string>

namespace kb_test {

constexpr char const* row_plan =
    R"({"launches": [{"kernel": "k", "grid": ["R", "1", "1"], "block": ["256", "1", "1"], "smem": "0", "args": ["x", "y", "R", "C"]}]})";

/// Where a variant differs: `globals` before the kernel, `prologue` at its start, `before_write`
/// after the row maximum and sum, `write` the per-element store (default: the correct one), `after`
/// at its end.
struct softmax_hooks {
  std::string globals = {}, prologue = {}, before_write = {}, write = "yr[c] = expf(xr[c] - m) / sum;", after = {};
};

inline std::string softmax_kernel(softmax_hooks const& h) {
  return h.globals + R"(
extern "C" __global__ void k(float* x, float* y, long long R, long long C) {
  __shared__ float red[256];
  const long long r = blockIdx.x; const int t = threadIdx.x;
  const float* xr = x + r * C; float* yr = y + r * C;
  )" + h.prologue +
         R"(
  float m = -3.0e38f;
  for (long long c = t; c < C; c += 256) m = fmaxf(m, xr[c]);
  red[t] = m; __syncthreads();
  for (int s = 128; s > 0; s >>= 1) { if (t < s) red[t] = fmaxf(red[t], red[t + s]); __syncthreads(); }
  m = red[0]; __syncthreads();
  float sum = 0.f;
  for (long long c = t; c < C; c += 256) sum += expf(xr[c] - m);
  red[t] = sum; __syncthreads();
  for (int s = 128; s > 0; s >>= 1) { if (t < s) red[t] += red[t + s]; __syncthreads(); }
  sum = red[0];
  )" + h.before_write +
         R"(
  for (long long c = t; c < C; c += 256) { )" +
         h.write + R"( }
  )" + h.after +
         "\n}\n";
}

}  // namespace kb_test
