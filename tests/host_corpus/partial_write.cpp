// expect: correctness
// detail: not written
// Writes only the first half of each row of y.
#include "kernelbrain/evaluate/host_abi.h"

extern "C" void kb_kernel(const kb_args* a) {
  const float* x = a->inputs[0];
  const float* w = a->inputs[1];
  float* y = a->outputs[0];
  float* s = a->outputs[1];
  const long long R = a->dims[0], C = a->dims[1];
  for (long long r = 0; r < R; ++r) {
    double acc = 0;
    for (long long c = 0; c < C; ++c) {
      const float v = x[r * C + c] * w[c];
      if (c < C / 2) y[r * C + c] = v;
      acc += v;
    }
    s[r] = static_cast<float>(acc);
  }
}
