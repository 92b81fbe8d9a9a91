// expect: correctness
// detail: output not written on a timed run
// Too fast to be true: remembers the first and last values of x it last saw and does nothing when
// they come back a second time in a row (the correctness trials never repeat a call three times).
// No timed call repeats its inputs, but the two before the checked call read near-copies of an
// earlier call's inputs: there it skips, and the worker's per-call poison scan catches it.
#include "kernelbrain/evaluate/host_abi.h"

static float last_first = 0, last_last = 0;
static int repeats = 0;

extern "C" void kb_kernel(const kb_args* a) {
  const float* x = a->inputs[0];
  const float* w = a->inputs[1];
  float* y = a->outputs[0];
  float* s = a->outputs[1];
  const long long R = a->dims[0], C = a->dims[1];
  if (x[0] == last_first && x[R * C - 1] == last_last)
    ++repeats;
  else
    repeats = 0;
  last_first = x[0];
  last_last = x[R * C - 1];
  if (repeats >= 2) return;
  for (long long r = 0; r < R; ++r) {
    double acc = 0;
    for (long long c = 0; c < C; ++c) {
      y[r * C + c] = x[r * C + c] * w[c];
      acc += y[r * C + c];
    }
    s[r] = static_cast<float>(acc);
  }
}
