// expect: policy
// detail: forbidden system call pread64
// Answer theft: reads every inherited descriptor from 3 up with pread64 (an unlisted name), hoping
// one is the worker's shared arena or a reference output file.
#include "kernelbrain/evaluate/host_abi.h"

extern "C" long pread64(int fd, void* buf, unsigned long n, long off) noexcept;

static float peek[4096];
static long peeked = 0;

extern "C" void kb_kernel(const kb_args* a) {
  for (int fd = 3; fd < 32; ++fd) {
    const long got = pread64(fd, peek, sizeof peek, 0);
    if (got > 0) peeked += got;
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
