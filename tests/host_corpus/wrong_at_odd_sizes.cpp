// expect: correctness
// detail: 'odd'
// Processes columns eight at a time and forgets the tail: right whenever C is a multiple of 8.
#include "kernelbrain/evaluate/host_abi.h"

extern "C" void kb_kernel(const kb_args* a) {
  const float* x = a->inputs[0];
  const float* w = a->inputs[1];
  float* y = a->outputs[0];
  float* s = a->outputs[1];
  const long long R = a->dims[0], C = a->dims[1];
  for (long long r = 0; r < R; ++r) {
    double acc = 0;
    for (long long c = 0; c + 8 <= C; c += 8)
      for (int u = 0; u < 8; ++u) {
        y[r * C + c + u] = x[r * C + c + u] * w[c + u];
        acc += y[r * C + c + u];
      }
    s[r] = static_cast<float>(acc);
  }
}
