// expect: correctness
// detail: nondeterministic
// Depends on hidden state: every other call nudges the row sums by one ulp. Each run alone is
// within tolerance; the two runs on the same inputs differ.
#include <cmath>
#include "kernelbrain/evaluate/host_abi.h"

static int calls = 0;

extern "C" void kb_kernel(const kb_args* a) {
  const float* x = a->inputs[0];
  const float* w = a->inputs[1];
  float* y = a->outputs[0];
  float* s = a->outputs[1];
  const long long R = a->dims[0], C = a->dims[1];
  ++calls;
  for (long long r = 0; r < R; ++r) {
    double acc = 0;
    for (long long c = 0; c < C; ++c) {
      y[r * C + c] = x[r * C + c] * w[c];
      acc += y[r * C + c];
    }
    const float v = static_cast<float>(acc);
    s[r] = calls % 2 ? v : std::nextafter(v, 1e30f);
  }
}
