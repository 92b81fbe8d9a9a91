// expect: policy
// detail: forbidden system call alarm
// Arms alarm(1) (an unlisted name): SIGALRM a second later kills whatever the process runs then,
// such as the next candidate or the incumbent being timed.
#include "kernelbrain/evaluate/host_abi.h"

extern "C" unsigned alarm(unsigned seconds) noexcept;

extern "C" void kb_kernel(const kb_args* a) {
  alarm(1);
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
