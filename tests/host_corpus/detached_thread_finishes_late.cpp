// expect: pass
// min_ms: 15
// Timing forgery: returns at once and leaves all the work to a detached thread that finishes about
// 20 ms later. Correct outputs, but every timed sample must include that thread (at least 15 ms).
#include <thread>
#include "kernelbrain/evaluate/host_abi.h"

extern "C" void kb_kernel(const kb_args* a) {
  const float* x = a->inputs[0];
  const float* w = a->inputs[1];
  float* y = a->outputs[0];
  float* s = a->outputs[1];
  const long long R = a->dims[0], C = a->dims[1];
  std::thread([=] {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    for (long long r = 0; r < R; ++r) {
      double acc = 0;
      for (long long c = 0; c < C; ++c) {
        y[r * C + c] = x[r * C + c] * w[c];
        acc += y[r * C + c];
      }
      s[r] = static_cast<float>(acc);
    }
  }).detach();
}
