// expect: pass
// Asks with __has_include whether <sys/syscall.h> exists (and includes nothing): the words of a header
// name are not tokens of the program, so the static policy must not see a `syscall` there.
#if defined(__has_include)
#if __has_include(<sys/syscall.h>)
#define KB_HAVE_SYSCALL_HEADER 1
#endif
#endif
#include "kernelbrain/evaluate/host_abi.h"

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
}
