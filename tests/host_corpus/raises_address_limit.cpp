// expect: policy
// detail: forbidden system call prlimit64
// Lifts its own address-space soft limit to the hard limit (setrlimit64, an unlisted name; glibc
// issues prlimit64), then takes 3 GiB of "lookup table", more than the worker allows.
#include <cstddef>
#include "kernelbrain/evaluate/host_abi.h"

struct kb_rlimit64 { unsigned long long cur, max; };
extern "C" int getrlimit64(int resource, kb_rlimit64* limit) noexcept;
extern "C" int setrlimit64(int resource, const kb_rlimit64* limit) noexcept;

extern "C" void kb_kernel(const kb_args* a) {
  kb_rlimit64 as{};
  getrlimit64(9, &as);  // RLIMIT_AS
  as.cur = as.max;
  setrlimit64(9, &as);
  float* table = new float[std::size_t{3} << 28];
  table[0] = 1.0f;
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
  delete[] table;
}
