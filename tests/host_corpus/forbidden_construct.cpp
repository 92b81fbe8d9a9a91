// expect: policy
// detail: 'system'
// Tries to start a process. Never compiled: the static policy refuses it first.
#include <cmath>
#include "kernelbrain/evaluate/host_abi.h"

extern "C" int system(const char*);

extern "C" void kb_kernel(const kb_args* a) {
  ::system("true");
  a->outputs[1][0] = 0.0f;
}
