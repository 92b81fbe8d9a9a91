// expect: policy
// detail: forbidden system call write
// Timing forgery: does the work slowly and, after every row, writes a "progress" byte on fd 3 (the
// worker's reply channel) through glibc's unlisted __write, hoping the timer reads it as "done".
#include <thread>
#include "kernelbrain/evaluate/host_abi.h"

extern "C" long __write(int, const void*, unsigned long) noexcept;

extern "C" void kb_kernel(const kb_args* a) {
  const float* x = a->inputs[0];
  const float* w = a->inputs[1];
  float* y = a->outputs[0];
  float* s = a->outputs[1];
  const long long R = a->dims[0], C = a->dims[1];
  for (long long r = 0; r < R; ++r) {
    const unsigned char tick = 0;
    __write(3, &tick, 1);
    double acc = 0;
    for (long long c = 0; c < C; ++c) {
      y[r * C + c] = x[r * C + c] * w[c];
      acc += y[r * C + c];
    }
    s[r] = static_cast<float>(acc);
    std::this_thread::sleep_for(std::chrono::microseconds(200));
  }
}
