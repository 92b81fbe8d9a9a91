// expect: impossible
// detail: timing mismatch
// Timing forgery: says "done" on fd 5 (the executor's done channel, the one descriptor the sandbox
// lets it write) before doing any work, then does all of it on the main thread, so that the outputs
// are complete when checked but the clock, had it stopped at "done", would read almost nothing.
#include "kernelbrain/evaluate/host_abi.h"

extern "C" long __write(int fd, const void* buf, unsigned long n) noexcept;

extern "C" void kb_kernel(const kb_args* a) {
  const char done = 'd';
  __write(5, &done, 1);
  const float* x = a->inputs[0];
  const float* w = a->inputs[1];
  float* y = a->outputs[0];
  float* s = a->outputs[1];
  const long long R = a->dims[0], C = a->dims[1];
  // Enough work that the main thread is visibly busy after its "done" (some 4 million element
  // updates: a few ms at any shape).
  const long long reps = 1 + 4000000 / (R * C + 1);
  for (long long rep = 0; rep < reps; ++rep)
    for (long long r = 0; r < R; ++r) {
      double acc = 0;
      for (long long c = 0; c < C; ++c) {
        y[r * C + c] = x[r * C + c] * w[c];
        acc += y[r * C + c];
      }
      s[r] = static_cast<float>(acc);
    }
}
