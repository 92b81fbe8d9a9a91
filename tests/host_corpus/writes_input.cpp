// expect: correctness
// detail: wrote its input 'x'
// Computes y in place in x, then copies it out: correct outputs, clobbered input.
#include "kernelbrain/evaluate/host_abi.h"

extern "C" void kb_kernel(const kb_args* a) {
  float* x = const_cast<float*>(a->inputs[0]);
  const float* w = a->inputs[1];
  float* y = a->outputs[0];
  float* s = a->outputs[1];
  const long long R = a->dims[0], C = a->dims[1];
  for (long long r = 0; r < R; ++r) {
    double acc = 0;
    for (long long c = 0; c < C; ++c) {
      x[r * C + c] *= w[c];
      y[r * C + c] = x[r * C + c];
      acc += x[r * C + c];
    }
    s[r] = static_cast<float>(acc);
  }
}
