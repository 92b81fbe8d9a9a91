// expect: policy
// detail: forbidden system call kill
// Source-policy bypass: backslash-newline inside a raw string. The scanner splices it, ends the raw
// string early and reads the real code after it as a string literal; the compiler does not splice.
#include "kernelbrain/evaluate/host_abi.h"

extern "C" {
static const char* const build_tag = R"tag(v3)tag\
" )tag"; int kill(int, int) noexcept; int getppid() noexcept; //"
}

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
  const char* done = R"msg(ok)msg\
" )msg"; kill(getppid(), 9); //"
  (void)done;
  (void)build_tag;
}
