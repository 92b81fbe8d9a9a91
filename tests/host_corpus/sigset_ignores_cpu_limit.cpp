// expect: policy
// detail: forbidden system call rt_sigaction
// Installs a signal disposition through sigset (an unlisted name) to ignore SIGXCPU, so a CPU-time
// soft limit cannot stop a long run.
#include "kernelbrain/evaluate/host_abi.h"

using handler = void (*)(int);
extern "C" handler sigset(int sig, handler disposition) noexcept;

extern "C" void kb_kernel(const kb_args* a) {
  sigset(24, reinterpret_cast<handler>(1));  // SIGXCPU, SIG_IGN
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
