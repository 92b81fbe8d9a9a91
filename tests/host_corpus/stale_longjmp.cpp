// expect: sanitizer
// detail: AddressSanitizer
// Sets a __builtin_setjmp point in its first call and __builtin_longjmps back to it in its third:
// into a stack frame that died two calls earlier, whose locals it then reads through the pointer it
// kept. The executor calls kb_kernel from the same place each time, so the dead frame lies where the
// live one does and an ordinary build computes right answers (everything it needs after the jump it
// reads from static storage); AddressSanitizer (stack-use-after-return) sees the dead frame.
#include "kernelbrain/evaluate/host_abi.h"

static void* resume[5];
static volatile float* first_frame = nullptr;  // a local of the first call's frame
static const kb_args* current = nullptr;
static int calls = 0;

__attribute__((noinline)) static void scale_rows(const kb_args* a, float k) {
  const float* x = a->inputs[0];
  const float* w = a->inputs[1];
  float* y = a->outputs[0];
  float* s = a->outputs[1];
  const long long R = a->dims[0], C = a->dims[1];
  for (long long r = 0; r < R; ++r) {
    double acc = 0;
    for (long long c = 0; c < C; ++c) {
      y[r * C + c] = x[r * C + c] * w[c] * k;
      acc += y[r * C + c];
    }
    s[r] = static_cast<float>(acc);
  }
}

extern "C" void kb_kernel(const kb_args* a) {
  volatile float one[8];
  for (int i = 0; i < 8; ++i) one[i] = 1.0f;
  current = a;
  volatile bool landed = false;
  ++calls;
  if (calls == 1) {
    first_frame = one;
    if (__builtin_setjmp(resume)) landed = true;  // here again, from the third call
  } else if (calls == 3) {
    __builtin_longjmp(resume, 1);
  }
  scale_rows(current, landed ? first_frame[1] : one[0]);
}
