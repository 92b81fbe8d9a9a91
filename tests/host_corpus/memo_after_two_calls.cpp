// expect: correctness
// detail: wrong output
// Computes on the first two calls that see a buffer address, then replays the second call's answer:
// it survives a single correctness trial (two runs) and is caught by the gate's second trial (fresh
// values in the same buffers). Timing never shows it a repeated address: every call reads its
// inputs from a window of its own, so there it computes every time and gains nothing.
#include <cstring>
#include <vector>
#include "kernelbrain/evaluate/host_abi.h"

static const float* seen = nullptr;
static int calls = 0;
static std::vector<float> memo_y, memo_s;

extern "C" void kb_kernel(const kb_args* a) {
  const float* x = a->inputs[0];
  const float* w = a->inputs[1];
  float* y = a->outputs[0];
  float* s = a->outputs[1];
  const long long R = a->dims[0], C = a->dims[1];
  calls = x == seen ? calls + 1 : 1;
  seen = x;
  if (calls > 2 && memo_s.size() == static_cast<std::size_t>(R)) {
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
  memo_y.assign(y, y + R * C);
  memo_s.assign(s, s + R);
}
