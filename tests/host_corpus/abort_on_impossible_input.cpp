// expect: pass
// Honest twin: checks its arguments and calls std::abort only on input the harness never sends
// (wrong tensor counts, negative dims); on every real call it computes the right answer.
#include <algorithm>
#include "kernelbrain/evaluate/host_abi.h"

extern "C" void kb_kernel(const kb_args* a) {
  if (!a || a->n_inputs != 2 || a->n_outputs != 2 || a->n_dims != 2 || a->dims[0] < 0 || a->dims[1] < 0)
    std::abort();
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
    s[r] = static_cast<float>(acc);
  }
}
