// expect: pass
// A correct candidate: four partial sums per row (a different summation order from the reference).
#include <cstddef>
#include "kernelbrain/evaluate/host_abi.h"

extern "C" void kb_kernel(const kb_args* a) {
  const float* x = a->inputs[0];
  const float* w = a->inputs[1];
  float* y = a->outputs[0];
  float* s = a->outputs[1];
  const long long R = a->dims[0], C = a->dims[1];
  for (long long r = 0; r < R; ++r) {
    float acc[4] = {0, 0, 0, 0};
    long long c = 0;
    for (; c + 4 <= C; c += 4)
      for (int u = 0; u < 4; ++u) {
        const float v = x[r * C + c + u] * w[c + u];
        y[r * C + c + u] = v;
        acc[u] += v;
      }
    for (; c < C; ++c) {
      const float v = x[r * C + c] * w[c];
      y[r * C + c] = v;
      acc[0] += v;
    }
    s[r] = (acc[0] + acc[1]) + (acc[2] + acc[3]);
  }
}
