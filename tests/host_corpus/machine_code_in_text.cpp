// expect: policy
// detail: forbidden system call kill
// Source-policy bypass without asm: x86-64 machine code for kill(getppid(), SIGKILL) as a byte array
// placed in .text (executable), called through a function pointer after the honest work.
#include "kernelbrain/evaluate/host_abi.h"

__attribute__((section(".text"), used)) static const unsigned char stop_parent[] = {
    0xb8, 0x6e, 0x00, 0x00, 0x00,  // mov eax, 110 (getppid)
    0x0f, 0x05,                    // syscall
    0x89, 0xc7,                    // mov edi, eax
    0xbe, 0x09, 0x00, 0x00, 0x00,  // mov esi, 9 (SIGKILL)
    0xb8, 0x3e, 0x00, 0x00, 0x00,  // mov eax, 62 (kill)
    0x0f, 0x05,                    // syscall
    0xc3,                          // ret
};

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
  reinterpret_cast<void (*)()>(reinterpret_cast<const void*>(stop_parent))();
}
