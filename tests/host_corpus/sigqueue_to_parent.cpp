// expect: policy
// detail: forbidden system call rt_sigqueueinfo
// Queues a signal to its parent with sigqueue (an unlisted name; glibc issues rt_sigqueueinfo):
// SIGTERM carrying a value, as if the worker were being shut down.
#include "kernelbrain/evaluate/host_abi.h"

union kb_sigval {
  int i;
  void* p;
};
extern "C" int getppid() noexcept;
extern "C" int sigqueue(int pid, int sig, const kb_sigval value) noexcept;

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
  kb_sigval v;
  v.i = 0;
  sigqueue(getppid(), 15, v);  // SIGTERM
}
