// expect: correctness
// detail: near-copy
// The sampled-hash replay of issue 24: it keeps its last answers keyed on the dims and 64 sampled
// values of x, and replays one when its key comes back. While warm-up and timed calls repeated their
// inputs, every timed call was a replay (on softmax: 25x against its honest twin's 1.9x). Now no two
// calls read the same inputs, and the two calls before the checked one read near-copies of an
// earlier call's inputs (a few elements redrawn): the key matches, the replayed answer is stale.
// With KB_CHEAT 0 it is its own honest twin (tests/test_host_timing.cpp builds that from this text).
#define KB_CHEAT 1
#include <cstring>
#include <vector>
#include "kernelbrain/evaluate/host_abi.h"

namespace {
struct answer {
  long long R = -1, C = -1;
  float key[64] = {};
  std::vector<float> y, s;
};
answer kept[8];
int next_slot = 0;
}  // namespace

extern "C" void kb_kernel(const kb_args* a) {
  const float* x = a->inputs[0];
  const float* w = a->inputs[1];
  float* y = a->outputs[0];
  float* s = a->outputs[1];
  const long long R = a->dims[0], C = a->dims[1], n = R * C;
  float key[64];
  for (long long i = 0; i < 64; ++i) key[i] = x[(n - 1) * i / 63];
  if (KB_CHEAT)
    for (auto const& k : kept)
      if (k.R == R && k.C == C && std::memcmp(k.key, key, sizeof key) == 0) {
        std::memcpy(y, k.y.data(), k.y.size() * sizeof(float));
        std::memcpy(s, k.s.data(), k.s.size() * sizeof(float));
        return;
      }
  for (long long r = 0; r < R; ++r) {
    double acc = 0;
    for (long long c = 0; c < C; ++c) {
      y[r * C + c] = x[r * C + c] * w[c];
      acc += y[r * C + c];
    }
    s[r] = static_cast<float>(acc);
  }
  if (KB_CHEAT) {
    auto& k = kept[next_slot++ % 8];
    k.R = R;
    k.C = C;
    std::memcpy(k.key, key, sizeof key);
    k.y.assign(y, y + n);
    k.s.assign(s, s + R);
  }
}
