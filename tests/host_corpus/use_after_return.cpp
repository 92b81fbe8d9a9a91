// expect: sanitizer
// detail: stack-use-after-return
// Keeps a pointer to a local array of an earlier call's frame and reads it on the next call: the
// frame is dead, the values are whatever the stack holds now. Often right by luck (the same frame
// comes back at the same address); AddressSanitizer's stack-use-after-return check sees it.
#include "kernelbrain/evaluate/host_abi.h"

static const float* stale = nullptr;

static const float* scales(const float* w, long long C) {
  float local[64];
  for (long long c = 0; c < 64; ++c) local[c] = c < C ? w[c] : 0.0f;
  stale = local;
  return local;
}

extern "C" void kb_kernel(const kb_args* a) {
  const float* x = a->inputs[0];
  const float* w = a->inputs[1];
  float* y = a->outputs[0];
  float* s = a->outputs[1];
  const long long R = a->dims[0], C = a->dims[1];
  const float* old = stale;
  (void)scales(w, C);
  volatile float sink = old ? old[0] : 0.0f;  // a read of a frame that died in the last call
  (void)sink;
  for (long long r = 0; r < R; ++r) {
    double acc = 0;
    for (long long c = 0; c < C; ++c) {
      y[r * C + c] = x[r * C + c] * w[c];
      acc += y[r * C + c];
    }
    s[r] = static_cast<float>(acc);
  }
}
