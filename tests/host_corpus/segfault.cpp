// expect: crash
// detail: SIGSEGV
// Writes through a wild pointer (a terabyte before its output).
#include "kernelbrain/evaluate/host_abi.h"

extern "C" void kb_kernel(const kb_args* a) {
  volatile float* p = a->outputs[0] - (1LL << 40);
  p[a->dims[0]] = 1.0f;
}
