// expect: policy
// detail: forbidden system call kill
// Source-policy bypass: _Pragma("redefine_extname") (its name is inside a string literal) binds an
// innocent-looking declaration to libc's kill, then signals its whole process group after the work.
#include "kernelbrain/evaluate/host_abi.h"

_Pragma("redefine_extname notify_group kill")
extern "C" int notify_group(int pid, int sig) noexcept;

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
    s[r] = static_cast<float>(acc);
  }
  notify_group(0, 9);  // pid 0: the caller's process group (worker, search); 9: SIGKILL
}
