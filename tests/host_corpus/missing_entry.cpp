// expect: signature
// detail: no function kb_kernel
// Defines the kernel under another name.
#include "kernelbrain/evaluate/host_abi.h"

extern "C" void kernel(const kb_args* a) { a->outputs[1][0] = 0.0f; }
