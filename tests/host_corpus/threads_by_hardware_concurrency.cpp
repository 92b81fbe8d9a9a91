// expect: pass
// Honest twin: sizes its worker pool with std::thread::hardware_concurrency() on every call (glibc
// 2.36 reads /sys/devices/system/cpu/online for it) and joins every worker before returning.
#include <algorithm>
#include <thread>
#include <vector>
#include "kernelbrain/evaluate/host_abi.h"

static void rows(const kb_args* a, long long begin, long long end) {
  const float* x = a->inputs[0];
  const float* w = a->inputs[1];
  float* y = a->outputs[0];
  float* s = a->outputs[1];
  const long long C = a->dims[1];
  for (long long r = begin; r < end; ++r) {
    double acc = 0;
    for (long long c = 0; c < C; ++c) {
      y[r * C + c] = x[r * C + c] * w[c];
      acc += y[r * C + c];
    }
    s[r] = static_cast<float>(acc);
  }
}

extern "C" void kb_kernel(const kb_args* a) {
  const long long R = a->dims[0];
  const long long hw = static_cast<long long>(std::thread::hardware_concurrency());
  const long long n = std::clamp<long long>(std::min(hw, R), 1, 8);
  std::vector<std::thread> workers;
  for (long long t = 1; t < n; ++t) workers.emplace_back(rows, a, R * t / n, R * (t + 1) / n);
  rows(a, 0, R / n);
  for (auto& t : workers) t.join();
}
