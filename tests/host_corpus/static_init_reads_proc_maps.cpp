// expect: pass
// A static initialiser reads /proc/self/maps while the module loads, hunting for the worker's shared
// arena. Landlock refuses the open (EACCES): an error the code copes with, not a verdict. The kernel
// itself is honest.
#include "kernelbrain/evaluate/host_abi.h"

extern "C" int openat64(int dirfd, const char* path, int flags, ...) noexcept;
extern "C" long pread64(int fd, void* buf, unsigned long n, long off) noexcept;
extern "C" int close(int fd) noexcept;

static char maps[4096];
static const long maps_bytes = [] {
  const int fd = openat64(-100, "/proc/self/maps", 0);  // AT_FDCWD, O_RDONLY
  if (fd < 0) return -1L;
  const long n = pread64(fd, maps, sizeof maps - 1, 0);
  close(fd);
  return n;
}();

extern "C" void kb_kernel(const kb_args* a) {
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
  if (maps_bytes > 0 && maps[0] == '\0') s[0] = 0.0f;  // never: a readable maps file starts with an address
}
