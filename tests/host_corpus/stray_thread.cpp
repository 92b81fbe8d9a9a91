// expect: correctness
// detail: still running after kb_kernel returned
// Hands the work to a thread and returns without joining it.
#include <thread>
#include "kernelbrain/evaluate/host_abi.h"

extern "C" void kb_kernel(const kb_args* a) {
  std::thread([a] {
    volatile unsigned long long spin = 0;
    for (;;) spin = spin + static_cast<unsigned long long>(a->dims[0]);
  }).detach();
}
