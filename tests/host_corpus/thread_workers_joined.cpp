// expect: pass
// Honest twin: splits the rows over four std::thread workers and joins them all before returning
// (its own threads: clone with CLONE_THREAD, futex; nothing outlives the call).
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
  const long long n = 4;
  std::vector<std::thread> workers;
  for (long long t = 0; t < n; ++t) workers.emplace_back(rows, a, R * t / n, R * (t + 1) / n);
  for (auto& t : workers) t.join();
}
