// expect: crash
// detail: threw
// Lets an exception escape kb_kernel.
#include <vector>
#include "kernelbrain/evaluate/host_abi.h"

extern "C" void kb_kernel(const kb_args* a) {
  std::vector<float> v(4);
  a->outputs[1][0] = v.at(static_cast<std::size_t>(a->dims[0]) + 10);
}
