// expect: resources
// detail: bad_alloc
// Asks for 3 GiB of scratch space, more than the worker's 2 GiB allowance.
#include <cstddef>
#include <vector>
#include "kernelbrain/evaluate/host_abi.h"

extern "C" void kb_kernel(const kb_args* a) {
  std::vector<float> scratch(std::size_t{3} << 28);
  scratch[static_cast<std::size_t>(a->dims[0])] = 1.0f;
  a->outputs[1][0] = scratch[1];
}
