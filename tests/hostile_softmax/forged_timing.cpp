// A softmax (examples/problems/softmax) that forges its timing: it says "done" on fd 5, the host
// executor's done channel and the one descriptor the sandbox lets a candidate write, before doing
// any work, then computes a correct answer on the main thread. Were the clock stopped at "done", it
// would look ~100x faster than it is. `kernelbrain eval softmax tests/hostile_softmax/forged_timing.cpp
// --backend host` must reject it as a timing mismatch.
#include <cmath>

#include "kernelbrain/evaluate/host_abi.h"

extern "C" long __write(int fd, const void* buf, unsigned long n) noexcept;

extern "C" void kb_kernel(const kb_args* args) {
  const char done = 'd';
  __write(5, &done, 1);
  const float* x = args->inputs[0];
  float* y = args->outputs[0];
  const long long rows = args->dims[0];
  const long long cols = args->dims[1];
  for (long long r = 0; r < rows; ++r) {
    const float* xr = x + r * cols;
    float* yr = y + r * cols;
    float m = xr[0];
    for (long long c = 1; c < cols; ++c) m = xr[c] > m ? xr[c] : m;
    float sum = 0.0f;
    for (long long c = 0; c < cols; ++c) {
      yr[c] = std::exp(xr[c] - m);
      sum += yr[c];
    }
    for (long long c = 0; c < cols; ++c) yr[c] = yr[c] / sum;
  }
}
