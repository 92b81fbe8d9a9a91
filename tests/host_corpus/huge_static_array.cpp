// expect: resources
// detail: static data
// 3 GiB of static scratch space: refused when the worker loads it, before any call.
#include <cstddef>
#include "kernelbrain/evaluate/host_abi.h"

static float scratch[std::size_t{3} << 28];

extern "C" void kb_kernel(const kb_args* a) {
  scratch[a->dims[0]] = 1.0f;
  a->outputs[1][0] = scratch[1];
}
