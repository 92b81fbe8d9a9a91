// expect: correctness
// detail: NaN or infinite
// Divides by a zero it should have guarded against.
#include <cmath>
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
      y[r * C + c] = x[r * C + c] * w[c];
      acc += y[r * C + c];
    }
    const float zero = static_cast<float>(r - r);
    s[r] = static_cast<float>(acc) * (zero / zero);
  }
}
