// expect: correctness
// detail: wrong output
// Caches its answer by buffer address: right on the first call, stale once the inputs change
// (every correctness trial draws fresh inputs into the same buffers).
#include <cstring>
#include <vector>
#include "kernelbrain/evaluate/host_abi.h"

static const float* seen = nullptr;
static std::vector<float> memo_y, memo_s;

extern "C" void kb_kernel(const kb_args* a) {
  const float* x = a->inputs[0];
  const float* w = a->inputs[1];
  float* y = a->outputs[0];
  float* s = a->outputs[1];
  const long long R = a->dims[0], C = a->dims[1];
  if (x == seen && memo_s.size() == static_cast<std::size_t>(R)) {
    std::memcpy(y, memo_y.data(), memo_y.size() * sizeof(float));
    std::memcpy(s, memo_s.data(), memo_s.size() * sizeof(float));
    return;
  }
  for (long long r = 0; r < R; ++r) {
    double acc = 0;
    for (long long c = 0; c < C; ++c) {
      y[r * C + c] = x[r * C + c] * w[c];
      acc += y[r * C + c];
    }
    s[r] = static_cast<float>(acc);
  }
  seen = x;
  memo_y.assign(y, y + R * C);
  memo_s.assign(s, s + R);
}
