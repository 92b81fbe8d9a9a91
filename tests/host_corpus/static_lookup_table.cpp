// expect: pass
// Honest twin: a function-local static lookup table (initialised on the first call, under the
// compiler's thread-safe guard) that orders the columns of each 16-wide tile.
#include <array>
#include "kernelbrain/evaluate/host_abi.h"

static std::array<int, 16> make_order() {
  std::array<int, 16> t{};
  for (int i = 0; i < 16; ++i) t[i] = ((i & 1) << 3) | ((i & 2) << 1) | ((i & 4) >> 1) | ((i & 8) >> 3);
  return t;
}

extern "C" void kb_kernel(const kb_args* a) {
  static const std::array<int, 16> order = make_order();  // bit-reversed visiting order
  const float* x = a->inputs[0];
  const float* w = a->inputs[1];
  float* y = a->outputs[0];
  float* s = a->outputs[1];
  const long long R = a->dims[0], C = a->dims[1];
  for (long long r = 0; r < R; ++r) {
    double acc = 0;
    long long c0 = 0;
    for (; c0 + 16 <= C; c0 += 16)
      for (int i = 0; i < 16; ++i) {
        const long long c = c0 + order[i];
        y[r * C + c] = x[r * C + c] * w[c];
        acc += y[r * C + c];
      }
    for (long long c = c0; c < C; ++c) {
      y[r * C + c] = x[r * C + c] * w[c];
      acc += y[r * C + c];
    }
    s[r] = static_cast<float>(acc);
  }
}
