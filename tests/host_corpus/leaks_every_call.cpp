// expect: resources
// A "per-call cache" that only grows: 256 MiB allocated on every call (its first 64 MiB touched) and
// never freed. It builds up in the module's one executor until an allocation fails (memory limit).
#include <cstddef>
#include <cstring>
#include "kernelbrain/evaluate/host_abi.h"

static float* blocks[1024];
static int calls = 0;

extern "C" void kb_kernel(const kb_args* a) {
  const std::size_t n = std::size_t{64} << 20;  // floats: 256 MiB
  float* scratch = new float[n];
  std::memset(scratch, 0, n);  // the first quarter, 64 MiB: staging for y
  blocks[calls++ % 1024] = scratch;
  const float* x = a->inputs[0];
  const float* w = a->inputs[1];
  const long long R = a->dims[0], C = a->dims[1];
  for (long long r = 0; r < R; ++r) {
    double acc = 0;
    for (long long c = 0; c < C; ++c) {
      scratch[r * C + c] = x[r * C + c] * w[c];
      acc += scratch[r * C + c];
    }
    a->outputs[1][r] = static_cast<float>(acc);
  }
  std::memcpy(a->outputs[0], scratch, static_cast<std::size_t>(R * C) * sizeof(float));
}
