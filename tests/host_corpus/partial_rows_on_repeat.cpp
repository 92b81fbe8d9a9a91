// expect: correctness
// detail: near-copy
// The repeat-call cheat of issue 24: when 64 sampled values of x are those of the two calls before
// (a third call on the same inputs, which the correctness trials never make and warm-up and timing
// used to make at every call), it computes every eighth row and writes zeros elsewhere (on softmax:
// 9.2x against its honest twin's 2.0x). Now no two calls read the same inputs, and the checked timed
// call is the third of a run on near-copies of one window: its zeros are wrong outputs.
// With KB_CHEAT 0 it is its own honest twin (tests/test_host_timing.cpp builds that from this text).
#define KB_CHEAT 1
#include <cstring>
#include "kernelbrain/evaluate/host_abi.h"

namespace {
float seen[2][64];
long long seen_n[2] = {-1, -1};
}  // namespace

extern "C" void kb_kernel(const kb_args* a) {
  const float* x = a->inputs[0];
  const float* w = a->inputs[1];
  float* y = a->outputs[0];
  float* s = a->outputs[1];
  const long long R = a->dims[0], C = a->dims[1], n = R * C;
  float key[64];
  for (long long i = 0; i < 64; ++i) key[i] = x[(n - 1) * i / 63];
  const bool third = seen_n[0] == n && seen_n[1] == n && std::memcmp(seen[0], key, sizeof key) == 0 &&
                     std::memcmp(seen[1], key, sizeof key) == 0;
  std::memcpy(seen[1], seen[0], sizeof key);
  seen_n[1] = seen_n[0];
  std::memcpy(seen[0], key, sizeof key);
  seen_n[0] = n;
  for (long long r = 0; r < R; ++r) {
    if (KB_CHEAT && third && r % 8 != 0) {
      for (long long c = 0; c < C; ++c) y[r * C + c] = 0;
      s[r] = 0;
      continue;
    }
    double acc = 0;
    for (long long c = 0; c < C; ++c) {
      y[r * C + c] = x[r * C + c] * w[c];
      acc += y[r * C + c];
    }
    s[r] = static_cast<float>(acc);
  }
}
