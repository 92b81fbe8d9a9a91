// expect: sanitizer
// detail: runtime error: signed integer overflow
// Right answers, from a step count that overflows int on the way (undefined behaviour that this
// compiler happens to wrap): UndefinedBehaviorSanitizer reports it in the sanitizer stage.
#include <limits>
#include "kernelbrain/evaluate/host_abi.h"

extern "C" void kb_kernel(const kb_args* a) {
  const float* x = a->inputs[0];
  const float* w = a->inputs[1];
  float* y = a->outputs[0];
  float* s = a->outputs[1];
  const long long R = a->dims[0], C = a->dims[1];
  volatile int base = std::numeric_limits<int>::max() - 3;
  volatile int steps = base + static_cast<int>(C);  // overflows for C > 3
  (void)steps;
  for (long long r = 0; r < R; ++r) {
    double acc = 0;
    for (long long c = 0; c < C; ++c) {
      y[r * C + c] = x[r * C + c] * w[c];
      acc += y[r * C + c];
    }
    s[r] = static_cast<float>(acc);
  }
}
