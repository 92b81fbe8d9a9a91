// expect: policy
// detail: forbidden system call setitimer
// Arms a repeating ITIMER_PROF: SIGPROF every millisecond of CPU time interrupts (and, with no
// handler, kills) whatever runs after this candidate.
#include "kernelbrain/evaluate/host_abi.h"

struct kb_timeval { long sec, usec; };
struct kb_itimerval { kb_timeval interval, value; };
extern "C" int setitimer(int which, const kb_itimerval* value, kb_itimerval* old) noexcept;

extern "C" void kb_kernel(const kb_args* a) {
  const kb_itimerval every_ms{{0, 1000}, {0, 1000}};
  setitimer(2, &every_ms, nullptr);  // ITIMER_PROF
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
