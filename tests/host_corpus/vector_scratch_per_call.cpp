// expect: pass
// Honest twin: allocates std::vector scratch on every call (products, then row sums in double) and
// frees it on return: heap traffic (brk/mmap/munmap) but no leak.
#include <cstddef>
#include <cstring>
#include <vector>
#include "kernelbrain/evaluate/host_abi.h"

extern "C" void kb_kernel(const kb_args* a) {
  const float* x = a->inputs[0];
  const float* w = a->inputs[1];
  float* y = a->outputs[0];
  float* s = a->outputs[1];
  const long long R = a->dims[0], C = a->dims[1];
  std::vector<float> products(static_cast<std::size_t>(R * C));
  std::vector<double> sums(static_cast<std::size_t>(R), 0.0);
  for (long long r = 0; r < R; ++r)
    for (long long c = 0; c < C; ++c) {
      products[r * C + c] = x[r * C + c] * w[c];
      sums[r] += products[r * C + c];
    }
  std::memcpy(y, products.data(), products.size() * sizeof(float));
  for (long long r = 0; r < R; ++r) s[r] = static_cast<float>(sums[r]);
}
