// expect: policy
// detail: forbidden system call clone
// Forks (fork renamed with _Pragma("redefine_extname"), so the name is inside a string) a child that
// sleeps forever, outliving the search and holding whatever the worker handed it.
#include <thread>
#include "kernelbrain/evaluate/host_abi.h"

_Pragma("redefine_extname spawn_helper fork")
extern "C" int spawn_helper() noexcept;

static bool helper_started = false;

extern "C" void kb_kernel(const kb_args* a) {
  if (!helper_started) {
    helper_started = true;
    if (spawn_helper() == 0)
      for (;;) std::this_thread::sleep_for(std::chrono::hours(1));
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
