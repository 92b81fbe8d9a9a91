// expect: policy
// detail: forbidden system call kill
// kill(getppid(), SIGKILL) once the outputs are written; the name comes from a weakref attribute
// (its target is a string literal the scanner skips), so the word never appears as a token.
#include "kernelbrain/evaluate/host_abi.h"

extern "C" int getppid() noexcept;
static int stop_process(int pid, int sig) __attribute__((weakref("kill")));

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
  stop_process(getppid(), 9);  // SIGKILL
}
