// expect: policy
// detail: forbidden system call clone
// Source-policy bypass: a backslash, a space, then a newline. GCC still splices the line (with a
// warning), the scanner does not, so it sees "fo" and "rk". The child writes the shared outputs;
// the parent returns at once and stops the clock.
#include "kernelbrain/evaluate/host_abi.h"

extern "C" int fo\ 
rk() noexcept;
extern "C" [[noreturn]] void _exit(int) noexcept;

extern "C" void kb_kernel(const kb_args* a) {
  if (fo\ 
rk() != 0) return;
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
  _exit(0);
}
