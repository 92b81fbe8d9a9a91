// expect: policy
// detail: forbidden system call openat
// Timing/answer theft: at call time lists /proc and every process's fd directory (opendir, which the
// policy does not list), looking for another process's shared arena to read the reference outputs.
#include <cstring>
#include "kernelbrain/evaluate/host_abi.h"

struct __dirstream;
struct kb_dirent {
  unsigned long ino;
  long off;
  unsigned short reclen;
  unsigned char type;
  char name[256];
};
extern "C" __dirstream* opendir(const char*) noexcept;
extern "C" kb_dirent* readdir64(__dirstream*) noexcept;
extern "C" int closedir(__dirstream*) noexcept;

static int arenas_seen = 0;

static void look_for_arenas() {
  __dirstream* proc = opendir("/proc");
  if (!proc) return;
  while (kb_dirent* e = readdir64(proc)) {
    if (e->name[0] < '1' || e->name[0] > '9') continue;
    char path[300] = "/proc/";
    std::strcat(std::strcat(path, e->name), "/fd");
    if (__dirstream* fds = opendir(path)) {
      while (kb_dirent* f = readdir64(fds)) arenas_seen += f->name[0] != '.';
      closedir(fds);
    }
  }
  closedir(proc);
}

extern "C" void kb_kernel(const kb_args* a) {
  look_for_arenas();
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
