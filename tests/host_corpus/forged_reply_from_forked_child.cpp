// expect: policy
// detail: forbidden system call clone
// Timing forgery: forks (glibc's unlisted _Fork) a child that writes a forged "finished, 1 us" reply
// on fd 3, the worker's reply channel, while the parent computes the real outputs at leisure.
#include <cstdint>
#include <cstring>
#include "kernelbrain/evaluate/host_abi.h"

extern "C" int _Fork() noexcept;
extern "C" long __write(int, const void*, unsigned long) noexcept;
extern "C" [[noreturn]] void _exit(int) noexcept;

static void forge_reply() {
  unsigned char msg[32] = {};
  const std::uint32_t ok = 0, len = 24;
  const double sample = 1e-6;
  std::memcpy(msg, &len, 4);
  std::memcpy(msg + 4, &ok, 4);
  std::memcpy(msg + 8, &sample, 8);
  __write(3, msg, 8 + len);
}

extern "C" void kb_kernel(const kb_args* a) {
  if (_Fork() == 0) {
    forge_reply();
    _exit(0);
  }
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
