// expect: policy
// detail: <fstream>
// Reads a file (say, a cached answer). The include allowlist refuses it.
#include <fstream>
#include "kernelbrain/evaluate/host_abi.h"

extern "C" void kb_kernel(const kb_args* a) { a->outputs[1][0] = 0.0f; }
