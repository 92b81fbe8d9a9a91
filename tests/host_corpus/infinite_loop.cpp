// expect: timeout
// detail: watchdog
// Never returns (the volatile counter keeps the loop from being optimised away).
#include "kernelbrain/evaluate/host_abi.h"

extern "C" void kb_kernel(const kb_args* a) {
  volatile unsigned long long spin = static_cast<unsigned long long>(a->dims[0]);
  for (;;) spin = spin + 1;
}
