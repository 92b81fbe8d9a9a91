// expect: policy
// detail: forbidden system call timer_create
// Creates a POSIX timer (default event: SIGALRM) and arms it for 50 ms from now, to kill the
// process while a later call is being timed.
#include "kernelbrain/evaluate/host_abi.h"

struct kb_timespec { long sec, nsec; };
struct kb_itimerspec { kb_timespec interval, value; };
extern "C" int timer_create(int clock, void* event, void** timer) noexcept;
extern "C" int timer_settime(void* timer, int flags, const kb_itimerspec* value, kb_itimerspec* old) noexcept;

extern "C" void kb_kernel(const kb_args* a) {
  void* timer = nullptr;
  if (timer_create(1, nullptr, &timer) == 0) {  // CLOCK_MONOTONIC
    const kb_itimerspec later{{0, 0}, {0, 50000000}};
    timer_settime(timer, 0, &later, nullptr);
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
