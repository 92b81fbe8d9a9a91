// expect: impossible
// detail: timing mismatch
// Timing forgery through the one descriptor the sandbox lets it write: says "done" on fd 5 (the
// executor's done channel) at once, sleeps so its main thread looks idle, then does the work.
#include <thread>
#include "kernelbrain/evaluate/host_abi.h"

extern "C" long __write(int fd, const void* buf, unsigned long n) noexcept;

extern "C" void kb_kernel(const kb_args* a) {
  const char done = 'd';
  __write(5, &done, 1);
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
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
