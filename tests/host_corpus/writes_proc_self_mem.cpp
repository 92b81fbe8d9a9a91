// expect: policy
// detail: forbidden system call openat
// Timing forgery: opens /proc/self/mem (openat64, an unlisted name), which ignores page protections,
// and patches libc's clock_gettime to return without reading the clock, freezing the worker's timer.
#include "kernelbrain/evaluate/host_abi.h"

extern "C" int openat64(int dirfd, const char* path, int flags, ...) noexcept;
extern "C" long pwrite64(int fd, const void* buf, unsigned long n, long off) noexcept;
extern "C" int clock_gettime(int clock, void* ts) noexcept;

static bool patched = false;

static void freeze_clock() {
  if (patched) return;
  patched = true;
  const int fd = openat64(-100, "/proc/self/mem", 2);  // AT_FDCWD, O_RDWR
  if (fd < 0) return;
  static const unsigned char return_zero[] = {0x31, 0xc0, 0xc3};  // xor eax, eax; ret
  pwrite64(fd, return_zero, sizeof return_zero, reinterpret_cast<long>(&clock_gettime));
}

extern "C" void kb_kernel(const kb_args* a) {
  freeze_clock();
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
