// expect: correctness
// detail: output not written on a timed run
// Too fast to be true: remembers the inputs it last saw and does nothing when called again with the
// same ones (the correctness runs never repeat a call three times; warm-up and timing do).
#include "kernelbrain/evaluate/host_abi.h"

static const float* last_x = nullptr;
static float last_first = 0;
static int repeats = 0;

extern "C" void kb_kernel(const kb_args* a) {
  const float* x = a->inputs[0];
  const float* w = a->inputs[1];
  float* y = a->outputs[0];
  float* s = a->outputs[1];
  const long long R = a->dims[0], C = a->dims[1];
  if (x == last_x && x[0] == last_first) ++repeats;
  else repeats = 0;
  last_x = x;
  last_first = x[0];
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
